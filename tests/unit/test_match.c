/*
 * proto/match.c: the sender's block search, run against a receiver
 * simulated in memory. Every case rebuilds the file from the tokens (a
 * block token copies the basis block, or with --inplace the block as it
 * is now in the file being overwritten) and checks that it equals the
 * source, that the bytes fed to the whole-file sum are the source's, and
 * how much went as literal data. The sender's own file sum is taken from
 * the bytes it sends, so a wrong token stream can pass the receiver's
 * check: only a test like this catches it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "proto/match.h"

#define PAGE 8192
#define STRONG_LEN 8

struct sink {
	const uint8_t *basis;
	size_t basis_len;
	uint8_t *out;        /* the file as the receiver builds it */
	size_t out_len, out_cap;
	uint8_t *fed;        /* the bytes given to the whole-file sum */
	size_t fed_len;
	size_t literal;
	bool in_place;       /* out started as the basis, overwritten */
};

static void strong_sum(void *ctx, const uint8_t *p, size_t n, uint8_t *out)
{
	uint64_t h = 1469598103934665603ull;

	(void)ctx;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	memcpy(out, &h, STRONG_LEN);
}

static void put(struct sink *k, const uint8_t *p, size_t n)
{
	assert_true(k->out_len + n <= k->out_cap);
	memmove(k->out + k->out_len, p, n);
	k->out_len += n;
}

static bool on_literal(void *ctx, const uint8_t *p, size_t n)
{
	struct sink *k = ctx;

	assert_true(n > 0 && n <= 32768);
	k->literal += n;
	put(k, p, n);
	return true;
}

static bool on_block(void *ctx, int32_t b, const uint8_t *data, size_t n)
{
	struct sink *k = ctx;
	size_t off = (size_t)b * PAGE;
	/* with --inplace the block is read from the file as it is now */
	const uint8_t *from = k->in_place ? k->out + off : k->basis + off;

	assert_true(off + n <= k->basis_len);
	assert_memory_equal(from, data, n);
	put(k, from, n);
	return true;
}

static bool on_feed(void *ctx, const uint8_t *p, size_t n)
{
	struct sink *k = ctx;

	memcpy(k->fed + k->fed_len, p, n);
	k->fed_len += n;
	return true;
}

/* Run the matcher for src against basis; returns the literal bytes. */
static size_t run_match(const uint8_t *basis, size_t blen, const uint8_t *src, size_t slen,
			bool in_place, bool ahead)
{
	char path[] = "/tmp/test_match.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(write(fd, src, slen), (ssize_t)slen);

	struct sum_head h = {.blength = PAGE, .s2length = STRONG_LEN,
			     .remainder = (int32_t)(blen % PAGE),
			     .count = (int32_t)((blen + PAGE - 1) / PAGE)};
	uint32_t *sum1 = malloc((size_t)h.count * sizeof *sum1);
	uint8_t *sum2 = malloc((size_t)h.count * STRONG_LEN);
	for (int32_t b = 0; b < h.count; b++) {
		size_t n = blen - (size_t)b * PAGE < PAGE ? blen - (size_t)b * PAGE : PAGE;
		sum1[b] = csum_rolling(basis + (size_t)b * PAGE, n);
		strong_sum(NULL, basis + (size_t)b * PAGE, n, sum2 + (size_t)b * STRONG_LEN);
	}
	struct match_index m;
	assert_true(match_index_build(&m, &h, sum1, sum2));

	size_t cap = slen > blen ? slen : blen;
	struct sink k = {.basis = basis, .basis_len = blen, .out = malloc(cap), .out_cap = cap,
			 .fed = malloc(slen + 1), .in_place = in_place};
	if (in_place)
		memcpy(k.out, basis, blen);
	struct match_ahead a;
	bool have_ahead = ahead && match_ahead_start(&a, fd, &h, strong_sum, NULL);
	if (ahead)
		assert_true(have_ahead);
	if (have_ahead) /* let the helper get well ahead of the matcher */
		usleep(50000);
	struct match_out mo = {.ctx = &k, .emit_literal = on_literal, .emit_block = on_block,
			       .feed = on_feed, .strong = strong_sum,
			       .ahead = have_ahead ? &a : NULL};
	assert_true(match_send_file(&m, fd, (int64_t)slen, in_place, &mo));
	if (have_ahead)
		match_ahead_stop(&a);

	assert_int_equal(k.out_len, slen);
	assert_memory_equal(k.out, src, slen);
	assert_int_equal(k.fed_len, slen);
	assert_memory_equal(k.fed, src, slen);
	size_t literal = k.literal;
	match_index_free(&m);
	free(k.out);
	free(k.fed);
	free(sum1);
	free(sum2);
	close(fd);
	return literal;
}

/* xorshift64: no period shorter than the files (an LCG's byte repeats
 * every 16 MiB, and the "new" data then matches the basis) */
static uint8_t *random_bytes(size_t n, uint64_t seed)
{
	uint8_t *p = malloc(n);
	uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;

	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)(x >> 32);
	}
	return p;
}

/* Rewrite pages first .. first + n - 1 with new bytes. */
static void change_pages(uint8_t *p, size_t first, size_t n, uint8_t salt)
{
	for (size_t i = first * PAGE; i < (first + n) * PAGE; i++)
		p[i] = (uint8_t)(p[i] * 7 + salt);
}

#define FILE_PAGES 2048 /* 16 MiB: big enough for the read-ahead hasher */

/* Pages changed in place, alone and in runs of up to six (longer than
 * the probe reaches, and long enough to pass 32 KiB of literal data at
 * once): the literal data is exactly the changed pages, in every mode. */
static void test_pages_changed_in_place(void **state)
{
	size_t len = (size_t)FILE_PAGES * PAGE;
	uint8_t *basis = random_bytes(len, 1);
	uint8_t *src = malloc(len);
	size_t changed = 0;

	(void)state;
	memcpy(src, basis, len);
	for (size_t pg = 0, run = 1; pg + run < FILE_PAGES; pg += 37 + run, run = run % 6 + 1) {
		change_pages(src, pg, run, (uint8_t)pg);
		changed += run;
	}
	for (int mode = 0; mode < 4; mode++) {
		size_t lit = run_match(basis, len, src, len, mode & 1, mode & 2);
		assert_int_equal(lit, changed * PAGE);
	}
	free(basis);
	free(src);
}

/* 1 MiB inserted at the front, and a few bytes inserted and deleted in
 * the middle: the shifted blocks are still found (the probe never turns
 * shifted data into literal data). */
static void test_shifted_data(void **state)
{
	size_t len = (size_t)FILE_PAGES * PAGE, ins = 1 << 20;
	uint8_t *basis = random_bytes(len, 2);
	uint8_t *front = random_bytes(len + ins, 3);
	uint8_t *mid = malloc(len + 100);

	(void)state;
	memcpy(front + ins, basis, len);
	for (int ahead = 0; ahead < 2; ahead++) {
		size_t lit = run_match(basis, len, front, len + ins, false, ahead);
		assert_true(lit >= ins && lit <= ins + PAGE);
	}
	/* 100 bytes in at page 500, 60 bytes out at page 1500 */
	size_t at1 = 500 * PAGE + 123, at2 = 1500 * PAGE + 77;
	memcpy(mid, basis, at1);
	memset(mid + at1, 0xAB, 100);
	memcpy(mid + at1 + 100, basis + at1, at2 - at1);
	memcpy(mid + at2 + 100, basis + at2 + 60, len - at2 - 60);
	size_t mlen = len + 40;
	for (int ahead = 0; ahead < 2; ahead++) {
		size_t lit = run_match(basis, len, mid, mlen, false, ahead);
		assert_true(lit <= 4 * PAGE);
	}
	free(basis);
	free(front);
	free(mid);
}

/* A short last block and changed pages right before it and at the start. */
static void test_edges(void **state)
{
	size_t len = 100 * PAGE + 1000;
	uint8_t *basis = random_bytes(len, 4);
	uint8_t *src = malloc(len);

	(void)state;
	memcpy(src, basis, len);
	change_pages(src, 0, 1, 9);
	change_pages(src, 98, 2, 9);
	for (int in_place = 0; in_place < 2; in_place++) {
		size_t lit = run_match(basis, len, src, len, in_place, false);
		assert_int_equal(lit, 3 * PAGE);
	}
	/* the source grew by pages the basis does not have */
	uint8_t *grown = random_bytes(len + 5 * PAGE, 5);
	memcpy(grown, basis, len);
	for (int in_place = 0; in_place < 2; in_place++)
		run_match(basis, len, grown, len + 5 * PAGE, in_place, false);
	free(basis);
	free(src);
	free(grown);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pages_changed_in_place),
		cmocka_unit_test(test_shifted_data),
		cmocka_unit_test(test_edges),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
