/*
 * Reaching an rsync daemon (rsync socket.c: open_socket_out_wrapped,
 * open_socket_out, establish_proxy_connection, sock_exec): a TCP
 * connection, possibly through an HTTP CONNECT proxy (RSYNC_PROXY), or a
 * program's stdin/stdout (RSYNC_CONNECT_PROG). --sockopts: proto/base/sockopts.h.
 */
#ifndef FERRY_CLIENT_CONNECT_H
#define FERRY_CLIENT_CONNECT_H

#include <stdbool.h>
#include <sys/types.h>

/* What to connect to and how. */
struct connect_req {
	const char *host;
	int port;
	int family;            /* 0, 4 or 6 (-4/-6) */
	const char *bind_addr; /* --address, or NULL */
	int timeout_sec;       /* --contimeout; 0 waits as long as the system does */
	const char *sockopts;  /* --sockopts, or NULL */
};

/* Connect to req's daemon the way rsync does: through RSYNC_CONNECT_PROG
 * when it is set (then *prog_pid is the program's pid, else -1), else over
 * TCP, through the proxy RSYNC_PROXY names when set. Returns the
 * connection's fd, or -1 after printing why, with *exit_code set to
 * rsync's code (10 for a socket error, 35 for a connect timeout, 14 when
 * the program cannot be started). */
int daemon_connect(const struct connect_req *req, pid_t *prog_pid, int *exit_code);

/* ---- connect_tcp.c ---- */

/* Plain TCP (no program, no proxy): host:port. Returns the socket, or -1
 * after printing why, with *exit_code set as above. */
int tcp_connect(const struct connect_req *req, int *exit_code);

/* ---- connect_proxy.c ---- */

/* Open a tunnel to host:port through the HTTP proxy in spec
 * ("[USER:PASS@]PROXYHOST:PROXYPORT", RSYNC_PROXY's syntax): connect to the
 * proxy as tcp_connect() would, send CONNECT (with Basic auth when a user
 * is given), and check for a 2xx answer, reading at most a bounded header.
 * Returns the socket, or -1 after printing why. */
int proxy_connect(const char *spec, const struct connect_req *req, int *exit_code);

/* ---- connect_prog.c ---- */

/* RSYNC_CONNECT_PROG: expand %H (the host, single-quoted for the shell;
 * refused unless it is made of host-name characters) and %% in prog.
 * Returns a malloc'd command, or NULL after printing why. */
char *connect_prog_expand(const char *prog, const char *host);

/* Run cmd with /bin/sh -c, its stdin and stdout one end of a loopback TCP
 * socket pair. Returns our end, or -1 after printing why; *pid is the
 * child. */
int connect_prog_spawn(const char *cmd, pid_t *pid);

/* Reap the program once the connection is closed: it should exit on EOF;
 * one that does not within a few seconds is left running, as rsync
 * leaves it (rsync never waits for it). */
void connect_prog_reap(pid_t pid);

#endif
