/*
 * The shared open-addressing index (see ixtable.h).
 */
#include "proto/base/ixtable.h"

#include <stdlib.h>

#include "proto/base/hashkey.h"

/* A fresh secret for the table. */
static void new_key(struct ixtable *t)
{
	uint64_t r[2];

	hashkey_fill(r, 2, t);
	t->key_mul = r[0] | 1;
	t->key_add = r[1];
}

void ixtable_init(struct ixtable *t)
{
	t->slot = NULL;
	t->cap = t->count = 0;
	new_key(t);
}

void ixtable_free(struct ixtable *t)
{
	free(t->slot);
	t->slot = NULL;
	t->cap = t->count = 0;
}

uint64_t ixtable_mix(const struct ixtable *t, uint64_t d)
{
	return fmix64(d * t->key_mul + t->key_add);
}

uint64_t ixtable_digest_bytes(const void *p, size_t len)
{
	const unsigned char *b = p;
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

/* Put ndx in the first empty slot of d's walk; false past the limit. */
static bool place(struct ixtable *t, uint64_t d, int32_t ndx)
{
	size_t pos = ixtable_mix(t, d) & (t->cap - 1);

	for (int i = 0; i < IXTABLE_PROBE_LIMIT; i++) {
		if (t->slot[pos] < 0) {
			t->slot[pos] = ndx;
			return true;
		}
		pos = (pos + 1) & (t->cap - 1);
	}
	return false;
}

/* Move every index into a table of cap slots under a fresh key; false
 * (the table as it was) when memory is short or a walk reaches the limit. */
static bool rebuild(struct ixtable *t, size_t cap,
		    uint64_t (*digest_of)(const void *ctx, int32_t ndx), const void *ctx)
{
	if (cap > SIZE_MAX / sizeof *t->slot)
		return false;
	struct ixtable n = {.slot = malloc(cap * sizeof *t->slot), .cap = cap, .count = t->count};
	if (!n.slot)
		return false;
	for (size_t i = 0; i < cap; i++)
		n.slot[i] = -1;
	new_key(&n);
	for (size_t i = 0; i < t->cap; i++) {
		if (t->slot[i] >= 0 && !place(&n, digest_of(ctx, t->slot[i]), t->slot[i])) {
			free(n.slot);
			return false;
		}
	}
	free(t->slot);
	*t = n;
	return true;
}

bool ixtable_add(struct ixtable *t, uint64_t d, int32_t ndx,
		 uint64_t (*digest_of)(const void *ctx, int32_t ndx), const void *ctx)
{
	size_t need = 16;

	if (ndx < 0)
		return false;
	while (need < (t->count + 1) * 2)
		need *= 2;
	/* Room beyond what the load asks for only while a walk reaches the
	 * limit, and at most 4 times: keys with equal digests (or a leaked
	 * key) do not spread however large the table. */
	for (size_t cap = t->cap < need ? need : t->cap; cap <= need * 4; cap *= 2) {
		if (cap != t->cap && !rebuild(t, cap, digest_of, ctx))
			continue;
		if (place(t, d, ndx)) {
			t->count++;
			return true;
		}
	}
	return false;
}
