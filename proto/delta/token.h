/*
 * The token stream of one file's data (rsync token.c): literal data and
 * references to blocks of the receiver's basis, either uncompressed (4-byte
 * ints, docs/protocol.md 9.6) or compressed (flag bytes and
 * DEFLATED_DATA chunks, docs/protocol.md 10) with zlib, zlibx, zstd or lz4.
 *
 * One encoder per sending session and one decoder per receiving session:
 * zstd keeps one (de)compression context for the whole session, the others
 * start afresh with every file. Nothing decoded is trusted: every failure is
 * recorded in the session's wire_error with RERR_STREAMIO (exit 12).
 */
#ifndef FERRY_TOKEN_H
#define FERRY_TOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/base/wire.h"

/* rsync.h: CPRES_* (the numbers are rsync's; only the names go on the wire). */
#define CPRES_AUTO (-1)
#define CPRES_NONE 0
#define CPRES_ZLIB 1
#define CPRES_ZLIBX 2
#define CPRES_LZ4 3
#define CPRES_ZSTD 4

/* The lists sent in the negotiation (compat.c: get_default_nno_list). */
#define TOKEN_CLIENT_LIST "zstd lz4 zlibx zlib"
#define TOKEN_SERVER_LIST "zstd lz4 zlibx zlib none"

/* --compress-level not given (rsync's CLVL_NOT_SPECIFIED). */
#define TOKEN_LEVEL_DEFAULT INT32_MIN

/* --compress-threads a daemon grants at most (rsync options.c:
 * MAX_DAEMON_COMPRESSION_THREADS). */
#define TOKEN_DAEMON_MAX_THREADS 8

/* Largest DEFLATED_DATA payload (a 14-bit count). */
#define TOKEN_MAX_DATA 16383

/* ferry's adaptive rule (no --compress-level): see proto/delta/zadapt.h. */

/* CPRES_* for a name ("zlib", "zlibx", "zstd", "lz4", "none"; any case),
 * or -2 if unknown. */
int token_alg_by_name(const char *name);
const char *token_alg_name(int alg);

/* rsync's init_compression_level(): the level an algorithm runs at for a
 * requested level (TOKEN_LEVEL_DEFAULT when none was given). zlib and zlibx
 * at level 0 mean no compression at all: *alg becomes CPRES_NONE, on both
 * sides, as in rsync. */
int token_resolve_level(int *alg, int requested);

/* ---- per-file "compress as little as possible" lists ---- */

struct token_skip;
/* skip_compress: --skip-compress's slash-separated suffixes (NULL: not
 * given). dont_compress: a daemon module's space-separated patterns (NULL
 * outside a daemon). As rsync's init_set_compression: a client that gave
 * --skip-compress uses only that list, a daemon uses its module's list plus
 * --skip-compress, otherwise the default media-suffix list applies. */
struct token_skip *token_skip_new(const char *skip_compress, const char *dont_compress);
void token_skip_free(struct token_skip *k);
/* Should this file (path or leaf name) be sent with no compression effort? */
bool token_skip_match(const struct token_skip *k, const char *name);

/* ---- the sending side ---- */

struct token_enc;
/* alg: CPRES_*; level: as resolved by token_resolve_level; adaptive: apply
 * ferry's adaptive rule (not when --compress-level was given). */
struct token_enc *token_enc_new(int alg, int level, bool adaptive, int protocol,
				struct wire_error *err);
void token_enc_free(struct token_enc *e);
/* Measure the time spent compressing and waiting for the output (the
 * adaptive rule's speed half; off by default, so that tests writing to
 * memory see only the data half). */
void token_enc_set_timing(struct token_enc *e, bool timed);
/* Replace the compressor's clock (nanoseconds) with `clock(ctx)`, so a test
 * can replay a known speed instead of this machine's; NULL restores the
 * real clock. */
typedef uint64_t (*token_clock_fn)(void *ctx);
void token_enc_set_clock(struct token_enc *e, token_clock_fn clock, void *ctx);
/* Tell the adaptive rule the link needs `ns_per_mib` per MiB (a test
 * whose output goes to memory replays a slow link so). */
void token_enc_assume_link(struct token_enc *e, uint64_t ns_per_mib);
/* --bwlimit: the output never leaves faster than `ns_per_mib` per MiB
 * (zadapt_link_floor). */
void token_enc_set_link_floor(struct token_enc *e, uint64_t ns_per_mib);
/* The compressor thread (token_pipe.c) waited `ns` for the sender's next
 * data inside a file: time in which more compression effort costs no
 * wall time (zadapt.h). */
void token_enc_add_idle(struct token_enc *e, uint64_t ns);
/* --compress-threads: zstd worker threads (ZSTD_c_nbWorkers); ignored by
 * the other algorithms and by a libzstd built without threads. */
void token_enc_set_threads(struct token_enc *e, int threads);
/* How often the adaptive rule has changed the setting (tests, --debug). */
int token_enc_setting_changes(const struct token_enc *e);
/* The next file starts with at most `left` bytes of input to come in
 * this transfer, its own included (UINT64_MAX: not known); the adaptive
 * rule does not risk probing "store" on a little (zadapt.h). Set before
 * token_enc_begin, or token_pipe_begin, while the caller owns the
 * encoder. */
void token_enc_set_left(struct token_enc *e, uint64_t left);
/* Start a file; `minimal`: send it with no compression effort (its suffix
 * is on the skip list). */
bool token_enc_begin(struct token_enc *e, struct wire_out *out, bool minimal);
bool token_enc_literal(struct token_enc *e, struct wire_out *out, const uint8_t *p, size_t n);
/* Block `block` of the basis matched; data/len are its bytes (zlib adds
 * them to the compressor's history). */
bool token_enc_block(struct token_enc *e, struct wire_out *out, int32_t block,
		     const uint8_t *data, size_t len);
/* End of the file's data (END_FLAG, or the int 0 uncompressed). */
bool token_enc_end(struct token_enc *e, struct wire_out *out);
/* Is the current/last file going out with no compression effort now? */
bool token_enc_minimal(const struct token_enc *e);

/* ---- the receiving side ---- */

enum token_kind {
	TOKEN_ERROR = -1, /* recorded in the wire_error */
	TOKEN_END = 0,    /* end of this file's data */
	TOKEN_DATA = 1,   /* *data, *len: literal bytes (valid until the next call) */
	TOKEN_BLOCK = 2,  /* *block: a basis block index */
};

struct token_dec;
struct token_dec *token_dec_new(int alg, int protocol, struct wire_error *err);
void token_dec_free(struct token_dec *d);
/* Make d what token_dec_new(its algorithm, protocol, err) would return,
 * keeping its buffers and library context (reset to their fresh state):
 * for a caller that decodes many unrelated streams in a row, such as the
 * fuzz harness, without a context's allocation per stream. */
void token_dec_reset(struct token_dec *d, int protocol, struct wire_error *err);
/* Start a file whose sum head announced `block_count` blocks (compressed
 * streams may only reference blocks below it). */
void token_dec_begin(struct token_dec *d, int32_t block_count);
int token_dec_next(struct token_dec *d, struct wire_in *in, const uint8_t **data, size_t *len,
		   int32_t *block);
/* Does the decoder need the bytes of matched blocks (token_dec_see)? */
bool token_dec_wants_blocks(const struct token_dec *d);
/* After a TOKEN_BLOCK: the block's bytes, for zlib's history (a no-op for
 * the others). Pass them in order as pieces [off, off+n) of a block of
 * blk_len bytes; the first piece must hold min(blk_len, 65535) bytes. */
bool token_dec_see(struct token_dec *d, const uint8_t *p, size_t n, size_t off, size_t blk_len);

#endif
