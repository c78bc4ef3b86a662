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

#include "proto/recv/recvside.h"

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

/* A failed backup, named as rsync's keep_backup message names it: the
 * file and where its backup was to go (--backup-dir as given, which is
 * what tells a pinned /proc/self/fd/N dir of rrsync's apart). */
static void backup_failed(struct recv_ctx *rc, const char *path, int e)
{
	const struct ferry_opts *o = rc->s->opts;
	const char *bdir = o->backup_dir;
	size_t n = bdir ? strlen(bdir) : 0;

	session_xfer_err(rc->s, "keep_backup failed: \"%s\" -> \"%s%s%s%s\": %s (%d)", path,
			 bdir ? bdir : "", n && bdir[n - 1] != '/' ? "/" : "", path,
			 backup_suffix(o), strerror(e), e);
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

/* What already holds the backup name (an older backup, or a directory
 * of that name) gives way to the new backup (backup.c: delete_item with
 * DEL_FOR_BACKUP before the second link_or_rename). */
static bool backup_clear_name(int to_dir, const char *to)
{
	struct stat st;

	if (fstatat(to_dir, to, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT;
	return fs_remove_any(to_dir, to, S_ISDIR(st.st_mode)) == 0;
}

/* The owner, mode and time of the old entry st go to its recreated
 * backup to_dir/to; a symlink keeps its own mode (set_file_attrs). */
static void backup_recreated_attrs(struct recv_ctx *rc, int to_dir, const char *to,
				   const struct stat *st)
{
	const struct ferry_opts *o = rc->s->opts;
	int nofollow = AT_SYMLINK_NOFOLLOW;

	if (rc->s->am_root && (o->owner || o->group))
		fchownat(to_dir, to, o->owner ? st->st_uid : (uid_t)-1,
			 o->group ? st->st_gid : (gid_t)-1, nofollow);
	if (!S_ISLNK(st->st_mode))
		fchmodat(to_dir, to, st->st_mode & 07777, 0);
	if (o->times) {
		struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, st->st_mtim};
		utimensat(to_dir, to, ts, nofollow);
	}
}

/* Copy the regular file from_dir/from to to_dir/to. It is opened
 * non-blocking: should a FIFO take its place meanwhile, the open must not
 * wait for a writer. */
static int backup_copy_regular(int from_dir, const char *from, int to_dir, const char *to)
{
	struct stat st;
	int in = openat(from_dir, from, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (in < 0 || fstat(in, &st) < 0 || !S_ISREG(st.st_mode)) {
		if (in >= 0)
			close(in);
		errno = EXDEV;
		return -1;
	}
	int out = openat(to_dir, to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	int64_t n = out >= 0 ? fs_copy_range(in, NULL, out, -1) : -1;
	int e = errno;
	close(in);
	if (out >= 0 && close(out) < 0 && n >= 0) {
		e = errno;
		n = -1;
	}
	if (n < 0 && out >= 0)
		unlinkat(to_dir, to, 0);
	errno = e;
	return n < 0 ? -1 : 0;
}

/* Across file systems the old entry st at dirfd/leaf is recreated at
 * to_dir/to by kind: a copy of a file, a new link with the same target,
 * a new node for a device (as root with -D) or special (--specials).
 * Returns 1 when a backup was made, 0 when the kind is not kept (rsync:
 * "make_bak: skipping non-regular file"), -1 with errno on failure. */
static int backup_recreate(struct recv_ctx *rc, int dirfd, const char *leaf, int to_dir,
			   const char *to, const struct stat *st)
{
	const struct ferry_opts *o = rc->s->opts;
	int r;

	if (S_ISREG(st->st_mode)) {
		r = backup_copy_regular(dirfd, leaf, to_dir, to);
	} else if (S_ISLNK(st->st_mode) && o->links) {
		char target[4096];
		ssize_t n = readlinkat(dirfd, leaf, target, sizeof target - 1);
		if (n < 0)
			return -1;
		target[n] = '\0';
		r = symlinkat(target, to_dir, to);
	} else if (((S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)) && rc->s->am_root &&
		    o->devices) ||
		   ((S_ISFIFO(st->st_mode) || S_ISSOCK(st->st_mode)) && o->specials)) {
		r = mknodat(to_dir, to, (st->st_mode & S_IFMT) | 0600, st->st_rdev);
	} else {
		if (info_ge(o, INFO_NONREG, 1))
			session_info(rc->s, "make_bak: skipping non-regular file %s\n", leaf);
		return 0;
	}
	if (r < 0)
		return -1;
	backup_recreated_attrs(rc, to_dir, to, st);
	return 1;
}

/* Move dirfd/leaf to to_dir/to, or recreate it there when they are on
 * different file systems; the old entry is gone either way on success.
 * Returns 1 when backed up, 0 when removed without a backup, -1 with errno. */
static int backup_move(struct recv_ctx *rc, int dirfd, const char *leaf, int to_dir,
		       const char *to, const struct stat *st)
{
	int r = renameat(dirfd, leaf, to_dir, to);

	if (r < 0 && (errno == EEXIST || errno == EISDIR || errno == ENOTEMPTY)) {
		if (!backup_clear_name(to_dir, to))
			return -1;
		r = renameat(dirfd, leaf, to_dir, to);
	}
	if (r == 0)
		return 1;
	if (errno != EXDEV || !backup_clear_name(to_dir, to))
		return -1;
	int made = backup_recreate(rc, dirfd, leaf, to_dir, to, st);
	if (made < 0)
		return -1;
	if (unlinkat(dirfd, leaf, 0) < 0) {
		int e = errno;
		if (made)
			unlinkat(to_dir, to, 0);
		errno = e;
		return -1;
	}
	return made;
}

/* --safe-links: an unsafe symlink is not kept as a backup but removed as
 * it is (backup.c: "not backing up unsafe symlink"); an unreadable target
 * counts as unsafe. Returns 1 when st was such a link and is gone, 0 when
 * it is to be backed up, -1 after a reported failure. */
static int unsafe_link_dropped(struct recv_ctx *rc, int dirfd, const char *leaf,
				const char *path, const struct stat *st)
{
	const struct ferry_opts *o = rc->s->opts;
	char target[4096];

	if (!S_ISLNK(st->st_mode) || !o->links || !o->safe_links)
		return 0;
	ssize_t n = readlinkat(dirfd, leaf, target, sizeof target - 1);
	if (n >= 0) {
		target[n] = '\0';
		if (!fs_symlink_unsafe(target, path))
			return 0;
	}
	if (info_ge(o, INFO_SYMSAFE, 1) && n >= 0)
		session_info(rc->s, "not backing up unsafe symlink \"%s\" -> \"%s\"\n", path, target);
	else if (info_ge(o, INFO_SYMSAFE, 1))
		session_info(rc->s, "not backing up symlink with unreadable target \"%s\"\n", path);
	if (unlinkat(dirfd, leaf, 0) < 0 && errno != ENOENT) {
		session_err(rc->s, "delete_file: unlink \"%s\" failed: %s", path, strerror(errno));
		return -1;
	}
	return 1;
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
	int dropped = unsafe_link_dropped(rc, dirfd, leaf, path, &st);
	if (dropped != 0)
		return dropped > 0;
	int to_dir = backup_place(rc, dirfd, leaf, path, name, sizeof name, &to);
	if (to_dir < 0)
		return false;
	int r = backup_move(rc, dirfd, leaf, to_dir, to, &st);
	int e = errno;
	backup_place_done(rc, dirfd, to_dir);
	if (r < 0) {
		backup_failed(rc, path, e);
		return false;
	}
	if (r > 0)
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
		struct file_entry was = {.mtime = old->st_mtim.tv_sec};
		struct fe_extras x = {.has = FE_X_NSEC,
				      .mtime_nsec = (uint32_t)old->st_mtim.tv_nsec};
		char name[1 + 4]; /* an empty name and the nanoseconds */
		fe_place(&was, name, "", 0, &x);
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
			backup_failed(rc, path, e);
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
