/*
 * Buffered, optionally multiplexed byte streams and rsync's integer
 * encodings. See wire.h for the contracts.
 */
#include "proto/base/wire.h"
#include "proto/base/byteorder.h"
#include "proto/base/sendq.h"
#include "proto/base/stop_signal.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The stream buffers. The fuzz build (make fuzz) asks for smaller ones:
 * under ASan a buffer above 128 KB is mapped and unmapped for every
 * session, which made that the bulk of each fuzz input's cost. */
#ifndef WIRE_IN_CAP
#define WIRE_IN_CAP (256 * 1024)
#endif
#ifndef WIRE_OUT_CAP
#define WIRE_OUT_CAP (256 * 1024)
#endif
/* Largest MSG_DATA frame we write; rsync reads any length up to 0xFFFFFF. */
#define MUX_FRAME_MAX (128 * 1024)

void wire_error_init(struct wire_error *e)
{
	pthread_mutex_init(&e->lock, NULL);
	e->code = 0;
	e->msg[0] = '\0';
	e->stop_at = 0;
	e->signalled = false;
}

bool wire_fail(struct wire_error *e, int code, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&e->lock);
	if (e->code == 0) {
		e->code = code ? code : RERR_STREAMIO;
		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof e->msg, fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&e->lock);
	return false;
}

int wire_error_code(struct wire_error *e)
{
	int code;

	pthread_mutex_lock(&e->lock);
	code = e->code;
	pthread_mutex_unlock(&e->lock);
	return code;
}

/* ---- pure encoders and decoders ---- */

/* Extra bytes that follow a varint/varlong prefix byte (io.c: int_byte_extra). */
static int prefix_extra(uint8_t b)
{
	if (b < 0x80)
		return 0;
	if (b < 0xC0)
		return 1;
	if (b < 0xE0)
		return 2;
	if (b < 0xF0)
		return 3;
	if (b < 0xF8)
		return 4;
	if (b < 0xFC)
		return 5;
	return 6;
}

/* mirrors rsync io.c:write_varint() */
size_t varint_encode(uint8_t *buf, int32_t v)
{
	uint8_t b[5];
	uint32_t x = (uint32_t)v;
	int cnt;

	for (int i = 0; i < 4; i++)
		b[1 + i] = (uint8_t)(x >> (8 * i));
	for (cnt = 4; cnt > 1 && b[cnt] == 0; cnt--)
		;
	uint8_t bit = (uint8_t)(1u << (8 - cnt));
	if (b[cnt] >= bit) {
		cnt++;
		b[0] = (uint8_t)~(bit - 1);
	} else if (cnt > 1) {
		b[0] = (uint8_t)(b[cnt] | (uint8_t)~(bit * 2 - 1));
	} else {
		b[0] = b[cnt];
	}
	memcpy(buf, b, (size_t)cnt);
	return (size_t)cnt;
}

int varint_decode(const uint8_t *buf, size_t len, int32_t *v)
{
	uint8_t u[5] = {0};
	int extra;

	if (len < 1)
		return 0;
	extra = prefix_extra(buf[0]);
	if (extra > 4)
		return -1;
	if (len < (size_t)(1 + extra))
		return 0;
	if (extra) {
		memcpy(u, buf + 1, (size_t)extra);
		u[extra] = buf[0] & (uint8_t)((1u << (8 - extra)) - 1);
	} else {
		u[0] = buf[0];
	}
	*v = (int32_t)get_le32(u);
	return 1 + extra;
}

/* mirrors rsync io.c:write_varlong() */
size_t varlong_encode(uint8_t *buf, int64_t v, int min_bytes)
{
	uint8_t b[9];
	uint64_t x = (uint64_t)v;
	int cnt;

	for (int i = 0; i < 8; i++)
		b[1 + i] = (uint8_t)(x >> (8 * i));
	for (cnt = 8; cnt > min_bytes && b[cnt] == 0; cnt--)
		;
	uint8_t bit = (uint8_t)(1u << (7 - cnt + min_bytes));
	if (b[cnt] >= bit) {
		cnt++;
		b[0] = (uint8_t)~(bit - 1);
	} else if (cnt > min_bytes) {
		b[0] = (uint8_t)(b[cnt] | (uint8_t)~(bit * 2 - 1));
	} else {
		b[0] = b[cnt];
	}
	memcpy(buf, b, (size_t)cnt);
	return (size_t)cnt;
}

int varlong_decode(const uint8_t *buf, size_t len, int min_bytes, int64_t *v)
{
	uint8_t u[9] = {0};
	int extra;

	if (min_bytes < 1 || min_bytes > 8)
		return -1;
	if (len < (size_t)min_bytes)
		return 0;
	extra = prefix_extra(buf[0]);
	if (min_bytes + extra > 9)
		return -1;
	if (len < (size_t)(min_bytes + extra))
		return 0;
	memcpy(u, buf + 1, (size_t)(min_bytes - 1));
	if (extra) {
		memcpy(u + min_bytes - 1, buf + min_bytes, (size_t)extra);
		u[min_bytes + extra - 1] = buf[0] & (uint8_t)((1u << (8 - extra)) - 1);
	} else {
		u[min_bytes - 1] = buf[0];
	}
	uint64_t x = 0;
	for (int i = 0; i < 8; i++)
		x |= (uint64_t)u[i] << (8 * i);
	*v = (int64_t)x;
	return min_bytes + extra;
}

/* mirrors rsync io.c:write_ndx() */
size_t ndx_encode(uint8_t *buf, int32_t ndx, int32_t *prev_pos, int32_t *prev_neg)
{
	size_t cnt = 0;
	int32_t diff;

	if (ndx == NDX_DONE) {
		buf[0] = 0;
		return 1;
	}
	if (ndx >= 0) {
		diff = ndx - *prev_pos;
		*prev_pos = ndx;
	} else {
		buf[cnt++] = 0xFF;
		ndx = -ndx;
		diff = ndx - *prev_neg;
		*prev_neg = ndx;
	}
	if (diff > 0 && diff < 0xFE) {
		buf[cnt++] = (uint8_t)diff;
	} else if (diff < 0 || diff > 0x7FFF) {
		buf[cnt++] = 0xFE;
		buf[cnt++] = (uint8_t)((ndx >> 24) | 0x80);
		buf[cnt++] = (uint8_t)ndx;
		buf[cnt++] = (uint8_t)(ndx >> 8);
		buf[cnt++] = (uint8_t)(ndx >> 16);
	} else {
		buf[cnt++] = 0xFE;
		buf[cnt++] = (uint8_t)(diff >> 8);
		buf[cnt++] = (uint8_t)diff;
	}
	return cnt;
}

/* mirrors rsync io.c:read_ndx() */
int ndx_decode(const uint8_t *buf, size_t len, int32_t *ndx, int32_t *prev_pos,
	       int32_t *prev_neg)
{
	size_t i = 0;
	int32_t *prev;
	int64_t num;

	if (len < 1)
		return 0;
	if (buf[0] == 0) {
		*ndx = NDX_DONE;
		return 1;
	}
	prev = prev_pos;
	if (buf[0] == 0xFF) {
		prev = prev_neg;
		i = 1;
		if (len < 2)
			return 0;
	}
	if (buf[i] == 0xFE) {
		if (len < i + 3)
			return 0;
		if (buf[i + 1] & 0x80) {
			if (len < i + 5)
				return 0;
			num = (int64_t)buf[i + 2] | (int64_t)buf[i + 3] << 8 |
			      (int64_t)buf[i + 4] << 16 | (int64_t)(buf[i + 1] & 0x7F) << 24;
			i += 5;
		} else {
			num = ((int64_t)buf[i + 1] << 8) + buf[i + 2] + *prev;
			i += 3;
		}
	} else {
		num = (int64_t)buf[i] + *prev;
		i += 1;
	}
	if (num < 0 || num > INT32_MAX)
		return -1;
	*prev = (int32_t)num;
	*ndx = prev == prev_neg ? -(int32_t)num : (int32_t)num;
	return (int)i;
}

/* ---- input ---- */

void wire_in_init(struct wire_in *in, int fd, struct wire_error *err)
{
	memset(in, 0, sizeof *in);
	in->fd = fd;
	in->err = err;
	in->cap = WIRE_IN_CAP;
	in->buf = malloc(in->cap);
	in->ndx_prev_pos = -1;
	in->ndx_prev_neg = 1;
	in->protocol = 32;
}

void wire_in_free(struct wire_in *in)
{
	free(in->buf);
	in->buf = NULL;
}

uint64_t wire_in_taken(const struct wire_in *in)
{
	return in->total_read - (in->end - in->pos);
}

uint64_t wire_out_given(const struct wire_out *out)
{
	return out->total_written + out->len;
}

size_t wire_buffered(const struct wire_in *in)
{
	size_t raw = in->end - in->pos;

	if (!in->mux)
		return raw;
	return raw < in->data_left ? raw : in->data_left;
}

/* Wait until fd is ready (forever when timeout_ms is 0). A peer may hand
 * us non-blocking descriptors (rsync does for a remote-shell child), so
 * every read and write waits here first. */
static int stop_left_ms(const struct wire_error *err);

static bool signal_stops(struct wire_error *err);

/* poll() for `events` up to wait_ms (forever when 0), cut short by
 * --stop-at: 1 when ready, 0 when wait_ms passed, -1 on failure (the
 * --stop-at limit, a stop signal during a read), recorded in err. */
static int poll_fd(struct wire_error *err, int fd, short events, int wait_ms)
{
	struct pollfd p = {.fd = fd, .events = events};
	int stop_ms = stop_left_ms(err), r;
	int ms = stop_ms >= 0 && (wait_ms <= 0 || stop_ms < wait_ms) ? stop_ms : wait_ms;

	for (;;) {
		r = poll(&p, 1, ms > 0 ? ms : -1);
		if (r >= 0 || errno != EINTR)
			break;
		/* a write goes on: a frame cut short would garble the stream
		 * that still has to carry the error exit */
		if ((events & POLLIN) && signal_stops(err))
			return -1;
	}
	if (r == 0 && err->stop_at && time(NULL) >= err->stop_at) {
		wire_fail(err, RERR_TIMEOUT, "stopping at requested limit");
		return -1;
	}
	if (r == 0 && ms != wait_ms)
		return 1; /* woken early for --stop-at, which has not come yet */
	return r == 0 ? 0 : 1;
}

static bool fail_timeout(struct wire_error *err, int timeout_ms)
{
	return wire_fail(err, RERR_TIMEOUT, "timeout after %d seconds -- exiting",
			 timeout_ms / 1000);
}

static bool wait_fd(struct wire_error *err, int fd, short events, int timeout_ms)
{
	int r = poll_fd(err, fd, events, timeout_ms);

	if (r == 0 && timeout_ms > 0)
		return fail_timeout(err, timeout_ms);
	return r >= 0;
}

/* --stop-at: milliseconds until the limit (at least 1), or -1 for none. */
static int stop_left_ms(const struct wire_error *err)
{
	if (!err->stop_at)
		return -1;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int64_t left = ((int64_t)err->stop_at - ts.tv_sec) * 1000 - ts.tv_nsec / 1000000 + 1;
	return left < 1 ? 1 : left > INT32_MAX ? INT32_MAX : (int)left;
}

/* A stop signal (stop_signal.h) fails the stream once, with rsync's code
 * 20 and nothing more to say; what is written after it (the error exit to
 * the peer) still goes out. Checked, as rsync's perform_io checks
 * got_kill_signal, on every read and before every flush. */
static bool signal_stops(struct wire_error *err)
{
	if (!stop_signal_pending())
		return false;
	pthread_mutex_lock(&err->lock);
	bool first = !err->signalled;
	err->signalled = true;
	pthread_mutex_unlock(&err->lock);
	if (first)
		wire_fail(err, RERR_SIGNAL, " ");
	return first;
}

/* The limit checked on every read and write, as rsync's perform_io does. */
static bool stop_reached(struct wire_error *err)
{
	if (err->stop_at && time(NULL) >= err->stop_at)
		return !wire_fail(err, RERR_TIMEOUT, "stopping at requested limit");
	return false;
}

int64_t wire_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* How long the next read may wait: the idle timeout, shortened by an
 * absolute deadline (so a peer trickling one byte at a time cannot hold
 * a daemon's handshake open forever). */
static int read_wait_ms(const struct wire_in *in)
{
	int t = in->timeout_ms;

	if (in->deadline_ms) {
		int64_t left = in->deadline_ms - wire_now_ms();
		if (left < 1)
			left = 1;
		if (t <= 0 || left < t)
			t = (int)left;
	}
	return t;
}

/* How soon a keep-alive is tried again when the output was busy. */
#define KEEPALIVE_RETRY_MS 100

/* Half of the output's --timeout, in ms: how long it may stay silent
 * (io.c: allowed_lull); 0 when it keeps no timeout. */
static int lull_ms(const struct wire_out *out)
{
	return out->timeout_ms > 0 ? (int)(((int64_t)out->timeout_ms + 1) / 2) : 0;
}

/* Milliseconds until `out` has been silent for a lull (at least 1). */
static int lull_left_ms(const struct wire_out *out)
{
	int64_t last = __atomic_load_n(&out->last_write_ms, __ATOMIC_RELAXED);
	int64_t left = last + lull_ms(out) - wire_now_ms();

	return left < 1 ? 1 : left > INT32_MAX ? INT32_MAX : (int)left;
}

/* Wait up to wait_ms for input. Without a deadline (the transfer, not a
 * handshake or last words), the paired output sends keep-alives while
 * we wait, as rsync's perform_io does between polls, so a peer waiting on
 * us too keeps hearing from this side; a silent peer still times out. */
static bool wait_input(struct wire_in *in, int wait_ms)
{
	struct wire_out *ka = in->keepalive;

	if (!ka || !ka->mux || ka->divert || in->deadline_ms || wait_ms <= 0 || lull_ms(ka) <= 0)
		return wait_fd(in->err, in->fd, POLLIN, wait_ms);
	int64_t start = wire_now_ms(), retry_at = 0;
	for (;;) {
		int64_t since = start;
		/* a peer sending to us unmultiplexed (protocol < 30) has no
		 * way to keep-alive: as rsync's check_timeout does, our own
		 * writes then count as the link being alive */
		if (!in->mux) {
			int64_t wrote = __atomic_load_n(&ka->last_write_ms, __ATOMIC_RELAXED);
			since = wrote > since ? wrote : since;
		}
		int64_t left = since + wait_ms - wire_now_ms();
		if (left <= 0)
			return fail_timeout(in->err, wait_ms);
		int slice = lull_left_ms(ka);
		/* the output busy in another thread: do not spin on it */
		if (retry_at - wire_now_ms() > slice)
			slice = (int)(retry_at - wire_now_ms());
		if (slice > left)
			slice = (int)left;
		int r = poll_fd(in->err, in->fd, POLLIN, slice);
		if (r != 0)
			return r > 0;
		if (!wire_keepalive(ka))
			return false;
		retry_at = wire_now_ms() + KEEPALIVE_RETRY_MS;
	}
}

/* Make at least `need` raw bytes available in the buffer. */
static bool raw_fill(struct wire_in *in, size_t need)
{
	if (!in->buf)
		return wire_fail(in->err, RERR_MALLOC, "out of memory");
	if (need > in->cap)
		return wire_fail(in->err, RERR_STREAMIO, "internal: read of %zu bytes", need);
	while (in->end - in->pos < need) {
		if (in->pos > 0 && in->cap - in->pos < need) {
			memmove(in->buf, in->buf + in->pos, in->end - in->pos);
			in->end -= in->pos;
			in->pos = 0;
		}
		if (in->err->code || stop_reached(in->err) || signal_stops(in->err))
			return false;
		int wait_ms = read_wait_ms(in);
		if ((wait_ms > 0 || in->err->stop_at) && !wait_input(in, wait_ms))
			return false;
		if (in->err->code)
			return false;
		ssize_t r = read(in->fd, in->buf + in->end, in->cap - in->end);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN) {
			if (!wait_input(in, wait_ms))
				return false;
			continue;
		}
		if (r < 0) /* io.c: read_buf -> RERR_SOCKETIO; only EOF is a stream error */
			return wire_fail(in->err, RERR_SOCKETIO, "read error: %s (%d)",
					 strerror(errno), errno);
		if (r == 0)
			return wire_fail(in->err, RERR_STREAMIO,
					 "connection unexpectedly closed (%llu bytes received so far)",
					 (unsigned long long)in->total_read);
		in->end += (size_t)r;
		in->total_read += (uint64_t)r;
	}
	return true;
}

/* Read frame headers (and whole message frames) until a data frame with
 * bytes left is current. */
static bool next_data_frame(struct wire_in *in)
{
	uint8_t payload[MSG_PAYLOAD_MAX];

	while (in->data_left == 0) {
		if (!raw_fill(in, 4))
			return false;
		uint32_t hdr = get_le32(in->buf + in->pos);
		in->pos += 4;
		size_t len = hdr & 0xFFFFFF;
		int tag = (int)(hdr >> 24);
		if (tag < MPLEX_BASE)
			return wire_fail(in->err, RERR_STREAMIO,
					 "unexpected tag %d in multiplexed stream", tag - MPLEX_BASE);
		int code = tag - MPLEX_BASE;
		if (code == MSG_DATA) {
			in->data_left = len; /* an empty frame is a keep-alive */
			continue;
		}
		if (len > sizeof payload)
			return wire_fail(in->err, RERR_STREAMIO,
					 "multiplexing overflow: message %d of %zu bytes", code, len);
		if (!raw_fill(in, len))
			return false;
		memcpy(payload, in->buf + in->pos, len);
		in->pos += len;
		if (!in->on_msg)
			return wire_fail(in->err, RERR_STREAMIO, "unexpected message %d", code);
		if (!in->on_msg(in->msg_ctx, in, code, payload, len))
			return false;
	}
	return true;
}

bool wire_read(struct wire_in *in, void *dst, size_t n)
{
	uint8_t *d = dst;

	while (n > 0) {
		size_t avail;
		if (in->mux && !next_data_frame(in))
			return false;
		if (in->pos == in->end && !raw_fill(in, 1))
			return false;
		avail = in->end - in->pos;
		if (in->mux && avail > in->data_left)
			avail = in->data_left;
		if (avail > n)
			avail = n;
		memcpy(d, in->buf + in->pos, avail);
		if (in->tee.fn && !in->tee.fn(in->tee.ctx, d, avail))
			return false;
		in->pos += avail;
		if (in->mux)
			in->data_left -= avail;
		d += avail;
		n -= avail;
	}
	return true;
}

/* Consume the next n bytes, already buffered within the current data
 * frame, and return where they lie. */
static const uint8_t *take_in_place(struct wire_in *in, size_t n)
{
	const uint8_t *p = in->buf + in->pos;

	if (in->tee.fn && !in->tee.fn(in->tee.ctx, p, n))
		return NULL;
	in->pos += n;
	if (in->mux)
		in->data_left -= n;
	return p;
}

const uint8_t *wire_read_view(struct wire_in *in, uint8_t *scratch, size_t n)
{
	if (n == 0)
		return scratch;
	if (in->mux && !next_data_frame(in))
		return NULL;
	/* Bytes split by a frame header cannot be handed out in place. */
	if ((in->mux && n > in->data_left) || n > in->cap)
		return wire_read(in, scratch, n) ? scratch : NULL;
	if (in->end - in->pos < n && !raw_fill(in, n))
		return NULL;
	return take_in_place(in, n);
}

const uint8_t *wire_read_some(struct wire_in *in, size_t max, size_t *got)
{
	if (in->mux && !next_data_frame(in))
		return NULL;
	if (in->pos == in->end && !raw_fill(in, 1))
		return NULL;
	size_t n = in->end - in->pos;
	if (in->mux && n > in->data_left)
		n = in->data_left;
	if (n > max)
		n = max;
	*got = n;
	return take_in_place(in, n);
}

bool wire_peek_buffered(const struct wire_in *in, uint8_t *v)
{
	if ((in->mux && in->data_left == 0) || in->pos == in->end)
		return false;
	*v = in->buf[in->pos];
	return true;
}

bool wire_skip(struct wire_in *in, size_t n)
{
	uint8_t tmp[4096];

	while (n > 0) {
		size_t k = n < sizeof tmp ? n : sizeof tmp;
		if (!wire_read(in, tmp, k))
			return false;
		n -= k;
	}
	return true;
}

bool wire_read_u8(struct wire_in *in, uint8_t *v)
{
	return wire_read(in, v, 1);
}

bool wire_read_u16(struct wire_in *in, uint16_t *v)
{
	uint8_t b[2];

	if (!wire_read(in, b, 2))
		return false;
	*v = get_le16(b);
	return true;
}

bool wire_read_i32(struct wire_in *in, int32_t *v)
{
	uint8_t b[4];

	if (!wire_read(in, b, 4))
		return false;
	*v = (int32_t)get_le32(b);
	return true;
}

bool wire_read_longint(struct wire_in *in, int64_t *v)
{
	int32_t lo;
	uint8_t b[8];

	if (!wire_read_i32(in, &lo))
		return false;
	if (lo != -1) {
		*v = lo;
		return true;
	}
	if (!wire_read(in, b, 8))
		return false;
	*v = (int64_t)((uint64_t)get_le32(b) | (uint64_t)get_le32(b + 4) << 32);
	return true;
}

bool wire_read_varint(struct wire_in *in, int32_t *v)
{
	uint8_t b[5];
	int extra;

	if (!wire_read(in, b, 1))
		return false;
	extra = prefix_extra(b[0]);
	if (extra > 4)
		return wire_fail(in->err, RERR_STREAMIO, "overflow in read_varint()");
	if (extra && !wire_read(in, b + 1, (size_t)extra))
		return false;
	return varint_decode(b, (size_t)(1 + extra), v) > 0;
}

bool wire_read_varlong(struct wire_in *in, int min_bytes, int64_t *v)
{
	uint8_t b[9];
	int extra;

	if (min_bytes < 1 || min_bytes > 8)
		return wire_fail(in->err, RERR_STREAMIO, "internal: varlong min %d", min_bytes);
	if (!wire_read(in, b, (size_t)min_bytes))
		return false;
	extra = prefix_extra(b[0]);
	if (min_bytes + extra > 9)
		return wire_fail(in->err, RERR_STREAMIO, "overflow in read_varlong()");
	if (extra && !wire_read(in, b + min_bytes, (size_t)extra))
		return false;
	return varlong_decode(b, (size_t)(min_bytes + extra), min_bytes, v) > 0;
}

bool wire_read_varint30(struct wire_in *in, int32_t *v)
{
	return in->protocol >= 30 ? wire_read_varint(in, v) : wire_read_i32(in, v);
}

bool wire_read_varlong30(struct wire_in *in, int min_bytes, int64_t *v)
{
	return in->protocol >= 30 ? wire_read_varlong(in, min_bytes, v)
				  : wire_read_longint(in, v);
}

bool wire_read_vstring(struct wire_in *in, char *dst, size_t max)
{
	uint8_t b;
	size_t len;

	if (!wire_read_u8(in, &b))
		return false;
	len = b;
	if (b & 0x80) {
		uint8_t lo;
		if (!wire_read_u8(in, &lo))
			return false;
		len = (size_t)(b & 0x7F) << 8 | lo;
	}
	if (len >= max)
		return wire_fail(in->err, RERR_STREAMIO,
				 "string of %zu bytes exceeds the limit of %zu", len, max - 1);
	if (!wire_read(in, dst, len))
		return false;
	dst[len] = '\0';
	return true;
}

bool wire_read_ndx(struct wire_in *in, int32_t *ndx)
{
	uint8_t b[6];
	size_t have = 0;
	int r;

	if (in->protocol < 30)
		return wire_read_i32(in, ndx);
	/* Read the shortest prefix the decoder accepts: it says how much more. */
	for (;;) {
		if (!wire_read(in, b + have, 1))
			return false;
		have++;
		r = ndx_decode(b, have, ndx, &in->ndx_prev_pos, &in->ndx_prev_neg);
		if (r > 0)
			return true;
		if (r < 0 || have >= sizeof b)
			return wire_fail(in->err, RERR_STREAMIO, "invalid file index on the wire");
	}
}

bool wire_read_line(struct wire_in *in, char *dst, size_t max)
{
	size_t n = 0;
	char c;

	for (;;) {
		if (!wire_read(in, &c, 1))
			return false;
		if (c == '\r')
			continue;
		if (c == '\n' || c == '\0')
			break;
		if (n + 1 >= max)
			return wire_fail(in->err, RERR_STREAMIO, "line from peer too long");
		dst[n++] = c;
	}
	dst[n] = '\0';
	return c == '\n' || wire_fail(in->err, RERR_STREAMIO, "NUL byte in a text line");
}

/* ---- output ---- */

void wire_out_init(struct wire_out *out, int fd, struct wire_error *err)
{
	pthread_mutexattr_t attr;

	memset(out, 0, sizeof *out);
	out->fd = fd;
	out->err = err;
	out->cap = WIRE_OUT_CAP;
	out->buf = malloc(out->cap);
	out->ndx_prev_pos = -1;
	out->ndx_prev_neg = 1;
	out->protocol = 32;
	out->last_write_ms = wire_now_ms();
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&out->lock, &attr);
	pthread_mutexattr_destroy(&attr);
}

void wire_out_free(struct wire_out *out)
{
	free(out->buf);
	out->buf = NULL;
	pthread_mutex_destroy(&out->lock);
}

void wire_out_lock(struct wire_out *out)
{
	pthread_mutex_lock(&out->lock);
}

void wire_out_unlock(struct wire_out *out)
{
	pthread_mutex_unlock(&out->lock);
}

static int64_t usec_between(const struct timespec *a, const struct timespec *b)
{
	return (int64_t)(b->tv_sec - a->tv_sec) * 1000000 + (b->tv_nsec - a->tv_nsec) / 1000;
}

/* --bwlimit: after writing, sleep off what was written beyond the rate
 * (rsync io.c: sleep_for_bwlimit). Sleeps shorter than 0.1 s are saved up,
 * so small writes do not each pay for a timer. */
static void bwlimit_sleep(struct wire_out *out, size_t written)
{
	const int64_t usec_per_kib = 1000000 / 1024;
	struct timespec now, after;

	if (stop_signal_pending()) /* the rest goes out at once */
		return;
	out->bw_backlog += (int64_t)written;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (out->bw_prior.tv_sec || out->bw_prior.tv_nsec) {
		int64_t elapsed = usec_between(&out->bw_prior, &now);
		out->bw_backlog -= elapsed * out->bwlimit / usec_per_kib;
		if (out->bw_backlog < 0)
			out->bw_backlog = 0;
	}
	int64_t sleep_usec = out->bw_backlog * usec_per_kib / out->bwlimit;
	if (sleep_usec < 100000) {
		out->bw_prior = now;
		return;
	}
	struct timespec ts = {.tv_sec = sleep_usec / 1000000,
			      .tv_nsec = (long)(sleep_usec % 1000000) * 1000};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR && !stop_signal_pending())
		;
	clock_gettime(CLOCK_MONOTONIC, &after);
	out->bw_slept_ns += (uint64_t)usec_between(&now, &after) * 1000u;
	out->bw_prior = after;
	out->bw_backlog = (sleep_usec - usec_between(&now, &after)) * out->bwlimit / usec_per_kib;
}

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static bool raw_write_loop(struct wire_out *out, const uint8_t *p, size_t len);

/* Write buf[0..len) to the fd, all of it, counting in wait_ns the time
 * write() took (it blocks when the socket is full); --bwlimit sleeps are
 * left out (see wire_out_wait_ns). */
static bool raw_write_all(struct wire_out *out, const uint8_t *p, size_t len)
{
	uint64_t t0 = mono_ns(), slept0 = out->bw_slept_ns;
	bool ok = raw_write_loop(out, p, len);
	uint64_t spent = mono_ns() - t0, slept = out->bw_slept_ns - slept0;

	out->wait_ns += spent > slept ? spent - slept : 0;
	return ok;
}

uint64_t wire_out_wait_ns(const struct wire_out *out)
{
	uint64_t ns = out->wait_ns;

	/* the rate's time for every byte produced, buffered ones included:
	 * the sleeps themselves come in lumps */
	if (out->bwlimit > 0)
		ns += (out->total_written + out->len) * 1000000000u /
		      ((uint64_t)out->bwlimit * 1024u);
	return ns;
}

size_t wire_out_queued(const struct wire_out *out)
{
	struct sendq_state st;

	return sendq_read(out->fd, &st) ? (size_t)st.queued : 0;
}

bool wire_out_backlog(const struct wire_out *out, struct sendq_state *st, uint64_t *buffered)
{
	*buffered = out->len;
	return sendq_read(out->fd, st);
}

static bool raw_write_loop(struct wire_out *out, const uint8_t *p, size_t len)
{
	/* With a rate limit, write in pieces of 1/8 s worth (at least 512
	 * bytes), so the stream goes out evenly. */
	size_t max_piece = out->bwlimit ? (size_t)(out->bwlimit > 4 ? out->bwlimit * 128 : 512)
					: len;
	while (len > 0) {
		if (stop_reached(out->err))
			return false;
		if ((out->timeout_ms > 0 || out->err->stop_at) &&
		    !wait_fd(out->err, out->fd, POLLOUT, out->timeout_ms))
			return false;
		ssize_t w = write(out->fd, p, len < max_piece ? len : max_piece);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			if (!wait_fd(out->err, out->fd, POLLOUT, out->timeout_ms))
				return false;
			continue;
		}
		if (w < 0)
			return wire_fail(out->err, RERR_STREAMIO, "write error: %s",
					 strerror(errno));
		p += w;
		len -= (size_t)w;
		out->total_written += (uint64_t)w;
		__atomic_store_n(&out->last_write_ms, wire_now_ms(), __ATOMIC_RELAXED);
		if (out->bwlimit)
			bwlimit_sleep(out, (size_t)w);
	}
	return true;
}

/*
 * In multiplexed mode the buffer holds finished frames followed by at most
 * one open data frame whose 4-byte header slot starts at frame_start, so a
 * flush is a single write() of many frames.
 */
static void close_frame(struct wire_out *out)
{
	if (!out->frame_open)
		return;
	size_t payload = out->len - out->frame_start - 4;
	if (payload == 0)
		out->len = out->frame_start; /* drop the empty frame */
	else
		put_le32(out->buf + out->frame_start,
			 (uint32_t)(MPLEX_BASE + MSG_DATA) << 24 | (uint32_t)payload);
	out->frame_open = false;
}

static bool flush_locked(struct wire_out *out)
{
	bool ok;

	if (!out->buf)
		return wire_fail(out->err, RERR_MALLOC, "out of memory");
	close_frame(out);
	/* between whole frames: what is buffered goes with the error exit */
	if (signal_stops(out->err))
		return false;
	ok = raw_write_all(out, out->buf, out->len);
	out->len = 0;
	return ok;
}

bool wire_keepalive(struct wire_out *out)
{
	static const uint8_t empty_data[4] = {0, 0, 0, MPLEX_BASE + MSG_DATA};
	bool ok = true;

	if (!out->mux || out->divert || lull_ms(out) <= 0 || lull_left_ms(out) > 1)
		return true;
	/* busy: its holder is writing, which keeps the peer's clock too */
	if (pthread_mutex_trylock(&out->lock) != 0)
		return true;
	if (!out->err->code && out->buf) {
		close_frame(out);
		if (out->len == 0) { /* else what is buffered goes out instead */
			memcpy(out->buf, empty_data, sizeof empty_data);
			out->len = sizeof empty_data;
		}
		ok = flush_locked(out);
	}
	pthread_mutex_unlock(&out->lock);
	return ok;
}

bool wire_flush(struct wire_out *out)
{
	bool ok;

	pthread_mutex_lock(&out->lock);
	ok = flush_locked(out);
	pthread_mutex_unlock(&out->lock);
	return ok;
}

static bool write_locked(struct wire_out *out, const uint8_t *src, size_t n)
{
	while (n > 0) {
		if (out->err->code)
			return false;
		if (out->mux && !out->frame_open) {
			if (out->cap - out->len < 4 + 1 && !flush_locked(out))
				return false;
			out->frame_start = out->len;
			out->len += 4;
			out->frame_open = true;
		}
		size_t room = out->cap - out->len;
		if (out->mux) {
			size_t frame_room = MUX_FRAME_MAX - (out->len - out->frame_start - 4);
			if (frame_room < room)
				room = frame_room;
		}
		if (room == 0) {
			if (out->mux && out->len - out->frame_start - 4 >= MUX_FRAME_MAX)
				close_frame(out);
			else if (!flush_locked(out))
				return false;
			continue;
		}
		size_t k = n < room ? n : room;
		memcpy(out->buf + out->len, src, k);
		out->len += k;
		src += k;
		n -= k;
	}
	return true;
}

bool wire_write(struct wire_out *out, const void *src, size_t n)
{
	bool ok;

	pthread_mutex_lock(&out->lock);
	if (out->divert)
		ok = true;
	else
		ok = out->buf ? write_locked(out, src, n)
			      : wire_fail(out->err, RERR_MALLOC, "out of memory");
	if (ok && out->tee.fn)
		ok = out->tee.fn(out->tee.ctx, src, n);
	pthread_mutex_unlock(&out->lock);
	return ok;
}

bool wire_write_u8(struct wire_out *out, uint8_t v)
{
	return wire_write(out, &v, 1);
}

bool wire_write_u16(struct wire_out *out, uint16_t v)
{
	uint8_t b[2] = {(uint8_t)v, (uint8_t)(v >> 8)};

	return wire_write(out, b, 2);
}

bool wire_write_i32(struct wire_out *out, int32_t v)
{
	uint8_t b[4];

	put_le32(b, (uint32_t)v);
	return wire_write(out, b, 4);
}

bool wire_write_longint(struct wire_out *out, int64_t v)
{
	uint8_t b[12];

	if (v >= 0 && v <= 0x7FFFFFFF)
		return wire_write_i32(out, (int32_t)v);
	put_le32(b, 0xFFFFFFFFu);
	put_le32(b + 4, (uint32_t)v);
	put_le32(b + 8, (uint32_t)((uint64_t)v >> 32));
	return wire_write(out, b, 12);
}

bool wire_write_varint(struct wire_out *out, int32_t v)
{
	uint8_t b[9];

	return wire_write(out, b, varint_encode(b, v));
}

bool wire_write_varlong(struct wire_out *out, int64_t v, int min_bytes)
{
	uint8_t b[9];

	return wire_write(out, b, varlong_encode(b, v, min_bytes));
}

bool wire_write_varint30(struct wire_out *out, int32_t v)
{
	return out->protocol >= 30 ? wire_write_varint(out, v) : wire_write_i32(out, v);
}

bool wire_write_varlong30(struct wire_out *out, int64_t v, int min_bytes)
{
	return out->protocol >= 30 ? wire_write_varlong(out, v, min_bytes)
				   : wire_write_longint(out, v);
}

bool wire_write_vstring(struct wire_out *out, const char *s)
{
	size_t len = strlen(s);
	uint8_t b[2];

	if (len > 0x7FFF)
		return wire_fail(out->err, RERR_PROTOCOL, "string too long to send");
	if (len >= 0x80) {
		b[0] = (uint8_t)(len >> 8 | 0x80);
		b[1] = (uint8_t)len;
		if (!wire_write(out, b, 2))
			return false;
	} else if (!wire_write_u8(out, (uint8_t)len)) {
		return false;
	}
	return wire_write(out, s, len);
}

bool wire_write_ndx(struct wire_out *out, int32_t ndx)
{
	uint8_t b[6];
	bool ok;

	if (out->protocol < 30)
		return wire_write_i32(out, ndx);
	pthread_mutex_lock(&out->lock);
	ok = wire_write(out, b, ndx_encode(b, ndx, &out->ndx_prev_pos, &out->ndx_prev_neg));
	pthread_mutex_unlock(&out->lock);
	return ok;
}

bool wire_send_msg(struct wire_out *out, int code, const void *payload, size_t len)
{
	bool ok = true;

	if (len > 0xFFFFFF)
		return wire_fail(out->err, RERR_PROTOCOL, "message too long to send");
	pthread_mutex_lock(&out->lock);
	if (!out->mux) {
		/* An unmultiplexed stream cannot carry messages (protocol < 30
		 * client output); rsync drops them too. */
		pthread_mutex_unlock(&out->lock);
		return true;
	}
	close_frame(out);
	if (out->cap - out->len < 4 + len)
		ok = flush_locked(out);
	if (ok && 4 + len > out->cap) {
		uint8_t hdr[4];
		put_le32(hdr, (uint32_t)(MPLEX_BASE + code) << 24 | (uint32_t)len);
		ok = raw_write_all(out, hdr, 4) && raw_write_all(out, payload, len);
	} else if (ok) {
		put_le32(out->buf + out->len, (uint32_t)(MPLEX_BASE + code) << 24 | (uint32_t)len);
		memcpy(out->buf + out->len + 4, payload, len);
		out->len += 4 + len;
		ok = flush_locked(out);
	}
	pthread_mutex_unlock(&out->lock);
	return ok;
}

bool wire_send_msg_ahead(struct wire_out *out, int code, const void *payload, size_t len)
{
	uint8_t hdr[4];
	bool ok;

	if (len > 0xFFFFFF)
		return wire_fail(out->err, RERR_PROTOCOL, "message too long to send");
	pthread_mutex_lock(&out->lock);
	if (!out->mux) {
		pthread_mutex_unlock(&out->lock);
		return true;
	}
	/* straight to the fd: what is buffered has not been written yet */
	put_le32(hdr, (uint32_t)(MPLEX_BASE + code) << 24 | (uint32_t)len);
	ok = raw_write_all(out, hdr, 4) && raw_write_all(out, payload, len);
	pthread_mutex_unlock(&out->lock);
	return ok;
}
