/*
 * Connection set-up for pulls and pushes (main.c: do_cmd, client_run;
 * clientserver.c: start_socket_client).
 */
#include "client/transport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/connect.h"
#include "client/daemon_client.h"
#include "client/options.h"
#include "client/rsh.h"
#include "proto/negotiate.h"

/* server_args followed by the paths, as one NULL-terminated vector. */
static char **join_args(char **server_args, char **paths, int npaths)
{
	int n = 0;

	while (server_args[n])
		n++;
	char **v = calloc((size_t)(n + npaths + 1), sizeof *v);
	if (!v)
		return NULL;
	for (int i = 0; i < n; i++)
		v[i] = server_args[i];
	for (int i = 0; i < npaths; i++)
		v[n + i] = paths[i];
	return v;
}

static int fail(struct session *s, struct transport *t, int code)
{
	if (s->err.msg[0] && strcmp(s->err.msg, " ") != 0)
		fprintf(stderr, "ferry: %s\n", s->err.msg);
	return transport_close(s, t, code);
}

bool transport_open(struct session *s, const struct ferry_opts *o, const struct remote_spec *r,
		    bool server_sends, char **paths, int npaths, struct transport *t, int *exit_code)
{
	int proto = o->protocol ? o->protocol : PROTOCOL_NEWEST;
	char **server_args = options_server_argv(o, server_sends, proto);
	int code = 0;

	t->fd = -1;
	t->pid = -1;
	*exit_code = RERR_MALLOC;
	if (!server_args)
		return false;
	bool daemon = r->kind == REMOTE_DAEMON;
	if (daemon && !o->rsh) {
		int port = r->port ? r->port : o->port ? o->port : 873;
		t->fd = tcp_connect(r->host, port, o->ip_family, o->bind_address, o->contimeout,
				    &code);
	} else {
		char **argv = rsh_command(o, r, server_args, paths, npaths, daemon);
		if (argv)
			t->pid = rsh_spawn(argv, &t->fd);
		rsh_free(argv);
		if (t->fd < 0)
			code = RERR_IPC;
	}
	if (t->fd < 0) {
		options_free_argv(server_args);
		*exit_code = code ? code : RERR_SOCKETIO;
		return false;
	}
	session_init(s, o, t->fd, t->fd);
	s->am_sender = !server_sends;
	int remote_protocol = 0;
	if (daemon) {
		struct daemon_peer peer;
		char **args = join_args(server_args, paths, npaths);
		int hs = args ? daemon_handshake(s, r, args, &peer, &code) : -1;
		free(args);
		options_free_argv(server_args);
		if (!args)
			code = RERR_MALLOC;
		if (hs < 0) {
			*exit_code = transport_close(s, t, code);
			return false;
		}
		remote_protocol = s->protocol;
	} else {
		options_free_argv(server_args);
	}
	if (!negotiate_client(s, remote_protocol)) {
		*exit_code = fail(s, t, session_exit_code(s));
		return false;
	}
	/* The server multiplexes its output from here on (protocol >= 23);
	 * ours is multiplexed from protocol 30. */
	s->in.mux = true;
	s->out.mux = s->protocol >= 30;
	*exit_code = 0;
	return true;
}

int transport_close(struct session *s, struct transport *t, int code)
{
	session_free(s);
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	code = rsh_wait(t->pid, code);
	t->pid = -1;
	return code;
}
