/*
 * The generator's block sums: the sum head and the sums of a basis file
 * sent to the sender, or taken from --sums-cache (rsync generator.c:
 * generate_and_send_sums, sum_sizes_sqroot is in recvside.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "proto/recv/gen.h"

/* --sums-cache: the kept sums of the basis, when it is the file they were
 * taken of; the head is already out. */
static bool send_kept_sums(struct gen *g, const struct sum_head *h, const struct block_sums *k)
{
	struct session *s = g->s;
	size_t s2 = g->rc->cfg.sums->s2len;

	for (int32_t i = 0; i < h->count; i++)
		if (!wire_write_i32(&s->out, (int32_t)k->sum1[i]) ||
		    !wire_write(&s->out, k->sum2 + (size_t)i * s2, (size_t)h->s2length))
			return false;
	return true;
}

/* --sums-cache: the sums as the generator computes them, full length,
 * for the receiver to build the new file's from (sumcache.h). */
static bool sums_to_keep(struct gen *g, const struct sum_head *h, struct block_sums *keep)
{
	size_t s2 = g->rc->cfg.sums->s2len;

	*keep = (struct block_sums){.blength = h->blength, .count = h->count};
	keep->sum1 = malloc((size_t)h->count * 4 + 1);
	keep->sum2 = malloc((size_t)h->count * s2 + 1);
	if (keep->sum1 && keep->sum2)
		return true;
	free(keep->sum1);
	free(keep->sum2);
	keep->sum1 = NULL;
	keep->sum2 = NULL;
	return false;
}

/* The kept sums for the basis open on fd, if cache_path names it. */
static const struct block_sums *kept_sums(struct gen *g, int fd, const char *cache_path,
					  const struct sum_head *h, int64_t len)
{
	struct stat st;

	if (!cache_path || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size != len)
		return NULL;
	const struct block_sums *k = sumcache_lookup(g->rc->cfg.sums, cache_path, &st, h->blength);
	return k && k->count == h->count ? k : NULL;
}

/* Send the sum head and the block sums of the basis open on fd. With
 * --sums-cache, cache_path is the basis's path when it is the destination
 * file itself, and the sums go to the receiver too. */
bool send_sums(struct gen *g, int fd, int64_t len, bool redo, int32_t ndx,
	       const char *cache_path)
{
	struct session *s = g->s;
	struct sum_head h;
	uint8_t strong[CSUM_MAX_DIGEST];
	int64_t off = 0;
	struct sumcache *sc = redo ? NULL : g->rc->cfg.sums;
	struct block_sums keep = {0};

	sum_sizes_sqroot(&h, len, s->protocol, g->o->block_size, csum_len(s->xfer_csum), redo);
	/* -c reads every byte anyway; its sums are then taken afresh, so a
	 * destination block that changed behind the cache's back (its
	 * metadata left as it was) is found and replaced, not trusted. */
	const struct block_sums *kept = sc && !g->o->append && !g->o->checksum
						? kept_sums(g, fd, cache_path, &h, len)
						: NULL;
	/* Kept sums are full length, and sent so they cost the sender less:
	 * strong sums that long decide a match alone (MATCH_STRONG_DECIDES),
	 * so it need not compute a weak sum of every block it reads. */
	if (kept)
		h.s2length = (int32_t)sc->s2len;
	if (!sum_head_write(s, &h))
		return false;
	/* --append: the head says how much we have; no block sums follow
	 * (generator.c: generate_and_send_sums) */
	if (g->o->append && !redo)
		return true;
	if (kept) {
		sumcache_hand_over(sc, ndx, kept);
		return send_kept_sums(g, &h, kept);
	}
	if (sc && !sums_to_keep(g, &h, &keep))
		sc = NULL;
	/* A big file's head goes out at once: a ferry sender then hashes its
	 * own blocks while we read the basis (match_ahead.c). */
	if (len >= SUMS_EARLY_HEAD && !wire_flush(&s->out))
		return false;
	size_t per_read = SUMS_READ_BUF - SUMS_READ_BUF % (size_t)h.blength;
	while (off < len) {
		size_t want = len - off < (int64_t)per_read ? (size_t)(len - off) : per_read;
		ssize_t got = fs_pread_full(fd, g->buf, want, off);
		if (got <= 0)
			break; /* shrank under us: the sums we sent still describe a prefix */
		for (size_t p = 0; p < (size_t)got; p += (size_t)h.blength) {
			size_t n = (size_t)got - p < (size_t)h.blength ? (size_t)got - p
								    : (size_t)h.blength;
			uint32_t sum1 = csum_rolling(g->buf + p, n);
			csum_block(s->xfer_csum, s->seed, s->proper_seed_order, g->buf + p, n,
				   strong);
			if (sc) {
				int64_t k = (off + (int64_t)p) / h.blength;
				keep.sum1[k] = sum1;
				memcpy(keep.sum2 + (size_t)k * sc->s2len, strong, sc->s2len);
			}
			if (!wire_write_i32(&s->out, (int32_t)sum1) ||
			    !wire_write(&s->out, strong, (size_t)h.s2length)) {
				free(keep.sum1);
				free(keep.sum2);
				return false;
			}
		}
		off += got;
		if ((size_t)got < want)
			break;
	}
	/* only the sums of a whole basis describe what the receiver will
	 * rebuild from */
	if (sc && off == len)
		sumcache_hand_over(sc, ndx, &keep);
	free(keep.sum1);
	free(keep.sum2);
	/* A basis that shrank while we read it: pad with sums that match
	 * nothing, so the count we promised holds. */
	int64_t sent_blocks = (off + h.blength - 1) / h.blength;
	memset(strong, 0, sizeof strong);
	for (int64_t i = sent_blocks; i < h.count; i++)
		if (!wire_write_i32(&s->out, 0) || !wire_write(&s->out, strong, (size_t)h.s2length))
			return false;
	return true;
}

bool send_null_sums(struct session *s)
{
	struct sum_head h = {0, 0, 0, 0};

	return sum_head_write(s, &h);
}
