/*
 * --fake-super: privileged attributes in user.rsync.%stat (fakesuper.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "proto/meta/fakesuper.h"
#include "proto/base/fileio.h"

#define STAT_VALUE_MAX 256 /* rsync reads the value into a 256-byte buffer */

static bool is_device(mode_t m)
{
	return S_ISCHR(m) || S_ISBLK(m);
}

static bool is_special(mode_t m)
{
	return S_ISFIFO(m) || S_ISSOCK(m);
}

/* The recorded attributes: true and *rec filled when there is a valid
 * value; false with *corrupt set when there is one we cannot read. */
static bool read_record(const char *path, struct stat *rec, char *raw, size_t rawsize,
			bool *corrupt)
{
	unsigned int mode, major_no, minor_no, uid, gid;
	char tail;
	ssize_t len = lgetxattr(path, FAKE_STAT_XATTR, raw, rawsize - 1);

	*corrupt = false;
	if (len < 0) {
		if (errno == ERANGE)
			*corrupt = true;
		return false;
	}
	raw[len] = '\0';
	if (sscanf(raw, "%o %u,%u %u:%u%c", &mode, &major_no, &minor_no, &uid, &gid, &tail) != 5 ||
	    (mode & S_IFMT) == 0) {
		*corrupt = true;
		return false;
	}
	rec->st_mode = mode;
	rec->st_rdev = makedev(major_no, minor_no);
	rec->st_uid = uid;
	rec->st_gid = gid;
	return true;
}

bool fake_stat(struct session *s, int dirfd, const char *leaf, const char *shown,
	       struct stat *st)
{
	char path[4200], raw[STAT_VALUE_MAX];
	struct stat rec;
	bool corrupt;

	if (!s->fake_super || is_device(st->st_mode) || is_special(st->st_mode))
		return true;
	if (!fs_proc_path(path, sizeof path, dirfd, leaf))
		return true;
	if (read_record(path, &rec, raw, sizeof raw, &corrupt)) {
		st->st_mode = rec.st_mode;
		st->st_rdev = rec.st_rdev;
		st->st_uid = rec.st_uid;
		st->st_gid = rec.st_gid;
		return true;
	}
	if (corrupt) {
		session_xfer_err(s, "Corrupt %s xattr attached to %s: \"%s\"", FAKE_STAT_XATTR,
				 shown, raw);
		return false;
	}
	return true;
}

ssize_t fake_readlink(int dirfd, const char *leaf, char *buf, size_t size)
{
	int fd = openat(dirfd, leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return errno == ELOOP ? readlinkat(dirfd, leaf, buf, size) : -1;
	ssize_t n = read(fd, buf, size);
	close(fd);
	return n;
}

int fake_placeholder(int dirfd, const char *leaf, const char *target)
{
	int fd = openat(dirfd, leaf, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0)
		return -1;
	size_t len = target ? strlen(target) : 0;
	bool ok = !len || write(fd, target, len) == (ssize_t)len;
	int saved = errno;
	if (close(fd) < 0)
		ok = false;
	else
		errno = saved;
	return ok ? 0 : -1;
}

/* The real mode an entry of new_mode gets on disk: its permission bits
 * less the set-id and sticky bits, readable and writable by us (and
 * searchable when a directory), on the inode's own type. */
static mode_t inode_mode(mode_t real, mode_t new_mode)
{
	return (real & S_IFMT) | (new_mode & 0777) | (S_ISDIR(real) ? 0700 : 0600);
}

bool fake_stat_store(struct session *s, int dirfd, const char *leaf, const char *shown,
		     const struct file_entry *f, uint32_t new_mode)
{
	const struct ferry_opts *o = s->opts;
	char path[4200], raw[STAT_VALUE_MAX];
	struct stat real, rec;
	bool corrupt;

	if (o->dry_run)
		return true;
	if (fstatat(dirfd, leaf, &real, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !fs_proc_path(path, sizeof path, dirfd, leaf)) {
		session_xfer_err(s, "failed to re-stat %s: %s", shown, strerror(errno));
		return false;
	}
	bool recorded = read_record(path, &rec, raw, sizeof raw, &corrupt);
	mode_t fmode = new_mode & (S_IFMT | 07777);
	mode_t want = inode_mode(real.st_mode, fmode);
	dev_t rdev = is_device(fmode) ? makedev(fe_rdev_major(f), fe_rdev_minor(f)) : 0;
	/* Without -o/-g there is nothing to record about the owner. */
	uid_t uid = o->owner ? fe_uid(f) : real.st_uid;
	gid_t gid = o->group ? fe_gid(f) : real.st_gid;

	if (!S_ISLNK(real.st_mode) && (real.st_mode & (S_IFMT | 07777)) != want &&
	    fchmodat(dirfd, leaf, want & 07777, 0) < 0) {
		session_xfer_err(s, "failed to set permissions on %s: %s (%d)", shown,
				 strerror(errno), errno);
		return false;
	}
	if (!is_device(real.st_mode))
		real.st_rdev = 0;
	if (want == fmode && real.st_rdev == rdev && real.st_uid == uid && real.st_gid == gid) {
		/* the inode says it all: no record, or a stale one to drop */
		if ((recorded || corrupt) && lremovexattr(path, FAKE_STAT_XATTR) < 0) {
			session_xfer_err(s, "delete of stat xattr failed for %s: %s", shown,
					 strerror(errno));
			return false;
		}
		return true;
	}
	if (recorded && rec.st_mode == fmode && rec.st_rdev == rdev && rec.st_uid == uid &&
	    rec.st_gid == gid)
		return true;
	int len = snprintf(raw, sizeof raw, "%o %u,%u %u:%u", (unsigned)fmode,
			   (unsigned)major(rdev), (unsigned)minor(rdev), (unsigned)uid,
			   (unsigned)gid);
	if (lsetxattr(path, FAKE_STAT_XATTR, raw, (size_t)len, 0) < 0) {
		if (errno == EPERM && S_ISLNK(real.st_mode))
			return true; /* Linux keeps no user.* xattrs on a symlink */
		session_xfer_err(s, "failed to write xattr %s for %s: %s", FAKE_STAT_XATTR, shown,
				 strerror(errno));
		return false;
	}
	return true;
}
