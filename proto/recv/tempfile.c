/*
 * Temporary files for the receiver (see tempfile.h).
 */
#include "proto/recv/tempfile.h"

#include "proto/core/msg.h"
#include "proto/base/syncer.h"
#include "proto/recv/recvside.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* --partial keeps only a file that got data: an empty one would replace
 * the destination's good copy with nothing (rsync: cleanup_got_literal).
 * Async-signal-safe. */
static bool worth_keeping(const struct temp_file *t)
{
	struct stat st;

	return t->keep_partial && fstat(t->fd, &st) == 0 && st.st_size > 0;
}

/* A partial file kept under the destination's name gets the oldest time
 * there is, so that --update never takes it for a newer copy and an ls
 * shows it as unfinished (rsync: cleanup.c, tweak_modtime).
 * Async-signal-safe. */
static void mark_unfinished(const struct temp_file *t)
{
	const struct timespec times[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_sec = 0, .tv_nsec = 0}};

	futimens(t->fd, times);
}

/* A process about to _exit on a stop signal (stop_signal.h) whose receiver
 * could not unwind: remove the temporary file being written, or keep it
 * as --partial says. Registered while the file is open (temp_open to
 * temp_close). Only async-signal-safe calls. */
static void temp_cleanup_for_exit(void *ctx)
{
	struct temp_file *t = ctx;

	if (t->fd >= 0 && !t->inplace && !t->partial_inplace) {
		if (!worth_keeping(t)) {
			unlinkat(t->tmpdirfd, t->tmpname, 0);
		} else if (t->partial_name[0]) {
			mkdirat(t->dirfd, t->partial_dir, 0700);
			if (renameat(t->tmpdirfd, t->tmpname, t->dirfd, t->partial_name) < 0)
				unlinkat(t->tmpdirfd, t->tmpname, 0);
		} else if (!t->rc->s->opts->partial_dir) {
			mark_unfinished(t);
			renameat(t->tmpdirfd, t->tmpname, t->dirfd, t->leaf);
		} else {
			unlinkat(t->tmpdirfd, t->tmpname, 0);
		}
	}
}

/* name (a path relative to the destination, or a leaf in dir_override)
 * as rsync's full_fname() shows it. */
static const char *dest_full_name(struct recv_ctx *rc, const char *dir_override,
				  const char *name, char *out, size_t size)
{
	char dest[4096], dir[8192];
	const char *base = recv_dest_dir(&rc->cfg, dest, sizeof dest);

	if (dir_override && *dir_override == '/')
		snprintf(dir, sizeof dir, "%s", dir_override);
	else if (dir_override)
		snprintf(dir, sizeof dir, "%s/%s", base ? base : ".", dir_override);
	else
		snprintf(dir, sizeof dir, "%s", base ? base : "");
	return msg_full_name(rc->s, dir, name, out, size);
}

/* The temp file (".NAME.XXXXXX") as rsync names fnametmp: beside the file,
 * or in --temp-dir. */
static const char *temp_full_name(const struct temp_file *t, const char *path, char *out,
				  size_t size)
{
	struct recv_ctx *rc = t->rc;
	const char *tmp_dir = rc->s->opts->temp_dir;
	const char *slash = strrchr(path, '/');
	const char *tmp = t->tmpname[0] ? t->tmpname : t->leaf;
	char name[8192];

	if (tmp_dir || rc->cfg.solo_name || !slash)
		snprintf(name, sizeof name, "%s", tmp);
	else
		snprintf(name, sizeof name, "%.*s/%s", (int)(slash - path), path, tmp);
	return dest_full_name(rc, tmp_dir, name, out, size);
}

/* The file's final name, as rsync's full_fname(fname). */
static const char *final_full_name(const struct temp_file *t, char *out, size_t size)
{
	if (t->rc->cfg.solo_name)
		return dest_full_name(t->rc, NULL, t->leaf, out, size);
	return dest_full_name(t->rc, NULL, t->path, out, size);
}

/* Start t for the entry at path: no fds yet, its path and its leaf
 * name, and the directory it goes in (the destination itself for a
 * single-file destination). Returns that directory's fd, the cursor's
 * (the caller dups it), or -1 after reporting the failure. */
static int temp_locate(struct temp_file *t, struct recv_ctx *rc, struct dir_cursor *dirs,
		       const char *path)
{
	const char *leaf;
	int dirfd;

	memset(t, 0, sizeof *t);
	t->rc = rc;
	t->fd = t->dirfd = t->tmpdirfd = -1;
	snprintf(t->path, sizeof t->path, "%s", path);
	if (rc->cfg.solo_name) {
		dirfd = rc->cfg.rootfd;
		leaf = rc->cfg.solo_name;
	} else {
		dirfd = dir_cursor_parent(dirs, path, &leaf);
	}
	if (dirfd < 0 || strlen(leaf) >= sizeof t->leaf) {
		session_xfer_err(rc->s, "cannot open the directory of \"%s\": %s", path,
				 strerror(dirfd < 0 ? errno : ENAMETOOLONG));
		return -1;
	}
	snprintf(t->leaf, sizeof t->leaf, "%s", leaf);
	return dirfd;
}

bool temp_open(struct temp_file *t, struct recv_ctx *rc, struct dir_cursor *dirs,
	       const char *path, const struct file_entry *f)
{
	int dirfd = temp_locate(t, rc, dirs, path);

	if (dirfd < 0)
		return false;
	const char *leaf = t->leaf;
	t->inplace = rc->s->opts->inplace;
	t->keep_partial = rc->s->opts->partial;
	/* what the cleanup at exit can do for --partial-dir: a relative,
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
		t->tmpdirfd = rc->cfg.temp_fd >= 0 ? rc->cfg.temp_fd : t->dirfd;
		t->fd = rc->cfg.temp_dir_errno ? -1
					   : fs_create_temp(t->tmpdirfd, leaf, t->tmpname, sizeof t->tmpname);
		if (rc->cfg.temp_dir_errno)
			errno = rc->cfg.temp_dir_errno;
	}
	if (t->fd >= 0 && rc->s->opts->preallocate && f && fe_size(f) > 0 && !t->inplace)
		fallocate(t->fd, 0, 0, (off_t)fe_size(f)); /* best effort, as rsync */
	if (t->fd < 0) {
		int e = errno;
		char full[PATH_MAX + 600];
		msg_syserr(rc->s, MC_ERROR_XFER, "receiver", e, "mkstemp %s failed",
			   temp_full_name(t, path, full, sizeof full));
		close(t->dirfd);
		t->dirfd = -1;
		return false;
	}
	t->on_exit = (struct stop_cleanup){.fn = temp_cleanup_for_exit, .ctx = t};
	stop_signal_cleanup_on(&t->on_exit);
	return true;
}

bool temp_open_partial(struct temp_file *t, struct recv_ctx *rc, struct dir_cursor *dirs,
		       const char *path)
{
	int dirfd = temp_locate(t, rc, dirs, path);

	if (dirfd < 0)
		return false;
	t->partial_inplace = true;
	snprintf(t->tmpname, sizeof t->tmpname, "%s", partial_leaf(&rc->cfg, path));
	t->dirfd = dup(dirfd);
	t->fd = t->dirfd < 0 ? -1 : partial_file_open(rc, path);
	/* the partial dir as it is now: the rename takes the file from it */
	t->tmpdirfd = t->fd < 0 ? -1 : partial_dir_open(rc, path, false);
	if (t->fd < 0 || t->tmpdirfd < 0) {
		int e = errno;
		char name[8192], full[PATH_MAX + 600];
		const char *pd = rc->s->opts->partial_dir;
		const char *slash = rc->cfg.solo_name ? NULL : strrchr(path, '/');
		if (*pd == '/' || !slash)
			snprintf(name, sizeof name, "%s/%s", pd, t->tmpname);
		else
			snprintf(name, sizeof name, "%.*s/%s/%s", (int)(slash - path), path, pd,
				 t->tmpname);
		msg_syserr(rc->s, MC_ERROR_XFER, "receiver", e, "open %s failed",
			   dest_full_name(rc, NULL, name, full, sizeof full));
		if (t->fd >= 0)
			close(t->fd);
		t->fd = -1;
		if (t->dirfd >= 0)
			close(t->dirfd);
		t->dirfd = -1;
		return false;
	}
	t->on_exit = (struct stop_cleanup){.fn = temp_cleanup_for_exit, .ctx = t};
	stop_signal_cleanup_on(&t->on_exit);
	return true;
}

static void temp_close(struct temp_file *t)
{
	stop_signal_cleanup_off(&t->on_exit);
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	if (t->dirfd >= 0)
		close(t->dirfd);
	t->dirfd = -1;
	if (t->partial_inplace && t->tmpdirfd >= 0)
		close(t->tmpdirfd); /* the partial dir, ours alone */
	t->tmpdirfd = -1;
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
	       apply_attrs_recv(t->rc, t->dirfd, t->leaf, f, NULL, true) >= 0;
}

/* Move the finished (or partial) temp file into the --partial-dir. */
static bool move_into_partial_dir(struct temp_file *t, const char *what)
{
	struct recv_ctx *rc = t->rc;
	int pfd = partial_dir_open(rc, t->path, true);
	const char *leaf = partial_leaf(&rc->cfg, t->path);

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
	if (!t->inplace || !t->rc->cfg.syncer)
		return false;
	int fd = dup(t->fd);
	if (fd < 0)
		return false;
	if (syncer_add(t->rc->cfg.syncer, fd, t->path))
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
	if (t->inplace || t->partial_inplace || s->opts->sparse || s->opts->preallocate) {
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
		char full[PATH_MAX + 600];
		msg_syserr(s, MC_ERROR_XFER, "receiver", errno, "fsync failed on %s",
			   final_full_name(t, full, sizeof full));
		ok = false;
	}
	/* Attributes go on the temp file, so the final name appears complete. */
	if (ok && apply_attrs_written(t->rc, t->tmpdirfd, t->tmpname, t->fd, f) < 0)
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
		int e = errno;
		char full[PATH_MAX + 600];
		msg_syserr(s, MC_ERROR_XFER, "receiver", e, "rename %s -> \"%s\"",
			   temp_full_name(t, t->path, full, sizeof full), t->path);
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
	if (t->dirfd >= 0 && !t->inplace && !t->partial_inplace)
		unlinkat(t->tmpdirfd, t->tmpname, 0);
	temp_close(t);
}

void temp_abandon(struct temp_file *t)
{
	if (t->dirfd >= 0 && !t->inplace && !t->partial_inplace) {
		bool keep = t->fd >= 0 && worth_keeping(t);
		if (keep && t->rc->s->opts->partial_dir) {
			move_into_partial_dir(t, "partial file");
		} else if (keep) {
			mark_unfinished(t);
			renameat(t->tmpdirfd, t->tmpname, t->dirfd, t->leaf);
		} else {
			unlinkat(t->tmpdirfd, t->tmpname, 0);
		}
	}
	temp_close(t);
}
