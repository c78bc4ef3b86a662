/*
 * The token stream's compressor thread (token_pipe.h): a ring of
 * TOKEN_PIPE_BATCHES batches, each a buffer of literal and block bytes and
 * the records of the encoder calls to make with them. The sender's thread
 * fills one batch at a time and publishes it when full or at the end of a
 * file; the compressor thread replays each published batch into the
 * encoder in order and hands it back.
 *
 * While the encoder stores (the adaptive rule's "no effort", or data that
 * does not compress), the hand-off is all cost: its copy is as much work
 * as storing, and each batch a wake-up. The sender's thread then encodes
 * itself, once the compressor has done what was queued (so the stream's
 * order stands), until the encoder compresses again. Its time between
 * those calls inside a file is what the compressor thread would have
 * waited for: it goes to the encoder as idle time, as the thread's waits
 * do, so that the adaptive rule judges compressing again the same way.
 */
#include "proto/delta/token_pipe.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proto/base/stop_signal.h"

enum pipe_op_kind { OP_BEGIN, OP_LITERAL, OP_BLOCK, OP_END };

/* One encoder call; its bytes, if any, at data[off, off+len) of the batch. */
struct pipe_op {
	uint8_t kind;      /* enum pipe_op_kind */
	bool flag;         /* OP_BEGIN: minimal; OP_BLOCK: bytes given */
	int32_t block;
	uint32_t off, len;
};

struct pipe_batch {
	uint8_t *data;
	size_t used;
	struct pipe_op *ops;
	size_t nops;
};

struct token_pipe {
	/* config */
	struct token_enc *enc;
	struct wire_out *out;
	struct wire_error *err;

	/* state, under lock: batches[published % N] is the one being filled
	 * (once published - done < N), batches[done % N] the next to encode */
	pthread_mutex_t lock;
	pthread_cond_t work;      /* a batch was published, or quit */
	pthread_cond_t room;      /* a batch was encoded */
	uint64_t published, done;
	bool quit;
	bool failed;              /* the encoder failed, or the file was
				   * abandoned: drop batches unread */
	bool started;
	bool mid_file;            /* the last batch encoded did not end a file */
	bool storing;             /* the encoder stored at the end of the last
				   * batch encoded */
	bool taken_over;          /* the sender's thread encoded since the
				   * compressor's wait began: no idle time */
	pthread_t thread;
	struct pipe_batch batches[TOKEN_PIPE_BATCHES];
	struct pipe_batch *cur;   /* the sender's batch, or NULL: wait for one */
	bool direct;              /* the sender's: encode on its own thread */
	bool owner;               /* the sender's: it has drained the queue and
				   * encodes; nothing queued since */
	uint64_t direct_end;      /* the sender's: when its last literal inside
				   * this file was encoded (0: none) */
};

/* One encoder call, with its bytes (len of them: a record's own count
 * is 32 bits). */
static bool encode_op(struct token_pipe *p, const struct pipe_op *op, const uint8_t *bytes,
		      size_t len)
{
	switch (op->kind) {
	case OP_BEGIN:
		return token_enc_begin(p->enc, p->out, op->flag);
	case OP_LITERAL:
		return token_enc_literal(p->enc, p->out, bytes, len);
	case OP_BLOCK:
		return token_enc_block(p->enc, p->out, op->block, op->flag ? bytes : NULL, len);
	default:
		return token_enc_end(p->enc, p->out);
	}
}

/* Replay one batch into the encoder, holding the output's lock so that no
 * other thread's message lands inside a batch's records. */
static bool encode_batch(struct token_pipe *p, const struct pipe_batch *b)
{
	bool ok = true;

	wire_out_lock(p->out);
	for (size_t i = 0; ok && i < b->nops; i++)
		ok = encode_op(p, &b->ops[i], b->data + b->ops[i].off, b->ops[i].len);
	wire_out_unlock(p->out);
	return ok;
}

static uint64_t monotonic_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Wait for a batch. A wait inside a file is the sender's reading and
 * matching running behind the compressor: the encoder is told, as time
 * in which more compression would have cost nothing (between files the
 * sender may be compressing a small file itself on the same encoder). */
static void wait_for_work(struct token_pipe *p)
{
	if (p->done != p->published || p->quit)
		return;
	uint64_t t0 = p->mid_file ? monotonic_ns() : 0;
	while (p->done == p->published && !p->quit)
		pthread_cond_wait(&p->work, &p->lock);
	if (t0 && !p->taken_over)
		token_enc_add_idle(p->enc, monotonic_ns() - t0);
	p->taken_over = false;
}

static void *pipe_main(void *arg)
{
	struct token_pipe *p = arg;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		wait_for_work(p);
		if (p->done == p->published)
			break; /* quit, and nothing left */
		struct pipe_batch *b = &p->batches[p->done % TOKEN_PIPE_BATCHES];
		bool skip = p->failed;
		pthread_mutex_unlock(&p->lock);
		bool ok = skip || encode_batch(p, b);
		bool storing = ok && token_enc_minimal(p->enc);
		pthread_mutex_lock(&p->lock);
		p->storing = storing;
		p->mid_file = b->nops > 0 && b->ops[b->nops - 1].kind != OP_END;
		if (!ok)
			p->failed = true;
		b->used = 0;
		b->nops = 0;
		p->done++;
		pthread_cond_signal(&p->room);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

struct token_pipe *token_pipe_new(struct token_enc *enc, struct wire_out *out,
				  struct wire_error *err)
{
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return NULL; /* no second core to overlap with */
	struct token_pipe *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	p->enc = enc;
	p->out = out;
	p->err = err;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->room, NULL);
	for (int i = 0; i < TOKEN_PIPE_BATCHES; i++) {
		struct pipe_batch *b = &p->batches[i];
		b->data = malloc(TOKEN_PIPE_BATCH_BYTES);
		b->ops = malloc(TOKEN_PIPE_BATCH_OPS * sizeof *b->ops);
		if (!b->data || !b->ops) {
			token_pipe_free(p);
			return NULL;
		}
	}
	if (stop_signal_thread_create(&p->thread, pipe_main, p) != 0) {
		token_pipe_free(p);
		return NULL;
	}
	p->started = true;
	return p;
}

void token_pipe_free(struct token_pipe *p)
{
	if (!p)
		return;
	if (p->started) {
		pthread_mutex_lock(&p->lock);
		p->quit = true;
		pthread_cond_signal(&p->work);
		pthread_mutex_unlock(&p->lock);
		pthread_join(p->thread, NULL);
	}
	for (int i = 0; i < TOKEN_PIPE_BATCHES; i++) {
		free(p->batches[i].data);
		free(p->batches[i].ops);
	}
	pthread_cond_destroy(&p->room);
	pthread_cond_destroy(&p->work);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

/* Hand the sender's batch, if it holds anything, to the compressor. */
static void publish(struct token_pipe *p)
{
	if (!p->cur || p->cur->nops == 0)
		return;
	pthread_mutex_lock(&p->lock);
	p->published++;
	p->cur = NULL;
	pthread_cond_signal(&p->work);
	pthread_mutex_unlock(&p->lock);
}

/* A batch with room for one more record of `bytes` bytes, publishing the
 * current one if it has none; NULL once the compressor has failed. */
static struct pipe_batch *batch_for(struct token_pipe *p, size_t bytes)
{
	struct pipe_batch *b = p->cur;

	if (b && b->nops < TOKEN_PIPE_BATCH_OPS && TOKEN_PIPE_BATCH_BYTES - b->used >= bytes)
		return b;
	publish(p);
	pthread_mutex_lock(&p->lock);
	while (!p->failed && p->published - p->done >= TOKEN_PIPE_BATCHES)
		pthread_cond_wait(&p->room, &p->lock);
	bool failed = p->failed;
	p->direct = p->storing;
	pthread_mutex_unlock(&p->lock);
	if (failed)
		return NULL;
	p->cur = &p->batches[p->published % TOKEN_PIPE_BATCHES];
	return p->cur;
}

/* Publish what is queued and wait until the compressor has done it all;
 * false if it failed. The caller then owns the encoder and the output
 * (`take_over`: to encode while the file goes on). */
static bool drain(struct token_pipe *p, bool take_over)
{
	publish(p);
	pthread_mutex_lock(&p->lock);
	while (p->done != p->published)
		pthread_cond_wait(&p->room, &p->lock);
	bool ok = !p->failed;
	if (take_over)
		p->taken_over = true;
	pthread_mutex_unlock(&p->lock);
	p->cur = NULL;
	return ok;
}

/* A record encoded here, in its place in the stream, once the compressor
 * has caught up: one too large for a batch (a protocol 29 block of more
 * than TOKEN_PIPE_BATCH_BYTES, for zlib's history), or any while the
 * encoder stores. */
static bool encode_here(struct token_pipe *p, const struct pipe_op *op, const uint8_t *data,
			size_t len)
{
	bool literal = op->kind == OP_LITERAL;

	/* once drained, nothing is queued while the sender encodes: no lock
	 * or clock per block token, only per literal */
	if (!p->owner && !drain(p, true))
		return false;
	p->owner = true;
	if (literal && p->direct_end)
		token_enc_add_idle(p->enc, monotonic_ns() - p->direct_end);
	wire_out_lock(p->out);
	bool ok = encode_op(p, op, data, len);
	wire_out_unlock(p->out);
	p->direct = ok && token_enc_minimal(p->enc);
	p->owner = p->direct; /* else the next call queues */
	if (!p->direct || op->kind == OP_END)
		p->direct_end = 0;
	else if (literal)
		p->direct_end = monotonic_ns();
	if (ok && !p->direct) {
		/* compressing again: the compressor's last word on it is old */
		pthread_mutex_lock(&p->lock);
		p->storing = false;
		pthread_mutex_unlock(&p->lock);
	}
	if (!ok) {
		pthread_mutex_lock(&p->lock);
		p->failed = true;
		pthread_mutex_unlock(&p->lock);
	}
	return ok;
}

/* Queue one record, with `len` bytes copied from `data` (NULL: none). */
static bool queue(struct token_pipe *p, uint8_t kind, bool flag, int32_t block,
		  const uint8_t *data, size_t len)
{
	size_t bytes = data ? len : 0;
	struct pipe_op here = {.kind = kind, .flag = flag, .block = block, .len = (uint32_t)len};

	if (p->direct || bytes > TOKEN_PIPE_BATCH_BYTES)
		return encode_here(p, &here, data, len);
	struct pipe_batch *b = batch_for(p, bytes);
	if (!b)
		return false;
	struct pipe_op *op = &b->ops[b->nops++];
	*op = here;
	op->off = (uint32_t)b->used;
	if (bytes) {
		memcpy(b->data + b->used, data, bytes);
		b->used += bytes;
	}
	return true;
}

bool token_pipe_begin(struct token_pipe *p, bool minimal)
{
	pthread_mutex_lock(&p->lock);
	bool failed = p->failed;
	pthread_mutex_unlock(&p->lock);
	return !failed && queue(p, OP_BEGIN, minimal, 0, NULL, 0);
}

bool token_pipe_literal(struct token_pipe *p, const uint8_t *data, size_t n)
{
	return queue(p, OP_LITERAL, false, 0, data, n);
}

bool token_pipe_block(struct token_pipe *p, int32_t block, const uint8_t *data, size_t len)
{
	return queue(p, OP_BLOCK, data != NULL, block, data, len);
}

bool token_pipe_end(struct token_pipe *p, bool ok)
{
	ok = ok && queue(p, OP_END, false, 0, NULL, 0);
	p->direct_end = 0; /* the next file's wait is no idle time */
	p->owner = false;
	if (!ok) {
		/* the file is abandoned: what is queued of it need not be
		 * encoded (the session is failing) */
		pthread_mutex_lock(&p->lock);
		p->failed = true;
		pthread_mutex_unlock(&p->lock);
	}
	return drain(p, false) && ok;
}

uint64_t token_pipe_handed(struct token_pipe *p)
{
	pthread_mutex_lock(&p->lock);
	uint64_t n = p->published;
	pthread_mutex_unlock(&p->lock);
	return n;
}
