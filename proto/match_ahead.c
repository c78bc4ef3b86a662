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
 * The table describes the file as the helper read it. Should the file
 * change meanwhile, a block token may stand for bytes the sender no longer
 * has; the whole-file sum, taken from the bytes the matcher reads, then
 * differs from the receiver's and the file is sent again (the redo pass).
 */
#include "proto/match.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "proto/fileio.h"

/* Worth a thread only for files this big (the generator's read of the
 * basis must take long enough to hide the work). */
#define AHEAD_MIN_FILE (8 * 1024 * 1024)
#define AHEAD_READ (1024 * 1024)

static void *ahead_main(void *arg)
{
	struct match_ahead *a = arg;
	size_t per = AHEAD_READ - AHEAD_READ % (size_t)a->blength;
	uint8_t *buf = malloc(per);
	int32_t k = 0;

	while (buf && k < a->nblocks && !atomic_load_explicit(&a->stop, memory_order_relaxed)) {
		/* the block the matcher is at it hashes itself: skip past it */
		int64_t at = atomic_load_explicit(&a->matcher_off, memory_order_relaxed);
		if (at / a->blength + 1 > k)
			k = (int32_t)(at / a->blength + 1);
		if (k >= a->nblocks)
			break;
		size_t n = per / (size_t)a->blength;
		if (n > (size_t)(a->nblocks - k))
			n = (size_t)(a->nblocks - k);
		size_t want = n * (size_t)a->blength;
		ssize_t got = fs_pread_full(a->fd, buf, want, (off_t)k * a->blength);
		if (got < (ssize_t)want)
			break; /* shrank or failed: the matcher hashes the rest */
		for (size_t j = 0; j < n; j++, k++) {
			const uint8_t *p = buf + j * (size_t)a->blength;
			uint8_t digest[CSUM_MAX_DIGEST];
			a->weak[k] = csum_rolling(p, (size_t)a->blength);
			memset(digest, 0, sizeof digest);
			a->strong_fn(a->ctx, p, (size_t)a->blength, digest);
			memcpy(a->strong + (size_t)k * (size_t)a->s2length, digest,
			       (size_t)a->s2length);
			atomic_store_explicit(&a->ready[k], 1, memory_order_release);
		}
	}
	free(buf);
	return NULL;
}

bool match_ahead_start(struct match_ahead *a, int fd, const struct sum_head *h,
		       void (*strong_fn)(void *ctx, const uint8_t *p, size_t n, uint8_t *out),
		       void *ctx)
{
	struct stat st;

	memset(a, 0, sizeof *a);
	if (h->count <= 0 || h->blength <= 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size < AHEAD_MIN_FILE)
		return false;
	int64_t nblocks = st.st_size / h->blength;
	if (nblocks > INT32_MAX)
		return false;
	a->fd = fd;
	a->blength = h->blength;
	a->s2length = h->s2length;
	a->nblocks = (int32_t)nblocks;
	a->strong_fn = strong_fn;
	a->ctx = ctx;
	a->weak = malloc((size_t)nblocks * sizeof *a->weak);
	a->strong = malloc((size_t)nblocks * (size_t)(h->s2length ? h->s2length : 1));
	a->ready = calloc((size_t)nblocks, sizeof *a->ready);
	atomic_init(&a->stop, false);
	atomic_init(&a->matcher_off, 0);
	if (!a->weak || !a->strong || !a->ready ||
	    pthread_create(&a->thread, NULL, ahead_main, a) != 0) {
		free(a->weak);
		free(a->strong);
		free((void *)a->ready);
		memset(a, 0, sizeof *a);
		return false;
	}
	a->running = true;
	return true;
}

void match_ahead_stop(struct match_ahead *a)
{
	if (!a->running)
		return;
	atomic_store(&a->stop, true);
	pthread_join(a->thread, NULL);
	free(a->weak);
	free(a->strong);
	free((void *)a->ready);
	memset(a, 0, sizeof *a);
}

bool match_ahead_sums(struct match_ahead *a, int64_t off, int64_t len, uint32_t *weak,
		      const uint8_t **strong)
{
	if (!a || !a->running || len != a->blength || off % a->blength != 0)
		return false;
	int64_t k = off / a->blength;
	if (k >= a->nblocks || !atomic_load_explicit(&a->ready[k], memory_order_acquire))
		return false;
	*weak = a->weak[k];
	*strong = a->strong + (size_t)k * (size_t)a->s2length;
	return true;
}

void match_ahead_at(struct match_ahead *a, int64_t off)
{
	if (a && a->running)
		atomic_store_explicit(&a->matcher_off, off, memory_order_relaxed);
}
