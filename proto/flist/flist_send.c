/*
 * Sending the file list (flist.c: send_file_entry, write_end_of_flist;
 * uidlist.c: send_id_lists). The encoder keeps the same "previous entry"
 * state the receiver does, for the whole session.
 */
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "proto/meta/acls.h"
#include "proto/base/ixtable.h"
#include "proto/flist/sendside.h"
#include "proto/meta/xattrs.h"

struct send_state {
	int64_t mtime;
	int64_t atime; /* -U: starts at 0, as rsync's static */
	uint32_t mode, uid, gid, rdev_major;
	uint64_t rdev_pre28; /* before protocol 28 a device number goes whole */
	int64_t dev;
	bool first;
};

/* ids seen, for the name lists after the entries */
struct id_seen {
	uint32_t *ids;
	size_t count, cap;
};

/* The encoder's memory for the whole session: the previous entry, and
 * the ids named so far. */
struct flist_enc {
	struct send_state st;
	struct id_seen uids, gids;
};

static bool id_seen_has(const struct id_seen *seen, uint32_t id)
{
	for (size_t i = 0; i < seen->count; i++)
		if (seen->ids[i] == id)
			return true;
	return false;
}

static void note_id(struct id_seen *seen, uint32_t id)
{
	if (id_seen_has(seen, id))
		return;
	if (seen->count == seen->cap) {
		size_t cap = seen->cap ? seen->cap * 2 : 16;
		uint32_t *t = realloc(seen->ids, cap * sizeof *t);
		if (!t)
			return;
		seen->ids = t;
		seen->cap = cap;
	}
	seen->ids[seen->count++] = id;
}

/* A (dev, ino) pair as the index's digest. */
static uint64_t dev_ino_digest(const struct send_devino *in)
{
	return (uint64_t)in->ino * 0x9E3779B97F4A7C15ull ^ (uint64_t)in->dev;
}

static uint64_t info_digest(const void *ctx, int32_t ndx)
{
	const struct send_list *sl = ctx;

	return dev_ino_digest(&sl->devino[ndx]);
}

/* For each hard-linked entry (by index into files), the first entry with
 * its (dev, ino) in sending order - files[] order, or `order` when given -
 * or -1 when it is that first one; an index by (dev, ino) keeps this
 * linear. */
int32_t *flist_hlink_leaders(const struct send_list *sl, const size_t *order)
{
	size_t n = sl->fl.count;
	int32_t *lead = malloc((n ? n : 1) * sizeof *lead);
	struct ixtable firsts;

	if (!lead)
		return NULL;
	ixtable_init(&firsts);
	for (size_t i = 0; i < n; i++)
		lead[i] = -1;
	for (size_t k = 0; k < n; k++) {
		size_t i = order ? order[k] : k;
		if (!(sl->fl.files[i].flags & FE_HLINKED))
			continue;
		const struct send_devino *in = &sl->devino[i];
		uint64_t d = dev_ino_digest(in);
		struct ixprobe p;
		for (int32_t o = ixtable_first(&firsts, d, &p); o >= 0; o = ixtable_next(&firsts, &p))
			if (sl->devino[o].dev == in->dev && sl->devino[o].ino == in->ino) {
				lead[i] = o;
				break;
			}
		if (lead[i] < 0 && !ixtable_add(&firsts, d, (int32_t)i, info_digest, sl)) {
			free(lead);
			lead = NULL;
			break;
		}
	}
	ixtable_free(&firsts);
	return lead;
}

static uint32_t entry_xflags(struct session *s, struct send_state *st, const struct file_entry *f,
			     bool is_device, bool is_special)
{
	const struct ferry_opts *o = s->opts;
	uint32_t x = 0;

	if (S_ISDIR(f->mode)) {
		/* A directory whose contents are not sent must not have them
		 * deleted on the other side (flist.c: send_file_entry). */
		if (s->protocol >= 30 && !(f->flags & FE_CONTENT_DIR))
			x = (f->flags & (FE_TOP_DIR | FE_IMPLIED_DIR) ? XMIT_TOP_DIR : 0) |
			    XMIT_NO_CONTENT_DIR;
		else
			x = f->flags & FE_TOP_DIR ? XMIT_TOP_DIR : 0;
	}

	/* mode and time are compared with the last sent even for the first
	 * entry, against 0 (flist.c: send_file_entry's statics) */
	if (f->mode == st->mode)
		x |= XMIT_SAME_MODE;
	/* The previous device number starts at 0 and is not reset by the
	 * first entry (flist.c: send_file_entry's statics). */
	if (o->devices && is_device && s->protocol < 28) {
		if (makedev(fe_rdev_major(f), fe_rdev_minor(f)) == st->rdev_pre28)
			x |= XMIT_SAME_RDEV_PRE28;
	} else if (o->devices && is_device) {
		if (fe_rdev_major(f) == st->rdev_major)
			x |= XMIT_SAME_RDEV_MAJOR;
		if (s->protocol < 30 && fe_rdev_minor(f) <= 0xFF)
			x |= XMIT_RDEV_MINOR_8_PRE30;
	} else if (o->specials && is_special && s->protocol < 28) {
		x |= XMIT_SAME_RDEV_PRE28; /* a special's number is never sent */
	} else if (o->specials && is_special && s->protocol < 31) {
		x |= XMIT_SAME_RDEV_MAJOR;
		if (s->protocol < 30)
			x |= XMIT_RDEV_MINOR_8_PRE30;
	}
	if (!o->owner || (!st->first && fe_uid(f) == st->uid))
		x |= XMIT_SAME_UID;
	if (!o->group || (!st->first && fe_gid(f) == st->gid))
		x |= XMIT_SAME_GID;
	if (f->mtime == st->mtime)
		x |= XMIT_SAME_TIME;
	if (fe_mtime_nsec(f) && s->protocol >= 31)
		x |= XMIT_MOD_NSEC;
	if (o->atimes && !S_ISDIR(f->mode)) {
		if (fe_atime(f) == st->atime)
			x |= XMIT_SAME_ATIME;
		else
			st->atime = fe_atime(f);
	}
	return x;
}

/* A flags value of 0 would end the list, so a bit that means nothing for
 * the entry is added; the caller goes on with the flags as sent, since
 * before protocol 28 that bit can be XMIT_LONG_NAME, which decides how
 * the name's length follows (flist.c: send_file_entry). */
static bool write_flags(struct session *s, uint32_t *x, bool is_dir)
{
	if (s->varint_flist_flags)
		return wire_write_varint(&s->out, (int32_t)(*x ? *x : XMIT_EXTENDED_FLAGS));
	if (s->protocol >= 28) {
		if (!*x && !is_dir)
			*x |= XMIT_TOP_DIR;
		if ((*x & 0xFF00) || !*x) {
			*x |= XMIT_EXTENDED_FLAGS;
			return wire_write_u16(&s->out, (uint16_t)*x);
		}
		return wire_write_u8(&s->out, (uint8_t)*x);
	}
	if (!(*x & 0xFF))
		*x |= is_dir ? XMIT_LONG_NAME : XMIT_TOP_DIR;
	return wire_write_u8(&s->out, (uint8_t)*x);
}

/* With incremental recursion there are no id lists: an id's name follows
 * it the first time it is sent (flist.c: send_file_entry, add_uid). */
static const char *inline_id_name(struct session *s, struct id_seen *seen, uint32_t id,
				  bool users, char *buf, size_t size)
{
	if (!s->inc_recurse || s->opts->numeric_ids || s->module.ids_by_number || id_seen_has(seen, id))
		return NULL;
	note_id(seen, id);
	return id_local_name(s, users, id, buf, size);
}

static bool write_id_name(struct wire_out *out, const char *name)
{
	size_t n = strlen(name);

	if (n > 255)
		n = 255;
	return wire_write_u8(out, (uint8_t)n) && wire_write(out, name, n);
}

/* Before protocol 28 a device's number is sent as one int unless it
 * repeats the last one; any other entry, a special aside, forgets it
 * (flist.c: send_file_entry). */
static bool send_rdev_pre28(struct session *s, struct send_state *st, const struct file_entry *f,
			    uint32_t x, bool is_device, bool is_special)
{
	const struct ferry_opts *o = s->opts;

	if (o->devices && is_device) {
		uint64_t rdev = makedev(fe_rdev_major(f), fe_rdev_minor(f));
		if (!(x & XMIT_SAME_RDEV_PRE28) && !wire_write_i32(&s->out, (int32_t)(uint32_t)rdev))
			return false;
		st->rdev_pre28 = rdev;
	} else if (!(o->specials && is_special)) {
		st->rdev_pre28 = 0;
	}
	return true;
}

/* How an entry refers to the first of its hard-link group: the leader's
 * number on the wire (-1: it is the first), and whether the leader is in
 * the same list, so the entry shares its attributes (abbreviated). */
struct hlink_ref {
	int32_t leader;
	bool abbrev;
};

static bool send_entry(struct session *s, struct send_list *sl, size_t i, struct send_state *st,
		       struct id_seen *uids, struct id_seen *gids, struct hlink_ref hl)
{
	const struct ferry_opts *o = s->opts;
	struct file_entry *f = &sl->fl.files[i];
	struct wire_out *out = &s->out;
	char name[MAXPATHLEN_WIRE];
	char *last = s->fl.lastname;
	bool is_device = S_ISCHR(f->mode) || S_ISBLK(f->mode);
	bool is_special = S_ISFIFO(f->mode) || S_ISSOCK(f->mode);
	int32_t leader = -1;

	if (!flist_path(f, name, sizeof name))
		return wire_fail(&s->err, RERR_PROTOCOL, "file name too long");
	uint32_t x = entry_xflags(s, st, f, is_device, is_special);
	if (o->hard_links && (f->flags & FE_HLINKED)) {
		if (s->protocol >= 30) {
			leader = hl.leader;
			if (leader < 0)
				x |= XMIT_HLINK_FIRST;
			x |= XMIT_HLINKED;
		} else {
			if (!st->first && sl->devino[i].dev == st->dev && s->protocol >= 28)
				x |= XMIT_SAME_DEV_PRE30;
			x |= XMIT_HLINKED;
		}
	}
	char uname[256], gname[256];
	bool abbrev = leader >= 0 && hl.abbrev;
	if (!abbrev && o->owner && !(x & XMIT_SAME_UID) &&
	    inline_id_name(s, uids, fe_uid(f), true, uname, sizeof uname))
		x |= XMIT_USER_NAME_FOLLOWS;
	if (!abbrev && o->group && !(x & XMIT_SAME_GID) &&
	    inline_id_name(s, gids, fe_gid(f), false, gname, sizeof gname))
		x |= XMIT_GROUP_NAME_FOLLOWS;
	size_t l1 = 0;
	while (last[l1] && name[l1] == last[l1] && l1 < 255)
		l1++;
	size_t l2 = strlen(name + l1);
	if (l1 > 0)
		x |= XMIT_SAME_NAME;
	if (l2 > 255)
		x |= XMIT_LONG_NAME;
	if (!write_flags(s, &x, S_ISDIR(f->mode)))
		return false;
	if ((x & XMIT_SAME_NAME) && !wire_write_u8(out, (uint8_t)l1))
		return false;
	if (x & XMIT_LONG_NAME ? !wire_write_varint30(out, (int32_t)l2)
			       : !wire_write_u8(out, (uint8_t)l2))
		return false;
	if (!wire_write(out, name + l1, l2))
		return false;
	snprintf(last, MAXPATHLEN_WIRE, "%s", name);
	if (leader >= 0 && !wire_write_varint(out, leader))
		return false;
	if (abbrev) {
		/* Everything else is the leader's: the receiver copies it, and
		 * its "previous entry" state becomes the leader's too. */
		st->mtime = f->mtime;
		st->mode = f->mode;
		st->uid = fe_uid(f);
		st->gid = fe_gid(f);
		if (is_device)
			st->rdev_major = fe_rdev_major(f);
		st->first = false;
		return true;
	}
	if (!wire_write_varlong30(out, fe_size(f), 3))
		return false;
	if (!(x & XMIT_SAME_TIME)) {
		if (s->protocol >= 30 ? !wire_write_varlong(out, f->mtime, 4)
				      : !wire_write_i32(out, (int32_t)f->mtime))
			return false;
	}
	if ((x & XMIT_MOD_NSEC) && !wire_write_varint(out, (int32_t)fe_mtime_nsec(f)))
		return false;
	if (!(x & XMIT_SAME_MODE) && !wire_write_i32(out, (int32_t)f->mode))
		return false;
	if (o->atimes && !S_ISDIR(f->mode) && !(x & XMIT_SAME_ATIME) &&
	    !wire_write_varlong(out, fe_atime(f), 4))
		return false;
	if (o->owner && !(x & XMIT_SAME_UID)) {
		if (!wire_write_varint30(out, (int32_t)fe_uid(f)))
			return false;
		/* the bit means XMIT_SAME_DEV_pre30 before protocol 30 */
		if (s->protocol >= 30 && (x & XMIT_USER_NAME_FOLLOWS) &&
		    !write_id_name(out, uname))
			return false;
		note_id(uids, fe_uid(f));
	}
	if (o->group && !(x & XMIT_SAME_GID)) {
		if (!wire_write_varint30(out, (int32_t)fe_gid(f)))
			return false;
		/* the bit means XMIT_RDEV_MINOR_8_pre30 before protocol 30 */
		if (s->protocol >= 30 && (x & XMIT_GROUP_NAME_FOLLOWS) &&
		    !write_id_name(out, gname))
			return false;
		note_id(gids, fe_gid(f));
	}
	if (s->protocol < 28) {
		if (!send_rdev_pre28(s, st, f, x, is_device, is_special))
			return false;
	} else if ((o->devices && is_device) || (o->specials && is_special && s->protocol < 31)) {
		uint32_t major = is_device ? fe_rdev_major(f) : st->rdev_major;
		uint32_t minor = is_device ? fe_rdev_minor(f) : 0;
		if (!(x & XMIT_SAME_RDEV_MAJOR) && !wire_write_varint30(out, (int32_t)major))
			return false;
		if (s->protocol >= 30 ? !wire_write_varint(out, (int32_t)minor)
		    : (x & XMIT_RDEV_MINOR_8_PRE30) ? !wire_write_u8(out, (uint8_t)minor)
						     : !wire_write_i32(out, (int32_t)minor))
			return false;
		st->rdev_major = major;
	}
	if (o->links && S_ISLNK(f->mode)) {
		size_t n = strlen(fe_link(f));
		if (!wire_write_varint30(out, (int32_t)n) || !wire_write(out, fe_link(f), n))
			return false;
	}
	if (o->hard_links && s->protocol < 30 && (f->flags & FE_HLINKED)) {
		/* sent one-incremented so that it is never zero */
		if (!(x & XMIT_SAME_DEV_PRE30) && !wire_write_longint(out, sl->devino[i].dev + 1))
			return false;
		if (!wire_write_longint(out, sl->devino[i].ino))
			return false;
		st->dev = sl->devino[i].dev;
	}
	if (o->checksum && (S_ISREG(f->mode) || s->protocol < 28)) {
		uint8_t zero[CSUM_MAX_DIGEST] = {0};
		size_t n = csum_len(s->flist_csum);
		if (!wire_write(out, S_ISREG(f->mode) && fe_sum(f) ? fe_sum(f) : zero, n))
			return false;
	}
	st->mtime = f->mtime;
	st->mode = f->mode;
	st->uid = fe_uid(f);
	st->gid = fe_gid(f);
	st->first = false;
	return true;
}

/* Newest id first: rsync's sender prepends each id it meets to its list
 * (uidlist.c: add_to_list), and the list goes out as it stands. */
static bool send_id_list(struct session *s, const struct id_seen *seen, bool users)
{
	for (size_t i = seen->count; i-- > 0;) {
		uint32_t id = seen->ids[i];
		char buf[256];
		if (id == 0 || s->module.ids_by_number)
			continue;
		const char *name = id_local_name(s, users, id, buf, sizeof buf);
		if (!name)
			continue;
		size_t n = strlen(name);
		if (n > 255)
			n = 255;
		if (!wire_write_varint30(&s->out, (int32_t)id) || !wire_write_u8(&s->out, (uint8_t)n) ||
		    !wire_write(&s->out, name, n))
			return false;
	}
	if (!wire_write_varint30(&s->out, 0))
		return false;
	if (s->id0_names) {
		char buf[256];
		const char *n0 = id_local_name(s, users, 0, buf, sizeof buf);
		if (!n0)
			n0 = "root";
		size_t n = strlen(n0);
		if (!wire_write_u8(&s->out, (uint8_t)n) || !wire_write(&s->out, n0, n))
			return false;
	}
	return true;
}

/* Every id that occurs, also those only hidden behind XMIT_SAME_*, and
 * those named in the ACLs sent. */
static void collect_ids(struct session *s, const struct send_list *sl, struct id_seen *uids,
			struct id_seen *gids)
{
	const uint32_t *ids;
	size_t n;

	for (size_t i = 0; i < sl->fl.count; i++) {
		if (s->opts->owner)
			note_id(uids, fe_uid(&sl->fl.files[i]));
		if (s->opts->group)
			note_id(gids, fe_gid(&sl->fl.files[i]));
	}
	n = acl_sent_ids(s, true, &ids);
	for (size_t i = 0; i < n; i++)
		note_id(uids, ids[i]);
	n = acl_sent_ids(s, false, &ids);
	for (size_t i = 0; i < n; i++)
		note_id(gids, ids[i]);
}

/* -A/-X: the entry's ACLs and xattrs follow its other fields (flist.c:
 * send_file_name), read from disk now. */
static bool send_meta(struct session *s, struct send_list *sl, size_t i)
{
	struct file_entry *f = &sl->fl.files[i];
	uint32_t root = sl->info[i].root;
	int rootfd = root < sl->roots.count ? sl->roots.fds[root] : -1;
	char path[MAXPATHLEN_WIRE];

	if (!flist_path(f, path, sizeof path))
		return wire_fail(&s->err, RERR_PROTOCOL, "file name too long");
	if (s->opts->acls && !acl_send_entry(s, rootfd, path, f))
		return false;
	return !s->opts->xattrs || xattr_send_entry(s, rootfd, path, f);
}

void flist_note_build_time(struct session *s, int64_t t0)
{
	int64_t ms = wire_now_ms() - t0;

	s->stats.flist_buildtime_ms = ms > 0 ? ms : 1;
}

static bool write_end_of_list(struct session *s, int io_err)
{
	if (s->varint_flist_flags)
		return wire_write_varint(&s->out, 0) && wire_write_varint(&s->out, io_err);
	if (io_err && s->safe_flist)
		return wire_write_u16(&s->out, XMIT_EXTENDED_FLAGS | XMIT_IO_ERROR_ENDLIST) &&
		       wire_write_varint(&s->out, io_err);
	return wire_write_u8(&s->out, 0);
}

static struct flist_enc *encoder_of(struct session *s, struct send_list *sl)
{
	if (!sl->enc) {
		sl->enc = calloc(1, sizeof *sl->enc);
		if (!sl->enc) {
			wire_fail(&s->err, RERR_MALLOC, "out of memory");
			return NULL;
		}
		sl->enc->st.first = true;
		s->fl.lastname[0] = '\0';
	}
	return sl->enc;
}

void flist_enc_free(struct flist_enc *enc)
{
	if (enc) {
		free(enc->uids.ids);
		free(enc->gids.ids);
		free(enc);
	}
}

/* One entry (index into sl->fl.files) with its ACLs/xattrs, counted for
 * the statistics. */
static bool send_counted(struct session *s, struct send_list *sl, size_t i, struct flist_enc *e,
			 struct hlink_ref hl)
{
	const struct ferry_opts *o = s->opts;
	const struct file_entry *f = &sl->fl.files[i];

	if (!send_entry(s, sl, i, &e->st, &e->uids, &e->gids, hl))
		return false;
	if ((o->acls || o->xattrs) && !send_meta(s, sl, i))
		return false;
	if (S_ISREG(f->mode) || S_ISLNK(f->mode))
		s->stats.total_size += fe_size(f);
	return true;
}

void flist_count_entry(struct stats *st, const struct file_entry *f)
{
	st->num_files++;
	if (S_ISDIR(f->mode))
		st->num_dirs++;
	else if (S_ISLNK(f->mode))
		st->num_symlinks++;
	else if (S_ISCHR(f->mode) || S_ISBLK(f->mode))
		st->num_devices++;
	else if (!S_ISREG(f->mode))
		st->num_specials++;
}

bool flist_send_part(struct session *s, struct send_list *sl, struct file_entry *const *v,
		     size_t n, int io_err, const int32_t *lead_wire, int32_t ndx_start)
{
	struct flist_enc *e = encoder_of(s, sl);
	uint64_t start = s->out.total_written;
	bool ok = e != NULL;

	/* as rsync's sender, the counts grow list by list (--progress) */
	for (size_t k = 0; ok && k < n; k++) {
		size_t i = (size_t)(v[k] - sl->fl.files);
		int32_t leader = lead_wire ? lead_wire[i] : -1;
		struct hlink_ref hl = {.leader = leader, .abbrev = leader >= ndx_start};
		ok = send_counted(s, sl, i, e, hl);
		flist_count_entry(&s->stats, v[k]);
	}
	ok = ok && write_end_of_list(s, io_err);
	s->stats.flist_size += (int64_t)(s->out.total_written - start);
	return ok;
}

bool flist_send_whole(struct session *s, struct send_list *sl)
{
	const struct ferry_opts *o = s->opts;
	/* rsync's sender counts the bytes that reached the socket while the
	 * list went out (flist.c: stats.total_written grows as its buffer is
	 * flushed): what still sits in the buffer at the end is not counted,
	 * so a small list shows "File list size: 0". */
	uint64_t start = s->out.total_written;
	struct flist_enc *e = encoder_of(s, sl);
	bool ok = e != NULL;
	int32_t *leaders = o->hard_links ? flist_hlink_leaders(sl, NULL) : NULL;

	for (size_t i = 0; ok && i < sl->fl.count; i++) {
		struct hlink_ref hl = {.leader = leaders ? leaders[i] : -1, .abbrev = true};
		ok = send_counted(s, sl, i, e, hl);
	}
	int io_err = o->ignore_errors ? 0 : session_io_error(s) & IOERR_VALID_MASK;
	ok = ok && write_end_of_list(s, io_err);
	if (e) {
		struct id_seen *uids = &e->uids, *gids = &e->gids;
		collect_ids(s, sl, uids, gids);
		if (ok && (o->owner || o->acls) && !o->numeric_ids)
			ok = send_id_list(s, uids, true);
		if (ok && (o->group || o->acls) && !o->numeric_ids)
			ok = send_id_list(s, gids, false);
	}
	if (ok && s->protocol < 30)
		ok = wire_write_i32(&s->out, io_err);
	else if (ok && io_err && !s->varint_flist_flags && !s->safe_flist)
		ok = wire_send_msg(&s->out, MSG_IO_ERROR, (uint8_t[]){(uint8_t)io_err, 0, 0, 0}, 4);
	free(leaders);
	s->stats.flist_size = (int64_t)(s->out.total_written - start);
	return ok && wire_flush(&s->out);
}
