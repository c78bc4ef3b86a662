/*
 * The sender's block search and token emission.
 */
#ifndef FERRY_MATCH_H
#define FERRY_MATCH_H

#include <pthread.h>
#include <stdatomic.h>
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

/* The source's block-aligned windows hashed ahead by a second thread
 * (match_ahead.c): the weak sum and the strong-sum prefix of block k of
 * the file, valid once ready[k] is set. */
struct match_ahead {
	pthread_t thread;
	bool running;
	int fd;
	int32_t blength, s2length;
	int32_t nblocks;              /* whole blocks of the file at the start */
	uint32_t *weak;
	uint8_t *strong;              /* nblocks * s2length */
	_Atomic uint8_t *ready;
	_Atomic int64_t matcher_off;  /* where the matcher is: skip behind it */
	atomic_bool stop;
	void (*strong_fn)(void *ctx, const uint8_t *p, size_t n, uint8_t *out);
	void *ctx;
};

/* Start hashing fd's blocks of h->blength bytes ahead of the matcher, with
 * strong_fn(ctx, ...) as the strong sum (called from the helper thread).
 * false, and nothing to stop, when the file is too small to be worth it
 * or a resource is short. */
bool match_ahead_start(struct match_ahead *a, int fd, const struct sum_head *h,
		       void (*strong_fn)(void *ctx, const uint8_t *p, size_t n, uint8_t *out),
		       void *ctx);
/* Stop the helper (it quits between blocks) and free the table. */
void match_ahead_stop(struct match_ahead *a);
/* The sums of the len bytes at off, if that is a whole aligned block the
 * helper has done. */
bool match_ahead_sums(struct match_ahead *a, int64_t off, int64_t len, uint32_t *weak,
		      const uint8_t **strong);
/* Tell the helper where the matcher is. */
void match_ahead_at(struct match_ahead *a, int64_t off);

/* Where the tokens go. */
struct match_out {
	void *ctx;
	bool (*emit_literal)(void *ctx, const uint8_t *p, size_t n);  /* n <= 32 KiB */
	bool (*emit_block)(void *ctx, int32_t block, const uint8_t *data, size_t n);
	bool (*feed)(void *ctx, const uint8_t *p, size_t n);   /* every byte, once, in order */
	void (*strong)(void *ctx, const uint8_t *p, size_t n, uint8_t *out);
	struct match_ahead *ahead;   /* optional: sums hashed ahead, or NULL */
};

/* Send file fd (file_len bytes) as tokens against the index (NULL or an
 * empty head: all literal). updating_basis: the receiver writes into its
 * basis file in place, so no block may be used after it was overwritten
 * (rsync's updating_basis_file). */
bool match_send_file(const struct match_index *m, int fd, int64_t file_len, bool updating_basis,
		     struct match_out *mo);

#endif
