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

#include "proto/acls.h"
#include "proto/fakesuper.h"
#include "proto/logfmt.h"
#include "proto/msg.h"
#include "proto/progress.h"
#include "proto/outfilter.h"
#include "proto/recvside.h"
#include "proto/tempfile.h"

static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;

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
		return diff != 0 || (uint32_t)st->st_mtim.tv_nsec != f->mtime_nsec;
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

	if (rc->solo_name || !slash)
		snprintf(name, sizeof name, "%s", leaf);
	else
		snprintf(name, sizeof name, "%.*s/%s", (int)(slash - path), path, leaf);
	msg_full_name(rc->s, recv_dest_dir(rc, dest, sizeof dest), name, full, sizeof full);
	msg_syserr(rc->s, MC_ERROR_XFER, role, e, what_failed ? "%s %s failed" : "%s %s", what,
		   full);
}

static int set_attrs(struct recv_ctx *rc, const char *role, int dirfd, const char *leaf,
		     const struct file_entry *f, const struct stat *st, bool set_times)
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
		if (fstatat(dirfd, leaf, &now, AT_SYMLINK_NOFOLLOW) < 0) {
			attr_error(rc, role, f, leaf, "stat", true);
			return -1;
		}
		fake_stat(rc->s, dirfd, leaf, leaf, &now);
		st = &now;
	}
	bool change_uid = o->owner && rc->s->am_root && st->st_uid != f->uid;
	bool change_gid = o->group && !(f->flags & FE_SKIP_GROUP) && st->st_gid != f->gid;
	bool fake = rc->s->fake_super;
	if (fake) {
		/* --fake-super: owner, set-id bits and device numbers go to
		 * the xattr, before the times (rsync.c: set_file_attrs) */
		if (!fake_stat_store(rc->s, dirfd, leaf, leaf, f, f->mode))
			rc->s->got_xfer_error = true;
		changed |= (change_uid ? ITEM_REPORT_OWNER : 0) | (change_gid ? ITEM_REPORT_GROUP : 0);
	} else if (change_uid || change_gid) {
		if (fchownat(dirfd, leaf, change_uid ? f->uid : (uid_t)-1,
			     change_gid ? f->gid : (gid_t)-1, AT_SYMLINK_NOFOLLOW) < 0) {
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
				       (uint32_t)st->st_mtim.tv_nsec != f->mtime_nsec
			     : recv_mtime_differs(o, st, f);
	if (keep_time && differs) {
		if (fs_set_mtime(dirfd, leaf, f->mtime, f->mtime_nsec) < 0) {
			if (!S_ISLNK(f->mode)) {
				attr_error(rc, role, f, leaf, "failed to set times on", false);
			}
		} else {
			changed |= ITEM_REPORT_TIME;
		}
	}
	/* -U (rsync.c: set_file_attrs): not for directories or links */
	if (set_times && o->atimes && !S_ISDIR(f->mode) && !S_ISLNK(f->mode) &&
	    (exact || st->st_atim.tv_sec != f->atime || st->st_atim.tv_nsec != 0)) {
		if (fs_set_atime(dirfd, leaf, f->atime) < 0) {
			attr_error(rc, role, f, leaf, "failed to set access time on", false);
		} else if (st->st_atim.tv_sec != f->atime) {
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
		} else if (fchmodat(dirfd, leaf, f->mode & 07777, 0) < 0) {
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
	return set_attrs(rc, "generator", dirfd, leaf, f, st, set_times);
}

int apply_attrs_recv(struct recv_ctx *rc, int dirfd, const char *leaf,
		     const struct file_entry *f, const struct stat *st, bool set_times)
{
	return set_attrs(rc, "receiver", dirfd, leaf, f, st, set_times);
}

/* The format of our item lines, as rsync picks it (options.c). */
/* Does the format use one of the escapes in `which` (with any flags or
 * width)? (log.c: log_format_has) */
static bool format_has(const char *fmt, const char *which)
{
	for (; *which; which++)
		if (log_format_has(fmt, *which))
			return true;
	return false;
}

static bool format_has_io(const char *fmt)
{
	return format_has(fmt, "io");
}

/* With %b, %c or %C in the output format a transferred file's line waits
 * for the end of its transfer (options.c: log_before_transfer off). */
static bool logs_after_transfer(const struct ferry_opts *o)
{
	return o->out_format && format_has(o->out_format, "bcC");
}

static const char *item_format(const struct ferry_opts *o)
{
	if (o->out_format)
		return o->out_format;
	if (o->itemize)
		return "%i %n%L";
	/* --progress names each file even without -v (options.c) */
	if (info_ge(o, INFO_NAME, 1) || o->progress)
		return "%n%L";
	return NULL;
}

/* Is an untransferred item worth a line (log.c: maybe_log_item)? */
static bool item_visible(const struct ferry_opts *o, const struct file_entry *f, int iflags,
			 const char *xname, bool has_i, int itemize)
{
	int significant = iflags & SIGNIFICANT_ITEM_FLAGS & 0xffff;

	if (iflags & ITEM_TRANSFER)
		return true;
	bool see = has_i && (significant || (xname && *xname) || itemize > 1 ||
			     (info_ge(o, INFO_NAME, 2) && has_i));
	bool local_change = (iflags & ITEM_LOCAL_CHANGE) && significant;
	return see || local_change || (xname && *xname) || (S_ISDIR(f->mode) && significant);
}

/* A line for the daemon's transfer log, with the connection's escapes. */
static void daemon_log_line(struct session *s, const char *fmt, struct log_item *it)
{
	char line[MAXPATHLEN_WIRE * 3];
	const struct log_item *who = s->xfer_log_who;

	it->module = who->module;
	it->module_path = who->module_path;
	it->host = who->host;
	it->addr = who->addr;
	it->user = who->user;
	log_format(fmt, it, line, sizeof line);
	s->xfer_log_line(s->xfer_log_ctx, line);
}

/* Does the daemon's transfer log take this item (log.c: log_item for a
 * transfer, once its facts are known; maybe_log_item on a server for the
 * rest: only when the format itemizes and the item changed)? */
static bool daemon_logs_item(const struct session *s, int iflags, const char *xname, bool after)
{
	if (!s->xfer_log_format || !s->xfer_log_line)
		return false;
	if (iflags & ITEM_TRANSFER)
		return after;
	return !after && !s->opts->dry_run && format_has(s->xfer_log_format, "i") &&
	       ((iflags & SIGNIFICANT_ITEM_FLAGS & 0xffff) || (xname && *xname));
}

static void log_item_with(struct session *s, const struct file_entry *f, int iflags,
			  const char *xname, const char *name_override,
			  const struct xfer_facts *x)
{
	const struct ferry_opts *o = s->opts;
	const char *fmt = item_format(o);
	const char *log_fmt = o->log_file_format ? o->log_file_format : "%i %n%L";
	char name[MAXPATHLEN_WIRE * 2], line[MAXPATHLEN_WIRE * 3];

	bool to_daemon_log = s->am_server && daemon_logs_item(s, iflags, xname, x != NULL);
	if (s->am_server && !to_daemon_log)
		return;
	bool after = (iflags & ITEM_TRANSFER) && logs_after_transfer(o);
	bool to_json = !s->am_server && !x && o->json && item_visible(o, f, iflags, xname, true, 1);
	bool to_stdout = !o->json && fmt && after == (x != NULL) &&
			 item_visible(o, f, iflags, xname, log_format_has(fmt, 'i'), o->itemize);
	bool to_log = !x && s->log_fp && item_visible(o, f, iflags, xname, true, 1);
	/* a line that waits for the transfer: --progress shows the name
	 * above its meter meanwhile (receiver.c: "%s\n" when
	 * !log_before_transfer and INFO_EQ(PROGRESS, 1)) */
	bool bare_name = after && !x && !o->json && info_ge(o, INFO_NAME, 1) &&
			 o->info_level[INFO_PROGRESS] == 1;
	if (!to_daemon_log && !to_stdout && !to_log && !to_json && !bare_name)
		return;
	if (name_override)
		snprintf(name, sizeof name, "%s", name_override);
	else if (!flist_path(f, name, sizeof name))
		return;
	struct log_item it = {
		.file = f,
		.name = name,
		.iflags = iflags,
		.xname = xname,
		.sending = s->am_sender,
		.dir = s->am_sender ? s->log_dir : NULL,
		.local = s->local_copy,
		.human = o->human,
		.preserve_times = o->times,
		.preserve_uid = o->owner,
		.preserve_gid = o->group,
		.sum_type = s->xfer_csum,
		.sum_len = (int)csum_len(s->xfer_csum),
	};
	/* %C: with -c every file's listed sum, else the sum of a transfer
	 * (log.c: log_formatted) */
	if (o->checksum && S_ISREG(f->mode) && f->sum) {
		it.sum = f->sum;
		it.sum_type = s->flist_csum;
		it.sum_len = (int)csum_len(s->flist_csum);
	} else if (x && x->sum) {
		it.sum = x->sum;
	}
	if (x) {
		it.bytes_xferred = x->bytes;
		it.checksum_bytes = x->checksum_bytes;
	}
	if (to_daemon_log) {
		daemon_log_line(s, s->xfer_log_format, &it);
		return;
	}
	if (to_log) {
		log_format(log_fmt, &it, line, sizeof line);
		logfile_write(s, "%s", line);
	}
	if (to_json) {
		log_format("%i", &it, line, sizeof line);
		pthread_mutex_lock(&print_lock);
		progress_json_item(s, name, line, f->size);
		pthread_mutex_unlock(&print_lock);
	}
	if (!to_stdout) {
		if (bare_name) {
			pthread_mutex_lock(&print_lock);
			out_filtered(s->info, name, o->eight_bit_output, '\n');
			fflush(s->info);
			pthread_mutex_unlock(&print_lock);
		}
		return;
	}
	log_format(fmt, &it, line, sizeof line);
	pthread_mutex_lock(&print_lock);
	out_filtered(s->info, line, o->eight_bit_output, '\n');
	fflush(s->info);
	pthread_mutex_unlock(&print_lock);
}

void session_log_item(struct session *s, const struct file_entry *f, int iflags,
		      const char *xname, const char *name_override)
{
	log_item_with(s, f, iflags, xname, name_override, NULL);
}

void session_log_transferred(struct session *s, const struct file_entry *f, int iflags,
			     const char *name_override, const struct xfer_facts *x)
{
	log_item_with(s, f, iflags, NULL, name_override, x);
}

void recv_log_item(struct recv_ctx *rc, const struct file_entry *f, int iflags, const char *xname)
{
	session_log_item(rc->s, f, iflags, xname,
			 rc->solo_name && S_ISREG(f->mode) ? f->basename : NULL);
}


void session_log_delete(struct session *s, const char *path, mode_t mode)
{
	const struct ferry_opts *o = s->opts;
	const char *fmt = item_format(o);
	char line[MAXPATHLEN_WIRE * 3];

	struct log_item it = {
		.name = path,
		.mode = mode,
		.iflags = ITEM_DELETED,
		.deleting = true,
		.human = o->human,
		.preserve_times = o->times,
		.preserve_uid = o->owner,
		.preserve_gid = o->group,
		.sum_type = s->xfer_csum,
		.sum_len = (int)csum_len(s->xfer_csum),
	};
	/* a daemon's transfer log names them (log.c: log_delete) */
	if (s->am_server && s->xfer_log_format && s->xfer_log_line && !o->dry_run) {
		const char *dfmt = s->xfer_log_format;
		daemon_log_line(s, format_has_io(dfmt) ? dfmt : "deleting %n", &it);
	}
	/* the receiver logs deletions to --log-file, in a local copy too */
	if (s->log_fp && (!s->am_server || s->local_copy)) {
		const char *log_fmt = o->log_file_format ? o->log_file_format : "%i %n%L";
		log_format(format_has_io(log_fmt) ? log_fmt : "deleting %n", &it, line, sizeof line);
		logfile_write(s, "%s", line);
	}
	if (o->json && !s->am_server) {
		pthread_mutex_lock(&print_lock);
		progress_json_item(s, path, "*deleting", 0);
		pthread_mutex_unlock(&print_lock);
		return;
	}
	/* log.c: log_delete: at --info=del (-v), or whenever an output
	 * format is set */
	if (s->am_server || (!fmt && !info_ge(o, INFO_DEL, 1)))
		return;
	if (!fmt || !format_has_io(fmt))
		fmt = "deleting %n";
	log_format(fmt, &it, line, sizeof line);
	pthread_mutex_lock(&print_lock);
	out_filtered(s->info, line, o->eight_bit_output, '\n');
	fflush(s->info);
	pthread_mutex_unlock(&print_lock);
}
