/*
 * The zlib and zlibx codecs of the token stream (the format: token.c).
 * Raw deflate, reset for every file, flushed with Z_SYNC_FLUSH before
 * every token and at the end; the flush's trailing 00 00 FF FF is not sent
 * and the receiver supplies it. zlib (not zlibx) also puts every matched
 * block into both windows: the sender with deflateSetDictionary (which,
 * for raw deflate after a flush, appends to the window exactly as rsync's
 * Z_INSERT_ONLY does), the receiver by inflating the block as stored
 * blocks.
 */
#include <stdlib.h>
#include <string.h>

#include "proto/delta/token_int.h"

/* -- the encoder -- */

/* Send pend as chunks, keeping its last `keep` bytes back; with keep > 0
 * only whole chunks go. */
static bool zlib_send(struct token_enc *e, struct wire_out *out, size_t keep)
{
	size_t off = 0;

	while (e->pend_len - off > keep) {
		size_t n = e->pend_len - off - keep;
		if (n > TOKEN_MAX_DATA)
			n = TOKEN_MAX_DATA;
		else if (keep && n < TOKEN_MAX_DATA)
			break;
		if (!tok_put_chunk(e, out, e->pend + off, n))
			return false;
		off += n;
	}
	if (off) {
		memmove(e->pend, e->pend + off, e->pend_len - off);
		e->pend_len -= off;
	}
	return true;
}

/* Run deflate over what is in z.next_in with `flush`, collecting output
 * in pend and sending whole chunks (the last 4 bytes are always held back:
 * they may be the sync marker). */
static bool zlib_run(struct token_enc *e, struct wire_out *out, int flush)
{
	for (;;) {
		e->z.next_out = e->pend + e->pend_len;
		e->z.avail_out = (uInt)(ZLIB_PEND_CAP - e->pend_len);
		int r = deflate(&e->z, flush);
		e->pend_len = ZLIB_PEND_CAP - e->z.avail_out;
		if (r != Z_OK && r != Z_BUF_ERROR)
			return tok_enc_fail(e, "deflate", r);
		if (!zlib_send(e, out, 4))
			return false;
		if (e->z.avail_in == 0 && e->z.avail_out != 0)
			return true;
		if (r == Z_BUF_ERROR && e->z.avail_out != 0)
			return tok_enc_fail(e, "deflate made no progress", r);
	}
}

/* Flush before a token or the end (`trim`: drop the 00 00 FF FF marker,
 * the receiver adds it), or in the middle of literal data (`trim` false:
 * the marker is held back, to go out in front of more data or to be
 * dropped if a token or the end comes next, since the receiver adds one
 * after every run of data). */
static bool zlib_flush(struct token_enc *e, struct wire_out *out, bool trim)
{
	static const uint8_t marker[4] = {0, 0, 0xFF, 0xFF};

	e->z.next_in = NULL;
	e->z.avail_in = 0;
	if (!zlib_run(e, out, Z_SYNC_FLUSH))
		return false;
	if (e->pend_len < 4 || memcmp(e->pend + e->pend_len - 4, marker, 4) != 0)
		return tok_enc_fail(e, "no sync marker after a flush", (long)e->pend_len);
	e->need_flush = false;
	e->pend_len -= 4;
	if (!zlib_send(e, out, 0))
		return false;
	if (!trim) {
		memcpy(e->pend, marker, 4);
		e->pend_len = 4;
		e->marker_held = true;
		return true;
	}
	e->marker_held = false;
	return true;
}

/* -- zlib -- */

static bool zlib_set_level(struct token_enc *e, struct wire_out *out, int level)
{
	if (level == e->z_level)
		return true;
	e->z.next_in = NULL;
	e->z.avail_in = 0;
	e->z.next_out = e->pend + e->pend_len;
	e->z.avail_out = (uInt)(ZLIB_PEND_CAP - e->pend_len);
	size_t had = e->pend_len;
	int r = deflateParams(&e->z, level, Z_DEFAULT_STRATEGY);
	e->pend_len = ZLIB_PEND_CAP - e->z.avail_out;
	if (r != Z_OK)
		return tok_enc_fail(e, "deflateParams", r);
	if (e->pend_len != had) /* a held marker is no longer last */
		e->marker_held = false;
	e->z_level = level;
	return zlib_send(e, out, 4);
}

static int zlib_resolve_level(int level)
{
	if (level == -1 || level == TOKEN_LEVEL_DEFAULT) /* Z_DEFAULT_COMPRESSION */
		return 6;
	if (level == 0) /* zlib's "off" level: no compression at all */
		return TOKEN_LEVEL_OFF;
	return level < 1 ? 1 : level > 9 ? 9 : level;
}

static bool zlib_is_store(int setting)
{
	return setting == 0;
}

static bool zlib_enc_init(struct token_enc *e, int level)
{
	e->pend = malloc(ZLIB_PEND_CAP);
	if (!e->pend || deflateInit2(&e->z, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return wire_fail(e->err, RERR_STREAMIO, "compression init failed");
	e->z_ready = true;
	e->z_level = level;
	return true;
}

static void zlib_enc_free(struct token_enc *e)
{
	if (e->z_ready)
		deflateEnd(&e->z);
	free(e->pend);
}

static bool zlib_enc_begin(struct token_enc *e, struct wire_out *out, int setting)
{
	e->pend_len = 0;
	e->marker_held = false;
	if (deflateReset(&e->z) != Z_OK)
		return tok_enc_fail(e, "deflateReset", 0);
	return zlib_set_level(e, out, setting);
}

static bool zlib_compress(struct token_enc *e, struct wire_out *out, const uint8_t *p, size_t n)
{
	bool ok = true;

	/* deflate takes uInt lengths; pieces keep it simple */
	while (ok && n > 0) {
		size_t k = n > (1u << 30) ? (1u << 30) : n;
		e->z.next_in = (Bytef *)(uintptr_t)p;
		e->z.avail_in = (uInt)k;
		e->marker_held = false;
		ok = zlib_run(e, out, Z_NO_FLUSH);
		p += k;
		n -= k;
	}
	e->need_flush = true;
	return ok;
}

static bool zlib_flush_literals(struct token_enc *e, struct wire_out *out)
{
	if (e->marker_held && !e->need_flush) {
		/* the receiver supplies the marker itself */
		e->pend_len -= 4;
		e->marker_held = false;
		return zlib_send(e, out, 0);
	}
	if (!e->need_flush)
		return true;
	return zlib_flush(e, out, true);
}

/* A new level in the middle of a file: deflate is first brought to a
 * sync-flush point (the marker held back as usual), so deflateParams
 * emits nothing and the new level starts on a byte boundary inside the
 * same deflate stream; a file whose history has a gap (hist_gap) stays
 * stored. */
static bool zlib_apply(struct token_enc *e, struct wire_out *out, int setting)
{
	if (e->hist_gap && setting != 0)
		return true;
	if (e->need_flush && !zlib_flush(e, out, false))
		return false;
	return zlib_set_level(e, out, setting);
}

/* The window's output all counted: flushed first. */
static bool zlib_window_data(struct token_enc *e, struct wire_out *out, struct zadapt_window *w,
			     bool *evidence)
{
	*evidence = true;
	if (e->need_flush && !zlib_flush(e, out, false))
		return false;
	w->in = e->win_in;
	w->out = (uint64_t)(e->comp_out - e->win_out0);
	return true;
}

static bool zlib_enc_block(struct token_enc *e, const uint8_t *data, size_t len)
{
	if (e->setting == 0) {
		/* Stored blocks never refer back, so the history may skip the
		 * block; but then this file must stay stored (the receiver's
		 * window has the block, ours would not). */
		e->hist_gap = true;
		return true;
	}
	/* Into the history, in pieces of at most 0xFFFF bytes taken as
	 * see_deflate_token() takes them on the receiver: for protocol
	 * <= 30 every piece starts again at the block's start. */
	size_t off = 0, left = len;
	while (left > 0) {
		size_t n1 = left > STORED_MAX ? STORED_MAX : left;
		const uint8_t *src = data + (e->protocol >= 31 ? off : 0);
		int r = deflateSetDictionary(&e->z, src, (uInt)n1);
		if (r != Z_OK)
			return tok_enc_fail(e, "deflateSetDictionary", r);
		left -= n1;
		off += n1;
	}
	return true;
}

/* -- the decoder -- */

static bool zlib_dec_init(struct token_dec *d)
{
	if (inflateInit2(&d->z, -15) != Z_OK)
		return wire_fail(d->err, RERR_STREAMIO, "inflate init failed");
	d->z_ready = true;
	return true;
}

static void zlib_dec_free(struct token_dec *d)
{
	if (d->z_ready)
		inflateEnd(&d->z);
}

static void zlib_dec_begin(struct token_dec *d)
{
	inflateReset(&d->z);
	d->z_inflating = false;
	d->z_data = false;
}

/* inflateReset drops the window's history as well: what inflateInit2
 * left, with the allocations kept. */
static void zlib_dec_reset(struct token_dec *d)
{
	d->z.next_in = d->z.next_out = NULL;
	d->z.avail_in = d->z.avail_out = 0;
	zlib_dec_begin(d);
}

static int next_zlib(struct token_dec *d, struct wire_in *in, const uint8_t **data,
		     size_t *len, int32_t *block)
{
	for (;;) {
		if (d->z_inflating) {
			uInt had = d->z.avail_in;
			d->z.next_out = d->dbuf;
			d->z.avail_out = (uInt)d->dcap;
			int r = inflate(&d->z, Z_NO_FLUSH);
			size_t n = d->dcap - d->z.avail_out;
			if (r == Z_STREAM_END)
				return tok_dec_fail(d, "compressed data ended the deflate stream (%ld)", r);
			if (r != Z_OK && r != Z_BUF_ERROR)
				return tok_dec_fail(d, "inflate returned %ld", r);
			if (n == 0) {
				if (d->z.avail_in != 0 && d->z.avail_in == had)
					return tok_dec_fail(d, "inflate made no progress (%ld)", r);
				if (d->z.avail_in == 0)
					d->z_inflating = false;
				continue;
			}
			*data = d->dbuf;
			*len = n;
			return TOKEN_DATA;
		}
		uint8_t flag;
		const uint8_t *chunk;
		size_t n;
		int got = tok_dec_next_chunk(d, in, &flag, &chunk, &n);
		if (got == TOK_NEXT_ERROR)
			return TOKEN_ERROR;
		if (got == TOK_NEXT_CHUNK) {
			d->z.next_in = (Bytef *)(uintptr_t)chunk;
			d->z.avail_in = (uInt)n;
			d->z_inflating = n > 0;
			if (n)
				d->z_data = true;
			continue;
		}
		if (d->z_data) {
			/* Everything sent so far is inflated and drained; the
			 * sender left out the sync flush's 00 00 FF FF. */
			static const uint8_t marker[4] = {0, 0, 0xFF, 0xFF};
			if (!inflateSyncPoint(&d->z))
				return tok_dec_fail(d, "decompressor lost sync (%ld)", 0);
			d->z.next_in = (Bytef *)(uintptr_t)marker;
			d->z.avail_in = 4;
			d->z.next_out = d->dbuf;
			d->z.avail_out = (uInt)d->dcap;
			int r = inflate(&d->z, Z_SYNC_FLUSH);
			if (r != Z_OK || d->z.avail_in != 0 || d->z.avail_out != d->dcap)
				return tok_dec_fail(d, "inflate of the sync marker returned %ld", r);
			d->z_data = false;
		}
		return tok_dec_token(d, in, flag, block);
	}
}

/* Inflate p[0..n) as stored blocks, throwing the output away. */
static bool see_stored(struct token_dec *d, const uint8_t *p, size_t n)
{
	while (n > 0) {
		size_t k = n > STORED_MAX ? STORED_MAX : n;
		uint8_t hdr[5] = {0, (uint8_t)k, (uint8_t)(k >> 8), (uint8_t)~k, (uint8_t)(~k >> 8)};
		const uint8_t *parts[2] = {hdr, p};
		size_t lens[2] = {5, k};
		for (int i = 0; i < 2; i++) {
			d->z.next_in = (Bytef *)(uintptr_t)parts[i];
			d->z.avail_in = (uInt)lens[i];
			do {
				d->z.next_out = d->dbuf;
				d->z.avail_out = (uInt)d->dcap;
				int r = inflate(&d->z, Z_SYNC_FLUSH);
				if (r != Z_OK && r != Z_BUF_ERROR) {
					tok_dec_fail(d, "inflate (token) returned %ld", r);
					return false;
				}
				if (r == Z_BUF_ERROR && d->z.avail_in != 0) {
					tok_dec_fail(d, "inflate (token) made no progress (%ld)", r);
					return false;
				}
			} while (d->z.avail_in != 0 || d->z.avail_out == 0);
		}
		p += k;
		n -= k;
	}
	return true;
}

static bool zlib_dec_see(struct token_dec *d, const uint8_t *p, size_t n, size_t off,
			 size_t blk_len)
{
	if (d->protocol >= 31)
		return see_stored(d, p, n);
	/* Protocol <= 30 (see_deflate_token's old bug, kept on the wire):
	 * every piece of at most 0xFFFF bytes is taken from the block's start.
	 * Only the last 32 KiB reach the window, so the last full piece and the
	 * final one are enough. */
	if (off != 0)
		return true;
	if (blk_len <= STORED_MAX)
		return see_stored(d, p, n < blk_len ? n : blk_len);
	if (n < STORED_MAX) {
		tok_dec_fail(d, "internal: short first piece of a block (%ld)", (long)n);
		return false;
	}
	size_t rem = blk_len % STORED_MAX;
	return see_stored(d, p, STORED_MAX) && (rem == 0 || see_stored(d, p, rem));
}

const struct token_codec token_codec_zlibx = {
	.alg = CPRES_ZLIBX,
	.name = "zlibx",
	.resolve_level = zlib_resolve_level,
	.is_store = zlib_is_store,
	.enc_init = zlib_enc_init,
	.enc_free = zlib_enc_free,
	.enc_begin = zlib_enc_begin,
	.compress = zlib_compress,
	.flush = zlib_flush_literals,
	.set_level = zlib_apply,
	.window_data = zlib_window_data,
	.dec_init = zlib_dec_init,
	.dec_free = zlib_dec_free,
	.dec_begin = zlib_dec_begin,
	.dec_reset = zlib_dec_reset,
	.next = next_zlib,
};

/* zlib: zlibx, with matched blocks in the history on both sides. */
const struct token_codec token_codec_zlib = {
	.alg = CPRES_ZLIB,
	.name = "zlib",
	.resolve_level = zlib_resolve_level,
	.is_store = zlib_is_store,
	.enc_init = zlib_enc_init,
	.enc_free = zlib_enc_free,
	.enc_begin = zlib_enc_begin,
	.compress = zlib_compress,
	.flush = zlib_flush_literals,
	.set_level = zlib_apply,
	.window_data = zlib_window_data,
	.enc_block = zlib_enc_block,
	.dec_init = zlib_dec_init,
	.dec_free = zlib_dec_free,
	.dec_begin = zlib_dec_begin,
	.dec_reset = zlib_dec_reset,
	.next = next_zlib,
	.dec_see = zlib_dec_see,
};
