/*
 * Setting the attributes of received entries (rsync.c: set_file_attrs)
 * and printing the receiving side's item lines (log.c: log_item,
 * maybe_log_item).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "proto/core/itemlog.h"
#include "proto/meta/acls.h"
#include "proto/meta/fakesuper.h"
#include "proto/core/logfmt.h"
#include "proto/core/msg.h"
#include "proto/core/progress.h"
#include "proto/base/outfilter.h"
#include "proto/recv/recvside.h"
#include "proto/recv/tempfile.h"

/* rsync's same_time() under --modify-window: 0 (the default) compares
 * whole seconds, a negative window nanoseconds too, a positive one allows
 * that many seconds of difference. */
bool recv_mtime_differs(const struct ferry_opts *o, const struct stat *st,
			const struct file_entry *f)
{
	int64_t diff = (int64_t)st->st_mtim.tv_sec - f->mtime;

	if (o->modify_window == 0)
		return diff != 0;
	if (o->modify_window < 0)
		return diff != 0 || (uint32_t)st->st_mtim.tv_nsec != fe_mtime_nsec(f);
	return diff > o->modify_window || diff < -o->modify_window;
}

/* rsync's rsyserr(FERROR_XFER) from set_file_attrs: "[ROLE] WHAT
 * "/full/name": ERR (N)" or, with what_failed, "[ROLE] WHAT "/full/name"
 * failed"; the name is the leaf being changed, beside the entry's path. */
static void attr_error(struct recv_ctx *rc, const char *role, const struct file_entry *f,
		       const char *leaf, const char *what, bool what_failed)
{
	int e = errno;
	char path[4096], name[8192], dest[4096], full[8192 + 600];
	const char *slash = flist_path(f, path, sizeof path) ? strrchr(path, '/') : NULL;

	if (rc->cfg.solo_name || !slash)
		snprintf(name, sizeof name, "%s", leaf);
	else
		snprintf(name, sizeof name, "%.*s/%s", (int)(slash - path), path, leaf);
	msg_full_name(rc->s, recv_dest_dir(&rc->cfg, dest, sizeof dest), name, full, sizeof full);
	msg_syserr(rc->s, MC_ERROR_XFER, role, e, what_failed ? "%s %s failed" : "%s %s", what,
		   full);
}

/* Times through fd where the entry is open, else by name. */
static int set_mtime(int dirfd, const char *leaf, int fd, int64_t sec, uint32_t nsec)
{
	const struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT},
				       {.tv_sec = (time_t)sec, .tv_nsec = (long)nsec}};

	return fd >= 0 ? futimens(fd, ts) : fs_set_mtime(dirfd, leaf, sec, nsec);
}

static int set_atime(int dirfd, const char *leaf, int fd, int64_t sec)
{
	const struct timespec ts[2] = {{.tv_sec = (time_t)sec}, {.tv_nsec = UTIME_OMIT}};

	return fd >= 0 ? futimens(fd, ts) : fs_set_atime(dirfd, leaf, sec);
}

/* st: the entry as it is, or NULL for one we just wrote. fd: that file,
 * still open, or -1: the owner, times and mode go through it (no path
 * lookups, and nothing put in the file's place meanwhile is touched);
 * ACLs and --fake-super's xattrs still go by name. */
static int set_attrs(struct recv_ctx *rc, const char *role, int dirfd, const char *leaf,
		     const struct file_entry *f, const struct stat *st, int fd, bool set_times)
{
	const struct ferry_opts *o = rc->s->opts;
	struct stat now;
	int changed = 0;

	/* A file we just wrote gets its exact time; an existing entry only
	 * when it differs by the --modify-window rule (set_file_attrs) --
	 * except a regular file that -c found up to date, which rsync also
	 * sets to the exact time (generator.c: maybe_ATTRS_ACCURATE_TIME).
	 * Below protocol 31 that drops the nanoseconds it keeps otherwise. */
	bool exact = !st || (o->checksum && S_ISREG(f->mode));
	if (!st) {
		int r = fd >= 0 ? fstat(fd, &now) : fstatat(dirfd, leaf, &now, AT_SYMLINK_NOFOLLOW);
		if (r < 0) {
			attr_error(rc, role, f, leaf, "stat", true);
			return -1;
		}
		fake_stat(rc->s, dirfd, leaf, leaf, &now);
		st = &now;
	}
	bool change_uid = o->owner && rc->s->am_root && st->st_uid != fe_uid(f);
	bool change_gid = o->group && !(f->flags & FE_SKIP_GROUP) && st->st_gid != fe_gid(f);
	bool fake = rc->s->fake_super;
	if (fake) {
		/* --fake-super: owner, set-id bits and device numbers go to
		 * the xattr, before the times (rsync.c: set_file_attrs) */
		if (!fake_stat_store(rc->s, dirfd, leaf, leaf, f, f->mode))
			rc->s->got_xfer_error = true;
		changed |= (change_uid ? ITEM_REPORT_OWNER : 0) | (change_gid ? ITEM_REPORT_GROUP : 0);
	} else if (change_uid || change_gid) {
		uid_t uid = change_uid ? fe_uid(f) : (uid_t)-1;
		gid_t gid = change_gid ? fe_gid(f) : (gid_t)-1;
		if ((fd >= 0 ? fchown(fd, uid, gid)
			     : fchownat(dirfd, leaf, uid, gid, AT_SYMLINK_NOFOLLOW)) < 0) {
			if (change_uid || errno != EPERM) {
				attr_error(rc, role, f, leaf, change_uid ? "chown" : "chgrp", true);
			}
		} else {
			changed |= (change_uid ? ITEM_REPORT_OWNER : 0) |
				   (change_gid ? ITEM_REPORT_GROUP : 0);
		}
	}
	bool keep_time = set_times && o->times && !(S_ISDIR(f->mode) && o->omit_dir_times) &&
			 !(S_ISLNK(f->mode) && o->omit_link_times);
	bool differs = exact ? st->st_mtim.tv_sec != f->mtime ||
				       (uint32_t)st->st_mtim.tv_nsec != fe_mtime_nsec(f)
			     : recv_mtime_differs(o, st, f);
	if (keep_time && differs) {
		if (set_mtime(dirfd, leaf, fd, f->mtime, fe_mtime_nsec(f)) < 0) {
			if (!S_ISLNK(f->mode)) {
				attr_error(rc, role, f, leaf, "failed to set times on", false);
			}
		} else {
			changed |= ITEM_REPORT_TIME;
		}
	}
	/* -U (rsync.c: set_file_attrs): not for directories or links */
	if (set_times && o->atimes && !S_ISDIR(f->mode) && !S_ISLNK(f->mode) &&
	    (exact || st->st_atim.tv_sec != fe_atime(f) || st->st_atim.tv_nsec != 0)) {
		if (set_atime(dirfd, leaf, fd, fe_atime(f)) < 0) {
			attr_error(rc, role, f, leaf, "failed to set access time on", false);
		} else if (st->st_atim.tv_sec != fe_atime(f)) {
			changed |= ITEM_REPORT_ATIME;
		}
	}
	/* -A: the access ACL carries the permission bits, so it goes before
	 * the mode, which it may change (rsync.c: set_file_attrs). */
	uint32_t cur_mode = st->st_mode;
	if (acl_apply(rc->s, dirfd, leaf, f, &cur_mode) > 0)
		changed |= ITEM_REPORT_ACL;
	/* chown may clear set-id bits, so the mode comes last. */
	/* Without -p the generator already chose the mode to keep (dest_mode). */
	if (!S_ISLNK(f->mode) && (cur_mode & 07777) != (f->mode & 07777)) {
		if (fake) {
			changed |= ITEM_REPORT_PERMS; /* recorded in the xattr above */
		} else if ((fd >= 0 ? fchmod(fd, f->mode & 07777)
				    : fchmodat(dirfd, leaf, f->mode & 07777, 0)) < 0) {
			attr_error(rc, role, f, leaf, "failed to set permissions on", false);
		} else {
			changed |= ITEM_REPORT_PERMS;
		}
	}
	return changed;
}

int apply_attrs(struct recv_ctx *rc, int dirfd, const char *leaf, const struct file_entry *f,
		const struct stat *st, bool set_times)
{
	return set_attrs(rc, "generator", dirfd, leaf, f, st, -1, set_times);
}

int apply_attrs_recv(struct recv_ctx *rc, int dirfd, const char *leaf,
		     const struct file_entry *f, const struct stat *st, bool set_times)
{
	return set_attrs(rc, "receiver", dirfd, leaf, f, st, -1, set_times);
}

int apply_attrs_written(struct recv_ctx *rc, int dirfd, const char *leaf, int fd,
			const struct file_entry *f)
{
	return set_attrs(rc, "receiver", dirfd, leaf, f, NULL, fd, true);
}

void recv_log_item(struct recv_ctx *rc, const struct file_entry *f, int iflags, const char *xname)
{
	session_log_item(rc->s, f, iflags, xname,
			 rc->cfg.solo_name && S_ISREG(f->mode) ? f->basename : NULL);
}
