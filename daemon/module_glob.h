/*
 * Wildcards in a daemon client's path arguments, such as "mod/a*" or
 * "mod/dir/a?.txt" (any component may hold them), name what matches
 * inside the module, as an rsync daemon expands them (util1.c:
 * glob_expand, glob_match).
 */
#ifndef FERRY_MODULE_GLOB_H
#define FERRY_MODULE_GLOB_H

#include <stdbool.h>
#include <stddef.h>

struct filter_list;

/* The growing list of module-relative paths the server will use. */
struct path_list {
	char **v;
	size_t n, cap;
};

/* Most names one connection's wildcards may expand to. */
#define MODULE_GLOB_MAX_PATHS 100000

/* Append what `arg` (module-relative, already sanitized: no "..", no
 * leading '/') names beneath root_fd: each match of its wildcards, or
 * the argument itself when nothing matches or it has no wildcards (the
 * sender then reports "No such file" as rsync's does). Directories are
 * read through root_fd without following symlinks, a matched name must
 * resolve inside the module, and names the module's filters exclude
 * (daemon_filters may be NULL) do not match. Returns false when out of
 * memory or over MODULE_GLOB_MAX_PATHS, with errno set. */
bool module_glob(int root_fd, const struct filter_list *daemon_filters, const char *arg,
		 struct path_list *out);

void path_list_free(struct path_list *l);

#endif
