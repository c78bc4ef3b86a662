/*
 * The confined file layer (see fileio.h).
 */
#include "proto/base/fdio.h"
#include "proto/base/fileio.h"
#include "proto/base/oppath.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <linux/openat2.h>
#include <sys/syscall.h>

#define DIR_OPEN_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

void dir_cursor_init(struct dir_cursor *c, int rootfd)
{
	c->rootfd = rootfd;
	c->path[0] = '\0';
	c->fd = -1;
	c->follow = false;
	c->beneath = false;
	c->depth = 0;
}

void dir_cursor_reset(struct dir_cursor *c)
{
	for (int i = 0; i < c->depth; i++)
		close(c->held[i]);
	if (c->depth == 0 && c->fd >= 0 && c->fd != c->rootfd)
		close(c->fd);
	c->depth = 0;
	c->fd = -1;
	c->path[0] = '\0';
}

void dir_cursor_close(struct dir_cursor *c)
{
	dir_cursor_reset(c);
}

bool fs_path_is_safe(const char *p)
{
	if (*p == '/')
		return false;
	while (*p) {
		const char *e = strchr(p, '/');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (n == 0 || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		p += n;
		if (*p == '/')
			p++;
	}
	return true;
}

/* Walk dir one component at a time from the root, refusing symlinks
 * unless follow. */
static int open_beneath(int rootfd, const char *dir, bool follow)
{
	int flags = follow ? DIR_OPEN_FLAGS & ~O_NOFOLLOW : DIR_OPEN_FLAGS;
	char comp[256];
	int fd = dup(rootfd);

	if (fd < 0)
		return -1;
	while (*dir) {
		const char *e = strchr(dir, '/');
		size_t n = e ? (size_t)(e - dir) : strlen(dir);
		if (n == 0 || n >= sizeof comp || (n == 2 && dir[0] == '.' && dir[1] == '.')) {
			close(fd);
			errno = n >= sizeof comp ? ENAMETOOLONG : EINVAL;
			return -1;
		}
		memcpy(comp, dir, n);
		comp[n] = '\0';
		if (!(n == 1 && comp[0] == '.')) {
			int next = openat(fd, comp, flags);
			int saved = errno;
			close(fd);
			if (next < 0) {
				errno = saved;
				return -1;
			}
			fd = next;
		}
		dir += n;
		if (*dir == '/')
			dir++;
	}
	return fd;
}

/* Components of dir (count, or -1 if one is empty, ".", ".." or too long
 * for a simple step-by-step open). */
static int plain_components(const char *dir)
{
	int n = 0;

	for (const char *p = dir; *p;) {
		const char *e = strchrnul(p, '/');
		size_t len = (size_t)(e - p);
		if (len == 0 || len >= 256 || (len == 1 && p[0] == '.') ||
		    (len == 2 && p[0] == '.' && p[1] == '.'))
			return -1;
		n++;
		p = *e ? e + 1 : e;
	}
	return n;
}

/* How many leading components of dir are components of the held path. */
static int shared_depth(const struct dir_cursor *c, const char *dir)
{
	int shared = 0;

	for (size_t i = 0; shared < c->depth; i++) {
		char a = c->path[i], b = dir[i];
		bool a_end = a == '/' || a == '\0', b_end = b == '/' || b == '\0';
		if (a_end && b_end)
			shared++;
		else if (a != b)
			break;
		if (!a || !b)
			break;
	}
	return shared;
}

/* Move the held directories to dir (plain components only): close those
 * not on its path, open the rest one at a time from the deepest kept. */
static int cursor_step(struct dir_cursor *c, const char *dir, int ncomp)
{
	int keep = shared_depth(c, dir);
	int flags = c->follow ? DIR_OPEN_FLAGS & ~O_NOFOLLOW : DIR_OPEN_FLAGS;
	const char *p = dir;

	while (c->depth > keep)
		close(c->held[--c->depth]);
	for (int i = 0; i < keep; i++)
		p = strchrnul(p, '/') + 1;
	for (int i = keep; i < ncomp; i++) {
		const char *e = strchrnul(p, '/');
		char comp[256];
		memcpy(comp, p, (size_t)(e - p));
		comp[e - p] = '\0';
		int fd = openat(c->depth ? c->held[c->depth - 1] : c->rootfd, comp, flags);
		if (fd < 0) {
			int saved = errno;
			dir_cursor_reset(c);
			errno = saved;
			return -1;
		}
		c->held[c->depth++] = fd;
		p = *e ? e + 1 : e;
	}
	c->fd = c->held[c->depth - 1];
	snprintf(c->path, sizeof c->path, "%s", dir);
	return c->fd;
}

int dir_cursor_open(struct dir_cursor *c, const char *dir)
{
	if (!dir || strcmp(dir, ".") == 0)
		dir = "";
	if (c->fd >= 0 && strcmp(c->path, dir) == 0)
		return c->fd;
	if (strlen(dir) >= sizeof c->path) {
		errno = ENAMETOOLONG;
		return -1;
	}
	int ncomp = *dir && !(c->follow && c->beneath) ? plain_components(dir) : -1;
	if (ncomp > 0 && ncomp <= DIR_CURSOR_DEPTH) {
		if (c->depth == 0)
			dir_cursor_reset(c); /* the root, or an fd opened on its own */
		return cursor_step(c, dir, ncomp);
	}
	dir_cursor_reset(c);
	if (*dir == '\0') {
		c->fd = c->rootfd;
		return c->fd;
	}
	int fd = c->follow && c->beneath ? fs_open_beneath(c->rootfd, dir, O_RDONLY | O_DIRECTORY)
					 : open_beneath(c->rootfd, dir, c->follow);
	if (fd < 0 && errno == EXDEV)
		errno = ELOOP; /* a link out of the root: rsync 3.5 names it a loop */
	if (fd < 0)
		return -1;
	c->fd = fd;
	snprintf(c->path, sizeof c->path, "%s", dir);
	return fd;
}

#define DIR_READ_BUF (64 * 1024)

/* The records getdents64 writes are glibc's struct dirent (64-bit). */
_Static_assert(offsetof(struct dirent, d_name) == 19, "struct dirent is not getdents64's");

int dir_reader_open(struct dir_reader *r, int dirfd)
{
	r->pos = r->len = 0;
	r->fd = -1;
	r->buf = malloc(DIR_READ_BUF);
	if (!r->buf) {
		errno = ENOMEM;
		return -1;
	}
	r->fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r->fd < 0) {
		int e = errno;
		free(r->buf);
		r->buf = NULL;
		errno = e;
		return -1;
	}
	return 0;
}

const struct dirent *dir_reader_next(struct dir_reader *r)
{
	for (;;) {
		if (r->pos >= r->len) {
			ssize_t n = getdents64(r->fd, r->buf, DIR_READ_BUF);
			if (n <= 0)
				return NULL;
			r->len = (size_t)n;
			r->pos = 0;
		}
		const struct dirent *de = (const struct dirent *)(r->buf + r->pos);
		r->pos += de->d_reclen;
		const char *n = de->d_name;
		if (!(n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0'))))
			return de;
	}
}

void dir_reader_close(struct dir_reader *r)
{
	if (r->fd >= 0)
		close(r->fd);
	free(r->buf);
	r->fd = -1;
	r->buf = NULL;
}

int dir_cursor_parent(struct dir_cursor *c, const char *relpath, const char **leaf)
{
	char dir[4096];
	const char *slash = strrchr(relpath, '/');

	if (!fs_path_is_safe(relpath)) {
		errno = EINVAL;
		return -1;
	}
	if (!slash) {
		*leaf = relpath;
		return dir_cursor_open(c, "");
	}
	if ((size_t)(slash - relpath) >= sizeof dir) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(dir, relpath, (size_t)(slash - relpath));
	dir[slash - relpath] = '\0';
	*leaf = slash + 1;
	return dir_cursor_open(c, dir);
}

int fs_create_temp(int dirfd, const char *leaf, char *tmpname, size_t tmpsize)
{
	static const char alnum[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	/* rsync's ".name.XXXXXX", with the name cut so the whole fits NAME_MAX. */
	size_t room = 255 - 1 - 7;
	size_t n = strlen(leaf);

	if (n > room)
		n = room;
	for (int attempt = 0; attempt < 100; attempt++) {
		uint8_t rnd[6];
		char suffix[7];
		if (getrandom(rnd, sizeof rnd, 0) != sizeof rnd) {
			uint64_t t = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 16 ^ (uint64_t)attempt;
			memcpy(rnd, &t, sizeof rnd);
		}
		for (int i = 0; i < 6; i++)
			suffix[i] = alnum[rnd[i] % (sizeof alnum - 1)];
		suffix[6] = '\0';
		if ((size_t)snprintf(tmpname, tmpsize, ".%.*s.%s", (int)n, leaf, suffix) >= tmpsize) {
			errno = ENAMETOOLONG;
			return -1;
		}
		int fd = openat(dirfd, tmpname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				0600);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	errno = EEXIST;
	return -1;
}

int fs_remove_tree(int dirfd, const char *leaf)
{
	int fd = openat(dirfd, leaf, DIR_OPEN_FLAGS);
	if (fd < 0)
		return -1;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	int result = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fs_remove_any(fd, de->d_name, true) < 0)
			result = -1;
	}
	closedir(d);
	if (result == 0)
		result = unlinkat(dirfd, leaf, AT_REMOVEDIR);
	return result;
}

int fs_remove_any(int dirfd, const char *leaf, bool recursive)
{
	struct stat st;

	if (fstatat(dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dirfd, leaf, 0);
	if (unlinkat(dirfd, leaf, AT_REMOVEDIR) == 0)
		return 0;
	if ((errno == ENOTEMPTY || errno == EEXIST) && recursive)
		return fs_remove_tree(dirfd, leaf);
	return -1;
}

int fs_open_root(const char *path, bool create, bool mkpath, bool insecure)
{
	int fd = oppath_open(AT_FDCWD, path, O_RDONLY | O_DIRECTORY, 0, insecure);

	if (fd >= 0 || errno != ENOENT || !create)
		return fd;
	if (mkpath) {
		bool made;
		return oppath_mkdirs(AT_FDCWD, path, 0777, insecure, &made);
	}
	const char *leaf;
	int parent = oppath_open_parent(AT_FDCWD, path, &leaf, insecure);
	if (parent < 0)
		return -1;
	int r = mkdirat(parent, leaf, 0777);
	int e = errno;
	close(parent);
	if (r < 0 && e != EEXIST) {
		errno = e;
		return -1;
	}
	return oppath_open(AT_FDCWD, path, O_RDONLY | O_DIRECTORY, 0, insecure);
}

bool fs_symlink_unsafe(const char *target, const char *path)
{
	int depth = 0;

	if (!*target || *target == '/')
		return true;
	/* ".." is only allowed as leading components */
	const char *rest = target;
	while (strncmp(rest, "../", 3) == 0) {
		rest += 3;
		while (*rest == '/')
			rest++;
	}
	size_t tlen = strlen(target);
	if (strstr(rest, "/../") || (tlen > 3 && strcmp(target + tlen - 3, "/..") == 0))
		return true;
	/* how deep the link sits in the transfer: its margin for ".." */
	const char *name = path, *slash;
	for (; (slash = strchr(name, '/')) != NULL; name = slash + 1) {
		if (name[0] == '.' && (name[1] == '/' || (name[1] == '.' && name[2] == '/'))) {
			if (name[1] == '.')
				depth = 0;
		} else {
			depth++;
		}
		while (slash[1] == '/')
			slash++;
	}
	if (strcmp(name, "..") == 0)
		depth = 0;
	for (name = target; (slash = strchr(name, '/')) != NULL; name = slash + 1) {
		if (name[0] == '.' && (name[1] == '/' || (name[1] == '.' && name[2] == '/'))) {
			if (name[1] == '.' && --depth < 0)
				return true;
		} else {
			depth++;
		}
		while (slash[1] == '/')
			slash++;
	}
	if (strcmp(name, "..") == 0)
		depth--;
	return depth < 0;
}

/* How often a lookup the kernel could not vouch for is tried again. */
#define BENEATH_TRIES 64

int fs_open_beneath(int rootfd, const char *relpath, int flags)
{
	struct open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC),
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};
	int fd = -1;

	/* EAGAIN: a rename anywhere on the system (our own receiver's temp
	 * files included) raced a ".." in the path, so the kernel could not
	 * prove the walk stayed beneath; the lookup is safe to repeat. Taken
	 * as a failure it turned a -K directory link into a directory. */
	for (int i = 0; i < BENEATH_TRIES; i++) {
		fd = (int)syscall(SYS_openat2, rootfd, relpath, &how, sizeof how);
		if (fd >= 0 || errno != EAGAIN)
			break;
	}
	return fd;
}

int64_t fs_device_size(int fd)
{
	off_t end = lseek(fd, 0, SEEK_END);

	if (end < 0)
		return 0;
	lseek(fd, 0, SEEK_SET);
	return (int64_t)end;
}

int fs_open_source(int dirfd, const char *name, int flags, bool noatime)
{
	if (noatime) {
		int fd = openat(dirfd, name, flags | O_NOATIME);
		/* only the owner (or CAP_FOWNER) may ask for it */
		if (fd >= 0 || errno != EPERM)
			return fd;
	}
	return openat(dirfd, name, flags);
}

int fs_mkpath_at(int rootfd, const char *relpath)
{
	char buf[4096];
	int fd = dup(rootfd);

	if (fd < 0 || snprintf(buf, sizeof buf, "%s", relpath) >= (int)sizeof buf) {
		if (fd >= 0)
			close(fd);
		errno = ENAMETOOLONG;
		return -1;
	}
	for (char *save = NULL, *name = strtok_r(buf, "/", &save); name;
	     name = strtok_r(NULL, "/", &save)) {
		if (strcmp(name, ".") == 0)
			continue;
		if (strcmp(name, "..") == 0 || (mkdirat(fd, name, 0777) < 0 && errno != EEXIST)) {
			if (strcmp(name, "..") == 0)
				errno = EINVAL;
			close(fd);
			return -1;
		}
		int next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		if (next < 0)
			return -1;
		fd = next;
	}
	close(fd);
	return 0;
}

static bool copy_range_unsupported(int e)
{
	return e == EXDEV || e == EINVAL || e == ENOSYS || e == EOPNOTSUPP || e == EBADF;
}

/* The read/write half of fs_copy_range(), for where the kernel will not
 * copy between these two files. */
static int64_t copy_range_by_hand(int in, off_t *in_off, int out, int64_t len)
{
	char buf[65536];
	int64_t done = 0;

	while (len < 0 || done < len) {
		size_t want = len < 0 || len - done > (int64_t)sizeof buf ? sizeof buf
									 : (size_t)(len - done);
		ssize_t n = in_off ? pread(in, buf, want, *in_off) : read(in, buf, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		if (!fd_write_all(out, buf, (size_t)n))
			return -1;
		if (in_off)
			*in_off += n;
		done += n;
	}
	return done;
}

int64_t fs_copy_range(int in, off_t *in_off, int out, int64_t len)
{
	int64_t done = 0;

	while (len < 0 || done < len) {
		size_t want = len < 0 || len - done > (1 << 30) ? (size_t)1 << 30 : (size_t)(len - done);
		ssize_t n = copy_file_range(in, in_off, out, NULL, want, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && copy_range_unsupported(errno)) {
			int64_t rest = copy_range_by_hand(in, in_off, out, len < 0 ? -1 : len - done);
			return rest < 0 ? -1 : done + rest;
		}
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		done += n;
	}
	return done;
}

/* Across file systems a rename cannot move the file: copy it, then remove
 * the original. Only regular files are worth the copy. */
int fs_copy_then_unlink(int from_dir, const char *from, int to_dir, const char *to)
{
	struct stat st;
	int in = openat(from_dir, from, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (in < 0 || fstat(in, &st) < 0 || !S_ISREG(st.st_mode)) {
		if (in >= 0)
			close(in);
		errno = EXDEV;
		return -1;
	}
	int out = openat(to_dir, to, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
			 st.st_mode & 07777);
	int64_t n = out >= 0 ? fs_copy_range(in, NULL, out, -1) : -1;
	close(in);
	if (out < 0 || n < 0 || close(out) < 0)
		return -1;
	return unlinkat(from_dir, from, 0);
}

/* 4 KiB runs of zeros become holes: the file system's block size, so a
 * hole is never a partial block. */
#define SPARSE_RUN 4096

static bool all_zero(const uint8_t *p, size_t n)
{
	return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

/* Pass over n zero bytes at the current offset: a seek; with punch, where
 * blocks lie already (preallocated, or the old data of an in-place update),
 * a hole the size of the whole run, so that the blocks inside it are freed,
 * or the zeros themselves where the file system makes no hole. */
static bool skip_zeros(int fd, const uint8_t *zeros, size_t n, bool punch)
{
	if (!punch)
		return lseek(fd, (off_t)n, SEEK_CUR) >= 0;
	off_t at = lseek(fd, 0, SEEK_CUR);
	if (at < 0)
		return false;
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, at, (off_t)n) == 0)
		return lseek(fd, at + (off_t)n, SEEK_SET) >= 0;
	return fd_write_all(fd, zeros, n);
}

bool fs_write_sparse(int fd, const void *buf, size_t len, bool punch)
{
	const uint8_t *p = buf;
	size_t zrun = 0; /* zeros met and not yet passed over */

	while (len > 0) {
		size_t n = len < SPARSE_RUN ? len : SPARSE_RUN;
		if (all_zero(p, n)) {
			zrun += n;
		} else {
			if (zrun && !skip_zeros(fd, p - zrun, zrun, punch))
				return false;
			zrun = 0;
			if (!fd_write_all(fd, p, n))
				return false;
		}
		p += n;
		len -= n;
	}
	return !zrun || skip_zeros(fd, p - zrun, zrun, punch);
}

/* n zero bytes at the current offset that are there already: a hole if
 * the file system makes one (if not, they stay), and the offset past them. */
static bool punch_present_zeros(int fd, size_t n)
{
	off_t at = lseek(fd, 0, SEEK_CUR);

	if (at < 0)
		return false;
	(void)fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, at, (off_t)n);
	return lseek(fd, at + (off_t)n, SEEK_SET) >= 0;
}

bool fs_sparse_in_place(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	size_t zrun = 0;

	while (len > 0) {
		size_t n = len < SPARSE_RUN ? len : SPARSE_RUN;
		if (all_zero(p, n)) {
			zrun += n;
		} else {
			if (zrun && !punch_present_zeros(fd, zrun))
				return false;
			zrun = 0;
			if (lseek(fd, (off_t)n, SEEK_CUR) < 0)
				return false;
		}
		p += n;
		len -= n;
	}
	return !zrun || punch_present_zeros(fd, zrun);
}

bool fs_proc_path(char *buf, size_t size, int dirfd, const char *leaf)
{
	int n = dirfd < 0 ? snprintf(buf, size, "%s", leaf)
		: leaf	  ? snprintf(buf, size, FS_PROC_FD_DIR "%d/%s", dirfd, leaf)
			  : snprintf(buf, size, FS_PROC_FD_DIR "%d", dirfd);
	return n > 0 && (size_t)n < size;
}

ssize_t fs_pread_full(int fd, void *buf, size_t len, off_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = pread(fd, (char *)buf + done, len - done, off + (off_t)done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

int fs_set_atime(int dirfd, const char *leaf, int64_t sec)
{
	struct timespec ts[2] = {
		{.tv_sec = (time_t)sec, .tv_nsec = 0},
		{.tv_sec = 0, .tv_nsec = UTIME_OMIT},
	};

	return utimensat(dirfd, leaf, ts, AT_SYMLINK_NOFOLLOW);
}

int fs_set_mtime(int dirfd, const char *leaf, int64_t sec, uint32_t nsec)
{
	struct timespec ts[2] = {
		{.tv_sec = 0, .tv_nsec = UTIME_OMIT},
		{.tv_sec = (time_t)sec, .tv_nsec = (long)nsec},
	};

	return utimensat(dirfd, leaf, ts, AT_SYMLINK_NOFOLLOW);
}
