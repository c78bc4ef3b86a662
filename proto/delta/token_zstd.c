/*
 * The zstd codec of the token stream (the format: token.c). One context
 * for the whole session, flushed with ZSTD_e_flush before tokens and at
 * the end of every file, its output sent in full chunks (a short one only
 * at those flushes), as rsync does.
 */
#include <stdlib.h>
#include <string.h>

#include "proto/delta/token_int.h"

/* -- the encoder -- */

/* Send the zstd output gathered in obuf as one chunk. */
static bool zstd_chunk_out(struct token_enc *e, struct wire_out *out)
{
	size_t n = e->zs_opos;

	e->zs_opos = 0;
	return n == 0 || tok_put_chunk(e, out, e->obuf + 2, n);
}

/* Add bytes to the chunk being gathered, sending every one that fills
 * (whole chunks of Raw block data straight from where they are). */
static bool zstd_chunk_add(struct token_enc *e, struct wire_out *out, const uint8_t *p,
			   size_t n)
{
	while (n > 0) {
		if (e->zs_opos == 0 && n >= TOKEN_MAX_DATA) {
			if (!tok_put_chunk(e, out, p, TOKEN_MAX_DATA))
				return false;
			p += TOKEN_MAX_DATA;
			n -= TOKEN_MAX_DATA;
			continue;
		}
		size_t k = TOKEN_MAX_DATA - e->zs_opos;
		if (k > n)
			k = n;
		memcpy(e->obuf + 2 + e->zs_opos, p, k);
		e->zs_opos += k;
		p += k;
		n -= k;
		if (e->zs_opos == TOKEN_MAX_DATA && !zstd_chunk_out(e, out))
			return false;
	}
	return true;
}

/* Compress into the chunk being gathered (mirrors rsync token.c:
 * send_zstd_token(), whose output buffer also goes out only when full or
 * when a flush is complete). */
static bool zstd_run(struct token_enc *e, struct wire_out *out, const uint8_t *p, size_t n,
		     ZSTD_EndDirective mode)
{
	ZSTD_inBuffer in = {p, n, 0};
	size_t r;

	do {
		ZSTD_outBuffer ob = {e->obuf + 2, TOKEN_MAX_DATA, e->zs_opos};
		r = ZSTD_compressStream2(e->zc, &ob, &in, mode);
		if (ZSTD_isError(r))
			return wire_fail(e->err, RERR_STREAMIO, "compression failed: %s",
					 ZSTD_getErrorName(r));
		e->zs_opos = ob.pos;
		if (e->zs_opos == TOKEN_MAX_DATA && !zstd_chunk_out(e, out))
			return false;
	} while (mode == ZSTD_e_continue ? in.pos < in.size : r != 0);
	if (n)
		e->zs_frame_open = true;
	if (mode == ZSTD_e_end)
		e->zs_frame_open = false;
	return true;
}

/* Input zstd has compressed and the output it made so far in this frame,
 * read without a flush (0 before the frame's first data). Windows are
 * measured between calls, and every frame change starts a new window. */
static void zstd_progress(const struct token_enc *e, uint64_t *in, uint64_t *out)
{
	*in = *out = 0;
	if (e->zs_frame_open && !e->zs_raw) {
		ZSTD_frameProgression fp = ZSTD_getFrameProgression(e->zc);
		*in = fp.consumed;
		*out = fp.produced;
	}
}

/*
 * Storing with zstd (the adaptive rule's "no effort", and skipped
 * suffixes) skips the compressor: the data goes out as Raw blocks of a
 * frame written here (RFC 8878: magic, a descriptor with no content size,
 * checksum or dictionary, a 128 KiB window; each block a 3-byte header
 * with its size, up to 128 KiB, spanning chunks). The receiver's stream
 * decoder reads it like any frame.
 */
#define ZSTD_RAW_FRAME_HEADER 6
#define ZSTD_RAW_BLOCK_HEADER 3
/* One Raw block of n bytes (`last`: the frame's last block). */
static bool zstd_raw_block(struct token_enc *e, struct wire_out *out, const uint8_t *p,
			   size_t n, bool last)
{
	uint32_t bh = (uint32_t)n << 3 | (last ? 1u : 0u); /* Block_Type 0: Raw */
	uint8_t hdr[ZSTD_RAW_BLOCK_HEADER] = {(uint8_t)bh, (uint8_t)(bh >> 8), (uint8_t)(bh >> 16)};

	return zstd_chunk_add(e, out, hdr, sizeof hdr) && zstd_chunk_add(e, out, p, n);
}

/* Send the Raw block gathered so far (before a token, the end of the
 * file or of the frame). */
static bool zstd_raw_flush(struct token_enc *e, struct wire_out *out, bool last)
{
	size_t n = e->zs_block_len;

	e->zs_block_len = 0;
	if (n == 0 && !last)
		return true;
	return zstd_raw_block(e, out, e->zs_block, n, last);
}

static bool zstd_raw_literal(struct token_enc *e, struct wire_out *out, const uint8_t *p,
			     size_t n)
{
	static const uint8_t frame_header[ZSTD_RAW_FRAME_HEADER] = {
		0x28, 0xB5, 0x2F, 0xFD, /* ZSTD_MAGICNUMBER, little-endian */
		0x00,                   /* Frame_Header_Descriptor: nothing optional */
		7 << 3,                 /* Window_Descriptor: 2^(10+7) = 128 KiB */
	};

	if (!e->zs_raw_open) {
		if (!zstd_chunk_add(e, out, frame_header, sizeof frame_header))
			return false;
		e->zs_raw_open = true;
	}
	while (n > 0) {
		if (e->zs_block_len == 0 && n >= ZSTD_RAW_BLOCK_MAX) {
			/* a whole block straight from the input: no copy */
			if (!zstd_raw_block(e, out, p, ZSTD_RAW_BLOCK_MAX, false))
				return false;
			p += ZSTD_RAW_BLOCK_MAX;
			n -= ZSTD_RAW_BLOCK_MAX;
			continue;
		}
		size_t k = ZSTD_RAW_BLOCK_MAX - e->zs_block_len;
		if (k > n)
			k = n;
		memcpy(e->zs_block + e->zs_block_len, p, k);
		e->zs_block_len += k;
		p += k;
		n -= k;
		if (e->zs_block_len == ZSTD_RAW_BLOCK_MAX && !zstd_raw_flush(e, out, false))
			return false;
	}
	return true;
}

/* End our own frame: its last block carries the last bit. */
static bool zstd_raw_end(struct token_enc *e, struct wire_out *out)
{
	if (!e->zs_raw_open)
		return true;
	e->zs_raw_open = false;
	return zstd_raw_flush(e, out, true);
}

/* Everything literal so far out on the wire, before a token or the end
 * of the file. */
static bool zstd_flush(struct token_enc *e, struct wire_out *out)
{
	if (e->need_flush) {
		e->need_flush = false;
		if (!zstd_run(e, out, NULL, 0, ZSTD_e_flush))
			return false;
	}
	return zstd_raw_flush(e, out, false) && zstd_chunk_out(e, out);
}

/* The compression parameters of a setting: its level, and for wide mode
 * (zadapt.h) a window of 2^ZADAPT_WIDE_LOG with long-distance matching;
 * otherwise both back to the level's own (0). */
static bool zstd_params(struct token_enc *e, int level, bool wide)
{
	size_t r = ZSTD_CCtx_setParameter(e->zc, ZSTD_c_compressionLevel, level);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(e->zc, ZSTD_c_windowLog, wide ? ZADAPT_WIDE_LOG : 0);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(e->zc, ZSTD_c_enableLongDistanceMatching, wide ? 1 : 0);
	/* a long match is looked up from every 2^ZADAPT_WIDE_HASH_RATE th
	 * position, not every 2^7 th (zstd's default for this window): on
	 * a PGDATA the same bytes for about half the added time */
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(e->zc, ZSTD_c_ldmHashRateLog,
					   wide ? ZADAPT_WIDE_HASH_RATE : 0);
	if (ZSTD_isError(r))
		return wire_fail(e->err, RERR_STREAMIO, "compression failed: %s",
				 ZSTD_getErrorName(r));
	return true;
}

static bool zstd_set_level(struct token_enc *e, struct wire_out *out, int setting)
{
	int level = zadapt_level(setting);
	bool wide = zadapt_is_wide(setting);
	/* raw blocks for "no effort" while adapting or for a skipped file;
	 * an explicit --compress-level runs the compressor at that level */
	bool raw = level == ZSTD_minCLevel() && (e->za.adaptive || e->file_minimal);

	if (level == e->zs_level && raw == e->zs_raw && wide == e->zs_wide)
		return true;
	/* The parameters only change between frames: end the current one
	 * (the receiver's stream decoder goes on with the next frame). */
	if (!zstd_raw_end(e, out))
		return false;
	if (e->zs_frame_open && !zstd_run(e, out, NULL, 0, ZSTD_e_end))
		return false;
	if (!zstd_params(e, level, wide))
		return false;
	e->zs_level = level;
	e->zs_wide = wide;
	e->zs_raw = raw;
	e->need_flush = false;
	return true;
}

static int zstd_resolve_level(int level)
{
	if (level == 0 || level == TOKEN_LEVEL_DEFAULT)
		return ZSTD_CLEVEL_DEFAULT;
	int lo = ZSTD_minCLevel(), hi = ZSTD_maxCLevel();
	return level < lo ? lo : level > hi ? hi : level;
}

static bool zstd_is_store(int setting)
{
	return setting == ZSTD_minCLevel();
}

static bool zstd_enc_init(struct token_enc *e, int level)
{
	e->zs_block = malloc(ZSTD_RAW_BLOCK_MAX);
	if (!e->zs_block)
		return wire_fail(e->err, RERR_MALLOC, "out of memory");
	e->zc = ZSTD_createCCtx();
	if (!e->zc || ZSTD_isError(ZSTD_CCtx_setParameter(e->zc, ZSTD_c_compressionLevel, level)))
		return wire_fail(e->err, RERR_STREAMIO, "compression init failed");
	e->zs_level = level;
	return true;
}

static void zstd_enc_free(struct token_enc *e)
{
	ZSTD_freeCCtx(e->zc);
	free(e->zs_block);
}

static bool zstd_enc_begin(struct token_enc *e, struct wire_out *out, int setting)
{
	if (!zstd_set_level(e, out, setting))
		return false;
	zstd_progress(e, &e->zs_in0, &e->zs_out0);
	return true;
}

static bool zstd_compress(struct token_enc *e, struct wire_out *out, const uint8_t *p, size_t n)
{
	if (e->zs_raw)
		return zstd_raw_literal(e, out, p, n);
	bool ok = zstd_run(e, out, p, n, ZSTD_e_continue);
	e->need_flush = true;
	return ok;
}

/* zstd says how much of the window it has compressed (it works in blocks
 * of 128 KiB) without a flush, which would cost bytes; less than a first
 * window is no evidence yet. */
static bool zstd_window_data(struct token_enc *e, struct wire_out *out, struct zadapt_window *w,
			     bool *evidence)
{
	uint64_t in, o;

	(void)out;
	zstd_progress(e, &in, &o);
	if (in - e->zs_in0 < ZADAPT_FIRST_WINDOW) {
		*evidence = false;
		return true;
	}
	*evidence = true;
	w->in = in - e->zs_in0;
	w->out = o - e->zs_out0;
	return true;
}

static void zstd_window_start(struct token_enc *e)
{
	zstd_progress(e, &e->zs_in0, &e->zs_out0);
}

/* -- the decoder -- */

static size_t zstd_dec_cap(void)
{
	return ZSTD_DStreamOutSize() * 2;
}

static bool zstd_dec_init(struct token_dec *d)
{
	if (!(d->zd = ZSTD_createDCtx()))
		return wire_fail(d->err, RERR_STREAMIO, "zstd init failed");
	return true;
}

static void zstd_dec_free(struct token_dec *d)
{
	ZSTD_freeDCtx(d->zd);
}

/* zstd keeps its context (and any frame in progress) across files; a
 * chunk is always consumed whole before its file ends. */
static void zstd_dec_begin(struct token_dec *d)
{
	d->zs_inflating = false;
}

/* A session and parameter reset is a new context's state (the frame in
 * progress and any dictionary dropped), with its buffers kept. */
static void zstd_dec_reset(struct token_dec *d)
{
	ZSTD_DCtx_reset(d->zd, ZSTD_reset_session_and_parameters);
	d->zin = (ZSTD_inBuffer){NULL, 0, 0};
	d->zs_inflating = false;
}

/* Take the chunk that follows when it is already buffered, so that one
 * call fills the output buffer from several chunks (and the receiver
 * writes it in one piece). */
static bool zstd_next_chunk_buffered(struct token_dec *d, struct wire_in *in)
{
	uint8_t flag;
	const uint8_t *chunk;
	size_t n;

	if (!wire_peek_buffered(in, &flag) || (flag & 0xC0) != DEFLATED_DATA)
		return false;
	if (tok_dec_next_chunk(d, in, &flag, &chunk, &n) != TOK_NEXT_CHUNK)
		return false;
	d->zin = (ZSTD_inBuffer){chunk, n, 0};
	d->zs_inflating = n > 0;
	return true;
}

/* Decompress the chunks in hand into dbuf until it is full or the input
 * runs out. Returns the bytes made, or -1 on error. */
static ssize_t zstd_inflate(struct token_dec *d, struct wire_in *in)
{
	ZSTD_outBuffer ob = {d->dbuf, d->dcap, 0};

	while (d->zs_inflating) {
		size_t had_in = d->zin.pos, had_out = ob.pos;
		size_t r = ZSTD_decompressStream(d->zd, &ob, &d->zin);
		if (ZSTD_isError(r)) {
			wire_fail(d->err, RERR_STREAMIO, "zstd decompression failed: %s",
				  ZSTD_getErrorName(r));
			return -1;
		}
		if (d->zin.pos == d->zin.size && ob.pos < ob.size) {
			d->zs_inflating = false;
			if (!zstd_next_chunk_buffered(d, in) && d->err->code)
				return -1;
			continue;
		}
		if (ob.pos == had_out && d->zin.pos == had_in) {
			tok_dec_fail(d, "zstd decompression made no progress (%ld)", 0);
			return -1;
		}
		if (ob.pos == ob.size)
			break;
	}
	return (ssize_t)ob.pos;
}

static int next_zstd(struct token_dec *d, struct wire_in *in, const uint8_t **data,
		     size_t *len, int32_t *block)
{
	for (;;) {
		if (d->zs_inflating) {
			ssize_t n = zstd_inflate(d, in);
			if (n < 0)
				return TOKEN_ERROR;
			if (n == 0)
				continue;
			*data = d->dbuf;
			*len = (size_t)n;
			return TOKEN_DATA;
		}
		uint8_t flag;
		const uint8_t *chunk;
		size_t n;
		int got = tok_dec_next_chunk(d, in, &flag, &chunk, &n);
		if (got == TOK_NEXT_ERROR)
			return TOKEN_ERROR;
		if (got == TOK_NEXT_CHUNK) {
			d->zin = (ZSTD_inBuffer){chunk, n, 0};
			d->zs_inflating = n > 0;
			continue;
		}
		return tok_dec_token(d, in, flag, block);
	}
}

const struct token_codec token_codec_zstd = {
	.alg = CPRES_ZSTD,
	.name = "zstd",
	.resolve_level = zstd_resolve_level,
	.is_store = zstd_is_store,
	.enc_init = zstd_enc_init,
	.enc_free = zstd_enc_free,
	.enc_begin = zstd_enc_begin,
	.compress = zstd_compress,
	.flush = zstd_flush,
	.set_level = zstd_set_level,
	.window_data = zstd_window_data,
	.window_start = zstd_window_start,
	.dec_cap = zstd_dec_cap,
	.dec_init = zstd_dec_init,
	.dec_free = zstd_dec_free,
	.dec_begin = zstd_dec_begin,
	.dec_reset = zstd_dec_reset,
	.next = next_zstd,
};
