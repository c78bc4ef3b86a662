/*
 * proto/zadapt.c: ferry's adaptive compression rule, decision by decision.
 *
 * The ladders of settings per algorithm; incompressible windows going to
 * "store" and a compressible sample bringing them back; the compressor-
 * bound rule stepping down, the link-bound rule stepping back up after
 * its hold, and the hold doubling when a step up has to be taken back;
 * windows too short to mean anything; --compress-level (not adaptive)
 * never moving.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "proto/token.h"
#include "proto/zadapt.h"

#define ZSTD_MIN (-131072)
#define MS 1000000u

static const struct zadapt_window cpu_bound = {
	.timed = true, .in = ZADAPT_WINDOW, .out = ZADAPT_WINDOW / 3, .bytes = ZADAPT_WINDOW,
	.comp_ns = 10 * MS, .wait_ns = 1 * MS};
static const struct zadapt_window link_bound = {
	.timed = true, .in = ZADAPT_WINDOW, .out = ZADAPT_WINDOW / 3, .bytes = ZADAPT_WINDOW,
	.comp_ns = 2 * MS, .wait_ns = 50 * MS};
static const struct zadapt_window balanced = {
	.timed = true, .in = ZADAPT_WINDOW, .out = ZADAPT_WINDOW / 3, .bytes = ZADAPT_WINDOW,
	.comp_ns = 10 * MS, .wait_ns = 10 * MS};

static void test_ladders(void **state)
{
	struct zadapt z;
	(void)state;

	zadapt_init(&z, CPRES_ZSTD, 3, true, ZSTD_MIN);
	int zstd[] = {3, 1, -1, -4, -10, ZSTD_MIN};
	assert_int_equal(z.nrungs, 6);
	for (int i = 0; i < 6; i++)
		assert_int_equal(z.rungs[i], zstd[i]);
	zadapt_init(&z, CPRES_ZLIB, 6, true, ZSTD_MIN);
	int zlib[] = {6, 3, 1, 0};
	assert_int_equal(z.nrungs, 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(z.rungs[i], zlib[i]);
	zadapt_init(&z, CPRES_LZ4, 0, true, ZSTD_MIN);
	int lz4[] = {1, 4, 16, 64, 0};
	assert_int_equal(z.nrungs, 5);
	for (int i = 0; i < 5; i++)
		assert_int_equal(z.rungs[i], lz4[i]);
	/* a low normal level keeps only the faster steps below it */
	zadapt_init(&z, CPRES_ZSTD, -2, true, ZSTD_MIN);
	assert_int_equal(z.nrungs, 4);
	assert_int_equal(z.rungs[1], -4);
	zadapt_init(&z, CPRES_ZLIBX, 1, true, ZSTD_MIN);
	assert_int_equal(z.nrungs, 2);
	assert_int_equal(zadapt_setting(&z), 1);
	assert_false(zadapt_storing(&z));
}

static void test_incompressible(void **state)
{
	struct zadapt z;
	(void)state;

	zadapt_init(&z, CPRES_ZSTD, 3, true, ZSTD_MIN);
	struct zadapt_window w = {.in = ZADAPT_FIRST_WINDOW, .out = ZADAPT_FIRST_WINDOW + 20};
	assert_true(zadapt_window_end(&z, &w));
	assert_true(zadapt_storing(&z));
	assert_int_equal(zadapt_setting(&z), ZSTD_MIN);
	/* while storing, only a sample can bring compression back */
	struct zadapt_window s = {.in = ZADAPT_WINDOW / 4, .out = ZADAPT_WINDOW / 4,
				  .sample_in = ZADAPT_SAMPLE, .sample_out = ZADAPT_SAMPLE + 40};
	assert_false(zadapt_window_end(&z, &s));
	assert_true(zadapt_storing(&z));
	s.sample_out = ZADAPT_SAMPLE / 2;
	assert_true(zadapt_window_end(&z, &s));
	assert_false(zadapt_storing(&z));
	assert_int_equal(zadapt_setting(&z), 3);
	/* 97 % is still worth it, 98 % is not */
	w.out = ZADAPT_FIRST_WINDOW * 97 / 100;
	assert_false(zadapt_window_end(&z, &w));
	w.out = ZADAPT_FIRST_WINDOW * 98 / 100;
	assert_true(zadapt_window_end(&z, &w));
	/* a new file starts compressing again */
	zadapt_file_begin(&z);
	assert_false(zadapt_storing(&z));
	assert_int_equal(z.changes, 3);
}

static void test_speed_down_and_up(void **state)
{
	struct zadapt z;
	(void)state;

	zadapt_init(&z, CPRES_ZSTD, 3, true, ZSTD_MIN);
	for (int i = 1; i < z.nrungs; i++) {
		assert_true(zadapt_window_end(&z, &cpu_bound));
		assert_int_equal(z.rung, i);
	}
	assert_true(zadapt_storing(&z));
	assert_false(zadapt_window_end(&z, &cpu_bound)); /* nothing below store */
	/* the link becomes the bottleneck: up after the hold */
	int hold = z.hold, windows = 0;
	assert_true(hold > 0);
	while (!zadapt_window_end(&z, &link_bound))
		windows++;
	assert_int_equal(windows, hold);
	assert_int_equal(z.rung, z.nrungs - 2);
	/* the step up did not pay: down again, and the next hold is longer */
	assert_true(zadapt_window_end(&z, &cpu_bound));
	assert_true(z.hold > hold);
	int hold2 = z.hold;
	windows = 0;
	while (!zadapt_window_end(&z, &link_bound))
		windows++;
	assert_int_equal(windows, hold2);
	/* link-bound all the way up to the normal level, never above */
	for (int i = 0; i < 200; i++)
		zadapt_window_end(&z, &link_bound);
	assert_int_equal(z.rung, 0);
	assert_int_equal(zadapt_setting(&z), 3);
	/* balanced windows change nothing */
	int changes = z.changes;
	for (int i = 0; i < 50; i++)
		assert_false(zadapt_window_end(&z, &balanced));
	assert_int_equal(z.changes, changes);
}

/* Far more compressing than waiting: two rungs at once. */
static void test_far_cpu_bound(void **state)
{
	struct zadapt z;
	struct zadapt_window far = cpu_bound;
	(void)state;

	far.comp_ns = 20 * MS;
	far.wait_ns = 1 * MS;
	zadapt_init(&z, CPRES_ZSTD, 3, true, ZSTD_MIN);
	assert_true(zadapt_window_end(&z, &far));
	assert_int_equal(zadapt_setting(&z), -1);
	assert_true(zadapt_window_end(&z, &far));
	assert_int_equal(zadapt_setting(&z), -10);
	assert_true(zadapt_window_end(&z, &far)); /* only one rung left */
	assert_true(zadapt_storing(&z));
}

static void test_hold_bounded(void **state)
{
	struct zadapt z;
	(void)state;

	zadapt_init(&z, CPRES_LZ4, 0, true, ZSTD_MIN);
	assert_true(zadapt_window_end(&z, &cpu_bound));
	for (int round = 0; round < 20; round++) {
		while (!zadapt_window_end(&z, &link_bound))
			;
		assert_true(zadapt_window_end(&z, &cpu_bound));
		assert_true(z.hold <= ZADAPT_MAX_HOLD);
	}
	assert_int_equal(z.hold, ZADAPT_MAX_HOLD);
}

static void test_no_evidence(void **state)
{
	struct zadapt z;
	(void)state;

	zadapt_init(&z, CPRES_ZLIB, 6, true, ZSTD_MIN);
	/* a short window: too little compressing or waiting to judge */
	struct zadapt_window w = {.in = 4096, .out = 1000, .comp_ns = ZADAPT_MIN_NS / 2,
				  .wait_ns = 0};
	for (int i = 0; i < 10; i++)
		assert_false(zadapt_window_end(&z, &w));
	/* nor is a window whose times cover too little data (timed unset) */
	struct zadapt_window untimed = cpu_bound;
	untimed.timed = false;
	assert_false(zadapt_window_end(&z, &untimed));
	/* a window with no data (small files) judges speed only */
	struct zadapt_window speed = cpu_bound;
	speed.in = speed.out = 0;
	assert_true(zadapt_window_end(&z, &speed));
	assert_false(zadapt_storing(&z));
	assert_int_equal(zadapt_setting(&z), 3);
}

/* 8 MiB of zero pages compressed in 1.7 ms to 32 bytes: the link had
 * nothing to wait for, but a compressor that fast is no bottleneck (seen
 * at --bwlimit=20m on a PGDATA, where stepping down cost bytes). The same
 * window compressed at 20 ms is one. */
static void test_fast_compressor(void **state)
{
	struct zadapt z;
	(void)state;

	zadapt_init(&z, CPRES_ZSTD, 3, true, ZSTD_MIN);
	struct zadapt_window zeros = {.timed = true, .in = ZADAPT_WINDOW, .out = 32,
				      .bytes = 8 * ZADAPT_WINDOW, .comp_ns = 1700000,
				      .wait_ns = 0};
	for (int i = 0; i < 10; i++)
		assert_false(zadapt_window_end(&z, &zeros));
	assert_int_equal(zadapt_setting(&z), 3);
	zeros.comp_ns = 20 * MS;
	assert_true(zadapt_window_end(&z, &zeros));
	assert_int_equal(zadapt_setting(&z), -1);
}

static void test_fixed_level(void **state)
{
	struct zadapt z;
	(void)state;

	zadapt_init(&z, CPRES_ZSTD, 9, false, ZSTD_MIN);
	struct zadapt_window noise = {.timed = true, .in = ZADAPT_WINDOW,
				      .out = ZADAPT_WINDOW + 100, .comp_ns = 50 * MS};
	for (int i = 0; i < 10; i++) {
		assert_false(zadapt_window_end(&z, &noise));
		assert_false(zadapt_window_end(&z, &cpu_bound));
	}
	assert_int_equal(zadapt_setting(&z), 9);
	assert_int_equal(z.changes, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ladders),
		cmocka_unit_test(test_incompressible),
		cmocka_unit_test(test_speed_down_and_up),
		cmocka_unit_test(test_far_cpu_bound),
		cmocka_unit_test(test_hold_bounded),
		cmocka_unit_test(test_no_evidence),
		cmocka_unit_test(test_fast_compressor),
		cmocka_unit_test(test_fixed_level),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
