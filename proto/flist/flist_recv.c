/*
 * Receiving the file list: the entry decoder, the receiver's sort and
 * clean-up of a whole list, and the parts of an incremental one (rsync
 * flist.c: recv_file_entry, recv_file_list, flist_sort_and_clean). Each
 * decoder bounds what it reads before using it: a hostile sender can at
 * worst end the session.
 */
#include "proto/core/flist.h"
#include "proto/base/alloc.h"
#include "proto/flist/filesfrom.h"

#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "proto/meta/acls.h"
#include "proto/core/session.h"
#include "proto/meta/xattrs.h"

struct hl_pair {
	int64_t dev, ino;
	int32_t group;
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* -m (flist.c: the prune_empty_dirs pass of flist_sort_and_clean): a
 * directory with no file anywhere below it is left out, except "." (the
 * top of the transfer). */
static bool prune_empty_dirs(struct session *s, struct flist *fl)
{
	char **keep = NULL, path[MAXPATHLEN_WIRE * 2];
	size_t n = 0, cap = 0;
	bool ok = true;

	/* every ancestor of a non-directory stays */
	for (size_t i = fl->low; ok && i <= fl->high && i < fl->count; i++) {
		const struct file_entry *f = fl->sorted[i];
		if (!(f->flags & FE_ACTIVE) || S_ISDIR(f->mode) || !f->dirname)
			continue;
		snprintf(path, sizeof path, "%s", f->dirname);
		for (char *end = path + strlen(path);;) {
			if (n == cap) {
				cap = cap ? cap * 2 : 256;
				char **k = realloc(keep, cap * sizeof *k);
				if (!k) {
					ok = false;
					break;
				}
				keep = k;
			}
			if (!(keep[n++] = strdup(path))) {
				ok = false;
				break;
			}
			while (end > path && *end != '/')
				end--;
			if (end == path)
				break;
			*end = '\0';
		}
	}
	if (ok && n > 1)
		qsort(keep, n, sizeof *keep, cmp_str);
	for (size_t i = fl->low; ok && i <= fl->high && i < fl->count; i++) {
		struct file_entry *f = fl->sorted[i];
		if (!(f->flags & FE_ACTIVE) || !S_ISDIR(f->mode) || !flist_path(f, path, sizeof path) ||
		    strcmp(path, ".") == 0)
			continue;
		char *key = path;
		if (!n || !bsearch(&key, keep, n, sizeof *keep, cmp_str))
			f->flags &= ~FE_ACTIVE;
	}
	for (size_t i = 0; i < n; i++)
		free(keep[i]);
	free(keep);
	if (!ok)
		return wire_fail(&s->err, RERR_MALLOC, "out of memory pruning empty directories");
	while (fl->low < fl->high && !(fl->sorted[fl->low]->flags & FE_ACTIVE))
		fl->low++;
	while (fl->high > fl->low && !(fl->sorted[fl->high]->flags & FE_ACTIVE))
		fl->high--;
	return true;
}

bool flist_sort_and_clean(struct session *s, struct flist *fl)
{
	size_t i;

	fl->low = 0;
	fl->high = 0;
	if (fl->inc)
		return flist_part_finish(s, fl, 0, fl->count, -1);
	if (fl->count == 0)
		return true;
	fl->sorted = xmalloc_array(&s->err, fl->count, sizeof *fl->sorted);
	if (!fl->sorted)
		return false;
	for (i = 0; i < fl->count; i++)
		fl->sorted[i] = &fl->files[i];
	if (!flist_clean_part(s, fl->sorted, fl->count, &fl->low, &fl->high))
		return false;
	/* -R names may start with "/": strip it only now that the order is
	 * the sender's (flist.c: flist_sort_and_clean's strip_root). */
	for (i = fl->low; s->opts->relative && i <= fl->high; i++) {
		struct file_entry *f = fl->sorted[i];
		while (f->dirname && *f->dirname == '/')
			f->dirname++;
		if (f->dirname && !*f->dirname)
			f->dirname = NULL;
	}
	if (s->opts && s->opts->prune_empty_dirs && !s->am_sender)
		return prune_empty_dirs(s, fl);
	return true;
}

/* ---- receiving ---- */

/* A non-incremental list holds at most this many entries, as many as an
 * incremental one (flist_inc_recv.c: INC_MAX_FILES); --max-alloc may stop
 * it sooner (40 bytes an entry with its index: the default 1 GiB allows
 * more than the cap). */
#define FLIST_MAX_FILES ((size_t)1 << 24)

/* The per-entry memory of a list (issue 22): a field added must not
 * undo the packing of flist.h without a look at what a million cost;
 * optional fields go after the name (FE_X_*). */
_Static_assert(sizeof(struct file_entry) <= 32, "struct file_entry grew past 32 bytes");

/* An entry being decoded: its optional fields and its cleaned base name
 * wait here until the entry is complete and placed (place_entry). */
struct decoding {
	struct fe_extras x;
	int depth;              /* path components, for sanitizing a link */
	size_t base_len;
	char base[MAXPATHLEN_WIRE];
};

static struct file_entry *new_entry(struct session *s, struct flist *fl)
{
	if (fl->count == fl->cap && fl->inc && !flist_inc_grow(s, fl))
		return NULL;
	if (fl->count == fl->cap) {
		if (fl->count >= FLIST_MAX_FILES) {
			wire_fail(&s->err, RERR_PROTOCOL, "file list too long (%zu entries)", fl->count);
			return NULL;
		}
		size_t cap = fl->cap ? fl->cap * 2 : 1024;
		/* the last doubling must not refuse a list that fits the limit */
		size_t most = alloc_limit() / sizeof *fl->files - 1;
		if (cap > most && fl->count < most)
			cap = most;
		if (cap > FLIST_MAX_FILES)
			cap = FLIST_MAX_FILES;
		struct file_entry *files = xrealloc_array(&s->err, fl->files, cap, sizeof *files);
		if (!files)
			return NULL;
		fl->files = files;
		fl->cap = cap;
	}
	struct file_entry *f = &fl->files[fl->count];
	memset(f, 0, sizeof *f);
	return f;
}

static bool valid_type(uint32_t mode)
{
	return S_ISREG(mode) || S_ISDIR(mode) || S_ISLNK(mode) || S_ISCHR(mode) ||
	       S_ISBLK(mode) || S_ISFIFO(mode) || S_ISSOCK(mode);
}

static bool is_device(uint32_t mode)
{
	return S_ISCHR(mode) || S_ISBLK(mode);
}

static bool is_special(uint32_t mode)
{
	return S_ISFIFO(mode) || S_ISSOCK(mode);
}

/* Read the entry's name and split it into a shared dirname and basename. */
static bool recv_name(struct session *s, struct flist *fl, struct file_entry *f, uint32_t xflags,
		      struct decoding *d)
{
	struct flist_codec *k = &s->fl;
	char name[MAXPATHLEN_WIRE];
	uint8_t l1 = 0, b;
	int32_t l2;

	if ((xflags & XMIT_SAME_NAME) && !wire_read_u8(&s->in, &l1))
		return false;
	if (xflags & XMIT_LONG_NAME) {
		if (!wire_read_varint30(&s->in, &l2))
			return false;
	} else {
		if (!wire_read_u8(&s->in, &b))
			return false;
		l2 = b;
	}
	if (l2 < 0 || (size_t)l2 + l1 >= MAXPATHLEN_WIRE || l1 > strlen(k->lastname))
		return wire_fail(&s->err, RERR_PROTOCOL,
				 "overflow: file name lengths l1=%u l2=%d from sender", l1, l2);
	memcpy(name, k->lastname, l1);
	if (!wire_read(&s->in, name + l1, (size_t)l2))
		return false;
	name[l1 + l2] = '\0';
	memcpy(k->lastname, name, (size_t)l1 + (size_t)l2 + 1);
	if (memchr(name, '\0', (size_t)l1 + (size_t)l2))
		return wire_fail(&s->err, RERR_UNSUPPORTED,
				 "ABORTING due to unsafe pathname from sender (NUL byte)");
	if (*name && (!flist_clean_name(name) || (!s->opts->relative && *name == '/')))
		return wire_fail(&s->err, RERR_UNSUPPORTED,
				 "ABORTING due to unsafe pathname from sender: %s", name);
	char *slash = strrchr(name, '/');
	if (slash) {
		size_t dlen = (size_t)(slash - name);
		if (!k->lastdir || dlen != k->lastdir_len || memcmp(name, k->lastdir, dlen) != 0) {
			k->lastdir = flist_strdup(fl, name, dlen);
			k->lastdir_len = dlen;
			if (!k->lastdir)
				return wire_fail(&s->err, RERR_MALLOC, "out of memory");
			k->lastdir_depth = 1;
			for (size_t i = 0; i < dlen; i++)
				k->lastdir_depth += name[i] == '/';
		}
		f->dirname = k->lastdir;
		d->depth = k->lastdir_depth + 1;
		d->base_len = strlen(slash + 1);
		memcpy(d->base, slash + 1, d->base_len + 1);
	} else {
		d->depth = 1;
		d->base_len = strlen(name);
		memcpy(d->base, name, d->base_len + 1);
	}
	f->basename = d->base; /* until place_entry */
	return true;
}

/* Copy what an abbreviated hard-link follower shares with its leader. */
static void take_from_leader(struct session *s, struct file_entry *f, struct fe_extras *x,
			     const struct file_entry *lead)
{
	struct flist_codec *k = &s->fl;

	x->size = fe_size(lead);
	f->mtime = k->mtime = lead->mtime;
	x->mtime_nsec = fe_mtime_nsec(lead);
	x->has |= lead->flags & FE_X_NSEC;
	if (s->opts->atimes && !S_ISDIR(lead->mode)) {
		x->atime = k->atime = fe_atime(lead);
		x->has |= FE_X_ATIME;
	}
	f->mode = k->mode = lead->mode;
	x->uid = fe_uid(lead);
	x->gid = fe_gid(lead);
	x->has |= lead->flags & FE_X_IDS;
	if (s->opts->owner)
		k->uid = x->uid;
	if (s->opts->group)
		k->gid = x->gid;
	x->rdev_major = fe_rdev_major(lead);
	x->rdev_minor = fe_rdev_minor(lead);
	x->has |= lead->flags & FE_X_RDEV;
	if (s->opts->devices && is_device(lead->mode))
		k->rdev_major = x->rdev_major;
	x->link = fe_ptr(lead); /* the sum too: they share their place */
	x->has |= lead->flags & FE_X_PTR;
}

static bool recv_owner_name(struct session *s, struct id_map *map, uint32_t id, bool is_user)
{
	char name[256];
	uint8_t len;

	if (!wire_read_u8(&s->in, &len) || !wire_read(&s->in, name, len))
		return false;
	name[len] = '\0';
	return id_map_add(s, map, id, name, is_user);
}

static bool recv_rdev(struct session *s, struct file_entry *f, struct fe_extras *x, uint32_t xflags)
{
	struct flist_codec *k = &s->fl;
	int32_t v;
	uint8_t b;

	if (s->protocol < 28) {
		if (!(xflags & XMIT_SAME_RDEV_PRE28)) {
			if (!wire_read_i32(&s->in, &v))
				return false;
			k->rdev_major = major((dev_t)(uint32_t)v);
			k->rdev_minor = minor((dev_t)(uint32_t)v);
		}
	} else {
		if (!(xflags & XMIT_SAME_RDEV_MAJOR)) {
			if (!wire_read_varint30(&s->in, &v))
				return false;
			k->rdev_major = (uint32_t)v;
		}
		if (s->protocol >= 30) {
			if (!wire_read_varint(&s->in, &v))
				return false;
		} else if (xflags & XMIT_RDEV_MINOR_8_PRE30) {
			if (!wire_read_u8(&s->in, &b))
				return false;
			v = b;
		} else if (!wire_read_i32(&s->in, &v)) {
			return false;
		}
		k->rdev_minor = (uint32_t)v;
	}
	x->rdev_major = k->rdev_major;
	x->rdev_minor = k->rdev_minor;
	x->has |= FE_X_RDEV;
	x->size = 0;
	return true;
}

/* The slot of (dev, ino) in a table of cap slots (a power of two).
 * Unsigned arithmetic: the peer chooses both values, and a signed
 * multiply overflowed on large ones (undefined behaviour). Keyed with the
 * session's secret so that it cannot choose them to collide either. */
static size_t hl_slot(uint64_t key, int64_t dev, int64_t ino, size_t cap)
{
	uint64_t h = ((uint64_t)ino ^ key) * 0x9e3779b97f4a7c15ull + (uint64_t)dev;

	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 29;
	return (size_t)h & (cap - 1);
}

static int32_t hl_group_for(struct session *s, int64_t dev, int64_t ino, int32_t ndx)
{
	struct flist_codec *k = &s->fl;

	if (!k->hl_cap && getrandom(&k->hl_key, sizeof k->hl_key, GRND_NONBLOCK) !=
			  (ssize_t)sizeof k->hl_key)
		k->hl_key = (uint64_t)(uintptr_t)k ^ (uint64_t)getpid() << 32;
	/* Linear probing in a table that stays under half full. */
	if (k->hl_count * 2 >= k->hl_cap) {
		size_t cap = k->hl_cap ? k->hl_cap * 2 : 1024;
		struct hl_pair *t = xcalloc_array(&s->err, cap, sizeof *t);
		if (!t)
			return -2;
		for (size_t i = 0; i < k->hl_cap; i++) {
			if (k->hl_pairs[i].group == 0)
				continue;
			size_t h = hl_slot(k->hl_key, k->hl_pairs[i].dev, k->hl_pairs[i].ino, cap);
			while (t[h].group)
				h = (h + 1) & (cap - 1);
			t[h] = k->hl_pairs[i];
		}
		free(k->hl_pairs);
		k->hl_pairs = t;
		k->hl_cap = cap;
	}
	size_t h = hl_slot(k->hl_key, dev, ino, k->hl_cap);
	while (k->hl_pairs[h].group) {
		if (k->hl_pairs[h].dev == dev && k->hl_pairs[h].ino == ino)
			return k->hl_pairs[h].group - 1;
		h = (h + 1) & (k->hl_cap - 1);
	}
	k->hl_pairs[h] = (struct hl_pair){.dev = dev, .ino = ino, .group = ndx + 1};
	k->hl_count++;
	return ndx;
}

static bool recv_old_hlink(struct session *s, struct file_entry *f, struct fe_extras *x,
			   uint32_t xflags, int32_t ndx)
{
	struct flist_codec *k = &s->fl;
	int64_t ino;

	if (!(xflags & XMIT_SAME_DEV_PRE30) && !wire_read_longint(&s->in, &k->dev))
		return false;
	if (!wire_read_longint(&s->in, &ino))
		return false;
	x->hlink_group = hl_group_for(s, k->dev, ino, ndx);
	if (x->hlink_group == -2)
		return wire_fail(&s->err, RERR_MALLOC, "out of memory");
	f->flags |= FE_HLINKED;
	if (x->hlink_group == ndx)
		f->flags |= FE_HLINK_FIRST;
	return true;
}

/* The fields after the name of a fully sent entry. */
static bool recv_attrs(struct session *s, struct flist *fl, struct file_entry *f, uint32_t xflags,
		       struct decoding *d)
{
	struct fe_extras *x = &d->x;
	const struct ferry_opts *o = s->opts;
	struct flist_codec *k = &s->fl;
	int32_t v;

	if (!wire_read_varlong30(&s->in, 3, &x->size))
		return false;
	if (!(xflags & XMIT_SAME_TIME)) {
		if (s->protocol >= 30) {
			if (!wire_read_varlong(&s->in, 4, &k->mtime))
				return false;
		} else {
			if (!wire_read_i32(&s->in, &v))
				return false;
			k->mtime = (int64_t)(uint32_t)v;
		}
	}
	f->mtime = k->mtime;
	if (xflags & XMIT_MOD_NSEC) {
		if (!wire_read_varint(&s->in, &v))
			return false;
		if (v < 0 || v > 999999999)
			return wire_fail(&s->err, RERR_PROTOCOL, "invalid nanoseconds %d", v);
		x->mtime_nsec = (uint32_t)v;
		if (v && !fl->listing)
			x->has |= FE_X_NSEC;
	}
	if (!(xflags & XMIT_SAME_MODE)) {
		if (!wire_read_i32(&s->in, &v))
			return false;
		k->mode = (uint32_t)v;
		/* mode 0 is a missing argument under --delete-missing-args */
		if (!valid_type(k->mode) && !(k->mode == 0 && s->opts->missing_args == 2))
			return wire_fail(&s->err, RERR_PROTOCOL, "invalid file mode 0%o from sender",
					 k->mode);
	}
	f->mode = (uint16_t)k->mode;
	if (o->atimes && !S_ISDIR(f->mode)) {
		if (!(xflags & XMIT_SAME_ATIME) && !wire_read_varlong(&s->in, 4, &k->atime))
			return false;
		x->atime = k->atime;
		x->has |= FE_X_ATIME;
	}
	/* --chmod changes what we store, not what the next entry is
	 * compressed against (flist.c: recv_file_entry, tweak_mode). */
	if (s->chmod.n && !S_ISLNK(f->mode) && f->mode)
		f->mode = (uint16_t)chmod_apply(&s->chmod, f->mode);
	if (o->owner && !(xflags & XMIT_SAME_UID)) {
		if (!wire_read_varint30(&s->in, &v))
			return false;
		k->uid = (uint32_t)v;
		if (s->protocol >= 30 && (xflags & XMIT_USER_NAME_FOLLOWS) &&
		    !recv_owner_name(s, &s->uids, k->uid, true))
			return false;
	}
	if (o->group && !(xflags & XMIT_SAME_GID)) {
		if (!wire_read_varint30(&s->in, &v))
			return false;
		k->gid = (uint32_t)v;
		if (s->protocol >= 30 && (xflags & XMIT_GROUP_NAME_FOLLOWS) &&
		    !recv_owner_name(s, &s->gids, k->gid, false))
			return false;
	}
	if (o->owner || o->group) {
		/* an entry keeps its ids only where they were sent */
		x->uid = k->uid;
		x->gid = k->gid;
		x->has |= FE_X_IDS;
	}
	if ((o->devices && is_device(f->mode)) ||
	    (o->specials && is_special(f->mode) && s->protocol < 31)) {
		if (!recv_rdev(s, f, x, xflags))
			return false;
	} else if (is_device(f->mode)) {
		x->size = 0;
	} else if (s->protocol < 28) {
		/* any other entry resets the device number a later
		 * XMIT_SAME_RDEV_pre28 repeats (flist.c: recv_file_entry) */
		k->rdev_major = 0;
		k->rdev_minor = 0;
	}
	if (o->links && S_ISLNK(f->mode)) {
		if (!wire_read_varint30(&s->in, &v))
			return false;
		if (v < 0 || v >= MAXPATHLEN_WIRE)
			return wire_fail(&s->err, RERR_PROTOCOL, "overflow: symlink length %d", v);
		char *t = flist_alloc(fl, (size_t)v + 1);
		if (!t)
			return wire_fail(&s->err, RERR_MALLOC, "out of memory");
		if (!wire_read(&s->in, t, (size_t)v))
			return false;
		t[v] = '\0';
		if (memchr(t, '\0', (size_t)v))
			return wire_fail(&s->err, RERR_PROTOCOL, "NUL byte in a symlink target");
		/* munged links are harmless as they are (flist.c:
		 * recv_file_entry) */
		if (s->module.sanitize_links && !s->module.munge_symlinks && *t)
			path_sanitize(t, d->depth - 1, false);
		x->link = t;
		x->has |= FE_X_PTR;
	} else if (S_ISLNK(f->mode)) {
		x->link = "";
		x->has |= FE_X_PTR;
	}
	return true;
}

/* A protocol-30 hard-link follower names its group's first member by the
 * sender's number. One in this part shares its leader's attributes
 * (abbreviated); one whose leader is in an earlier part of an
 * incremental list comes with all of its own (flist.c: recv_file_entry). */
static bool recv_hlink_ref(struct session *s, struct flist *fl, struct file_entry *f,
			   uint32_t xflags, int32_t pos, struct decoding *d,
			   const struct file_entry **lead)
{
	int32_t first, part_start;
	size_t part_first, lead_pos;

	flist_receiving_part(fl, &part_start, &part_first);
	int32_t sent = part_start + (int32_t)((size_t)pos - part_first);
	if (!wire_read_varint(&s->in, &first))
		return false;
	if (first < 0 || first >= sent || !flist_sent_pos(fl, first, &lead_pos))
		return wire_fail(&s->err, RERR_PROTOCOL, "hard-link reference out of range: %d (%d)",
				 first, sent);
	const struct file_entry *l = &fl->files[lead_pos];
	d->x.hlink_group = fe_hlink_group(l) >= 0 ? fe_hlink_group(l) : (int32_t)lead_pos;
	if (first < part_start)
		return recv_attrs(s, fl, f, xflags, d);
	*lead = l;
	take_from_leader(s, f, &d->x, l);
	return true;
}

/* The entry's name and optional fields into the list's arena, now that
 * all of them are known. */
static bool place_entry(struct session *s, struct flist *fl, struct file_entry *f,
			const struct decoding *d)
{
	char *buf = flist_alloc_bytes(fl, fe_packed_len(d->base_len, &d->x));

	if (!buf)
		return wire_fail(&s->err, RERR_MALLOC, "out of memory");
	fe_place(f, buf, d->base, d->base_len, &d->x);
	return true;
}

static bool recv_sum(struct session *s, struct flist *fl, struct file_entry *f,
		     struct fe_extras *x, const struct file_entry *lead)
{
	size_t n = csum_len(s->flist_csum);
	uint8_t *sum = flist_alloc(fl, n);

	if (!sum)
		return wire_fail(&s->err, RERR_MALLOC, "out of memory");
	if (lead && fe_sum(lead))
		memcpy(sum, fe_sum(lead), n);
	else if (!wire_read(&s->in, sum, n))
		return false;
	if (S_ISREG(f->mode)) {
		x->sum = sum;
		x->has |= FE_X_PTR;
	}
	return true;
}

static void set_dir_flags(struct session *s, struct file_entry *f, uint32_t xflags)
{
	if (s->protocol >= 30) {
		if (!(xflags & XMIT_NO_CONTENT_DIR)) {
			if (xflags & XMIT_TOP_DIR)
				f->flags |= FE_TOP_DIR;
			f->flags |= FE_CONTENT_DIR;
		} else if (xflags & XMIT_TOP_DIR) {
			f->flags |= FE_IMPLIED_DIR;
		}
	} else if (xflags & XMIT_TOP_DIR) {
		f->flags |= FE_TOP_DIR | FE_CONTENT_DIR;
	} else {
		f->flags |= FE_CONTENT_DIR;
	}
}

static bool recv_entry(struct session *s, struct flist *fl, uint32_t xflags, struct decoding *d)
{
	const struct ferry_opts *o = s->opts;
	int32_t ndx = (int32_t)fl->count; /* place in files[] */
	struct file_entry *f = new_entry(s, fl);
	const struct file_entry *lead = NULL;
	struct fe_extras *x = &d->x;

	memset(x, 0, sizeof *x);
	x->hlink_group = -1;
	x->hl_next = -1;
	if (!f || !recv_name(s, fl, f, xflags, d))
		return false;
	if (s->protocol >= 30 && (xflags & XMIT_HLINKED) && !(xflags & XMIT_HLINK_FIRST)) {
		if (!recv_hlink_ref(s, fl, f, xflags, ndx, d, &lead))
			return false;
	} else if (!recv_attrs(s, fl, f, xflags, d)) {
		return false;
	}
	if (x->size < 0)
		return wire_fail(&s->err, RERR_UNSUPPORTED, "negative file length from sender");
	if (strcmp(f->basename, ".") == 0 && !f->dirname && !S_ISDIR(f->mode))
		return wire_fail(&s->err, RERR_PROTOCOL,
				 "ERROR: rejecting non-directory transfer-root entry: .");
	if (xflags & XMIT_HLINKED) {
		if (s->protocol >= 30) {
			f->flags |= FE_HLINKED;
			if (xflags & XMIT_HLINK_FIRST) {
				f->flags |= FE_HLINK_FIRST;
				x->hlink_group = ndx;
			}
		} else if (o->hard_links && !lead && !recv_old_hlink(s, f, x, xflags, ndx)) {
			return false;
		}
	} else if (s->protocol < 28 && o->hard_links && S_ISREG(f->mode) &&
		   !recv_old_hlink(s, f, x, xflags, ndx)) {
		return false;
	}
	if (o->checksum && (S_ISREG(f->mode) || s->protocol < 28) && !recv_sum(s, fl, f, x, lead))
		return false;
	if (o->acls && !acl_recv_entry(s, f->mode, x))
		return false;
	if (o->xattrs && !xattr_recv_entry(s, x))
		return false;
	if (o->acls || o->xattrs)
		x->has |= FE_X_META;
	if (x->hlink_group >= 0)
		x->has |= FE_X_HLINK;
	if (!o->hard_links)
		f->flags &= ~(FE_HLINKED | FE_HLINK_FIRST);
	f->flags |= FE_ACTIVE;
	if (S_ISDIR(f->mode))
		set_dir_flags(s, f, xflags);
	if (!place_entry(s, fl, f, d))
		return false;
	fl->count++;
	return true;
}

/* The peer's sizes are each at most INT64_MAX, but their sum need not be:
 * add as rsync's 64-bit counter does in practice, wrapping, without the
 * undefined behaviour of a signed overflow. */
static int64_t add_size(int64_t total, int64_t size)
{
	return (int64_t)((uint64_t)total + (uint64_t)size);
}

static void count_entry(struct stats *st, const struct file_entry *f)
{
	if (S_ISREG(f->mode)) {
		st->num_reg++;
		st->total_size = add_size(st->total_size, fe_size(f));
	} else if (S_ISDIR(f->mode)) {
		st->num_dirs++;
	} else if (S_ISLNK(f->mode)) {
		st->num_symlinks++;
		st->total_size = add_size(st->total_size, fe_size(f));
	} else if (is_device(f->mode)) {
		st->num_devices++;
	} else {
		st->num_specials++;
	}
	st->num_files++;
}

/* Read the flags word of the next entry; *end set at the end marker. */
static bool recv_flags(struct session *s, struct flist *fl, uint32_t *xflags, bool *end)
{
	int32_t v;
	uint8_t b;

	*end = false;
	if (s->varint_flist_flags) {
		if (!wire_read_varint(&s->in, &v))
			return false;
		if (v == 0) {
			if (!wire_read_varint(&s->in, &v))
				return false;
			fl->io_error |= v & IOERR_VALID_MASK;
			*end = true;
		}
		*xflags = (uint32_t)v;
		return true;
	}
	if (!wire_read_u8(&s->in, &b))
		return false;
	if (b == 0) {
		*end = true;
		return true;
	}
	*xflags = b;
	if (s->protocol >= 28 && (b & XMIT_EXTENDED_FLAGS)) {
		if (!wire_read_u8(&s->in, &b))
			return false;
		*xflags |= (uint32_t)b << 8;
	}
	if (*xflags == (XMIT_EXTENDED_FLAGS | XMIT_IO_ERROR_ENDLIST)) {
		if (!s->safe_flist)
			return wire_fail(&s->err, RERR_PROTOCOL, "Invalid flist flag: %x", *xflags);
		if (!wire_read_varint(&s->in, &v))
			return false;
		fl->io_error |= v & IOERR_VALID_MASK;
		*end = true;
	}
	return true;
}

/* uid and gid name lists after the entries (uidlist.c: recv_id_list).
 * Without -A every listed id owns one of the entries, so a longer list is
 * a hostile one (and each name costs a scan of the map); with -A the ACLs
 * may name more, and the map's growth is bounded by --max-alloc. */
static bool recv_id_list(struct session *s, struct id_map *map, bool is_user, size_t entries)
{
	int32_t id;

	for (size_t n = 0;; n++) {
		if (!wire_read_varint30(&s->in, &id))
			return false;
		if (id == 0)
			break;
		if (!s->opts->acls && n > entries)
			return wire_fail(&s->err, RERR_PROTOCOL, "%s name list longer than the file list",
					 is_user ? "user" : "group");
		if (!recv_owner_name(s, map, (uint32_t)id, is_user))
			return false;
	}
	return !s->id0_names || recv_owner_name(s, map, 0, is_user);
}

static bool recv_entries(struct session *s, struct flist *fl, struct decoding *d)
{
	uint32_t xflags;
	bool end;

	for (;;) {
		if (!recv_flags(s, fl, &xflags, &end))
			return false;
		if (end)
			return true;
		if (!recv_entry(s, fl, xflags, d))
			return false;
		count_entry(&s->stats, &fl->files[fl->count - 1]);
	}
}

bool flist_recv_entries(struct session *s, struct flist *fl)
{
	struct decoding *d = malloc(sizeof *d);
	bool ok;

	if (!d)
		return wire_fail(&s->err, RERR_MALLOC, "out of memory");
	ok = recv_entries(s, fl, d);
	free(d);
	return ok;
}

bool flist_recv(struct session *s, struct flist *fl)
{
	const struct ferry_opts *o = s->opts;
	uint64_t start = s->in.total_read;

	/* --usermap/--groupmap/--chown count while the id lists arrive */
	if (o->usermap && !s->uids.rules_parsed && !id_rules_parse(s, &s->uids, o->usermap, true))
		return false;
	if (o->groupmap && !s->gids.rules_parsed && !id_rules_parse(s, &s->gids, o->groupmap, false))
		return false;
	if (!meta_check_protocol(s))
		return false;
	if (s->inc_recurse && !flist_inc_reserve(s, fl))
		return false;
	if (!flist_recv_entries(s, fl))
		return false;
	/* -A sends the lists for the ids its ACLs name (uidlist.c:
	 * recv_id_list); incremental lists name ids inline instead. */
	bool id_lists = !o->numeric_ids && !s->inc_recurse;
	if ((o->owner || o->acls) && id_lists && !recv_id_list(s, &s->uids, true, fl->count))
		return false;
	if ((o->group || o->acls) && id_lists && !recv_id_list(s, &s->gids, false, fl->count))
		return false;
	if (o->acls)
		acl_map_ids(s);
	if (s->protocol < 30) {
		int32_t err;
		if (!wire_read_i32(&s->in, &err))
			return false;
		fl->io_error |= err & IOERR_VALID_MASK;
	}
	if (!o->ignore_errors)
		session_io_error_add(s, fl->io_error);
	for (size_t i = 0; i < fl->count; i++)
		id_map_apply(s, &fl->files[i]);
	s->stats.flist_size = (int64_t)(s->in.total_read - start);
	return true;
}

/* ---- incremental parts ---- */

/* Every name of a part lies directly in its directory. */
static bool in_dir(const struct file_entry *f, const char *dirpath)
{
	return f->dirname && strcmp(f->dirname, dirpath) == 0;
}

bool flist_recv_part(struct session *s, struct flist *fl, int32_t dir_ndx)
{
	uint64_t start = s->in.total_read;
	char dirpath[MAXPATHLEN_WIRE];

	/* rsync 3.4's checks against a hostile sender (CVE-2024-12087) */
	if (dir_ndx < 0 || (size_t)dir_ndx >= fl->ndirs)
		return wire_fail(&s->err, RERR_PROTOCOL, "refusing invalid dir_ndx %d >= %zu",
				 dir_ndx, fl->ndirs);
	struct file_entry *dir = fl->dirs[dir_ndx];
	/* an atomic read: the generator may be setting FE_DIR_CREATED */
	if (!(__atomic_load_n(&dir->flags, __ATOMIC_RELAXED) & FE_ACTIVE))
		return wire_fail(&s->err, RERR_PROTOCOL, "refusing flist for cleared dir_ndx %d",
				 dir_ndx);
	if (fl->dirs_listed[dir_ndx])
		return wire_fail(&s->err, RERR_PROTOCOL,
				 "refusing malicious duplicate flist for dir %d", dir_ndx);
	fl->dirs_listed[dir_ndx] = 1;
	if (!flist_path(dir, dirpath, sizeof dirpath))
		return wire_fail(&s->err, RERR_PROTOCOL, "file name too long");
	size_t first = fl->count;
	int io_before = fl->io_error;
	if (!flist_recv_entries(s, fl))
		return false;
	for (size_t i = first; i < fl->count; i++) {
		struct file_entry *f = &fl->files[i];
		if (!in_dir(f, dirpath))
			return wire_fail(&s->err, RERR_UNSUPPORTED,
					 "ABORTING due to invalid path from sender: %s/%s",
					 f->dirname ? f->dirname : "", f->basename);
		id_map_apply(s, f);
	}
	if (!s->opts->ignore_errors)
		session_io_error_add(s, fl->io_error & ~io_before);
	s->stats.flist_size += (int64_t)(s->in.total_read - start);
	return flist_part_finish(s, fl, first, fl->count - first, dir_ndx);
}

bool flist_recv_second(struct session *s, struct flist *fl)
{
	int32_t ndx;

	if (!fl->inc || fl->count != 1)
		return true;
	if (!wire_read_ndx(&s->in, &ndx))
		return false;
	if (ndx == NDX_FLIST_EOF) {
		fl->eof = true;
		return true;
	}
	if (ndx > NDX_FLIST_OFFSET)
		return wire_fail(&s->err, RERR_PROTOCOL, "Invalid dir index: %d", ndx);
	return flist_recv_part(s, fl, NDX_FLIST_OFFSET - ndx);
}
