/*
 * The sender's block search and token emission.
 */
#ifndef FERRY_MATCH_H
#define FERRY_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/checksum.h"
#include "proto/recvside.h"

struct match_index {
	struct sum_head h;
	uint32_t *sum1;          /* h.count weak sums */
	uint8_t *sum2;           /* h.count * h.s2length strong-sum prefixes */
	uint8_t *weak_bits;      /* filter over the weak sums, ~16 bits a block:
				  * most byte positions stop at one cache load */
	unsigned filter_shift;   /* 32 - log2(filter bits) */
	uint32_t *weak;          /* distinct nonzero weak sums (open addressing,
				  * 0 = empty slot) */
	bool weak_has_zero;      /* a block's weak sum is 0 */
	size_t weak_cap;
	int32_t *pairs;          /* distinct (weak, strong) -> block, -1 empty */
	size_t pair_cap;
};

/* Index the receiver's block sums (not copied; they must outlive m). */
bool match_index_build(struct match_index *m, const struct sum_head *h, uint32_t *sum1,
		       uint8_t *sum2);
void match_index_free(struct match_index *m);

/* Where the tokens go. */
struct match_out {
	void *ctx;
	bool (*emit_literal)(void *ctx, const uint8_t *p, size_t n);  /* n <= 32 KiB */
	bool (*emit_block)(void *ctx, int32_t block, const uint8_t *data, size_t n);
	bool (*feed)(void *ctx, const uint8_t *p, size_t n);   /* every byte, once, in order */
	void (*strong)(void *ctx, const uint8_t *p, size_t n, uint8_t *out);
};

/* Send file fd (file_len bytes) as tokens against the index (NULL or an
 * empty head: all literal). */
bool match_send_file(const struct match_index *m, int fd, int64_t file_len, int32_t seed_unused,
		     struct match_out *mo);

#endif
