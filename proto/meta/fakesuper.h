/*
 * --fake-super (and a daemon's "fake super = yes"): privileged attributes
 * kept in the user.rsync.%stat xattr instead of on the inode, in rsync's
 * format "%o %u,%u %u:%u" (full mode, rdev major,minor, uid:gid), so a
 * non-root receiver can hold owners, set-id bits, devices, specials and
 * symlinks, and a sender reading with --fake-super gives them back.
 * mirrors rsync xattrs.c: get_stat_xattr(), set_stat_xattr() and the
 * am_root < 0 branches of syscall.c (do_mknod, do_symlink, do_readlink).
 */
#ifndef FERRY_FAKESUPER_H
#define FERRY_FAKESUPER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "proto/core/flist.h"
#include "proto/core/session.h"

#define FAKE_STAT_XATTR "user.rsync.%stat"

/* Fold what user.rsync.%stat on dirfd/leaf records into *st (mode with
 * its type, rdev, uid, gid), when s runs with --fake-super and the entry
 * is not itself a device or special. A missing xattr leaves *st as it is.
 * A corrupt one is reported (naming shown) and leaves *st alone: false. */
bool fake_stat(struct session *s, int dirfd, const char *leaf, const char *shown,
	       struct stat *st);

/* A symlink's target under --fake-super: the content of the regular file
 * that stands for it, or a real symlink's own target. Like readlinkat(). */
ssize_t fake_readlink(int dirfd, const char *leaf, char *buf, size_t size);

/* Create the regular, mode-0600 file that stands for a device or special
 * (empty) or a symlink (holding target; NULL for none) at dirfd/leaf,
 * refusing to follow a symlink there. 0, or -1 with errno. */
int fake_placeholder(int dirfd, const char *leaf, const char *target);

/* Record entry f's privileged attributes on dirfd/leaf (set_stat_xattr):
 * the real mode keeps only the permission bits (owner rw, and x on a
 * directory), and the xattr holds the rest -- or is removed when the
 * inode already says it all. new_mode is the mode f should get. False
 * after reporting a failure. */
bool fake_stat_store(struct session *s, int dirfd, const char *leaf, const char *shown,
		     const struct file_entry *f, uint32_t new_mode);

#endif
