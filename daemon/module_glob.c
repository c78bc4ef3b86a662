/*
 * Wildcard expansion of a daemon client's path arguments, one component
 * at a time as rsync's daemon does it (util1.c: glob_expand, glob_match):
 * a component with '*', '?' or '[' is matched against the names in its
 * directory (rsync's wildmatch: a leading dot is not special, "." and ".."
 * never match), every other component is taken as written. A name a
 * wildcard matched must exist, a name with more components after it must
 * be a directory, and the module's filters may exclude either.
 *
 * The walk goes through directory fds beneath the module root, never
 * through a symlinked directory (ferry's rule for daemon path arguments);
 * a matched symlink counts only when it resolves inside the module.
 */
#include "daemon/module_glob.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/base/fileio.h"
#include "proto/filter/filter.h"
#include "proto/base/wildmatch.h"

#define GLOB_MAX_DEPTH 512      /* components; bounds recursion and open fds */

struct glob_walk {
	int root_fd;
	const struct filter_list *filters;
	struct path_list *out;
	char path[4096];        /* the name built so far, as the server will use it */
	char filt[4096];        /* the same without "./" components: what filters see */
	bool failed;            /* out of memory or too many names (errno says) */
};

void path_list_free(struct path_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof *l);
}

static bool path_list_add(struct path_list *l, const char *path)
{
	if (l->n >= MODULE_GLOB_MAX_PATHS) {
		errno = E2BIG;
		return false;
	}
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		char **v = realloc(l->v, cap * sizeof *v);
		if (!v)
			return false;
		l->v = v;
		l->cap = cap;
	}
	char *copy = strdup(path);
	if (!copy)
		return false;
	l->v[l->n++] = copy;
	return true;
}

static bool has_wildcard(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

/* Does `name` in dirfd exist as glob_match wants it? With more to come it
 * must be a real directory (opened into *child); a final symlink must
 * resolve inside the module (rsync stats it: a dangling one is dropped).
 * *is_dir is what the filters are told. */
static bool name_usable(struct glob_walk *g, int dirfd, const char *name, bool need_dir,
			bool *is_dir, int *child)
{
	struct stat st;

	*child = -1;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return false;
	if (need_dir) {
		if (!S_ISDIR(st.st_mode))
			return false;
		*child = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		*is_dir = true;
		return *child >= 0;
	}
	if (S_ISLNK(st.st_mode)) {
		int fd = fs_open_beneath(g->root_fd, g->path, O_PATH);
		if (fd < 0)
			return false;
		bool ok = fstat(fd, &st) == 0;
		close(fd);
		if (!ok)
			return false;
	}
	*is_dir = S_ISDIR(st.st_mode);
	return true;
}

static void glob_level(struct glob_walk *g, int dirfd, char *arg, size_t plen, size_t flen,
		       int depth);

/* Append one name to the path and go on with `rest` (NULL: the name ends
 * the argument). mirrors rsync util1.c: call_glob_match() */
static void glob_name(struct glob_walk *g, int dirfd, const char *name, bool from_glob,
		      char *rest, size_t plen, size_t flen, int depth)
{
	size_t len = strlen(name);
	int child = -1;

	if (plen + len + 2 >= sizeof g->path || flen + len + 2 >= sizeof g->filt)
		return;
	if (!from_glob && strcmp(name, "..") == 0)
		return; /* sanitized away before; never climb out */
	memcpy(g->path + plen, name, len + 1);
	memcpy(g->filt + flen, name, len + 1);
	plen += len;
	flen += len;
	if (from_glob || (rest && len)) {
		bool is_dir = false;
		if (!name_usable(g, dirfd, name, rest != NULL, &is_dir, &child))
			return;
		if (g->filters && filter_check(g->filters, g->filt, is_dir, false) < 0) {
			if (child >= 0)
				close(child);
			return;
		}
	}
	if (!rest) {
		if (!path_list_add(g->out, g->path))
			g->failed = true;
		return;
	}
	g->path[plen++] = '/';
	g->path[plen] = '\0';
	g->filt[flen++] = '/';
	g->filt[flen] = '\0';
	glob_level(g, child >= 0 ? child : dirfd, rest, plen, flen, depth + 1);
	if (child >= 0)
		close(child);
}

/* Expand the components of `arg` in the directory dirfd, whose path is
 * g->path[0..plen). mirrors rsync util1.c: glob_match() */
static void glob_level(struct glob_walk *g, int dirfd, char *arg, size_t plen, size_t flen,
		       int depth)
{
	if (depth > GLOB_MAX_DEPTH || g->failed)
		return;
	/* "./" stays in the name (-R's "/./" marker), not in what filters see */
	while (arg[0] == '.' && arg[1] == '/') {
		if (plen + 3 >= sizeof g->path)
			return;
		memcpy(g->path + plen, "./", 3);
		plen += 2;
		arg += 2;
	}
	char *slash = strchr(arg, '/');
	char *rest = NULL;
	if (slash) {
		*slash = '\0';
		rest = slash + 1;
	}
	if (!has_wildcard(arg)) {
		glob_name(g, dirfd, arg, false, rest, plen, flen, depth);
	} else {
		int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
		if (!d && fd >= 0)
			close(fd);
		struct dirent *de;
		while (d && !g->failed && (de = readdir(d)) != NULL) {
			const char *n = de->d_name;
			if (n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0')))
				continue;
			if (wildmatch(arg, n))
				glob_name(g, dirfd, n, true, rest, plen, flen, depth);
		}
		if (d)
			closedir(d);
	}
	if (slash)
		*slash = '/';
}

bool module_glob(int root_fd, const struct filter_list *daemon_filters, const char *arg,
		 struct path_list *out)
{
	if (!has_wildcard(arg))
		return path_list_add(out, arg);
	struct glob_walk *g = calloc(1, sizeof *g);
	char *pattern = strdup(arg);
	if (!g || !pattern) {
		free(g);
		free(pattern);
		return false;
	}
	g->root_fd = root_fd;
	g->filters = daemon_filters;
	g->out = out;
	size_t before = out->n;
	glob_level(g, root_fd, pattern, 0, 0, 0);
	bool ok = !g->failed;
	int e = errno;
	free(pattern);
	free(g);
	/* Nothing matched: keep the name, the sender then reports it missing. */
	if (ok && out->n == before)
		ok = path_list_add(out, arg);
	else if (!ok)
		errno = e;
	return ok;
}
