/*
 * Local copies (`ferry src/ dst/`): both halves of the protocol in one
 * invocation, joined by a socketpair, the receiver in a child process
 * (main.c: local_child). The bytes between them are the same as over a
 * network, so local mode exercises the real code paths.
 */
#include "client/local.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto/args/options.h"
#include "client/pull.h"
#include "proto/core/logfmt.h"
#include "proto/core/msg.h"
#include "client/push.h"
#include "client/usage.h"
#include "proto/flist/filesfrom.h"
#include "proto/filter/filter.h"
#include "proto/run/negotiate.h"
#include "proto/core/progress.h"
#include "proto/flist/sendside.h"
#include "proto/base/stop_signal.h"
#include "proto/run/server.h"

/* The capability letters our client would send (options_server_argv):
 * 'i' where both halves can use incremental recursion. */
static const char *local_caps(const struct ferry_opts *o)
{
	bool inc = inc_recurse_allowed(o, true, PROTOCOL_NEWEST) &&
		   inc_recurse_allowed(o, false, PROTOCOL_NEWEST);

	return inc ? ".iLsfxCIvu" : ".LsfxCIvu";
}

/* The receiving half's options when -M gave it some of its own: rsync's
 * local child parses them over the client's (pipe.c: local_child), so we
 * parse the command line again with them before any "--". 0 or the exit
 * code of a failed parse (already reported). */
static int parse_with_remote_options(const struct ferry_opts *o, struct ferry_opts *ro)
{
	int n = o->nremote_options, argc = o->raw_argc + n, at = o->raw_argc;
	char **argv = calloc((size_t)argc + 1, sizeof *argv);

	if (!argv) {
		fprintf(stderr, "ferry: out of memory\n");
		return RERR_MALLOC;
	}
	for (int i = 1; i < o->raw_argc && at == o->raw_argc; i++)
		if (strcmp(o->raw_argv[i], "--") == 0)
			at = i;
	memcpy(argv, o->raw_argv, (size_t)at * sizeof *argv);
	memcpy(argv + at, o->remote_options, (size_t)n * sizeof *argv);
	memcpy(argv + at + n, o->raw_argv + at, (size_t)(o->raw_argc - at) * sizeof *argv);
	int rc = options_parse(ro, argc, argv);
	free(argv);
	if (rc == FERRY_OPTS_EXIT_OK)
		usage_print_request(ro);
	return rc == FERRY_OPTS_EXIT_OK ? 0 : rc;
}

/* Where a half's output goes and what it leaves behind, as io asks. */
static void half_streams(struct session *s, const struct local_half_io *io)
{
	if (io && io->info)
		s->info = io->info;
	if (io && io->errors)
		s->errors = io->errors;
}

static void half_result(const struct session *s, const struct local_half_io *io)
{
	if (!io || !io->result)
		return;
	io->result->stats = s->stats;
	io->result->protocol = s->protocol;
	io->result->inc_recurse = s->inc_recurse;
	io->result->compress = s->compress;
}

int local_receiver_half(const struct ferry_opts *o, int fd, const char *dest,
			const struct local_half_io *io)
{
	struct ferry_opts ro = *o, parsed;
	struct session s;
	bool reparsed = o->nremote_options > 0 && o->raw_argv;

	if (reparsed) {
		int rc = parse_with_remote_options(o, &parsed);
		if (rc) {
			options_free(&parsed);
			return rc;
		}
		ro = parsed;
	}
	char *paths[1] = {(char *)dest};
	struct server_ctx ctx = {.root_fd = AT_FDCWD, .paths = paths, .npaths = 1,
				 .client_caps = local_caps(o), .local_child = true};

	ro.server = true;
	ro.sender = false;
	ro.files_from = NULL; /* the list is ours (the sender's) to read */
	ro.files_from_fd = -1;
	/* --munge-links is for one side of a remote transfer; rsync's local
	 * copy leaves the links as they are */
	ro.munge_links = false;
	/* the sending half has applied --chmod already; a second pass would
	 * apply a copy clause (g=o) to the modes the first pass made */
	ro.chmod = NULL;
	/* Without a slow link in between, delta transfer only costs time:
	 * rsync's local default is --whole-file. */
	if (ro.whole_file < 0 && !o->write_batch)
		ro.whole_file = 1;
	session_init(&s, &ro, fd, fd);
	s.info = stderr;
	half_streams(&s, io);
	s.local_copy = true; /* it logs the deletions to --log-file */
	int code = server_run(&s, &ctx);
	half_result(&s, io);
	session_free(&s);
	if (reparsed)
		options_free(&parsed);
	return code;
}

int local_sender_half(const struct ferry_opts *o, int fd, char **srcs, int nsrc,
		      struct filter_list *filters, time_t start, const struct local_half_io *io)
{
	struct session s;
	struct ferry_opts so = *o;

	/* --whole-file by default here too, except when the deltas are what
	 * a batch records */
	if (so.whole_file < 0 && !o->write_batch)
		so.whole_file = 1;
	session_init(&s, &so, fd, fd);
	half_streams(&s, io);
	s.am_sender = true;
	s.local_copy = true;
	int code;
	if (!negotiate_client(&s, 0)) {
		code = session_exit_code(&s);
		if (s.err.msg[0] && strcmp(s.err.msg, " ") != 0)
			fprintf(msg_err_stream(&s), "ferry: %s\n", s.err.msg);
	} else {
		s.in.mux = true;
		s.out.mux = s.protocol >= 30;
		code = push_run(&s, srcs, nsrc, filters, start);
	}
	half_result(&s, io);
	progress_json_note_totals(&s); /* for --json's end event */
	session_free(&s);
	return code;
}

int local_exit_code(int sender, int receiver)
{
	/* When the receiver gave up, its reason is the one that counts: the
	 * sender only saw the connection close. */
	if (receiver && (sender == 0 || sender == RERR_STREAMIO))
		return receiver;
	return sender;
}

int client_local(const struct ferry_opts *o, char **srcs, int nsrc, const char *dest)
{
	struct filter_list filters;
	char err[512];
	int sv[2];
	time_t start = time(NULL);

	filter_list_init(&filters);
	if (filter_list_from_opts(&filters, o, err, sizeof err) < 0) {
		int code = options_filter_failed(o, &filters, err);
		filter_list_free(&filters);
		return code;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		fprintf(stderr, "ferry: socketpair failed: %s\n", strerror(errno));
		filter_list_free(&filters);
		return RERR_IPC;
	}
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "ferry: fork failed: %s\n", strerror(errno));
		filter_list_free(&filters);
		return RERR_IPC;
	}
	if (pid == 0) {
		close(sv[0]);
		stop_signal_install(NULL); /* a forced exit is the parent's to report */
		_exit(local_receiver_half(o, sv[1], dest, NULL));
	}
	close(sv[1]);
	int code = local_sender_half(o, sv[0], srcs, nsrc, &filters, start, NULL);
	close(sv[0]);
	filter_list_free(&filters);
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return local_exit_code(code, WIFEXITED(status) ? WEXITSTATUS(status) : RERR_CRASHED);
}

int client_local_list(const struct ferry_opts *o, char **srcs, int nsrc)
{
	struct session s;
	struct filter_list filters;
	struct send_list sl;
	char err[512];

	filter_list_init(&filters);
	if (filter_list_from_opts(&filters, o, err, sizeof err) < 0) {
		int code = options_filter_failed(o, &filters, err);
		filter_list_free(&filters);
		return code;
	}
	session_init(&s, o, -1, -1);
	struct walk_opts w = {.filters = &filters, .root_fd = AT_FDCWD};
	struct names_source ns;
	if (o->files_from_fd >= 0) {
		names_from_fd(&ns, o->files_from_fd, o->from0);
		w.names = &ns;
	}
	bool ok = flist_build(&s, &w, srcs, nsrc, &sl) && flist_sort_and_clean(&s, &sl.fl);
	for (size_t i = sl.fl.low; ok && i <= sl.fl.high && i < sl.fl.count; i++)
		if (list_wanted(o, sl.fl.sorted[i]))
			list_print_entry(o, sl.fl.sorted[i]);
	fflush(stdout);
	int code = ok ? session_exit_code(&s) : session_exit_code(&s);
	send_list_free(&sl);
	session_free(&s);
	filter_list_free(&filters);
	return code;
}
