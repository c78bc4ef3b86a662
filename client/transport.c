/*
 * Connection set-up for pulls and pushes (main.c: do_cmd, client_run;
 * clientserver.c: start_socket_client).
 */
#include "client/transport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>

#include "client/connect.h"
#include "client/daemon_client.h"
#include "proto/args/options.h"
#include "client/rsh.h"
#include "proto/args/secluded.h"
#include "client/ssh_builtin.h"
#include "proto/base/fdio.h"
#include "proto/run/negotiate.h"
#include "proto/core/progress.h"
#include "proto/run/server.h"

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
	/* never half-honour a config: what the built-in cannot apply
	 * exactly as ssh would, ssh applies */
	char why[600];
	if (!ssh_builtin_config_check(&sp, r->host, why, sizeof why)) {
		ssh_spec_release(&sp);
		if (strcmp(mode, "builtin") == 0) {
			fprintf(stderr, "ferry: --ssh=builtin: the built-in ssh cannot honour %s\n", why);
			*code = RERR_SYNTAX;
			return true;
		}
		if (debug_ge(o, DEBUG_CMD, 1)) {
			printf("spawning ssh: the built-in ssh cannot honour %s\n", why);
			fflush(stdout);
		}
		return false;
	}
	char **remote = rsh_remote_command(o, server_args, paths, npaths, daemon);
	char *cmd = remote ? join_words(remote) : NULL;
	rsh_free(remote);
	*code = cmd ? ssh_builtin_start(&sp, r->host, r->user, o->ssh_cipher, cmd, &t->fd, &t->ssh)
		    : RERR_MALLOC;
	free(cmd);
	ssh_spec_release(&sp);
	return true;
}

/* The end of the stream is told with the role that met it, as rsync's
 * whine_about_eof does (io.c): "[sender]" pushing, "[Receiver]" pulling. */
static int fail(struct session *s, struct transport *t, int code, bool server_sends)
{
	static const char eof[] = "connection unexpectedly closed";

	if (strncmp(s->err.msg, eof, sizeof eof - 1) == 0)
		fprintf(stderr, "ferry: %s [%s]\n", s->err.msg, server_sends ? "Receiver" : "sender");
	else if (s->err.msg[0] && strcmp(s->err.msg, " ") != 0)
		fprintf(stderr, "ferry: %s\n", s->err.msg);
	return transport_close(s, t, code);
}

/* --secluded-args over a remote shell: what follows the command line,
 * sent as soon as the shell runs (rsync main.c: do_cmd). */
static bool send_secluded(const struct ferry_opts *o, int fd, char **rest, char **paths,
			  int npaths)
{
	char **shown = calloc((size_t)npaths + 1, sizeof *shown);
	bool ok = shown != NULL;

	for (int i = 0; ok && i < npaths; i++)
		ok = (shown[i] = options_remote_arg(o, NULL, paths[i], false)) != NULL;
	size_t len = 0;
	char *buf = ok ? secluded_pack(rest, shown, npaths, &len) : NULL;
	ok = buf && fd_write_all(fd, buf, len);
	if (buf && !ok)
		fprintf(stderr, "ferry: sending the secluded arguments: %s\n",
			errno ? strerror(errno) : "short write");
	free(buf);
	for (int i = 0; shown && i < npaths; i++)
		free(shown[i]);
	free(shown);
	return ok;
}

/* The daemon over TCP (or a connect program, or a proxy). */
static int open_daemon_socket(const struct ferry_opts *o, const struct remote_spec *r,
			      struct transport *t, int *code)
{
	struct connect_req req = {
		.host = r->host,
		.port = r->port ? r->port : o->port ? o->port : 873,
		.family = o->ip_family,
		.bind_addr = o->bind_address,
		.timeout_sec = o->contimeout,
		.sockopts = o->sockopts,
	};

	/* -vv (socket.c: open_socket_out); a proxy is not named */
	const char *prog = getenv("RSYNC_CONNECT_PROG");
	if (debug_ge(o, DEBUG_CONNECT, 1) && !(getenv("RSYNC_PROXY") && *getenv("RSYNC_PROXY") &&
						 !(prog && *prog))) {
		printf("%sopening tcp connection to %s port %d\n",
		       prog && *prog ? "Using RSYNC_CONNECT_PROG instead of " : "", req.host, req.port);
		fflush(stdout);
	}
	t->fd = daemon_connect(&req, &t->prog_pid, code);
	return t->fd;
}

/* Start the remote shell (spawned or built in). With --secluded-args
 * only the options up to the flag letters go on its command line. */
static void open_remote_shell(const struct ferry_opts *o, const struct remote_spec *r,
			      char **server_args, char **paths, int npaths, bool daemon,
			      struct transport *t, int *code)
{
	bool secluded = o->secluded_args && !daemon;
	int split = secluded ? options_secluded_split(server_args) : 0;
	char *rest0 = secluded ? server_args[split] : NULL;

	if (daemon) {
		/* rsync main.c: the port the user named, 0 for the default,
		 * for helpers such as rsync-ssl. */
		char port[16];
		snprintf(port, sizeof port, "%d", r->port ? r->port : o->port);
		setenv("RSYNC_PORT", port, 1);
	}
	int on_cmdline = secluded ? 0 : npaths;
	if (secluded)
		server_args[split] = NULL; /* the command line stops here */
	/* -vv (pipe.c: piped_child): the command a spawned shell runs, also
	 * when ssh is built in and runs the same */
	if (debug_ge(o, DEBUG_CMD, 1)) {
		char **shown = rsh_command(o, r, server_args, paths, on_cmdline, daemon);
		if (shown)
			rsh_print_argv("opening connection using:", shown, -1);
		rsh_free(shown);
	}
	if (try_builtin_ssh(o, r, server_args, paths, on_cmdline, daemon, t, code)) {
		/* ssh could not start the daemon: to rsync, whose ssh then
		 * just closes the pipe, no greeting came */
		if (daemon && *code == 255) {
			fprintf(stderr, "ferry: did not see server greeting\n");
			*code = RERR_STARTCLIENT;
		}
	} else {
		char **argv = rsh_command(o, r, server_args, paths, on_cmdline, daemon);
		if (argv)
			t->pid = rsh_spawn(argv, &t->fd, &t->fd_out);
		rsh_free(argv);
		if (t->fd < 0)
			*code = RERR_IPC;
	}
	if (t->fd_out < 0)
		t->fd_out = t->fd;
	if (secluded) {
		server_args[split] = rest0;
		if (t->fd >= 0 && !*code &&
		    !send_secluded(o, t->fd_out, server_args + split, paths, npaths))
			*code = RERR_STREAMIO;
	}
}

bool transport_open(struct session *s, const struct ferry_opts *o, const struct remote_spec *r,
		    bool server_sends, char **paths, int npaths, struct transport *t, int *exit_code)
{
	int proto = o->protocol ? o->protocol : PROTOCOL_NEWEST;
	char **server_args = options_server_argv(o, server_sends, proto);
	int code = 0;

	t->fd = -1;
	t->fd_out = -1;
	t->pid = -1;
	t->prog_pid = -1;
	t->ssh = NULL;
	*exit_code = RERR_MALLOC;
	if (!server_args)
		return false;
	bool daemon = r->kind == REMOTE_DAEMON;
	if (daemon && !o->rsh) {
		open_daemon_socket(o, r, t, &code);
		t->fd_out = t->fd;
	} else
		open_remote_shell(o, r, server_args, paths, npaths, daemon, t, &code);
	if (t->fd < 0 || code) {
		options_free_argv(server_args);
		*exit_code = transport_close(NULL, t, code ? code : RERR_SOCKETIO);
		return false;
	}
	session_init(s, o, t->fd, t->fd_out);
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
			int closed = transport_close(s, t, code);
			/* After a listing (@RSYNCD: EXIT) rsync exits 0 whatever
			 * the remote shell's end exits with: an rsync daemon
			 * over stdio ends its listing with 255. */
			*exit_code = code ? closed : 0;
			return false;
		}
		remote_protocol = s->protocol;
	} else {
		options_free_argv(server_args);
	}
	if (!negotiate_client(s, remote_protocol)) {
		*exit_code = fail(s, t, session_exit_code(s), server_sends);
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
	/* the peer logs why we stopped, as rsync's does */
	if (s && code == RERR_SIGNAL)
		error_exit_to_peer(s, code);
	if (s) {
		progress_json_note_totals(s); /* for --json's end event */
		session_free(s);
	}
	if (t->fd_out >= 0 && t->fd_out != t->fd)
		close(t->fd_out);
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	t->fd_out = -1;
	code = rsh_wait(t->pid, code);
	t->pid = -1;
	/* rsync ignores how a connect program ends; the daemon's answer
	 * already carried the result. */
	connect_prog_reap(t->prog_pid);
	t->prog_pid = -1;
	if (t->ssh) {
		int remote = ssh_builtin_stop(t->ssh);
		t->ssh = NULL;
		if (!code)
			code = remote;
	}
	return code;
}
