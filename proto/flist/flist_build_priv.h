/*
 * What the sender's file-list builder (proto/flist/flist_build.c, the walk) and
 * its arguments' side (proto/flist/flist_roots.c: -R, --files-from) share.
 */
#ifndef FERRY_PROTO_FLIST_BUILD_PRIV_H
#define FERRY_PROTO_FLIST_BUILD_PRIV_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "proto/core/flist.h"
#include "proto/flist/sendside.h"
#include "proto/core/session.h"

struct walker {
	struct session *s;
	const struct walk_opts *w;
	struct send_list *sl;
	uint32_t root;
	dev_t top_dev;  /* -x: the file system of the current source argument */
	int base_fd;    /* names are relative to this: w->root_fd, or the
			 * --files-from source directory */
	struct { dev_t dev; ino_t ino; } above[128]; /* dirs being walked: no loops */
	int nabove;
	char err[512];
	/* -R (flist.c: send_file_list's statics) */
	char **root_names;     /* the "/./" dir of each root, "" = base */
	size_t nroot_names;
	char lastpath[MAXPATHLEN_WIRE]; /* the last implied dirs sent */
	int implied_dot;       /* rsync's implied_dot_dir: 0, -1 due, 1 sent */
	bool defer_stat;       /* regular files are stat'ed as their part is
				* sent (flist_stat_deferred) */
	bool lazy_ok;          /* the lazy walk may be used (can_walk_lazily) */
	bool lazy;             /* list one level: subdirectories are read when
				* their own part is sent (flist_read_dir) */
	const char *lazy_root; /* the source directory a lazy walk is under,
				* relative to the module (NULL: see sl->roots) */
	const char *base_name; /* the --files-from source directory, as named */
	uint8_t *sum_buf;      /* -c: file_sum's read buffer (SUM_BUF_SIZE),
				* made at its first use, freed with the walker */
};

#define SUM_BUF_SIZE (256 * 1024)

/* rsync's rsyserr() as the sender: "[sender] WHAT "/full/name" failed";
 * dir is what name is relative to (NULL: the working directory). */
void walk_io_error_in(struct walker *k, int bit, const char *what, const char *dir,
			const char *name);

/* Open the directory base (relative to the walk's base), -1 on error. */
int walk_open_base(struct walker *k, const char *base);

/* A source directory, fd and path (the sender's %f starts with it). */
bool walk_add_roots(struct walker *k, int fd, const char *path);

/* Open a directory below `from` (a module root: one component at a time,
 * no symlinks; the user's own files: as the path says). */
int walk_open_dir_at(struct walker *k, int from, const char *dir);

/* The same about a name below the current source directory. */
void walk_io_error(struct walker *k, int bit, const char *what, const char *name);

/* Append an entry for path (relative to the root) with the given stat. */
struct file_entry *walk_add_entry(struct walker *k, const char *path, const struct stat *given,
				    int dirfd, const char *leaf);

/* Is the directory on fd one we are already inside (a followed link
 * leading back up)? Otherwise remember it while its contents are walked. */
bool walk_enter_dir(struct walker *k, int fd);

/* Send a directory's entries, then recurse into its subdirectories, like
 * rsync's send_directory(). */
bool walk_dir(struct walker *k, int dirfd, const char *relpath);

/* Whether path is excluded: by the daemon module's rules, then by the
 * transfer's filter list. */
bool walk_excluded(struct walker *k, const char *path, bool is_dir);

/* Whether any option makes the walk follow symlinks (-L,
 * --copy-unsafe-links, --copy-dirlinks). */
bool walk_following_links(const struct ferry_opts *o);

/* -L, --copy-unsafe-links, -k (flist.c: readlink_stat, link_stat): replace
 * a symlink's stat by its referent's when asked to. False: leave the entry
 * out (a link that must be followed but leads nowhere). */
bool walk_resolve_link(struct walker *k, int dirfd, const char *leaf, const char *path,
			 struct stat *st);

/* List one source argument (without -R): the entry, and below it when it
 * is a directory walked now. False on a fatal error (k->s->err set). */
bool walk_build_one(struct walker *k, const char *arg);

/* Can each directory be read only when its part is sent (the lazy walk,
 * flist_read_dir), not all up front? The whole-tree walk stays wherever
 * listing a directory depends on more than its path, the filters and
 * its own contents:
 *  - no incremental recursion (or no -r): one list, complete before it
 *    goes; walk_opts.defer_stat unset: the caller sends no parts;
 *  - -R and --files-from: implied dirs and "/./" roots are sent in the
 *    order of the names, across directories;
 *  - more than one source argument: two arguments may hold the same
 *    directory path, whose contents go in one part from two roots;
 *  - -H: hard-link leaders are chosen over the whole list
 *    (plan_hard_links);
 *  - -c: every file's sum is read while listing, kept out of the loop
 *    that answers the generator;
 *  - -L, --copy-unsafe-links, --copy-dirlinks, -k: a followed link may
 *    lead back up the tree; the loop check needs the walk's stack;
 *  - -x: the argument's device and the mount points on the way;
 *  - --fake-super and "ignore nonreadable": decided from data beyond
 *    the name and type (xattrs, access checks), as can_defer_stat;
 *  - per-directory merge files (dir-merge, -F, -C's .cvsignore): their
 *    rules are a stack of every directory above (filter_push_dir).
 * --delete and --delete-excluded change nothing here: the sender only
 * lists. */
bool can_walk_lazily(const struct walker *k, int nargs);

#endif
