/*
 * The byte streams of a session: buffered reads and writes on a file
 * descriptor, rsync's multiplexed framing (MSG_* frames), and the typed
 * integer encodings (int, longint, varint, varlong, file indexes).
 *
 * Every reader returns false on failure and records why in the stream's
 * error (see struct wire_error); callers pass the failure up. Nothing read
 * from the peer is trusted: lengths are bounded by the caller's limits.
 */
#ifndef FERRY_WIRE_H
#define FERRY_WIRE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Message codes (rsync.h: enum msgcode). */
enum msg_code {
	MSG_DATA = 0,
	MSG_ERROR_XFER = 1,
	MSG_INFO = 2,
	MSG_ERROR = 3,
	MSG_WARNING = 4,
	MSG_ERROR_SOCKET = 5,
	MSG_LOG = 6,
	MSG_CLIENT = 7,
	MSG_ERROR_UTF8 = 8,
	MSG_REDO = 9,
	MSG_STATS = 10,
	MSG_IO_ERROR = 22,
	MSG_IO_TIMEOUT = 33,
	MSG_NOOP = 42,
	MSG_ERROR_EXIT = 86,
	MSG_SUCCESS = 100,
	MSG_DELETED = 101,
	MSG_NO_SEND = 102,
};

#define MPLEX_BASE 7
#define MSG_PAYLOAD_MAX 5120 /* BIGPATHBUFLEN: bound on non-data frames */

/* Special file indexes (rsync.h). */
#define NDX_DONE (-1)
#define NDX_FLIST_EOF (-2)
#define NDX_DEL_STATS (-3)
#define NDX_FLIST_OFFSET (-101)

/* rsync's exit codes (errcode.h). */
enum rerr {
	RERR_OK = 0,
	RERR_SYNTAX = 1,
	RERR_PROTOCOL = 2,
	RERR_FILESELECT = 3,
	RERR_UNSUPPORTED = 4,
	RERR_STARTCLIENT = 5,
	RERR_SOCKETIO = 10,
	RERR_FILEIO = 11,
	RERR_STREAMIO = 12,
	RERR_MESSAGEIO = 13,
	RERR_IPC = 14,
	RERR_CRASHED = 15,
	RERR_TERMINATED = 16,
	RERR_SIGNAL1 = 19,
	RERR_SIGNAL = 20,
	RERR_WAITCHILD = 21,
	RERR_MALLOC = 22,
	RERR_PARTIAL = 23,
	RERR_VANISHED = 24,
	RERR_DEL_LIMIT = 25,
	RERR_TIMEOUT = 30,
	RERR_CONTIMEOUT = 35,
};

/* The first failure on a stream: an exit code and a message. Shared by the
 * input and output halves of a session so either thread can record it. */
struct wire_error {
	pthread_mutex_t lock;
	int code;          /* 0 while no error */
	char msg[512];
	time_t stop_at;    /* --stop-at/--stop-after: I/O fails from then on */
	bool signalled;    /* a stop signal has failed the stream (stop_signal.h) */
};
void wire_error_init(struct wire_error *e);
/* Record a failure (the first one wins). Always returns false, so a reader
 * can `return wire_fail(...)`. */
bool wire_fail(struct wire_error *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int wire_error_code(struct wire_error *e);

struct wire_in;

/* A copy of the data bytes a stream carries, handed to the stream by a
 * layer above it (--write-batch, proto/delta/batch.h): fn gets every run of data
 * bytes in stream order; false (with the error recorded) stops the stream.
 * fn NULL: no copy. */
struct wire_tee {
	bool (*fn)(void *ctx, const void *p, size_t n);
	void *ctx;
};
/* Called for every non-data frame of a multiplexed input. Returns false to
 * stop the session (after recording an error). */
typedef bool (*wire_msg_fn)(void *ctx, struct wire_in *in, int code,
			    const uint8_t *payload, size_t len);

struct wire_in {
	int fd;
	struct wire_error *err;
	uint8_t *buf;
	size_t cap, pos, end;   /* unread raw bytes are buf[pos..end) */
	bool mux;               /* input is multiplexed */
	size_t data_left;       /* bytes left in the current MSG_DATA frame */
	int timeout_ms;         /* 0 = wait forever */
	int64_t deadline_ms;    /* CLOCK_MONOTONIC ms by which reads must be
				 * done (a daemon's handshake), 0 = none */
	uint64_t total_read;    /* raw bytes read from fd, for --stats */
	wire_msg_fn on_msg;
	void *msg_ctx;
	int32_t ndx_prev_pos, ndx_prev_neg; /* read_ndx state (protocol >= 30) */
	int protocol;
	struct wire_tee tee;    /* a copy of every data byte read */
	struct wire_out *keepalive; /* while a read waits, keep-alives go
				 * here (wire_keepalive), or NULL */
};

struct wire_out {
	int fd;
	struct wire_error *err;
	pthread_mutex_t lock;   /* the generator and receiver threads share it */
	uint8_t *buf;
	size_t cap, len;        /* pending bytes: frames when mux, else raw */
	size_t frame_start;     /* header slot of the open data frame */
	bool frame_open;
	bool mux;
	int timeout_ms;
	uint64_t total_written;
	uint64_t wait_ns;       /* time spent in write() (blocked on a full
				 * socket); see wire_out_wait_ns */
	uint64_t bw_slept_ns;   /* time slept for --bwlimit */
	int32_t ndx_prev_pos, ndx_prev_neg;
	int protocol;
	long bwlimit;           /* --bwlimit in KiB/s, 0 = none */
	int64_t bw_backlog;     /* bytes written ahead of the allowed rate */
	struct timespec bw_prior;
	struct wire_tee tee;    /* a copy of every data byte written */
	bool divert;            /* --only-write-batch: data goes to the tee
				 * only, not to the peer */
	int64_t last_write_ms;  /* wire_now_ms() of the last write() that
				 * put bytes on fd (read with __atomic) */
};

void wire_in_init(struct wire_in *in, int fd, struct wire_error *err);
void wire_in_free(struct wire_in *in);
void wire_out_init(struct wire_out *out, int fd, struct wire_error *err);
void wire_out_free(struct wire_out *out);

/* Milliseconds on CLOCK_MONOTONIC, for deadlines. */
int64_t wire_now_ms(void);

/* Raw input. */
bool wire_read(struct wire_in *in, void *dst, size_t n);
bool wire_skip(struct wire_in *in, size_t n);
/* Read n bytes, in place when they lie whole in the input buffer, else
 * copied into scratch (which holds n bytes). The bytes stay valid until
 * the next read from `in`. NULL on error. */
const uint8_t *wire_read_view(struct wire_in *in, uint8_t *scratch, size_t n);
/* Read between 1 and max (> 0) bytes in place: what the input buffer
 * holds of the current data frame, waiting for input only if it holds
 * none. Valid until the next read from `in`. NULL on error. */
const uint8_t *wire_read_some(struct wire_in *in, size_t max, size_t *got);
/* The next data byte, left unread, if it is already in the buffer (no
 * read, no frame header to parse); false otherwise. */
bool wire_peek_buffered(const struct wire_in *in, uint8_t *v);
bool wire_read_u8(struct wire_in *in, uint8_t *v);
bool wire_read_u16(struct wire_in *in, uint16_t *v);
bool wire_read_i32(struct wire_in *in, int32_t *v);
bool wire_read_longint(struct wire_in *in, int64_t *v);
bool wire_read_varint(struct wire_in *in, int32_t *v);
bool wire_read_varlong(struct wire_in *in, int min_bytes, int64_t *v);
/* varint for protocol >= 30, int before (io.h: read_varint30). */
bool wire_read_varint30(struct wire_in *in, int32_t *v);
/* varlong for protocol >= 30, longint before. */
bool wire_read_varlong30(struct wire_in *in, int min_bytes, int64_t *v);
/* vstring: a string of at most `max` bytes, NUL-terminated into dst. */
bool wire_read_vstring(struct wire_in *in, char *dst, size_t max);
bool wire_read_ndx(struct wire_in *in, int32_t *ndx);
/* A text line of the daemon handshake: CRs dropped, LF ends, NUL aborts.
 * Fails if the line does not fit in max bytes. Reads byte by byte from the
 * buffer (never past the line), so the stream stays in sync. */
bool wire_read_line(struct wire_in *in, char *dst, size_t max);
/* Number of bytes that can be read without blocking (buffered data). */
size_t wire_buffered(const struct wire_in *in);
/* Raw bytes taken from the stream so far (read, less what is buffered),
 * and raw bytes put on it (written or waiting): per-file %b and %c. */
uint64_t wire_in_taken(const struct wire_in *in);
uint64_t wire_out_given(const struct wire_out *out);

/* Output. All writes are buffered; wire_flush sends them. */
bool wire_write(struct wire_out *out, const void *src, size_t n);
bool wire_write_u8(struct wire_out *out, uint8_t v);
bool wire_write_u16(struct wire_out *out, uint16_t v);
bool wire_write_i32(struct wire_out *out, int32_t v);
bool wire_write_longint(struct wire_out *out, int64_t v);
bool wire_write_varint(struct wire_out *out, int32_t v);
bool wire_write_varlong(struct wire_out *out, int64_t v, int min_bytes);
bool wire_write_varint30(struct wire_out *out, int32_t v);
bool wire_write_varlong30(struct wire_out *out, int64_t v, int min_bytes);
bool wire_write_vstring(struct wire_out *out, const char *s);
bool wire_write_ndx(struct wire_out *out, int32_t ndx);
bool wire_flush(struct wire_out *out);
/* rsync's keep-alive (io.c: maybe_send_keepalive): with a --timeout, and
 * nothing written for half of it, an empty MSG_DATA frame (or the data
 * already buffered) goes out, so the peer's timeout does not end a
 * transfer that is busy on this side. Safe from any thread: if another
 * holds the output it is writing, and nothing is sent. Returns false
 * only if the write failed (recorded in out->err). */
bool wire_keepalive(struct wire_out *out);
/* How long the link has kept the writer waiting, in ns: the time write()
 * took, plus with --bwlimit the time the rate allots to every byte
 * produced (the adaptive compression rule reads it). */
uint64_t wire_out_wait_ns(const struct wire_out *out);
/* Bytes written to the fd that the peer has not taken yet (the socket's
 * send queue, or what sits in a pipe), 0 if unknown. */
size_t wire_out_queued(const struct wire_out *out);
/* The fd's queue (sendq.h) in *st, and in *buffered the bytes in ferry's
 * own buffer not yet written to the fd: together, what was produced and
 * has not left this host. False if the queue cannot be read. The caller
 * holds the output (threads). */
struct sendq_state;
bool wire_out_backlog(const struct wire_out *out, struct sendq_state *st, uint64_t *buffered);
/* A non-data frame; pending data is flushed first so the order holds. */
bool wire_send_msg(struct wire_out *out, int code, const void *payload, size_t len);
/* A message that overtakes the data still buffered, as rsync's message
 * buffer does (io.c): a deletion is reported before the item lines the
 * generator wrote just before it. */
bool wire_send_msg_ahead(struct wire_out *out, int code, const void *payload, size_t len);
/* Every write function takes the output's (recursive) lock; holding it
 * around a multi-field record keeps another thread's message from being
 * flushed into the middle of it. */
void wire_out_lock(struct wire_out *out);
void wire_out_unlock(struct wire_out *out);

/* Pure encoders/decoders, for the stream functions above and for tests.
 * Encoders return the number of bytes written into buf (room: 9 bytes).
 * Decoders return bytes consumed, 0 if more input is needed, -1 if the
 * bytes are invalid. */
size_t varint_encode(uint8_t *buf, int32_t v);
int varint_decode(const uint8_t *buf, size_t len, int32_t *v);
size_t varlong_encode(uint8_t *buf, int64_t v, int min_bytes);
int varlong_decode(const uint8_t *buf, size_t len, int min_bytes, int64_t *v);
/* File-index compression (io.c: write_ndx/read_ndx), state passed in. */
size_t ndx_encode(uint8_t *buf, int32_t ndx, int32_t *prev_pos, int32_t *prev_neg);
int ndx_decode(const uint8_t *buf, size_t len, int32_t *ndx, int32_t *prev_pos,
	       int32_t *prev_neg);

#endif
