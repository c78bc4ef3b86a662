/*
 * RSYNC_PROXY: reach a daemon through an HTTP proxy's CONNECT method
 * (rsync socket.c: open_socket_out, establish_proxy_connection).
 * RSYNC_PROXY is "[USER:PASS@]HOST:PORT"; with a user the request carries
 * "Proxy-Authorization: Basic base64(USER:PASS)".
 */
#include "client/connect.h"
#include "proto/base/outfilter.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proto/base/checksum.h"
#include "proto/base/fdio.h"

#define PROXY_BUF 1024          /* a request or one response line */
#define PROXY_MAX_HEADER_LINES 100
/* rsync waits for a proxy's answer forever; a silent proxy must not hang
 * a client (or a cron job) for good, so without --contimeout we give up
 * after this long. */
#define PROXY_DEFAULT_TIMEOUT_SEC 60

struct proxy_spec {
	char user[256], pass[256];
	char host[256];
	int port;
	bool has_auth;
};

/* Split "[USER:PASS@]HOST:PORT"; false after saying what is wrong. */
static bool proxy_spec_parse(const char *spec, struct proxy_spec *ps)
{
	const char *at = strrchr(spec, '@'), *hp = at ? at + 1 : spec;

	memset(ps, 0, sizeof *ps);
	if (at) {
		const char *colon = memchr(spec, ':', (size_t)(at - spec));
		if (!colon) {
			fprintf(stderr, "ferry: invalid proxy specification: should be "
					"USER:PASS@HOST:PORT\n");
			return false;
		}
		size_t ulen = (size_t)(colon - spec), plen = (size_t)(at - colon - 1);
		if (ulen >= sizeof ps->user || plen >= sizeof ps->pass) {
			fprintf(stderr, "ferry: RSYNC_PROXY: the user or password is too long\n");
			return false;
		}
		memcpy(ps->user, spec, ulen);
		memcpy(ps->pass, colon + 1, plen);
		ps->has_auth = true;
	}
	const char *colon = strchr(hp, ':');
	char *end;
	if (!colon) {
		fprintf(stderr, "ferry: invalid proxy specification: should be HOST:PORT\n");
		return false;
	}
	long port = strtol(colon + 1, &end, 10);
	if ((size_t)(colon - hp) >= sizeof ps->host || colon == hp || *end || end == colon + 1 ||
	    port < 1 || port > 65535) {
		fprintf(stderr, "ferry: invalid proxy specification \"%s\": should be HOST:PORT "
				"with a port from 1 to 65535\n", hp);
		return false;
	}
	memcpy(ps->host, hp, (size_t)(colon - hp));
	ps->port = (int)port;
	return true;
}

/* Padded base64 (HTTP Basic wants the '='s): the one encoder, padded. */
static void base64_padded(const unsigned char *in, size_t len, char *out, size_t outsz)
{
	size_t n = base64_nopad(in, len, out, outsz);

	while (n % 4 && n + 1 < outsz)
		out[n++] = '=';
	out[n] = '\0';
}

static long long monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait until fd is readable; false (with *timed_out set) when the
 * monotonic clock reaches deadline_ms first. */
static bool wait_readable(int fd, long long deadline_ms, bool *timed_out)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int r;

	do {
		long long left = deadline_ms - monotonic_ms();
		r = left <= 0 ? 0 : poll(&p, 1, left > 60000 ? 60000 : (int)left);
	} while ((r < 0 && errno == EINTR) || (r == 0 && monotonic_ms() < deadline_ms));
	*timed_out = r == 0;
	return r > 0;
}

/* Read one line (up to '\n', byte by byte so nothing after the header is
 * consumed), giving up at deadline_ms; "\r\n" and "\n" are stripped.
 * false on EOF, error, timeout (*timed_out set) or a line longer than
 * size - 1. */
static bool read_proxy_line(int fd, char *buf, size_t size, long long deadline_ms,
			    bool *timed_out, const char **why)
{
	size_t n = 0;

	for (;;) {
		char c;
		if (!wait_readable(fd, deadline_ms, timed_out)) {
			*why = *timed_out ? "timed out waiting for the proxy's answer"
					  : strerror(errno);
			return false;
		}
		ssize_t r = read(fd, &c, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			*why = r == 0 ? "the proxy closed the connection" : strerror(errno);
			return false;
		}
		if (c == '\n')
			break;
		if (n + 1 >= size) {
			*why = "proxy response line too long";
			return false;
		}
		buf[n++] = c;
	}
	if (n && buf[n - 1] == '\r')
		n--;
	buf[n] = '\0';
	return true;
}

/* "HTTP/1.x 2xx ..." */
static bool status_ok(const char *line)
{
	if (strncmp(line, "HTTP/", 5) != 0)
		return false;
	line += 5;
	while ((*line >= '0' && *line <= '9') || *line == '.')
		line++;
	while (*line == ' ')
		line++;
	return *line == '2';
}

/* Send CONNECT for host:port and read the answer up to the blank line,
 * all of it within timeout_sec (*timed_out set when that is why it
 * failed). */
static bool proxy_handshake(int fd, const struct proxy_spec *ps, const char *host, int port,
			    int timeout_sec, bool *timed_out)
{
	char req[PROXY_BUF], auth[PROXY_BUF], line[PROXY_BUF];
	const char *why = NULL;
	long long deadline_ms = monotonic_ms() + (long long)timeout_sec * 1000;

	for (const unsigned char *c = (const unsigned char *)host; *c; c++) {
		if (*c < 0x20 || *c == 0x7f) {
			fprintf(stderr, "ferry: invalid control character in proxy CONNECT host\n");
			return false;
		}
	}
	auth[0] = '\0';
	if (ps->has_auth) {
		char cred[sizeof ps->user + sizeof ps->pass + 1], b64[sizeof cred * 4 / 3 + 4];
		int clen = snprintf(cred, sizeof cred, "%s:%s", ps->user, ps->pass);
		if (clen < 0 || (size_t)clen >= sizeof cred)
			clen = clen < 0 ? 0 : (int)sizeof cred - 1;
		base64_padded((const unsigned char *)cred, (size_t)clen, b64, sizeof b64);
		memset(cred, 0, sizeof cred);
		snprintf(auth, sizeof auth, "\r\nProxy-Authorization: Basic %s", b64);
	}
	int len = snprintf(req, sizeof req, "CONNECT %s:%d HTTP/1.0%s\r\n\r\n", host, port, auth);
	memset(auth, 0, sizeof auth);
	if (len <= 0 || (size_t)len >= sizeof req) {
		fprintf(stderr, "ferry: proxy CONNECT request too long\n");
		return false;
	}
	bool sent = fd_write_all(fd, req, (size_t)len);
	memset(req, 0, sizeof req);
	if (!sent) {
		fprintf(stderr, "ferry: failed to write to proxy: %s\n", strerror(errno));
		return false;
	}
	if (!read_proxy_line(fd, line, sizeof line, deadline_ms, timed_out, &why)) {
		fprintf(stderr, "ferry: failed to read from proxy: %s\n", why);
		return false;
	}
	if (!status_ok(line)) {
		/* The proxy's words go to a terminal: escaped as rsync's rprintf
		 * escapes them, so a hostile proxy cannot drive it. */
		fputs("ferry: bad response from proxy -- ", stderr);
		out_filtered(stderr, line, false, '\n');
		return false;
	}
	for (int n = 0;; n++) {
		if (n >= PROXY_MAX_HEADER_LINES) {
			fprintf(stderr, "ferry: proxy response header has more than %d lines\n",
				PROXY_MAX_HEADER_LINES);
			return false;
		}
		if (!read_proxy_line(fd, line, sizeof line, deadline_ms, timed_out, &why)) {
			fprintf(stderr, "ferry: failed to read from proxy: %s\n", why);
			return false;
		}
		if (!line[0])
			return true;
	}
}

int proxy_connect(const char *spec, const struct connect_req *req, int *exit_code)
{
	struct proxy_spec ps;

	if (!proxy_spec_parse(spec, &ps)) {
		*exit_code = 10;
		return -1;
	}
	struct connect_req to_proxy = *req;
	to_proxy.host = ps.host;
	to_proxy.port = ps.port;
	int fd = tcp_connect(&to_proxy, exit_code);
	int timeout_sec = req->timeout_sec > 0 ? req->timeout_sec : PROXY_DEFAULT_TIMEOUT_SEC;
	bool timed_out = false;
	if (fd >= 0 && !proxy_handshake(fd, &ps, req->host, req->port, timeout_sec, &timed_out)) {
		close(fd);
		fd = -1;
		*exit_code = timed_out ? 35 : 10;
	}
	memset(&ps, 0, sizeof ps);
	return fd;
}
