/*
 * proto/delta/token.c: the token streams of file data, plain and compressed with
 * zlib, zlibx, zstd and lz4 (docs/protocol.md 9.6 and 10).
 *
 * Round trips through our encoder and decoder (literal only, blocks only,
 * mixed, blocks over 64 KiB for protocols 30 and 31, runs, many files in
 * one zstd session, the adaptive rule, suffix skipping). Streams captured
 * from real rsync and bad input are in test_token_rsync.c.
 */
#include "tests/unit/token_util.h"

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

/* On a slow link zstd goes wide (zadapt.h): frames with a 64 MiB window
 * and long-distance matching, which the decoder follows; a file that
 * repeats one 3 MiB back (beyond the normal window) then costs almost
 * nothing. The other algorithms have no such mode and do not change. */
static void test_wide_on_slow_link(void **state)
{
	struct buf text = {0};
	(void)state;

	text_bytes(&text, 3 * ZADAPT_WINDOW, 5);
	struct basis none = {NULL, 0, 0, 0};
	struct op once[] = {{text.p, 3 * ZADAPT_WINDOW, 0}};
	struct file_spec f[] = {{&none, once, 1, false}, {&none, once, 1, false},
				{&none, once, 1, false}};
	timed_encoder = true;
	size_t narrow = roundtrip(CPRES_ZSTD, 31, true, TOKEN_LEVEL_DEFAULT, f, 3);
	assumed_link = 84 * 1000000u; /* 100 Mbit/s */
	size_t wide = roundtrip(CPRES_ZSTD, 31, true, TOKEN_LEVEL_DEFAULT, f, 3);
	int changes = last_changes;
	size_t lz4 = roundtrip(CPRES_LZ4, 31, true, TOKEN_LEVEL_DEFAULT, f, 3);
	assumed_link = 0;
	timed_encoder = false;
	print_message("zstd: %zu bytes, wide on a slow link %zu (%d changes); lz4 %zu\n", narrow,
		      wide, changes, lz4);
	assert_true(changes >= 1);
	/* the second and third copies are found 3 MiB back */
	assert_true(wide * 2 < narrow);
	free(text.p);
}

/* With the link unknown, the rule probes "store" (a compressor taking 1 ms
 * per piece is slower than any link it could assume), which sends a
 * trial's windows whole; where the sender says only this 16 MiB file is
 * left to send, that probe cannot pay: every byte goes compressed. */
static void test_no_store_probe_near_the_end(void **state)
{
	struct buf text = {0};
	(void)state;

	text_bytes(&text, 16 * 1024 * 1024, 7);
	struct basis none = {NULL, 0, 0, 0};
	struct op whole[] = {{text.p, text.len, 0}};
	struct file_spec f[] = {{&none, whole, 1, false}};
	timed_encoder = true;
	size_t probed = roundtrip(CPRES_ZSTD, 31, true, TOKEN_LEVEL_DEFAULT, f, 1);
	input_left = text.len;
	size_t compressed = roundtrip(CPRES_ZSTD, 31, true, TOKEN_LEVEL_DEFAULT, f, 1);
	input_left = (uint64_t)ZADAPT_STORE_PROBE_MIN_LEFT + text.len;
	size_t far = roundtrip(CPRES_ZSTD, 31, true, TOKEN_LEVEL_DEFAULT, f, 1);
	input_left = 0;
	timed_encoder = false;
	print_message("16 MiB of text: %zu bytes with the store probe, %zu with 16 MiB left, "
		      "%zu with more\n", probed, compressed, far);
	assert_true(compressed * 2 < probed);
	assert_true(compressed < text.len / 2);
	assert_int_equal(far, probed);
	free(text.p);
}

/* token_dec_reset: a decoder left in the middle of a stream (a cut one,
 * as a failed session leaves it) decodes a whole stream afterwards as a
 * new decoder does. */
static void test_dec_reset(void **state)
{
	struct buf data = {0}, text = {0}, stream = {0}, want = {0}, got = {0};
	(void)state;

	text_bytes(&data, 20 * 600, 3);
	random_bytes(&text, 60000); /* several chunks: the cut falls after one */
	struct basis bs = {data.p, 20, 600, 0};
	struct op ops[] = {{NULL, 0, 2}, {text.p, text.len, 0}, {NULL, 0, 7}, {text.p, 900, 0}};
	for (size_t a = 0; a < NALGS; a++) {
		struct mem enc, cut, whole;
		mem_open(&enc);
		struct token_enc *e = token_enc_new(algs[a], token_resolve_level(&(int){algs[a]},
						    TOKEN_LEVEL_DEFAULT), false, 31, &enc.err);
		assert_non_null(e);
		encode_file(e, &enc, &bs, ops, sizeof ops / sizeof ops[0], false, &want);
		token_enc_free(e);
		mem_bytes(&enc, &stream);
		mem_close(&enc);

		mem_from(&cut, stream.p, stream.len / 2);
		struct token_dec *d = token_dec_new(algs[a], 30, &cut.err);
		assert_non_null(d);
		got.len = 0;
		assert_int_not_equal(decode_file(d, &cut, &bs, &got, NULL), TOKEN_END);
		mem_from(&whole, stream.p, stream.len);
		token_dec_reset(d, 31, &whole.err);
		got.len = 0;
		assert_int_equal(decode_file(d, &whole, &bs, &got, NULL), TOKEN_END);
		assert_int_equal(got.len, want.len);
		assert_memory_equal(got.p, want.p, got.len);
		token_dec_free(d);
		mem_close(&cut);
		mem_close(&whole);
		want.len = 0;
	}
	free(data.p);
	free(text.p);
	free(stream.p);
	free(want.p);
	free(got.p);
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
		cmocka_unit_test(test_wide_on_slow_link),
		cmocka_unit_test(test_no_store_probe_near_the_end),
		cmocka_unit_test(test_dec_reset),
	};
	return cmocka_run_group_tests_name("token", tests, NULL, NULL);
}
