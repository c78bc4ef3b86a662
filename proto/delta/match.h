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

#include "proto/delta/blockwise.h"
#include "proto/base/checksum.h"
#include "proto/delta/sum_head.h"

/* The per-index secret of the hashes over the peer's sums (from
 * getrandom()): the peer cannot choose sums that collide. */
struct match_key {
	uint64_t filter_mul, filter_add;  /* the filter's multiply-add-shift */
	uint64_t slot_mul, slot_add;      /* the weak-sum table's */
	uint64_t pair_mul;                /* folds strong-sum bytes into pairs */
};

struct match_index {
	struct sum_head h;
	struct match_key key;
	uint32_t *sum1;          /* h.count weak sums */
	uint8_t *sum2;           /* h.count * h.s2length strong-sum prefixes */
	uint8_t *weak_bits;      /* filter over the weak sums, ~16 bits a block:
				  * most byte positions stop at one cache load */
	unsigned filter_shift;   /* 64 - log2(filter bits) */
	uint32_t *weak;          /* distinct nonzero weak sums (open addressing,
				  * 0 = empty slot) */
	bool weak_has_zero;      /* a block's weak sum is 0 */
	size_t weak_cap;
	int32_t *pairs;          /* distinct (weak, strong) -> block, -1 empty */
	size_t pair_cap;
	size_t dropped;          /* sums not stored: too far from their slot */
};

/* Index the receiver's block sums (not copied; they must outlive m),
 * hashed with a fresh secret key. Every insert and lookup probes a
 * bounded number of slots whatever sums the peer sent. false: out of
 * memory. */
bool match_index_build(struct match_index *m, const struct sum_head *h, uint32_t *sum1,
		       uint8_t *sum2);
void match_index_free(struct match_index *m);

/* Helper threads hashing ahead: two when no whole-file sum ties them to
 * reading in order (the block-wise sum), else one. */
#define MATCH_AHEAD_THREADS 2

/* ready[k]: block k's sums are not there yet, are, or never will be (the
 * helpers passed it by, behind the matcher, or could not read it) */
enum { AHEAD_PENDING = 0, AHEAD_READY = 1, AHEAD_SKIPPED = 2 };

/* The source's block-aligned windows hashed ahead by helper threads
 * (match_ahead.c): the weak sum and the strong-sum prefix of block k of
 * the file, valid once ready[k] is AHEAD_READY; and, while a single helper
 * reads the file from its start without a gap, the whole-file sum of what
 * it read, so that the matcher need not read those bytes again. */
struct match_ahead {
	pthread_t threads[MATCH_AHEAD_THREADS];
	int nthreads;
	bool running;
	/* false: the strong sums decide a match alone (MATCH_STRONG_DECIDES)
	 * and the helper computes no weak sums; the matcher rolls one only
	 * where the data changed */
	bool with_weak;
	int fd;
	int32_t blength;
	size_t stride;                /* digest bytes kept a block */
	int32_t nblocks;              /* whole blocks of the file at the start */
	uint32_t *weak;
	uint8_t *strong;              /* nblocks * stride */
	_Atomic uint8_t *ready;
	_Atomic int64_t matcher_off;  /* where the matcher is: skip behind it */
	_Atomic int32_t next_claim;   /* the first block no helper took yet */
	atomic_bool stop;
	void (*strong_fn)(void *ctx, const uint8_t *p, size_t n, uint8_t *out);
	void *ctx;
	/* lock guards the fields below it and pairs with window_done */
	pthread_mutex_t lock;
	pthread_cond_t window_done;   /* a helper published a window or quit */
	int helpers_left;             /* helpers still running */
	bool fsum_on;                 /* the helper still sums the file */
	bool fsum_claimed;            /* the matcher took the file sum over */
	int64_t fsum_limit;           /* never sum past the matcher's file length */
	struct csum_ctx fsum;         /* the file sum of [0, fsum_at) */
	_Atomic int64_t fsum_at;      /* grows only, under lock */
};

/* Strong sums of at least this many bytes (64 bits, no fewer than the
 * weak and strong sums rsync sends for a 1 GiB file together) decide on
 * their own whether a window is the block expected there. Such sums come
 * with --sums-cache (generator.c), where the weak sum would be the
 * sender's costliest work: a hash over every byte that only confirms
 * what the strong sum already says. */
#define MATCH_STRONG_DECIDES 8

/* Start hashing fd's blocks of h->blength bytes ahead of the matcher, with
 * strong_fn(ctx, ...) as the strong sum (called from the helper thread).
 * file_sum: a freshly initialised whole-file sum for the helper to carry
 * on (copied), or NULL. keep_width: digest bytes to keep a block, when
 * more than the sum head's s2length are wanted (the block-wise file sum).
 * false, and nothing to stop, when the file is too small to be worth it
 * or a resource is short. */
bool match_ahead_start(struct match_ahead *a, int fd, const struct sum_head *h,
		       void (*strong_fn)(void *ctx, const uint8_t *p, size_t n, uint8_t *out),
		       void *ctx, const struct csum_ctx *file_sum, size_t keep_width);
/* Stop the helper (it quits between windows) and free the table. */
void match_ahead_stop(struct match_ahead *a);
/* The sums of the len bytes at off, if that is a whole aligned block the
 * helper has done or is going to do (then this waits for it). *weak is
 * set only when a->with_weak. */
bool match_ahead_sums(struct match_ahead *a, int64_t off, int64_t len, uint32_t *weak,
		      const uint8_t **strong);
/* Tell the helper where the matcher is. */
void match_ahead_at(struct match_ahead *a, int64_t off);
/* The matcher's file is file_len bytes: the helper sums no further. false
 * when it already has (the file shrank): its sum is then of no use. */
bool match_ahead_fsum_limit(struct match_ahead *a, int64_t file_len);
/* How far the helper's file sum reaches now (0 without a helper). */
int64_t match_ahead_fsum_at(struct match_ahead *a);
/* Take the file sum over: the helper stops summing, *out becomes its sum
 * (unless it is empty), and the return is how far that sum reaches. */
int64_t match_ahead_fsum_take(struct match_ahead *a, struct csum_ctx *out);

/* Where the tokens go. */
struct match_out {
	void *ctx;
	bool (*emit_literal)(void *ctx, const uint8_t *p, size_t n);  /* n <= 32 KiB */
	/* data is NULL when no_block_data is set */
	bool (*emit_block)(void *ctx, int32_t block, const uint8_t *data, size_t n);
	/* every byte, once, in order, into *file_sum; p is NULL for bytes that
	 * are in it already (summed ahead): count them only */
	bool (*feed)(void *ctx, const uint8_t *p, size_t n);
	void (*strong)(void *ctx, const uint8_t *p, size_t n, uint8_t *out);
	struct match_ahead *ahead;   /* optional: sums hashed ahead, or NULL */
	struct csum_ctx *file_sum;   /* the state feed() updates; NULL: the
				      * helper's file sum is not used */
	struct blockwise_sum *tree;  /* the block-wise file sum instead
				      * (blockwise.h): feed() then only counts */
	bool no_block_data;          /* emit_block needs no data (no zlib history):
				      * matched blocks summed ahead are not read */
	int64_t bytes_read;          /* out: what the matcher read itself */
	int read_errno;              /* out: the file could not be read to
				      * its length (ENODATA: it shrank); the
				      * missing bytes went as zeros */
	/* out, added to (-vv's report, rsync's match_report): positions
	 * whose weak sum some block has, or whose strong sum the expected
	 * block has; and of those, the ones no block's strong sum matched */
	int64_t hash_hits, false_alarms;
};
/* Send file fd (file_len bytes) as tokens against the index (NULL or an
 * empty head: all literal). updating_basis: the receiver writes into its
 * basis file in place, so no block may be used after it was overwritten
 * (rsync's updating_basis_file). */
bool match_send_file(const struct match_index *m, int fd, int64_t file_len, bool updating_basis,
		     struct match_out *mo);

#endif
