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
#include "client/ssh_builtin.h"
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

/* The remote command as one string, as ssh would send it. */
static char *join_words(char **w)
{
	size_t len = 1;

	for (int i = 0; w[i]; i++)
		len += strlen(w[i]) + 1;
	char *cmd = malloc(len), *p = cmd;
	for (int i = 0; cmd && w[i]; i++)
		p += sprintf(p, "%s%s", i ? " " : "", w[i]);
	return cmd;
}

/* Use the built-in ssh when the remote shell is ssh with options we honour
 * exactly (or --ssh=builtin); spawn it otherwise. Returns true when the
 * built-in path was taken (*code says how it went). */
static bool try_builtin_ssh(const struct ferry_opts *o, const struct remote_spec *r,
			    char **server_args, char **paths, int npaths, bool daemon,
			    struct transport *t, int *code)
{
	const char *mode = o->ssh_mode ? o->ssh_mode : "auto";
	struct ssh_spec sp;

	if (strcmp(mode, "spawn") == 0)
		return false;
	char **words = rsh_shell_words(o);
	bool understood = words && ssh_spec_parse(words, &sp);
	rsh_free(words);
	if (!understood) {
		if (strcmp(mode, "builtin") == 0) {
			fprintf(stderr, "ferry: --ssh=builtin: the remote shell command is not plain "
					"ssh with options ferry understands\n");
			*code = RERR_SYNTAX;
			return true;
		}
		return false;
	}
	if (o->ip_family)
		sp.family = o->ip_family;
	char **remote = rsh_remote_command(o, server_args, paths, npaths, daemon);
	char *cmd = remote ? join_words(remote) : NULL;
	rsh_free(remote);
	*code = cmd ? ssh_builtin_start(&sp, r->host, r->user, o->ssh_cipher, cmd, &t->fd, &t->ssh)
		    : RERR_MALLOC;
	free(cmd);
	ssh_spec_release(&sp);
	return true;
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
	t->ssh = NULL;
	*exit_code = RERR_MALLOC;
	if (!server_args)
		return false;
	bool daemon = r->kind == REMOTE_DAEMON;
	if (daemon && !o->rsh) {
		int port = r->port ? r->port : o->port ? o->port : 873;
		t->fd = tcp_connect(r->host, port, o->ip_family, o->bind_address, o->contimeout,
				    &code);
	} else if (!try_builtin_ssh(o, r, server_args, paths, npaths, daemon, t, &code)) {
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
	if (t->ssh) {
		int remote = ssh_builtin_stop(t->ssh);
		t->ssh = NULL;
		if (!code)
			code = remote;
	}
	return code;
}
