/*
 * The server side of a session (main.c: start_server, do_server_sender,
 * do_server_recv), shared by the daemon and --server over a remote shell.
 */
#ifndef FERRY_SERVER_H
#define FERRY_SERVER_H

#include "proto/core/session.h"

struct filter_list;

struct server_ctx {
	int root_fd;             /* paths are relative to this (module root or cwd) */
	bool confined;           /* a daemon module: no symlinks in path arguments */
	char **paths;            /* the path arguments after "." */
	int npaths;
	int remote_protocol;     /* from the daemon greeting; 0 over a remote shell */
	const char *client_caps; /* "-e" capability letters, or NULL */
	const struct filter_list *daemon_filters; /* module exclude rules, or NULL */
	const char *refusal;     /* when set: set up, report this error, stop */
	int refusal_code;        /* ... and exit with this code */
	bool local_child;        /* the receiving half of a local copy: its
				  * options are the user's own, not a peer's */
	bool refusal_verbatim;   /* refusal is the daemon's own text (a hook's
				  * output): sent line by line, unprefixed */
};

/* Run the whole server side on an initialised session (s->opts from the
 * client's arguments). Returns the exit code. */
int server_run(struct session *s, const struct server_ctx *ctx);

/* Tell the peer our exit code (MSG_ERROR_EXIT, protocol >= 31, not for
 * the codes of a broken stream) and read until it hangs up, for at most
 * about ten seconds, so it reads our last messages instead of a reset
 * connection (cleanup.c: _exit_cleanup, io.c: noop_io_until_death). A
 * server stopped by a signal sends its closing line first. Returns code. */
int error_exit_to_peer(struct session *s, int code);

#endif
