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

bool backup_make(struct recv_ctx *rc, int dirfd, const char *leaf, const char *path)
{
	const struct ferry_opts *o = rc->s->opts;
	const char *suffix = backup_suffix(o);
	char name[4096];
	struct stat st;

	if (fstatat(dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT;
	if (S_ISDIR(st.st_mode))
		return true; /* directories are not backed up, their files are */
	int to_dir = dirfd;
	const char *to = name;
	if (rc->backup_fd >= 0) {
		/* path's directories are recreated under the backup dir */
		if (snprintf(name, sizeof name, "%s%s", path, suffix) >= (int)sizeof name)
			goto too_long;
		char *slash = strrchr(name, '/');
		if (slash) {
			*slash = '\0';
			if (fs_mkpath_at(rc->backup_fd, name) < 0) {
				session_err(rc->s, "make_bak_dir \"%s\" failed: %s", name,
					    strerror(errno));
				return false;
			}
			to_dir = openat(rc->backup_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
								   O_CLOEXEC);
			if (to_dir < 0)
				return false;
			to = slash + 1;
		} else {
			to_dir = rc->backup_fd;
		}
	} else if (snprintf(name, sizeof name, "%s%s", leaf, suffix) >= (int)sizeof name) {
		goto too_long;
	}
	int r = renameat(dirfd, leaf, to_dir, to);
	if (r < 0 && errno == EXDEV)
		r = fs_copy_then_unlink(dirfd, leaf, to_dir, to);
	int e = errno;
	if (to_dir != dirfd && to_dir != rc->backup_fd)
		close(to_dir);
	if (r < 0) {
		session_err(rc->s, "backup \"%s\" failed: %s", path, strerror(e));
		return false;
	}
	if (o->verbose > 1)
		session_info(rc->s, "backed up %s to %s%s%s%s\n", path,
			     rc->backup_fd >= 0 ? o->backup_dir : "", rc->backup_fd >= 0 ? "/" : "",
			     path, suffix);
	return true;
too_long:
	session_err(rc->s, "backup name of \"%s\" is too long", path);
	return false;
}
