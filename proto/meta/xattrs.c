/*
 * -X/--xattrs in rsync's protocol-30 encoding (rsync xattrs.c), with the
 * kernel's l*xattr calls from <sys/xattr.h>.
 */
#include "proto/base/alloc.h"
#include "proto/meta/xattrs.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "proto/base/fileio.h"
#include "proto/base/ixtable.h"
#include "proto/core/session.h"

#define MAX_FULL_DATUM 32                    /* longer values go as a digest */
#define XA_DIGEST_LEN 16                     /* md5, protocol >= 30 */
#define MAX_WIRE_XATTR_COUNT 65536
#define MAX_WIRE_XATTR_NAMELEN 4096
#define MAX_XATTR_VALUE_BYTES ((uint32_t)128 * 1024 * 1024)
#define MAX_XATTR_LIST_BYTES ((uint64_t)512 * 1024 * 1024)

#define XSTATE_ABBREV 1
#define XSTATE_DONE 2
#define XSTATE_TODO 3

#define USER_PREFIX "user."
#define SYSTEM_PREFIX "system."
#define RSYNC_PREFIX "user.rsync."  /* names under it starting with '%' are rsync's own */

struct xa_item {
	char *name;          /* NUL-terminated; name_len counts the NUL */
	uint32_t name_len;
	uint8_t *datum;      /* the value, or its digest when abbreviated */
	uint32_t datum_len;  /* the value's length */
	int32_t num;         /* 1-based position in the sender's sorted list */
	uint8_t state;       /* XSTATE_*: the generator's (or the sender's) view */
	uint8_t *full;       /* receiver: the value fetched for a digest */
	uint32_t full_len;
};

struct xa_set {
	struct xa_item *items;
	uint32_t count;
	uint64_t key;
};

struct xattr_state {
	struct xa_set *sets;
	size_t count, cap;
	struct ixtable index; /* sender: the sets by key */
	pthread_mutex_t lock; /* full/full_len: set once, by whichever side has the value first */
};

static bool abbrev(const struct xa_item *x)
{
	return x->datum_len > MAX_FULL_DATUM;
}

static void xattr_state_free(struct session *s);

static struct xattr_state *state(struct session *s)
{
	if (!s->xattr_state) {
		s->xattr_state = calloc(1, sizeof *s->xattr_state);
		if (s->xattr_state) {
			pthread_mutex_init(&s->xattr_state->lock, NULL);
			ixtable_init(&s->xattr_state->index);
			session_on_free(s, xattr_state_free);
		}
	}
	return s->xattr_state;
}

static void set_free(struct xa_set *set)
{
	for (uint32_t i = 0; i < set->count; i++) {
		free(set->items[i].name);
		free(set->items[i].datum);
		free(set->items[i].full);
	}
	free(set->items);
	set->items = NULL;
	set->count = 0;
}

/* The session's clean-up for the xattr sets seen (session_on_free). */
static void xattr_state_free(struct session *s)
{
	struct xattr_state *x = s->xattr_state;

	if (!x)
		return;
	for (size_t i = 0; i < x->count; i++)
		set_free(&x->sets[i]);
	free(x->sets);
	ixtable_free(&x->index);
	pthread_mutex_destroy(&x->lock);
	free(x);
	s->xattr_state = NULL;
}

bool meta_check_protocol(struct session *s)
{
	const struct ferry_opts *o = s->opts;

	if (s->protocol >= 30 || (!o->acls && !o->xattrs))
		return true;
	return wire_fail(&s->err, RERR_PROTOCOL, "--%s requires protocol 30 or higher (negotiated %d).",
			 o->acls ? "acls" : "xattrs", s->protocol);
}

static bool has_prefix(const char *name, const char *prefix)
{
	return strncmp(name, prefix, strlen(prefix)) == 0;
}

static bool is_rsync_internal(const char *name)
{
	return has_prefix(name, RSYNC_PREFIX) && name[strlen(RSYNC_PREFIX)] == '%';
}

static void digest(const uint8_t *v, size_t len, uint8_t *out)
{
	struct csum_ctx c;
	uint8_t d[CSUM_MAX_DIGEST];

	csum_file_init(&c, CSUM_MD5, 0);
	csum_file_update(&c, v, len);
	csum_file_final(&c, d);
	memcpy(out, d, XA_DIGEST_LEN);
}

/* All names of path (l*: a symlink's own). NULL with *len 0 when it has
 * none or the filesystem has no xattrs; NULL with errno set on failure. */
static char *list_names(const char *path, ssize_t *len)
{
	for (int tries = 0; tries < 4; tries++) {
		ssize_t n = llistxattr(path, NULL, 0);
		if (n <= 0) {
			*len = 0;
			if (n < 0 && (errno == ENOTSUP || errno == EOPNOTSUPP))
				return NULL;
			if (n < 0)
				*len = -1;
			return NULL;
		}
		char *buf = malloc((size_t)n + 1);
		if (!buf) {
			*len = -1;
			return NULL;
		}
		ssize_t got = llistxattr(path, buf, (size_t)n);
		if (got >= 0) {
			buf[got] = '\0';
			*len = got;
			return buf;
		}
		free(buf);
		if (errno != ERANGE) {
			*len = -1;
			return NULL;
		}
	}
	*len = -1;
	return NULL;
}

/* One value of path; NULL with errno set when missing or unreadable. */
static uint8_t *read_value(const char *path, const char *name, uint32_t *len)
{
	for (int tries = 0; tries < 4; tries++) {
		ssize_t n = lgetxattr(path, name, NULL, 0);
		if (n < 0)
			return NULL;
		uint8_t *buf = malloc((size_t)n + 1);
		if (!buf)
			return NULL;
		ssize_t got = lgetxattr(path, name, buf, (size_t)n);
		if (got >= 0) {
			*len = (uint32_t)got;
			return buf;
		}
		free(buf);
		if (errno != ERANGE)
			return NULL;
	}
	errno = ERANGE;
	return NULL;
}

static int cmp_items(const void *a, const void *b)
{
	return strcmp(((const struct xa_item *)a)->name, ((const struct xa_item *)b)->name);
}

/* Which names a side reads from disk (rsync_xal_get): a sender all but
 * system.*, a receiver without root only user.*, and rsync's own
 * user.rsync.%* only with -XX on the sender. */
static bool name_wanted(const struct session *s, const char *name, bool sending)
{
	bool user_only = !sending && !s->am_root;

	if (user_only ? !has_prefix(name, USER_PREFIX) : has_prefix(name, SYSTEM_PREFIX))
		return false;
	/* --fake-super keeps its own records out of the xattr lists */
	if (s->fake_super && is_rsync_internal(name)) {
		const char *sfx = name + strlen(RSYNC_PREFIX) + 1;
		if (!strcmp(sfx, "stat") || !strcmp(sfx, "aacl") || !strcmp(sfx, "dacl"))
			return false;
	}
	return !(sending && s->opts->xattrs < 2 && is_rsync_internal(name));
}

/* Read the wanted xattrs of path into set, sorted by name, values longer
 * than MAX_FULL_DATUM kept as digests when abbreviate is set. */
static bool read_set(struct session *s, const char *path, const char *shown, bool sending,
		     bool abbreviate, struct xa_set *set)
{
	ssize_t len;
	char *names = list_names(path, &len);

	memset(set, 0, sizeof *set);
	if (!names) {
		if (len == 0)
			return true;
		session_xfer_err(s, "get_xattr_names: llistxattr(\"%s\") failed: %s", shown,
				 strerror(errno));
		return false;
	}
	size_t n = 0;
	for (char *p = names; p < names + len; p += strlen(p) + 1)
		n++;
	set->items = calloc(n ? n : 1, sizeof *set->items);
	if (!set->items) {
		free(names);
		return false;
	}
	bool ok = true;
	for (char *p = names; ok && p < names + len; p += strlen(p) + 1) {
		if (!*p || !name_wanted(s, p, sending))
			continue;
		struct xa_item *x = &set->items[set->count];
		x->datum = read_value(path, p, &x->datum_len);
		if (!x->datum) {
			if (errno == ENODATA)
				continue; /* removed since the listing */
			session_xfer_err(s, "get_xattr_data: lgetxattr(\"%s\",\"%s\") failed: %s",
					 shown, p, strerror(errno));
			ok = false;
			break;
		}
		if (abbreviate && abbrev(x)) {
			uint8_t *d = malloc(XA_DIGEST_LEN);
			if (d)
				digest(x->datum, x->datum_len, d);
			free(x->datum);
			x->datum = d;
			ok = d != NULL;
		}
		x->name = strdup(p);
		x->name_len = (uint32_t)strlen(p) + 1;
		x->state = XSTATE_ABBREV;
		set->count++;
		ok = ok && x->name;
	}
	free(names);
	if (!ok) {
		set_free(set);
		return false;
	}
	if (set->count > 1)
		qsort(set->items, set->count, sizeof *set->items, cmp_items);
	for (uint32_t i = 0; i < set->count; i++)
		set->items[i].num = (int32_t)i + 1;
	return true;
}

/* ---- the list of sets ---- */

static uint64_t set_key(const struct xa_set *set)
{
	uint64_t h = 1469598103934665603ull ^ set->count;

	for (uint32_t i = 0; i < set->count; i++) {
		const struct xa_item *x = &set->items[i];
		size_t dl = abbrev(x) ? XA_DIGEST_LEN : x->datum_len;
		for (uint32_t k = 0; k < x->name_len; k++)
			h = (h ^ (uint8_t)x->name[k]) * 1099511628211ull;
		h = (h ^ x->datum_len) * 1099511628211ull;
		for (size_t k = 0; k < dl; k++)
			h = (h ^ x->datum[k]) * 1099511628211ull;
	}
	return h;
}

static bool sets_equal(const struct xa_set *a, const struct xa_set *b)
{
	if (a->count != b->count || a->key != b->key)
		return false;
	for (uint32_t i = 0; i < a->count; i++) {
		const struct xa_item *x = &a->items[i], *y = &b->items[i];
		if (x->datum_len != y->datum_len || strcmp(x->name, y->name) != 0 ||
		    memcmp(x->datum, y->datum, abbrev(x) ? XA_DIGEST_LEN : x->datum_len) != 0)
			return false;
	}
	return true;
}

static uint64_t set_digest(const void *ctx, int32_t ndx)
{
	const struct xattr_state *x = ctx;

	return x->sets[ndx].key;
}

static bool table_insert(struct xattr_state *x, size_t ndx)
{
	return ndx <= INT32_MAX && ixtable_add(&x->index, x->sets[ndx].key, (int32_t)ndx, set_digest, x);
}

static long table_find(const struct xattr_state *x, const struct xa_set *set)
{
	struct ixprobe p;

	for (int32_t i = ixtable_first(&x->index, set->key, &p); i >= 0;
	     i = ixtable_next(&x->index, &p))
		if (sets_equal(&x->sets[i], set))
			return i;
	return -1;
}

/* Append set (taking its items) and return its index, or -1. */
static long store_set(struct wire_error *err, struct xattr_state *x, struct xa_set *set,
		      bool index)
{
	if (x->count == x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 64;
		struct xa_set *t = xrealloc_array(err, x->sets, cap, sizeof *t);
		if (!t)
			return -1;
		x->sets = t;
		x->cap = cap;
	}
	x->sets[x->count] = *set;
	memset(set, 0, sizeof *set);
	if (index && !table_insert(x, x->count))
		return -1;
	return (long)x->count++;
}

static struct xa_set *entry_set(struct session *s, const struct file_entry *f)
{
	struct xattr_state *x = s->xattr_state;
	int32_t ndx = fe_xattr_ndx(f);

	if (!x || ndx <= 0 || (size_t)ndx > x->count)
		return NULL;
	return &x->sets[ndx - 1];
}

/* ---- the file list ---- */

static bool has_xattrs(const struct session *s, uint32_t mode)
{
	const struct ferry_opts *o = s->opts;

	if (S_ISREG(mode) || S_ISDIR(mode))
		return true;
	if (S_ISLNK(mode))
		return o->links;
	if (S_ISCHR(mode) || S_ISBLK(mode))
		return o->devices;
	return o->specials;
}

static bool send_set(struct session *s, const struct xa_set *set)
{
	if (!wire_write_varint(&s->out, (int32_t)set->count))
		return false;
	for (uint32_t i = 0; i < set->count; i++) {
		const struct xa_item *x = &set->items[i];
		const char *name = x->name;
		uint32_t name_len = x->name_len;
		/* --fake-super gives a stored non-user name back its own
		 * namespace: user.rsync.trusted.x goes out as trusted.x */
		size_t plen = strlen(RSYNC_PREFIX);
		if (s->fake_super && name_len > plen + 1 && has_prefix(name, RSYNC_PREFIX) &&
		    name[plen] != '%') {
			name += plen;
			name_len -= (uint32_t)plen;
		}
		if (!wire_write_varint(&s->out, (int32_t)name_len) ||
		    !wire_write_varint(&s->out, (int32_t)x->datum_len) ||
		    !wire_write(&s->out, name, name_len) ||
		    !wire_write(&s->out, x->datum, abbrev(x) ? XA_DIGEST_LEN : x->datum_len))
			return false;
	}
	return true;
}

bool xattr_send_entry(struct session *s, int rootfd, const char *path, struct file_entry *f)
{
	struct xattr_state *x = state(s);
	char p[MAXPATHLEN_WIRE + 64];
	struct xa_set set = {0};

	if (!x)
		return wire_fail(&s->err, RERR_MALLOC, "out of memory");
	/* An unreadable entry is sent with no xattrs (rsync leaves it out). */
	if (has_xattrs(s, f->mode) && fs_proc_path(p, sizeof p, rootfd, path) &&
	    !read_set(s, p, path, true, true, &set))
		session_io_error_add(s, IOERR_GENERAL);
	set.key = set_key(&set);
	long ndx = table_find(x, &set);
	if (!wire_write_varint(&s->out, (int32_t)(ndx + 1)))
		return false;
	if (ndx >= 0) {
		set_free(&set);
		fe_set_xattr_ndx(f, (int32_t)ndx + 1);
		return true;
	}
	if (!send_set(s, &set))
		return false;
	ndx = store_set(&s->err, x, &set, true);
	set_free(&set);
	if (ndx < 0)
		return wire_fail(&s->err, RERR_MALLOC, "out of memory");
	fe_set_xattr_ndx(f, (int32_t)ndx + 1);
	return true;
}

/* Read one (name, value-or-digest) of a literal list; *keep false when
 * this side does not store the name. */
static bool recv_item(struct session *s, struct xa_item *x, uint64_t *total, bool *keep,
		      bool *renamed)
{
	int32_t nl, dl;

	if (!wire_read_varint(&s->in, &nl) || !wire_read_varint(&s->in, &dl))
		return false;
	if (nl < 1 || nl > MAX_WIRE_XATTR_NAMELEN || dl < 0 || (uint32_t)dl > MAX_XATTR_VALUE_BYTES)
		return wire_fail(&s->err, RERR_PROTOCOL, "xattr name length %d or value length %d out of range",
				 nl, dl);
	*total += (uint64_t)nl + (uint64_t)dl;
	if (*total > MAX_XATTR_LIST_BYTES)
		return wire_fail(&s->err, RERR_PROTOCOL, "xattr list exceeds per-file limit");
	x->name_len = (uint32_t)nl;
	x->datum_len = (uint32_t)dl;
	x->name = malloc((size_t)nl);
	size_t got = abbrev(x) ? XA_DIGEST_LEN : (size_t)dl;
	x->datum = malloc(got ? got : 1);
	if (!x->name || !x->datum)
		return wire_fail(&s->err, RERR_MALLOC, "out of memory");
	if (!wire_read(&s->in, x->name, (size_t)nl) || !wire_read(&s->in, x->datum, got))
		return false;
	if (x->name[nl - 1] != '\0' || memchr(x->name, '\0', (size_t)nl - 1))
		return wire_fail(&s->err, RERR_FILEIO, "Invalid xattr name received (missing trailing \\0).");
	x->state = XSTATE_ABBREV;
	/* --fake-super stores another namespace's name under user.rsync.
	 * (xattrs.c: receive_xattr, am_root < 0) */
	if (s->fake_super && !has_prefix(x->name, USER_PREFIX)) {
		size_t plen = strlen(RSYNC_PREFIX);
		char *name = malloc(plen + (size_t)nl);
		if (!name)
			return wire_fail(&s->err, RERR_MALLOC, "out of memory");
		memcpy(name, RSYNC_PREFIX, plen);
		memcpy(name + plen, x->name, (size_t)nl);
		free(x->name);
		x->name = name;
		x->name_len += (uint32_t)plen;
		*renamed = true;
	}
	/* Without root only user.* can be set; rsync's own names need -XX. */
	*keep = (s->am_root || has_prefix(x->name, USER_PREFIX)) &&
		!(s->opts->xattrs < 2 && is_rsync_internal(x->name));
	return true;
}

bool xattr_recv_entry(struct session *s, struct fe_extras *e)
{
	struct xattr_state *x = state(s);
	int32_t v;

	if (!x)
		return wire_fail(&s->err, RERR_MALLOC, "out of memory");
	if (!wire_read_varint(&s->in, &v))
		return false;
	if (v < 0 || (size_t)v > x->count)
		return wire_fail(&s->err, RERR_STREAMIO, "receive_xattr: xa index %d out of range", v);
	if (v != 0) {
		e->xattr_ndx = v;
		return true;
	}
	if (!wire_read_varint(&s->in, &v))
		return false;
	if (v < 0 || v > MAX_WIRE_XATTR_COUNT)
		return wire_fail(&s->err, RERR_STREAMIO, "xattr count %d out of range", v);
	struct xa_set set = {.items = xcalloc_array(&s->err, (size_t)v, sizeof(struct xa_item))};
	uint64_t total = 0;
	bool ok = set.items != NULL, renamed = false;
	for (int32_t num = 1; ok && num <= v; num++) {
		struct xa_item *it = &set.items[set.count];
		bool keep = false;
		ok = recv_item(s, it, &total, &keep, &renamed);
		if (ok && keep) {
			it->num = num;
			set.count++;
		} else {
			free(it->name);
			free(it->datum);
			memset(it, 0, sizeof *it);
		}
	}
	if (ok && renamed && set.count > 1)
		qsort(set.items, set.count, sizeof *set.items, cmp_items);
	long ndx = ok ? store_set(&s->err, x, &set, false) : -1;
	if (ndx < 0) {
		set_free(&set);
		return ok ? wire_fail(&s->err, RERR_MALLOC, "out of memory") : false;
	}
	e->xattr_ndx = (int32_t)ndx + 1;
	return true;
}

/* ---- the request round ---- */

/* rsync's do_xfers: off for a dry run asked for, on for the one
 * --only-write-batch implies (main.c sets that after the options). */
static bool does_xfers(const struct session *s)
{
	return !s->opts->dry_run || s->opts->write_batch < 0;
}

bool xattr_request_follows(const struct session *s, int iflags)
{
	bool optim = s->protocol >= 31 && !(s->compat_flags & CF_AVOID_XATTR_OPTIM);

	return s->opts->xattrs && does_xfers(s) && (iflags & ITEM_REPORT_XATTR) &&
	       !(optim && (iflags & ITEM_XNAME_FOLLOWS) && (iflags & ITEM_LOCAL_CHANGE));
}

/* mirrors rsync xattrs.c:xattr_diff(file, sxp, find_all): with mark, the
 * abbreviated values that differ are flagged to be asked for */
static bool sets_differ(struct xa_set *snd, const struct xa_set *rec, bool mark)
{
	uint32_t si = 0, ri = 0;
	bool equal = snd->count == rec->count;

	while (si < snd->count) {
		struct xa_item *a = &snd->items[si];
		const struct xa_item *b = ri < rec->count ? &rec->items[ri] : NULL;
		int cmp = b ? strcmp(a->name, b->name) : -1;
		bool same;
		if (cmp > 0) {
			same = false;
		} else if (abbrev(a)) {
			uint8_t d[XA_DIGEST_LEN];
			same = cmp == 0 && a->datum_len == b->datum_len;
			if (same) {
				digest(b->datum, b->datum_len, d);
				same = memcmp(d, a->datum, XA_DIGEST_LEN) == 0;
			}
			if (!same && mark && a->state == XSTATE_ABBREV)
				a->state = XSTATE_TODO;
		} else {
			same = cmp == 0 && a->datum_len == b->datum_len &&
			       memcmp(a->datum, b->datum, a->datum_len) == 0;
		}
		if (!same)
			equal = false;
		if (cmp <= 0)
			si++;
		if (cmp >= 0)
			ri++;
	}
	return !equal || ri < rec->count;
}

int xattr_item_bits(struct session *s, int dirfd, const char *leaf, const struct file_entry *f)
{
	struct xa_set *snd = entry_set(s, f);
	struct xa_set have = {0};
	char p[MAXPATHLEN_WIRE + 64];

	if (!s->opts->xattrs || !snd)
		return 0;
	if (dirfd >= 0 && leaf && fs_proc_path(p, sizeof p, dirfd, leaf) &&
	    !read_set(s, p, leaf, false, false, &have))
		return 0;
	bool differ = sets_differ(snd, &have, true);
	set_free(&have);
	return differ ? ITEM_REPORT_XATTR : 0;
}

bool xattr_same(struct session *s, int dirfd, const char *leaf, const struct file_entry *f)
{
	struct xa_set *snd = entry_set(s, f);
	struct xa_set have = {0};
	char p[MAXPATHLEN_WIRE + 64];

	if (!s->opts->xattrs || !snd)
		return true;
	if (!fs_proc_path(p, sizeof p, dirfd, leaf) || !read_set(s, p, leaf, false, false, &have))
		return false;
	bool differ = sets_differ(snd, &have, false);
	set_free(&have);
	return !differ;
}

bool xattr_gen_request(struct session *s, const struct file_entry *f, int iflags)
{
	struct xa_set *set = entry_set(s, f);
	bool send = xattr_request_follows(s, iflags);
	int32_t prior = 0;

	if (!s->opts->xattrs || !does_xfers(s) || !(iflags & (ITEM_REPORT_XATTR | ITEM_TRANSFER)))
		return true;
	for (uint32_t i = 0; set && i < set->count; i++) {
		struct xa_item *x = &set->items[i];
		if (!abbrev(x) || x->state == XSTATE_DONE)
			continue;
		bool wanted = x->state == XSTATE_TODO;
		/* Matched values are taken from the basis from now on. */
		x->state = XSTATE_DONE;
		if (!wanted || !send)
			continue;
		if (!wire_write_varint(&s->out, x->num - prior))
			return false;
		prior = x->num;
	}
	return !send || wire_write_u8(&s->out, 0);
}

/* The next requested item: num advanced by a relative step (both
 * recv_xattr_request() sides). */
static struct xa_item *requested_item(struct session *s, struct xa_set *set, int32_t *num,
				      int32_t rel, const struct file_entry *f)
{
	if ((rel > 0 && *num > INT32_MAX - rel) || (rel < 0 && *num < INT32_MIN - rel)) {
		wire_fail(&s->err, RERR_PROTOCOL, "xattr rel_pos accumulation overflow");
		return NULL;
	}
	*num += rel;
	for (uint32_t i = 0; set && i < set->count; i++)
		if (set->items[i].num == *num)
			return &set->items[i];
	wire_fail(&s->err, RERR_PROTOCOL, "could not find xattr #%d for %s", *num, f->basename);
	return NULL;
}

bool xattr_sender_read_request(struct session *s, struct file_entry *f)
{
	struct xa_set *set = entry_set(s, f);
	int32_t num = 0, rel;

	if (!set)
		return wire_fail(&s->err, RERR_PROTOCOL, "recv_xattr_request: internal data error!");
	while (wire_read_varint(&s->in, &rel)) {
		if (rel == 0)
			return true;
		struct xa_item *x = requested_item(s, set, &num, rel, f);
		if (!x)
			return false;
		if (!abbrev(x) || x->state != XSTATE_ABBREV)
			return wire_fail(&s->err, RERR_PROTOCOL, "internal abbrev error on %s (%s, len=%u)!",
					 f->basename, x->name, x->datum_len);
		x->state = XSTATE_TODO;
	}
	return false;
}

bool xattr_sender_send_values(struct session *s, int rootfd, const char *path,
			      struct file_entry *f)
{
	struct xa_set *set = entry_set(s, f);
	char p[MAXPATHLEN_WIRE + 64];
	int32_t prior = 0;
	bool have_path = fs_proc_path(p, sizeof p, rootfd, path);

	for (uint32_t i = 0; set && i < set->count; i++) {
		struct xa_item *x = &set->items[i];
		if (!abbrev(x) || x->state != XSTATE_TODO)
			continue;
		x->state = XSTATE_DONE;
		if (!wire_write_varint(&s->out, x->num - prior))
			return false;
		prior = x->num;
		uint32_t len = 0;
		uint8_t *v = have_path ? read_value(p, x->name, &len) : NULL;
		if (!v) {
			session_xfer_err(s, "failed to re-read xattr %s for %s", x->name, path);
			if (!wire_write_varint(&s->out, 0))
				return false;
			continue;
		}
		bool ok = wire_write_varint(&s->out, (int32_t)len) && wire_write(&s->out, v, len);
		free(v);
		if (!ok)
			return false;
	}
	return wire_write_u8(&s->out, 0);
}

bool xattr_recv_values(struct session *s, const struct file_entry *f)
{
	struct xa_set *set = entry_set(s, f);
	int32_t num = 0, rel, len;

	if (!set)
		return wire_fail(&s->err, RERR_PROTOCOL, "recv_xattr_request: internal data error!");
	while (wire_read_varint(&s->in, &rel)) {
		if (rel == 0)
			return true;
		struct xa_item *x = requested_item(s, set, &num, rel, f);
		if (!x)
			return false;
		if (!abbrev(x))
			return wire_fail(&s->err, RERR_PROTOCOL, "internal abbrev error on %s (%s, len=%u)!",
					 f->basename, x->name, x->datum_len);
		if (!wire_read_varint(&s->in, &len))
			return false;
		if (len < 0 || (uint32_t)len > MAX_XATTR_VALUE_BYTES)
			return wire_fail(&s->err, RERR_PROTOCOL, "xattr datum_len %d out of range", len);
		uint8_t *v = malloc(len ? (size_t)len : 1);
		if (!v)
			return wire_fail(&s->err, RERR_MALLOC, "out of memory");
		if (!wire_read(&s->in, v, (size_t)len)) {
			free(v);
			return false;
		}
		/* a value cached from a matching basis meanwhile is the same
		 * (its digest matched): the first one stays */
		pthread_mutex_lock(&s->xattr_state->lock);
		if (!x->full) {
			x->full = v;
			x->full_len = (uint32_t)len;
			v = NULL;
		}
		pthread_mutex_unlock(&s->xattr_state->lock);
		free(v);
	}
	return false;
}

/* ---- applying ---- */

/* The value to set for x: fetched, literal, or (for a digest) the
 * basis's value when it matches. NULL when there is nothing usable. */
static const uint8_t *value_for(struct session *s, struct xa_item *x, const char *basis,
				uint32_t *len, uint8_t **owned)
{
	*owned = NULL;
	if (!abbrev(x)) {
		*len = x->datum_len;
		return x->datum;
	}
	pthread_mutex_lock(&s->xattr_state->lock);
	const uint8_t *full = x->full;
	*len = x->full_len;
	pthread_mutex_unlock(&s->xattr_state->lock);
	if (full)
		return full;
	uint8_t *v = basis ? read_value(basis, x->name, len) : NULL;
	uint8_t d[XA_DIGEST_LEN];
	if (v && *len == x->datum_len) {
		digest(v, *len, d);
		if (memcmp(d, x->datum, XA_DIGEST_LEN) == 0) {
			/* kept for the later entries sharing this set, such as
			 * hard links, which will not ask for it again
			 * (xattrs.c: rsync_xal_set caches the local value) */
			pthread_mutex_lock(&s->xattr_state->lock);
			if (!x->full) {
				x->full = v;
				x->full_len = *len;
				v = NULL;
			}
			full = x->full;
			*len = x->full_len;
			pthread_mutex_unlock(&s->xattr_state->lock);
			*owned = v;
			return full;
		}
	}
	free(v);
	return NULL;
}

static bool in_set(const struct xa_set *set, const char *name)
{
	for (uint32_t i = 0; set && i < set->count; i++)
		if (strcmp(set->items[i].name, name) == 0)
			return true;
	return false;
}

static bool apply_set(struct session *s, int dirfd, const char *leaf, const struct file_entry *f,
		      int basis_dirfd, const char *basis_leaf, bool generator);

bool xattr_apply(struct session *s, int dirfd, const char *leaf, const struct file_entry *f,
		 int basis_dirfd, const char *basis_leaf)
{
	return apply_set(s, dirfd, leaf, f, basis_dirfd, basis_leaf, false);
}

bool xattr_apply_gen(struct session *s, int dirfd, const char *leaf, const struct file_entry *f,
		     int basis_dirfd, const char *basis_leaf)
{
	return apply_set(s, dirfd, leaf, f, basis_dirfd, basis_leaf, true);
}

static bool apply_set(struct session *s, int dirfd, const char *leaf, const struct file_entry *f,
		      int basis_dirfd, const char *basis_leaf, bool generator)
{
	struct xa_set *set = entry_set(s, f);
	char p[MAXPATHLEN_WIRE + 64], b[MAXPATHLEN_WIRE + 64];
	bool ok = true;

	if (!s->opts->xattrs || s->opts->dry_run || !set || !fs_proc_path(p, sizeof p, dirfd, leaf))
		return true;
	bool have_basis = basis_leaf && fs_proc_path(b, sizeof b, basis_dirfd, basis_leaf);
	for (uint32_t i = 0; i < set->count; i++) {
		struct xa_item *x = &set->items[i];
		uint8_t *owned;
		uint32_t len;
		const uint8_t *v = value_for(s, x, have_basis ? b : NULL, &len, &owned);
		if (!v && generator)
			continue;
		if (!v) {
			session_xfer_err(s, "Missing abbreviated xattr value, %s, for \"%s\"",
					 x->name, leaf);
			s->got_xfer_error = true;
			ok = false;
			continue;
		}
		if (lsetxattr(p, x->name, v, len, 0) < 0) {
			session_xfer_err(s, "rsync_xal_set: lsetxattr(\"%s\",\"%s\") failed: %s", leaf,
					 x->name, strerror(errno));
			ok = false;
		}
		free(owned);
	}
	/* Remove what the sender does not have. */
	ssize_t len;
	char *names = list_names(p, &len);
	for (char *n = names; n && n < names + len; n += strlen(n) + 1) {
		if (!*n || !name_wanted(s, n, false) || in_set(set, n))
			continue;
		if (lremovexattr(p, n) < 0 && errno != ENODATA) {
			session_xfer_err(s, "rsync_xal_set: lremovexattr(\"%s\",\"%s\") failed: %s", leaf,
					 n, strerror(errno));
			ok = false;
		}
	}
	free(names);
	return ok;
}
