/*
 * proto/token.c: the token streams of file data, plain and compressed with
 * zlib, zlibx, zstd and lz4 (docs/protocol.md 9.6 and 10).
 *
 * Round trips through our encoder and decoder (literal only, blocks only,
 * mixed, blocks over 64 KiB for protocols 30 and 31, runs, many files in
 * one zstd session, the adaptive rule, suffix skipping); decoding of token
 * streams captured from real rsync 3.5.0; and bad input, which must end in
 * TOKEN_ERROR with RERR_STREAMIO and never crash.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>
#include <zlib.h>

#include "proto/token.h"
#include "proto/zadapt.h"

static const int algs[] = {CPRES_NONE, CPRES_ZLIB, CPRES_ZLIBX, CPRES_ZSTD, CPRES_LZ4};
#define NALGS (sizeof algs / sizeof algs[0])

/* ------------------------------------------------------------ helpers */

struct buf {
	uint8_t *p;
	size_t len, cap;
};

static void buf_add(struct buf *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		assert_non_null(b->p);
	}
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
}

static void buf_addf(struct buf *b, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	buf_add(b, tmp, (size_t)n);
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 11);
}

static void random_bytes(struct buf *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t c = (uint8_t)rnd();
		buf_add(b, &c, 1);
	}
}

/* Compressible, but not trivially: numbered lines of a few words. */
static void text_bytes(struct buf *b, size_t n, unsigned seed)
{
	static const char *words[] = {"alpha", "beta", "gamma", "delta", "token", "stream",
				      "ferry", "rsync", "block", "window"};
	size_t start = b->len;
	unsigned i = seed;

	while (b->len - start < n) {
		buf_addf(b, "%u %s %s %s\n", i, words[i % 10], words[(i * 7) % 10],
			 words[(i * 3 + 1) % 10]);
		i++;
	}
	b->len = start + n;
}

/* A memory file: what an encoder wrote, or bytes to decode. */
struct mem {
	int fd;
	struct wire_error err;
	struct wire_out out;
	struct wire_in in;
	bool in_open;
};

static void mem_open(struct mem *m)
{
	m->fd = memfd_create("token", 0);
	assert_true(m->fd >= 0);
	wire_error_init(&m->err);
	wire_out_init(&m->out, m->fd, &m->err);
	m->in_open = false;
}

/* Switch from writing to reading from the start. */
static void mem_rewind(struct mem *m)
{
	assert_true(wire_flush(&m->out));
	assert_int_equal(lseek(m->fd, 0, SEEK_SET), 0);
	wire_in_init(&m->in, m->fd, &m->err);
	m->in_open = true;
}

static void mem_from(struct mem *m, const uint8_t *p, size_t n)
{
	mem_open(m);
	if (n)
		assert_int_equal(write(m->fd, p, n), (ssize_t)n);
	mem_rewind(m);
}

static void mem_close(struct mem *m)
{
	if (m->in_open)
		wire_in_free(&m->in);
	wire_out_free(&m->out);
	close(m->fd);
}

static size_t mem_size(struct mem *m)
{
	assert_true(wire_flush(&m->out));
	return (size_t)lseek(m->fd, 0, SEEK_END);
}

/* All of a memory file's bytes. */
static void mem_bytes(struct mem *m, struct buf *b)
{
	size_t n = mem_size(m);

	free(b->p);
	b->p = malloc(n + 1);
	assert_non_null(b->p);
	b->cap = n + 1;
	assert_int_equal(pread(m->fd, b->p, n, 0), (ssize_t)n);
	b->len = n;
}

/* A basis: count blocks of blength bytes, the last one remainder bytes. */
struct basis {
	const uint8_t *p;
	int32_t count, blength, remainder;
};

static size_t block_len(const struct basis *bs, int32_t b)
{
	return b == bs->count - 1 && bs->remainder ? (size_t)bs->remainder : (size_t)bs->blength;
}

static const uint8_t *block_at(const struct basis *bs, int32_t b)
{
	return bs->p + (size_t)b * (size_t)bs->blength;
}

/* One operation of a file's script: literal bytes, or a block (n == 0). */
struct op {
	const uint8_t *p;
	size_t n;
	int32_t block;
};

static void encode_file(struct token_enc *e, struct mem *m, const struct basis *bs,
			const struct op *ops, size_t nops, bool minimal, struct buf *expect)
{
	assert_true(token_enc_begin(e, &m->out, minimal));
	for (size_t i = 0; i < nops; i++) {
		if (ops[i].n) {
			/* as match.c does: literal pieces of at most 32 KiB */
			for (size_t off = 0; off < ops[i].n; off += 32768) {
				size_t k = ops[i].n - off < 32768 ? ops[i].n - off : 32768;
				assert_true(token_enc_literal(e, &m->out, ops[i].p + off, k));
			}
			if (expect)
				buf_add(expect, ops[i].p, ops[i].n);
		} else {
			int32_t b = ops[i].block;
			assert_true(token_enc_block(e, &m->out, b, block_at(bs, b), block_len(bs, b)));
			if (expect)
				buf_add(expect, block_at(bs, b), block_len(bs, b));
		}
	}
	assert_true(token_enc_end(e, &m->out));
}

/* Decode one file; returns TOKEN_END or TOKEN_ERROR. The output goes to
 * *got; blocks are appended to *blocks when given. */
static int decode_file(struct token_dec *d, struct mem *m, const struct basis *bs, struct buf *got,
		       struct buf *blocks)
{
	token_dec_begin(d, bs ? bs->count : 0);
	for (long guard = 0; guard < 100000000; guard++) {
		const uint8_t *p;
		size_t n;
		int32_t b;
		int k = token_dec_next(d, &m->in, &p, &n, &b);
		if (k == TOKEN_END || k == TOKEN_ERROR)
			return k;
		if (k == TOKEN_DATA) {
			assert_true(n > 0);
			buf_add(got, p, n);
			continue;
		}
		assert_int_equal(k, TOKEN_BLOCK);
		if (blocks)
			buf_add(blocks, &b, sizeof b);
		if (!bs || b < 0 || b >= bs->count)
			return 100; /* a block the test did not expect */
		buf_add(got, block_at(bs, b), block_len(bs, b));
		if (!token_dec_see(d, block_at(bs, b), block_len(bs, b), 0, block_len(bs, b)))
			return TOKEN_ERROR;
	}
	fail_msg("decoder did not terminate");
	return TOKEN_ERROR;
}

/* Encode files through one encoder, decode them through one decoder,
 * compare. Returns the encoded size. */
struct file_spec {
	const struct basis *bs;
	const struct op *ops;
	size_t nops;
	bool minimal;
};

/* roundtrip() with the encoder's clock on (the adaptive rule's speed
 * half: writes to memory never wait, so compressing looks like the
 * bottleneck), and the setting changes it made. */
static bool timed_encoder;
static int last_changes;

/* The encoder's clock in timed runs: every reading is 1 ms after the one
 * before, so each piece of literal data seems to take 1 ms to compress,
 * a compressor slower than the adaptive rule's "never the bottleneck"
 * speed on any machine. The real clock made the outcome depend on this
 * machine's speed and load (lz4 on text can outrun that bound). */
static uint64_t slow_clock(void *ctx)
{
	uint64_t *now = ctx;

	*now += 1000000;
	return *now;
}

static size_t roundtrip(int alg, int protocol, bool adaptive, int level,
			const struct file_spec *files, size_t nfiles)
{
	struct mem m;
	struct buf expect[64] = {{0}};
	struct buf got = {0};

	assert_true(nfiles <= 64);
	mem_open(&m);
	int lvl = level;
	int a = alg;
	lvl = token_resolve_level(&a, level);
	assert_int_equal(a, alg);
	struct token_enc *e = token_enc_new(alg, lvl, adaptive, protocol, &m.err);
	assert_non_null(e);
	token_enc_set_timing(e, timed_encoder);
	uint64_t fake_now = 0;
	if (timed_encoder)
		token_enc_set_clock(e, slow_clock, &fake_now);
	for (size_t f = 0; f < nfiles; f++)
		encode_file(e, &m, files[f].bs, files[f].ops, files[f].nops, files[f].minimal,
			    &expect[f]);
	last_changes = token_enc_setting_changes(e);
	token_enc_free(e);
	size_t size = mem_size(&m);
	mem_rewind(&m);
	struct token_dec *d = token_dec_new(alg, protocol, &m.err);
	assert_non_null(d);
	for (size_t f = 0; f < nfiles; f++) {
		got.len = 0;
		int k = decode_file(d, &m, files[f].bs, &got, NULL);
		if (k != TOKEN_END)
			fail_msg("alg %d file %zu: decode returned %d (%s)", alg, f, k, m.err.msg);
		assert_int_equal(got.len, expect[f].len);
		if (got.len)
			assert_memory_equal(got.p, expect[f].p, got.len);
		free(expect[f].p);
	}
	/* nothing left over */
	uint8_t extra;
	assert_false(wire_read(&m.in, &extra, 1));
	token_dec_free(d);
	free(got.p);
	mem_close(&m);
	return size;
}

static size_t roundtrip1(int alg, const struct basis *bs, const struct op *ops, size_t nops)
{
	struct file_spec f = {bs, ops, nops, false};
	return roundtrip(alg, 31, true, TOKEN_LEVEL_DEFAULT, &f, 1);
}

/* ------------------------------------------------------------- tests */

static void test_names_and_levels(void **state)
{
	(void)state;
	assert_int_equal(token_alg_by_name("zstd"), CPRES_ZSTD);
	assert_int_equal(token_alg_by_name("LZ4"), CPRES_LZ4);
	assert_int_equal(token_alg_by_name("zlibx"), CPRES_ZLIBX);
	assert_int_equal(token_alg_by_name("zlib"), CPRES_ZLIB);
	assert_int_equal(token_alg_by_name("none"), CPRES_NONE);
	assert_int_equal(token_alg_by_name("gzip"), -2);
	assert_string_equal(token_alg_name(CPRES_ZLIBX), "zlibx");
	assert_string_equal(TOKEN_SERVER_LIST, "zstd lz4 zlibx zlib none");

	int a = CPRES_ZLIB;
	assert_int_equal(token_resolve_level(&a, TOKEN_LEVEL_DEFAULT), 6);
	assert_int_equal(token_resolve_level(&a, -1), 6);
	assert_int_equal(token_resolve_level(&a, 12), 9);
	assert_int_equal(token_resolve_level(&a, 1), 1);
	assert_int_equal(a, CPRES_ZLIB);
	/* zlib's level 0 turns compression off, on both sides, as in rsync */
	token_resolve_level(&a, 0);
	assert_int_equal(a, CPRES_NONE);
	a = CPRES_ZLIBX;
	token_resolve_level(&a, 0);
	assert_int_equal(a, CPRES_NONE);
	a = CPRES_ZSTD;
	assert_int_equal(token_resolve_level(&a, TOKEN_LEVEL_DEFAULT), 3);
	assert_int_equal(token_resolve_level(&a, 0), 3);
	assert_int_equal(token_resolve_level(&a, -5), -5);
	assert_int_equal(token_resolve_level(&a, 1000), 22);
	assert_int_equal(a, CPRES_ZSTD);
	a = CPRES_LZ4;
	assert_int_equal(token_resolve_level(&a, 9), 0);
	assert_int_equal(a, CPRES_LZ4);
}

static void test_skip_lists(void **state)
{
	(void)state;
	/* the default list: rsync's media suffixes */
	struct token_skip *k = token_skip_new(NULL, NULL);
	assert_non_null(k);
	assert_true(token_skip_match(k, "a.gz"));
	assert_true(token_skip_match(k, "dir/photo.JPG"));
	assert_true(token_skip_match(k, "x.tar.gz"));
	assert_true(token_skip_match(k, "song.mp3"));
	assert_false(token_skip_match(k, "notes.txt"));
	assert_false(token_skip_match(k, ".gz"));        /* a dot file has no suffix */
	assert_false(token_skip_match(k, "gz"));
	assert_false(token_skip_match(k, "a.gz/file"));
	assert_false(token_skip_match(k, "a.gzip"));
	token_skip_free(k);

	/* --skip-compress replaces the list on a client */
	k = token_skip_new("bin/mp[34]/[/", NULL);
	assert_true(token_skip_match(k, "x.bin"));
	assert_true(token_skip_match(k, "x.BIN"));
	assert_true(token_skip_match(k, "x.mp3"));
	assert_true(token_skip_match(k, "x.mp4"));
	assert_false(token_skip_match(k, "x.mp5"));
	assert_true(token_skip_match(k, "x.["));
	assert_false(token_skip_match(k, "x.gz"));
	token_skip_free(k);
	k = token_skip_new("", NULL);
	assert_false(token_skip_match(k, "x.gz"));
	token_skip_free(k);

	/* a daemon: its "dont compress" patterns plus --skip-compress */
	k = token_skip_new("bin", "*.jpg core.* *.t?t");
	assert_true(token_skip_match(k, "a/b.jpg"));
	assert_true(token_skip_match(k, "core.1234"));
	assert_true(token_skip_match(k, "CORE.1"));
	assert_true(token_skip_match(k, "file.txt"));
	assert_true(token_skip_match(k, "file.bin"));
	assert_false(token_skip_match(k, "file.gz"));
	token_skip_free(k);
	k = token_skip_new(NULL, "*");
	assert_true(token_skip_match(k, "anything"));
	token_skip_free(k);
	assert_false(token_skip_match(NULL, "a.gz"));
}

/* Uncompressed: the bytes of rsync's simple_send_token. */
static void test_plain_stream_bytes(void **state)
{
	static const uint8_t want[] = {5, 0, 0, 0, 'h', 'e', 'l', 'l', 'o', 0xff, 0xff, 0xff, 0xff,
				       0xfd, 0xff, 0xff, 0xff, 0, 0, 0, 0};
	const uint8_t basis[12] = "abcdefghijkl";
	struct mem m;
	struct buf b = {0};
	(void)state;

	mem_open(&m);
	struct token_enc *e = token_enc_new(CPRES_NONE, 0, true, 31, &m.err);
	assert_true(token_enc_begin(e, &m.out, false));
	assert_true(token_enc_literal(e, &m.out, (const uint8_t *)"hello", 5));
	assert_true(token_enc_block(e, &m.out, 0, basis, 4));
	assert_true(token_enc_block(e, &m.out, 2, basis + 8, 4));
	assert_true(token_enc_end(e, &m.out));
	token_enc_free(e);
	mem_bytes(&m, &b);
	assert_int_equal(b.len, sizeof want);
	assert_memory_equal(b.p, want, sizeof want);
	free(b.p);
	mem_close(&m);
}

/* The framing of a compressed stream: runs, relative and long tokens. */
static void test_token_framing(void **state)
{
	uint8_t basis[200 * 4];
	struct basis bs = {basis, 200, 4, 0};
	struct mem m;
	struct buf b = {0};
	(void)state;

	memset(basis, 'x', sizeof basis);
	mem_open(&m);
	struct token_enc *e = token_enc_new(CPRES_LZ4, 0, false, 31, &m.err);
	assert_true(token_enc_begin(e, &m.out, false));
	static const int32_t seq[] = {0, 1, 2, 3, 10, 100, 101, 50, 50};
	for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++)
		assert_true(token_enc_block(e, &m.out, seq[i], block_at(&bs, seq[i]), 4));
	assert_true(token_enc_literal(e, &m.out, (const uint8_t *)"AAAA", 4));
	assert_true(token_enc_block(e, &m.out, 51, block_at(&bs, 51), 4));
	assert_true(token_enc_end(e, &m.out));
	token_enc_free(e);
	mem_bytes(&m, &b);
	static const uint8_t want[] = {
		0xC0, 3, 0,                   /* run 0..3 (last 0 + 0) */
		0x87,                         /* 10 = 3 + 7 */
		0x21, 100, 0, 0, 0, 0x01, 0x00, /* 100 is 90 past 10: long, run of 2 */
		0x20, 50, 0, 0, 0,            /* 50 is before 101: long */
		0x80,                         /* 50 again: 50 + 0 */
		0x40, 5, 0x40, 'A', 'A', 'A', 'A', /* lz4 block of 4 literals */
		0x81,                         /* 51 = 50 + 1 */
		0x00,
	};
	assert_int_equal(b.len, sizeof want);
	assert_memory_equal(b.p, want, sizeof want);
	free(b.p);
	mem_close(&m);
}

static void test_literal_only(void **state)
{
	struct basis none = {NULL, 0, 0, 0};
	struct buf text = {0}, rnd_data = {0};
	(void)state;

	text_bytes(&text, 300000, 1);
	random_bytes(&rnd_data, 300000);
	static const size_t sizes[] = {0, 1, 100, 32768, 40000, 300000};
	for (size_t a = 0; a < NALGS; a++) {
		for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
			struct op t = {text.p, sizes[i], 0}, r = {rnd_data.p, sizes[i], 0};
			size_t st = roundtrip1(algs[a], &none, &t, sizes[i] ? 1 : 0);
			size_t sr = roundtrip1(algs[a], &none, &r, sizes[i] ? 1 : 0);
			if (sizes[i] >= 40000 && algs[a] != CPRES_NONE) {
				assert_true(st < sizes[i] * 7 / 10);
				/* random data never grows much */
				assert_true(sr < sizes[i] + sizes[i] / 50 + 64);
			}
		}
	}
	free(text.p);
	free(rnd_data.p);
}

static void test_blocks_only(void **state)
{
	struct buf data = {0};
	(void)state;

	random_bytes(&data, 100 * 64 + 10);
	struct basis bs = {data.p, 101, 64, 10};
	static const int32_t seq[] = {0, 1,  2,  3,  4,  5,  6,   7,  8, 9, 20, 5, 70, 71,
				      72, 100, 0, 63, 64, 127 - 27, 99, 100, 1, 1, 1, 65};
	struct op ops[sizeof seq / sizeof seq[0]];
	for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++)
		ops[i] = (struct op){NULL, 0, seq[i]};
	for (size_t a = 0; a < NALGS; a++)
		roundtrip1(algs[a], &bs, ops, sizeof ops / sizeof ops[0]);

	/* a run longer than one run token can hold (65536 blocks) */
	struct buf tiny = {0};
	random_bytes(&tiny, 70000 * 2);
	struct basis many = {tiny.p, 70000, 2, 0};
	struct op *all = calloc(70000, sizeof *all);
	assert_non_null(all);
	for (int32_t i = 0; i < 70000; i++)
		all[i] = (struct op){NULL, 0, i};
	for (size_t a = 0; a < NALGS; a++) {
		size_t n = roundtrip1(algs[a], &many, all, 70000);
		if (algs[a] != CPRES_NONE)
			assert_true(n < 20); /* two runs and END_FLAG */
	}
	free(all);
	free(tiny.p);
	free(data.p);
}

/* Literal data that repeats matched blocks: zlib's history makes it cheap. */
static void test_mixed(void **state)
{
	struct buf data = {0}, lit = {0}, noise = {0}, text2 = {0};
	(void)state;

	text_bytes(&data, 50 * 700, 7);
	struct basis bs = {data.p, 50, 700, 0};
	/* blocks 5..9 again, with one byte in every 100 changed */
	buf_add(&lit, data.p + 5 * 700, 5 * 700);
	for (size_t i = 50; i < lit.len; i += 100)
		lit.p[i] ^= 0x20;
	random_bytes(&noise, 100);
	text_bytes(&text2, 5000, 99);
	struct op ops[] = {
		{NULL, 0, 0}, {NULL, 0, 1}, {NULL, 0, 2}, {NULL, 0, 3}, {NULL, 0, 4},
		{NULL, 0, 5}, {NULL, 0, 6}, {NULL, 0, 7}, {NULL, 0, 8}, {NULL, 0, 9},
		{lit.p, lit.len, 0},
		{NULL, 0, 11}, {NULL, 0, 12}, {NULL, 0, 13},
		{noise.p, noise.len, 0},
		{NULL, 0, 49},
		{text2.p, text2.len, 0},
		{noise.p, 10, 0},
		{NULL, 0, 30}, {NULL, 0, 31},
	};
	size_t sz[NALGS];
	for (size_t a = 0; a < NALGS; a++)
		sz[a] = roundtrip1(algs[a], &bs, ops, sizeof ops / sizeof ops[0]);
	/* zlib (index 1) beats zlibx (index 2) thanks to the matched data */
	assert_true(sz[1] + 500 < sz[2]);
	free(data.p);
	free(lit.p);
	free(noise.p);
	free(text2.p);
}

/* Blocks over 64 KiB: protocol <= 30 feeds the history from the block's
 * start for every 0xFFFF-byte piece; both sides must agree. */
static size_t encode_big(int protocol, struct buf *out, struct buf *expect, struct basis *bs)
{
	struct mem m;
	mem_open(&m);
	struct token_enc *e = token_enc_new(CPRES_ZLIB, 6, false, protocol, &m.err);
	assert_non_null(e);
	/* literal copies of block 0's early and late parts */
	struct op ops[] = {
		{NULL, 0, 0},
		{bs->p + 10000, 2000, 0},
		{bs->p + 90000, 2000, 0},
		{NULL, 0, 1},
		{bs->p + 100000 + 95000, 3000, 0},
		{NULL, 0, 2},
	};
	expect->len = 0;
	encode_file(e, &m, bs, ops, sizeof ops / sizeof ops[0], false, expect);
	token_enc_free(e);
	mem_bytes(&m, out);
	mem_close(&m);
	return out->len;
}

static int decode_bytes(int alg, int protocol, const struct buf *in, const struct basis *bs,
			struct buf *got)
{
	struct mem m;
	mem_from(&m, in->p, in->len);
	struct token_dec *d = token_dec_new(alg, protocol, &m.err);
	got->len = 0;
	int k = decode_file(d, &m, bs, got, NULL);
	token_dec_free(d);
	mem_close(&m);
	return k;
}

static void test_big_blocks(void **state)
{
	struct buf data = {0}, enc = {0}, expect = {0}, got = {0};
	(void)state;

	text_bytes(&data, 250000, 3);
	struct basis bs = {data.p, 3, 100000, 50000};
	for (int p = 30; p <= 31; p++) {
		encode_big(p, &enc, &expect, &bs);
		assert_int_equal(decode_bytes(CPRES_ZLIB, p, &enc, &bs, &got), TOKEN_END);
		assert_int_equal(got.len, expect.len);
		assert_memory_equal(got.p, expect.p, got.len);
		/* the other protocol's history differs: wrong output or an error */
		int k = decode_bytes(CPRES_ZLIB, p == 30 ? 31 : 30, &enc, &bs, &got);
		assert_true(k == TOKEN_ERROR || got.len != expect.len ||
			    memcmp(got.p, expect.p, got.len) != 0);
	}
	/* the generic round trip too, every algorithm */
	struct op ops[] = {{NULL, 0, 0}, {data.p + 5, 70000, 0}, {NULL, 0, 2}, {NULL, 0, 1}};
	for (size_t a = 0; a < NALGS; a++)
		for (int p = 30; p <= 31; p++) {
			struct file_spec f = {&bs, ops, 4, false};
			roundtrip(algs[a], p, true, TOKEN_LEVEL_DEFAULT, &f, 1);
		}
	free(data.p);
	free(enc.p);
	free(expect.p);
	free(got.p);
}

/* Many files through one encoder and one decoder: zstd keeps one context
 * for the session; every algorithm must start each file cleanly. */
static void test_many_files_one_session(void **state)
{
	struct buf text = {0}, noise = {0}, bdata = {0};
	struct file_spec files[60];
	struct op ops[60][4];
	(void)state;

	text_bytes(&text, 200000, 11);
	random_bytes(&noise, 200000);
	text_bytes(&bdata, 20 * 500, 5);
	struct basis bs = {bdata.p, 20, 500, 0};
	struct basis none = {NULL, 0, 0, 0};
	for (size_t f = 0; f < 60; f++) {
		size_t n = 0;
		switch (f % 5) {
		case 0: /* small text */
			ops[f][n++] = (struct op){text.p + f * 100, 1000 + f, 0};
			files[f] = (struct file_spec){&none, ops[f], n, false};
			break;
		case 1: /* incompressible, past the probe */
			ops[f][n++] = (struct op){noise.p + f, 100000, 0};
			files[f] = (struct file_spec){&none, ops[f], n, false};
			break;
		case 2: /* a delta */
			ops[f][n++] = (struct op){NULL, 0, (int32_t)(f % 20)};
			ops[f][n++] = (struct op){text.p + 5000, 3000, 0};
			ops[f][n++] = (struct op){NULL, 0, 19};
			files[f] = (struct file_spec){&bs, ops[f], n, false};
			break;
		case 3: /* a skipped suffix */
			ops[f][n++] = (struct op){text.p, 70000, 0};
			files[f] = (struct file_spec){&none, ops[f], n, true};
			break;
		default: /* empty */
			files[f] = (struct file_spec){&none, ops[f], 0, false};
			break;
		}
	}
	for (size_t a = 0; a < NALGS; a++) {
		roundtrip(algs[a], 31, true, TOKEN_LEVEL_DEFAULT, files, 60);
		roundtrip(algs[a], 31, false, TOKEN_LEVEL_DEFAULT, files, 60);
		roundtrip(algs[a], 29, false, 1, files, 60);
	}
	free(text.p);
	free(noise.p);
	free(bdata.p);
}

/* ferry's rule: incompressible data goes out with no compression effort
 * after the probe, unless a level was given. */
static void test_adaptive(void **state)
{
	struct buf noise = {0}, text = {0};
	struct basis none = {NULL, 0, 0, 0};
	(void)state;

	random_bytes(&noise, 1000000);
	text_bytes(&text, 1000000, 2);
	for (size_t a = 1; a < NALGS; a++) {
		for (int adaptive = 0; adaptive <= 1; adaptive++) {
			for (int which = 0; which < 2; which++) {
				struct buf *src = which ? &text : &noise;
				struct mem m;
				mem_open(&m);
				int alg = algs[a];
				int lvl = token_resolve_level(&alg, TOKEN_LEVEL_DEFAULT);
				struct token_enc *e = token_enc_new(alg, lvl, adaptive, 31, &m.err);
				struct op op = {src->p, src->len, 0};
				encode_file(e, &m, &none, &op, 1, false, NULL);
				bool minimal = token_enc_minimal(e);
				token_enc_free(e);
				size_t size = mem_size(&m);
				mem_close(&m);
				assert_int_equal(minimal, adaptive && !which);
				if (!which)
					assert_true(size < src->len + src->len / 100 + 64);
				else
					assert_true(size < src->len * 7 / 10);
			}
		}
		/* incompressible data, then blocks and compressible literal data
		 * in the same file: the switch must leave a valid stream */
		struct buf bdata = {0};
		text_bytes(&bdata, 10 * 1000, 8);
		struct basis bs = {bdata.p, 10, 1000, 0};
		struct op ops[] = {
			{noise.p, 100000, 0}, {NULL, 0, 3}, {NULL, 0, 4}, {text.p, 50000, 0},
			{NULL, 0, 0}, {noise.p, 70000, 0}, {bdata.p + 100, 900, 0}, {NULL, 0, 9},
		};
		struct file_spec f[3] = {{&bs, ops, 8, false}, {&none, ops + 3, 1, false},
					 {&bs, ops, 8, true}};
		roundtrip(algs[a], 31, true, TOKEN_LEVEL_DEFAULT, f, 3);
		roundtrip(algs[a], 30, true, TOKEN_LEVEL_DEFAULT, f, 3);
		free(bdata.p);
		(void)none;
	}
	free(noise.p);
	free(text.p);
}

/* The speed half of the rule changes the level in the middle of files
 * (zlib through deflateParams after a sync flush, zstd between frames, lz4
 * between blocks), around matched blocks and across files; every stream
 * must still decode. Then the data half in one file: text, noise, text. */
#define NSPEED 16
static void test_level_changes_midstream(void **state)
{
	struct buf text = {0}, noise = {0}, bdata = {0};
	(void)state;

	text_bytes(&text, 3 * ZADAPT_WINDOW, 3);
	random_bytes(&noise, 2 * ZADAPT_WINDOW);
	text_bytes(&bdata, 40 * 2000, 9);
	struct basis bs = {bdata.p, 40, 2000, 0};
	struct basis none = {NULL, 0, 0, 0};
	struct op ops[] = {
		{text.p, ZADAPT_WINDOW + 5000, 0}, {NULL, 0, 3}, {NULL, 0, 4},
		{text.p + 7, ZADAPT_WINDOW, 0}, {NULL, 0, 39}, {text.p + 99, ZADAPT_WINDOW / 2, 0},
		{NULL, 0, 0}, {text.p + 12345, ZADAPT_WINDOW + 77, 0}, {NULL, 0, 17},
	};
	struct op mixed[] = {
		{text.p, 300000, 0}, {noise.p, 2 * ZADAPT_WINDOW, 0}, {NULL, 0, 5},
		{text.p + 1000, 2 * ZADAPT_WINDOW, 0}, {NULL, 0, 6},
	};
	/* the speed is judged over at least ZADAPT_SPEED_MAX_IN bytes when
	 * the output is small: 8 files of about 3.5 MiB, 8 of 1 MiB */
	struct file_spec f[NSPEED + 1];
	for (size_t i = 0; i < NSPEED; i++)
		f[i] = i % 2 ? (struct file_spec){&none, ops + 3, 1, false}
			     : (struct file_spec){&bs, ops, 9, false};
	f[NSPEED] = (struct file_spec){&bs, mixed, 5, false};
	for (size_t a = 1; a < NALGS; a++) {
		timed_encoder = true;
		roundtrip(algs[a], 31, true, TOKEN_LEVEL_DEFAULT, f, NSPEED);
		int speed_changes = last_changes;
		roundtrip(algs[a], 30, true, TOKEN_LEVEL_DEFAULT, f, NSPEED);
		/* --compress-level: never a change */
		roundtrip(algs[a], 31, false, TOKEN_LEVEL_DEFAULT, f, NSPEED);
		assert_int_equal(last_changes, 0);
		timed_encoder = false;
		roundtrip(algs[a], 31, true, TOKEN_LEVEL_DEFAULT, f + NSPEED, 1);
		int data_changes = last_changes;
		roundtrip(algs[a], 30, true, TOKEN_LEVEL_DEFAULT, f + NSPEED, 1);
		print_message("alg %d: %d speed changes, %d data changes\n", algs[a], speed_changes,
			      data_changes);
		assert_true(speed_changes >= 1);
		/* noise stored, then (zlib: not after a block skipped the
		 * history) text compressed again */
		assert_true(data_changes >= 2);
	}
	free(text.p);
	free(noise.p);
	free(bdata.p);
}

/* ------------------------------------------------ streams of real rsync */

/*
 * Token streams captured from real rsync 3.5.0 (the daemon is the sender),
 * one per algorithm. How: a daemon module holding a.txt and b.txt as made by
 * make_capture_files() below; a receiver directory holding the basis a.txt;
 * a logging relay (docs/protocol.md 14.3) between them;
 *   rsync -a -I --no-W -B 700 --compress-choice=X rsync://127.0.0.1:RELAY/m/ dst/
 * Then the server-to-client bytes of the relay log were demultiplexed
 * (MSG_DATA frames after the checksum seed), the sum head of a.txt found
 * (count 16, blength 700, s2length 2, remainder 300) and its token stream
 * cut from there to its END_FLAG (cap_X_a); b.txt has no basis (sum head of
 * zeros) and follows in the same session (cap_X_b: for zstd it continues
 * the session's single stream, without a frame header).
 *
 * cap_zlib_big_p30/p31: the same with big.txt from make_big_files()
 * (-B 66000, --protocol=30 resp. 31, --compress-choice=zlib): block 0
 * matches and the literal data after it was deflated against the history
 * left by that 66000-byte block, which protocol 30 builds from two pieces
 * taken from the block's start ([0, 65535) and [0, 465)).
 */
static const uint8_t cap_zstd_a[206] = {
	0xc0, 0x01, 0x00, 0x40, 0x7c, 0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x58, 0x9c,
	0x03, 0x00, 0x54, 0x04, 0x66, 0x6f, 0x78, 0x0a, 0x62, 0x61, 0x73, 0x69,
	0x73, 0x20, 0x6c, 0x69, 0x6e, 0x65, 0x20, 0x30, 0x30, 0x33, 0x39, 0x20,
	0x74, 0x68, 0x65, 0x20, 0x71, 0x75, 0x69, 0x63, 0x6b, 0x20, 0x62, 0x72,
	0x6f, 0x77, 0x6e, 0x20, 0x34, 0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36,
	0x37, 0x38, 0x39, 0x4e, 0x45, 0x57, 0x20, 0x35, 0x30, 0x20, 0x7a, 0x7a,
	0x7a, 0x31, 0x32, 0x35, 0x33, 0x35, 0x34, 0x35, 0x35, 0x35, 0x36, 0x35,
	0x37, 0x14, 0x00, 0x60, 0xc4, 0xc0, 0xc1, 0xc0, 0xc1, 0xc0, 0xc1, 0xe0,
	0x20, 0xec, 0xba, 0x00, 0xf7, 0xc0, 0x66, 0x2e, 0x43, 0x83, 0x8f, 0x01,
	0xa4, 0x00, 0xe4, 0x01, 0x24, 0x03, 0x48, 0x01, 0xc8, 0x03, 0x48, 0x06,
	0x90, 0x02, 0x90, 0x17, 0x20, 0x31, 0xcf, 0xac, 0x9e, 0xc2, 0x0b, 0x00,
	0x40, 0x47, 0x24, 0x02, 0x00, 0x74, 0x02, 0x32, 0x39, 0x32, 0x32, 0x39,
	0x33, 0x32, 0x39, 0x34, 0x32, 0x39, 0x35, 0x32, 0x39, 0x36, 0x32, 0x39,
	0x37, 0x32, 0x39, 0x38, 0x32, 0x39, 0x39, 0x74, 0x61, 0x69, 0x6c, 0x20,
	0x6f, 0x66, 0x6e, 0x65, 0x77, 0x20, 0x66, 0x69, 0x6c, 0x65, 0x0b, 0x00,
	0xe0, 0x34, 0x9c, 0xb2, 0x10, 0x0c, 0xf8, 0x06, 0x18, 0x07, 0x18, 0x07,
	0x18, 0x07, 0x18, 0x07, 0x18, 0x07, 0x18, 0x07, 0x18, 0x07, 0x0b, 0x28,
	0x80, 0x00,
};

static const uint8_t cap_zstd_b[170] = {
	0x40, 0xa7, 0x24, 0x05, 0x00, 0x52, 0x48, 0x17, 0x15, 0xb0, 0x25, 0x6d,
	0xad, 0x31, 0x4b, 0x2c, 0x83, 0x15, 0xb1, 0x68, 0xa8, 0x29, 0xbb, 0xbb,
	0x77, 0x26, 0x9c, 0x4d, 0x32, 0x0c, 0xbb, 0xbb, 0xbb, 0xbb, 0xbb, 0xaa,
	0xaa, 0xaa, 0xaa, 0xaa, 0x99, 0x99, 0x99, 0x99, 0x99, 0x88, 0x88, 0x88,
	0x88, 0x88, 0x77, 0x77, 0x77, 0x77, 0x77, 0x66, 0x66, 0x66, 0x66, 0x66,
	0xff, 0xff, 0xff, 0xbf, 0x6d, 0xdb, 0xb6, 0x5d, 0x55, 0x55, 0x55, 0x55,
	0xab, 0x89, 0x67, 0x77, 0x1d, 0xa4, 0x04, 0xe8, 0x20, 0x0e, 0x19, 0xa6,
	0x30, 0x03, 0x95, 0xc2, 0x21, 0x10, 0x54, 0x88, 0x61, 0x0a, 0x02, 0xd0,
	0x30, 0x30, 0x02, 0x72, 0x02, 0x65, 0xa8, 0x21, 0xf8, 0x8d, 0xfd, 0x37,
	0xd0, 0x1b, 0xd5, 0x01, 0x12, 0x48, 0x10, 0x78, 0x04, 0x81, 0x7f, 0x05,
	0x81, 0x87, 0xf1, 0x07, 0x00, 0x00, 0x01, 0x20, 0x40, 0x40, 0x20, 0x01,
	0x01, 0x03, 0x02, 0x12, 0x08, 0x48, 0xd0, 0x69, 0x98, 0x6e, 0xa5, 0x41,
	0xba, 0x46, 0x43, 0x74, 0x85, 0x06, 0xe8, 0x6e, 0x7d, 0xa6, 0x67, 0xa7,
	0x37, 0xa9, 0x9b, 0xf4, 0xce, 0x88, 0x1b, 0x23, 0xd3, 0x2a, 0x03, 0x88,
	0x1a, 0x00,
};

static const uint8_t cap_lz4_a[260] = {
	0xc0, 0x01, 0x00, 0x40, 0x91, 0xfd, 0x15, 0x66, 0x6f, 0x78, 0x0a, 0x62,
	0x61, 0x73, 0x69, 0x73, 0x20, 0x6c, 0x69, 0x6e, 0x65, 0x20, 0x30, 0x30,
	0x33, 0x39, 0x20, 0x74, 0x68, 0x65, 0x20, 0x71, 0x75, 0x69, 0x63, 0x6b,
	0x20, 0x62, 0x72, 0x6f, 0x77, 0x6e, 0x20, 0x24, 0x00, 0x2f, 0x34, 0x30,
	0x24, 0x00, 0x10, 0x1f, 0x31, 0x24, 0x00, 0x10, 0x1f, 0x32, 0x24, 0x00,
	0x10, 0x1f, 0x33, 0x24, 0x00, 0x10, 0x1f, 0x34, 0x24, 0x00, 0x10, 0x1f,
	0x35, 0x24, 0x00, 0x10, 0x1f, 0x36, 0x24, 0x00, 0x10, 0x1f, 0x37, 0x24,
	0x00, 0x10, 0x1f, 0x38, 0x24, 0x00, 0x10, 0x0f, 0x68, 0x01, 0x03, 0xa2,
	0x4e, 0x45, 0x57, 0x20, 0x35, 0x30, 0x20, 0x7a, 0x7a, 0x7a, 0x0b, 0x00,
	0x16, 0x31, 0x0b, 0x00, 0x11, 0x32, 0x0b, 0x00, 0x09, 0xad, 0x01, 0x1f,
	0x35, 0x1d, 0x01, 0x10, 0x1f, 0x35, 0x1d, 0x01, 0x10, 0x1f, 0x35, 0x1d,
	0x01, 0x10, 0x1f, 0x35, 0x1d, 0x01, 0x10, 0x1f, 0x35, 0x1d, 0x01, 0x0a,
	0x50, 0x69, 0x6e, 0x65, 0x20, 0x30, 0xc2, 0x0b, 0x00, 0x40, 0x68, 0xff,
	0x15, 0x6b, 0x20, 0x62, 0x72, 0x6f, 0x77, 0x6e, 0x20, 0x66, 0x6f, 0x78,
	0x0a, 0x62, 0x61, 0x73, 0x69, 0x73, 0x20, 0x6c, 0x69, 0x6e, 0x65, 0x20,
	0x30, 0x32, 0x39, 0x32, 0x20, 0x74, 0x68, 0x65, 0x20, 0x71, 0x75, 0x69,
	0x63, 0x24, 0x00, 0x07, 0x1f, 0x33, 0x24, 0x00, 0x10, 0x1f, 0x34, 0x24,
	0x00, 0x10, 0x1f, 0x35, 0x24, 0x00, 0x10, 0x1f, 0x36, 0x24, 0x00, 0x10,
	0x1f, 0x37, 0x24, 0x00, 0x10, 0x1f, 0x38, 0x24, 0x00, 0x10, 0x1f, 0x39,
	0x24, 0x00, 0x02, 0x71, 0x74, 0x61, 0x69, 0x6c, 0x20, 0x6f, 0x66, 0x1c,
	0x00, 0x8f, 0x6e, 0x65, 0x77, 0x20, 0x66, 0x69, 0x6c, 0x65, 0x15, 0x00,
	0x13, 0x50, 0x66, 0x69, 0x6c, 0x65, 0x0a, 0x00,
};

static const uint8_t cap_lz4_b[548] = {
	0x42, 0x21, 0xf8, 0x1a, 0x73, 0x65, 0x63, 0x6f, 0x6e, 0x64, 0x20, 0x66,
	0x69, 0x6c, 0x65, 0x20, 0x30, 0x20, 0x6c, 0x6f, 0x72, 0x65, 0x6d, 0x20,
	0x69, 0x70, 0x73, 0x75, 0x6d, 0x20, 0x64, 0x6f, 0x6c, 0x6f, 0x72, 0x20,
	0x73, 0x69, 0x74, 0x20, 0x61, 0x6d, 0x65, 0x74, 0x0a, 0x29, 0x00, 0x1f,
	0x31, 0x29, 0x00, 0x15, 0x1f, 0x32, 0x29, 0x00, 0x15, 0x1f, 0x33, 0x29,
	0x00, 0x15, 0x1f, 0x34, 0x29, 0x00, 0x15, 0x1f, 0x35, 0x29, 0x00, 0x15,
	0x1f, 0x36, 0x29, 0x00, 0x15, 0x1f, 0x37, 0x29, 0x00, 0x15, 0x1f, 0x38,
	0x29, 0x00, 0x15, 0x1f, 0x39, 0x29, 0x00, 0x15, 0x1f, 0x31, 0x9b, 0x01,
	0x17, 0x0f, 0x9c, 0x01, 0x16, 0x1f, 0x31, 0x9d, 0x01, 0x16, 0x1f, 0x31,
	0x9e, 0x01, 0x16, 0x1f, 0x31, 0x9f, 0x01, 0x16, 0x1f, 0x31, 0xa0, 0x01,
	0x16, 0x1f, 0x31, 0xa1, 0x01, 0x16, 0x1f, 0x31, 0xa2, 0x01, 0x16, 0x1f,
	0x31, 0xa3, 0x01, 0x16, 0x1f, 0x31, 0xa4, 0x01, 0x16, 0x1f, 0x32, 0xa4,
	0x01, 0x16, 0x1f, 0x32, 0xa4, 0x01, 0x16, 0x1f, 0x32, 0xa4, 0x01, 0x16,
	0x1f, 0x32, 0xa4, 0x01, 0x16, 0x1f, 0x32, 0xa4, 0x01, 0x16, 0x1f, 0x32,
	0xa4, 0x01, 0x16, 0x1f, 0x32, 0xa4, 0x01, 0x16, 0x1f, 0x32, 0xa4, 0x01,
	0x16, 0x1f, 0x32, 0xa4, 0x01, 0x16, 0x1f, 0x32, 0xa4, 0x01, 0x16, 0x1f,
	0x33, 0xa4, 0x01, 0x16, 0x1f, 0x33, 0xa4, 0x01, 0x16, 0x1f, 0x33, 0xa4,
	0x01, 0x16, 0x1f, 0x33, 0xa4, 0x01, 0x16, 0x1f, 0x33, 0xa4, 0x01, 0x16,
	0x1f, 0x33, 0xa4, 0x01, 0x16, 0x1f, 0x33, 0xa4, 0x01, 0x16, 0x1f, 0x33,
	0xa4, 0x01, 0x16, 0x1f, 0x33, 0xa4, 0x01, 0x16, 0x1f, 0x33, 0xa4, 0x01,
	0x16, 0x1f, 0x34, 0xa4, 0x01, 0x16, 0x1f, 0x34, 0xa4, 0x01, 0x16, 0x1f,
	0x34, 0xa4, 0x01, 0x16, 0x1f, 0x34, 0xa4, 0x01, 0x16, 0x1f, 0x34, 0xa4,
	0x01, 0x16, 0x1f, 0x34, 0xa4, 0x01, 0x16, 0x1f, 0x34, 0xa4, 0x01, 0x16,
	0x1f, 0x34, 0xa4, 0x01, 0x16, 0x1f, 0x34, 0xa4, 0x01, 0x16, 0x1f, 0x34,
	0xa4, 0x01, 0x16, 0x1f, 0x35, 0xa4, 0x01, 0x16, 0x1f, 0x35, 0xa4, 0x01,
	0x16, 0x1f, 0x35, 0xa4, 0x01, 0x16, 0x1f, 0x35, 0xa4, 0x01, 0x16, 0x1f,
	0x35, 0xa4, 0x01, 0x16, 0x1f, 0x35, 0xa4, 0x01, 0x16, 0x1f, 0x35, 0xa4,
	0x01, 0x16, 0x1f, 0x35, 0xa4, 0x01, 0x16, 0x1f, 0x35, 0xa4, 0x01, 0x16,
	0x1f, 0x35, 0xa4, 0x01, 0x16, 0x1f, 0x36, 0xa4, 0x01, 0x16, 0x1f, 0x36,
	0xa4, 0x01, 0x16, 0x1f, 0x36, 0xa4, 0x01, 0x16, 0x1f, 0x36, 0xa4, 0x01,
	0x16, 0x1f, 0x36, 0xa4, 0x01, 0x16, 0x1f, 0x36, 0xa4, 0x01, 0x16, 0x1f,
	0x36, 0xa4, 0x01, 0x16, 0x1f, 0x36, 0xa4, 0x01, 0x16, 0x1f, 0x36, 0xa4,
	0x01, 0x16, 0x1f, 0x36, 0xa4, 0x01, 0x16, 0x1f, 0x37, 0xa4, 0x01, 0x16,
	0x1f, 0x37, 0xa4, 0x01, 0x16, 0x1f, 0x37, 0xa4, 0x01, 0x16, 0x1f, 0x37,
	0xa4, 0x01, 0x16, 0x1f, 0x37, 0xa4, 0x01, 0x16, 0x1f, 0x37, 0xa4, 0x01,
	0x16, 0x1f, 0x37, 0xa4, 0x01, 0x16, 0x1f, 0x37, 0xa4, 0x01, 0x16, 0x1f,
	0x37, 0xa4, 0x01, 0x16, 0x1f, 0x37, 0xa4, 0x01, 0x16, 0x1f, 0x38, 0xa4,
	0x01, 0x16, 0x1f, 0x38, 0xa4, 0x01, 0x16, 0x1f, 0x38, 0xa4, 0x01, 0x16,
	0x1f, 0x38, 0xa4, 0x01, 0x16, 0x1f, 0x38, 0xa4, 0x01, 0x16, 0x1f, 0x38,
	0xa4, 0x01, 0x16, 0x1f, 0x38, 0xa4, 0x01, 0x16, 0x1f, 0x38, 0xa4, 0x01,
	0x16, 0x1f, 0x38, 0xa4, 0x01, 0x16, 0x1f, 0x38, 0xa4, 0x01, 0x16, 0x1f,
	0x39, 0xa4, 0x01, 0x16, 0x1f, 0x39, 0xa4, 0x01, 0x16, 0x1f, 0x39, 0xa4,
	0x01, 0x16, 0x1f, 0x39, 0xa4, 0x01, 0x16, 0x1f, 0x39, 0xa4, 0x01, 0x16,
	0x1f, 0x39, 0xa4, 0x01, 0x16, 0x1f, 0x39, 0xa4, 0x01, 0x16, 0x1f, 0x39,
	0xa4, 0x01, 0x16, 0x1f, 0x39, 0xa4, 0x01, 0x16, 0x1f, 0x39, 0xa4, 0x01,
	0x05, 0x50, 0x61, 0x6d, 0x65, 0x74, 0x0a, 0x00,
};

static const uint8_t cap_zlibx_a[184] = {
	0xc0, 0x01, 0x00, 0x40, 0x71, 0x4a, 0xcb, 0xaf, 0xe0, 0x4a, 0x4a, 0x2c,
	0xce, 0x2c, 0x56, 0xc8, 0xc9, 0xcc, 0x4b, 0x55, 0x30, 0x30, 0x30, 0xb6,
	0x54, 0x28, 0xc9, 0x48, 0x55, 0x28, 0x2c, 0xcd, 0x4c, 0xce, 0x56, 0x48,
	0x2a, 0xca, 0x2f, 0xcf, 0x53, 0x48, 0x43, 0x57, 0x63, 0x62, 0x40, 0x84,
	0x1a, 0x43, 0x22, 0xd4, 0x18, 0x11, 0xa1, 0xc6, 0x98, 0x08, 0x35, 0x26,
	0x44, 0xa8, 0x31, 0x25, 0x42, 0x8d, 0x19, 0x11, 0x6a, 0xcc, 0x89, 0x50,
	0x63, 0x41, 0x84, 0x1a, 0xec, 0xe1, 0xec, 0xe7, 0x1a, 0xae, 0x60, 0x6a,
	0xa0, 0x50, 0x55, 0x55, 0x05, 0x61, 0x1a, 0x22, 0x98, 0x46, 0x60, 0x26,
	0x8a, 0x21, 0xa6, 0x44, 0x04, 0x8e, 0x29, 0x11, 0x81, 0x63, 0x4a, 0x44,
	0xe0, 0x98, 0x12, 0x11, 0x38, 0xa6, 0x84, 0x03, 0x07, 0x00, 0xc2, 0x0b,
	0x00, 0x40, 0x3c, 0xc2, 0x25, 0x6e, 0x64, 0x49, 0x38, 0x31, 0x18, 0x59,
	0x12, 0xf6, 0xaf, 0x91, 0x25, 0x61, 0xff, 0x1a, 0x59, 0x12, 0xf6, 0xaf,
	0x91, 0x25, 0x61, 0xff, 0x1a, 0x59, 0x12, 0xf6, 0xaf, 0x91, 0x25, 0xe1,
	0xc4, 0x60, 0x64, 0x89, 0x3d, 0x31, 0x94, 0x24, 0x66, 0xe6, 0x28, 0xe4,
	0xa7, 0x81, 0xe5, 0xf2, 0x52, 0xcb, 0x15, 0xd2, 0x32, 0x73, 0x52, 0x49,
	0x10, 0x04, 0x00, 0x00,
};

static const uint8_t cap_zlibx_b[285] = {
	0x41, 0x1a, 0x8c, 0xd7, 0x3b, 0x4e, 0xc4, 0x30, 0x14, 0x40, 0xd1, 0x9e,
	0x55, 0x78, 0x09, 0xf8, 0xf3, 0xfc, 0x59, 0x0e, 0x62, 0x32, 0x52, 0xa4,
	0x09, 0x41, 0x64, 0xd8, 0x3f, 0x94, 0x54, 0xe8, 0x94, 0x96, 0x6e, 0xe5,
	0x23, 0xdb, 0xcf, 0xd7, 0xf6, 0x7e, 0x7e, 0xdc, 0xd2, 0x7d, 0x7f, 0x6c,
	0xe9, 0x35, 0x3d, 0xce, 0xaf, 0xed, 0x48, 0xfb, 0xe7, 0xf5, 0x7d, 0xa4,
	0xdb, 0xf9, 0xbb, 0x4a, 0xd7, 0xfe, 0x4c, 0x6f, 0xc7, 0xf6, 0x7c, 0xb9,
	0xfe, 0x84, 0x59, 0xc3, 0xa2, 0x61, 0xd5, 0xb0, 0x69, 0x18, 0x1a, 0x76,
	0x0d, 0x87, 0x86, 0x53, 0xc3, 0xc5, 0x1b, 0xee, 0x34, 0x6c, 0x93, 0x19,
	0x27, 0xb3, 0x4e, 0x66, 0x9e, 0xcc, 0x3e, 0x99, 0x81, 0x32, 0x0b, 0x65,
	0x26, 0xca, 0x6c, 0x54, 0xd8, 0xa8, 0xf8, 0xf9, 0x61, 0xa3, 0xc2, 0x46,
	0x85, 0x8d, 0x0a, 0x1b, 0x15, 0x36, 0x2a, 0x6c, 0x54, 0xd8, 0xa8, 0xb0,
	0x51, 0x65, 0xa3, 0xca, 0x46, 0xd5, 0x2f, 0x39, 0x36, 0xaa, 0x6c, 0x54,
	0xd9, 0xa8, 0xb2, 0x51, 0x65, 0xa3, 0xca, 0x46, 0x95, 0x8d, 0x1a, 0x1b,
	0x35, 0x36, 0x6a, 0x6c, 0xd4, 0xfc, 0x25, 0x62, 0xa3, 0xc6, 0x46, 0x8d,
	0x8d, 0x1a, 0x1b, 0x35, 0x36, 0x6a, 0x6c, 0x14, 0x6c, 0x14, 0x6c, 0x14,
	0x6c, 0x14, 0x6c, 0x14, 0x3e, 0x2e, 0xb0, 0x51, 0xb0, 0x51, 0xb0, 0x51,
	0xb0, 0x51, 0xb0, 0x51, 0x67, 0xa3, 0xce, 0x46, 0x9d, 0x8d, 0x3a, 0x1b,
	0x75, 0x36, 0xea, 0x3e, 0xd3, 0xb1, 0x51, 0x67, 0xa3, 0xce, 0x46, 0x9d,
	0x8d, 0x06, 0x1b, 0x0d, 0x36, 0x1a, 0x6c, 0x34, 0xd8, 0x68, 0xb0, 0xd1,
	0x60, 0xa3, 0xe1, 0x83, 0x37, 0x1b, 0x0d, 0x36, 0x1a, 0x6c, 0x34, 0xd9,
	0x68, 0xb2, 0xd1, 0x64, 0xa3, 0xc9, 0x46, 0x93, 0x8d, 0x26, 0x1b, 0x4d,
	0x36, 0x9a, 0xfe, 0x3b, 0x62, 0xa3, 0xc9, 0x46, 0x8b, 0x8d, 0x16, 0x1b,
	0x2d, 0x36, 0x5a, 0x6c, 0xb4, 0xd8, 0x68, 0xb1, 0xd1, 0x62, 0xa3, 0xc5,
	0x46, 0xcb, 0xbf, 0xb0, 0xff, 0x1a, 0xfd, 0x00, 0x00,
};

static const uint8_t cap_zlib_a[143] = {
	0xc0, 0x01, 0x00, 0x40, 0x4e, 0x8c, 0xd0, 0xb1, 0x0d, 0x80, 0x30, 0x14,
	0x03, 0xd1, 0x55, 0x32, 0x02, 0x41, 0xe7, 0x11, 0xd2, 0xd2, 0xb2, 0xcb,
	0x9f, 0x1e, 0x09, 0x8a, 0x08, 0x11, 0x89, 0xeb, 0xae, 0xb0, 0x5c, 0xbc,
	0xef, 0x46, 0x38, 0x23, 0x9c, 0x11, 0xce, 0x08, 0x67, 0x84, 0x33, 0xc2,
	0x19, 0xe1, 0x8c, 0x70, 0x46, 0x38, 0x23, 0x9c, 0x59, 0x3b, 0x1f, 0xe3,
	0x6c, 0xd9, 0x5a, 0x55, 0x3d, 0xd9, 0x67, 0xee, 0x77, 0xbe, 0x4e, 0x22,
	0x70, 0x22, 0x70, 0x22, 0x70, 0x22, 0x70, 0xf2, 0x8f, 0x73, 0x01, 0xc2,
	0x0b, 0x00, 0x40, 0x36, 0xc2, 0xad, 0x86, 0x88, 0x70, 0x26, 0xa2, 0x3f,
	0x68, 0x44, 0x44, 0x7f, 0xd0, 0x88, 0x88, 0xfe, 0xa0, 0x11, 0x11, 0xfd,
	0x41, 0x23, 0x22, 0xfa, 0x83, 0x46, 0x44, 0xf4, 0x07, 0x8d, 0x70, 0xf4,
	0x07, 0x4b, 0x12, 0x33, 0x73, 0x14, 0xf2, 0xd3, 0xc0, 0x72, 0x79, 0xa9,
	0xe5, 0x0a, 0x69, 0x99, 0x39, 0xa9, 0x24, 0x08, 0x02, 0x00, 0x00,
};

static const uint8_t cap_zlib_b[285] = {
	0x41, 0x1a, 0x8c, 0xd7, 0x3b, 0x4e, 0xc4, 0x30, 0x14, 0x40, 0xd1, 0x9e,
	0x55, 0x78, 0x09, 0xf8, 0xf3, 0xfc, 0x59, 0x0e, 0x62, 0x32, 0x52, 0xa4,
	0x09, 0x41, 0x64, 0xd8, 0x3f, 0x94, 0x54, 0xe8, 0x94, 0x96, 0x6e, 0xe5,
	0x23, 0xdb, 0xcf, 0xd7, 0xf6, 0x7e, 0x7e, 0xdc, 0xd2, 0x7d, 0x7f, 0x6c,
	0xe9, 0x35, 0x3d, 0xce, 0xaf, 0xed, 0x48, 0xfb, 0xe7, 0xf5, 0x7d, 0xa4,
	0xdb, 0xf9, 0xbb, 0x4a, 0xd7, 0xfe, 0x4c, 0x6f, 0xc7, 0xf6, 0x7c, 0xb9,
	0xfe, 0x84, 0x59, 0xc3, 0xa2, 0x61, 0xd5, 0xb0, 0x69, 0x18, 0x1a, 0x76,
	0x0d, 0x87, 0x86, 0x53, 0xc3, 0xc5, 0x1b, 0xee, 0x34, 0x6c, 0x93, 0x19,
	0x27, 0xb3, 0x4e, 0x66, 0x9e, 0xcc, 0x3e, 0x99, 0x81, 0x32, 0x0b, 0x65,
	0x26, 0xca, 0x6c, 0x54, 0xd8, 0xa8, 0xf8, 0xf9, 0x61, 0xa3, 0xc2, 0x46,
	0x85, 0x8d, 0x0a, 0x1b, 0x15, 0x36, 0x2a, 0x6c, 0x54, 0xd8, 0xa8, 0xb0,
	0x51, 0x65, 0xa3, 0xca, 0x46, 0xd5, 0x2f, 0x39, 0x36, 0xaa, 0x6c, 0x54,
	0xd9, 0xa8, 0xb2, 0x51, 0x65, 0xa3, 0xca, 0x46, 0x95, 0x8d, 0x1a, 0x1b,
	0x35, 0x36, 0x6a, 0x6c, 0xd4, 0xfc, 0x25, 0x62, 0xa3, 0xc6, 0x46, 0x8d,
	0x8d, 0x1a, 0x1b, 0x35, 0x36, 0x6a, 0x6c, 0x14, 0x6c, 0x14, 0x6c, 0x14,
	0x6c, 0x14, 0x6c, 0x14, 0x3e, 0x2e, 0xb0, 0x51, 0xb0, 0x51, 0xb0, 0x51,
	0xb0, 0x51, 0xb0, 0x51, 0x67, 0xa3, 0xce, 0x46, 0x9d, 0x8d, 0x3a, 0x1b,
	0x75, 0x36, 0xea, 0x3e, 0xd3, 0xb1, 0x51, 0x67, 0xa3, 0xce, 0x46, 0x9d,
	0x8d, 0x06, 0x1b, 0x0d, 0x36, 0x1a, 0x6c, 0x34, 0xd8, 0x68, 0xb0, 0xd1,
	0x60, 0xa3, 0xe1, 0x83, 0x37, 0x1b, 0x0d, 0x36, 0x1a, 0x6c, 0x34, 0xd9,
	0x68, 0xb2, 0xd1, 0x64, 0xa3, 0xc9, 0x46, 0x93, 0x8d, 0x26, 0x1b, 0x4d,
	0x36, 0x9a, 0xfe, 0x3b, 0x62, 0xa3, 0xc9, 0x46, 0x8b, 0x8d, 0x16, 0x1b,
	0x2d, 0x36, 0x5a, 0x6c, 0xb4, 0xd8, 0x68, 0xb1, 0xd1, 0x62, 0xa3, 0xc5,
	0x46, 0xcb, 0xbf, 0xb0, 0xff, 0x1a, 0xfd, 0x00, 0x00,
};

static const uint8_t cap_zlib_big_p30[16] = {
	0x80, 0x40, 0x0c, 0x1a, 0x8d, 0xd0, 0xe1, 0x11, 0xa1, 0xa9, 0x79, 0x29,
	0x5c, 0x00, 0x00, 0x00,
};

static const uint8_t cap_zlib_big_p31[117] = {
	0x80, 0x40, 0x71, 0x4c, 0xdd, 0x31, 0x0d, 0x00, 0x20, 0x10, 0x00, 0xb1,
	0x1d, 0x35, 0x15, 0xc5, 0xaf, 0xf8, 0x1f, 0x49, 0x08, 0xc3, 0x19, 0x69,
	0xbf, 0x2d, 0x23, 0x5f, 0xaa, 0x7c, 0xa9, 0xf2, 0xa5, 0xca, 0x97, 0x2a,
	0x5f, 0xaa, 0x7c, 0xa9, 0xf2, 0xa5, 0xca, 0x97, 0x2a, 0x5f, 0xaa, 0x7c,
	0xa9, 0xf2, 0xa5, 0xca, 0x97, 0x2a, 0x5f, 0xaa, 0x7c, 0xa9, 0xf2, 0xa5,
	0xca, 0x97, 0x2a, 0x5f, 0xaa, 0x7c, 0xa9, 0xf2, 0xa5, 0xca, 0x97, 0x2a,
	0x5f, 0xaa, 0x7c, 0xa9, 0xf2, 0xa5, 0xca, 0x97, 0x2a, 0x5f, 0xaa, 0x7c,
	0xa9, 0xf2, 0xa5, 0xca, 0x97, 0x2a, 0x5f, 0xaa, 0x7c, 0xa9, 0xf2, 0xa5,
	0xca, 0x97, 0x2a, 0x5f, 0xaa, 0x7c, 0xa9, 0xf2, 0xa5, 0xca, 0x97, 0x2a,
	0x5f, 0xea, 0xf3, 0x64, 0xe6, 0xec, 0x75, 0x01, 0x00,
};


/* The files of the capture (the python that made them, as C). */
static void make_capture_files(struct buf *basis, struct buf *a, struct buf *b)
{
	for (int i = 0; i < 300; i++)
		buf_addf(basis, "basis line %04d the quick brown fox\n", i);
	for (int i = 0; i < 300; i++) {
		if (i >= 50 && i < 53)
			buf_addf(a, "NEW %d zzz\n", i);
		else
			buf_addf(a, "basis line %04d the quick brown fox\n", i);
	}
	for (int i = 0; i < 3; i++)
		buf_addf(a, "tail of the new file\n");
	for (int i = 0; i < 100; i++)
		buf_addf(b, "second file %d lorem ipsum dolor sit amet\n", i);
}

static void make_big_files(struct buf *basis, struct buf *src)
{
	struct buf blk = {0};
	for (int i = 0; i < 4000; i++)
		buf_addf(&blk, "alpha %05d\n", i);
	for (int i = 0; i < 1500; i++)
		buf_addf(&blk, "beta  %05d\n", i);
	assert_int_equal(blk.len, 66000);
	buf_add(basis, blk.p, blk.len);
	for (int i = 0; i < 1000; i++)
		buf_add(basis, "z", 1);
	buf_add(src, blk.p, blk.len);
	for (int i = 0; i < 38; i++)
		buf_addf(src, "alpha %05d\n", i);
	buf_addf(src, "end\n");
	free(blk.p);
}

static void test_rsync_streams(void **state)
{
	static const struct {
		int alg;
		const uint8_t *a, *b;
		size_t alen, blen;
	} caps[] = {
		{CPRES_ZSTD, cap_zstd_a, cap_zstd_b, sizeof cap_zstd_a, sizeof cap_zstd_b},
		{CPRES_LZ4, cap_lz4_a, cap_lz4_b, sizeof cap_lz4_a, sizeof cap_lz4_b},
		{CPRES_ZLIBX, cap_zlibx_a, cap_zlibx_b, sizeof cap_zlibx_a, sizeof cap_zlibx_b},
		{CPRES_ZLIB, cap_zlib_a, cap_zlib_b, sizeof cap_zlib_a, sizeof cap_zlib_b},
	};
	struct buf basis = {0}, a = {0}, b = {0}, got = {0}, blocks = {0};
	(void)state;

	make_capture_files(&basis, &a, &b);
	assert_int_equal(basis.len, 10800);
	struct basis bs = {basis.p, 16, 700, 300};
	struct basis none = {NULL, 0, 0, 0};
	for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
		struct mem m;
		struct buf both = {0};
		buf_add(&both, caps[c].a, caps[c].alen);
		buf_add(&both, caps[c].b, caps[c].blen);
		mem_from(&m, both.p, both.len);
		struct token_dec *d = token_dec_new(caps[c].alg, 32, &m.err);
		got.len = blocks.len = 0;
		assert_int_equal(decode_file(d, &m, &bs, &got, &blocks), TOKEN_END);
		assert_int_equal(got.len, a.len);
		assert_memory_equal(got.p, a.p, a.len);
		/* rsync matched blocks 0-1, then 3-14 (a run), around the change */
		assert_int_equal(blocks.len / 4, 14);
		got.len = 0;
		assert_int_equal(decode_file(d, &m, &none, &got, NULL), TOKEN_END);
		assert_int_equal(got.len, b.len);
		assert_memory_equal(got.p, b.p, b.len);
		token_dec_free(d);
		mem_close(&m);
		free(both.p);
	}

	/* Blocks over 64 KiB, protocol 30 against 31. */
	struct buf bbasis = {0}, bsrc = {0}, in = {0};
	make_big_files(&bbasis, &bsrc);
	struct basis big = {bbasis.p, 2, 66000, 1000};
	for (int p = 30; p <= 31; p++) {
		in.len = 0;
		if (p == 30)
			buf_add(&in, cap_zlib_big_p30, sizeof cap_zlib_big_p30);
		else
			buf_add(&in, cap_zlib_big_p31, sizeof cap_zlib_big_p31);
		assert_int_equal(decode_bytes(CPRES_ZLIB, p, &in, &big, &got), TOKEN_END);
		assert_int_equal(got.len, bsrc.len);
		assert_memory_equal(got.p, bsrc.p, bsrc.len);
		/* protocol 30's stream decoded with protocol 31's history: not the
		 * file (protocol 31's stream uses no history here, as the
		 * literal data is not in the window it leaves) */
		if (p == 30) {
			int k = decode_bytes(CPRES_ZLIB, 31, &in, &big, &got);
			assert_true(k == TOKEN_ERROR || got.len != bsrc.len ||
				    memcmp(got.p, bsrc.p, bsrc.len) != 0);
		}
	}
	/* and ours, encoded for protocol 30, decodes as rsync's does */
	for (int p = 30; p <= 31; p++) {
		struct op ops[] = {{NULL, 0, 0}, {bsrc.p + 66000, bsrc.len - 66000, 0}};
		struct file_spec f = {&big, ops, 2, false};
		roundtrip(CPRES_ZLIB, p, false, 6, &f, 1);
	}
	free(bbasis.p);
	free(bsrc.p);
	free(in.p);
	free(basis.p);
	free(a.p);
	free(b.p);
	free(got.p);
	free(blocks.p);
}

/* ------------------------------------------------------------ bad input */

/* Decode a stream whose blocks are all zero bytes (only counted). */
static int decode_raw(int alg, const uint8_t *p, size_t n, int32_t count, int *code)
{
	static const uint8_t zero[16];
	struct mem m;
	int k;

	mem_from(&m, p, n);
	struct token_dec *d = token_dec_new(alg, 31, &m.err);
	token_dec_begin(d, count);
	for (;;) {
		const uint8_t *data;
		size_t len;
		int32_t b;
		k = token_dec_next(d, &m.in, &data, &len, &b);
		if (k == TOKEN_BLOCK && (b < 0 || b >= count))
			fail_msg("alg %d: block %d of %d passed", alg, b, count);
		if (k == TOKEN_BLOCK && !token_dec_see(d, zero, 16, 0, 16))
			k = TOKEN_ERROR;
		if (k == TOKEN_END || k == TOKEN_ERROR)
			break;
	}
	*code = wire_error_code(&m.err);
	token_dec_free(d);
	mem_close(&m);
	return k;
}

static void expect_bad(int alg, const uint8_t *p, size_t n, int32_t count)
{
	int code;
	int k = decode_raw(alg, p, n, count, &code);
	if (k != TOKEN_ERROR || code != RERR_STREAMIO)
		fail_msg("alg %d: bad stream gave %d, code %d", alg, k, code);
}

#define BAD(alg, count, ...)                                                      \
	do {                                                                      \
		static const uint8_t b_[] = {__VA_ARGS__};                        \
		expect_bad(alg, b_, sizeof b_, count);                            \
	} while (0)

static void test_bad_tokens(void **state)
{
	(void)state;
	for (size_t a = 1; a < NALGS; a++) {
		int alg = algs[a];
		BAD(alg, 4, 0x20, 4, 0, 0, 0, 0x00);             /* block == count */
		BAD(alg, 4, 0x20, 0xff, 0xff, 0xff, 0xff, 0x00); /* negative */
		BAD(alg, 4, 0x21, 2, 0, 0, 0, 2, 0, 0x00);       /* run to 4 */
		BAD(alg, 4, 0x21, 0, 0, 0, 0, 0, 0, 0x00);       /* run of 0 */
		BAD(alg, 4, 0x83, 0x81, 0x00);                   /* 3, then 4 */
		BAD(alg, 4, 0xC1, 0xff, 0xff, 0x00);             /* run overflows */
		BAD(alg, 0x7fffffff, 0x20, 0xfe, 0xff, 0xff, 0x7f, 0xC0, 0xff, 0xff);
		BAD(alg, 0, 0x80, 0x00);                         /* no blocks at all */
		BAD(alg, 4, 0x05, 0x00);                         /* not a flag */
		BAD(alg, 4, 0x22, 0x00);
		BAD(alg, 4, 0x3f, 0x00);
		BAD(alg, 4, 0x40);                               /* truncated */
		BAD(alg, 4, 0x41, 0x00, 1, 2, 3);
		BAD(alg, 4, 0x20, 1, 0);
		BAD(alg, 4, 0xC0, 1);
		BAD(alg, 4);
		/* garbage compressed data */
		BAD(alg, 4, 0x40, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00);
	}
	BAD(CPRES_NONE, 4, 5, 0, 0, 0, 'a');               /* truncated literal */
	BAD(CPRES_NONE, 4, 1, 0, 0);
}

static void test_bad_payloads(void **state)
{
	(void)state;
	/* zlib: a stream that ends (BFINAL) */
	uint8_t def[64];
	z_stream z = {0};
	assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
	z.next_in = (Bytef *)"hello hello hello";
	z.avail_in = 17;
	z.next_out = def + 2;
	z.avail_out = sizeof def - 3;
	assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
	size_t n = sizeof def - 3 - z.avail_out;
	deflateEnd(&z);
	def[0] = 0x40;
	def[1] = (uint8_t)n;
	def[2 + n] = 0x00;
	expect_bad(CPRES_ZLIB, def, n + 3, 4);
	expect_bad(CPRES_ZLIBX, def, n + 3, 4);

	/* zlib: data that stops inside a stored block: no sync point */
	BAD(CPRES_ZLIB, 4, 0x40, 10, 0x00, 10, 0, 0xf5, 0xff, 'a', 'b', 'c', 'd', 'e', 0x00);
	BAD(CPRES_ZLIB, 4, 0x40, 10, 0x00, 10, 0, 0xf5, 0xff, 'a', 'b', 'c', 'd', 'e', 0x80);

	/* lz4: a block decompressing to 40006 bytes, beyond rsync's buffer */
	struct buf bomb = {0};
	uint8_t t[] = {0x1f, 'a', 0x01, 0x00};
	buf_add(&bomb, "\0\0", 2);
	buf_add(&bomb, t, sizeof t);
	for (int i = 0; i < 156; i++)
		buf_add(&bomb, "\xff", 1);
	buf_add(&bomb, "\xc9", 1); /* 4 + 15 + 156 * 255 + 201 = 40000 */
	buf_add(&bomb, "\x50" "bbbbb", 6);
	bomb.p[0] = (uint8_t)(0x40 | ((bomb.len - 2) >> 8));
	bomb.p[1] = (uint8_t)(bomb.len - 2);
	buf_add(&bomb, "\0", 1);
	expect_bad(CPRES_LZ4, bomb.p, bomb.len, 4);
	free(bomb.p);

	/* zstd: not a frame; a frame with a reserved block type */
	BAD(CPRES_ZSTD, 4, 0x40, 4, 0x01, 0x02, 0x03, 0x04, 0x00);
	BAD(CPRES_ZSTD, 4, 0x40, 9, 0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x58, 0xff, 0xff, 0xff, 0x00);
}

/* A valid stream of every algorithm, for the truncation and flip tests. */
static void valid_stream(int alg, struct buf *out, struct buf *bdata)
{
	struct buf text = {0}, noise = {0};
	struct mem m;

	bdata->len = 0;
	text_bytes(bdata, 16 * 100, 4);
	text_bytes(&text, 3000, 4);
	random_bytes(&noise, 500);
	struct basis bs = {bdata->p, 16, 100, 0};
	struct op ops[] = {{NULL, 0, 0}, {NULL, 0, 1}, {text.p, 3000, 0}, {NULL, 0, 9},
			   {noise.p, 500, 0}, {NULL, 0, 15}, {NULL, 0, 3}};
	mem_open(&m);
	int a = alg;
	struct token_enc *e = token_enc_new(alg, token_resolve_level(&a, TOKEN_LEVEL_DEFAULT), true,
					    31, &m.err);
	encode_file(e, &m, &bs, ops, sizeof ops / sizeof ops[0], false, NULL);
	token_enc_free(e);
	mem_bytes(&m, out);
	mem_close(&m);
	free(text.p);
	free(noise.p);
}

static void test_truncated_streams(void **state)
{
	struct buf s = {0}, bdata = {0}, got = {0};
	(void)state;

	for (size_t a = 0; a < NALGS; a++) {
		valid_stream(algs[a], &s, &bdata);
		struct basis bs = {bdata.p, 16, 100, 0};
		for (size_t cut = 0; cut < s.len; cut++) {
			struct mem m;
			mem_from(&m, s.p, cut);
			struct token_dec *d = token_dec_new(algs[a], 31, &m.err);
			got.len = 0;
			int k = decode_file(d, &m, &bs, &got, NULL);
			if (k != TOKEN_ERROR || wire_error_code(&m.err) != RERR_STREAMIO)
				fail_msg("alg %d cut at %zu of %zu: %d", algs[a], cut, s.len, k);
			token_dec_free(d);
			mem_close(&m);
		}
	}
	free(s.p);
	free(bdata.p);
	free(got.p);
}

/* Random damage must never crash or hang the decoder. */
static void test_damaged_streams(void **state)
{
	struct buf s = {0}, bdata = {0}, got = {0}, bad = {0};
	(void)state;

	for (size_t a = 0; a < NALGS; a++) {
		valid_stream(algs[a], &s, &bdata);
		struct basis bs = {bdata.p, 16, 100, 0};
		for (int i = 0; i < 300; i++) {
			bad.len = 0;
			buf_add(&bad, s.p, s.len);
			int flips = 1 + (int)(rnd() % 3);
			for (int f = 0; f < flips; f++)
				bad.p[rnd() % bad.len] ^= (uint8_t)(1u << (rnd() % 8));
			struct mem m;
			mem_from(&m, bad.p, bad.len);
			struct token_dec *d = token_dec_new(algs[a], 31, &m.err);
			got.len = 0;
			int k = decode_file(d, &m, &bs, &got, NULL);
			assert_true(k == TOKEN_END || k == TOKEN_ERROR || k == 100);
			token_dec_free(d);
			mem_close(&m);
		}
	}
	free(s.p);
	free(bdata.p);
	free(got.p);
	free(bad.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_and_levels),
		cmocka_unit_test(test_skip_lists),
		cmocka_unit_test(test_plain_stream_bytes),
		cmocka_unit_test(test_token_framing),
		cmocka_unit_test(test_literal_only),
		cmocka_unit_test(test_blocks_only),
		cmocka_unit_test(test_mixed),
		cmocka_unit_test(test_big_blocks),
		cmocka_unit_test(test_many_files_one_session),
		cmocka_unit_test(test_adaptive),
		cmocka_unit_test(test_level_changes_midstream),
		cmocka_unit_test(test_rsync_streams),
		cmocka_unit_test(test_bad_tokens),
		cmocka_unit_test(test_bad_payloads),
		cmocka_unit_test(test_truncated_streams),
		cmocka_unit_test(test_damaged_streams),
	};
	return cmocka_run_group_tests_name("token", tests, NULL, NULL);
}
