/*
 * What the generator compares and reports: the attribute bits that differ
 * between an entry and what is on disk, the item line for it, and the
 * quick check (rsync generator.c: itemize, quick_check_ok,
 * unchanged_attrs).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "proto/recv/gen.h"

/* Attribute bits that differ between the entry and what is on disk
 * (generator.c: itemize, the statret >= 0 branch). */
int attr_change_bits_for(struct gen *g, const struct file_entry *f, const struct stat *st,
			 int intent)
{
	const struct ferry_opts *o = g->o;
	int iflags = 0;
	bool keep_time = o->times && !(S_ISDIR(f->mode) && o->omit_dir_times) &&
			 !(S_ISLNK(f->mode) && o->omit_link_times);

	if (S_ISREG(f->mode) && fe_size(f) != st->st_size)
		iflags |= ITEM_REPORT_SIZE;
	/* Where times are not kept, rewriting an entry changes its time,
	 * and rsync says so ('T'). */
	if (keep_time ? recv_mtime_differs(o, st, f) : (intent & (ITEM_TRANSFER | ITEM_LOCAL_CHANGE)) != 0)
		iflags |= ITEM_REPORT_TIME;
	if (!S_ISLNK(f->mode)) {
		if (o->perms) {
			if ((st->st_mode & 07777) != (f->mode & 07777))
				iflags |= ITEM_REPORT_PERMS;
		} else if (o->executability &&
			   (!!(st->st_mode & 0111) ^ !!(f->mode & 0111))) {
			iflags |= ITEM_REPORT_PERMS;
		}
	}
	if (o->owner && g->s->am_root && fe_uid(f) != st->st_uid)
		iflags |= ITEM_REPORT_OWNER;
	if (o->group && !(f->flags & FE_SKIP_GROUP) && fe_gid(f) != st->st_gid)
		iflags |= ITEM_REPORT_GROUP;
	if (o->atimes && !S_ISDIR(f->mode) && !S_ISLNK(f->mode) && st->st_atim.tv_sec != fe_atime(f))
		iflags |= ITEM_REPORT_ATIME;
	return iflags;
}

int attr_change_bits(struct gen *g, const struct file_entry *f, const struct stat *st)
{
	return attr_change_bits_for(g, f, st, 0);
}

/* -A/-X: the 'a' and 'x' item bits, comparing the entry with what is at
 * dirfd/leaf (dirfd < 0: nothing there yet). */
int meta_item_bits(struct gen *g, const struct file_entry *f, int dirfd, const char *leaf)
{
	if (!g->o->acls && !g->o->xattrs)
		return 0;
	int bits = xattr_item_bits(g->s, dirfd, leaf, f);
	if (dirfd >= 0)
		bits |= acl_item_bits(g->s, dirfd, leaf, f);
	return bits;
}

/* meta_item_bits() for an entry at its place in the destination. */
static int meta_item_bits_at_dest(struct gen *g, const struct file_entry *f, int iflags)
{
	char path[MAXPATHLEN_WIRE * 2];

	if (!g->o->acls && !g->o->xattrs)
		return 0;
	if ((iflags & ITEM_IS_NEW) || !flist_path(f, path, sizeof path))
		return meta_item_bits(g, f, -1, NULL);
	if (g->rc->cfg.solo_name && !S_ISDIR(f->mode))
		return meta_item_bits(g, f, g->rc->cfg.rootfd, g->rc->cfg.solo_name);
	return meta_item_bits(g, f, g->rc->cfg.rootfd, path);
}

/* A report-only record: sent to the sender for protocol >= 29 (which
 * echoes it to our receiver, who prints it in order), printed here before.
 * From 29 on it goes whether or not anyone shows it: the sender counts
 * the created directories, links and specials of --stats from these
 * records (generator.c: itemizing is set for every run then). */
bool report_item(struct gen *g, int32_t ndx, int iflags, const char *xname)
{
	struct session *s = g->s;
	const struct ferry_opts *o = g->o;
	const struct file_entry *f = g->rc->fl->sorted[ndx];
	iflags |= meta_item_bits_at_dest(g, f, iflags);
	bool want = (iflags & SIGNIFICANT_ITEM_FLAGS & 0xffff) || o->itemize > 1 ||
		    info_ge(o, INFO_NAME, 2) || (xname && *xname);
	/* An xattr request rides on the record, so it goes out regardless. */
	bool xattr_req = xattr_request_follows(s, iflags);

	bool shown = o->itemize || info_ge(o, INFO_NAME, 1) || o->out_format || o->progress ||
		     s->log_fp;
	if (!xattr_req && !want)
		return true;
	if (s->protocol < 29) {
		if (shown)
			recv_log_item(g->rc, g->rc->fl->sorted[ndx], iflags, xname);
		return true;
	}
	if (xname)
		iflags |= ITEM_XNAME_FOLLOWS;
	wire_out_lock(&s->out);
	bool ok = wire_write_ndx(&s->out, ndx) && wire_write_u16(&s->out, (uint16_t)iflags) &&
		  (!xname || wire_write_vstring(&s->out, xname)) && xattr_gen_request(s, f, iflags);
	wire_out_unlock(&s->out);
	return ok;
}

/* Does -vv name what needed nothing ("X is uptodate")? Only without an
 * itemizing format (generator.c: maybe_ATTRS_REPORT). */
bool says_uptodate(const struct gen *g)
{
	return info_ge(g->o, INFO_NAME, 2) && !g->o->itemize &&
	       !log_format_has(g->o->out_format, 'i');
}

/* rsync's rsyserr() as the generator: "[generator] " pre, the name as
 * full_fname() gives it (made absolute from our working directory through
 * the destination; in a daemon module as given), then post and errno. */
void file_error_at(struct gen *g, const char *pre, const char *name, const char *post)
{
	int e = errno;
	char full[PATH_MAX + 300], dest[4096];

	/* the receiver's curr_dir is the destination (main.c: get_local_name) */
	msg_full_name(g->s, recv_dest_dir(&g->rc->cfg, dest, sizeof dest), name, full, sizeof full);
	session_xfer_err(g->s, "[generator] %s%s%s: %s (%d)", pre, full, post, strerror(e), e);
}

/* The same, "WHAT NAME failed". */
void file_error(struct gen *g, const char *what, const char *name)
{
	char pre[64];

	snprintf(pre, sizeof pre, "%s ", what);
	file_error_at(g, pre, name, " failed");
}

/* The directory of path, or -1 with errno; in a dry run into a destination
 * that does not exist yet, nothing exists. */
int parent_of(struct gen *g, const char *path, const char **leaf)
{
	if (g->rc->cfg.dry_run_missing_root) {
		const char *slash = strrchr(path, '/');
		*leaf = slash ? slash + 1 : path;
		errno = ENOENT;
		return -1;
	}
	return dir_cursor_parent(&g->dirs, path, leaf);
}

/* The quick check (generator.c: quick_check_ok for regular files). */
bool regular_up_to_date(struct gen *g, const struct file_entry *f, int dirfd,
			const char *leaf, const struct stat *st)
{
	const struct ferry_opts *o = g->o;

	if (st->st_size != fe_size(f))
		return false;
	if (o->checksum) {
		uint8_t sum[CSUM_MAX_DIGEST];
		struct csum_ctx c;
		int fd = openat(dirfd, leaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || !S_ISREG(f->mode) || !fe_sum(f)) {
			if (fd >= 0)
				close(fd);
			return false;
		}
		csum_file_init(&c, g->s->flist_csum, 0);
		int64_t off = 0;
		ssize_t got;
		while ((got = fs_pread_full(fd, g->buf, SUMS_READ_BUF, off)) > 0) {
			csum_file_update(&c, g->buf, (size_t)got);
			off += got;
		}
		close(fd);
		csum_file_final(&c, sum);
		return memcmp(sum, fe_sum(f), csum_len(g->s->flist_csum)) == 0;
	}
	if (o->size_only)
		return true;
	if (o->ignore_times)
		return false;
	return !recv_mtime_differs(o, st, f);
}

/* Does the --link-dest copy carry the attributes we preserve, so that a
 * hard link to it is a correct copy? (generator.c: unchanged_attrs) */
bool alt_attrs_match(struct gen *g, const struct file_entry *f, const struct stat *st)
{
	const struct ferry_opts *o = g->o;

	return (!o->perms || (st->st_mode & 07777) == (f->mode & 07777)) &&
	       (!o->owner || fe_uid(f) == (int64_t)st->st_uid) &&
	       (!o->group || fe_gid(f) == (int64_t)st->st_gid);
}

/* A --link-dest file linked in must carry the entry's xattrs too
 * (generator.c: unchanged_attrs with xattr_diff). */
bool alt_xattrs_match(struct gen *g, const struct file_entry *f, int adir,
		      const char *aleaf)
{
	return xattr_same(g->s, adir, aleaf, f);
}

/* Does what is at the destination carry the entry's preserved times,
 * permissions (not a symlink's) and ownership? (generator.c:
 * unchanged_attrs) */
bool unchanged_attrs(struct gen *g, const struct file_entry *f, const struct stat *st)
{
	const struct ferry_opts *o = g->o;

	if (o->times && !(S_ISLNK(f->mode) && o->omit_link_times) &&
	    recv_mtime_differs(o, st, f))
		return false;
	if (S_ISLNK(f->mode))
		return (!o->owner || fe_uid(f) == (int64_t)st->st_uid) &&
		       (!o->group || fe_gid(f) == (int64_t)st->st_gid);
	return alt_attrs_match(g, f, st);
}
