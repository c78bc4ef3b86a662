/*
 * The server side: protocol set-up, then either the sender (a client
 * pulls) or the generator and receiver (a client pushes).
 */
#include "proto/base/byteorder.h"
#include "proto/run/server.h"
#include "proto/core/msg.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/filter/filter.h"
#include "proto/core/logfmt.h"
#include "proto/base/fileio.h"
#include "proto/flist/filesfrom.h"
#include "proto/meta/copy_as.h"
#include "proto/run/negotiate.h"
#include "proto/base/oppath.h"
#include "proto/recv/recvside.h"
#include "proto/send/sender.h"
#include "proto/core/exit_line.h"

/* A server stopped by a signal says so to its client in its closing line,
 * as rsync's log_exit does through the multiplexed stream. */
static void tell_signal_line(struct session *s, int line)
{
	char buf[512];
	size_t n = exit_line_format(buf, sizeof buf, RERR_SIGNAL,
				    s->am_sender ? "sender" : "receiver", "server.c", line);

	wire_send_msg(&s->out, MSG_ERROR, buf, n);
}

/* How long a server that has said its last waits for the client. */
#define HANGUP_WAIT_MS 10000

/* Before protocol 31 there is no exit message: end our half of the
 * connection and read (and drop) what the client still sends until it
 * hangs up, so that it reads our last messages and then the end, not a
 * reset connection (closing a socket with unread data resets it). */
static void hang_up(struct session *s)
{
	uint8_t sink[64 * 1024];
	struct pollfd p = {.fd = s->in.fd, .events = POLLIN};
	int64_t until = wire_now_ms() + HANGUP_WAIT_MS;

	shutdown(s->out.fd, SHUT_WR);
	for (int64_t left = HANGUP_WAIT_MS; left > 0; left = until - wire_now_ms()) {
		int r = poll(&p, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || read(s->in.fd, sink, sizeof sink) <= 0)
			break;
	}
}

/* After our MSG_ERROR_EXIT: read on (data dropped) until the client
 * answers with its own, hangs up or HANGUP_WAIT_MS pass. rsync's client
 * answers, then waits for us to close (io.c: noop_io_until_death); one
 * that saw our end earlier, while still sending, could lose the messages
 * it had not yet read. */
static void await_exit_answer(struct session *s)
{
	struct wire_error *failed = s->in.err;
	struct wire_error reading; /* the stream reads nothing after an error */
	size_t got;

	wire_error_init(&reading);
	s->in.err = &reading;
	s->in.timeout_ms = HANGUP_WAIT_MS;
	s->in.deadline_ms = wire_now_ms() + HANGUP_WAIT_MS;
	while (s->in.mux && wire_read_some(&s->in, 64 * 1024, &got))
		;
	s->in.err = failed;
}

/* Tell the client our exit code and wait for its answer, so it reads our
 * last messages instead of a reset connection (protocol >= 31;
 * cleanup.c: _exit_cleanup). A server stopped by a signal first says so in
 * its closing line. */
int error_exit_to_peer(struct session *s, int code)
{
	uint8_t b[4];

	put_le32(b, (uint32_t)code);

	wire_flush(&s->out);
	if (code == RERR_SIGNAL && s->am_server)
		tell_signal_line(s, __LINE__);
	if (s->protocol < 31 || !s->out.mux || code == RERR_STREAMIO || code == RERR_SOCKETIO ||
	    code == RERR_TIMEOUT)
		return code;
	if (!wire_send_msg(&s->out, MSG_ERROR_EXIT, b, 4) || !wire_flush(&s->out))
		return code;
	await_exit_answer(s);
	return code;
}

/* rsync's receiver that gives up on its destination before it forks says
 * so in its own closing line, which reaches the client (log.c: log_exit
 * as "Receiver"), then exits with the code. */
static int receiver_exit(struct session *s, int code, int line)
{
	char buf[512];
	size_t n = exit_line_format(buf, sizeof buf, code, "Receiver", "main.c", line);

	wire_flush(&s->out);
	if (s->out.mux)
		wire_send_msg(&s->out, MSG_ERROR, buf, n);
	return error_exit_to_peer(s, code);
}

/* The receiver stopped mid-transfer (a write into the destination
 * failed): like rsync's, it says so in its closing line and tells the
 * client its exit code, which the client then exits with (receiver.c:
 * receive_data ends in exit_cleanup). */
static int receiver_stopped(struct session *s, int code, int line)
{
	char buf[512];
	size_t n = exit_line_format(buf, sizeof buf, code, "receiver", "server.c", line);

	if (s->out.mux)
		wire_send_msg(&s->out, MSG_ERROR, buf, n);
	if (s->protocol >= 31)
		return error_exit_to_peer(s, code);
	/* no exit message before protocol 31: the client sees the
	 * connection close after our messages, as from rsync's */
	if (wire_flush(&s->out))
		hang_up(s);
	return code;
}

/* True if the peer closes the connection within ms (anything else it
 * sends counts as "still there"). */
static bool peer_closes_within(struct session *s, int ms)
{
	struct pollfd p = {.fd = s->in.fd, .events = POLLIN};
	char c;

	if (wire_buffered(&s->in) > 0 || poll(&p, 1, ms) <= 0)
		return false;
	return recv(s->in.fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0 ||
	       (p.revents & POLLHUP && !(p.revents & POLLIN));
}

static int finish(struct session *s, bool ok)
{
	int code = session_exit_code(s);

	if (!ok && code == 0)
		code = RERR_STREAMIO;
	if (code && s->err.msg[0] && strcmp(s->err.msg, " ") != 0)
		session_err(s, "%s", s->err.msg);
	wire_flush(&s->out);
	/* After the final goodbye the client already knows every error (as
	 * MSG_ERROR_XFER and the lists' io_error) and closes at once; an
	 * exit message racing that close can end a real rsync client's
	 * receiver before it prints its summary, so it goes only to a
	 * client that is still there. */
	if (code && ok && peer_closes_within(s, 500))
		return code;
	return code ? error_exit_to_peer(s, code) : 0;
}

/* Open the --files-from FILE a client named for us to read: inside the
 * module on a daemon (no symlinks, no ".."), as given over a remote
 * shell. Returns the fd, or -1 after reporting (options.c: "failed to
 * open files-from file"). */
static int open_listed_names(struct session *s, const struct server_ctx *ctx)
{
	char clean[MAXPATHLEN_WIRE];
	const char *path = s->opts->files_from;
	int fd;

	if (ctx->confined) {
		struct dir_cursor c;
		const char *leaf;
		/* inside the module, as rsync's sanitize_path makes it */
		snprintf(clean, sizeof clean, "%s", path);
		names_sanitize(clean, false);
		path = clean;
		dir_cursor_init(&c, ctx->root_fd);
		int dirfd = dir_cursor_parent(&c, path, &leaf);
		fd = dirfd < 0 ? -1 : openat(dirfd, leaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		int e = errno;
		dir_cursor_close(&c);
		errno = e;
		if (fd >= 0 && ctx->daemon_filters &&
		    filter_check(ctx->daemon_filters, path, false, false) < 0) {
			close(fd);
			fd = -1;
			errno = ENOENT;
		}
	} else {
		/* the user's own path on this host: an operator path */
		fd = oppath_open_under(opts_confine_fd(s->opts), ctx->root_fd, path, O_RDONLY, 0,
				       s->opts->insecure_links);
	}
	if (fd < 0)
		session_err(s, "failed to open files-from file %s: %s", path, strerror(errno));
	return fd;
}

/* The names of a --files-from list for the sender: over the socket for
 * "-" (unframed before protocol 31: main.c: send_file_list's
 * io_end_multiplex_in), else from the file. Returns false after
 * reporting; *fd is the file's descriptor or -1. */
static bool listed_names_source(struct session *s, const struct server_ctx *ctx,
				struct names_source *ns, int *fd)
{
	*fd = -1;
	if (strcmp(s->opts->files_from, "-") == 0) {
		names_from_peer(ns, &s->in);
		if (s->protocol < 31)
			s->in.mux = false;
		return true;
	}
	*fd = open_listed_names(s, ctx);
	if (*fd < 0)
		return false;
	names_from_fd(ns, *fd, s->opts->from0);
	return true;
}

static int serve_sender(struct session *s, const struct server_ctx *ctx,
			struct filter_list *filters)
{
	struct send_list sl;
	struct walk_opts w = {.filters = filters, .daemon_filters = ctx->daemon_filters,
			      .root_fd = ctx->root_fd, .confined = ctx->confined,
			      .defer_stat = true};
	char *dot[] = {"."};
	char **paths = ctx->npaths ? ctx->paths : dot;
	int npaths = ctx->npaths ? ctx->npaths : 1;
	struct names_source ns;
	int list_fd = -1;
	bool mux_in = s->in.mux;

	if (s->opts->files_from) {
		if (!listed_names_source(s, ctx, &ns, &list_fd))
			return error_exit_to_peer(s, RERR_SYNTAX);
		w.names = &ns;
	}
	int64_t t0 = wire_now_ms();
	bool built = flist_build(s, &w, paths, npaths, &sl);
	s->in.mux = mux_in;
	if (list_fd >= 0)
		close(list_fd);

	flist_note_build_time(s, t0);
	int64_t t1 = wire_now_ms();
	bool ok = built && flist_send(s, &sl);
	s->stats.flist_xfertime_ms = wire_now_ms() - t1;
	if (ok && sl.fl.count == 0) {
		/* An empty list ends the run (main.c: do_server_sender); the
		 * client takes our io_error for its exit code. */
		send_list_free(&sl);
		wire_flush(&s->out);
		return session_exit_code(s);
	}
	ok = ok && flist_sort_sender(s, &sl.fl) && sender_run(s, &sl) && sender_finish(s);
	send_list_free(&sl);
	return finish(s, ok);
}

/* A directory of the destination's path that we only pass through: the
 * user's own path (oppath.h), and a parent searchable but not readable
 * (mode 0111) is still entered, by an O_PATH descriptor, which needs
 * search permission only. */
static int open_dest_parent(int at, const char *path, unsigned how)
{
	int fd = oppath_open(at, path, O_RDONLY | O_DIRECTORY, 0, how);

	if (fd < 0 && errno == EACCES)
		fd = oppath_open(at, path, O_PATH | O_DIRECTORY, 0, how);
	return fd;
}

/* --mkpath for the user's own destination: an operator path (oppath.h);
 * in a module (how has OPPATH_CONFINE) one that stays inside it. */
static int mkpath_plain(int rootfd, const char *path, unsigned how)
{
	bool made;
	int fd = oppath_mkdirs(rootfd, path, 0777, how, &made);

	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/* How rsync's full_fname() names a destination path in a message, quoted:
 * over a remote shell or in a local copy prefixed with our working
 * directory; inside a daemon module as given, and "(in MODULE)". */
static void dest_fname(const struct session *s, const struct server_ctx *ctx, const char *path,
		       char *out, size_t size)
{
	char cwd[4096];

	if (ctx->confined && s->module.name)
		msg_full_name(s, NULL, path, out, size);
	else if (ctx->confined || *path == '/' || !getcwd(cwd, sizeof cwd))
		snprintf(out, size, "\"%s\"", path);
	else
		snprintf(out, size, "\"%s%s%s\"", cwd, strcmp(cwd, "/") ? "/" : "", path);
}

/* rsync's rsyserr() for a destination it cannot use before the transfer
 * starts: "[Receiver]" is who_am_i() before the receiver forks; fmt has
 * one %s for the path. Returns -code. */
static int dest_syserr(struct session *s, const struct server_ctx *ctx, int code, int e,
		       const char *fmt, const char *path)
{
	char name[8300], what[8400];

	dest_fname(s, ctx, path, name, sizeof name);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	snprintf(what, sizeof what, fmt, name);
#pragma GCC diagnostic pop
	session_err(s, "[Receiver] %s: %s (%d)", what, strerror(e), e);
	return -code;
}

/* Directories of path that do not exist yet, counted up from its last
 * component: what --mkpath is about to make (util1.c: make_path); -1
 * with errno when something other than a missing name is in the way. */
/* How a module's paths are walked (oppath_open_in): quietly, and through
 * any link with the module's "insecure links". */
static unsigned module_how(const struct session *s)
{
	return OPPATH_QUIET | (s->opts->insecure_links ? OPPATH_INSECURE : 0);
}

/* fstatat() of a path beneath the root; in a module (confined) through
 * trusted links that stay in it, as rsync 3.5 follows them (one that
 * leads out fails with ELOOP). */
static int dest_stat(const struct session *s, const struct server_ctx *ctx, const char *path,
		     struct stat *st, int flags)
{
	if (!ctx->confined)
		return fstatat(ctx->root_fd, path, st, flags);
	int fd = oppath_open_in(ctx->root_fd, path, O_PATH, 0, module_how(s));
	if (fd < 0)
		return -1;
	int r = fstat(fd, st), e = errno;
	close(fd);
	errno = e;
	return r;
}

static int missing_dirs(const struct session *s, const struct server_ctx *ctx, const char *path)
{
	char buf[4096];
	struct stat st;
	int n = 0;

	snprintf(buf, sizeof buf, "%s", path);
	while (*buf && dest_stat(s, ctx, buf, &st, 0) < 0) {
		if (errno != ENOENT)
			return -1;
		n++;
		char *sl = strrchr(buf, '/');
		if (!sl || sl == buf)
			break;
		*sl = '\0';
	}
	if (*buf && n == 0 && !S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	return n;
}

/* The destination of a push: a directory beneath the root (created if it
 * is the last missing component), or a single file's name. Mirrors rsync
 * main.c:get_local_name(): more than one entry, or a trailing slash, wants
 * a directory; an existing non-directory then is an error, never written
 * over. Returns the directory's fd, or -(exit code). */
static int open_push_dest(struct session *s, const struct server_ctx *ctx, struct recv_ctx *rc,
			  char *solo, size_t solosize)
{
	const struct ferry_opts *o = s->opts;
	const char *dest = ctx->npaths && *ctx->paths[0] ? ctx->paths[0] : ".";
	bool say = info_ge(o, INFO_NAME, 1) || o->itemize || log_format_has(o->out_format, 'i');
	/* every entry received so far, as rsync's file_total (the second
	 * list of an incremental one included) */
	size_t total = 0;
	const struct file_entry *only = NULL;

	for (size_t i = 0; i < rc->fl->count; i++) {
		if (rc->fl->files[i].flags & FE_ACTIVE) {
			total++;
			only = &rc->fl->files[i];
		}
	}
	char clean[4096];
	snprintf(clean, sizeof clean, "%s", dest);
	size_t n = strlen(clean);
	bool slash = clean[n - 1] == '/';
	const char *last_slash = strchr(clean, '/');
	while (n > 1 && clean[n - 1] == '/')
		clean[--n] = '\0';
	/* a single directory is still made as the destination itself */
	bool want_dir = total > 1 || slash || (only && S_ISDIR(only->mode));
	if (ctx->confined && !fs_path_is_safe(clean) && strcmp(clean, ".") != 0 &&
	    strcmp(clean, "/") != 0) {
		session_err(s, "ERROR: destination path \"%s\" escapes the module", dest);
		return -RERR_FILESELECT;
	}
	/* rsync follows a symlink at the destination that is the user's
	 * own; a module's path is never followed out of it */
	int stat_flags = 0;
	struct stat st;
	/* the path as given: "F/" is an error when F is a file */
	int statret = dest_stat(s, ctx, slash && !ctx->confined ? dest : clean, &st, stat_flags);
	int stat_errno = errno;
	if (o->mkpath && statret < 0 && (last_slash || total > 1)) {
		/* its parents, and itself when it must be a directory */
		char target[4096];
		const char *sl = strrchr(clean, '/');
		if (slash || total > 1)
			snprintf(target, sizeof target, "%s", clean);
		else
			snprintf(target, sizeof target, "%.*s", sl && sl != clean ? (int)(sl - clean) : 0,
				 clean);
		int made = *target ? missing_dirs(s, ctx, target) : 0;
		if (made < 0 || (made && !o->dry_run &&
				 mkpath_plain(ctx->root_fd, target,
					      ctx->confined ? module_how(s) | OPPATH_CONFINE
							    : o->insecure_links) < 0))
			return dest_syserr(s, ctx, RERR_FILEIO, errno, "mkdir %s failed", dest);
		if (made && say)
			session_info(s, "created %d director%s for %s\n", made, made == 1 ? "y" : "ies",
				     target);
		if (made && !o->dry_run) {
			statret = dest_stat(s, ctx, clean, &st, stat_flags);
			stat_errno = errno;
		} else if (made && !want_dir) {
			/* a dry run made none of it: the file is new (#880) */
			rc->cfg.dry_run_missing_root = true;
			snprintf(solo, solosize, "%s", sl ? sl + 1 : clean);
			rc->cfg.solo_name = solo;
			return openat(ctx->root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		}
	}
	if (statret == 0 && !S_ISDIR(st.st_mode)) {
		if (total > 1) {
			session_err_plain(s, "ERROR: destination must be a directory when copying more than 1 file");
			return -RERR_FILESELECT;
		}
		if (only && S_ISDIR(only->mode)) {
			session_err_plain(s, "ERROR: cannot overwrite non-directory with a directory");
			return -RERR_FILESELECT;
		}
	} else if (statret < 0 && stat_errno == ELOOP && ctx->confined) {
		/* a link out of the module (main.c: get_local_name) */
		return dest_syserr(s, ctx, RERR_FILESELECT, stat_errno, "change_dir#1 %s failed",
				   dest);
	} else if (statret < 0 && stat_errno != ENOENT) {
		return dest_syserr(s, ctx, RERR_FILESELECT, stat_errno,
				   "ERROR: cannot stat destination %s", dest);
	}
	if (statret < 0 && want_dir && o->dry_run) {
		/* rsync says it, but a dry run writes nothing; every entry
		 * is then missing */
		rc->cfg.dry_run_missing_root = true;
		if (say)
			session_info(s, "created directory %s\n", clean);
		return openat(ctx->root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	/* the destination's parent, where it is made or written as a file */
	struct dir_cursor c;
	const char *leaf;
	int parent;
	char pbuf[4096];
	const char *sl = strrchr(clean, '/');
	dir_cursor_init(&c, ctx->root_fd);
	if (strcmp(clean, ".") == 0 || strcmp(clean, "/") == 0) {
		snprintf(pbuf, sizeof pbuf, "%s", clean);
		parent = ctx->confined ? ctx->root_fd : openat(ctx->root_fd, clean, O_RDONLY |
							       O_DIRECTORY | O_CLOEXEC);
		leaf = ".";
	} else if (!ctx->confined) {
		/* Over a remote shell the path is the user's own, as given. */
		snprintf(pbuf, sizeof pbuf, "%.*s", !sl ? 1 : sl == clean ? 1 : (int)(sl - clean),
			 !sl ? "." : clean);
		leaf = sl ? sl + 1 : clean;
		parent = open_dest_parent(ctx->root_fd, pbuf, o->insecure_links);
	} else {
		snprintf(pbuf, sizeof pbuf, "%.*s", sl ? (int)(sl - clean) : 1, sl ? clean : ".");
		parent = oppath_open_parent_in(ctx->root_fd, clean, &leaf, module_how(s));
	}
	if (parent >= 0 && parent != ctx->root_fd)
		c.fd = parent; /* the cursor owns and closes it */
	int fd = -1;
	if (parent < 0) {
		int e = errno;
		dir_cursor_close(&c);
		if (e == ELOOP) /* another user's symlink on the way (oppath.h) */
			return dest_syserr(s, ctx, RERR_FILESELECT, e, "change_dir#2 %s failed", clean);
		if (want_dir)
			return dest_syserr(s, ctx, RERR_FILEIO, e, "mkdir %s failed", clean);
		return dest_syserr(s, ctx, RERR_FILESELECT, e, "change_dir#3 %s failed", pbuf);
	}
	if (statret == 0 && S_ISDIR(st.st_mode)) {
		fd = ctx->confined ? oppath_open_in(ctx->root_fd, clean, O_RDONLY | O_DIRECTORY, 0,
						    module_how(s))
				   : oppath_open(parent, leaf, O_RDONLY | O_DIRECTORY, 0,
						 o->insecure_links);
		if (fd < 0 && errno == ELOOP) {
			int e = errno;
			dir_cursor_close(&c);
			return dest_syserr(s, ctx, RERR_FILESELECT, e, "change_dir#1 %s failed", dest);
		}
	} else if (want_dir) {
		if (statret == 0) {
			session_err_plain(s, "ERROR: destination path is not a directory");
			dir_cursor_close(&c);
			return -RERR_SYNTAX;
		}
		if (mkdirat(parent, leaf, 0777) < 0 && errno != EEXIST) {
			int e = errno;
			dir_cursor_close(&c);
			return dest_syserr(s, ctx, RERR_FILEIO, e, "mkdir %s failed", clean);
		}
		rc->cfg.root_created = true;
		if (say)
			session_info(s, "created directory %s\n", clean);
		fd = openat(parent, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	} else {
		snprintf(solo, solosize, "%s", leaf);
		rc->cfg.solo_name = solo;
		fd = dup(parent);
	}
	dir_cursor_close(&c);
	if (fd < 0) {
		session_err(s, "ERROR: cannot open destination \"%s\": %s", dest, strerror(errno));
		return -RERR_FILESELECT;
	}
	return fd;
}

/* The destination directory relative to the module (its parent when a
 * single file is written under the destination's name), for resolving
 * --link-dest and friends inside the module. */
static void destination_dir(const struct server_ctx *ctx, bool solo, char *out, size_t size)
{
	char path[4096];
	size_t n = (size_t)snprintf(path, sizeof path, "%s", ctx->npaths ? ctx->paths[0] : ".");

	while (n > 1 && path[n - 1] == '/')
		path[--n] = '\0';
	if (solo) {
		char *sl = strrchr(path, '/');
		if (sl)
			*sl = '\0';
		else
			snprintf(path, sizeof path, ".");
	}
	snprintf(out, size, "%s", path);
}

/* Text that is shown to the user as the daemon wrote it, one MSG_ERROR per
 * line (clientserver.c shows a pre-xfer exec's output this way). */
static void send_verbatim_error(struct session *s, const char *text)
{
	while (*text) {
		const char *nl = strchr(text, '\n');
		size_t len = nl ? (size_t)(nl - text) + 1 : strlen(text);
		if (nl) {
			wire_send_msg(&s->out, MSG_ERROR, text, len);
		} else {
			char line[1200];
			int n = snprintf(line, sizeof line, "%.*s\n", (int)(len < 1100 ? len : 1100),
					 text);
			wire_send_msg(&s->out, MSG_ERROR, line, (size_t)n);
		}
		text += len;
	}
}

/* A daemon's module rules also apply to where a push goes: an excluded
 * destination is refused outright (main.c: get_local_name), and the
 * destination inside the module is kept to check each received name. */
static bool daemon_dest(struct session *s, const struct server_ctx *ctx, struct recv_ctx *rc)
{
	const char *dest = ctx->npaths ? ctx->paths[0] : ".";
	char *clean = rc->cfg.daemon_dest;
	size_t size = sizeof rc->cfg.daemon_dest;

	while (*dest == '/')
		dest++;
	while (dest[0] == '.' && dest[1] == '/')
		dest += 2;
	snprintf(clean, size, "%s", dest);
	size_t n = strlen(clean);
	while (n > 0 && clean[n - 1] == '/')
		clean[--n] = '\0';
	if (strcmp(clean, ".") == 0)
		clean[0] = '\0';
	if (!*clean)
		return true;
	if (filter_check(ctx->daemon_filters, clean, false, false) < 0 ||
	    filter_check(ctx->daemon_filters, clean, true, false) < 0) {
		/* rsync's text, unprefixed (main.c: do_server_recv) */
		char msg[MAXPATHLEN_WIRE + 64];
		snprintf(msg, sizeof msg, "ERROR: daemon has excluded destination \"%s\"\n",
			 ctx->paths[0]);
		send_verbatim_error(s, msg);
		return false;
	}
	return true;
}

static int serve_receiver(struct session *s, const struct server_ctx *ctx,
			  struct filter_list *filters)
{
	struct flist fl;
	struct recv_ctx rc;
	char solo[4096], dest_rel[4096];

	flist_init(&fl);
	/* A list on our side goes to the sending client while its file list
	 * comes in (main.c: do_server_recv, start_filesfrom_forwarding). */
	struct names_forwarder fw = {0};
	int list_fd = -1;
	if (s->opts->files_from && !ctx->local_child) {
		list_fd = open_listed_names(s, ctx);
		if (list_fd < 0) {
			flist_free(&fl);
			return error_exit_to_peer(s, RERR_SYNTAX);
		}
		if (!names_forward_start(&fw, s, list_fd, s->opts->from0)) {
			close(list_fd);
			flist_free(&fl);
			return finish(s, false);
		}
	}
	bool got = flist_recv(s, &fl);
	bool forwarded = names_forward_finish(&fw, !got);
	if (list_fd >= 0)
		close(list_fd);
	if (!got || !forwarded || !flist_sort_and_clean(s, &fl) || !flist_recv_second(s, &fl)) {
		flist_free(&fl);
		return finish(s, false);
	}
	memset(&rc, 0, sizeof rc);
	rc.s = s;
	rc.fl = &fl;
	rc.cfg.filters = filters;
	rc.cfg.rootfd = -1;
	rc.cfg.confined = ctx->confined;
	rc.cfg.local = ctx->local_child;
	rc.cfg.module_fd = ctx->root_fd;
	rc.cfg.dest_rel = dest_rel;
	rc.cfg.daemon_filters = ctx->daemon_filters;
	if (ctx->daemon_filters && !daemon_dest(s, ctx, &rc)) {
		flist_free(&fl);
		return receiver_exit(s, RERR_FILESELECT, __LINE__);
	}
	if (s->opts->list_only) {
		/* a push with --list-only: rsync's receiver lists what it got
		 * to the client and writes nothing (generator.c: recv_generator
		 * under list_only) */
		for (size_t i = fl.low; i <= fl.high && i < fl.count; i++) {
			char line[MAXPATHLEN_WIRE * 3];
			if (!list_wanted(s->opts, fl.sorted[i]))
				continue;
			list_format(s->opts, fl.sorted[i], line, sizeof line);
			session_info(s, "%s\n", line);
		}
		rc.cfg.list_only = true;
	} else {
		/* an empty list still makes the destination (main.c:
		 * get_local_name), then there is nothing to do */
		rc.cfg.rootfd = open_push_dest(s, ctx, &rc, solo, sizeof solo);
		destination_dir(ctx, rc.cfg.solo_name != NULL, dest_rel, sizeof dest_rel);
		if (rc.cfg.rootfd < 0) {
			/* the sender hears why, rather than a reset connection
			 * (main.c: get_local_name ends in exit_cleanup) */
			flist_free(&fl);
			return receiver_exit(s, -rc.cfg.rootfd, __LINE__);
		}
		rc.cfg.list_only = fl.count == 0;
	}
	int code = recv_run(&rc);
	if (rc.cfg.rootfd >= 0)
		close(rc.cfg.rootfd);
	flist_free(&fl);
	if (code && s->err.msg[0] && strcmp(s->err.msg, " ") != 0)
		session_err(s, "%s", s->err.msg);
	if (code == RERR_SIGNAL)
		return error_exit_to_peer(s, code);
	if (code == RERR_FILEIO)
		return receiver_stopped(s, code, __LINE__);
	wire_flush(&s->out);
	return code;
}


int server_run(struct session *s, const struct server_ctx *ctx)
{
	struct filter_list filters;
	char err[512];

	s->am_server = true;
	s->am_sender = s->opts->sender;
	if (!negotiate_server(s, ctx->remote_protocol, ctx->client_caps))
		return finish(s, false);
	s->out.mux = true;
	s->in.mux = s->protocol >= 30;
	if (ctx->refusal) {
		/* The client reads errors only once the protocol is set up
		 * (clientserver.c: rsync_module). */
		if (ctx->refusal_verbatim)
			send_verbatim_error(s, ctx->refusal);
		else
			session_err(s, "%s", ctx->refusal);
		return error_exit_to_peer(s, ctx->refusal_code);
	}
	/* a daemon tells its client the timeout in force (main.c:
	 * start_server), so that the client keeps the link alive within it */
	uint8_t timeout[4];
	put_le32(timeout, (uint32_t)s->opts->timeout);
	if (ctx->remote_protocol && s->opts->timeout > 0 && s->protocol >= 31 &&
	    !wire_send_msg(&s->out, MSG_IO_TIMEOUT, timeout, 4))
		return finish(s, false);
	filter_list_init(&filters);
	/* a client's merge file on a daemon: inside the module, unless the
	 * module hides it */
	filters.peer_merge_ok = ctx->confined;
	filters.peer_merge_root = ctx->root_fd;
	filters.peer_merge_hidden = ctx->daemon_filters;
	struct ferry_opts own = *s->opts;
	own.server = !ctx->local_child; /* merge files are read only for our own user */
	if (filter_list_from_opts(&filters, &own, err, sizeof err) < 0) {
		session_err(s, "%s", err);
		filter_list_free(&filters);
		return finish(s, false) ? RERR_SYNTAX : RERR_SYNTAX;
	}
	if (!filter_recv(s, &filters)) {
		filter_list_free(&filters);
		return finish(s, false);
	}
	session_watch_filters(s, &filters);
	/* exclude.c: recv_filter_list */
	bool both = ctx->local_child || s->am_sender;
	if (s->opts->cvs_exclude &&
	    filter_add_cvs_rules(&filters, both || s->protocol < 29, both, err, sizeof err) < 0) {
		session_err(s, "%s", err);
		filter_list_free(&filters);
		return finish(s, false) ? RERR_SYNTAX : RERR_SYNTAX;
	}
	/* main.c: do_server_sender / do_server_recv (-M--copy-as, or the
	 * receiving half of a local copy) */
	if (!copy_as_become(s, s->opts->copy_as)) {
		filter_list_free(&filters);
		return finish(s, false);
	}
	int code = s->am_sender ? serve_sender(s, ctx, &filters) : serve_receiver(s, ctx, &filters);
	filter_list_free(&filters);
	return code;
}
