/*
 * proto/delta/token_pipe.c: the token stream encoded on a compressor
 * thread. The stream must be byte for byte the one the same encoder calls
 * make on the sender's own thread (which rsync decodes: test_token_rsync.c
 * and tests/interop), for every algorithm, across batches, files, runs of
 * block tokens longer than a batch, and zlib's matched-block history (with
 * protocol 29 blocks larger than a batch too), and data that turns from
 * compressible to not and back inside a file (stored data is encoded on
 * the sender's thread); and
 * a failure on the compressor thread must reach the sender, not hang it.
 */
#include <fcntl.h>

#include "proto/delta/token_pipe.h"
#include "tests/unit/token_util.h"

/* The sender's script through the pipe: literal pieces of at most 32 KiB
 * as match.c makes them, block bytes only where zlib keeps a history. */
static void encode_file_piped(struct token_pipe *p, int alg, const struct basis *bs,
			      const struct op *ops, size_t nops, bool minimal)
{
	assert_true(token_pipe_begin(p, minimal));
	for (size_t i = 0; i < nops; i++) {
		if (ops[i].n) {
			for (size_t off = 0; off < ops[i].n; off += 32768) {
				size_t k = ops[i].n - off < 32768 ? ops[i].n - off : 32768;
				assert_true(token_pipe_literal(p, ops[i].p + off, k));
			}
			continue;
		}
		int32_t b = ops[i].block;
		const uint8_t *data = alg == CPRES_ZLIB ? block_at(bs, b) : NULL;
		assert_true(token_pipe_block(p, b, data, block_len(bs, b)));
	}
	assert_true(token_pipe_end(p, true));
}

/* The test's files: 3 MiB of text (many batches and adaptive windows),
 * then random data (stored by the adaptive rule), a delta of text and
 * blocks, 3000 one-block tokens without runs (more records than a batch
 * holds), a small file and one on the skip list, and text and random
 * data in turns with a block between (stored, compressed, stored ...). */
struct script {
	struct buf text, noise, basis_data;
	struct basis bs;
	struct op big[2], delta[6], blocks[3000], small[1], skipped[1], turns[6];
	struct file_spec files[7];
};

static void script_init(struct script *sc)
{
	memset(sc, 0, sizeof *sc);
	text_bytes(&sc->text, 3 * 1024 * 1024, 1);
	random_bytes(&sc->noise, 700 * 1024);
	text_bytes(&sc->basis_data, 4000 * 700, 5);
	sc->bs = (struct basis){sc->basis_data.p, 4000, 700, 0};
	sc->big[0] = (struct op){sc->text.p, sc->text.len, 0};
	sc->big[1] = (struct op){sc->noise.p, sc->noise.len, 0};
	sc->delta[0] = (struct op){NULL, 0, 7};
	sc->delta[1] = (struct op){NULL, 0, 8};
	sc->delta[2] = (struct op){sc->text.p + 5000, 100000, 0};
	sc->delta[3] = (struct op){NULL, 0, 200};
	sc->delta[4] = (struct op){sc->noise.p, 3000, 0};
	sc->delta[5] = (struct op){NULL, 0, 3999};
	for (int i = 0; i < 3000; i++) /* every other block: no runs */
		sc->blocks[i] = (struct op){NULL, 0, (int32_t)((i * 2) % 4000)};
	sc->small[0] = (struct op){sc->text.p + 77, 5000, 0};
	sc->skipped[0] = (struct op){sc->text.p, 200000, 0};
	sc->turns[0] = (struct op){sc->noise.p, sc->noise.len, 0};
	sc->turns[1] = (struct op){sc->text.p + 999, 1024 * 1024, 0};
	sc->turns[2] = (struct op){sc->noise.p + 5, 400000, 0};
	sc->turns[3] = (struct op){NULL, 0, 17};
	sc->turns[4] = (struct op){sc->noise.p + 300000, 300000, 0};
	sc->turns[5] = (struct op){sc->text.p + 2000000, 600000, 0};
	sc->files[0] = (struct file_spec){&sc->bs, sc->big, 2, false};
	sc->files[1] = (struct file_spec){&sc->bs, sc->delta, 6, false};
	sc->files[2] = (struct file_spec){&sc->bs, sc->blocks, 3000, false};
	sc->files[3] = (struct file_spec){&sc->bs, sc->small, 1, false};
	sc->files[4] = (struct file_spec){&sc->bs, sc->skipped, 1, true};
	sc->files[5] = (struct file_spec){&sc->bs, sc->big, 1, false};
	sc->files[6] = (struct file_spec){&sc->bs, sc->turns, 6, false};
}

static void script_free(struct script *sc)
{
	free(sc->text.p);
	free(sc->noise.p);
	free(sc->basis_data.p);
}

/* All the script's files through one encoder, on this thread or piped. */
static void encode_script(const struct script *sc, int alg, bool piped, struct buf *out)
{
	struct mem m;
	int a = alg;
	int level = token_resolve_level(&a, TOKEN_LEVEL_DEFAULT);

	mem_open(&m);
	struct token_enc *e = token_enc_new(alg, level, true, 31, &m.err);
	assert_non_null(e);
	struct token_pipe *p = piped ? token_pipe_new(e, &m.out, &m.err) : NULL;
	if (piped)
		assert_non_null(p);
	for (size_t f = 0; f < sizeof sc->files / sizeof sc->files[0]; f++) {
		const struct file_spec *fs = &sc->files[f];
		if (piped)
			encode_file_piped(p, alg, fs->bs, fs->ops, fs->nops, fs->minimal);
		else
			encode_file(e, &m, fs->bs, fs->ops, fs->nops, fs->minimal, NULL);
	}
	token_pipe_free(p);
	token_enc_free(e);
	assert_int_equal(m.err.code, 0);
	mem_bytes(&m, out);
	mem_close(&m);
}

static void test_same_stream_as_one_thread(void **state)
{
	struct script sc;
	(void)state;

	script_init(&sc);
	for (size_t a = 0; a < NALGS; a++) {
		struct buf direct = {0}, piped = {0}, got = {0}, expect = {0};
		encode_script(&sc, algs[a], false, &direct);
		encode_script(&sc, algs[a], true, &piped);
		if (direct.len != piped.len || memcmp(direct.p, piped.p, direct.len) != 0)
			fail_msg("alg %d: piped stream differs (%zu bytes, %zu on one thread)", algs[a],
				 piped.len, direct.len);
		/* and it decodes to the files */
		struct mem m;
		mem_from(&m, piped.p, piped.len);
		struct token_dec *d = token_dec_new(algs[a], 31, &m.err);
		for (size_t f = 0; f < sizeof sc.files / sizeof sc.files[0]; f++) {
			const struct file_spec *fs = &sc.files[f];
			expect.len = 0;
			for (size_t i = 0; i < fs->nops; i++) {
				const struct op *op = &fs->ops[i];
				if (op->n)
					buf_add(&expect, op->p, op->n);
				else
					buf_add(&expect, block_at(fs->bs, op->block),
						block_len(fs->bs, op->block));
			}
			got.len = 0;
			assert_int_equal(decode_file(d, &m, fs->bs, &got, NULL), TOKEN_END);
			assert_int_equal(got.len, expect.len);
			assert_memory_equal(got.p, expect.p, got.len);
		}
		token_dec_free(d);
		mem_close(&m);
		free(direct.p);
		free(piped.p);
		free(got.p);
		free(expect.p);
	}
	script_free(&sc);
}

/* zlib with protocol 29 blocks larger than a batch (their bytes go into
 * the history): encoded on the sender's thread in their place, the
 * stream still the one-thread stream. */
static void test_block_larger_than_batch(void **state)
{
	struct buf data = {0}, direct = {0}, piped = {0}, got = {0}, expect = {0};
	const int32_t blen = 300000;
	(void)state;

	text_bytes(&data, 3 * (size_t)blen, 11);
	struct basis bs = {data.p, 3, blen, 0};
	struct op ops[] = {{data.p + 1000, 200000, 0}, {NULL, 0, 0}, {data.p + 7, 50000, 0},
			   {NULL, 0, 2}, {NULL, 0, 1}};
	size_t nops = sizeof ops / sizeof ops[0];
	for (int piped_run = 0; piped_run < 2; piped_run++) {
		struct mem m;
		mem_open(&m);
		struct token_enc *e = token_enc_new(CPRES_ZLIB, 6, true, 29, &m.err);
		if (piped_run) {
			struct token_pipe *p = token_pipe_new(e, &m.out, &m.err);
			assert_non_null(p);
			encode_file_piped(p, CPRES_ZLIB, &bs, ops, nops, false);
			token_pipe_free(p);
		} else {
			encode_file(e, &m, &bs, ops, nops, false, &expect);
		}
		token_enc_free(e);
		mem_bytes(&m, piped_run ? &piped : &direct);
		mem_close(&m);
	}
	assert_int_equal(piped.len, direct.len);
	assert_memory_equal(piped.p, direct.p, direct.len);
	assert_int_equal(decode_bytes(CPRES_ZLIB, 29, &piped, &bs, &got), TOKEN_END);
	assert_int_equal(got.len, expect.len);
	assert_memory_equal(got.p, expect.p, got.len);
	free(data.p);
	free(direct.p);
	free(piped.p);
	free(got.p);
	free(expect.p);
}

/* Data the encoder stores is encoded on the sender's own thread: the
 * thread is handed the batches queued before the compressor found the
 * data incompressible, and none after; compressible data after it goes to
 * the thread again. */
static void test_stored_data_stays_on_the_senders_thread(void **state)
{
	struct mem m;
	struct buf noise = {0}, text = {0};
	(void)state;

	random_bytes(&noise, 4 * 1024 * 1024);
	text_bytes(&text, 3 * 1024 * 1024, 9);
	mem_open(&m);
	struct token_enc *e = token_enc_new(CPRES_ZSTD, 3, true, 31, &m.err);
	struct token_pipe *p = token_pipe_new(e, &m.out, &m.err);
	assert_non_null(p);
	struct op stored[] = {{noise.p, noise.len, 0}};
	struct op compressed[] = {{text.p, text.len, 0}};
	encode_file_piped(p, CPRES_ZSTD, NULL, stored, 1, false);
	uint64_t after_noise = token_pipe_handed(p);
	/* 32 batches of 128 KiB were it all handed over; the sender runs
	 * at most TOKEN_PIPE_BATCHES ahead of the compressor's verdict */
	assert_true(after_noise <= 2 * TOKEN_PIPE_BATCHES);
	encode_file_piped(p, CPRES_ZSTD, NULL, compressed, 1, false);
	assert_true(token_pipe_handed(p) - after_noise >= 20);
	token_pipe_free(p);
	token_enc_free(e);
	assert_int_equal(m.err.code, 0);
	struct buf out = {0}, got = {0};
	mem_bytes(&m, &out);
	mem_close(&m);
	struct mem in;
	mem_from(&in, out.p, out.len);
	struct token_dec *d = token_dec_new(CPRES_ZSTD, 31, &in.err);
	assert_int_equal(decode_file(d, &in, NULL, &got, NULL), TOKEN_END);
	assert_int_equal(got.len, noise.len);
	assert_memory_equal(got.p, noise.p, noise.len);
	got.len = 0;
	assert_int_equal(decode_file(d, &in, NULL, &got, NULL), TOKEN_END);
	assert_int_equal(got.len, text.len);
	assert_memory_equal(got.p, text.p, text.len);
	token_dec_free(d);
	mem_close(&in);
	free(out.p);
	free(got.p);
	free(noise.p);
	free(text.p);
}

/* A write that fails on the compressor thread fails the file, and the
 * sender's further calls return false instead of waiting for room. */
static void test_failure_reaches_sender(void **state)
{
	struct wire_error err;
	struct wire_out out;
	struct buf noise = {0};
	(void)state;

	random_bytes(&noise, 32768);
	int fd = open("/dev/null", O_RDONLY); /* every write fails */
	assert_true(fd >= 0);
	wire_error_init(&err);
	wire_out_init(&out, fd, &err);
	struct token_enc *e = token_enc_new(CPRES_LZ4, 0, false, 31, &err);
	struct token_pipe *p = token_pipe_new(e, &out, &err);
	assert_non_null(p);
	assert_true(token_pipe_begin(p, false));
	bool ok = true;
	for (int i = 0; ok && i < 100000; i++) /* at most 3 GiB: far past the buffers */
		ok = token_pipe_literal(p, noise.p, noise.len);
	assert_false(ok);
	assert_false(token_pipe_end(p, true));
	assert_int_equal(wire_error_code(&err), RERR_STREAMIO);
	/* the failure stands for later files */
	assert_false(token_pipe_begin(p, false) && token_pipe_end(p, true));
	token_pipe_free(p);
	token_enc_free(e);
	wire_out_free(&out);
	close(fd);
	free(noise.p);
}

/* A file the sender abandons (a read failed) ends false, without its end
 * token, and the thread stops cleanly. */
static void test_abandoned_file(void **state)
{
	struct mem m;
	struct buf text = {0};
	(void)state;

	text_bytes(&text, 600 * 1024, 3);
	mem_open(&m);
	struct token_enc *e = token_enc_new(CPRES_ZSTD, 3, false, 31, &m.err);
	struct token_pipe *p = token_pipe_new(e, &m.out, &m.err);
	assert_non_null(p);
	assert_true(token_pipe_begin(p, false));
	for (size_t off = 0; off < text.len; off += 32768)
		assert_true(token_pipe_literal(p, text.p + off,
					       text.len - off < 32768 ? text.len - off : 32768));
	assert_false(token_pipe_end(p, false));
	token_pipe_free(p);
	token_enc_free(e);
	mem_close(&m);
	free(text.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_stream_as_one_thread),
		cmocka_unit_test(test_block_larger_than_batch),
		cmocka_unit_test(test_stored_data_stays_on_the_senders_thread),
		cmocka_unit_test(test_failure_reaches_sender),
		cmocka_unit_test(test_abandoned_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
