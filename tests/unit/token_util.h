/*
 * What the token unit tests (test_token.c: round trips, test_token_rsync.c:
 * rsync's streams and bad input) share: growable buffers, memory files,
 * bases, and encoding and decoding whole files.
 */
#ifndef FERRY_TESTS_TOKEN_UTIL_H
#define FERRY_TESTS_TOKEN_UTIL_H

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

#include "proto/delta/token.h"
#include "proto/delta/zadapt.h"

static const int algs[] = {CPRES_NONE, CPRES_ZLIB, CPRES_ZLIBX, CPRES_ZSTD, CPRES_LZ4};
#define NALGS (sizeof algs / sizeof algs[0])

/* ------------------------------------------------------------ helpers */

struct buf {
	uint8_t *p;
	size_t len, cap;
};

static inline void buf_add(struct buf *b, const void *p, size_t n)
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

static inline void buf_addf(struct buf *b, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	buf_add(b, tmp, (size_t)n);
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static inline uint32_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 11);
}

static inline void random_bytes(struct buf *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t c = (uint8_t)rnd();
		buf_add(b, &c, 1);
	}
}

/* Compressible, but not trivially: numbered lines of a few words. */
static inline void text_bytes(struct buf *b, size_t n, unsigned seed)
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

static inline void mem_open(struct mem *m)
{
	m->fd = memfd_create("token", 0);
	assert_true(m->fd >= 0);
	wire_error_init(&m->err);
	wire_out_init(&m->out, m->fd, &m->err);
	m->in_open = false;
}

/* Switch from writing to reading from the start. */
static inline void mem_rewind(struct mem *m)
{
	assert_true(wire_flush(&m->out));
	assert_int_equal(lseek(m->fd, 0, SEEK_SET), 0);
	wire_in_init(&m->in, m->fd, &m->err);
	m->in_open = true;
}

static inline void mem_from(struct mem *m, const uint8_t *p, size_t n)
{
	mem_open(m);
	if (n)
		assert_int_equal(write(m->fd, p, n), (ssize_t)n);
	mem_rewind(m);
}

static inline void mem_close(struct mem *m)
{
	if (m->in_open)
		wire_in_free(&m->in);
	wire_out_free(&m->out);
	close(m->fd);
}

static inline size_t mem_size(struct mem *m)
{
	assert_true(wire_flush(&m->out));
	return (size_t)lseek(m->fd, 0, SEEK_END);
}

/* All of a memory file's bytes. */
static inline void mem_bytes(struct mem *m, struct buf *b)
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

static inline size_t block_len(const struct basis *bs, int32_t b)
{
	return b == bs->count - 1 && bs->remainder ? (size_t)bs->remainder : (size_t)bs->blength;
}

static inline const uint8_t *block_at(const struct basis *bs, int32_t b)
{
	return bs->p + (size_t)b * (size_t)bs->blength;
}

/* One operation of a file's script: literal bytes, or a block (n == 0). */
struct op {
	const uint8_t *p;
	size_t n;
	int32_t block;
};

static inline void encode_file(struct token_enc *e, struct mem *m, const struct basis *bs,
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
static inline int decode_file(struct token_dec *d, struct mem *m, const struct basis *bs, struct buf *got,
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
/* and, if set, the link the adaptive rule takes the output to go over
 * (ns per MiB) */
static uint64_t assumed_link;
/* and, if set, the input the sender says is still to come at each file's
 * start (token_enc_set_left) */
static uint64_t input_left;

/* The encoder's clock in timed runs: every reading is 1 ms after the one
 * before, so each piece of literal data seems to take 1 ms to compress,
 * a compressor slower than the adaptive rule's "never the bottleneck"
 * speed on any machine. The real clock made the outcome depend on this
 * machine's speed and load (lz4 on text can outrun that bound). */
static inline uint64_t slow_clock(void *ctx)
{
	uint64_t *now = ctx;

	*now += 1000000;
	return *now;
}

static inline size_t roundtrip(int alg, int protocol, bool adaptive, int level,
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
	if (assumed_link)
		token_enc_assume_link(e, assumed_link);
	for (size_t f = 0; f < nfiles; f++) {
		if (input_left)
			token_enc_set_left(e, input_left);
		encode_file(e, &m, files[f].bs, files[f].ops, files[f].nops, files[f].minimal,
			    &expect[f]);
	}
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

static inline size_t roundtrip1(int alg, const struct basis *bs, const struct op *ops, size_t nops)
{
	struct file_spec f = {bs, ops, nops, false};
	return roundtrip(alg, 31, true, TOKEN_LEVEL_DEFAULT, &f, 1);
}

/* Decode one file from bytes in memory; TOKEN_END or TOKEN_ERROR. */
static inline int decode_bytes(int alg, int protocol, const struct buf *in, const struct basis *bs,
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

#endif
