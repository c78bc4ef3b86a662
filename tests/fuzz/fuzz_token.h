/*
 * One file-data token decoder (token.c), fed as a receiver feeds it: a
 * few files in a row on one decoder (zstd keeps its context across
 * files), the bytes of each matched block handed back for zlib's history.
 * Included by fuzz_token_<alg>.c, which defines FUZZ_TOKEN_ALG. The first
 * three bytes choose the protocol, the announced block count and the
 * block length.
 */
#include <string.h>

#include "proto/delta/token.h"
#include "proto/base/wire.h"
#include "tests/fuzz/fuzz_common.h"

#define FUZZ_TOKEN_FILES 4
#define FUZZ_TOKEN_MAX_BLOCK 8192
/* Tokens decoded per input at most: a run token names up to 65536 blocks,
 * each fed to zlib's history, which is the decoder's job but makes an
 * input take seconds; the parsing is the same for the first few. */
#define FUZZ_TOKEN_MAX_STEPS 1024

static uint8_t basis_block[FUZZ_TOKEN_MAX_BLOCK];

/* Decode one file's tokens; false once the stream has failed. */
static bool decode_file(struct token_dec *d, struct wire_in *in, int32_t blocks, size_t blk_len,
			int *steps)
{
	const uint8_t *p;
	size_t n;
	int32_t block;

	token_dec_begin(d, blocks);
	while ((*steps)++ < FUZZ_TOKEN_MAX_STEPS) {
		int kind = token_dec_next(d, in, &p, &n, &block);
		if (kind == TOKEN_END)
			return true;
		if (kind == TOKEN_ERROR)
			return false;
		if (kind == TOKEN_BLOCK && token_dec_wants_blocks(d) &&
		    !token_dec_see(d, basis_block, blk_len, 0, blk_len))
			return false;
	}
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input fin = {data, size};
	struct wire_error err;
	struct wire_in in;
	uint8_t p = fuzz_take_byte(&fin), bc = fuzz_take_byte(&fin), bl = fuzz_take_byte(&fin);
	int protocol = 27 + p % 6;
	int32_t blocks = bc == 255 ? 1 << 20 : bc;
	size_t blk_len = 1 + (size_t)bl * (FUZZ_TOKEN_MAX_BLOCK - 1) / 255;

	if (!basis_block[1])
		for (size_t i = 0; i < sizeof basis_block; i++)
			basis_block[i] = (uint8_t)(i * 131 + (i >> 8));
	wire_error_init(&err);
	wire_in_init(&in, fuzz_null_fd(), &err);
	if (in.buf && fin.n <= in.cap) {
		memcpy(in.buf, fin.p, fin.n);
		in.end = fin.n;
	}
	in.protocol = protocol;
	/* One decoder for all inputs, reset to a new one's state each time: a
	 * new one per input was most of an input's time (zstd's context and
	 * 256 KB output buffer are mmap'd and unmapped under ASan). An input
	 * whose first byte is 252 or more still gets a decoder of its own,
	 * made and freed as a session does, so that code stays covered. */
	static struct token_dec *kept;
	bool own = p >= 252;
	struct token_dec *d = own ? NULL : kept;
	if (d)
		token_dec_reset(d, protocol, &err);
	else
		d = token_dec_new(FUZZ_TOKEN_ALG, protocol, &err);
	if (!own)
		kept = d;
	int steps = 0;
	for (int f = 0; d && f < FUZZ_TOKEN_FILES; f++)
		if (!decode_file(d, &in, blocks, blk_len, &steps))
			break;
	if (own)
		token_dec_free(d);
	wire_in_free(&in);
	return 0;
}
