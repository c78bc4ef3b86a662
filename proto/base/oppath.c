/*
 * Operator-supplied paths, resolved one component at a time (see
 * oppath.h).
 */
#include "proto/base/oppath.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define OPPATH_MAX_LINKS 40   /* like the kernel's limit for one lookup */
#define OPPATH_BUF 8192
#define DIR_HOLD_FLAGS (O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/* Where one walk stands: the directory reached and what is left. */
struct walk {
	int dfd;             /* directory reached; AT_FDCWD or the caller's atfd
			      * until the walk moves (then owned) */
	bool owned;
	bool quiet;          /* OPPATH_QUIET */
	bool any_owner;      /* OPPATH_ANY_OWNER */
	int links_left;
	/* confinement (oppath_open_in): the walk may not leave the tree of
	 * the root directory (dev, ino); depth is how far below it the
	 * directory reached lies, -1 while outside it (after a link to an
	 * absolute name, until the walk comes back to the root) */
	bool confined;
	dev_t root_dev;
	ino_t root_ino;
	int depth;
	char rest[OPPATH_BUF];
};

bool oppath_link_trusted(uid_t link_owner)
{
	return link_owner == 0 || link_owner == geteuid();
}

/* Is fd the confinement root? */
static bool walk_is_root(const struct walk *w, int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && st.st_dev == w->root_dev && st.st_ino == w->root_ino;
}

/* Move to the directory next, delta levels down from where the walk was
 * (-1 for "..", 0 for a restart at "/"). */
static void walk_move(struct walk *w, int next, int delta)
{
	if (w->owned)
		close(w->dfd);
	w->dfd = next;
	w->owned = true;
	if (!w->confined)
		return;
	if (w->depth >= 0 && delta != 0)
		w->depth += delta;
	else
		w->depth = -1;
	if (w->depth != 0 && walk_is_root(w, next))
		w->depth = 0;
}

/* Confined: is the directory reached inside the root's tree? */
static bool walk_inside(const struct walk *w)
{
	return !w->confined || w->depth >= 0;
}

/* Set `rest` to text + tail; an absolute text restarts at "/", a relative
 * one goes on from the directory reached. */
static int walk_restart(struct walk *w, const char *text, const char *tail)
{
	char joined[OPPATH_BUF];

	if (snprintf(joined, sizeof joined, "%s%s", text, tail) >= (int)sizeof joined) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (joined[0] == '/') {
		int root = open("/", DIR_HOLD_FLAGS);
		if (root < 0)
			return -1;
		walk_move(w, root, 0);
	}
	const char *p = joined;
	while (*p == '/')
		p++;
	/* a trailing slash demands a directory: make it an explicit "." */
	size_t n = strlen(p);
	if (n > 0 && p[n - 1] == '/' &&
	    snprintf(w->rest, sizeof w->rest, "%s.", p) >= (int)sizeof w->rest) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (n == 0 || p[n - 1] != '/')
		memmove(w->rest, p, n + 1);
	return 0;
}

/* Peel the first component of rest into comp; *tail points at what follows
 * it in rest (from its slash). 1, 0 when rest is empty, -1 (ENAMETOOLONG)
 * for a component that does not fit. */
static int walk_next(struct walk *w, char *comp, size_t size, const char **tail)
{
	char *p = w->rest;

	while (*p == '/')
		p++;
	if (!*p)
		return 0;
	size_t n = strcspn(p, "/");
	if (n >= size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(comp, p, n);
	comp[n] = '\0';
	*tail = p + n;
	return 1;
}

static bool tail_is_empty(const char *tail)
{
	while (*tail == '/')
		tail++;
	return !*tail;
}

/* A symlink at comp: refuse an untrusted one, else splice its target in
 * front of tail. */
static int walk_follow(struct walk *w, const char *comp, const struct stat *lst, const char *tail)
{
	char target[4096], saved_tail[OPPATH_BUF];

	if (!w->any_owner && !oppath_link_trusted(lst->st_uid)) {
		if (!w->quiet)
			fprintf(stderr, "%s\n", OPPATH_REFUSED_HINT);
		errno = ELOOP;
		return -1;
	}
	if (--w->links_left < 0) {
		errno = ELOOP;
		return -1;
	}
	ssize_t n = readlinkat(w->dfd, comp, target, sizeof target - 1);
	if (n < 0)
		return -1;
	target[n] = '\0';
	snprintf(saved_tail, sizeof saved_tail, "%s", tail);
	return walk_restart(w, target, saved_tail);
}

static bool is_dot(const char *comp)
{
	return comp[0] == '.' && (!comp[1] || (comp[1] == '.' && !comp[2]));
}

/* Step into the directory comp. With mkdirs, a missing one is made, but
 * confined only inside the root. Confined, ".." at the root is an escape:
 * ELOOP, as rsync 3.5 refuses it. */
static int walk_descend(struct walk *w, const char *comp, mode_t mode, bool mkdirs, bool *created)
{
	int delta = strcmp(comp, "..") == 0 ? -1 : strcmp(comp, ".") == 0 ? 0 : 1;

	if (w->confined && ((delta < 0 && w->depth == 0) || (mkdirs && w->depth < 0))) {
		errno = ELOOP;
		return -1;
	}
	if (mkdirs && mkdirat(w->dfd, comp, mode) == 0 && created)
		*created = true;
	int next = openat(w->dfd, comp, DIR_HOLD_FLAGS);
	if (next < 0)
		return -1;
	if (delta == 0) { /* "." */
		close(next);
		return 0;
	}
	walk_move(w, next, delta);
	return 0;
}

/* How many levels below the root's directory fd lies: climb with ".."
 * until the root is met; -1 with ELOOP when "/" comes first. */
static int depth_below(const struct walk *w, int fd)
{
	int cur = openat(fd, ".", DIR_HOLD_FLAGS), depth = 0;

	while (cur >= 0 && depth < OPPATH_BUF / 2) {
		struct stat here, up;
		if (fstat(cur, &here) < 0)
			break;
		if (here.st_dev == w->root_dev && here.st_ino == w->root_ino) {
			close(cur);
			return depth;
		}
		int next = openat(cur, "..", DIR_HOLD_FLAGS);
		close(cur);
		cur = next;
		if (cur < 0 || fstat(cur, &up) < 0 ||
		    (up.st_dev == here.st_dev && up.st_ino == here.st_ino))
			break; /* "/" */
		depth++;
	}
	if (cur >= 0)
		close(cur);
	errno = ELOOP;
	return -1;
}

/* Set up the confinement to rootfd's tree for a walk that starts at atfd
 * (rootfd or a directory below it; with outside_ok, anywhere). A root that is "/" (a chroot,
 * "path = /") has nothing outside: no confinement then. */
static int walk_confine(struct walk *w, int rootfd, int atfd, bool outside_ok)
{
	struct stat root, top;

	if (fstat(rootfd, &root) < 0)
		return -1;
	w->root_dev = root.st_dev;
	w->root_ino = root.st_ino;
	if (stat("/", &top) == 0 && top.st_dev == root.st_dev && top.st_ino == root.st_ino) {
		w->confined = false;
		return 0;
	}
	w->depth = atfd == rootfd ? 0 : depth_below(w, atfd);
	/* --confine-root: the start may lie outside the root (a relative
	 * name from a cwd elsewhere); the walk may still arrive inside it */
	if (w->depth < 0 && outside_ok)
		return 0;
	return w->depth;
}

/* Open the last component, comp, in the directory reached. Confined, that
 * directory must be inside the root, or comp must be the root itself (a
 * walk from outside, as --confine-root's, that names the root). */
static int leaf_open(const struct walk *w, const char *comp, int flags, mode_t mode)
{
	if (walk_inside(w))
		return openat(w->dfd, comp, flags | O_NOFOLLOW | O_CLOEXEC, mode);
	if (!(flags & O_DIRECTORY) && !(flags & O_PATH)) {
		errno = ELOOP;
		return -1;
	}
	int fd = openat(w->dfd, comp, (flags & ~O_CREAT) | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && !walk_is_root(w, fd)) {
		close(fd);
		fd = -1;
	}
	if (fd < 0)
		errno = ELOOP;
	return fd;
}

/* The walk behind every entry point: resolve path beneath atfd, then open
 * its last component with flags (O_NOFOLLOW added). With mkdirs, every
 * missing directory is created and the last one opened. */
static int walk_open(int rootfd, int atfd, const char *path, int flags, mode_t mode,
		     unsigned how, bool mkdirs, bool *created)
{
	struct walk w = {.dfd = atfd, .owned = false, .quiet = how & OPPATH_QUIET,
			 .links_left = OPPATH_MAX_LINKS, .confined = how & OPPATH_CONFINE,
			 .any_owner = how & OPPATH_ANY_OWNER};
	char comp[4096];
	const char *tail;
	int fd = -1;

	if (!path || !*path) {
		errno = ENOENT;
		return -1;
	}
	if (w.confined && walk_confine(&w, rootfd, atfd, how & OPPATH_START_OUTSIDE) < 0)
		return -1;
	if (walk_restart(&w, path, "") < 0)
		goto out;
	int more;
	while ((more = walk_next(&w, comp, sizeof comp, &tail)) > 0) {
		bool last = tail_is_empty(tail);
		struct stat lst;
		bool exists = fstatat(w.dfd, comp, &lst, AT_SYMLINK_NOFOLLOW) == 0;
		if (exists && S_ISLNK(lst.st_mode)) {
			if (walk_follow(&w, comp, &lst, tail) < 0)
				goto out;
			continue;
		}
		if (last && !mkdirs && !is_dot(comp)) {
			fd = leaf_open(&w, comp, flags, mode);
			goto out;
		}
		if (!exists && !mkdirs) {
			if (!walk_inside(&w))
				errno = ELOOP; /* a name outside the root */
			goto out; /* errno from fstatat */
		}
		if (walk_descend(&w, comp, mode, mkdirs && !exists, last ? created : NULL) < 0)
			goto out;
		memmove(w.rest, tail, strlen(tail) + 1);
	}
	if (more < 0)
		goto out;
	/* the path ended in a directory (".", "/", or with mkdirs) */
	if (!walk_inside(&w)) {
		errno = ELOOP;
		goto out;
	}
	fd = openat(w.dfd, ".", (mkdirs ? O_RDONLY | O_DIRECTORY : flags) | O_CLOEXEC, mode);
out:;
	int e = errno;
	if (w.owned)
		close(w.dfd);
	errno = e;
	return fd;
}

/* rrsync hands the server a path it has pinned as /proc/self/fd/N/... or
 * /dev/fd/N/...; in a user namespace /proc/self and /dev/fd are links
 * owned by the overflow uid, which the walk would refuse. Spell such a
 * path through /proc/PID, which has no link before the fd entry (whose
 * target the walk then judges like any other name). Returns path itself
 * when it has no such prefix, or when the other spelling does not fit. */
static const char *fd_pin_path(const char *path, char *buf, size_t size)
{
	static const char *const prefixes[] = {"/proc/self/", "/dev/fd/"};
	static const char *const spelled[] = {"", "fd/"};

	for (size_t i = 0; i < 2; i++) {
		size_t n = strlen(prefixes[i]);
		if (strncmp(path, prefixes[i], n) != 0 || !path[n])
			continue;
		int len = snprintf(buf, size, "/proc/%ld/%s%s", (long)getpid(), spelled[i],
				   path + n);
		return len > 0 && (size_t)len < size ? buf : path;
	}
	return path;
}

int oppath_open(int atfd, const char *path, int flags, mode_t mode, unsigned how)
{
	char pinned[OPPATH_BUF];

	if (how & OPPATH_INSECURE)
		return openat(atfd, path, flags | O_CLOEXEC, mode);
	if (how & OPPATH_FD_PINS)
		path = fd_pin_path(path, pinned, sizeof pinned);
	return walk_open(atfd, atfd, path, flags, mode, how, false, NULL);
}

/* Split path into the directory that holds its last component (into dir)
 * and *leaf (see oppath_open_parent). */
static int split_parent(const char *path, char *dir, size_t size, const char **leaf)
{
	size_t n = strlen(path);

	while (n > 1 && path[n - 1] == '/') /* "a/b/" names b, as mkdir(2) does */
		n--;
	const char *slash = memrchr(path, '/', n);
	*leaf = slash ? slash + 1 : path;
	if (!**leaf || **leaf == '/')
		*leaf = "."; /* "/" itself */
	n = slash ? (slash == path ? 1 : (size_t)(slash - path)) : 0;
	if (n + 2 > size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(dir, path, n);
	strcpy(dir + n, n ? "" : ".");
	return 0;
}

int oppath_open_parent(int atfd, const char *path, const char **leaf, unsigned how)
{
	char dir[OPPATH_BUF];

	if (split_parent(path, dir, sizeof dir, leaf) < 0)
		return -1;
	return oppath_open(atfd, dir, O_RDONLY | O_DIRECTORY, 0, how);
}

/* --insecure-links: mkdir -p with plain, link-following paths. */
static int mkdirs_plain(int atfd, const char *path, mode_t mode, bool *created)
{
	char buf[OPPATH_BUF];

	if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdirat(atfd, buf, mode);
		*p = '/';
	}
	if (mkdirat(atfd, buf, mode) == 0)
		*created = true;
	return openat(atfd, buf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

int oppath_mkdirs(int atfd, const char *path, mode_t mode, unsigned how, bool *created)
{
	*created = false;
	if (how & OPPATH_INSECURE)
		return mkdirs_plain(atfd, path, mode, created);
	return walk_open(atfd, atfd, path, O_RDONLY | O_DIRECTORY, mode, how, true, created);
}

/* A module path as the confined walk takes it: leading slashes name the
 * root. */
static const char *module_relative(const char *path)
{
	while (*path == '/')
		path++;
	return *path ? path : ".";
}

int oppath_open_in(int rootfd, const char *path, int flags, mode_t mode, unsigned how)
{
	return oppath_open(rootfd, module_relative(path), flags, mode, how | OPPATH_CONFINE);
}

int oppath_open_parent_in(int rootfd, const char *path, const char **leaf, unsigned how)
{
	return oppath_open_parent(rootfd, module_relative(path), leaf, how | OPPATH_CONFINE);
}

int oppath_mkdirs_in(int rootfd, const char *path, mode_t mode, unsigned how, bool *created)
{
	return oppath_mkdirs(rootfd, module_relative(path), mode, how | OPPATH_CONFINE, created);
}

int oppath_open_from(int rootfd, int atfd, const char *path, int flags, unsigned how)
{
	if (how & OPPATH_INSECURE)
		return openat(atfd, path, flags | O_CLOEXEC);
	return walk_open(rootfd, atfd, path, flags, 0, how | OPPATH_CONFINE, false, NULL);
}

/* --confine-root (no root: the plain walk). Wherever atfd lies, what the
 * walk ends at must be inside rootfd's tree. */
static unsigned under_how(unsigned how)
{
	return how | OPPATH_CONFINE | OPPATH_START_OUTSIDE;
}

/* A root that is not there: nothing is inside it. */
static int root_missing(void)
{
	errno = ELOOP;
	return -1;
}

int oppath_open_under(int rootfd, int atfd, const char *path, int flags, mode_t mode,
		      unsigned how)
{
	if (rootfd == OPPATH_ROOT_MISSING)
		return root_missing();
	if (rootfd < 0 || (how & OPPATH_INSECURE))
		return oppath_open(atfd, path, flags, mode, how);
	char pinned[OPPATH_BUF];
	path = fd_pin_path(path, pinned, sizeof pinned);
	return walk_open(rootfd, atfd, path, flags, mode, under_how(how), false, NULL);
}

int oppath_open_parent_under(int rootfd, int atfd, const char *path, const char **leaf,
			     unsigned how)
{
	char dir[OPPATH_BUF];

	if (rootfd == OPPATH_ROOT_MISSING)
		return root_missing();
	if (rootfd < 0 || (how & OPPATH_INSECURE))
		return oppath_open_parent(atfd, path, leaf, how);
	char pinned[OPPATH_BUF];
	const char *walked = fd_pin_path(path, pinned, sizeof pinned);
	if (split_parent(walked, dir, sizeof dir, leaf) < 0)
		return -1;
	/* the leaf is in the part both spellings share: point into path */
	if (walked == pinned && *leaf >= pinned && *leaf < pinned + sizeof pinned)
		*leaf = path + strlen(path) - strlen(*leaf);
	return walk_open(rootfd, atfd, dir, O_RDONLY | O_DIRECTORY, 0, under_how(how), false,
			 NULL);
}

int oppath_mkdirs_under(int rootfd, int atfd, const char *path, mode_t mode, unsigned how,
			bool *created)
{
	*created = false;
	if (rootfd == OPPATH_ROOT_MISSING)
		return root_missing();
	if (rootfd < 0 || (how & OPPATH_INSECURE))
		return oppath_mkdirs(atfd, path, mode, how, created);
	char pinned[OPPATH_BUF];
	path = fd_pin_path(path, pinned, sizeof pinned);
	return walk_open(rootfd, atfd, path, O_RDONLY | O_DIRECTORY, mode, under_how(how), true,
			 created);
}
