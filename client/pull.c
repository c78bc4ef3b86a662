/*
 * A client pull from an rsync daemon: connect, handshake, protocol set-up,
 * filter list, file list, then the receiving side (proto/recv/recv.c).
 * Mirrors rsync main.c: client_run() for a receiving client.
 */
#include "client/pull.h"
#include "client/request_check.h"

#include <errno.h>
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
#include "proto/base/json.h"
#include "proto/meta/copy_as.h"
#include "proto/filter/filter.h"
#include "proto/base/fileio.h"
#include "proto/core/logfmt.h"
#include "proto/core/msg.h"
#include "proto/core/progress.h"
#include "proto/run/negotiate.h"
#include "proto/base/outfilter.h"
#include "proto/recv/recvside.h"

/* rsync measures the rate over whole seconds of time(NULL). */
static double now_sec(void)
{
	return (double)time(NULL);
}

/* The paths we ask the server for: "module/path" for a daemon, the path
 * itself (default ".") over a remote shell. */
static char **remote_paths(const struct remote_spec *srcs, int nsrc)
{
	char **v = calloc((size_t)nsrc + 1, sizeof *v);

	for (int i = 0; v && i < nsrc; i++) {
		size_t len = strlen(srcs[i].module) + strlen(srcs[i].path) + 3;
		v[i] = malloc(len);
		if (!v[i])
			return NULL;
		if (srcs[i].kind == REMOTE_DAEMON)
			snprintf(v[i], len, "%s/%s", srcs[i].module, srcs[i].path);
		else
			snprintf(v[i], len, "%s", srcs[i].path[0] ? srcs[i].path : ".");
	}
	return v;
}

static void free_paths(char **v, int n)
{
	for (int i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

/* rsync generator.c: list_file_entry(), for --list-only. */
void list_print_entry(const struct ferry_opts *o, const struct file_entry *f)
{
	char line[MAXPATHLEN_WIRE * 3];

	list_format(o, f, line, sizeof line);
	if (o->json)
		json_event_text("list_entry", "text", line, strlen(line));
	else
		out_filtered(stdout, line, o->eight_bit_output, '\n');
}

/* "created directory NAME" (len bytes of it), or its --json event. */
static void print_created_dir(const struct ferry_opts *o, const char *dest, int len)
{
	if (o->json)
		json_event_text("created_directory", "name", dest, (size_t)len);
	else
		printf("created directory %.*s\n", len, dest);
}

/* Where the entries go (main.c: get_local_name): a directory (rootfd), or
 * for a single non-directory a file name inside the parent directory. */
/* The destination directory could not be entered (another user's
 * symlink on the way: ELOOP): rsync's change_dir message, which names it
 * by its absolute path (#1: it existed, #2: it was to be made). */
static int dest_change_dir_failed(int which, const char *dest, int e)
{
	char cwd[4096] = "";
	size_t n = strlen(dest);

	if (*dest != '/' && !getcwd(cwd, sizeof cwd))
		cwd[0] = '\0';
	while (which == 2 && n > 1 && dest[n - 1] == '/')
		n--;
	fprintf(stderr, "ferry: [Receiver] change_dir#%d \"%s%s%.*s\" failed: %s (%d)\n", which,
		cwd, *cwd ? "/" : "", (int)n, dest, strerror(e), e);
	return -RERR_FILESELECT;
}

/* The existing destination directory, an operator path (oppath.h). */
static int open_existing_root(const char *dest, bool insecure)
{
	int fd = fs_open_root(dest, false, false, insecure);

	if (fd < 0)
		return dest_change_dir_failed(1, dest, errno);
	return fd;
}

static int open_destination(const struct ferry_opts *o, struct flist *fl, const char *dest,
			    struct recv_ctx *rc, char *solo, size_t solosize)
{
	struct stat st;
	size_t active = 0;
	const struct file_entry *only = NULL;

	for (size_t i = fl->low; i <= fl->high && i < fl->count; i++) {
		if (fl->sorted[i]->flags & FE_ACTIVE) {
			active++;
			only = fl->sorted[i];
		}
	}
	size_t dlen = strlen(dest);
	bool trailing_slash = dlen > 0 && dest[dlen - 1] == '/';
	int statret = stat(dest, &st);
	if (statret == 0 && S_ISDIR(st.st_mode))
		return open_existing_root(dest, o->insecure_links);
	if (statret == 0 && active > 1) {
		fprintf(stderr, "ferry: ERROR: destination must be a directory when copying more than 1 file\n");
		return -RERR_FILESELECT;
	}
	if (statret == 0 && only && S_ISDIR(only->mode)) {
		fprintf(stderr, "ferry: ERROR: cannot overwrite non-directory with a directory\n");
		return -RERR_FILESELECT;
	}
	if (statret < 0 && errno != ENOENT) {
		fprintf(stderr, "ferry: ERROR: cannot stat destination \"%s\": %s\n", dest,
			strerror(errno));
		return -RERR_FILESELECT;
	}
	if (active > 1 || trailing_slash || (only && S_ISDIR(only->mode))) {
		if (statret == 0) {
			fprintf(stderr, "ferry: ERROR: destination path is not a directory\n");
			return -RERR_SYNTAX;
		}
		if (o->dry_run) {
			/* nothing exists there yet, and nothing will be written */
			rc->cfg.dry_run_missing_root = true;
			if (info_ge(o, INFO_NAME, 1) || o->itemize ||
			    log_format_has(o->out_format, 'i')) {
				int n = (int)dlen;
				while (n > 1 && dest[n - 1] == '/')
					n--;
				print_created_dir(o, dest, n);
			}
			return fs_open_root("/", false, false, false);
		}
		int fd = fs_open_root(dest, true, o->mkpath, o->insecure_links);
		rc->cfg.root_created = fd >= 0;
		if (fd < 0 && errno == ELOOP)
			return dest_change_dir_failed(2, dest, errno);
		if (fd < 0) {
			fprintf(stderr, "ferry: mkdir \"%s\" failed: %s\n", dest, strerror(errno));
			return -RERR_FILEIO;
		}
		if (info_ge(o, INFO_NAME, 1) || o->itemize || o->progress ||
		    log_format_has(o->out_format, 'i')) {
			/* rsync names it without the trailing slash */
			int n = (int)dlen;
			while (n > 1 && dest[n - 1] == '/')
				n--;
			print_created_dir(o, dest, n);
		}
		return fd;
	}
	/* A single file written under the destination's name. */
	const char *slash = strrchr(dest, '/');
	char parent[4096];
	snprintf(parent, sizeof parent, "%.*s", slash ? (int)(slash - dest) : 1,
		 slash ? dest : ".");
	if (slash == dest)
		snprintf(parent, sizeof parent, "/");
	snprintf(solo, solosize, "%s", slash ? slash + 1 : dest);
	rc->cfg.solo_name = solo;
	return fs_open_root(parent, o->mkpath, o->mkpath, o->insecure_links);
}

static void print_summary(const struct ferry_opts *o, struct session *s, double elapsed)
{
	/* A batch replay reports the recorded sender's counts, as rsync. */
	if (!o->read_batch) {
		s->stats.total_written = (int64_t)s->out.total_written;
		s->stats.total_read = (int64_t)s->in.total_read;
	}
	progress_finish(s);
	if (o->json) {
		progress_json_stats(s, session_exit_code(s));
	} else {
		/* through the message path: the log gets them too */
		char *text = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&text, &len);
		if (m && info_ge(o, INFO_STATS, 2))
			stats_print(m, &s->stats, s->protocol, o->human, false);
		if (m && info_ge(o, INFO_STATS, 1))
			summary_print(m, &s->stats, elapsed, o->human, o->dry_run);
		if (m && fclose(m) == 0)
			msg_write_lines(s, MC_INFO, text, len);
		free(text);
	}
	fflush(stdout);
	logfile_write(s, "sent %lld bytes  received %lld bytes  total size %lld",
		      (long long)s->stats.total_written, (long long)s->stats.total_read,
		      (long long)s->stats.total_size);
}

/* recv_ctx.check_part: the sender's names in a later part of the list */
static bool check_part(struct session *s, const void *ctx, struct flist *fl, size_t first,
		       size_t end)
{
	return request_check_range(s, ctx, fl, first, end);
}

int pull_receive(struct session *s, const char *dest, struct filter_list *filters,
		 struct names_forwarder *fw, const struct request_check *rq, double start)
{
	const struct ferry_opts *o = s->opts;
	struct flist fl;
	struct recv_ctx rc;
	char solo[4096];
	int code;

	session_watch_filters(s, filters);

	/* main.c: client_run, the receiving side becomes the --copy-as user */
	if (!copy_as_become(s, o->copy_as))
		return session_exit_code(s);
	flist_init(&fl);
	fl.listing = o->list_only || !dest;
	/* rsync's "receiving file list ... done" (without incremental recursion) */
	bool show = (info_ge(o, INFO_FLIST, 1) || o->progress) && !o->quiet && !o->json &&
		    !o->list_only && dest;
	logfile_write(s, "receiving file list");
	if (show && s->inc_recurse) {
		printf("receiving incremental file list\n");
	} else if (show && o->dirs) {
		/* flist.c: show_filelist_progress needs rsync's xfer_dirs */
		printf("receiving file list ... ");
		fflush(stdout);
		s->output_needs_newline = true;
	}
	bool ok = flist_recv(s, &fl);
	/* The sender has read all of a forwarded --files-from list by the
	 * time its file list ends. */
	ok = names_forward_finish(fw, !ok) && ok;
	ok = ok && request_check_list(s, rq, &fl) && flist_sort_and_clean(s, &fl);
	size_t first_count = fl.count;
	ok = ok && flist_recv_second(s, &fl) &&
	     request_check_range(s, rq, &fl, first_count, fl.count);
	s->output_needs_newline = false;
	if (show && ok && !s->inc_recurse && o->dirs)
		printf("done\n");
	if (!ok) {
		flist_free(&fl);
		return session_exit_code(s);
	}
	if (fl.count == 0) {
		/* Nothing to receive: the sender stops right after an empty list
		 * (main.c: client_run), and so do we. */
		flist_free(&fl);
		code = session_exit_code(s);
		print_summary(o, s, now_sec() - start);
		exit_line_set_role(o->exit_note, "Receiver");
		return code;
	}
	memset(&rc, 0, sizeof rc);
	rc.s = s;
	rc.fl = &fl;
	rc.cfg.check_part = check_part;
	rc.cfg.check_ctx = rq;
	rc.cfg.filters = filters;
	rc.cfg.root_path = dest;
	rc.cfg.rootfd = -1;
	if ((o->list_only || !dest) && s->inc_recurse) {
		/* listed part by part, as the generator reaches them */
		rc.cfg.on_list = list_print_entry;
		rc.cfg.list_only = true;
	} else if (o->list_only || !dest) {
		for (size_t i = fl.low; i <= fl.high && i < fl.count; i++)
			if (list_wanted(o, fl.sorted[i]))
				list_print_entry(o, fl.sorted[i]);
		fflush(stdout);
		rc.cfg.list_only = true;
	} else if (fl.count > 0) {
		rc.cfg.rootfd = open_destination(o, &fl, dest, &rc, solo, sizeof solo);
		if (rc.cfg.rootfd < 0) {
			flist_free(&fl);
			return rc.cfg.rootfd < -1 ? -rc.cfg.rootfd : RERR_FILEIO;
		}
	}
	code = recv_run(&rc);
	if (rc.cfg.rootfd >= 0)
		close(rc.cfg.rootfd);
	flist_free(&fl);
	/* a write into the destination failed and stopped the receiver,
	 * who ends the run then (receiver.c: receive_data) */
	if (code == RERR_FILEIO && rc.receiver_failed)
		exit_line_set_role(o->exit_note, "receiver");
	if (code == 0 || code == RERR_PARTIAL || code == RERR_VANISHED || code == RERR_DEL_LIMIT)
		print_summary(o, s, now_sec() - start);
	return code;
}

int client_pull(const struct ferry_opts *o, const struct remote_spec *srcs, int nsrc,
		const char *dest)
{
	struct session s;
	struct transport t;
	struct filter_list filters;
	char err[512], **paths;
	int code;
	double start = now_sec();

	filter_list_init(&filters);
	if (filter_list_from_opts(&filters, o, err, sizeof err) < 0) {
		int code = options_filter_failed(o, &filters, err);
		filter_list_free(&filters);
		return code;
	}
	paths = remote_paths(srcs, nsrc);
	if (!paths) {
		filter_list_free(&filters);
		return RERR_MALLOC;
	}
	bool go = transport_open(&s, o, &srcs[0], true, paths, nsrc, &t, &code);
	free_paths(paths, nsrc);
	if (!go) {
		/* before any list, a failed pull is rsync's "Receiver" */
		exit_line_set_role(o->exit_note, "Receiver");
		filter_list_free(&filters);
		return code;
	}
	bool listing = srcs[0].kind == REMOTE_DAEMON && !srcs[0].module[0];
	struct names_forwarder fw = {0};
	struct request_check rq;
	if (!request_check_init(&rq, o, srcs, nsrc, &filters, err, sizeof err))
		wire_fail(&s.err, RERR_MALLOC, "%s", err);
	/* Our --files-from list goes to the sender while its file list comes
	 * back (main.c: client_run, start_filesfrom_forwarding). */
	if (wire_error_code(&s.err) || !filter_send(&s, &filters, false) || !wire_flush(&s.out) ||
	    (o->cvs_exclude && filter_add_cvs_rules(&filters, true, true, err, sizeof err) < 0 &&
	     wire_fail(&s.err, RERR_SYNTAX, "%s", err)) ||
	    (o->files_from_fd >= 0 &&
	     !names_forward_start(&fw, &s, o->files_from_fd, o->from0))) {
		code = session_exit_code(&s);
		if (s.err.msg[0] && strcmp(s.err.msg, " ") != 0)
			fprintf(stderr, "ferry: %s\n", s.err.msg);
	} else {
		code = batch_client_start(&s, false)
			       ? pull_receive(&s, listing ? NULL : dest, &filters, &fw, &rq, start)
			       : session_exit_code(&s);
		code = batch_client_finish(&s, code);
		if (code && wire_error_code(&s.err) && s.err.msg[0] && strcmp(s.err.msg, " ") != 0)
			fprintf(stderr, "ferry: %s\n", s.err.msg);
	}
	request_check_free(&rq);
	filter_list_free(&filters);
	return transport_close(&s, &t, code);
}
