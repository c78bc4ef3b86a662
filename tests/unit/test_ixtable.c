/*
 * The shared open-addressing index (proto/base/ixtable.h): every index added is
 * found again by its key and no other is; growth keeps them all; two
 * tables hash alike digests differently (secret keys); digests that are
 * all equal fill one walk up to the probe limit and are then refused
 * instead of growing the table without end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "proto/base/ixtable.h"

/* The caller's array: keys, and the digest each one is stored under. */
struct keys {
	uint64_t key[5000];
	uint64_t digest[5000];
};

static uint64_t digest_of(const void *ctx, int32_t ndx)
{
	const struct keys *k = ctx;

	return k->digest[ndx];
}

static int32_t find(const struct ixtable *t, const struct keys *k, uint64_t key, uint64_t d)
{
	struct ixprobe p;

	for (int32_t i = ixtable_first(t, d, &p); i >= 0; i = ixtable_next(t, &p))
		if (k->key[i] == key)
			return i;
	return -1;
}

static void test_add_find_grow(void **state)
{
	static struct keys k;
	struct ixtable t;

	(void)state;
	ixtable_init(&t);
	assert_int_equal(find(&t, &k, 1, 1), -1); /* empty: no memory yet */
	for (int32_t i = 0; i < 5000; i++) {
		k.key[i] = (uint64_t)i * 7919 + 3;
		k.digest[i] = k.key[i];
		assert_true(ixtable_add(&t, k.digest[i], i, digest_of, &k));
		assert_true(t.count * 2 <= t.cap);
	}
	for (int32_t i = 0; i < 5000; i++)
		assert_int_equal(find(&t, &k, k.key[i], k.digest[i]), i);
	assert_int_equal(find(&t, &k, 2, 2), -1);
	assert_int_equal(t.count, 5000);
	ixtable_free(&t);
	assert_null(t.slot);
}

/* Keys that differ but share a digest are told apart by the caller. */
static void test_shared_digest(void **state)
{
	static struct keys k;
	struct ixtable t;

	(void)state;
	ixtable_init(&t);
	for (int32_t i = 0; i < 100; i++) {
		k.key[i] = (uint64_t)i;
		k.digest[i] = 42;
		assert_true(ixtable_add(&t, 42, i, digest_of, &k));
	}
	for (int32_t i = 0; i < 100; i++)
		assert_int_equal(find(&t, &k, (uint64_t)i, 42), i);
	assert_int_equal(find(&t, &k, 100, 42), -1);
	ixtable_free(&t);
}

/* More equal digests than one walk may hold: refused, bounded memory,
 * and what was added is still found. */
static void test_probe_limit(void **state)
{
	static struct keys k;
	struct ixtable t;
	int32_t added = 0;

	(void)state;
	ixtable_init(&t);
	for (int32_t i = 0; i < 1000; i++) {
		k.key[i] = (uint64_t)i;
		k.digest[i] = 7;
		if (!ixtable_add(&t, 7, i, digest_of, &k))
			break;
		added++;
	}
	assert_int_equal(added, IXTABLE_PROBE_LIMIT);
	assert_true(t.cap <= 4 * 1024);
	for (int32_t i = 0; i < added; i++)
		assert_int_equal(find(&t, &k, (uint64_t)i, 7), i);
	ixtable_free(&t);
}

/* The slot of a digest depends on the table's secret. */
static void test_keyed(void **state)
{
	struct ixtable a, b;
	int differ = 0;

	(void)state;
	ixtable_init(&a);
	ixtable_init(&b);
	for (uint64_t d = 0; d < 64; d++)
		differ += (ixtable_mix(&a, d) & 1023) != (ixtable_mix(&b, d) & 1023);
	assert_true(differ > 32);
	assert_int_not_equal(ixtable_digest_bytes("ab", 2), ixtable_digest_bytes("ba", 2));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_find_grow),
		cmocka_unit_test(test_shared_digest),
		cmocka_unit_test(test_probe_limit),
		cmocka_unit_test(test_keyed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
