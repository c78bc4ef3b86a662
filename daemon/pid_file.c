/*
 * The daemon's pid file (see pid_file.h); the steps and the failure words
 * are those of rsync's clientserver.c: create_pid_file.
 */
#include "daemon/pid_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* rsync writes at most "%d\n"; a larger file is not a pid file. */
#define PID_FILE_MAX_SIZE 32

/* The directory part of path opened (the operator chose it, so it may be
 * reached through symlinks), and *base pointed at the last component, which
 * is then only ever looked up in that directory without following links. */
static int open_parent(const char *path, const char **base)
{
	const char *slash = strrchr(path, '/');
	char dir[4096];

	if (!slash) {
		*base = path;
		return open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	size_t len = slash == path ? 1 : (size_t)(slash - path);
	if (len >= sizeof dir) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(dir, path, len);
	dir[len] = '\0';
	*base = slash + 1;
	return open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* A write lock on the first 4 bytes (rsync's lock_range(fd, 0, 4)),
 * without waiting: held by another process, it fails with EAGAIN or
 * EACCES. */
static bool lock_head(int fd)
{
	struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 4};

	return fcntl(fd, F_SETLK, &l) == 0;
}

static bool write_pid(int fd)
{
	char buf[32];
	int len = snprintf(buf, sizeof buf, "%d\n", (int)getpid());

	return ftruncate(fd, 0) == 0 && write(fd, buf, (size_t)len) == len;
}

/* The step that failed ("lock", "create", ...), or NULL with the file
 * locked and written. */
static const char *create_locked(struct pid_file *pf, int dirfd, const char *base)
{
	struct stat before = {0}, opened, now;

	if (fstatat(dirfd, base, &before, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(before.st_mode) &&
	    unlinkat(dirfd, base, 0) < 0)
		return "unlink";
	pf->fd = openat(dirfd, base, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0664);
	if (pf->fd < 0)
		return S_ISREG(before.st_mode) ? "open" : "create";
	if (!lock_head(pf->fd))
		return "lock";
	if (fstat(pf->fd, &opened) < 0)
		return "fstat opened";
	if (opened.st_size > PID_FILE_MAX_SIZE)
		return "find small";
	if (fstatat(dirfd, base, &now, AT_SYMLINK_NOFOLLOW) < 0)
		return "lstat";
	if (!S_ISREG(opened.st_mode))
		return "avoid file overwrite race for";
	if (opened.st_dev != now.st_dev || opened.st_ino != now.st_ino)
		return "verify stat info for";
	if (!write_pid(pf->fd))
		return "write";
	pf->dev = opened.st_dev;
	pf->ino = opened.st_ino;
	return NULL;
}

int pid_file_create(struct pid_file *pf, const char *path, char *msg, size_t msgsz)
{
	const char *base, *fail = NULL;
	int dirfd;

	memset(pf, 0, sizeof *pf);
	pf->fd = -1;
	if (!path || !*path)
		return 0;
	dirfd = open_parent(path, &base);
	if (dirfd < 0)
		fail = "open the directory of";
	else
		fail = create_locked(pf, dirfd, base);
	int saved = errno;
	if (dirfd >= 0)
		close(dirfd);
	if (!fail && !(pf->path = strdup(path))) {
		fail = "remember";
		saved = ENOMEM;
	}
	if (!fail)
		return 0;
	snprintf(msg, msgsz, "failed to %s pid file %s: %s", fail, path, strerror(saved));
	if (pf->fd >= 0)
		close(pf->fd);
	pf->fd = -1;
	return -1;
}

void pid_file_remove(struct pid_file *pf)
{
	struct stat st;

	if (pf->fd >= 0 && pf->path && lstat(pf->path, &st) == 0 && st.st_dev == pf->dev &&
	    st.st_ino == pf->ino)
		unlink(pf->path);
	pid_file_forget(pf);
}

void pid_file_forget(struct pid_file *pf)
{
	if (pf->fd >= 0)
		close(pf->fd);
	pf->fd = -1;
	free(pf->path);
	pf->path = NULL;
}
