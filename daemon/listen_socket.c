/*
 * The daemon's listening TCP sockets (see daemon/listen_socket.h).
 */
#include "daemon/listen_socket.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto/base/sockopts.h"

int daemon_listen_socket(const struct ferry_opts *o, const struct daemon_config *cfg, int port)
{
	const char *addr = o->bind_address ? o->bind_address : cfg->address;
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
	struct addrinfo *res;
	char portstr[16];

	hints.ai_family = o->ip_family == 4 ? AF_INET : o->ip_family == 6 ? AF_INET6 : AF_UNSPEC;
	snprintf(portstr, sizeof portstr, "%d", port);
	int gai = getaddrinfo(addr, portstr, &hints, &res);
	if (gai != 0) {
		fprintf(stderr, "ferry: getaddrinfo: bind address %s: %s\n", addr ? addr : "*",
			gai_strerror(gai));
		return -1;
	}
	int fd = -1;
	/* Prefer IPv6 with dual stack for a wildcard address, like rsync. */
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0)
			continue;
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		/* As the client does (connect.c): without it the small messages
		 * that end each phase wait for the peer's delayed ACK, 40 ms each
		 * (a small pull: 0.20 s -> 0.05 s). Inherited by accepted
		 * sockets; "socket options = TCP_NODELAY=0" still turns it off. */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		/* rsync socket.c: open_socket_in; accepted sockets inherit them */
		sockopts_apply(fd, o->sockopts ? o->sockopts : cfg->socket_options);
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
		    listen(fd, cfg->listen_backlog > 0 ? cfg->listen_backlog
							   : CONFIG_DEFAULT_LISTEN_BACKLOG) == 0)
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		fprintf(stderr, "ferry: unable to bind any inbound sockets on port %d: %s\n", port,
			strerror(errno));
	return fd;
}

