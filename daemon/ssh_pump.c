/*
 * The SSH listener's data path: the byte pump between an exec channel and
 * the serving process, and the plain-server shim in front of it (see
 * daemon/ssh_priv.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/ssh_priv.h"
#include "proto/base/fdio.h"
#include "proto/base/outfilter.h"
#include "proto/core/session.h"
#include "proto/base/wire.h"

#define PUMP_CHUNK (256 * 1024)
#define SHIM_TIMEOUT_MS (60 * 1000)    /* the whole start-up dialogue */
#define SHIM_LINE_MAX 4096
#define SHIM_MAX_LINES 10000           /* motd lines before "@RSYNCD: OK" */
#define MIN_PROTOCOL 20                /* rsync's MIN/MAX_PROTOCOL_VERSION */
#define MAX_PROTOCOL 40

void ssh_channel_error(ssh_channel channel, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof msg - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof msg - 2)
		n = (int)sizeof msg - 2;
	/* escaped as every other message ferry writes (proto/core/msg.h): the
	 * daemon's text may carry a client's bytes */
	char shown[5 * sizeof msg + 1];
	size_t len = out_escape_log(shown, sizeof shown - 1, msg, (size_t)n);
	shown[len++] = '\n';
	ssh_channel_write_stderr(channel, "ferry: ", 7);
	ssh_channel_write_stderr(channel, shown, (uint32_t)len);
}

/* ---- the pump ---- */

struct chunk {
	char *data;
	size_t len, off;
};

struct pump {
	ssh_session session;
	ssh_channel channel;
	int fd;
	struct chunk in;   /* client -> serving process */
	struct chunk out;  /* serving process -> client */
	bool client_eof;   /* passed on to fd */
	bool server_eof;
	bool failed;
};

/* Client to server: fill from the channel when empty, then write to fd. */
static bool move_in(struct pump *p)
{
	bool moved = false;

	if (p->in.len == 0 && !p->client_eof) {
		int n = ssh_channel_read_nonblocking(p->channel, p->in.data, PUMP_CHUNK, 0);
		if (n > 0) {
			p->in.len = (size_t)n;
			p->in.off = 0;
			moved = true;
		} else if (n == SSH_ERROR) {
			p->failed = true;
		} else if (ssh_channel_is_eof(p->channel)) {
			p->client_eof = true;
			shutdown(p->fd, SHUT_WR);
			moved = true;
		}
		/* The client's own stderr has no reader here: drop it. */
		char junk[4096];
		while (ssh_channel_read_nonblocking(p->channel, junk, sizeof junk, 1) > 0)
			moved = true;
	}
	if (p->in.len > p->in.off) {
		ssize_t w = write(p->fd, p->in.data + p->in.off, p->in.len - p->in.off);
		if (w > 0) {
			p->in.off += (size_t)w;
			moved = true;
		} else if (w < 0 && errno != EAGAIN && errno != EINTR) {
			/* the server stopped reading: it is exiting; keep
			 * relaying what it still says */
			p->in.off = p->in.len;
		}
		if (p->in.off == p->in.len)
			p->in.len = p->in.off = 0;
	}
	return moved;
}

/* Server to client: fill from fd when empty, then write what the
 * client's window allows. */
static bool move_out(struct pump *p)
{
	bool moved = false;

	if (p->out.len == 0 && !p->server_eof) {
		ssize_t r = read(p->fd, p->out.data, PUMP_CHUNK);
		if (r > 0) {
			p->out.len = (size_t)r;
			p->out.off = 0;
			moved = true;
		} else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
			p->server_eof = true;
			moved = true;
		}
	}
	if (p->out.len > p->out.off) {
		uint32_t window = ssh_channel_window_size(p->channel);
		size_t want = p->out.len - p->out.off;
		if (window > 0) {
			int w = ssh_channel_write(p->channel, p->out.data + p->out.off,
						  (uint32_t)(want < window ? want : window));
			if (w == SSH_ERROR)
				p->failed = true;
			else if (w > 0) {
				p->out.off += (size_t)w;
				moved = true;
			}
		}
		if (p->out.off == p->out.len)
			p->out.len = p->out.off = 0;
	}
	return moved;
}

/* Sleep until the SSH socket or fd can make progress (or a second passed),
 * then let libssh handle what arrived and flush what it holds. */
static void pump_wait(struct pump *p, ssh_event ev)
{
	int flags = ssh_get_poll_flags(p->session);
	struct pollfd pf[2] = {
		{.fd = ssh_get_fd(p->session),
		 .events = POLLIN | ((flags & SSH_WRITE_PENDING) ? POLLOUT : 0)},
		{.fd = p->fd,
		 .events = (short)((p->out.len == 0 && !p->server_eof ? POLLIN : 0) |
				   (p->in.len > p->in.off ? POLLOUT : 0))},
	};
	/* channel data libssh already holds needs no wait */
	int timeout = p->in.len == 0 && ssh_channel_poll(p->channel, 0) > 0 ? 0 : 1000;
	if (poll(pf, 2, timeout) < 0 && errno != EINTR)
		p->failed = true;
	if (ssh_event_dopoll(ev, 0) == SSH_ERROR && !ssh_is_connected(p->session))
		p->failed = true;
}

int ssh_pump_run(ssh_session session, ssh_channel channel, int fd)
{
	struct pump p = {.session = session, .channel = channel, .fd = fd};
	ssh_event ev = ssh_event_new();

	p.in.data = malloc(PUMP_CHUNK);
	p.out.data = malloc(PUMP_CHUNK);
	if (!ev || !p.in.data || !p.out.data || ssh_event_add_session(ev, session) != SSH_OK)
		p.failed = true;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	ssh_set_blocking(session, 0);
	while (!p.failed) {
		bool moved = move_in(&p);
		moved |= move_out(&p);
		if (p.server_eof && p.out.len == 0)
			break;
		if (ssh_channel_is_closed(channel) || !ssh_is_connected(session))
			p.failed = true;
		if (!moved && !p.failed)
			pump_wait(&p, ev);
	}
	ssh_set_blocking(session, 1);
	if (ev) {
		ssh_event_remove_session(ev, session);
		ssh_event_free(ev);
	}
	free(p.in.data);
	free(p.out.data);
	return p.failed ? -1 : 0;
}

/* ---- the plain-server shim ---- */

/* One line from the daemon on fd, without its newline; false on end of
 * file, time-out or an over-long line. Reads a byte at a time so that
 * nothing after the line is consumed. */
static bool read_daemon_line(int fd, char *line, size_t size)
{
	size_t n = 0;

	for (;;) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		if (poll(&pf, 1, SHIM_TIMEOUT_MS) <= 0)
			return false;
		char ch;
		ssize_t r = read(fd, &ch, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		if (ch == '\n')
			break;
		if (n + 1 >= size)
			return false;
		line[n++] = ch;
	}
	if (n > 0 && line[n - 1] == '\r')
		n--;
	line[n] = '\0';
	return true;
}

/* The rsh-mode version exchange with the client: our int32 out, theirs in
 * (compat.c: setup_protocol, remote_protocol == 0). */
static int exchange_version(ssh_channel channel, int *client_version)
{
	unsigned char buf[4];
	uint32_t ours = PROTOCOL_NEWEST;

	for (int i = 0; i < 4; i++)
		buf[i] = (unsigned char)(ours >> (8 * i));
	if (ssh_channel_write(channel, buf, 4) != 4)
		return -1;
	size_t got = 0;
	while (got < 4) {
		int n = ssh_channel_read_timeout(channel, buf + got, (uint32_t)(4 - got), 0,
						 SHIM_TIMEOUT_MS);
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	int32_t v = (int32_t)((uint32_t)buf[0] | (uint32_t)buf[1] << 8 | (uint32_t)buf[2] << 16 |
			      (uint32_t)buf[3] << 24);
	*client_version = v;
	return 0;
}

/* Greeting, module, then wait for "@RSYNCD: OK" (clientserver.c:
 * start_inband_exchange, the client side). */
static int daemon_handshake(ssh_channel channel, int fd, const struct ssh_cmd *cmd, int version)
{
	char line[SHIM_LINE_MAX];

	if (!read_daemon_line(fd, line, sizeof line) || strncmp(line, "@RSYNCD: ", 9) != 0) {
		ssh_channel_error(channel, "the daemon did not greet us");
		return RERR_STARTCLIENT;
	}
	char hello[128];
	int n = snprintf(hello, sizeof hello, "@RSYNCD: %d.0 md5\n", version);
	if (!fd_write_all(fd, hello, (size_t)n) || !fd_write_all(fd, cmd->module, strlen(cmd->module)) ||
	    !fd_write_all(fd, "\n", 1)) {
		ssh_channel_error(channel, "lost the daemon during start-up");
		return RERR_STARTCLIENT;
	}
	for (int i = 0; i < SHIM_MAX_LINES; i++) {
		if (!read_daemon_line(fd, line, sizeof line)) {
			ssh_channel_error(channel, "lost the daemon during start-up");
			return RERR_STARTCLIENT;
		}
		if (strcmp(line, "@RSYNCD: OK") == 0)
			return 0;
		if (strncmp(line, "@ERROR", 6) == 0) {
			const char *msg = line + 6;
			msg += strspn(msg, ": ");
			ssh_channel_error(channel, "%s", msg);
			return RERR_STARTCLIENT;
		}
		if (strncmp(line, "@RSYNCD: ", 9) == 0) {
			ssh_channel_error(channel, "unexpected daemon reply: %s", line);
			return RERR_STARTCLIENT;
		}
		/* anything else is the motd: an rsh-mode client has no place
		 * for it */
	}
	ssh_channel_error(channel, "the daemon's start-up text is too long");
	return RERR_STARTCLIENT;
}

int ssh_shim_start(ssh_session session, ssh_channel channel, int fd, const struct ssh_cmd *cmd)
{
	int version = 0;

	ssh_set_blocking(session, 1);
	if (exchange_version(channel, &version) < 0)
		return RERR_STREAMIO;
	if (version < MIN_PROTOCOL || version > MAX_PROTOCOL) {
		ssh_channel_error(channel, "protocol version mismatch -- is your shell clean? "
					   "(client sent %d)", version);
		return RERR_PROTOCOL;
	}
	int rc = daemon_handshake(channel, fd, cmd, version);
	if (rc)
		return rc;
	/* the argument list, as a daemon client sends it (io.c: write args
	 * after "@RSYNCD: OK"; NUL-separated from protocol 30) */
	int proto = version < PROTOCOL_NEWEST ? version : PROTOCOL_NEWEST;
	char sep = proto >= 30 ? '\0' : '\n';
	for (int i = 0; i < cmd->nargs; i++) {
		if (!fd_write_all(fd, cmd->args[i], strlen(cmd->args[i])) || !fd_write_all(fd, &sep, 1)) {
			ssh_channel_error(channel, "lost the daemon during start-up");
			return RERR_STARTCLIENT;
		}
	}
	if (!fd_write_all(fd, &sep, 1)) {
		ssh_channel_error(channel, "lost the daemon during start-up");
		return RERR_STARTCLIENT;
	}
	return 0;
}
