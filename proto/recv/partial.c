/*
 * --partial-dir and --delay-updates on the receiving side: where a partly
 * received file is kept (and found again as the basis of the next try),
 * and where finished files wait until they are all renamed into place
 * (rsync util1.c: partial_dir_fname, handle_partial_dir; receiver.c:
 * handle_delayed_updates). A relative partial dir sits in each file's own
 * directory, reached without following a symlink; in a daemon module an
 * absolute one is taken from the module root, through links that stay in
 * the module, and under --confine-root it must resolve inside that.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/base/oppath.h"
#include "proto/recv/recvside.h"

const char *partial_leaf(const struct recv_config *cfg, const char *path)
{
	const char *slash = strrchr(path, '/');

	if (cfg->solo_name)
		return cfg->solo_name;
	return slash ? slash + 1 : path;
}

/* The relative partial dir of path as a path under *base. */
static bool partial_dir_rel(const struct recv_ctx *rc, const char *path, int *base, char *out,
			    size_t size)
{
	const char *pd = rc->s->opts->partial_dir;
	const char *slash = rc->cfg.solo_name ? NULL : strrchr(path, '/');

	*base = rc->cfg.rootfd;
	int n = slash ? snprintf(out, size, "%.*s/%s", (int)(slash - path), path, pd)
		      : snprintf(out, size, "%s", pd);
	return n > 0 && (size_t)n < size && fs_path_is_safe(out);
}

/* Create rel under base: its parents as usual, itself private (0700), as
 * rsync does. Returns a cursor-owned fd or -1. */
static int make_partial_dir(struct dir_cursor *c, int base, char *rel)
{
	const char *leaf;
	char *last = strrchr(rel, '/');

	if (last) {
		*last = '\0';
		int made = fs_mkpath_at(base, rel);
		*last = '/';
		if (made < 0)
			return -1;
	}
	int parent = dir_cursor_parent(c, rel, &leaf);
	if (parent < 0 || (mkdirat(parent, leaf, 0700) < 0 && errno != EEXIST))
		return -1;
	dir_cursor_reset(c);
	return dir_cursor_open(c, rel);
}

/* An absolute --partial-dir: the user's operator path (oppath.h), or in a
 * daemon module a path inside it (oppath_open_in), made private (0700)
 * when missing. */
static int partial_dir_open_abs(const struct recv_ctx *rc, const char *pd, bool create)
{
	unsigned how = rc->s->opts->insecure_links ? OPPATH_INSECURE : 0;
	int root = opts_confine_fd(rc->s->opts); /* --confine-root, or -1 */

	if (rc->cfg.confined)
		how |= OPPATH_QUIET;
	if (create) {
		const char *leaf;
		int parent = rc->cfg.confined ? oppath_open_parent_in(rc->cfg.module_fd, pd, &leaf, how)
					  : oppath_open_parent_under(root, AT_FDCWD, pd, &leaf, how);
		if (parent < 0)
			return -1;
		int made = mkdirat(parent, leaf, 0700);
		int e = errno;
		close(parent);
		if (made < 0 && e != EEXIST) {
			errno = e;
			return -1;
		}
	}
	return rc->cfg.confined ? oppath_open_in(rc->cfg.module_fd, pd, O_RDONLY | O_DIRECTORY, 0, how)
			    : oppath_open_under(root, AT_FDCWD, pd, O_RDONLY | O_DIRECTORY, 0, how);
}

int partial_dir_open(struct recv_ctx *rc, const char *path, bool create)
{
	const char *pd = rc->s->opts->partial_dir;
	char rel[8192];
	int base;

	if (!pd)
		return -1;
	if (*pd == '/')
		return partial_dir_open_abs(rc, pd, create);
	if (!partial_dir_rel(rc, path, &base, rel, sizeof rel)) {
		errno = EINVAL;
		return -1;
	}
	struct dir_cursor c;
	dir_cursor_init(&c, base);
	int fd = dir_cursor_open(&c, rel);
	if (fd < 0 && errno == ENOENT && create)
		fd = make_partial_dir(&c, base, rel);
	int mine = fd >= 0 ? dup(fd) : -1;
	dir_cursor_close(&c);
	return mine;
}

/* The partial file's path for the operator walk: from base, its dir
 * (relative, beside the file; or absolute) and leaf. */
static bool partial_file_rel(const struct recv_ctx *rc, const char *path, int *base, char *out,
			     size_t size)
{
	const char *pd = rc->s->opts->partial_dir;
	char dir[8192];
	int n;

	if (*pd == '/') {
		*base = AT_FDCWD;
		n = snprintf(out, size, "%s/%s", pd, partial_leaf(&rc->cfg, path));
	} else if (partial_dir_rel(rc, path, base, dir, sizeof dir)) {
		n = snprintf(out, size, "%s/%s", dir, partial_leaf(&rc->cfg, path));
	} else {
		return false;
	}
	return n > 0 && (size_t)n < size;
}

/* One open of the partial file through the operator walk (oppath.h) from
 * the destination, or in a daemon module through the partial dir as it
 * is found for a basis (no link at all for a relative one). */
static int partial_file_walk(struct recv_ctx *rc, const char *path, int flags, mode_t mode)
{
	char rel[8192];
	int base;

	if (rc->cfg.confined) {
		int pfd = partial_dir_open(rc, path, false);
		int fd = pfd >= 0 ? openat(pfd, partial_leaf(&rc->cfg, path), flags | O_NOFOLLOW | O_CLOEXEC,
					   mode)
				  : -1;
		int e = errno;
		if (pfd >= 0)
			close(pfd);
		errno = e;
		return fd;
	}
	if (!partial_file_rel(rc, path, &base, rel, sizeof rel)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return oppath_open(base, rel, flags, mode, rc->s->opts->insecure_links);
}

/* A read-only partial file: owner write is added just long enough to
 * open it for writing, and the mode put back before any data comes, so
 * that an abort never leaves it relaxed (receiver.c:
 * open_readonly_inplace). Each open goes through the walk. */
static int open_readonly_partial(struct recv_ctx *rc, const char *path)
{
	struct stat st;
	int cfd = partial_file_walk(rc, path, O_RDONLY, 0);

	if (cfd < 0)
		return -1;
	if (fstat(cfd, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_mode & S_IWUSR)) {
		close(cfd);
		errno = EACCES; /* not a read-only regular file: not ours to relax */
		return -1;
	}
	mode_t prior = st.st_mode & 07777;
	if (fchmod(cfd, prior | S_IWUSR) < 0) {
		int e = errno;
		close(cfd);
		errno = e;
		return -1;
	}
	int fd = partial_file_walk(rc, path, O_WRONLY, 0600);
	int e = errno;
	if (fchmod(cfd, prior) < 0) {
		e = errno;
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	close(cfd);
	errno = e;
	return fd;
}

int partial_file_open(struct recv_ctx *rc, const char *path)
{
	int fd = partial_file_walk(rc, path, O_WRONLY | O_CREAT, 0600);

	/* fs.protected_regular refuses O_CREAT on another user's file in a
	 * sticky dir: again without it, through the same walk */
	if (fd < 0 && errno == EACCES)
		fd = partial_file_walk(rc, path, O_WRONLY, 0600);
	if (fd < 0 && errno == EACCES)
		fd = open_readonly_partial(rc, path);
	return fd;
}

void partial_remove(struct recv_ctx *rc, const char *path)
{
	const char *pd = rc->s->opts->partial_dir;
	int fd = partial_dir_open(rc, path, false);

	if (fd < 0)
		return;
	unlinkat(fd, partial_leaf(&rc->cfg, path), 0);
	close(fd);
	/* the dir goes when it is empty; an absolute one is the user's */
	if (*pd != '/') {
		char rel[8192];
		int base;
		if (partial_dir_rel(rc, path, &base, rel, sizeof rel)) {
			struct dir_cursor c;
			const char *leaf;
			dir_cursor_init(&c, base);
			int parent = dir_cursor_parent(&c, rel, &leaf);
			if (parent >= 0)
				unlinkat(parent, leaf, AT_REMOVEDIR);
			dir_cursor_close(&c);
		}
	}
}
