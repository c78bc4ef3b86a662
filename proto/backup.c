/*
 * -b/--backup: the old version of a file that is replaced or deleted is
 * kept, renamed with the suffix (default "~"), or moved under --backup-dir
 * at the same relative path (rsync backup.c: make_backup).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/recvside.h"

static const char *backup_suffix(const struct ferry_opts *o)
{
	if (o->suffix)
		return o->suffix;
	return o->backup_dir ? "" : "~";
}

/* Where the backup of dirfd/leaf (the destination's path) goes: returns
 * the directory fd (dirfd, rc->backup_fd, or one to close with
 * backup_place_done) and points *to at the name in it; -1 after an error
 * has been reported. */
static int backup_place(struct recv_ctx *rc, int dirfd, const char *leaf, const char *path,
			char *name, size_t size, const char **to)
{
	const char *suffix = backup_suffix(rc->s->opts);
	int bdir = rc->s->opts->backup_dir ? recv_backup_dir(rc) : -1;

	*to = name;
	if (rc->s->opts->backup_dir && bdir < 0)
		return -1;
	if (bdir < 0) {
		if (snprintf(name, size, "%s%s", leaf, suffix) >= (int)size)
			goto too_long;
		return dirfd;
	}
	/* path's directories are recreated under the backup dir */
	if (snprintf(name, size, "%s%s", path, suffix) >= (int)size)
		goto too_long;
	char *slash = strrchr(name, '/');
	if (!slash)
		return bdir;
	*slash = '\0';
	if (fs_mkpath_at(bdir, name) < 0) {
		session_xfer_err(rc->s, "make_bak_dir \"%s\" failed: %s", name, strerror(errno));
		return -1;
	}
	int to_dir = openat(bdir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (to_dir < 0)
		session_xfer_err(rc->s, "make_bak_dir \"%s\" failed: %s", name, strerror(errno));
	*to = slash + 1;
	return to_dir;
too_long:
	session_xfer_err(rc->s, "backup name of \"%s\" is too long", path);
	return -1;
}

static void backup_place_done(struct recv_ctx *rc, int dirfd, int to_dir)
{
	if (to_dir >= 0 && to_dir != dirfd && to_dir != rc->backup_fd)
		close(to_dir);
}

static void backup_note(struct recv_ctx *rc, const char *path)
{
	const struct ferry_opts *o = rc->s->opts;

	if (info_ge(o, INFO_BACKUP, 1))
		session_info(rc->s, "backed up %s to %s%s%s%s\n", path,
			     o->backup_dir ? o->backup_dir : "", o->backup_dir ? "/" : "",
			     path, backup_suffix(o));
}

bool backup_make(struct recv_ctx *rc, int dirfd, const char *leaf, const char *path)
{
	char name[4096];
	const char *to;
	struct stat st;

	if (fstatat(dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT;
	if (S_ISDIR(st.st_mode))
		return true; /* directories are not backed up, their files are */
	int to_dir = backup_place(rc, dirfd, leaf, path, name, sizeof name, &to);
	if (to_dir < 0)
		return false;
	int r = renameat(dirfd, leaf, to_dir, to);
	if (r < 0 && errno == EXDEV)
		r = fs_copy_then_unlink(dirfd, leaf, to_dir, to);
	int e = errno;
	backup_place_done(rc, dirfd, to_dir);
	if (r < 0) {
		session_xfer_err(rc->s, "backup \"%s\" failed: %s", path, strerror(e));
		return false;
	}
	backup_note(rc, path);
	return true;
}

/* The backup gets the old file's mode, and its owner and time where we
 * keep those (generator.c: set_file_attrs(backupptr, back_file)). */
static void backup_copy_attrs(struct recv_ctx *rc, int fd, const struct stat *old)
{
	const struct ferry_opts *o = rc->s->opts;

	if (rc->s->am_root && (o->owner || o->group) &&
	    fchown(fd, o->owner ? old->st_uid : (uid_t)-1, o->group ? old->st_gid : (gid_t)-1) < 0)
		session_err(rc->s, "chown of backup failed: %s", strerror(errno));
	if (fchmod(fd, old->st_mode & 07777) < 0)
		session_err(rc->s, "chmod of backup failed: %s", strerror(errno));
	/* only when the copy's time differs by the --modify-window rule, as
	 * rsync's set_file_attrs decides: a copy made in the same second
	 * keeps its own time */
	struct stat now;
	if (o->times && fstat(fd, &now) == 0) {
		struct file_entry was = {.mtime = old->st_mtim.tv_sec,
					 .mtime_nsec = (uint32_t)old->st_mtim.tv_nsec};
		struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, old->st_mtim};
		if (recv_mtime_differs(o, &now, &was))
			futimens(fd, ts);
	}
}

bool backup_copy(struct recv_ctx *rc, int dirfd, const char *leaf, const char *path)
{
	char name[4096];
	const char *to;
	struct stat st;
	int in = openat(dirfd, leaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (in < 0 || fstat(in, &st) < 0 || !S_ISREG(st.st_mode)) {
		if (in >= 0)
			close(in);
		return in < 0 && errno == ENOENT;
	}
	int to_dir = backup_place(rc, dirfd, leaf, path, name, sizeof name, &to);
	int out = -1;
	if (to_dir >= 0 && (unlinkat(to_dir, to, 0) == 0 || errno == ENOENT))
		out = openat(to_dir, to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	bool ok = out >= 0 && fs_copy_range(in, NULL, out, -1) >= 0;
	int e = errno;
	if (ok)
		backup_copy_attrs(rc, out, &st);
	if (out >= 0 && close(out) < 0 && ok) {
		ok = false;
		e = errno;
	}
	close(in);
	if (!ok && out >= 0)
		unlinkat(to_dir, to, 0);
	backup_place_done(rc, dirfd, to_dir);
	if (!ok) {
		if (to_dir >= 0)
			session_xfer_err(rc->s, "backup \"%s\" failed: %s", path, strerror(e));
		return false;
	}
	backup_note(rc, path);
	return true;
}

int backup_open_basis(struct recv_ctx *rc, int dirfd, const char *leaf, const char *path)
{
	char name[4096];
	const char *to;
	int to_dir = backup_place(rc, dirfd, leaf, path, name, sizeof name, &to);
	int fd = to_dir >= 0 ? openat(to_dir, to, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;

	backup_place_done(rc, dirfd, to_dir);
	return fd;
}
