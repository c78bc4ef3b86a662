/*
 * A client push to an rsync daemon: we build and send the file list and
 * answer the daemon's generator (main.c: client_run for a sending client).
 */
#include "client/push.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "client/connect.h"
#include "client/daemon_client.h"
#include "client/options.h"
#include "proto/filter.h"
#include "proto/logfmt.h"
#include "proto/negotiate.h"
#include "proto/sendside.h"

/* The server's arguments: the receiving server gets "." and the module
 * path of the destination. */
static char **build_args(const struct ferry_opts *o, const struct remote_spec *dest, int protocol)
{
	char **base = options_server_argv(o, false, protocol);
	int n = 0;

	if (!base)
		return NULL;
	while (base[n])
		n++;
	char **args = realloc(base, (size_t)(n + 2) * sizeof *args);
	if (!args) {
		options_free_argv(base);
		return NULL;
	}
	size_t len = strlen(dest->module) + strlen(dest->path) + 3;
	args[n] = malloc(len);
	if (!args[n])
		return NULL;
	snprintf(args[n], len, "%s/%s", dest->module, dest->path);
	args[n + 1] = NULL;
	return args;
}

static void print_summary(const struct ferry_opts *o, struct session *s, time_t start)
{
	s->stats.total_written = (int64_t)s->out.total_written;
	s->stats.total_read = (int64_t)s->in.total_read;
	if (o->stats)
		stats_print(stdout, &s->stats, s->protocol, o->human, true);
	if (o->verbose || o->stats)
		summary_print(stdout, &s->stats, (double)(time(NULL) - start), o->human, o->dry_run);
	fflush(stdout);
}

static bool send_everything(struct session *s, char **srcs, int nsrc, struct filter_list *filters)
{
	const struct ferry_opts *o = s->opts;
	struct send_list sl;
	struct walk_opts w = {.filters = filters, .root_fd = AT_FDCWD, .confined = false};

	if (!filter_send(s, filters, true) || !wire_flush(&s->out))
		return false;
	if (o->verbose && !o->quiet) {
		printf("building file list ... ");
		fflush(stdout);
	}
	time_t t0 = time(NULL);
	bool ok = flist_build(s, &w, srcs, nsrc, &sl);
	s->stats.flist_buildtime_ms = (int64_t)(time(NULL) - t0) * 1000;
	ok = ok && flist_send(s, &sl) && flist_sort_sender(s, &sl.fl);
	if (o->verbose && !o->quiet && ok)
		printf("done\n");
	for (size_t i = 0; i < sl.fl.count; i++) {
		const struct file_entry *f = &sl.fl.files[i];
		s->stats.num_files++;
		if (S_ISDIR(f->mode))
			s->stats.num_dirs++;
		else if (S_ISLNK(f->mode))
			s->stats.num_symlinks++;
		else if (S_ISCHR(f->mode) || S_ISBLK(f->mode))
			s->stats.num_devices++;
		else if (!S_ISREG(f->mode))
			s->stats.num_specials++;
	}
	ok = ok && sender_run(s, &sl) && sender_finish(s);
	send_list_free(&sl);
	return ok;
}

int client_push(const struct ferry_opts *o, char **srcs, int nsrc, const struct remote_spec *dest)
{
	struct session s;
	struct daemon_peer peer;
	struct filter_list filters;
	char err[512];
	int exit_code = 0;
	time_t start = time(NULL);

	filter_list_init(&filters);
	if (filter_list_from_opts(&filters, o, err, sizeof err) < 0) {
		fprintf(stderr, "ferry: %s\n", err);
		return RERR_SYNTAX;
	}
	int port = dest->port ? dest->port : o->port ? o->port : 873;
	int fd = tcp_connect(dest->host, port, o->ip_family, o->bind_address, o->contimeout,
			     &exit_code);
	if (fd < 0)
		return exit_code;
	session_init(&s, o, fd, fd);
	s.am_sender = true;
	char **args = build_args(o, dest, o->protocol ? o->protocol : PROTOCOL_NEWEST);
	if (!args) {
		exit_code = RERR_MALLOC;
		goto out;
	}
	if (daemon_handshake(&s, dest, args, &peer, &exit_code) < 0)
		goto out;
	if (!negotiate_client(&s, s.protocol)) {
		exit_code = session_exit_code(&s);
		goto report;
	}
	s.in.mux = true;
	s.out.mux = s.protocol >= 30;
	if (send_everything(&s, srcs, nsrc, &filters)) {
		exit_code = session_exit_code(&s);
		print_summary(o, &s, start);
		goto out;
	}
	exit_code = session_exit_code(&s);
report:
	if (s.err.msg[0] && strcmp(s.err.msg, " ") != 0)
		fprintf(stderr, "ferry: %s\n", s.err.msg);
out:
	options_free_argv(args);
	filter_list_free(&filters);
	session_free(&s);
	close(fd);
	return exit_code;
}
