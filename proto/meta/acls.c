/*
 * -A/--acls in rsync's protocol-30 encoding (rsync acls.c), with the ACLs
 * read and written as the kernel's system.posix_acl_* attributes.
 */
#include "proto/base/alloc.h"
#include "proto/meta/acls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "proto/base/byteorder.h"
#include "proto/meta/fakesuper.h"
#include "proto/base/fileio.h"
#include "proto/core/session.h"

/* What an ACL entry's transmission flags say follows (acls.c: XMIT_*). */
#define ACL_XMIT_USER_OBJ (1u << 0)
#define ACL_XMIT_GROUP_OBJ (1u << 1)
#define ACL_XMIT_MASK_OBJ (1u << 2)
#define ACL_XMIT_OTHER_OBJ (1u << 3)
#define ACL_XMIT_NAME_LIST (1u << 4)

#define NO_ENTRY 0x80u              /* a permission object that is absent */
#define NAME_IS_USER (1u << 31)     /* a named entry for a user, not a group */
#define XFLAG_NAME_FOLLOWS 0x1u
#define XFLAG_NAME_IS_USER 0x2u
#define MAX_WIRE_ACL_COUNT 8192     /* more named entries than any fs allows */

/* The kernel's attribute format (linux/posix_acl_xattr.h). */
#define KACL_VERSION 2
#define KACL_USER_OBJ 0x01
#define KACL_USER 0x02
#define KACL_GROUP_OBJ 0x04
#define KACL_GROUP 0x08
#define KACL_MASK 0x10
#define KACL_OTHER 0x20
#define KACL_UNDEFINED_ID 0xffffffffu
#define XATTR_ACCESS "system.posix_acl_access"
#define XATTR_DEFAULT "system.posix_acl_default"
/* --fake-super keeps ACLs in these instead (rsync xattrs.c: XACC_ACL_ATTR,
 * XDEF_ACL_ATTR), as four 32-bit little-endian objects (user, group, mask,
 * other; 0x80 for none) and then (id, access) pairs. */
#define FAKE_ACL_ACCESS "user.rsync.%aacl"
#define FAKE_ACL_DEFAULT "user.rsync.%dacl"
#define FAKE_ACL_MAX_NAMES MAX_WIRE_ACL_COUNT

struct id_access {
	uint32_t id;
	uint32_t access; /* rwx bits, | NAME_IS_USER */
};

/* rsync's rsync_acl: the named entries plus the four objects. */
struct racl {
	struct id_access *names;
	uint32_t count;
	uint8_t user_obj, group_obj, mask_obj, other_obj;
};

struct racl_list {
	struct racl *items;
	size_t count, cap;
	long match; /* where the last search succeeded */
};

struct id_list {
	uint32_t *ids;
	size_t count, cap;
};

struct acl_state {
	struct racl_list access, deflt;
	struct id_list uids, gids; /* sender: ids named in what we sent */
};

static const struct racl empty_racl = {NULL, 0, NO_ENTRY, NO_ENTRY, NO_ENTRY, NO_ENTRY};

static void acl_state_free(struct session *s);

static struct acl_state *state(struct session *s)
{
	if (!s->acl_state) {
		s->acl_state = calloc(1, sizeof *s->acl_state);
		session_on_free(s, acl_state_free);
	}
	return s->acl_state;
}

static void racl_free(struct racl *r)
{
	free(r->names);
	*r = empty_racl;
}

/* The session's clean-up for the ACLs seen (session_on_free). */
static void acl_state_free(struct session *s)
{
	struct acl_state *a = s->acl_state;

	if (!a)
		return;
	struct racl_list *lists[2] = {&a->access, &a->deflt};
	for (int l = 0; l < 2; l++) {
		for (size_t i = 0; i < lists[l]->count; i++)
			racl_free(&lists[l]->items[i]);
		free(lists[l]->items);
	}
	free(a->uids.ids);
	free(a->gids.ids);
	free(a);
	s->acl_state = NULL;
}

static bool racl_equal(const struct racl *a, const struct racl *b)
{
	if (a->user_obj != b->user_obj || a->group_obj != b->group_obj ||
	    a->mask_obj != b->mask_obj || a->other_obj != b->other_obj || a->count != b->count)
		return false;
	for (uint32_t i = 0; i < a->count; i++)
		if (a->names[i].id != b->names[i].id || a->names[i].access != b->names[i].access)
			return false;
	return true;
}

/* Are the entries beyond the permission bits equal? a is a full ACL from
 * disk, b one received (condensed). mirrors rsync acls.c:rsync_acl_equal_enough() */
static bool racl_equal_enough(const struct racl *a, const struct racl *b, uint32_t mode)
{
	if ((a->mask_obj ^ b->mask_obj) & NO_ENTRY)
		return false;
	if (a->mask_obj != NO_ENTRY) {
		if (b->group_obj == NO_ENTRY) {
			if (a->group_obj != ((mode >> 3) & 7))
				return false;
		} else if (a->group_obj != b->group_obj) {
			return false;
		}
	}
	struct racl an = *a, bn = *b;
	an.user_obj = bn.user_obj = an.group_obj = bn.group_obj = 0;
	an.mask_obj = bn.mask_obj = an.other_obj = bn.other_obj = 0;
	return racl_equal(&an, &bn);
}

/* Add id to the list; *fresh says whether it was not there yet. */
static bool add_id(struct id_list *l, uint32_t id, bool *fresh)
{
	*fresh = false;
	for (size_t i = 0; i < l->count; i++)
		if (l->ids[i] == id)
			return true;
	*fresh = true;
	if (l->count == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		uint32_t *t = realloc(l->ids, cap * sizeof *t);
		if (!t)
			return false;
		l->ids = t;
		l->cap = cap;
	}
	l->ids[l->count++] = id;
	return true;
}

static struct racl *list_push(struct wire_error *err, struct racl_list *l)
{
	if (l->count == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct racl *t = xrealloc_array(err, l->items, cap, sizeof *t);
		if (!t)
			return NULL;
		l->items = t;
		l->cap = cap;
	}
	l->items[l->count] = empty_racl;
	return &l->items[l->count++];
}

/* mirrors rsync acls.c:find_matching_rsync_acl(): search backwards from
 * the last hit, since neighbours in a tree tend to share ACLs. */
static long list_find(struct racl_list *l, const struct racl *r)
{
	if (l->count == 0)
		return -1;
	if (l->match < 0 || (size_t)l->match >= l->count)
		l->match = (long)l->count - 1;
	for (size_t n = l->count; n--;) {
		if (racl_equal(&l->items[l->match], r))
			return l->match;
		if (l->match-- == 0)
			l->match = (long)l->count - 1;
	}
	l->match = -1;
	return -1;
}

static void put_entry(uint8_t *p, uint16_t tag, uint16_t perm, uint32_t id)
{
	p[0] = (uint8_t)tag;
	p[1] = (uint8_t)(tag >> 8);
	p[2] = (uint8_t)perm;
	p[3] = (uint8_t)(perm >> 8);
	for (int i = 0; i < 4; i++)
		p[4 + i] = (uint8_t)(id >> (8 * i));
}

/* Parse the kernel attribute into r (mirrors unpack_smb_acl: the four
 * objects apart, named users then named groups in the kernel's order). */
static bool parse_kacl(const uint8_t *buf, size_t len, struct racl *r)
{
	if (len < 4 || (len - 4) % 8 || get_le32(buf) != KACL_VERSION)
		return false;
	size_t n = (len - 4) / 8;
	r->names = n ? calloc(n, sizeof *r->names) : NULL;
	if (n && !r->names)
		return false;
	for (size_t i = 0; i < n; i++) {
		const uint8_t *e = buf + 4 + 8 * i;
		uint16_t tag = get_le16(e), perm = get_le16(e + 2) & 7;
		uint32_t id = get_le32(e + 4);
		switch (tag) {
		case KACL_USER_OBJ: r->user_obj = (uint8_t)perm; break;
		case KACL_GROUP_OBJ: r->group_obj = (uint8_t)perm; break;
		case KACL_MASK: r->mask_obj = (uint8_t)perm; break;
		case KACL_OTHER: r->other_obj = (uint8_t)perm; break;
		case KACL_USER:
		case KACL_GROUP:
			r->names[r->count].id = id;
			r->names[r->count].access = perm | (tag == KACL_USER ? NAME_IS_USER : 0);
			r->count++;
			break;
		default: break;
		}
	}
	return true;
}

static bool no_acl_errno(int e)
{
	return e == ENODATA || e == ENOTSUP || e == ENOSYS || e == EOPNOTSUPP;
}

/* --fake-super: an ACL from user.rsync.%aacl/%dacl, the objects it leaves
 * out taken from the mode (rsync acls.c: get_rsync_acl, am_root < 0). No
 * attribute: the access ACL the mode implies, or no default ACL. */
static bool read_fake_acl(struct session *s, const char *path, const char *shown, bool deflt,
			  uint32_t mode, struct racl *r)
{
	size_t max = 16 + (size_t)FAKE_ACL_MAX_NAMES * 8;
	uint8_t *buf = malloc(max);
	ssize_t n = buf ? lgetxattr(path, deflt ? FAKE_ACL_DEFAULT : FAKE_ACL_ACCESS, buf, max)
			: -1;

	*r = empty_racl;
	if (n < 0) {
		int e = buf ? errno : ENOMEM;
		free(buf);
		if (!deflt) {
			r->user_obj = (mode >> 6) & 7;
			r->group_obj = (mode >> 3) & 7;
			r->other_obj = mode & 7;
		}
		if (no_acl_errno(e))
			return true;
		session_xfer_err(s, "get_acl: reading %s of %s: %s",
				 deflt ? FAKE_ACL_DEFAULT : FAKE_ACL_ACCESS, shown, strerror(e));
		return false;
	}
	if (n < 16 || (n - 16) % 8) {
		free(buf);
		session_xfer_err(s, "get_acl: corrupt %s on %s", deflt ? FAKE_ACL_DEFAULT
								       : FAKE_ACL_ACCESS, shown);
		return false;
	}
	uint32_t user = get_le32(buf), group = get_le32(buf + 4), other = get_le32(buf + 12);
	r->user_obj = user == NO_ENTRY ? (mode >> 6) & 7 : (uint8_t)user;
	r->group_obj = group == NO_ENTRY ? (mode >> 3) & 7 : (uint8_t)group;
	r->mask_obj = (uint8_t)get_le32(buf + 8);
	r->other_obj = other == NO_ENTRY ? mode & 7 : (uint8_t)other;
	r->count = (uint32_t)((n - 16) / 8);
	r->names = r->count ? calloc(r->count, sizeof *r->names) : NULL;
	if (r->count && !r->names) {
		free(buf);
		r->count = 0;
		return false;
	}
	for (uint32_t i = 0; i < r->count; i++) {
		r->names[i].id = get_le32(buf + 16 + 8 * i);
		r->names[i].access = get_le32(buf + 20 + 8 * i);
	}
	free(buf);
	return true;
}

/* --fake-super: store a received ACL as rsync does (acls.c: set_rsync_acl). */
static int write_fake_acl(const char *path, const struct racl *r, bool deflt)
{
	size_t len = 16 + (size_t)r->count * 8;
	uint8_t *buf = malloc(len);

	if (!buf) {
		errno = ENOMEM;
		return -1;
	}
	put_le32(buf, r->user_obj);
	put_le32(buf + 4, r->group_obj);
	put_le32(buf + 8, r->mask_obj);
	put_le32(buf + 12, r->other_obj);
	for (uint32_t i = 0; i < r->count; i++) {
		put_le32(buf + 16 + 8 * i, r->names[i].id);
		put_le32(buf + 20 + 8 * i, r->names[i].access);
	}
	int rc = lsetxattr(path, deflt ? FAKE_ACL_DEFAULT : FAKE_ACL_ACCESS, buf, len, 0);
	free(buf);
	return rc;
}

/* Read one ACL of path; an absent access ACL is the one the mode implies,
 * an absent default ACL is empty (rsync acls.c: get_rsync_acl). */
static bool read_acl(struct session *s, const char *path, const char *shown, bool deflt,
		     uint32_t mode, struct racl *r)
{
	if (s->fake_super)
		return read_fake_acl(s, path, shown, deflt, mode, r);
	uint8_t stack[1024], *buf = stack;
	ssize_t n = lgetxattr(path, deflt ? XATTR_DEFAULT : XATTR_ACCESS, buf, sizeof stack);

	*r = empty_racl;
	if (n < 0 && errno == ERANGE) {
		n = lgetxattr(path, deflt ? XATTR_DEFAULT : XATTR_ACCESS, NULL, 0);
		buf = n > 0 ? malloc((size_t)n) : NULL;
		if (buf)
			n = lgetxattr(path, deflt ? XATTR_DEFAULT : XATTR_ACCESS, buf, (size_t)n);
		else
			n = -1;
	}
	bool ok = true;
	if (n < 0) {
		if (!no_acl_errno(errno)) {
			session_xfer_err(s, "get_acl: sys_acl_get_file(%s, %s): %s", shown,
					 deflt ? "ACL_TYPE_DEFAULT" : "ACL_TYPE_ACCESS", strerror(errno));
			ok = false;
		}
		if (!deflt) {
			r->user_obj = (mode >> 6) & 7;
			r->group_obj = (mode >> 3) & 7;
			r->other_obj = mode & 7;
		}
	} else if (!parse_kacl(buf, (size_t)n, r)) {
		session_xfer_err(s, "get_acl: cannot parse the ACL of %s", shown);
		racl_free(r);
		ok = false;
	}
	if (buf != stack)
		free(buf);
	return ok;
}

/* ---- sending ---- */

/* Drop what the mode already says (acls.c: rsync_acl_strip_perms). */
static void strip_perms(struct racl *r, uint32_t mode)
{
	r->user_obj = NO_ENTRY;
	if (r->mask_obj == NO_ENTRY) {
		r->group_obj = NO_ENTRY;
	} else {
		uint32_t group_perms = (mode >> 3) & 7;
		if (r->group_obj == group_perms)
			r->group_obj = NO_ENTRY;
		if (r->count != 0 && r->mask_obj == group_perms)
			r->mask_obj = NO_ENTRY;
	}
	r->other_obj = NO_ENTRY;
}

static bool write_inline_name(struct wire_out *out, const char *name)
{
	size_t n = strlen(name);

	if (n > 255)
		n = 255;
	return wire_write_u8(out, (uint8_t)n) && wire_write(out, name, n);
}

static bool send_names(struct session *s, const struct racl *r)
{
	struct acl_state *a = state(s);

	if (!wire_write_varint(&s->out, (int32_t)r->count))
		return false;
	for (uint32_t i = 0; i < r->count; i++) {
		const struct id_access *ida = &r->names[i];
		bool user = ida->access & NAME_IS_USER;
		uint32_t xbits = (ida->access & ~NAME_IS_USER) << 2;
		if (user)
			xbits |= XFLAG_NAME_IS_USER;
		/* Without incremental recursion the names go in the id lists
		 * after the file list; with it, inline the first time an id
		 * comes (acls.c: send_ida_entries). */
		bool fresh = false;
		if (!s->opts->numeric_ids && !add_id(user ? &a->uids : &a->gids, ida->id, &fresh))
			return wire_fail(&s->err, RERR_MALLOC, "out of memory");
		char buf[256];
		const char *name = fresh && s->inc_recurse && !s->module.ids_by_number
					   ? id_local_name(s, user, ida->id, buf, sizeof buf)
					   : NULL;
		if (name)
			xbits |= XFLAG_NAME_FOLLOWS;
		if (!wire_write_varint(&s->out, (int32_t)ida->id) ||
		    !wire_write_varint(&s->out, (int32_t)xbits))
			return false;
		if (name && !write_inline_name(&s->out, name))
			return false;
	}
	return true;
}

/* mirrors rsync acls.c:send_rsync_acl(); takes over r's names when the
 * ACL is new. */
static bool send_racl(struct session *s, struct racl_list *l, struct racl *r)
{
	long ndx = list_find(l, r);

	if (!wire_write_varint(&s->out, (int32_t)(ndx + 1)))
		return false;
	if (ndx >= 0)
		return true;
	uint8_t flags = 0;
	if (r->user_obj != NO_ENTRY)
		flags |= ACL_XMIT_USER_OBJ;
	if (r->group_obj != NO_ENTRY)
		flags |= ACL_XMIT_GROUP_OBJ;
	if (r->mask_obj != NO_ENTRY)
		flags |= ACL_XMIT_MASK_OBJ;
	if (r->other_obj != NO_ENTRY)
		flags |= ACL_XMIT_OTHER_OBJ;
	if (r->count)
		flags |= ACL_XMIT_NAME_LIST;
	if (!wire_write_u8(&s->out, flags) ||
	    ((flags & ACL_XMIT_USER_OBJ) && !wire_write_varint(&s->out, r->user_obj)) ||
	    ((flags & ACL_XMIT_GROUP_OBJ) && !wire_write_varint(&s->out, r->group_obj)) ||
	    ((flags & ACL_XMIT_MASK_OBJ) && !wire_write_varint(&s->out, r->mask_obj)) ||
	    ((flags & ACL_XMIT_OTHER_OBJ) && !wire_write_varint(&s->out, r->other_obj)) ||
	    ((flags & ACL_XMIT_NAME_LIST) && !send_names(s, r)))
		return false;
	struct racl *kept = list_push(&s->err, l);
	if (!kept)
		return wire_fail(&s->err, RERR_MALLOC, "out of memory");
	*kept = *r;
	*r = empty_racl;
	return true;
}

/* Which entries carry ACLs at all (acls.c: get_acl; devices and specials
 * only when they are sent as such). */
static bool has_acls(const struct session *s, uint32_t mode)
{
	if (S_ISREG(mode) || S_ISDIR(mode))
		return true;
	if (S_ISCHR(mode) || S_ISBLK(mode))
		return s->opts->devices;
	if (S_ISFIFO(mode) || S_ISSOCK(mode))
		return s->opts->specials;
	return false;
}

bool acl_send_entry(struct session *s, int rootfd, const char *path, const struct file_entry *f)
{
	char p[MAXPATHLEN_WIRE + 64];
	struct racl acc = empty_racl, def = empty_racl;
	struct acl_state *a = state(s);

	if (!a)
		return wire_fail(&s->err, RERR_MALLOC, "out of memory");
	if (S_ISLNK(f->mode))
		return true;
	bool on_disk = has_acls(s, f->mode) && fs_proc_path(p, sizeof p, rootfd, path);
	if (!on_disk || !read_acl(s, p, path, false, f->mode, &acc)) {
		racl_free(&acc);
		acc.user_obj = (f->mode >> 6) & 7;
		acc.group_obj = (f->mode >> 3) & 7;
		acc.other_obj = f->mode & 7;
	}
	strip_perms(&acc, f->mode);
	bool ok = send_racl(s, &a->access, &acc);
	if (ok && S_ISDIR(f->mode)) {
		if (on_disk && !read_acl(s, p, path, true, f->mode, &def))
			racl_free(&def);
		ok = send_racl(s, &a->deflt, &def);
	}
	racl_free(&acc);
	racl_free(&def);
	return ok;
}

size_t acl_sent_ids(const struct session *s, bool users, const uint32_t **ids)
{
	const struct acl_state *a = s->acl_state;

	if (!a) {
		*ids = NULL;
		return 0;
	}
	*ids = users ? a->uids.ids : a->gids.ids;
	return users ? a->uids.count : a->gids.count;
}

/* ---- receiving ---- */

static bool recv_access_bits(struct session *s, bool named, uint32_t *access, bool *name_follows)
{
	int32_t v;

	if (!wire_read_varint(&s->in, &v))
		return false;
	uint32_t a = (uint32_t)v;
	if (named) {
		*name_follows = a & XFLAG_NAME_FOLLOWS;
		bool user = a & XFLAG_NAME_IS_USER;
		a >>= 2;
		if (a & ~7u)
			return wire_fail(&s->err, RERR_STREAMIO,
					 "recv_acl_access: value out of range: %x", a);
		*access = a | (user ? NAME_IS_USER : 0);
		return true;
	}
	if (a & ~7u)
		return wire_fail(&s->err, RERR_STREAMIO, "recv_acl_access: value out of range: %x", a);
	*access = a;
	return true;
}

/* One of the four permission objects. */
static bool recv_obj(struct session *s, uint8_t *obj)
{
	uint32_t bits = 0;
	bool unused = false;

	if (!recv_access_bits(s, false, &bits, &unused))
		return false;
	*obj = (uint8_t)bits;
	return true;
}

/* An inline name (only sent with incremental recursion). */
static bool recv_inline_name(struct session *s, uint32_t id, bool user)
{
	char name[256];
	uint8_t len;

	if (!wire_read_u8(&s->in, &len) || !wire_read(&s->in, name, len))
		return false;
	name[len] = '\0';
	return id_map_add(s, user ? &s->uids : &s->gids, id, name, user);
}

/* mirrors rsync acls.c:recv_ida_entries(); returns the or of the bits. */
static bool recv_names(struct session *s, struct racl *r, uint8_t *mask_bits)
{
	int32_t count;

	if (!wire_read_varint(&s->in, &count))
		return false;
	if (count < 0 || count > MAX_WIRE_ACL_COUNT)
		return wire_fail(&s->err, RERR_STREAMIO, "ACL count %d out of range (max %d)", count,
				 MAX_WIRE_ACL_COUNT);
	r->names = count ? xcalloc_array(&s->err, (size_t)count, sizeof *r->names) : NULL;
	if (count && !r->names)
		return false;
	r->count = (uint32_t)count;
	for (int32_t i = 0; i < count; i++) {
		int32_t id;
		uint32_t access = 0;
		bool has_name = false;
		if (!wire_read_varint(&s->in, &id) || !recv_access_bits(s, true, &access, &has_name))
			return false;
		if (has_name && !recv_inline_name(s, (uint32_t)id, access & NAME_IS_USER))
			return false;
		r->names[i].id = (uint32_t)id;
		r->names[i].access = access;
		*mask_bits |= (uint8_t)(access & 7);
	}
	return true;
}

/* mirrors rsync acls.c:recv_rsync_acl(); *ndx gets the list index + 1. */
static bool recv_racl(struct session *s, struct racl_list *l, bool deflt, uint32_t mode,
		      int32_t *ndx)
{
	int32_t v;
	uint8_t flags, mask_bits = 0;

	if (!wire_read_varint(&s->in, &v))
		return false;
	if (v < 0 || (size_t)v > l->count)
		return wire_fail(&s->err, RERR_STREAMIO, "recv_acl_index: %s ACL index %d > %zu",
				 deflt ? "ACL_TYPE_DEFAULT" : "ACL_TYPE_ACCESS", v, l->count);
	if (v != 0) {
		*ndx = v;
		return true;
	}
	struct racl *r = list_push(&s->err, l);
	if (!r)
		return wire_fail(&s->err, RERR_MALLOC, "out of memory");
	*ndx = (int32_t)l->count;
	if (!wire_read_u8(&s->in, &flags))
		return false;
	if (((flags & ACL_XMIT_USER_OBJ) && !recv_obj(s, &r->user_obj)) ||
	    ((flags & ACL_XMIT_GROUP_OBJ) && !recv_obj(s, &r->group_obj)) ||
	    ((flags & ACL_XMIT_MASK_OBJ) && !recv_obj(s, &r->mask_obj)) ||
	    ((flags & ACL_XMIT_OTHER_OBJ) && !recv_obj(s, &r->other_obj)))
		return false;
	if ((flags & ACL_XMIT_NAME_LIST) && !recv_names(s, r, &mask_bits))
		return false;
	/* Named entries need a mask. */
	if (r->count && r->mask_obj == NO_ENTRY) {
		if (!deflt)
			mask_bits = (mode >> 3) & 7;
		else
			mask_bits |= r->group_obj & ~NO_ENTRY;
		r->mask_obj = mask_bits;
	}
	return true;
}

bool acl_recv_entry(struct session *s, uint32_t mode, struct fe_extras *x)
{
	struct acl_state *a = state(s);

	if (!a)
		return wire_fail(&s->err, RERR_MALLOC, "out of memory");
	if (S_ISLNK(mode))
		return true;
	if (!recv_racl(s, &a->access, false, mode, &x->acl_ndx))
		return false;
	return !S_ISDIR(mode) || recv_racl(s, &a->deflt, true, 0, &x->defacl_ndx);
}

static uint32_t lookup(const struct id_map *m, uint32_t id)
{
	for (size_t i = 0; i < m->count; i++)
		if (m->from[i] == id)
			return m->to[i];
	return id;
}

void acl_map_ids(struct session *s)
{
	struct acl_state *a = s->acl_state;

	if (!a || s->opts->numeric_ids || s->module.ids_by_number)
		return;
	struct racl_list *lists[2] = {&a->access, &a->deflt};
	for (int l = 0; l < 2; l++)
		for (size_t i = 0; i < lists[l]->count; i++)
			for (uint32_t k = 0; k < lists[l]->items[i].count; k++) {
				struct id_access *ida = &lists[l]->items[i].names[k];
				ida->id = lookup(ida->access & NAME_IS_USER ? &s->uids : &s->gids,
						 ida->id);
			}
}

/* ---- comparing and applying ---- */

static const struct racl *entry_acl(struct session *s, int32_t ndx, bool deflt)
{
	struct acl_state *a = s->acl_state;
	const struct racl_list *l = a ? (deflt ? &a->deflt : &a->access) : NULL;

	if (!l || ndx <= 0 || (size_t)ndx > l->count)
		return NULL;
	return &l->items[ndx - 1];
}

static int cmp_named(const void *x, const void *y)
{
	const struct id_access *a = x, *b = y;
	bool ua = a->access & NAME_IS_USER, ub = b->access & NAME_IS_USER;

	if (ua != ub)
		return ua ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

/* Write r as the kernel attribute; for the access ACL the permission
 * objects come from the mode (acls.c: change_sacl_perms). */
static int write_kacl(const char *path, const struct racl *r, bool deflt, uint32_t mode)
{
	size_t n = 4 + (size_t)r->count + (r->mask_obj != NO_ENTRY);
	uint8_t *buf = malloc(4 + n * 8);
	struct id_access *named = r->count ? malloc(r->count * sizeof *named) : NULL;

	if (!buf || (r->count && !named)) {
		free(buf);
		free(named);
		errno = ENOMEM;
		return -1;
	}
	if (r->count) {
		memcpy(named, r->names, r->count * sizeof *named);
		qsort(named, r->count, sizeof *named, cmp_named);
	}
	uint8_t user = deflt ? r->user_obj & 7 : (mode >> 6) & 7;
	uint8_t group = !deflt && r->group_obj == NO_ENTRY ? (mode >> 3) & 7 : r->group_obj & 7;
	uint8_t mask = deflt ? r->mask_obj & 7 : (mode >> 3) & 7;
	uint8_t other = deflt ? r->other_obj & 7 : mode & 7;
	uint8_t *p = buf + 4;
	memset(buf, 0, 4);
	buf[0] = KACL_VERSION;
	put_entry(p, KACL_USER_OBJ, user, KACL_UNDEFINED_ID), p += 8;
	uint32_t i = 0;
	for (; i < r->count && (named[i].access & NAME_IS_USER); i++, p += 8)
		put_entry(p, KACL_USER, named[i].access & 7, named[i].id);
	put_entry(p, KACL_GROUP_OBJ, group, KACL_UNDEFINED_ID), p += 8;
	for (; i < r->count; i++, p += 8)
		put_entry(p, KACL_GROUP, named[i].access & 7, named[i].id);
	if (r->mask_obj != NO_ENTRY)
		put_entry(p, KACL_MASK, mask, KACL_UNDEFINED_ID), p += 8;
	put_entry(p, KACL_OTHER, other, KACL_UNDEFINED_ID), p += 8;
	int rc = lsetxattr(path, deflt ? XATTR_DEFAULT : XATTR_ACCESS, buf, (size_t)(p - buf), 0);
	free(buf);
	free(named);
	return rc;
}

/* Compare (and with apply, set) the entry's ACLs; mirrors rsync
 * acls.c:set_acl(). */
static int acl_sync(struct session *s, int dirfd, const char *leaf, const struct file_entry *f,
		    uint32_t *cur_mode, bool apply)
{
	const struct racl *want_acc = entry_acl(s, fe_acl_ndx(f), false);
	const struct racl *want_def = S_ISDIR(f->mode) ? entry_acl(s, fe_defacl_ndx(f), true) : NULL;
	char p[MAXPATHLEN_WIRE + 64];
	struct racl have = empty_racl;
	int changed = 0;

	if (S_ISLNK(f->mode) || (!want_acc && !want_def) || !fs_proc_path(p, sizeof p, dirfd, leaf))
		return 0;
	if (want_acc) {
		bool eq = read_acl(s, p, leaf, false, *cur_mode, &have) &&
			  racl_equal_enough(&have, want_acc, f->mode);
		racl_free(&have);
		if (!eq) {
			changed = ITEM_REPORT_ACL;
			if (apply && (s->fake_super ? write_fake_acl(p, want_acc, false)
						    : write_kacl(p, want_acc, false, f->mode)) < 0) {
				session_xfer_err(s, "set_acl: sys_acl_set_file(%s, ACL_TYPE_ACCESS): %s",
						 leaf, strerror(errno));
				return -1;
			}
			struct stat st;
			/* a fake-super ACL leaves the inode's mode alone */
			if (apply && !s->fake_super && lstat(p, &st) == 0)
				*cur_mode = st.st_mode;
		}
	}
	if (want_def) {
		bool eq = read_acl(s, p, leaf, true, *cur_mode, &have) && racl_equal(&have, want_def);
		racl_free(&have);
		if (!eq) {
			changed = ITEM_REPORT_ACL;
			int rc = 0;
			if (apply && want_def->user_obj == NO_ENTRY) {
				rc = lremovexattr(p, s->fake_super ? FAKE_ACL_DEFAULT : XATTR_DEFAULT);
				if (rc < 0 && no_acl_errno(errno))
					rc = 0;
			} else if (apply) {
				rc = s->fake_super ? write_fake_acl(p, want_def, true)
						   : write_kacl(p, want_def, true, f->mode);
			}
			if (rc < 0) {
				session_xfer_err(s, "set_acl: sys_acl_set_file(%s, ACL_TYPE_DEFAULT): %s",
						 leaf, strerror(errno));
				return -1;
			}
		}
	}
	return changed;
}

int acl_item_bits(struct session *s, int dirfd, const char *leaf, const struct file_entry *f)
{
	struct stat st;
	char p[MAXPATHLEN_WIRE + 64];

	if (!s->opts->acls || S_ISLNK(f->mode) || !fs_proc_path(p, sizeof p, dirfd, leaf) ||
	    lstat(p, &st) < 0)
		return 0;
	fake_stat(s, dirfd, leaf, leaf, &st);
	uint32_t mode = st.st_mode;
	int r = acl_sync(s, dirfd, leaf, f, &mode, false);
	return r > 0 ? r : 0;
}

int acl_apply(struct session *s, int dirfd, const char *leaf, const struct file_entry *f,
	      uint32_t *cur_mode)
{
	if (!s->opts->acls || s->opts->dry_run)
		return 0;
	return acl_sync(s, dirfd, leaf, f, cur_mode, true);
}

uint32_t acl_default_perms(int dirfd, uint32_t umask_perms)
{
	/* 1024 entries: more than a file system keeps; an ACL too big to
	 * read falls back on the umask, as a read error does */
	uint8_t buf[4 + 8 * 1024];
	struct racl r = empty_racl;

	if (dirfd < 0)
		return umask_perms;
	ssize_t n = fgetxattr(dirfd, XATTR_DEFAULT, buf, sizeof buf);
	if (n < 0 || !parse_kacl(buf, (size_t)n, &r))
		return umask_perms;
	uint32_t perms = umask_perms;
	if (r.user_obj != NO_ENTRY)
		perms = (uint32_t)r.user_obj << 6 |
			(uint32_t)(r.mask_obj != NO_ENTRY ? r.mask_obj : r.group_obj) << 3 |
			(r.other_obj != NO_ENTRY ? r.other_obj : 0);
	racl_free(&r);
	return perms;
}
