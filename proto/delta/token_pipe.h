/*
 * The compressed token stream on a second thread (issue 24, goal 4): the
 * sender's matcher hands a file's literal data and block tokens to a
 * bounded queue, and a compressor thread runs the token encoder
 * (token.h) and writes its output, so that reading, checksumming and
 * matching of the next data overlap with compressing and writing the
 * last. The encoder sees exactly the calls the matcher made, in order, so
 * the stream is the one the same calls make on one thread (rsync decodes
 * it); only the adaptive rule's clocks differ (its window's wall time then
 * includes waiting for the matcher, which is how the rule sees a matcher
 * slower than the compressor).
 *
 * Use it for large files only: the hand-off costs a copy of every
 * literal byte and a wake-up per batch, which a small file does not
 * repay; nor does stored data, which the caller's thread then encodes
 * itself (token_pipe.c). Between token_pipe_begin and token_pipe_end the
 * compressor thread owns the encoder and writes to the output (taking its
 * lock per batch); the caller must not touch either, nor hold the
 * output's lock.
 */
#ifndef FERRY_TOKEN_PIPE_H
#define FERRY_TOKEN_PIPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/base/wire.h"
#include "proto/delta/token.h"

/* Batches in flight (the matcher runs ahead of the compressor by at most
 * this many) and the bytes a batch holds (a protocol 30 block fits): half
 * a MiB in all, so the sender's peak memory stays below rsync's, and a
 * wake-up per 128 KiB, little beside compressing it. */
#define TOKEN_PIPE_BATCHES 4
#define TOKEN_PIPE_BATCH_BYTES (128 * 1024)
/* Token records a batch holds (block tokens carry no bytes without zlib). */
#define TOKEN_PIPE_BATCH_OPS 1024
/* Files smaller than this are encoded on the sender's own thread. */
#define TOKEN_PIPE_MIN_FILE (512 * 1024)

struct token_pipe;

/* A pipe into `enc` writing to `out` (failures recorded in `err`), its
 * thread started. NULL when memory or a thread is short or this machine
 * has a single CPU: the caller then encodes on its own thread. */
struct token_pipe *token_pipe_new(struct token_enc *enc, struct wire_out *out,
				  struct wire_error *err);
/* Stop the thread (after what was queued) and free the pipe. NULL is a
 * no-op. */
void token_pipe_free(struct token_pipe *p);

/* Start a file (token_enc_begin on the compressor thread). false: an
 * earlier failure stands (recorded in err). */
bool token_pipe_begin(struct token_pipe *p, bool minimal);
/* Queue literal data, copied. false: the compressor failed (recorded in
 * err). More than TOKEN_PIPE_BATCH_BYTES at once is encoded on the
 * caller's thread, after what was queued (so is a block's). */
bool token_pipe_literal(struct token_pipe *p, const uint8_t *data, size_t n);
/* Queue a matched block; data (len bytes) is copied when given (zlib's
 * history), NULL otherwise. */
bool token_pipe_block(struct token_pipe *p, int32_t block, const uint8_t *data, size_t len);
/* End the file: with `ok`, its end (token_enc_end) is queued; either way
 * this waits until the compressor has done all that was queued, after
 * which the caller owns the encoder and the output again. Returns false if
 * `ok` was false or the compressor failed. */
bool token_pipe_end(struct token_pipe *p, bool ok);
/* Batches handed to the compressor thread so far (tests). */
uint64_t token_pipe_handed(struct token_pipe *p);

#endif
