/*
 * proto/delta/match.c: the sender's block search, run against a receiver
 * simulated in memory. Every case rebuilds the file from the tokens (a
 * block token copies the basis block, or with --inplace the block as it
 * is now in the file being overwritten) and checks that it equals the
 * source, that the bytes fed to the whole-file sum are the source's, and
 * how much went as literal data. The sender's own file sum is taken from
 * the bytes it sends, so a wrong token stream can pass the receiver's
 * check: only a test like this catches it.
 *
 * With the read-ahead hasher (match_ahead.c) carrying the whole-file sum,
 * the matcher reads only the data it sends as literal bytes; every case
 * then also checks that the sum the sender ends with is the sum of the
 * file the receiver rebuilt (the rule that makes a file changed during the
 * transfer be sent again), and how much the matcher read itself.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "proto/delta/match.h"

#define PAGE 8192
/* Strong-sum bytes the receiver sends: 8 lets a strong sum decide alone
 * (MATCH_STRONG_DECIDES, the helper computes no weak sums), as kept sums
 * do; test_short_strong_sums runs cases with rsync's usual 4. */
static int32_t strong_len = 8;
#define FILE_SUM CSUM_XXH3

struct sink {
	const uint8_t *basis;
	size_t basis_len;
	uint8_t *out;        /* the file as the receiver builds it */
	size_t out_len, out_cap;
	uint8_t *fed;        /* the bytes given to the whole-file sum */
	size_t fed_len;
	size_t literal;
	bool in_place;       /* out started as the basis, overwritten */
	bool no_block_data;  /* emit_block gets no bytes */
	struct csum_ctx sum; /* the sender's whole-file sum */
	bool summed_ahead;   /* some bytes were fed as already summed */
};

/* The block-wise file sum (blockwise.h) takes the helper's block digests
 * for csum_block()'s: its runs hash blocks with xxh128, as a sender does. */
static bool strong_is_xxh128;

static void strong_sum(void *ctx, const uint8_t *p, size_t n, uint8_t *out)
{
	uint64_t h = 1469598103934665603ull;

	(void)ctx;
	if (strong_is_xxh128) {
		uint8_t full[CSUM_MAX_DIGEST];
		csum_block(CSUM_XXH128, 0, false, p, n, full);
		memcpy(out, full, BLOCKWISE_WIDTH);
		return;
	}
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	memcpy(out, &h, (size_t)strong_len);
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
	if (k->no_block_data)
		assert_null(data);
	else
		assert_memory_equal(from, data, n);
	put(k, from, n);
	return true;
}

static bool on_feed(void *ctx, const uint8_t *p, size_t n)
{
	struct sink *k = ctx;

	if (p) {
		memcpy(k->fed + k->fed_len, p, n);
		csum_file_update(&k->sum, p, n);
	} else {
		k->summed_ahead = true;
	}
	k->fed_len += n;
	return true;
}

static void file_digest(const uint8_t *p, size_t n, uint8_t *out)
{
	struct csum_ctx c;

	csum_file_init(&c, FILE_SUM, 0);
	csum_file_update(&c, p, n);
	csum_file_final(&c, out);
}

/* Rewrite pages first .. first + n - 1 with new bytes. */
static void change_pages(uint8_t *p, size_t first, size_t n, uint8_t salt)
{
	for (size_t i = first * PAGE; i < (first + n) * PAGE; i++)
		p[i] = (uint8_t)(p[i] * 7 + salt);
}

/* How run_match runs the matcher, and what happens to the file under it. */
struct run {
	bool in_place;        /* the receiver overwrites its basis */
	bool ahead;           /* hash ahead on a second thread */
	bool file_sum;        /* ... and let it carry the whole-file sum */
	bool block_data;      /* emit_block gets the block's bytes (compression) */
	bool no_wait;         /* start matching at once, the helper just begun */
	bool tree;            /* the block-wise file sum instead (blockwise.h) */
	/* The helper sees the first first_len bytes of src (0: all); then
	 * the rest is appended, the file is cut to cut_len bytes (0: not),
	 * page touch_page (-1: none) is rewritten; the matcher is told the
	 * file has announce_len bytes (0: what it has then). */
	size_t first_len, cut_len, announce_len;
	long touch_page;
	/* results */
	size_t literal;
	int64_t bytes_read;
	bool sum_ok;          /* the sender's sum is the rebuilt file's */
	bool rebuilt_src;     /* the rebuilt file is src (its first file_len bytes) */
	bool tree_ok;         /* tree: the sender's sum is the rebuilt file's */
	int read_errno;       /* the matcher could not read the announced length */
};

static void blockwise_of(const uint8_t *p, size_t n, uint8_t *out)
{
	struct blockwise_sum t;

	blockwise_begin(&t, CSUM_XXH128, 0, false, PAGE);
	/* in uneven pieces, as a receiver gets them */
	for (size_t off = 0, step = 1000; off < n; off += step, step = step * 3 % 20011 + 1)
		blockwise_bytes(&t, p + off, step < n - off ? step : n - off);
	blockwise_end(&t, out);
}

static void build_sums(const uint8_t *basis, size_t blen, struct sum_head *h, uint32_t **sum1,
		       uint8_t **sum2)
{
	*h = (struct sum_head){.blength = PAGE, .s2length = strong_len,
			       .remainder = (int32_t)(blen % PAGE),
			       .count = (int32_t)((blen + PAGE - 1) / PAGE)};
	*sum1 = malloc((size_t)h->count * sizeof **sum1);
	*sum2 = malloc((size_t)h->count * (size_t)strong_len);
	for (int32_t b = 0; b < h->count; b++) {
		size_t n = blen - (size_t)b * PAGE < PAGE ? blen - (size_t)b * PAGE : PAGE;
		uint8_t strong[CSUM_MAX_DIGEST];
		(*sum1)[b] = csum_rolling(basis + (size_t)b * PAGE, n);
		strong_sum(NULL, basis + (size_t)b * PAGE, n, strong);
		memcpy(*sum2 + (size_t)b * (size_t)strong_len, strong, (size_t)strong_len);
	}
}

/* Change the file under the helper as o says; returns the length the
 * matcher is told. */
static size_t change_file(int fd, const uint8_t *src, size_t slen, const struct run *o)
{
	size_t first = o->first_len ? o->first_len : slen, len = slen;

	if (first < slen)
		assert_int_equal(pwrite(fd, src + first, slen - first, (off_t)first),
				 (ssize_t)(slen - first));
	if (o->cut_len) {
		assert_int_equal(ftruncate(fd, (off_t)o->cut_len), 0);
		len = o->cut_len;
	}
	if (o->touch_page >= 0) {
		uint8_t page[PAGE];
		memcpy(page, src + (size_t)o->touch_page * PAGE, PAGE);
		change_pages(page, 0, 1, 0x5a);
		assert_int_equal(pwrite(fd, page, PAGE, (off_t)o->touch_page * PAGE), PAGE);
	}
	return o->announce_len ? o->announce_len : len;
}

/* Run the matcher for src against basis, the receiver simulated. */
static void run_match_with(const uint8_t *basis, size_t blen, const uint8_t *src, size_t slen,
			   struct run *o)
{
	char path[] = "/tmp/test_match.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	size_t first = o->first_len ? o->first_len : slen;
	assert_int_equal(write(fd, src, first), (ssize_t)first);

	struct sum_head h;
	uint32_t *sum1;
	uint8_t *sum2;
	build_sums(basis, blen, &h, &sum1, &sum2);
	struct match_index m;
	assert_true(match_index_build(&m, &h, sum1, sum2));

	size_t cap = (slen > blen ? slen : blen) + (o->announce_len ? o->announce_len : 0);
	struct sink k = {.basis = basis, .basis_len = blen, .out = malloc(cap), .out_cap = cap,
			 .fed = malloc(cap), .in_place = o->in_place,
			 .no_block_data = !o->block_data};
	if (o->in_place)
		memcpy(k.out, basis, blen);
	csum_file_init(&k.sum, FILE_SUM, 0);
	struct match_ahead a;
	bool have_ahead = o->ahead && match_ahead_start(&a, fd, &h, strong_sum, NULL,
							o->file_sum ? &k.sum : NULL,
							o->tree ? BLOCKWISE_WIDTH : 0);
	if (o->ahead)
		assert_true(have_ahead);
	/* let the helper finish before the matcher starts (and before the
	 * file changes under it) */
	for (int ms = 0; have_ahead && !o->no_wait && ms < 20000 &&
			 !atomic_load(&a.ready[a.nblocks - 1]); ms++)
		usleep(1000);
	size_t file_len = change_file(fd, src, slen, o);
	struct match_out mo = {.ctx = &k, .emit_literal = on_literal, .emit_block = on_block,
			       .feed = on_feed, .strong = strong_sum,
			       .ahead = have_ahead ? &a : NULL,
			       .file_sum = o->file_sum ? &k.sum : NULL,
			       .no_block_data = !o->block_data};
	struct blockwise_sum tree;
	if (o->tree) {
		blockwise_begin(&tree, CSUM_XXH128, 0, false, PAGE);
		mo.tree = &tree;
	}
	assert_true(match_send_file(&m, fd, (int64_t)file_len, o->in_place, &mo));
	if (have_ahead)
		match_ahead_stop(&a);
	if (o->tree) {
		uint8_t sent[CSUM_MAX_DIGEST], rebuilt[CSUM_MAX_DIGEST];
		blockwise_end(&tree, sent);
		blockwise_of(k.out, k.out_len, rebuilt);
		o->tree_ok = memcmp(sent, rebuilt, csum_len(CSUM_XXH128)) == 0;
	}

	assert_int_equal(k.out_len, file_len);
	assert_int_equal(k.fed_len, file_len);
	if (!o->file_sum && !o->tree)
		assert_false(k.summed_ahead);
	uint8_t want[CSUM_MAX_DIGEST], got[CSUM_MAX_DIGEST];
	csum_file_final(&k.sum, got);
	file_digest(k.out, k.out_len, want);
	o->sum_ok = memcmp(want, got, csum_len(FILE_SUM)) == 0;
	o->rebuilt_src = file_len <= slen && memcmp(k.out, src, file_len) == 0;
	if (!k.summed_ahead && o->rebuilt_src && o->touch_page < 0)
		assert_memory_equal(k.fed, src, file_len);
	o->literal = k.literal;
	o->bytes_read = mo.bytes_read;
	o->read_errno = mo.read_errno;
	match_index_free(&m);
	free(k.out);
	free(k.fed);
	free(sum1);
	free(sum2);
	close(fd);
}

/* Returns the literal bytes; the file must be rebuilt as it is. */
static size_t run_match(const uint8_t *basis, size_t blen, const uint8_t *src, size_t slen,
			bool in_place, bool ahead)
{
	struct run o = {.in_place = in_place, .ahead = ahead, .block_data = true, .touch_page = -1};

	run_match_with(basis, blen, src, slen, &o);
	assert_true(o.rebuilt_src);
	assert_true(o.sum_ok);
	return o.literal;
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

/* The pages of test_pages_changed_in_place: src has `*changed` pages
 * rewritten, in runs of one to six. */
static uint8_t *pages_changed(const uint8_t *basis, size_t len, size_t *changed)
{
	uint8_t *src = malloc(len);

	memcpy(src, basis, len);
	*changed = 0;
	for (size_t pg = 0, run = 1; pg + run < FILE_PAGES; pg += 37 + run, run = run % 6 + 1) {
		change_pages(src, pg, run, (uint8_t)pg);
		*changed += run;
	}
	return src;
}

/* The helper carries the file sum: the matcher reads nothing but the
 * changed pages (without compression), whether it starts with the helper
 * far ahead or just begun, and the sum is the rebuilt file's. */
static void test_summed_ahead_in_place(void **state)
{
	size_t len = (size_t)FILE_PAGES * PAGE, changed;
	uint8_t *basis = random_bytes(len, 1);
	uint8_t *src = pages_changed(basis, len, &changed);

	(void)state;
	for (int mode = 0; mode < 8; mode++) {
		struct run o = {.in_place = mode & 1, .ahead = true, .file_sum = true,
				.block_data = mode & 2, .no_wait = mode & 4, .touch_page = -1};
		run_match_with(basis, len, src, len, &o);
		assert_true(o.rebuilt_src);
		assert_true(o.sum_ok);
		assert_int_equal(o.literal, changed * PAGE);
		/* runs of five or six pages are slid over, reading ahead */
		if (!o.block_data)
			assert_true(o.bytes_read < (int64_t)len / 2);
		else
			assert_true(o.bytes_read >= (int64_t)len);
	}
	free(src);
	/* single pages: the probe finds the next block each time, and
	 * exactly the changed pages are read */
	src = malloc(len);
	memcpy(src, basis, len);
	changed = 0;
	for (size_t pg = 3; pg < FILE_PAGES; pg += 29, changed++)
		change_pages(src, pg, 1, 3);
	for (int mode = 0; mode < 4; mode++) {
		struct run o = {.in_place = mode & 1, .ahead = true, .file_sum = true,
				.no_wait = mode & 2, .touch_page = -1};
		run_match_with(basis, len, src, len, &o);
		assert_true(o.rebuilt_src);
		assert_true(o.sum_ok);
		assert_int_equal(o.literal, changed * PAGE);
		assert_int_equal(o.bytes_read, (int64_t)(changed * PAGE));
	}
	free(basis);
	free(src);
}

/* Shifted data, the helper's blocks then lying across the basis blocks:
 * matched as before, summed right. */
static void test_summed_ahead_shifted(void **state)
{
	size_t len = (size_t)FILE_PAGES * PAGE, ins = 3 * PAGE + 5;
	uint8_t *basis = random_bytes(len, 2);
	uint8_t *src = random_bytes(len + ins, 3);

	(void)state;
	memcpy(src + ins, basis, len / 2);          /* shifted, first half */
	memcpy(src + ins + len / 2, basis + len / 2 + 100, len / 2 - 100); /* 100 out */
	for (int mode = 0; mode < 4; mode++) {
		struct run o = {.in_place = mode & 1, .ahead = true, .file_sum = true,
				.no_wait = mode & 2, .touch_page = -1};
		run_match_with(basis, len, src, len + ins - 100, &o);
		assert_true(o.rebuilt_src);
		assert_true(o.sum_ok);
		/* (in place, the data moved forward is overwritten first) */
		if (!o.in_place)
			assert_true(o.literal <= ins + 2 * PAGE);
	}
	free(basis);
	free(src);
}

/* The file grows after the helper's look at it (it hashed fewer blocks
 * than the matcher sends), or is cut: to a length the matcher is told
 * (the helper summed more than is sent: its sum is dropped), or to one
 * it is not (it sends what the helper read, or finds the sums differ). */
static void test_summed_ahead_length_changes(void **state)
{
	size_t len = (size_t)FILE_PAGES * PAGE, changed;
	uint8_t *basis = random_bytes(len, 4);
	uint8_t *src = pages_changed(basis, len, &changed);
	uint8_t *grown = random_bytes(len + 50 * PAGE + 333, 6);

	(void)state;
	memcpy(grown, src, len);
	for (int mode = 0; mode < 4; mode++) {
		bool in_place = mode & 1, no_wait = mode & 2;
		struct run g = {.in_place = in_place, .ahead = true, .file_sum = true,
				.no_wait = no_wait, .first_len = len, .touch_page = -1};
		run_match_with(basis, len, grown, len + 50 * PAGE + 333, &g);
		assert_true(g.rebuilt_src);
		assert_true(g.sum_ok);
		assert_int_equal(g.read_errno, 0);

		struct run c = {.in_place = in_place, .ahead = true, .file_sum = true,
				.no_wait = no_wait, .cut_len = 1500 * PAGE + 77, .touch_page = -1};
		run_match_with(basis, len, src, len, &c);
		assert_true(c.rebuilt_src);
		assert_true(c.sum_ok);
		assert_int_equal(c.read_errno, 0);

		/* announced longer than it is now: the missing bytes read as
		 * zeros; if what is sent is the file the helper read, the sums
		 * agree */
		struct run s = {.in_place = in_place, .ahead = true, .file_sum = true,
				.no_wait = no_wait, .cut_len = 1500 * PAGE,
				.announce_len = len, .touch_page = -1};
		run_match_with(basis, len, src, len, &s);
		assert_true(s.sum_ok || !s.rebuilt_src);
		/* ... and the sender is told, to spoil the sum it sends */
		assert_int_equal(s.read_errno, ENODATA);
	}
	free(basis);
	free(src);
	free(grown);
}

/* A page rewritten after the helper read it: a changed page (sent as
 * literal data, read again) makes the sums differ, so the file is sent
 * again; an unchanged one is sent as the helper read it, and summed so.
 * Without the helper's file sum the matcher's own read of the page is
 * summed, and the sums differ either way. */
static void test_summed_ahead_page_rewritten(void **state)
{
	size_t len = (size_t)FILE_PAGES * PAGE, changed;
	uint8_t *basis = random_bytes(len, 7);
	uint8_t *src = pages_changed(basis, len, &changed);

	(void)state;
	for (int in_place = 0; in_place < 2; in_place++) {
		struct run lit = {.in_place = in_place, .ahead = true, .file_sum = true,
				  .touch_page = 37 + 1 + 1}; /* the second run's first page */
		run_match_with(basis, len, src, len, &lit);
		assert_false(lit.sum_ok);
		assert_false(lit.rebuilt_src);

		struct run same = {.in_place = in_place, .ahead = true, .file_sum = true,
				   .touch_page = 1000};
		run_match_with(basis, len, src, len, &same);
		assert_true(same.sum_ok);
		assert_true(same.rebuilt_src);

		struct run own = {.in_place = in_place, .ahead = true, .touch_page = 1000};
		run_match_with(basis, len, src, len, &own);
		assert_false(own.sum_ok);
		assert_true(own.rebuilt_src);
	}
	free(basis);
	free(src);
}

/* The block-wise file sum: whatever the matcher does -- blocks in place,
 * shifted data, lengths changed, a page rewritten under the helper -- the
 * sum it sends is the one the receiver computes over the file it rebuilt,
 * and blocks matched with the helper's digests are not read again. */
static void test_blockwise_sum(void **state)
{
	(void)state;
	size_t len = (size_t)FILE_PAGES * PAGE + 123;
	uint8_t *basis = random_bytes(len, 21);
	uint8_t *src = malloc(len + 5 * PAGE);

	strong_is_xxh128 = true;
	for (int in_place = 0; in_place < 2; in_place++) {
		memcpy(src, basis, len);
		change_pages(src, 3, 2, 9);
		change_pages(src, 60, 1, 4);
		struct run same = {.in_place = in_place, .ahead = true, .tree = true,
				   .touch_page = -1};
		run_match_with(basis, len, src, len, &same);
		assert_true(same.rebuilt_src);
		assert_true(same.tree_ok);
		/* the changed pages, and the short last block, and no more */
		assert_true(same.bytes_read <= (int64_t)(3 * PAGE + 123 + 256 * 1024));

		struct run cold = {.in_place = in_place, .ahead = false, .tree = true,
				   .touch_page = -1, .block_data = true};
		run_match_with(basis, len, src, len, &cold);
		assert_true(cold.rebuilt_src);
		assert_true(cold.tree_ok);

		/* shifted by 100 bytes: nothing aligned matches the helper's
		 * digests, every byte is summed as read */
		memcpy(src, basis, 100);
		memcpy(src + 100, basis, len - 100);
		struct run shifted = {.in_place = in_place, .ahead = true, .tree = true,
				      .touch_page = -1};
		run_match_with(basis, len, src, len, &shifted);
		assert_true(shifted.rebuilt_src);
		assert_true(shifted.tree_ok);

		/* longer and shorter than the basis */
		memcpy(src, basis, len);
		memcpy(src + len, basis, 5 * PAGE);
		struct run longer = {.in_place = in_place, .ahead = true, .tree = true,
				     .touch_page = -1};
		run_match_with(basis, len, src, len + 5 * PAGE, &longer);
		assert_true(longer.rebuilt_src);
		assert_true(longer.tree_ok);
		struct run shorter = {.in_place = in_place, .ahead = true, .tree = true,
				      .touch_page = -1};
		run_match_with(basis, len, src, len - 7 * PAGE - 5, &shorter);
		assert_true(shorter.rebuilt_src);
		assert_true(shorter.tree_ok);

		/* a page rewritten after the helper hashed it: the sum still
		 * describes the file the tokens rebuild */
		struct run touched = {.in_place = in_place, .ahead = true, .tree = true,
				      .touch_page = 40};
		run_match_with(basis, len, src, len, &touched);
		assert_true(touched.tree_ok);

		/* cut short under the helpers, which may meet the end while
		 * hashing (a short read stops them all), and announced longer
		 * than it now is */
		for (int no_wait = 0; no_wait < 2; no_wait++) {
			struct run cut = {.in_place = in_place, .ahead = true, .tree = true,
					  .no_wait = no_wait, .cut_len = 1500 * PAGE + 77,
					  .touch_page = -1};
			run_match_with(basis, len, src, len, &cut);
			assert_true(cut.rebuilt_src);
			assert_true(cut.tree_ok);
			struct run gone = {.in_place = in_place, .ahead = true, .tree = true,
					   .no_wait = no_wait, .cut_len = 1500 * PAGE,
					   .announce_len = len, .touch_page = -1};
			run_match_with(basis, len, src, len, &gone);
			assert_true(gone.tree_ok || !gone.rebuilt_src);
		}
	}
	strong_is_xxh128 = false;
	free(basis);
	free(src);
}

/* Sums too short to decide alone: the helper computes weak sums too and
 * the matcher takes both from its table. */
/* No basis, all literal: a file that ends before its announced length
 * is sent padded with zeros, and the read error is reported; one read to
 * its end is not. */
static void test_literal_short_read(void **state)
{
	char path[] = "/tmp/test_match.XXXXXX";
	int fd = mkstemp(path);
	uint8_t *src = random_bytes(3 * PAGE, 11);

	(void)state;
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(write(fd, src, 3 * PAGE), 3 * PAGE);
	for (int shrunk = 0; shrunk < 2; shrunk++) {
		size_t announce = shrunk ? 5 * PAGE + 17 : 3 * PAGE;
		struct sink k = {.out = malloc(announce), .out_cap = announce,
				 .fed = malloc(announce), .no_block_data = true};
		csum_file_init(&k.sum, FILE_SUM, 0);
		struct match_out mo = {.ctx = &k, .emit_literal = on_literal,
				       .emit_block = on_block, .feed = on_feed,
				       .strong = strong_sum, .file_sum = &k.sum,
				       .no_block_data = true};
		assert_true(match_send_file(NULL, fd, (int64_t)announce, false, &mo));
		assert_int_equal(mo.read_errno, shrunk ? ENODATA : 0);
		assert_int_equal(k.out_len, announce);
		assert_memory_equal(k.out, src, 3 * PAGE);
		for (size_t i = 3 * PAGE; i < announce; i++)
			assert_int_equal(k.out[i], 0);
		free(k.out);
		free(k.fed);
	}
	free(src);
	close(fd);
}

static void test_short_strong_sums(void **state)
{
	strong_len = 4;
	test_summed_ahead_in_place(state);
	test_summed_ahead_page_rewritten(state);
	test_blockwise_sum(state);
	strong_len = 8;
}

/* The unkeyed mixer the index used before it was keyed (murmur3's
 * fmix32 with other constants), undone: a peer could pick weak sums
 * whose mix it chose, all in one slot. */
static uint32_t inverse_mod32(uint32_t a)
{
	uint32_t x = a;

	for (int i = 0; i < 5; i++)
		x *= 2 - a * x;
	return x;
}

static uint32_t old_unmix32(uint32_t x)
{
	x ^= x >> 16;
	x *= inverse_mod32(0x846ca68bu);
	x ^= x >> 15 ^ x >> 30;
	x *= inverse_mod32(0x7feb352du);
	x ^= x >> 16;
	return x;
}

static bool count_literal(void *ctx, const uint8_t *p, size_t n)
{
	(void)p;
	*(size_t *)ctx += n;
	return true;
}

static bool no_block(void *ctx, int32_t b, const uint8_t *data, size_t n)
{
	(void)ctx, (void)b, (void)data, (void)n;
	return false;   /* no window of random data is one of the crafted blocks */
}

static bool feed_nothing(void *ctx, const uint8_t *p, size_t n)
{
	(void)ctx, (void)p, (void)n;
	return true;
}

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Hash flooding (issue 22): 262,144 distinct weak sums whose old mix
 * had its low 19 bits below 32 started in the first 32 slots of the old
 * table of 2^19, one cluster: the build took 21 s in a daemon, and each
 * search probe landing there walked it. With the keyed hash the index is
 * built and a 4 MiB file searched against it, plain and --inplace, in a
 * few CPU milliseconds (the bound is 50x that), and no sum is dropped. */
static void test_crafted_sums_do_not_flood(void **state)
{
	enum { N = 1 << 18 };
	struct sum_head h = {.count = N, .blength = 700, .s2length = 2, .remainder = 0};
	uint32_t *sum1 = malloc(N * sizeof *sum1);
	uint8_t *sum2 = calloc(N, 2);
	size_t len = 4 << 20;
	uint8_t *data = random_bytes(len, 6);
	char path[] = "/tmp/test_match.XXXXXX";
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	for (uint32_t i = 0; i < N; i++)
		sum1[i] = old_unmix32(((i >> 5) + 1) << 19 | (i & 31));
	for (int in_place = 0; in_place < 2; in_place++) {
		double t0 = cpu_seconds();
		struct match_index m;
		assert_true(match_index_build(&m, &h, sum1, sum2));
		assert_int_equal(m.dropped, 0);
		size_t literal = 0;
		struct match_out mo = {.ctx = &literal, .emit_literal = count_literal,
				       .emit_block = no_block, .feed = feed_nothing,
				       .strong = strong_sum, .no_block_data = true};
		assert_true(match_send_file(&m, fd, (int64_t)len, in_place, &mo));
		match_index_free(&m);
		double spent = cpu_seconds() - t0;
		assert_int_equal(literal, len);
		if (spent >= 1.0)
			fail_msg("build and search took %.2f s of CPU", spent);
	}
	close(fd);
	free(data);
	free(sum1);
	free(sum2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pages_changed_in_place),
		cmocka_unit_test(test_shifted_data),
		cmocka_unit_test(test_edges),
		cmocka_unit_test(test_summed_ahead_in_place),
		cmocka_unit_test(test_summed_ahead_shifted),
		cmocka_unit_test(test_summed_ahead_length_changes),
		cmocka_unit_test(test_summed_ahead_page_rewritten),
		cmocka_unit_test(test_blockwise_sum),
		cmocka_unit_test(test_short_strong_sums),
		cmocka_unit_test(test_crafted_sums_do_not_flood),
		cmocka_unit_test(test_literal_short_read),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
