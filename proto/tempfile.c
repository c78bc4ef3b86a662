/*
 * Temporary files for the receiver (see tempfile.h).
 */
#include "proto/tempfile.h"

#include "proto/syncer.h"
#include "proto/recvside.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The one file being written, for the signal handler. A signal handler
 * cannot be handed a context, so this is the one piece of process-wide
 * state; it is only written by the receiver thread. */
static struct temp_file *volatile active_temp;

static void on_fatal_signal(int sig)
{
	struct temp_file *t = active_temp;

	(void)sig;
	if (t && t->fd >= 0 && !t->inplace) {
		if (t->keep_partial && t->partial_name[0]) {
			mkdirat(t->dirfd, t->partial_dir, 0700);
			if (renameat(t->tmpdirfd, t->tmpname, t->dirfd, t->partial_name) < 0)
				unlinkat(t->tmpdirfd, t->tmpname, 0);
		} else if (t->keep_partial && !t->rc->s->opts->partial_dir) {
			renameat(t->tmpdirfd, t->tmpname, t->dirfd, t->leaf);
		} else {
			unlinkat(t->tmpdirfd, t->tmpname, 0);
		}
	}
	_exit(20); /* RERR_SIGNAL */
}

void temp_install_signal_cleanup(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_fatal_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

bool temp_open(struct temp_file *t, struct recv_ctx *rc, struct dir_cursor *dirs,
	       const char *path, const struct file_entry *f)
{
	const char *leaf;
	int dirfd;

	memset(t, 0, sizeof *t);
	t->rc = rc;
	t->fd = -1;
	t->dirfd = -1;
	t->tmpdirfd = -1;
	t->inplace = rc->s->opts->inplace;
	t->keep_partial = rc->s->opts->partial;
	snprintf(t->path, sizeof t->path, "%s", path);
	if (rc->solo_name) {
		dirfd = rc->rootfd;
		leaf = rc->solo_name;
	} else {
		dirfd = dir_cursor_parent(dirs, path, &leaf);
	}
	if (dirfd < 0 || strlen(leaf) >= sizeof t->leaf) {
		session_xfer_err(rc->s, "cannot open the directory of \"%s\": %s", path,
				 strerror(dirfd < 0 ? errno : ENAMETOOLONG));
		return false;
	}
	snprintf(t->leaf, sizeof t->leaf, "%s", leaf);
	/* what the signal handler can do for --partial-dir: a relative,
	 * one-component dir beside the file */
	const char *pd = rc->s->opts->partial_dir;
	if (pd && *pd != '/' && !strchr(pd, '/') && strlen(pd) < sizeof t->partial_dir) {
		snprintf(t->partial_dir, sizeof t->partial_dir, "%s", pd);
		snprintf(t->partial_name, sizeof t->partial_name, "%s/%s", pd, leaf);
	}
	t->dirfd = dup(dirfd);
	if (t->dirfd < 0)
		return false;
	t->tmpdirfd = t->dirfd;
	if (t->inplace) {
		t->fd = openat(t->dirfd, leaf, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		snprintf(t->tmpname, sizeof t->tmpname, "%s", leaf);
	} else {
		t->tmpdirfd = rc->temp_fd >= 0 ? rc->temp_fd : t->dirfd;
		t->fd = fs_create_temp(t->tmpdirfd, leaf, t->tmpname, sizeof t->tmpname);
	}
	if (t->fd >= 0 && rc->s->opts->preallocate && f && f->size > 0 && !t->inplace)
		fallocate(t->fd, 0, 0, (off_t)f->size); /* best effort, as rsync */
	if (t->fd < 0) {
		session_xfer_err(rc->s, "mkstemp \"%s\" failed: %s", path, strerror(errno));
		close(t->dirfd);
		t->dirfd = -1;
		return false;
	}
	active_temp = t;
	return true;
}

static void temp_close(struct temp_file *t)
{
	active_temp = NULL;
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	if (t->dirfd >= 0)
		close(t->dirfd);
	t->dirfd = -1;
}

/* The rename into place; from a --temp-dir on another file system a copy,
 * which then needs the attributes again. */
static bool move_into_place(struct temp_file *t, const struct file_entry *f)
{
	if (renameat(t->tmpdirfd, t->tmpname, t->dirfd, t->leaf) == 0)
		return true;
	if (errno != EXDEV || t->tmpdirfd == t->dirfd)
		return false;
	return fs_copy_then_unlink(t->tmpdirfd, t->tmpname, t->dirfd, t->leaf) == 0 &&
	       apply_attrs(t->rc, t->dirfd, t->leaf, f, NULL, true) >= 0;
}

/* Move the finished (or partial) temp file into the --partial-dir. */
static bool move_into_partial_dir(struct temp_file *t, const char *what)
{
	struct recv_ctx *rc = t->rc;
	int pfd = partial_dir_open(rc, t->path, true);
	const char *leaf = partial_leaf(rc, t->path);

	if (pfd < 0) {
		session_xfer_err(rc->s, "Unable to create partial-dir for %s -- discarding %s.",
				 t->path, what);
		unlinkat(t->tmpdirfd, t->tmpname, 0);
		return false;
	}
	int r = renameat(t->tmpdirfd, t->tmpname, pfd, leaf);
	if (r < 0 && errno == EXDEV)
		r = fs_copy_then_unlink(t->tmpdirfd, t->tmpname, pfd, leaf);
	if (r < 0) {
		session_xfer_err(rc->s, "rename \"%s\" -> \"%s/%s\" failed: %s", t->tmpname,
				 rc->s->opts->partial_dir, leaf, strerror(errno));
		unlinkat(t->tmpdirfd, t->tmpname, 0);
	}
	close(pfd);
	return r == 0;
}

/* A file updated in place is synced by the syncer (syncer.h) while the
 * next one arrives; a temporary file must be on disk before its rename. */
static bool sync_later(struct temp_file *t)
{
	if (!t->inplace || !t->rc->syncer)
		return false;
	int fd = dup(t->fd);
	if (fd < 0)
		return false;
	if (syncer_add(t->rc->syncer, fd, t->path))
		return true;
	close(fd);
	return false;
}

bool temp_commit(struct temp_file *t, const struct file_entry *f)
{
	struct session *s = t->rc->s;
	bool ok = true;

	if (t->dirfd < 0)
		return false;
	if (t->inplace || s->opts->sparse || s->opts->preallocate) {
		/* the size is where the data ended: after a trailing hole, or
		 * short of a preallocation for a file that shrank meanwhile */
		off_t end = lseek(t->fd, 0, SEEK_CUR);
		struct stat st;
		/* --write-devices: a device keeps its size (receiver.c:
		 * receive_data truncates only what is not a device) */
		bool device = fstat(t->fd, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode));
		if (end >= 0 && !device && ftruncate(t->fd, end) < 0)
			ok = false;
	}
	if (ok && s->opts->fsync && !sync_later(t) && fsync(t->fd) < 0) {
		session_xfer_err(s, "fsync \"%s\" failed: %s", t->path, strerror(errno));
		ok = false;
	}
	/* Attributes go on the temp file, so the final name appears complete. */
	if (ok && apply_attrs(t->rc, t->tmpdirfd, t->tmpname, f, NULL, true) < 0)
		ok = false;
	if (ok && t->delayed) {
		ok = move_into_partial_dir(t, "completed file");
		temp_close(t);
		return ok;
	}
	if (ok && !t->inplace && s->opts->backup &&
	    !backup_make(t->rc, t->dirfd, t->leaf, t->path)) {
		unlinkat(t->tmpdirfd, t->tmpname, 0);
		ok = false;
	}
	if (ok && !t->inplace && !move_into_place(t, f)) {
		session_xfer_err(s, "rename \"%s\" -> \"%s\" failed: %s", t->tmpname, t->path,
				 strerror(errno));
		unlinkat(t->tmpdirfd, t->tmpname, 0);
		ok = false;
	}
	t->placed_ok = ok && t->want_placed &&
		       fstatat(t->dirfd, t->leaf, &t->placed, AT_SYMLINK_NOFOLLOW) == 0;
	temp_close(t);
	return ok;
}

bool temp_commit_delayed(struct temp_file *t, const struct file_entry *f)
{
	t->delayed = true;
	return temp_commit(t, f);
}

void temp_discard(struct temp_file *t)
{
	if (t->dirfd >= 0 && !t->inplace)
		unlinkat(t->tmpdirfd, t->tmpname, 0);
	temp_close(t);
}

void temp_abandon(struct temp_file *t)
{
	if (t->dirfd >= 0 && !t->inplace) {
		if (t->keep_partial && t->rc->s->opts->partial_dir)
			move_into_partial_dir(t, "partial file");
		else if (t->keep_partial)
			renameat(t->tmpdirfd, t->tmpname, t->dirfd, t->leaf);
		else
			unlinkat(t->tmpdirfd, t->tmpname, 0);
	}
	temp_close(t);
}
