/*
 * RSYNC_CONNECT_PROG: the daemon connection is a program's stdin/stdout
 * rather than a TCP connection (rsync socket.c: open_socket_out_wrapped,
 * sock_exec, socketpair_tcp). The program is given a loopback TCP socket,
 * not a pipe, because a daemon run this way (`rsync --daemon` in inetd
 * mode) expects a socket on stdin.
 */
#include "client/connect.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SOCKETPAIR_WAIT_MS 10000
#define REAP_WAIT_MS 3000

/* A host that stays plain data even when a nested shell re-parses the
 * command (rsync socket.c: shell_unsafe_connect_host): host-name
 * characters plus ":%+~" (IPv6, zone ids, aliases), and no first
 * character that changes an argument's meaning ("-+~%"), and not empty. */
static bool connect_host_safe(const char *host)
{
	if (!*host || strchr("-+~%", *host))
		return false;
	for (const unsigned char *s = (const unsigned char *)host; *s; s++) {
		bool alnum = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
			     (*s >= '0' && *s <= '9');
		if (!alnum && !strchr("._:-%+~", *s))
			return false;
	}
	return true;
}

char *connect_prog_expand(const char *prog, const char *host)
{
	if (!strchr(prog, '%'))
		return strdup(prog);
	if (!connect_host_safe(host)) {
		fprintf(stderr, "ferry: unsafe host characters for RSYNC_CONNECT_PROG: "
				"\"%s\" is not a plain host name\n", host);
		return NULL;
	}
	/* Each %H becomes 'host' (no quote can occur inside host). */
	size_t hlen = strlen(host) + 2, len = strlen(prog) + 1;
	for (const char *f = prog; *f; f++)
		if (f[0] == '%' && f[1] == 'H')
			len += hlen;
	char *cmd = malloc(len), *t = cmd;
	if (!cmd)
		return NULL;
	for (const char *f = prog; *f; f++) {
		if (f[0] == '%' && f[1] == 'H') {
			t += sprintf(t, "'%s'", host);
			f++;
		} else if (f[0] == '%' && f[1] == '%') {
			*t++ = '%';
			f++;
		} else {
			*t++ = *f;
		}
	}
	*t = '\0';
	return cmd;
}

/* Accept on listener within SOCKETPAIR_WAIT_MS; -1 on timeout or error. */
static int accept_own(int listener)
{
	struct pollfd p = {.fd = listener, .events = POLLIN};
	int r;

	while ((r = poll(&p, 1, SOCKETPAIR_WAIT_MS)) < 0 && errno == EINTR)
		;
	if (r <= 0) {
		if (r == 0)
			errno = ETIMEDOUT;
		return -1;
	}
	return accept4(listener, NULL, NULL, SOCK_CLOEXEC);
}

/* Two connected loopback TCP sockets. The accepted peer must be our own
 * connecting socket (same address and port), so a local process racing
 * a connection in first is detected, not served. */
static int socketpair_tcp(int fd[2])
{
	struct sockaddr_in addr = {.sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct sockaddr_in mine, peer;
	socklen_t len = sizeof addr;
	int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	fd[0] = fd[1] = -1;
	if (listener < 0)
		return -1;
	if (bind(listener, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(listener, 1) != 0 ||
	    getsockname(listener, (struct sockaddr *)&addr, &len) != 0)
		goto failed;
	fd[1] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd[1] < 0 || connect(fd[1], (struct sockaddr *)&addr, sizeof addr) != 0)
		goto failed;
	fd[0] = accept_own(listener);
	if (fd[0] < 0)
		goto failed;
	socklen_t ml = sizeof mine, pl = sizeof peer;
	if (getsockname(fd[1], (struct sockaddr *)&mine, &ml) != 0 ||
	    getpeername(fd[0], (struct sockaddr *)&peer, &pl) != 0 ||
	    mine.sin_port != peer.sin_port || mine.sin_addr.s_addr != peer.sin_addr.s_addr) {
		errno = ECONNREFUSED;
		goto failed;
	}
	close(listener);
	return 0;

failed:;
	int saved = errno;
	close(listener);
	if (fd[0] >= 0)
		close(fd[0]);
	if (fd[1] >= 0)
		close(fd[1]);
	fd[0] = fd[1] = -1;
	errno = saved;
	return -1;
}

int connect_prog_spawn(const char *cmd, pid_t *pid)
{
	int fd[2];

	if (socketpair_tcp(fd) != 0) {
		fprintf(stderr, "ferry: RSYNC_CONNECT_PROG: cannot make a loopback socket pair: "
				"%s (%d)\n", strerror(errno), errno);
		return -1;
	}
	*pid = fork();
	if (*pid < 0) {
		fprintf(stderr, "ferry: RSYNC_CONNECT_PROG: fork failed: %s\n", strerror(errno));
		close(fd[0]);
		close(fd[1]);
		return -1;
	}
	if (*pid == 0) {
		if (dup2(fd[1], STDIN_FILENO) < 0 || dup2(fd[1], STDOUT_FILENO) < 0) {
			fprintf(stderr, "ferry: failed to run \"%s\"\n", cmd);
			_exit(1);
		}
		signal(SIGPIPE, SIG_DFL);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		fprintf(stderr, "ferry: failed to run \"%s\": /bin/sh: %s\n", cmd, strerror(errno));
		_exit(127);
	}
	close(fd[1]);
	return fd[0];
}

void connect_prog_reap(pid_t pid)
{
	if (pid <= 0)
		return;
	for (int waited = 0; waited < REAP_WAIT_MS; waited += 20) {
		pid_t r = waitpid(pid, NULL, WNOHANG);
		if (r == pid || (r < 0 && errno != EINTR))
			return;
		struct timespec ts = {0, 20 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
}
