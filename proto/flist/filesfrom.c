/*
 * --files-from lists (see filesfrom.h).
 */
#include "proto/base/byteorder.h"
#include "proto/flist/filesfrom.h"
#include "proto/base/oppath.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto/core/session.h"
#include "proto/base/wire.h"
#include "proto/base/stop_signal.h"

#define POLL_TICK_MS 200

void names_from_fd(struct names_source *ns, int fd, bool from0)
{
	memset(ns, 0, sizeof *ns);
	ns->fd = fd;
	ns->from0 = from0;
}

void names_from_peer(struct names_source *ns, struct wire_in *in)
{
	memset(ns, 0, sizeof *ns);
	ns->fd = -1;
	ns->in = in;
}

int names_open_local(const char *path, bool insecure, int confine_fd)
{
	if (strcmp(path, "-") == 0)
		return fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0);
	return oppath_open_under(confine_fd, AT_FDCWD, path, O_RDONLY, 0, insecure);
}

/* Refill the buffer of a local list: 1, 0 at its end, -1 on error. */
static int fill(struct names_source *ns)
{
	ssize_t n;

	if (ns->eof)
		return 0;
	do {
		n = read(ns->fd, ns->buf, sizeof ns->buf);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	if (n == 0) {
		ns->eof = true;
		return 0;
	}
	ns->pos = 0;
	ns->end = (size_t)n;
	return 1;
}

/* One line of a local list, blank lines and comments skipped
 * (io.c: read_line with RL_DUMP_COMMENTS). */
static int next_local(struct names_source *ns, char *out, size_t size)
{
	for (;;) {
		size_t len = 0;
		bool ended = false;
		while (!ended) {
			if (ns->pos == ns->end) {
				int r = fill(ns);
				if (r < 0)
					return -1;
				if (r == 0)
					break;
			}
			unsigned char c = ns->buf[ns->pos++];
			bool eol = ns->from0 ? c == '\0' : (c == '\n' || c == '\r');
			if (eol && len == 0)
				continue;
			if (eol)
				ended = true;
			else if (len + 1 < size)
				out[len++] = (char)c;
		}
		out[len] = '\0';
		if (len == 0)
			return 0;
		if (out[0] == '#' || out[0] == ';')
			continue;
		return 1;
	}
}

/* One NUL-terminated name from the peer; the empty name ends the list. */
static int next_peer(struct names_source *ns, char *out, size_t size)
{
	size_t len = 0;

	for (;;) {
		char c;
		if (!wire_read(ns->in, &c, 1))
			return -1;
		if (c == '\0')
			break;
		if (len + 1 < size)
			out[len++] = c;
	}
	out[len] = '\0';
	return len ? 1 : 0;
}

int names_next(struct names_source *ns, char *out, size_t size)
{
	if (size < 2)
		return -1;
	return ns->fd >= 0 ? next_local(ns, out, size) : next_peer(ns, out, size);
}

/* A --files-from name made relative to the source directory: leading
 * slashes and ".." that would climb out go, "." dirs go unless -R keeps
 * them. mirrors rsync util1.c:sanitize_path(..., SP_KEEP_DOT_DIRS) */
void names_sanitize(char *p, bool keep_dots)
{
	path_sanitize(p, 0, keep_dots);
}

/* rsync util1.c:sanitize_path() in place, with its depth: up to depth
 * leading ".." stay (a name that many levels down may climb that far). */
void path_sanitize(char *p, int depth, bool keep_dots)
{
	char *start = p, *sanp = p, *dest = p;

	if (!keep_dots)
		while (p[0] == '.' && p[1] == '/')
			p += 2;
	while (*p) {
		if (*p == '/') {
			p++;
			continue;
		}
		if (!keep_dots && *p == '.' && (p[1] == '/' || p[1] == '\0')) {
			p++;
			continue;
		}
		if (p[0] == '.' && p[1] == '.' && (p[2] == '/' || p[2] == '\0')) {
			if (depth <= 0 || sanp != start) {
				p += 2;
				if (sanp != start) {
					--sanp;
					while (sanp > start && sanp[-1] != '/')
						sanp--;
				}
				continue;
			}
			/* a leading ".." it may keep: the climb starts past it */
			depth--;
			start = sanp + 3;
		}
		while (*p && (*sanp++ = *p++) != '/')
			;
	}
	if (sanp == dest)
		*sanp++ = '.';
	*sanp = '\0';
}

/* ---- forwarding ---- */

static bool forward_fail(struct names_forwarder *f, int code, const char *what)
{
	f->failed = true;
	snprintf(f->why, sizeof f->why, "%s", what);
	return wire_fail(&f->s->err, code, "forwarding the --files-from list: %s", what);
}

/* Write all of p to the peer, waiting in short ticks so an abandoned
 * forwarder stops. The caller holds the output lock. */
static bool write_fully(struct names_forwarder *f, const unsigned char *p, size_t len)
{
	struct wire_out *out = &f->s->out;
	int waited = 0;

	while (len > 0) {
		if (atomic_load(&f->stop))
			return forward_fail(f, RERR_STREAMIO, "stopped");
		struct pollfd pf = {.fd = out->fd, .events = POLLOUT};
		int r = poll(&pf, 1, POLL_TICK_MS);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0) {
			waited += POLL_TICK_MS;
			if (out->timeout_ms > 0 && waited >= out->timeout_ms)
				return forward_fail(f, RERR_TIMEOUT, "timeout");
			continue;
		}
		ssize_t w = send(out->fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0 && errno == ENOTSOCK)
			w = write(out->fd, p, len < PIPE_BUF ? len : PIPE_BUF);
		if (w < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (w < 0)
			return forward_fail(f, RERR_STREAMIO, strerror(errno));
		waited = 0;
		p += w;
		len -= (size_t)w;
		out->total_written += (uint64_t)w;
	}
	return true;
}

/* Send one chunk, in a MSG_DATA frame unless the protocol wants it raw. */
static bool send_chunk(struct names_forwarder *f, unsigned char *frame, size_t len)
{
	struct wire_out *out = &f->s->out;
	unsigned char *p = frame + 4;

	if (!f->raw) {
		put_le32(frame, (uint32_t)(MPLEX_BASE + MSG_DATA) << 24 | (uint32_t)len);
		p = frame;
		len += 4;
	}
	wire_out_lock(out);
	bool ok = write_fully(f, p, len);
	wire_out_unlock(out);
	return ok;
}

/* Turn line ends into NULs and squeeze runs of NULs (a run at the start
 * too when the last chunk ended one); returns the new length.
 * mirrors rsync io.c:forward_filesfrom_data() */
static size_t squeeze(unsigned char *buf, size_t n, bool from0, bool *last_nul)
{
	size_t t = 0;
	bool prev_nul = *last_nul;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = buf[i];
		if (!from0 && (c == '\n' || c == '\r'))
			c = '\0';
		if (c == '\0' && prev_nul)
			continue;
		buf[t++] = c;
		prev_nul = c == '\0';
	}
	if (n)
		*last_nul = prev_nul;
	return t;
}

static void *forward_main(void *arg)
{
	struct names_forwarder *f = arg;
	unsigned char *frame = f->frame;
	bool last_nul = true;

	for (;;) {
		if (atomic_load(&f->stop)) {
			forward_fail(f, RERR_STREAMIO, "stopped");
			return NULL;
		}
		struct pollfd pf = {.fd = f->src_fd, .events = POLLIN};
		int r = poll(&pf, 1, POLL_TICK_MS);
		if (r == 0 || (r < 0 && errno == EINTR))
			continue;
		ssize_t n = read(f->src_fd, frame + 4, sizeof f->frame - 4);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* The end (a read error ends the list too, as in rsync):
			 * finish the last name, then an empty one. */
			frame[4] = frame[5] = '\0';
			send_chunk(f, frame, last_nul ? 1 : 2);
			return NULL;
		}
		size_t len = squeeze(frame + 4, (size_t)n, f->from0, &last_nul);
		if (len && !send_chunk(f, frame, len))
			return NULL;
	}
}

bool names_forward_start(struct names_forwarder *f, struct session *s, int src_fd, bool from0)
{
	memset(f, 0, sizeof *f);
	f->s = s;
	f->src_fd = src_fd;
	f->from0 = from0;
	/* Before protocol 31 the names go unframed (io.c:
	 * start_filesfrom_forwarding). */
	f->raw = s->protocol < 31 || !s->out.mux;
	atomic_init(&f->stop, false);
	if (!wire_flush(&s->out))
		return false;
	if (stop_signal_thread_create(&f->thread, forward_main, f) != 0)
		return wire_fail(&s->err, RERR_IPC, "cannot start the --files-from forwarder");
	f->running = true;
	return true;
}

bool names_forward_finish(struct names_forwarder *f, bool abandon)
{
	if (!f->running)
		return !f->failed;
	if (abandon)
		atomic_store(&f->stop, true);
	pthread_join(f->thread, NULL);
	f->running = false;
	return !f->failed;
}
