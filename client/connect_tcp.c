/*
 * TCP connection to an rsync daemon, with --contimeout, -4/-6, --address
 * and --sockopts (socket.c: open_socket_out).
 */
#include "client/connect.h"
#include "proto/base/sockopts.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int bind_local(int fd, const char *bind_addr, int family)
{
	struct addrinfo hints = {.ai_family = family, .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE};
	struct addrinfo *res;

	if (getaddrinfo(bind_addr, NULL, &hints, &res) != 0)
		return -1;
	int r = -1;
	for (struct addrinfo *ai = res; ai && r < 0; ai = ai->ai_next)
		r = bind(fd, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(res);
	return r;
}

/* connect() bounded by timeout_ms (0: blocking). */
static int connect_timed(int fd, const struct sockaddr *sa, socklen_t len, int timeout_ms)
{
	if (timeout_ms <= 0)
		return connect(fd, sa, len);
	int fl = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	int r = connect(fd, sa, len);
	if (r < 0 && errno == EINPROGRESS) {
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		r = poll(&p, 1, timeout_ms);
		if (r == 0) {
			errno = ETIMEDOUT;
			return -2;
		}
		int err = 0;
		socklen_t elen = sizeof err;
		getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen);
		r = err ? -1 : 0;
		errno = err;
	}
	fcntl(fd, F_SETFL, fl);
	return r;
}

int tcp_connect(const struct connect_req *req, int *exit_code)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM};
	struct addrinfo *res, *ai;
	char portstr[16];
	int fd = -1, err = 0;
	bool timed_out = false;

	hints.ai_family = req->family == 4 ? AF_INET : req->family == 6 ? AF_INET6 : AF_UNSPEC;
	snprintf(portstr, sizeof portstr, "%d", req->port);
	int gai = getaddrinfo(req->host, portstr, &hints, &res);
	if (gai != 0) {
		fprintf(stderr, "ferry: getaddrinfo: %s %d: %s\n", req->host, req->port,
			gai_strerror(gai));
		*exit_code = 10;
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			err = errno;
			continue;
		}
		if (req->bind_addr && bind_local(fd, req->bind_addr, ai->ai_family) < 0) {
			err = errno;
			close(fd);
			fd = -1;
			continue;
		}
		/* Before connect(), as rsync: buffer sizes must be set then. */
		sockopts_apply(fd, req->sockopts);
		int r = connect_timed(fd, ai->ai_addr, ai->ai_addrlen, req->timeout_sec * 1000);
		if (r == 0)
			break;
		err = errno;
		timed_out |= r == -2;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		fprintf(stderr, "ferry: failed to connect to %s (%s): %s (%d)\n", req->host,
			req->host, strerror(err), err);
		*exit_code = timed_out ? 35 : 10;
		return -1;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return fd;
}
