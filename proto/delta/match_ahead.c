/*
 * The sender's read-ahead hasher: while the receiver's generator is still
 * reading its basis and sending block sums (the sender can match nothing
 * before it has them all), a second thread computes the weak and strong
 * sums of the source's own block-aligned windows. When the data is where
 * the basis had it -- a file changed in place, the common case -- every
 * match falls on such a window, and the matcher then takes both sums from
 * the table instead of hashing the block itself. rsync's single-threaded
 * sender does this work after the last sum arrived; here it overlaps the
 * generator, and whatever is not done by then goes on beside the matcher.
 *
 * While it reads the file from the start without a gap, the helper also
 * carries the whole-file sum over the bytes it read. The matcher then
 * reads nothing for a block it matches with the helper's sums (a token
 * has no bytes to send, and only zlib's history needs them as well);
 * it reads the changed data it sends as literal bytes, and takes the file
 * sum over (match_ahead_fsum_take) at the first byte the helper's sum does
 * not reach. Every byte is so summed once, as one of the two threads read
 * it: a byte the matcher sends as literal data or hashes itself may have
 * been summed as the helper read it, and a block token may stand for the
 * helper's sums of bytes the matcher never read.
 *
 * The table describes the file as the helper read it. Should the file
 * change meanwhile, the receiver's rebuilt file (blocks matched to the
 * helper's sums, literal data as the matcher read it) differs from the
 * bytes summed, the whole-file sums differ and the file is sent again (the
 * redo pass). The whole-file sum is thus always of the bytes the tokens
 * stand for, never of a second read that the tokens did not come from.
 */
#include "proto/delta/match.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "proto/base/fileio.h"
#include "proto/base/stop_signal.h"

/* Worth a thread only for files this big (the generator's read of the
 * basis must take long enough to hide the work). */
#define AHEAD_MIN_FILE (8 * 1024 * 1024)
#define AHEAD_READ (1024 * 1024)

/* Blocks k .. k + n - 1 (the len bytes at off, in buf) are hashed: carry
 * the file sum on over them if they follow on, and let the matcher see
 * them. The sum goes first, so that a block the matcher finds ready is
 * (while the helper still sums) summed too. */
static void ahead_publish(struct match_ahead *a, const uint8_t *buf, int64_t off, size_t len,
			  int32_t k, size_t n)
{
	pthread_mutex_lock(&a->lock);
	if (a->fsum_on && !a->fsum_claimed &&
	    off == atomic_load_explicit(&a->fsum_at, memory_order_relaxed) &&
	    off + (int64_t)len <= a->fsum_limit) {
		csum_file_update(&a->fsum, buf, len);
		atomic_store_explicit(&a->fsum_at, off + (int64_t)len, memory_order_release);
	} else {
		a->fsum_on = false; /* a gap, or the matcher's: never again */
	}
	for (size_t j = 0; j < n; j++)
		atomic_store_explicit(&a->ready[(size_t)k + j], AHEAD_READY, memory_order_release);
	pthread_cond_broadcast(&a->window_done);
	pthread_mutex_unlock(&a->lock);
}

/* Blocks from .. to - 1 will not be hashed: waiters stop waiting. */
static void ahead_pass_by(struct match_ahead *a, int32_t from, int32_t to)
{
	if (from >= to)
		return;
	pthread_mutex_lock(&a->lock);
	a->fsum_on = false;
	for (int32_t j = from; j < to; j++)
		atomic_store_explicit(&a->ready[j], AHEAD_SKIPPED, memory_order_release);
	pthread_cond_broadcast(&a->window_done);
	pthread_mutex_unlock(&a->lock);
}

/* Take the next window of at most `per` blocks: from the first block no
 * helper took, or from the matcher's block when it is further on (the
 * blocks behind it it hashed itself; they are passed by). Returns its
 * first block and sets *n, or -1 when no block is left. */
static int32_t ahead_claim(struct match_ahead *a, int32_t per, int32_t *n)
{
	int32_t cur = atomic_load_explicit(&a->next_claim, memory_order_relaxed);

	for (;;) {
		int64_t at = atomic_load_explicit(&a->matcher_off, memory_order_relaxed) / a->blength;
		int32_t k = at > cur ? (at < a->nblocks ? (int32_t)at : a->nblocks) : cur;
		int32_t end = k + per < a->nblocks ? k + per : a->nblocks;
		if (atomic_compare_exchange_weak_explicit(&a->next_claim, &cur, end,
							  memory_order_relaxed,
							  memory_order_relaxed)) {
			ahead_pass_by(a, cur, k);
			*n = end - k;
			return k < end ? k : -1;
		}
	}
}

static void *ahead_main(void *arg)
{
	struct match_ahead *a = arg;
	int32_t per = (int32_t)(AHEAD_READ / (size_t)a->blength);
	uint8_t *buf = malloc((size_t)per * (size_t)a->blength);
	int32_t k, n;

	while (buf && !atomic_load_explicit(&a->stop, memory_order_relaxed) &&
	       (k = ahead_claim(a, per, &n)) >= 0) {
		size_t want = (size_t)n * (size_t)a->blength;
		int64_t off = (int64_t)k * a->blength;
		ssize_t got = fs_pread_full(a->fd, buf, want, (off_t)off);
		if (got < (ssize_t)want) {
			/* shrank or failed: the matcher reads the rest */
			atomic_store_explicit(&a->stop, true, memory_order_relaxed);
			ahead_pass_by(a, k, k + n);
			break;
		}
		for (int32_t j = 0; j < n; j++) {
			const uint8_t *p = buf + (size_t)j * (size_t)a->blength;
			size_t b = (size_t)k + (size_t)j;
			uint8_t digest[CSUM_MAX_DIGEST];
			if (a->with_weak)
				a->weak[b] = csum_rolling(p, (size_t)a->blength);
			memset(digest, 0, sizeof digest);
			a->strong_fn(a->ctx, p, (size_t)a->blength, digest);
			memcpy(a->strong + b * a->stride, digest, a->stride);
		}
		ahead_publish(a, buf, off, want, k, (size_t)n);
	}
	pthread_mutex_lock(&a->lock);
	a->helpers_left--;
	a->fsum_on = false;
	pthread_cond_broadcast(&a->window_done);
	pthread_mutex_unlock(&a->lock);
	free(buf);
	return NULL;
}

static void ahead_free(struct match_ahead *a)
{
	free(a->weak);
	free(a->strong);
	free((void *)a->ready);
	memset(a, 0, sizeof *a);
}

bool match_ahead_start(struct match_ahead *a, int fd, const struct sum_head *h,
		       void (*strong_fn)(void *ctx, const uint8_t *p, size_t n, uint8_t *out),
		       void *ctx, const struct csum_ctx *file_sum, size_t keep_width)
{
	struct stat st;

	memset(a, 0, sizeof *a);
	/* a block longer than a read (protocol < 30 allows 512 MiB) would
	 * make windows of no blocks */
	if (h->count <= 0 || h->blength <= 0 || h->blength > AHEAD_READ || fstat(fd, &st) < 0 ||
	    !S_ISREG(st.st_mode) || st.st_size < AHEAD_MIN_FILE)
		return false;
	int64_t nblocks = st.st_size / h->blength;
	if (nblocks > INT32_MAX)
		return false;
	a->fd = fd;
	a->blength = h->blength;
	a->stride = keep_width > (size_t)h->s2length ? keep_width : (size_t)h->s2length;
	if (a->stride == 0)
		a->stride = 1;
	a->nblocks = (int32_t)nblocks;
	a->with_weak = h->s2length < MATCH_STRONG_DECIDES;
	a->strong_fn = strong_fn;
	a->ctx = ctx;
	a->weak = malloc((size_t)nblocks * sizeof *a->weak);
	a->strong = malloc((size_t)nblocks * a->stride);
	a->ready = calloc((size_t)nblocks, sizeof *a->ready);
	atomic_init(&a->stop, false);
	atomic_init(&a->matcher_off, 0);
	atomic_init(&a->next_claim, 0);
	atomic_init(&a->fsum_at, 0);
	a->fsum_limit = INT64_MAX;
	if (file_sum) {
		a->fsum = *file_sum;
		a->fsum_on = true;
	}
	if (!a->weak || !a->strong || !a->ready) {
		ahead_free(a);
		return false;
	}
	if (pthread_mutex_init(&a->lock, NULL) != 0) {
		ahead_free(a);
		return false;
	}
	if (pthread_cond_init(&a->window_done, NULL) != 0) {
		pthread_mutex_destroy(&a->lock);
		ahead_free(a);
		return false;
	}
	/* a file sum needs the windows in order: one helper */
	int want = file_sum ? 1 : MATCH_AHEAD_THREADS;
	a->helpers_left = want;
	for (int i = 0; i < want; i++) {
		if (stop_signal_thread_create(&a->threads[i], ahead_main, a) != 0)
			break;
		a->nthreads++;
	}
	if (a->nthreads == 0) {
		pthread_cond_destroy(&a->window_done);
		pthread_mutex_destroy(&a->lock);
		ahead_free(a);
		return false;
	}
	if (a->nthreads < want) {
		pthread_mutex_lock(&a->lock);
		a->helpers_left -= want - a->nthreads;
		pthread_mutex_unlock(&a->lock);
	}
	a->running = true;
	return true;
}

void match_ahead_stop(struct match_ahead *a)
{
	if (!a->running)
		return;
	atomic_store(&a->stop, true);
	for (int i = 0; i < a->nthreads; i++)
		pthread_join(a->threads[i], NULL);
	pthread_cond_destroy(&a->window_done);
	pthread_mutex_destroy(&a->lock);
	ahead_free(a);
}

/* Wait until block k is ready, or no helper will do it (they quit, or
 * passed it by: the block was behind the matcher then). */
static bool ahead_wait(struct match_ahead *a, int64_t k)
{
	pthread_mutex_lock(&a->lock);
	while (atomic_load_explicit(&a->ready[k], memory_order_acquire) == AHEAD_PENDING &&
	       a->helpers_left > 0)
		pthread_cond_wait(&a->window_done, &a->lock);
	pthread_mutex_unlock(&a->lock);
	return atomic_load_explicit(&a->ready[k], memory_order_acquire) == AHEAD_READY;
}

bool match_ahead_sums(struct match_ahead *a, int64_t off, int64_t len, uint32_t *weak,
		      const uint8_t **strong)
{
	if (!a || !a->running || len != a->blength || off % a->blength != 0)
		return false;
	int64_t k = off / a->blength;
	/* Waiting costs less than hashing the block here: the helper has it
	 * in memory, or will soon, and sums the file as it goes. */
	if (k >= a->nblocks ||
	    (atomic_load_explicit(&a->ready[k], memory_order_acquire) != AHEAD_READY &&
	     !ahead_wait(a, k)))
		return false;
	if (a->with_weak)
		*weak = a->weak[k];
	*strong = a->strong + (size_t)k * a->stride;
	return true;
}

void match_ahead_at(struct match_ahead *a, int64_t off)
{
	if (a && a->running)
		atomic_store_explicit(&a->matcher_off, off, memory_order_relaxed);
}

bool match_ahead_fsum_limit(struct match_ahead *a, int64_t file_len)
{
	if (!a || !a->running)
		return true;
	pthread_mutex_lock(&a->lock);
	bool ok = atomic_load_explicit(&a->fsum_at, memory_order_relaxed) <= file_len;
	a->fsum_limit = file_len;
	if (!ok) {
		a->fsum_on = false;
		a->fsum_claimed = true;
	}
	pthread_mutex_unlock(&a->lock);
	return ok;
}

int64_t match_ahead_fsum_at(struct match_ahead *a)
{
	if (!a || !a->running)
		return 0;
	return atomic_load_explicit(&a->fsum_at, memory_order_acquire);
}

int64_t match_ahead_fsum_take(struct match_ahead *a, struct csum_ctx *out)
{
	if (!a || !a->running)
		return 0;
	pthread_mutex_lock(&a->lock);
	int64_t at = 0;
	if (!a->fsum_claimed) {
		at = atomic_load_explicit(&a->fsum_at, memory_order_relaxed);
		if (at > 0)
			*out = a->fsum;
	}
	a->fsum_claimed = true;
	a->fsum_on = false;
	pthread_mutex_unlock(&a->lock);
	return at;
}
