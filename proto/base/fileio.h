/*
 * The confined file layer: every path the engine touches is resolved
 * beneath a root directory fd, one component at a time, with O_NOFOLLOW, so
 * no name from the peer (and no symlink planted in the tree) can lead
 * outside the root. Path strings are never re-resolved from "/".
 */
#ifndef FERRY_FILEIO_H
#define FERRY_FILEIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

struct dirent;

#define DIR_CURSOR_DEPTH 32

/* A cache of the last directory opened, for runs of entries in one dir.
 * It keeps the directories leading to it open, so that moving to a
 * sibling or a child opens one component, not the whole path again. */
struct dir_cursor {
	int rootfd;
	char path[4096];   /* relative dir path of fd ("" = root) */
	int fd;            /* -1 when nothing is cached */
	bool follow;       /* -K: directory symlinks are followed ... */
	bool beneath;      /* ... but never out of rootfd (a daemon module) */
	int depth;         /* components of path held open in held[]; 0: fd
			    * (if not rootfd) was opened on its own */
	int held[DIR_CURSOR_DEPTH];
};

void dir_cursor_init(struct dir_cursor *c, int rootfd);
void dir_cursor_reset(struct dir_cursor *c);
void dir_cursor_close(struct dir_cursor *c);

/* Open (or reuse) the directory `dir` beneath the root (NULL or "" = the
 * root itself). Returns an fd owned by the cursor, or -1 with errno set
 * (ELOOP/ENOTDIR when a component is a symlink or not a directory). */
int dir_cursor_open(struct dir_cursor *c, const char *dir);

/* Open the directory containing relpath and point *leaf at its last
 * component. Returns a cursor-owned fd or -1 with errno. relpath must be
 * relative with no ".." component (EINVAL otherwise). */
int dir_cursor_parent(struct dir_cursor *c, const char *relpath, const char **leaf);

/* A directory read with getdents64 into one buffer of its own: unlike
 * fdopendir, no fstat and fcntl calls (a syscall each) per directory. */
struct dir_reader {
	int fd;
	char *buf;
	size_t pos, len;
};

/* Open the directory dirfd for reading from its start (an fd of its own).
 * 0, or -1 with errno. */
int dir_reader_open(struct dir_reader *r, int dirfd);
/* The next entry, "." and ".." left out; NULL at the end or on an error. */
const struct dirent *dir_reader_next(struct dir_reader *r);
void dir_reader_close(struct dir_reader *r);

/* Is a relative path safe to resolve: not absolute, no "..", no empty
 * component? */
bool fs_path_is_safe(const char *relpath);

/* Create a unique temporary file ".leaf.XXXXXX" in dirfd for writing;
 * the chosen name is written into tmpname. Returns fd or -1. */
int fs_create_temp(int dirfd, const char *leaf, char *tmpname, size_t tmpsize);

/* Remove a directory tree beneath dirfd (never following symlinks).
 * Returns 0 or -1 with errno. */
int fs_remove_tree(int dirfd, const char *leaf);

/* Remove whatever is at leaf (a file, link, or with recursive a tree). */
int fs_remove_any(int dirfd, const char *leaf, bool recursive);

/* Create the destination root directory if it does not exist (only its last
 * component, like rsync; with mkpath all missing components). The path is
 * the operator's (oppath.h: no other user's symlink is followed; insecure
 * is --insecure-links). Returns an O_DIRECTORY fd or -1 with errno. */
int fs_open_root(const char *path, bool create, bool mkpath, bool insecure);

/* --mkpath on a server: create every missing directory of relpath under
 * rootfd, following no symlink and refusing "..". 0, or -1 with errno. */
int fs_mkpath_at(int rootfd, const char *relpath);

/* openat() for reading a source file; --open-noatime adds O_NOATIME when
 * the kernel lets us (files we do not own: without it). */
int fs_open_source(int dirfd, const char *name, int flags, bool noatime);

/* -S: write buf at the current offset, seeking over 4 KiB runs of zeros
 * (and, when punch, punching them out of the blocks already there: a
 * preallocated file, or one updated in place; zeros are written where no
 * hole can be made). The caller sets the final size with ftruncate. */
bool fs_write_sparse(int fd, const void *buf, size_t len, bool punch);
/* -S --inplace: buf is what already lies at the current offset; its runs
 * of zeros become holes where the file system makes them, and the offset
 * moves past it. */
bool fs_sparse_in_place(int fd, const void *buf, size_t len);

/* rsync's unsafe_symlink(): does a link at path (relative to the transfer)
 * with this target point outside the transfer (absolute, or climbing
 * above its top with "..")? */
bool fs_symlink_unsafe(const char *target, const char *path);

/* openat2(RESOLVE_BENEATH): open relpath under rootfd following symlinks,
 * but never out of rootfd's tree. -1 with errno (EXDEV on an escape). */
int fs_open_beneath(int rootfd, const char *relpath, int flags);

/* Move a regular file where rename(2) cannot (EXDEV): copy its data and
 * permissions, then unlink the original. 0, or -1 with errno. */
int fs_copy_then_unlink(int from_dir, const char *from, int to_dir, const char *to);

/* Copy len bytes (len < 0: up to EOF) from in -- at *in_off, advanced, or
 * at its file offset when in_off is NULL -- to out at its file offset,
 * with copy_file_range(2) (a clone on btrfs/xfs, an in-kernel copy on
 * ext4) and plain reads and writes where the kernel cannot do it between
 * these files. Returns the bytes copied (short at EOF) or -1 with errno. */
int64_t fs_copy_range(int in, off_t *in_off, int out, int64_t len);

/* Where the kernel shows the files this process holds open. */
#define FS_PROC_FD_DIR "/proc/self/fd/"

/* "/proc/self/fd/DIRFD/LEAF" into buf: a path the *xattr and ACL calls
 * resolve through the directory fd we hold, so only the last component is
 * looked up by name (and the l* variants do not follow it). With dirfd < 0,
 * leaf itself; with leaf NULL, "/proc/self/fd/DIRFD", the directory (what
 * realpath() names it by, or a name to read files in it by). False when it
 * does not fit in size. */
bool fs_proc_path(char *buf, size_t size, int dirfd, const char *leaf);

/* Read exactly len bytes at offset (short only at EOF): returns bytes read
 * or -1. */
ssize_t fs_pread_full(int fd, void *buf, size_t len, off_t off);

/* The size of an open block or character device (its st_size is 0): where
 * seeking to the end lands, the offset put back to 0 (mirrors rsync
 * flist.c: get_device_size). 0 when the device cannot seek. */
int64_t fs_device_size(int fd);

/* Set the modification time (with nanoseconds) without following a
 * symlink. */
/* -U: set only the access time (whole seconds, as rsync sends them). */
int fs_set_atime(int dirfd, const char *leaf, int64_t sec);
int fs_set_mtime(int dirfd, const char *leaf, int64_t sec, uint32_t nsec);

#endif
