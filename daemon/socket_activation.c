/*
 * systemd socket activation for the listening daemon; see
 * socket_activation.h. The protocol is sd_listen_fds(3)'s: fds start at 3
 * (SD_LISTEN_FDS_START), LISTEN_FDS counts them, LISTEN_PID names the
 * process they are meant for.
 */
#include "daemon/socket_activation.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define LISTEN_FDS_START 3

/* A decimal value without sign or trailing garbage; false otherwise. */
static bool parse_positive(const char *text, long *out)
{
	char *end;

	if (!text || !*text || *text == '-' || *text == '+')
		return false;
	errno = 0;
	*out = strtol(text, &end, 10);
	return !errno && !*end && *out > 0;
}

static void forget_environment(void)
{
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDNAMES");
}

/* fd must be a listening SOCK_STREAM socket. */
static bool usable_listener(int fd)
{
	int type = 0, listening = 0;
	socklen_t len = sizeof type;

	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0) {
		fprintf(stderr, "ferry: socket activation: fd %d is not a socket: %s\n", fd,
			strerror(errno));
		return false;
	}
	len = sizeof listening;
	if (type != SOCK_STREAM ||
	    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening) {
		fprintf(stderr, "ferry: socket activation: fd %d is not a listening stream socket "
				"(use ListenStream= with Accept=no)\n", fd);
		return false;
	}
	return true;
}

int socket_activation_listener(void)
{
	const char *fds_text = getenv("LISTEN_FDS"), *pid_text = getenv("LISTEN_PID");
	long nfds, pid;

	if (!fds_text)
		return SOCKET_ACTIVATION_NONE;
	if (!parse_positive(pid_text, &pid) || !parse_positive(fds_text, &nfds)) {
		fprintf(stderr, "ferry: socket activation: LISTEN_FDS=\"%s\" LISTEN_PID=\"%s\" "
				"are not positive numbers\n", fds_text, pid_text ? pid_text : "");
		forget_environment();
		return SOCKET_ACTIVATION_ERROR;
	}
	/* Inherited from a parent that was activated: not ours. */
	if (pid != (long)getpid())
		return SOCKET_ACTIVATION_NONE;
	forget_environment();
	if (nfds != 1) {
		fprintf(stderr, "ferry: socket activation: %ld sockets were passed; ferry serves "
				"one (a single ListenStream=, with BindIPv6Only=both for IPv4 and "
				"IPv6)\n", nfds);
		return SOCKET_ACTIVATION_ERROR;
	}
	int fd = LISTEN_FDS_START;
	if (!usable_listener(fd))
		return SOCKET_ACTIVATION_ERROR;
	int flags = fcntl(fd, F_GETFD);
	if (flags < 0 || fcntl(fd, F_SETFD, flags | FD_CLOEXEC) < 0) {
		fprintf(stderr, "ferry: socket activation: fd %d: %s\n", fd, strerror(errno));
		return SOCKET_ACTIVATION_ERROR;
	}
	return fd;
}
