/*
 * The lz4 codec of the token stream (the format: token.c). Each chunk is
 * an independent LZ4 block: no state between chunks or files.
 */
#include <string.h>

#include <lz4.h>

#include "proto/delta/token_int.h"

/* -- the encoder -- */

/* An lz4 block holding n bytes as literals only: no compression work. */
static size_t lz4_raw_block(uint8_t *dst, const uint8_t *src, size_t n)
{
	size_t o = 0;

	if (n < 15) {
		dst[o++] = (uint8_t)(n << 4);
	} else {
		size_t rest = n - 15;
		dst[o++] = 0xF0;
		while (rest >= 255) {
			dst[o++] = 255;
			rest -= 255;
		}
		dst[o++] = (uint8_t)rest;
	}
	memcpy(dst + o, src, n);
	return o + n;
}

/* -- lz4 -- */

static bool lz4_literal(struct token_enc *e, struct wire_out *out, const uint8_t *p, size_t n)
{
	while (n > 0) {
		size_t k = n, c;
		if (e->setting <= 0) {
			if (k > LZ4_RAW_PIECE)
				k = LZ4_RAW_PIECE;
			c = lz4_raw_block(e->obuf + 2, p, k);
		} else {
			if (k > TOKEN_MAX_DATA)
				k = TOKEN_MAX_DATA;
			for (;;) {
				/* acceleration 1 is LZ4_compress_default */
				int r = LZ4_compress_fast((const char *)p, (char *)e->obuf + 2, (int)k,
							  LZ4_COMPRESSBOUND(TOKEN_MAX_DATA), e->setting);
				if (r <= 0)
					return tok_enc_fail(e, "LZ4_compress_fast", r);
				c = (size_t)r;
				if (c <= TOKEN_MAX_DATA)
					break;
				k /= 2; /* as rsync: halve the input until it fits */
			}
		}
		if (!tok_put_chunk(e, out, e->obuf + 2, c))
			return false;
		p += k;
		n -= k;
	}
	return true;
}

/* lz4 has no levels on the wire; ferry's adaptive rule varies the
 * acceleration. */
static int lz4_resolve_level(int level)
{
	(void)level;
	return 0;
}

static bool lz4_is_store(int setting)
{
	return setting <= 0;
}

/* -- the decoder -- */

static size_t lz4_dec_cap(void)
{
	return LZ4_OUT_MAX;
}

static int next_lz4(struct token_dec *d, struct wire_in *in, const uint8_t **data,
		    size_t *len, int32_t *block)
{
	for (;;) {
		uint8_t flag;
		const uint8_t *chunk;
		size_t n;
		int got = tok_dec_next_chunk(d, in, &flag, &chunk, &n);
		if (got == TOK_NEXT_ERROR)
			return TOKEN_ERROR;
		if (got == TOK_NEXT_CHUNK) {
			if (n == 0)
				continue;
			int r = LZ4_decompress_safe((const char *)chunk, (char *)d->dbuf, (int)n,
						    (int)d->dcap);
			if (r < 0)
				return tok_dec_fail(d, "lz4 decompression failed (%ld)", r);
			if (r == 0)
				continue;
			*data = d->dbuf;
			*len = (size_t)r;
			return TOKEN_DATA;
		}
		return tok_dec_token(d, in, flag, block);
	}
}

const struct token_codec token_codec_lz4 = {
	.alg = CPRES_LZ4,
	.name = "lz4",
	.resolve_level = lz4_resolve_level,
	.is_store = lz4_is_store,
	.compress = lz4_literal,
	.dec_cap = lz4_dec_cap,
	.next = next_lz4,
};
