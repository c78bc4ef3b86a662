/*
 * The pieces of the compressed token stream that token.c and every codec
 * (token_zlib.c, token_zstd.c, token_lz4.c) write and read: DEFLATED_DATA
 * chunks and token flags, and the errors. Below both, so that the codecs
 * and token.c, which holds the codec table, call down only.
 */
#include "proto/delta/token_int.h"

bool tok_enc_fail(struct token_enc *e, const char *what, long code)
{
	return wire_fail(e->err, RERR_STREAMIO, "compression failed: %s (%ld)", what, code);
}

/* One DEFLATED_DATA chunk (n <= TOKEN_MAX_DATA). */
bool tok_put_chunk(struct token_enc *e, struct wire_out *out, const uint8_t *p, size_t n)
{
	uint8_t hdr[2] = {(uint8_t)(DEFLATED_DATA | (n >> 8)), (uint8_t)n};

	e->comp_out += (int64_t)n;
	return wire_write(out, hdr, 2) && wire_write(out, p, n);
}

int tok_dec_fail(struct token_dec *d, const char *fmt, long v)
{
	wire_fail(d->err, RERR_STREAMIO, fmt, v);
	return TOKEN_ERROR;
}

/* A token flag (not END_FLAG, not data): the block it names, checked
 * against the file's block count. */
static int tok_dec_flag(struct token_dec *d, struct wire_in *in, uint8_t flag, int32_t *block)
{
	int64_t t;

	if (flag & TOKEN_REL) {
		t = (int64_t)d->rx_token + (flag & 0x3F);
	} else if (flag == TOKEN_LONG || flag == TOKENRUN_LONG) {
		int32_t v;
		if (!wire_read_i32(in, &v))
			return TOKEN_ERROR;
		t = v;
	} else {
		return tok_dec_fail(d, "invalid flag byte 0x%02lx in compressed stream", flag);
	}
	if (t < 0 || t >= d->count)
		return tok_dec_fail(d, "invalid token number %ld in compressed stream", (long)t);
	d->rx_token = (int32_t)t;
	if (flag & TOKEN_REL ? flag & 0x40 : flag & 1) { /* TOKENRUN_*: a 16-bit count follows */
		uint8_t lo, hi;
		if (!wire_read_u8(in, &lo) || !wire_read_u8(in, &hi))
			return TOKEN_ERROR;
		int32_t run = lo | (hi << 8);
		if (run == 0 || t + run >= d->count)
			return tok_dec_fail(d, "invalid token run of %ld blocks in compressed stream", run);
		d->run_left = run;
	}
	*block = d->rx_token;
	return TOKEN_BLOCK;
}

/* Read one chunk's payload: in place in the input buffer when it lies
 * whole there (valid until the next read), else copied into cbuf. */
static const uint8_t *tok_read_chunk(struct token_dec *d, struct wire_in *in, uint8_t flag,
				     size_t *n)
{
	uint8_t lo;

	if (!wire_read_u8(in, &lo))
		return NULL;
	*n = ((size_t)(flag & 0x3F) << 8) | lo;
	return wire_read_view(in, d->cbuf, *n);
}

int tok_dec_next_chunk(struct token_dec *d, struct wire_in *in, uint8_t *flag,
		       const uint8_t **chunk, size_t *n)
{
	if (!wire_read_u8(in, flag))
		return TOK_NEXT_ERROR;
	if ((*flag & 0xC0) != DEFLATED_DATA)
		return TOK_NEXT_FLAG;
	*chunk = tok_read_chunk(d, in, *flag, n);
	return *chunk ? TOK_NEXT_CHUNK : TOK_NEXT_ERROR;
}

int tok_dec_token(struct token_dec *d, struct wire_in *in, uint8_t flag, int32_t *block)
{
	if (flag == END_FLAG)
		return TOKEN_END;
	return tok_dec_flag(d, in, flag, block);
}
