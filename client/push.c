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

#include "client/batch_client.h"
#include "proto/core/exit_line.h"
#include "client/transport.h"
#include "proto/args/options.h"
#include "proto/flist/filesfrom.h"
#include "proto/meta/copy_as.h"
#include "proto/filter/filter.h"
#include "proto/core/heap_stats.h"
#include "proto/core/logfmt.h"
#include "proto/core/msg.h"
#include "proto/core/progress.h"
#include "proto/run/negotiate.h"
#include "proto/send/sender.h"

/* The last line rsync writes to its --log-file. */
static void log_totals(struct session *s)
{
	logfile_write(s, "sent %lld bytes  received %lld bytes  total size %lld",
		      (long long)s->stats.total_written, (long long)s->stats.total_read,
		      (long long)s->stats.total_size);
}

static void print_summary(const struct ferry_opts *o, struct session *s, time_t start)
{
	s->stats.total_written = (int64_t)s->out.total_written;
	s->stats.total_read = (int64_t)s->in.total_read;
	progress_finish(s);
	if (o->json) {
		progress_json_stats(s, session_exit_code(s));
	} else {
		heap_stats_report(s, "sender");
		/* through the message path: the log gets them too */
		char *text = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&text, &len);
		if (m && info_ge(o, INFO_STATS, 2))
			stats_print(m, &s->stats, s->protocol, o->human, true);
		if (m && info_ge(o, INFO_STATS, 1))
			summary_print(m, &s->stats, (double)(time(NULL) - start), o->human,
				      o->dry_run);
		if (m && fclose(m) == 0)
			msg_write_lines(s, MC_INFO, text, len);
		free(text);
	}
	fflush(stdout);
	log_totals(s);
}

static bool send_everything(struct session *s, char **srcs, int nsrc, struct filter_list *filters)
{
	const struct ferry_opts *o = s->opts;
	struct send_list sl;
	struct walk_opts w = {.filters = filters, .root_fd = AT_FDCWD, .confined = false,
			      .defer_stat = true};

	char err[512];
	if (o->cvs_exclude &&
	    filter_add_cvs_rules(filters, s->protocol >= 29, true, err, sizeof err) < 0)
		return wire_fail(&s->err, RERR_SYNTAX, "%s", err);
	if (!filter_send(s, filters, true) || !wire_flush(&s->out))
		return false;
	if (!batch_client_start(s, true))
		return false;
	/* main.c: client_run, before send_file_list */
	if (!copy_as_become(s, o->copy_as))
		return false;
	bool show = (info_ge(o, INFO_FLIST, 1) || o->progress) && !o->quiet && !o->json;
	logfile_write(s, "building file list");
	if (show && s->inc_recurse)
		printf("sending incremental file list\n");
	else if (show && o->dirs) {
		/* flist.c: show_filelist_progress needs rsync's xfer_dirs */
		printf("building file list ... ");
		fflush(stdout);
		s->output_needs_newline = true;
	}
	/* --files-from: our own list, or one on the remote host that the
	 * receiving server sends us (unframed before protocol 31; main.c:
	 * client_run). */
	struct names_source ns;
	bool mux_in = s->in.mux;
	if (o->files_from_fd >= 0) {
		names_from_fd(&ns, o->files_from_fd, o->from0);
		w.names = &ns;
	} else if (o->files_from) {
		names_from_peer(&ns, &s->in);
		if (s->protocol < 31)
			s->in.mux = false;
		w.names = &ns;
	}
	int64_t t0 = wire_now_ms();
	bool ok = flist_build(s, &w, srcs, nsrc, &sl);
	s->in.mux = mux_in;
	flist_note_build_time(s, t0);
	int64_t t1 = wire_now_ms();
	ok = ok && flist_send(s, &sl) && flist_sort_sender(s, &sl.fl);
	s->stats.flist_xfertime_ms = wire_now_ms() - t1;
	s->output_needs_newline = false;
	if (show && ok && !s->inc_recurse && o->dirs)
		printf("done\n");
	/* incremental lists are counted as they go (flist_send_part) */
	for (size_t i = 0; !s->inc_recurse && i < sl.fl.count; i++)
		flist_count_entry(&s->stats, &sl.fl.files[i]);
	ok = ok && sender_run(s, &sl) && sender_finish(s);
	send_list_free(&sl);
	return ok;
}

int client_push(const struct ferry_opts *o, char **srcs, int nsrc, const struct remote_spec *dest)
{
	struct session s;
	struct transport t;
	struct filter_list filters;
	char err[512], path[4096 + 512];
	char *paths[1] = {path};
	time_t start = time(NULL);

	filter_list_init(&filters);
	if (filter_list_from_opts(&filters, o, err, sizeof err) < 0) {
		int code = options_filter_failed(o, &filters, err);
		filter_list_free(&filters);
		return code;
	}
	if (dest->kind == REMOTE_DAEMON)
		snprintf(path, sizeof path, "%s/%s", dest->module, dest->path);
	else
		snprintf(path, sizeof path, "%s", dest->path[0] ? dest->path : ".");
	int code;
	if (!transport_open(&s, o, dest, false, paths, 1, &t, &code)) {
		filter_list_free(&filters);
		return code;
	}
	code = push_run(&s, srcs, nsrc, &filters, start);
	filter_list_free(&filters);
	return transport_close(&s, &t, code);
}

/* How long a sender whose connection broke waits for the rest of what
 * the receiver said. */
#define LAST_WORDS_WAIT_MS 5000

/* The connection broke while we sent: a receiver that stopped (a full
 * disk) said why before it hung up, and with which exit code, but we
 * were writing, not reading. Read the rest of its messages now (data is
 * dropped; the messages are printed as they come, and MSG_ERROR_EXIT
 * sets peer_exit_code), up to its end of the connection. */
static void read_last_words(struct session *s)
{
	struct wire_error *broken = s->in.err;
	struct wire_error reading; /* the stream reads nothing after an error */
	size_t got;

	wire_error_init(&reading);
	s->in.err = &reading;
	s->in.timeout_ms = LAST_WORDS_WAIT_MS;
	s->in.deadline_ms = wire_now_ms() + LAST_WORDS_WAIT_MS;
	while (s->in.mux && wire_read_some(&s->in, 64 * 1024, &got))
		;
	s->in.err = broken;
}

int push_run(struct session *s, char **srcs, int nsrc, struct filter_list *filters, time_t start)
{
	int code;

	session_watch_filters(s, filters);
	if (send_everything(s, srcs, nsrc, filters)) {
		code = session_exit_code(s);
		print_summary(s->opts, s, start);
	} else {
		code = session_exit_code(s);
		if (code == RERR_STREAMIO && s->peer_exit_code == 0) {
			read_last_words(s);
			if (s->peer_exit_code > 0) {
				/* its code, and no closing line of ours (io.c:
				 * MSG_ERROR_EXIT exits with a negative line) */
				code = s->peer_exit_code;
				exit_line_peer_said(s->opts->exit_note);
			}
		}
		if (s->err.msg[0] && strcmp(s->err.msg, " ") != 0)
			fprintf(msg_err_stream(s), "ferry: %s\n", s->err.msg);
	}
	return batch_client_finish(s, code);
}
