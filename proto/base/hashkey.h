/*
 * Secret keys for the hash tables whose keys someone else chooses (the
 * block search's sums in match.c, names in ixtable.c): with a fixed hash
 * a peer could put every key in one slot and make each insert and lookup
 * walk the whole table (hash flooding).
 */
#ifndef FERRY_HASHKEY_H
#define FERRY_HASHKEY_H

#include <stddef.h>
#include <stdint.h>

/* MurmurHash3's 64-bit finaliser: every output bit depends on every input
 * bit, so structured inputs (arithmetic runs of sums) do not line up after
 * a keyed multiply. */
static inline uint64_t fmix64(uint64_t v)
{
	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdull;
	v ^= v >> 33;
	v *= 0xc4ceb9fe1a85ec53ull;
	v ^= v >> 33;
	return v;
}

/* Fill r[0..n) with fresh secret words from getrandom(). Without entropy
 * yet (early boot) they come from the clock, the pid and salt (the
 * address of the table being keyed) through fmix64: weaker, but never
 * fixed. */
void hashkey_fill(uint64_t *r, size_t n, const void *salt);

#endif
