/*
 * The block-digest whole-file sum (blockwise.h).
 */
#include "proto/delta/blockwise.h"

#include <stdlib.h>
#include <string.h>

#include "proto/base/opts.h"
#include "proto/delta/sum_head.h"
#include "proto/core/session.h"

/* rsync's MAX_BLOCK_SIZE for protocol 30 and later */
#define BLOCKWISE_MAX_BLENGTH (1 << 17)

bool blockwise_applies(const struct session *s, const struct sum_head *h, bool appending)
{
	return s->opts->sums_cache && s->am_sender != s->am_server && !appending &&
	       s->xfer_csum != CSUM_NONE && h->count > 0 && h->blength > 0 &&
	       h->blength <= BLOCKWISE_MAX_BLENGTH;
}

size_t blockwise_width(enum csum_type t)
{
	size_t n = csum_len(t);

	return n < BLOCKWISE_WIDTH ? n : BLOCKWISE_WIDTH;
}

void blockwise_begin(struct blockwise_sum *b, enum csum_type t, int32_t seed, bool seed_order,
		     int32_t blength)
{
	memset(b, 0, sizeof *b);
	csum_file_init(&b->outer, t, seed);
	b->type = t;
	b->seed = seed;
	b->seed_order = seed_order;
	b->width = blockwise_width(t);
	b->blength = blength > 0 ? (size_t)blength : 1;
	b->acc = malloc(b->blength);
	b->failed = b->acc == NULL;
}

static void add_digest(struct blockwise_sum *b, const uint8_t *digest)
{
	if (b->ndigest_bytes + b->width > sizeof b->digests) {
		csum_file_update(&b->outer, b->digests, b->ndigest_bytes);
		b->ndigest_bytes = 0;
	}
	memcpy(b->digests + b->ndigest_bytes, digest, b->width);
	b->ndigest_bytes += b->width;
}

static void add_block(struct blockwise_sum *b, const uint8_t *p, size_t n)
{
	uint8_t strong[CSUM_MAX_DIGEST];

	memset(strong, 0, sizeof strong);
	csum_block(b->type, b->seed, b->seed_order, p, n, strong);
	add_digest(b, strong);
}

void blockwise_bytes(struct blockwise_sum *b, const uint8_t *p, size_t n)
{
	while (!b->failed && n > 0) {
		if (b->acc_len == 0 && n >= b->blength) {
			add_block(b, p, b->blength); /* straight from the data */
			p += b->blength;
			n -= b->blength;
			continue;
		}
		size_t k = b->blength - b->acc_len < n ? b->blength - b->acc_len : n;
		memcpy(b->acc + b->acc_len, p, k);
		b->acc_len += k;
		p += k;
		n -= k;
		if (b->acc_len == b->blength) {
			add_block(b, b->acc, b->blength);
			b->acc_len = 0;
		}
	}
}

void blockwise_digest(struct blockwise_sum *b, const uint8_t *digest)
{
	if (b->acc_len)
		b->failed = true; /* a caller's mistake: never a wrong match */
	else
		add_digest(b, digest);
}

void blockwise_end(struct blockwise_sum *b, uint8_t *out)
{
	if (!b->failed && b->acc_len)
		add_block(b, b->acc, b->acc_len);
	csum_file_update(&b->outer, b->digests, b->ndigest_bytes);
	csum_file_final(&b->outer, out);
	/* a failed sum must not match the peer's: spoil it */
	if (b->failed)
		out[0] ^= 0xff;
	free(b->acc);
	b->acc = NULL;
}
