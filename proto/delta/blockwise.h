/*
 * The whole-file sum of a --sums-cache transfer (sumcache.h): not the
 * checksum of the file's bytes, but the checksum of its block digests --
 * the strong sum (csum_block, at most BLOCKWISE_WIDTH bytes) of every
 * blength-long piece of the file, the last one shorter. Both ends of such
 * a transfer are ferry and both use it for every file that has block
 * sums (ferry_blockwise_sum() says when).
 *
 * What it buys: a receiver updating a file in place already knows the
 * digests of the blocks it leaves as they are (the kept sums), so it
 * checks the new file without reading them back, and the sender takes
 * the digests from its read-ahead hasher instead of a second hash over
 * every byte. The trust is rsync's quick check at the size of a block:
 * a destination file whose inode, size, mtime and ctime are as the cache
 * recorded them is taken to hold what the recorded sums say.
 */
#ifndef FERRY_BLOCKWISE_H
#define FERRY_BLOCKWISE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/base/checksum.h"

/* Digest bytes a block (the sums cache keeps as many). */
#define BLOCKWISE_WIDTH 16

struct blockwise_sum {
	struct csum_ctx outer;   /* over the block digests */
	enum csum_type type;
	int32_t seed;
	bool seed_order;
	size_t width;            /* digest bytes a block */
	size_t blength;
	uint8_t *acc;            /* a block being gathered */
	size_t acc_len;
	/* digests not yet in outer: one update per page of them, not per
	 * 16 bytes (each update moves the whole hash state) */
	uint8_t digests[4096];
	size_t ndigest_bytes;
	bool failed;             /* out of memory: the sums will differ */
};

struct session;
struct sum_head;

/* Is a file's whole-file sum block-wise? With --sums-cache when the
 * client is the sender -- the client's sender and its server's receiver:
 * the option reaches a server only then (options_server.c) -- for a file
 * sent against block sums, not appended, in blocks no longer than
 * protocol 30 allows. Both ends see the same sum head and options, so
 * they always agree. */
bool blockwise_applies(const struct session *s, const struct sum_head *h, bool appending);
/* Digest bytes a block for checksum type t. */
size_t blockwise_width(enum csum_type t);
/* Start a file whose blocks are blength long (> 0), with the session's
 * checksum, seed and seed order (csum_block()). */
void blockwise_begin(struct blockwise_sum *b, enum csum_type t, int32_t seed, bool seed_order,
		     int32_t blength);
/* The file's next bytes. */
void blockwise_bytes(struct blockwise_sum *b, const uint8_t *p, size_t n);
/* At a block boundary: is the next piece's digest taken as it is? */
static inline bool blockwise_at_boundary(const struct blockwise_sum *b)
{
	return b->acc_len == 0;
}
/* The next block's digest (width bytes), known already; only at a block
 * boundary. */
void blockwise_digest(struct blockwise_sum *b, const uint8_t *digest);
/* The sum (csum_len(type) bytes into out); frees what begin took. */
void blockwise_end(struct blockwise_sum *b, uint8_t *out);

#endif
