/*
 * One small open-addressing index for the tables that find an element of
 * the caller's array by a key: xattr sets (xattrs.c), hard-link leaders
 * (flist_send.c) and --sums-cache entries by path (sumcache.c).
 *
 * The table holds int32 indices into the caller's array; the caller gives
 * a 64-bit digest of each key and compares keys itself. The digest is
 * mixed with a secret drawn for each table and a lookup walks at most
 * IXTABLE_PROBE_LIMIT slots, as the block-search index in match.c does:
 * keys chosen by someone else (names in a pushed tree or cache file) do
 * not line up in one slot. Keys with equal digests still share a walk.
 * The table is at most half full.
 */
#ifndef FERRY_IXTABLE_H
#define FERRY_IXTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IXTABLE_PROBE_LIMIT 256

struct ixtable {
	int32_t *slot;              /* -1: empty; else an index */
	size_t cap;                 /* 0 or a power of two */
	size_t count;
	uint64_t key_mul, key_add;  /* the secret mixing (ixtable_init) */
};

/* A walk over the slots a digest may be in. */
struct ixprobe {
	size_t pos;
	int step;
};

/* An empty table with a fresh secret key; no memory until the first add. */
void ixtable_init(struct ixtable *t);
void ixtable_free(struct ixtable *t);

/* The slot-choosing hash of digest d (keyed, every output bit depending on
 * every input bit). */
uint64_t ixtable_mix(const struct ixtable *t, uint64_t d);

/* Add index ndx under digest d (the caller has checked it is not there).
 * Grows the table (rehashing every index through digest_of(ctx, index))
 * when it would be more than half full or the walk from d's home reaches
 * the probe limit. false: out of memory, nothing added. */
bool ixtable_add(struct ixtable *t, uint64_t d, int32_t ndx,
		 uint64_t (*digest_of)(const void *ctx, int32_t ndx), const void *ctx);

/* The indices stored under digests that share d's walk, in order: the
 * first (or -1 when there is none), then each next one until -1. The
 * caller compares each one's key with its own. */
static inline int32_t ixtable_next(const struct ixtable *t, struct ixprobe *p)
{
	if (p->step >= IXTABLE_PROBE_LIMIT)
		return -1;
	int32_t v = t->slot[p->pos];
	p->pos = (p->pos + 1) & (t->cap - 1);
	p->step = v < 0 ? IXTABLE_PROBE_LIMIT : p->step + 1;
	return v;
}

static inline int32_t ixtable_first(const struct ixtable *t, uint64_t d, struct ixprobe *p)
{
	if (!t->cap)
		return -1;
	p->pos = ixtable_mix(t, d) & (t->cap - 1);
	p->step = 0;
	return ixtable_next(t, p);
}

/* A 64-bit digest of len bytes (FNV-1a), for string keys. */
uint64_t ixtable_digest_bytes(const void *p, size_t len);

#endif
