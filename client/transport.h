/*
 * Reaching the other end: a daemon over TCP, a daemon over a remote shell,
 * or `rsync --server` over a remote shell. Everything up to and including
 * the protocol set-up; afterwards a pull and a push differ.
 */
#ifndef FERRY_CLIENT_TRANSPORT_H
#define FERRY_CLIENT_TRANSPORT_H

#include <stdbool.h>
#include <sys/types.h>

#include "proto/args/remote.h"
#include "proto/core/session.h"

struct ssh_builtin;

struct transport {
	int fd;             /* what we read, and write too but for ... */
	int fd_out;         /* ... a spawned remote shell: its stdin */
	pid_t pid;          /* the remote shell, or -1 */
	pid_t prog_pid;     /* the RSYNC_CONNECT_PROG program, or -1 */
	struct ssh_builtin *ssh; /* the built-in ssh connection, or NULL */
};

/* Connect to r's host, start the server (it sends when server_sends),
 * hand it the paths (for a daemon "module/path", else plain paths), and
 * set up the protocol on *s (initialised here). Returns true when the
 * transfer may go on; false when the run is over (a module listing ended,
 * or something failed and was printed), with *code the exit code and s
 * already freed. */
bool transport_open(struct session *s, const struct ferry_opts *o, const struct remote_spec *r,
		    bool server_sends, char **paths, int npaths, struct transport *t, int *code);

/* Close the connection, reap a remote shell or connect program, and
 * free the session (s may be NULL before one was set up). Returns the
 * final exit code. */
int transport_close(struct session *s, struct transport *t, int code);

#endif
