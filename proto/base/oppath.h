/*
 * Operator-supplied paths (--log-file, --*-dest, --backup-dir, --temp-dir,
 * --partial-dir, --files-from, --exclude-from, merge files, --password-file,
 * --early-input, batch files, the destination, and a daemon's lock file,
 * secrets file, module path and "exclude from"): unlike names from the
 * peer, these may lie anywhere and may pass through symlinks, but only
 * through symlinks whose owner we trust. Another user who can write to a
 * directory on the way (/tmp/somedir/log) must not be able to redirect
 * the open with a link of their own (rsync 3.5.0, CVE-2026-53802/-53803).
 *
 * The walk goes one component at a time with O_NOFOLLOW; a symlink is
 * followed only when it is owned by root or by the effective uid, else
 * the open fails with ELOOP. `how` holds OPPATH_* bits.
 */
#ifndef FERRY_OPPATH_H
#define FERRY_OPPATH_H

#include <stdbool.h>
#include <sys/types.h>

/* OPPATH_INSECURE restores plain open(2) semantics: --insecure-links on a
 * local command line, or a daemon module's "insecure links = yes"; never
 * a client's flag on a daemon. It is 1, so that bool may be passed as is. */
#define OPPATH_INSECURE 1u
/* No OPPATH_REFUSED_HINT on stderr: a daemon's stderr is not the user's. */
#define OPPATH_QUIET 2u
/* The walk stays inside the tree of atfd (see oppath_open_in). */
#define OPPATH_CONFINE 4u
/* Confined only: a link is followed whoever owns it, the module's tree
 * being the boundary (a daemon sender's -L/-k, as rsync's). */
#define OPPATH_ANY_OWNER 8u

/* Confined only: the walk may start outside the root (oppath_*_under). */
#define OPPATH_START_OUTSIDE 16u
/* A path rrsync pinned as /proc/self/fd/N/... or /dev/fd/N/... is walked
 * through /proc/PID, as a user namespace owns those links by the overflow
 * uid (under --confine-root: the oppath_*_under calls imply it). */
#define OPPATH_FD_PINS 32u

/* A --confine-root that could not be opened: oppath_*_under refuse all. */
#define OPPATH_ROOT_MISSING (-2)

/* The line rsync 3.5.0 prints when it refuses such a link. */
#define OPPATH_REFUSED_HINT                                                        \
	"refusing to follow a symlink owned by an untrusted user; use "            \
	"--insecure-links locally or \"insecure links = yes\" in a daemon module " \
	"ONLY if every path component is trusted"

/* Open `path` (absolute, or relative to atfd, which may be AT_FDCWD) with
 * open(2)'s flags and mode, following only trusted symlinks on the way and
 * at the leaf. The leaf may be created (O_CREAT) but never through a link.
 * Returns the fd (O_CLOEXEC), or -1 with errno: ELOOP for an untrusted
 * link (after printing OPPATH_REFUSED_HINT on stderr unless OPPATH_QUIET),
 * as open(2) else. */
int oppath_open(int atfd, const char *path, int flags, mode_t mode, unsigned how);

/* Open the directory that holds path's last component (walked as above)
 * and point *leaf at that component inside path (with any trailing
 * slashes, which *at() calls on a directory accept; "." for "/"). The
 * leaf itself is not looked at: use it with a call that does not follow
 * it. Returns an O_DIRECTORY fd or -1 with errno. */
int oppath_open_parent(int atfd, const char *path, const char **leaf, unsigned how);

/* Create the directory `path` and every missing one above it (mkdir -p)
 * through the same walk, then open it O_DIRECTORY. *created is set when
 * the last component was made here. Returns the fd or -1 with errno. */
int oppath_mkdirs(int atfd, const char *path, mode_t mode, unsigned how, bool *created);

/* The same three, for a path inside a daemon module whose root is rootfd
 * ("/x" and "x" both name rootfd's x, as rsync's sanitize_path makes
 * them): a trusted symlink is followed while what it leads to stays in
 * the root's tree, a relative or an absolute one alike; a walk that would
 * leave it (".." at the root, a link to a name outside) fails with ELOOP,
 * and no directory is made outside it. With OPPATH_INSECURE (the module's
 * "insecure links") every link is followed, as open(2) would. */
int oppath_open_in(int rootfd, const char *path, int flags, mode_t mode, unsigned how);
int oppath_open_parent_in(int rootfd, const char *path, const char **leaf, unsigned how);
int oppath_mkdirs_in(int rootfd, const char *path, mode_t mode, unsigned how, bool *created);

/* Open path relative to atfd, a directory inside rootfd's tree (the
 * directory of a daemon sender's argument), under the confinement of
 * oppath_open_in: a link may climb out of atfd as long as it stays in
 * the root's tree. */
int oppath_open_from(int rootfd, int atfd, const char *path, int flags, unsigned how);

/* --confine-root=DIR (rootfd, -1 for none, or OPPATH_ROOT_MISSING, which
 * refuses every path with ELOOP): the three of
 * oppath_open, for a name relative to atfd (which may be AT_FDCWD or lie
 * outside the root) or absolute, that must end inside rootfd's tree. The
 * walk may pass through the root's ancestors on the way in; ".." out of
 * the root, a link to a name outside, or a final directory outside fail
 * with ELOOP, and no directory is made outside. */
int oppath_open_under(int rootfd, int atfd, const char *path, int flags, mode_t mode,
		      unsigned how);
int oppath_open_parent_under(int rootfd, int atfd, const char *path, const char **leaf,
			     unsigned how);
int oppath_mkdirs_under(int rootfd, int atfd, const char *path, mode_t mode, unsigned how,
			bool *created);

/* Is this stat of a symlink one an operator path may pass through? */
bool oppath_link_trusted(uid_t link_owner);

#endif
