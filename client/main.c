/*
 * ferry's entry point: one executable that is the client, the daemon
 * (--daemon) and the server (--server), like rsync.
 */
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "client/batch_client.h"
#include "proto/core/exit_line.h"
#include "client/local.h"
#include "proto/args/options.h"
#include "client/pull.h"
#include "client/push.h"
#include "client/usage.h"
#include "proto/args/remote.h"
#include "proto/args/secluded.h"
#include "daemon/daemon.h"
#include "proto/base/alloc.h"
#include "proto/base/chmod.h"
#include "proto/flist/filesfrom.h"
#include "proto/base/json.h"
#include "proto/run/server.h"
#include "proto/base/stop_signal.h"
#include "proto/base/wire.h"

#define MAX_SOURCES 64

/* The --files-from host must be one end of the transfer
 * (main.c: start_client). */
static int check_files_from_host(const struct ferry_opts *o, const struct remote_spec *remote)
{
	char host[256];

	if (!options_files_from_remote(o, host, sizeof host))
		return 0;
	if (!remote) {
		fprintf(stderr, "ferry: --files-from cannot be remote when the transfer is local\n");
		return RERR_SYNTAX;
	}
	if (*host && strcmp(host, remote->host) != 0) {
		fprintf(stderr, "ferry: --files-from hostname is not the same as the transfer hostname\n");
		return RERR_SYNTAX;
	}
	return 0;
}

/* --files-from takes exactly a source directory and a destination, and a
 * local list is opened now, before any connection (options.c). */
static int open_files_from(struct ferry_opts *o)
{
	if (!o->files_from)
		return 0;
	if (o->nargs != 2) {
		usage_print_help(stderr);
		return RERR_SYNTAX;
	}
	if (options_files_from_remote(o, NULL, 0))
		return 0;
	o->files_from_fd = names_open_local(o->files_from, o->insecure_links, opts_confine_fd(o));
	if (o->files_from_fd < 0) {
		fprintf(stderr, "ferry: failed to open files-from file %s: %s\n", o->files_from,
			strerror(errno));
		return RERR_SYNTAX;
	}
	return 0;
}

/* The pull's part that failed, in rsync's words: before the transfer the
 * receiving client is "Receiver", during it the generator. */
static const char *pull_role(int rc)
{
	switch (rc) {
	case RERR_SYNTAX: case RERR_PROTOCOL: case RERR_UNSUPPORTED: case RERR_STARTCLIENT:
	case RERR_SOCKETIO: case RERR_CONTIMEOUT:
		return "Receiver";
	default:
		return "generator";
	}
}

/* *role: who_am_i()'s word for the part that ran last (exit_line.h). */
static int run_client(const struct ferry_opts *o, const char **role)
{
	*role = "client";
	if (o->chmod) {
		struct chmod_rules r = {0};
		bool ok = chmod_parse(&r, o->chmod, 022);
		chmod_free(&r);
		if (!ok) {
			fprintf(stderr, "ferry: Invalid argument passed to --chmod (%s)\n", o->chmod);
			return RERR_SYNTAX;
		}
	}
	if (o->read_batch) {
		*role = "generator";
		return client_read_batch(o);
	}
	struct remote_spec srcs[MAX_SOURCES], dst;
	int nsrc = o->nargs > 1 ? o->nargs - 1 : o->nargs;
	const char *dest = o->nargs > 1 ? o->args[o->nargs - 1] : NULL;

	if (nsrc > MAX_SOURCES) {
		fprintf(stderr, "ferry: too many source arguments (at most %d)\n", MAX_SOURCES);
		return RERR_SYNTAX;
	}
	for (int i = 0; i < nsrc; i++)
		remote_parse(o->args[i], &srcs[i]);
	if (dest) {
		remote_parse(dest, &dst);
		if (dst.kind != REMOTE_LOCAL) {
			for (int i = 0; i < nsrc; i++) {
				if (srcs[i].kind != REMOTE_LOCAL) {
					fprintf(stderr, "ferry: The source and destination cannot both be remote.\n");
					return RERR_SYNTAX;
				}
			}
			/* rsync answers a push to no module with the module
			 * list, as it does a pull (clientserver.c:
			 * start_inband_exchange) */
			if (dst.kind == REMOTE_DAEMON && !dst.module[0]) {
				int rc = client_pull(o, &dst, 1, NULL);
				*role = pull_role(rc);
				return rc;
			}
			int bad = check_files_from_host(o, &dst);
			if (bad)
				return bad;
			*role = "sender";
			return client_push(o, o->args, nsrc, &dst);
		}
	}
	for (int i = 0; i < nsrc; i++) {
		if (srcs[i].kind == REMOTE_LOCAL) {
			if (i > 0 && srcs[0].kind != REMOTE_LOCAL) {
				fprintf(stderr, "ferry: The source and destination cannot both be remote.\n");
				return RERR_SYNTAX;
			}
			continue;
		}
		if (srcs[i].kind != srcs[0].kind || strcmp(srcs[i].host, srcs[0].host) != 0 ||
		    srcs[i].port != srcs[0].port) {
			fprintf(stderr, "ferry: all sources of a pull must be on the same daemon\n");
			return RERR_SYNTAX;
		}
	}
	int bad = check_files_from_host(o, srcs[0].kind == REMOTE_LOCAL ? NULL : &srcs[0]);
	if (bad)
		return bad;
	*role = "sender";
	if (srcs[0].kind == REMOTE_LOCAL) {
		if (!dest || o->list_only)
			return client_local_list(o, o->args, nsrc);
		return client_local(o, o->args, nsrc, dest);
	}
	*role = "generator"; /* the part a stop signal interrupts */
	int rc = client_pull(o, srcs, nsrc, o->list_only ? NULL : dest);
	*role = pull_role(rc);
	return rc;
}

/* --stderr=all: rsync writes every message, file names and statistics
 * included, to stderr (log.c: rwrite). The client prints them through
 * stdout in many places, so point its descriptor at stderr's; line
 * buffering keeps the two FILE streams' lines in order. */
static void route_stdout_to_stderr(void)
{
	fflush(stdout);
	if (dup2(STDERR_FILENO, STDOUT_FILENO) >= 0)
		setvbuf(stdout, NULL, _IOLBF, 0);
}

/* --server: the remote end of a remote-shell session, on stdin/stdout.
 * The arguments are "." and the paths (main.c: start_server). */
static int run_server(const struct ferry_opts *o)
{
	struct session s;
	struct server_ctx ctx = {
		.root_fd = AT_FDCWD,
		.paths = o->nargs > 1 ? o->args + 1 : NULL,
		.npaths = o->nargs > 1 ? o->nargs - 1 : 0,
		.client_caps = o->server_caps,
	};

	session_init(&s, o, STDIN_FILENO, STDOUT_FILENO);
	s.info = stderr;
	int code = server_run(&s, &ctx);
	session_free(&s);
	return code;
}

/* -q: rsync drops every informational line (log.c: rwrite returns on
 * FINFO when quiet), whatever -v, -i, --stats, --progress or a listing
 * asked for; errors and warnings still reach stderr. */
static void drop_info_output(void)
{
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	fflush(stdout);
	dup2(fd, STDOUT_FILENO);
	close(fd);
}

/* --json among the arguments of a command line options_parse refused. */
static bool argv_asks_json(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--json") == 0)
			return true;
	return false;
}

/* --json's end event, exactly once: a forced exit at a second signal
 * writes its own (stop_signal.c), so the signals wait while this one is
 * written, and a forced exit after it writes none. */
static void json_end_once(int rc, bool dry_run, int64_t elapsed_ms,
			  const struct json_totals *totals)
{
	sigset_t stop, old;

	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	sigaddset(&stop, SIGALRM);
	sigprocmask(SIG_BLOCK, &stop, &old);
	stop_signal_json_end(false);
	json_event_end(rc, exit_code_name(rc), dry_run, elapsed_ms, totals);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

int main(int argc, char **argv)
{
	struct ferry_opts o;
	struct json_totals totals = {0}; /* --json: the end event's */
	int64_t run_start_ms = wire_now_ms();

	/* Names print as the locale can show them (rsync does the same). */
	setlocale(LC_CTYPE, "");
	/* A peer that hangs up shows as a write error with rsync's exit code,
	 * not as death by SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);
	int rc = options_parse(&o, argc, argv);
	char **merged = NULL, **secluded = NULL;

	/* `--server -s...`: the rest of the arguments come over stdin. */
	if (rc == 0 && o.server && o.secluded_args && !o.daemon) {
		int margc = 0;
		merged = secluded_server_argv(argc, argv, &margc, &secluded);
		options_free(&o);
		rc = merged ? options_parse(&o, margc, merged) : RERR_PROTOCOL;
	}

	/* a daemon's children set their own limit from the client's options */
	if (rc == 0)
		alloc_limit_set(alloc_limit_for(o.max_alloc != NULL, (size_t)o.max_alloc_bytes,
						false, ALLOC_DEFAULT_LIMIT));

	/* where a client's failure is reported from (rsync: log_exit); a
	 * daemon or a server says nothing of the kind */
	const char *role = "client";
	bool client = true;
	/* --json: a start and an end event, also around a usage error */
	bool json_run = rc == 0 ? o.json && !o.daemon && !o.server
				: rc != FERRY_OPTS_EXIT_OK && argv_asks_json(argc, argv);
	bool dry_run = rc == 0 && o.dry_run;

	struct exit_note exit_note = {0};
	if (rc == 0) {
		o.json_totals = &totals;
		o.exit_note = &exit_note;
	}

	if (json_run)
		json_event_start(dry_run);

	if (rc == FERRY_OPTS_EXIT_OK) {
		usage_print_request(&o);
		rc = 0;
	} else if (rc == 0) {
		if (o.daemon) {
			rc = daemon_main(&o); /* also --server --daemon over a remote shell */
			client = false;
		} else if (o.server) {
			stop_signal_install(NULL);
			rc = run_server(&o);
			client = false;
		} else if (!o.nargs) {
			usage_print_help(stderr);
			rc = RERR_SYNTAX;
		} else if ((rc = open_files_from(&o)) == 0) {
			if (o.outbuf)
				setvbuf(stdout, NULL, o.outbuf == 'N' ? _IONBF
						      : o.outbuf == 'L' ? _IOLBF : _IOFBF, 0);
			if (o.msgs2stderr)
				route_stdout_to_stderr();
			if (o.quiet && !o.json) /* --json's stream stays whole */
				drop_info_output();
			o.raw_argv = argv; /* for a batch's FILE.sh */
			o.raw_argc = argc;
			stop_signal_install(&role);
			stop_signal_json_end(o.json);
			rc = run_client(&o, &role);
		}
		if (o.files_from_fd >= 0)
			close(o.files_from_fd);
	}
	/* a stop signal ends the run with its code, whatever the transfer
	 * managed (rsync.c: sig_int), also when the peer it killed too (ssh
	 * at a Ctrl-C) was seen to go first */
	if (client && stop_signal_pending())
		rc = RERR_SIGNAL;
	if (client)
		exit_line_print(&exit_note, rc, role, "main.c", __LINE__, o.log_file);
	if (client && json_run)
		json_end_once(rc, dry_run, wire_now_ms() - run_start_ms, &totals);
	options_free(&o);
	free(merged);
	secluded_free(secluded);
	return rc;
}
