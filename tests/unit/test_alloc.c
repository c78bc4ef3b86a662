/*
 * The --max-alloc allocator (proto/base/alloc.c): the overflow-checked size test,
 * the limits a client and a daemon apply, and the RERR_MALLOC failure with
 * rsync's message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "proto/base/alloc.h"
#include "proto/base/wire.h"

static void test_fits_overflow(void **state)
{
	(void)state;
	/* n * size would wrap to a small number: refused, never allocated */
	assert_false(alloc_fits(SIZE_MAX / 2 + 1, 2, SIZE_MAX));
	assert_false(alloc_fits((size_t)1 << 33, (size_t)1 << 32, SIZE_MAX));
	assert_false(alloc_fits(SIZE_MAX, SIZE_MAX, SIZE_MAX));
	assert_true(alloc_fits(SIZE_MAX / 16 - 1, 16, SIZE_MAX));
}

static void test_fits_limit(void **state)
{
	(void)state;
	size_t mib = 1024 * 1024;
	/* rsync refuses num >= limit / size: the limit itself is too much */
	assert_true(alloc_fits(mib / 8 - 1, 8, mib));
	assert_false(alloc_fits(mib / 8, 8, mib));
	assert_false(alloc_fits(mib, 1, mib));
	assert_true(alloc_fits(0, 8, mib));
	/* a zero item size counts as one byte, not as a division by zero */
	assert_true(alloc_fits(10, 0, mib));
}

static void test_limit_for(void **state)
{
	(void)state;
	size_t gib = (size_t)1 << 30, mib = 1 << 20;
	assert_int_equal(alloc_limit_for(false, 0, false, gib), gib);
	assert_int_equal(alloc_limit_for(false, 0, true, mib), mib);
	assert_int_equal(alloc_limit_for(true, 2 * gib, false, gib), 2 * gib);
	assert_int_equal(alloc_limit_for(true, mib, true, gib), mib);
	/* 0 lifts the limit for a client, never for a daemon */
	assert_int_equal(alloc_limit_for(true, 0, false, gib), SIZE_MAX);
	assert_int_equal(alloc_limit_for(true, 0, true, gib), gib);
	assert_int_equal(alloc_limit_for(true, 0, true, mib), mib);
	/* nor can a daemon's client raise it */
	assert_int_equal(alloc_limit_for(true, 2 * gib, true, gib), gib);
	/* an operator's "no limit" stays theirs to give */
	assert_int_equal(alloc_limit_for(true, 0, true, SIZE_MAX), SIZE_MAX);
}

static void test_refusal_message(void **state)
{
	(void)state;
	struct wire_error err;

	wire_error_init(&err);
	alloc_limit_set(1 << 20);
	assert_int_equal(alloc_limit(), 1 << 20);
	void *p = xmalloc_array(&err, (1 << 20) / 8 - 1, 8);
	assert_non_null(p);
	assert_int_equal(wire_error_code(&err), 0);
	void *q = xrealloc_array(&err, p, 1 << 17, 8);
	assert_null(q);
	assert_int_equal(wire_error_code(&err), RERR_MALLOC);
	assert_non_null(strstr(err.msg, "exceeded --max-alloc=1048576 setting (file=test_alloc.c, line="));
	free(p); /* a refused realloc leaves the block to its owner */

	wire_error_init(&err);
	assert_null(xcalloc_array(&err, SIZE_MAX / 4, 8));
	assert_int_equal(wire_error_code(&err), RERR_MALLOC);

	alloc_limit_set(0); /* no limit: only the overflow check is left */
	assert_int_equal(alloc_limit(), SIZE_MAX);
	wire_error_init(&err);
	assert_null(xmalloc_array(&err, SIZE_MAX / 2 + 1, 2));
	assert_int_equal(wire_error_code(&err), RERR_MALLOC);
	p = xcalloc_array(&err, 0, 8);
	assert_non_null(p);
	free(p);
	alloc_limit_set(ALLOC_DEFAULT_LIMIT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fits_overflow),
		cmocka_unit_test(test_fits_limit),
		cmocka_unit_test(test_limit_for),
		cmocka_unit_test(test_refusal_message),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
