/*
 * The file list itself: its storage (names arena, entry arrays, the
 * reserved arrays of an incremental list), naming, rsync's order and the
 * receiver's duplicate rules. Receiving it is flist_recv.c's.
 */
#include "proto/core/flist.h"
#include "proto/base/alloc.h"
#include "proto/base/fname.h"

#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "proto/core/session.h"

#define ARENA_BLOCK (256 * 1024)

void flist_init(struct flist *fl)
{
	memset(fl, 0, sizeof *fl);
}

/* Arena blocks are mapped, not malloc'ed: a released block goes back to
 * the kernel at once, where malloc could keep it in the middle of its
 * heap. The block's size is in its first word. */
#define BLOCK_HEAD 16

static char *block_new(size_t cap)
{
	size_t bytes = cap + BLOCK_HEAD;
	char *b = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (b == MAP_FAILED)
		return NULL;
	memcpy(b, &bytes, sizeof bytes);
	return b + BLOCK_HEAD;
}

static void block_free(char *block)
{
	size_t bytes;

	memcpy(&bytes, block - BLOCK_HEAD, sizeof bytes);
	munmap(block - BLOCK_HEAD, bytes);
}

void flist_arena_free_below(struct flist_arena *a, size_t upto)
{
	for (; a->freed < upto && a->freed < a->nblocks; a->freed++)
		block_free(a->blocks[a->freed]);
}

static void arena_free(struct flist_arena *a)
{
	flist_arena_free_below(a, a->nblocks);
	free(a->blocks);
}

void flist_free(struct flist *fl)
{
	arena_free(&fl->names);
	arena_free(&fl->kept);
	if (fl->inc) {
		flist_inc_release(fl);
	} else {
		free(fl->files);
		free(fl->sorted);
	}
	memset(fl, 0, sizeof *fl);
}

void *flist_arena_alloc(struct flist_arena *a, size_t len)
{
	len = (len + 7) & ~(size_t)7;
	a->used = (a->used + 7) & ~(size_t)7; /* after unaligned names; caps are 8-aligned */
	if (a->nblocks == 0 || a->cap - a->used < len) {
		/* a block with its head maps whole pages: one more page for
		 * the head's 16 bytes would cost 1/64 of the names */
		size_t cap = len > ARENA_BLOCK - BLOCK_HEAD ? len : ARENA_BLOCK - BLOCK_HEAD;
		char **blocks = realloc(a->blocks, (a->nblocks + 1) * sizeof *blocks);
		if (!blocks)
			return NULL;
		a->blocks = blocks;
		if (!(a->blocks[a->nblocks] = block_new(cap)))
			return NULL;
		a->nblocks++;
		a->used = 0;
		a->cap = cap;
	}
	void *p = a->blocks[a->nblocks - 1] + a->used;
	a->used += len;
	return p;
}

/* Names and packed fields need no alignment: a million short names
 * would waste a few bytes each in 8-byte steps. */
static char *arena_alloc_bytes(struct flist_arena *a, size_t len)
{
	if (a->nblocks == 0 || a->cap - a->used < len) {
		a->used = a->cap; /* the next aligned allocation opens a block */
		return flist_arena_alloc(a, len);
	}
	char *p = a->blocks[a->nblocks - 1] + a->used;
	a->used += len;
	return p;
}

char *flist_arena_strdup(struct flist_arena *a, const char *s, size_t len)
{
	char *p = arena_alloc_bytes(a, len + 1);

	if (p) {
		memcpy(p, s, len);
		p[len] = '\0';
	}
	return p;
}

static bool size_is_big(int64_t size)
{
	return size < 0 || size >= (int64_t)FE_SIZE_BIG;
}

size_t fe_packed_len(size_t len, const struct fe_extras *x)
{
	unsigned has = x->has;

	return len + 1 + (size_is_big(x->size) ? 8 : 0) + (has & FE_X_NSEC ? 4 : 0) +
	       (has & FE_X_PTR ? sizeof(void *) : 0) + (has & FE_X_ATIME ? 8 : 0) +
	       (has & FE_X_RDEV ? 8 : 0) + (has & FE_X_HLINK ? 8 : 0) + (has & FE_X_META ? 12 : 0) +
	       (has & FE_X_IDS ? 8 : 0);
}

static char *put(char *p, const void *v, size_t n)
{
	memcpy(p, v, n);
	return p + n;
}

void fe_place(struct file_entry *f, char *buf, const char *name, size_t len,
	      const struct fe_extras *x)
{
	char *p = buf;
	const void *ptr = x->link;

	memmove(p, name, len);
	p[len] = '\0';
	p += len + 1;
	f->size32 = size_is_big(x->size) ? FE_SIZE_BIG : (uint32_t)x->size;
	if (f->size32 == FE_SIZE_BIG)
		p = put(p, &x->size, 8);
	if (x->has & FE_X_NSEC)
		p = put(p, &x->mtime_nsec, 4);
	if (x->has & FE_X_PTR)
		p = put(p, &ptr, sizeof ptr);
	if (x->has & FE_X_ATIME)
		p = put(p, &x->atime, 8);
	if (x->has & FE_X_RDEV) {
		p = put(p, &x->rdev_major, 4);
		p = put(p, &x->rdev_minor, 4);
	}
	if (x->has & FE_X_HLINK) {
		p = put(p, &x->hlink_group, 4);
		p = put(p, &x->hl_next, 4);
	}
	if (x->has & FE_X_META) {
		p = put(p, &x->acl_ndx, 4);
		p = put(p, &x->defacl_ndx, 4);
		p = put(p, &x->xattr_ndx, 4);
	}
	if (x->has & FE_X_IDS) {
		p = put(p, &x->uid, 4);
		put(p, &x->gid, 4);
	}
	f->basename = buf;
	f->flags = (uint16_t)((f->flags & ~FE_X_MASK) | (x->has & FE_X_MASK));
}

void fe_extras_get(const struct file_entry *f, struct fe_extras *x)
{
	memset(x, 0, sizeof *x);
	x->has = f->flags & FE_X_MASK;
	x->size = fe_size(f);
	x->mtime_nsec = fe_mtime_nsec(f);
	x->link = fe_ptr(f);
	x->atime = fe_atime(f);
	x->rdev_major = fe_rdev_major(f);
	x->rdev_minor = fe_rdev_minor(f);
	x->hlink_group = fe_hlink_group(f);
	x->hl_next = fe_hl_next(f);
	x->acl_ndx = fe_acl_ndx(f);
	x->defacl_ndx = fe_defacl_ndx(f);
	x->xattr_ndx = fe_xattr_ndx(f);
	x->uid = fe_uid(f);
	x->gid = fe_gid(f);
}

struct file_entry *flist_keep_dir(struct flist_arena *a, const struct file_entry *f,
				  const char *dirname)
{
	struct file_entry *c = flist_arena_alloc(a, sizeof *c);
	size_t len = strlen(f->basename);
	struct fe_extras x;

	if (!c)
		return NULL;
	*c = *f;
	c->dirname = dirname;
	fe_extras_get(f, &x);
	x.has &= (uint16_t)~FE_X_PTR; /* a directory has neither link nor sum */
	char *buf = arena_alloc_bytes(a, fe_packed_len(len, &x));
	if (!buf)
		return NULL;
	fe_place(c, buf, f->basename, len, &x);
	return c;
}

void *flist_alloc(struct flist *fl, size_t len)
{
	return flist_arena_alloc(&fl->names, len);
}

char *flist_strdup(struct flist *fl, const char *s, size_t len)
{
	return flist_arena_strdup(&fl->names, s, len);
}

char *flist_alloc_bytes(struct flist *fl, size_t len)
{
	return arena_alloc_bytes(&fl->names, len);
}

bool flist_clean_name(char *name)
{
	return clean_fname(name, CFN_REFUSE_DOT_DOT_DIRS) >= 0;
}

bool flist_path(const struct file_entry *f, char *buf, size_t size)
{
	size_t dlen = f->dirname ? strlen(f->dirname) : 0;
	size_t blen = strlen(f->basename);
	size_t need = (f->dirname ? dlen + 1 : 0) + blen;

	if (need >= size) {
		/* too long: truncated, as snprintf would, for the message */
		if (size)
			snprintf(buf, size, "%s%s%s", f->dirname ? f->dirname : "",
				 f->dirname ? "/" : "", f->basename);
		return false;
	}
	/* joined by hand: this runs for every entry on every side */
	if (f->dirname) {
		memcpy(buf, f->dirname, dlen);
		buf[dlen++] = '/';
	}
	memcpy(buf + dlen, f->basename, blen + 1);
	return true;
}

/* ---- sorting: mirrors rsync flist.c:f_name_cmp() ---- */

enum cmp_state { ST_DIR, ST_SLASH, ST_BASE, ST_TRAILING };

struct cmp_cursor {
	const struct file_entry *f;
	bool is_dir;          /* S_ISDIR, possibly overridden by the caller */
	bool path;            /* current piece is a path (dir) component */
	enum cmp_state state;
	const unsigned char *c;
};

/* Position the cursor on the entry's basename. */
static void cursor_base(struct cmp_cursor *k, bool dirs_as_path)
{
	k->path = k->is_dir && dirs_as_path;
	k->c = (const unsigned char *)k->f->basename;
	if (k->path && k->c[0] == '.' && k->c[1] == '\0') {
		k->path = false;
		k->state = ST_TRAILING;
		k->c = (const unsigned char *)"";
	} else {
		k->state = ST_BASE;
	}
}

static void cursor_start(struct cmp_cursor *k, const struct file_entry *f, bool is_dir,
			 bool dirs_as_path, bool same_dir)
{
	k->f = f;
	k->is_dir = is_dir;
	if (!f->dirname || same_dir) {
		cursor_base(k, dirs_as_path);
	} else {
		k->path = dirs_as_path;
		k->state = ST_DIR;
		k->c = (const unsigned char *)f->dirname;
	}
}

/* Step past the end of the current piece. Returns true when the cursor
 * ran out entirely (only possible from ST_TRAILING). */
static bool cursor_next_piece(struct cmp_cursor *k, bool dirs_as_path)
{
	switch (k->state) {
	case ST_DIR:
		k->state = ST_SLASH;
		k->c = (const unsigned char *)"/";
		return false;
	case ST_SLASH:
		cursor_base(k, dirs_as_path);
		return false;
	case ST_BASE:
		k->state = ST_TRAILING;
		if (k->path) {
			k->c = (const unsigned char *)"/";
			return false;
		}
		k->path = false;
		return false;
	case ST_TRAILING:
		k->path = false;
		return true;
	}
	return true;
}

static int name_cmp_modes(const struct file_entry *f1, bool dir1, const struct file_entry *f2,
			  bool dir2, int protocol)
{
	bool dirs_as_path = protocol >= 29;
	bool same_dir = f1->dirname == f2->dirname ||
			(f1->dirname && f2->dirname && strcmp(f1->dirname, f2->dirname) == 0);
	struct cmp_cursor a, b;
	int dif = 0;

	cursor_start(&a, f1, dir1, dirs_as_path, same_dir);
	cursor_start(&b, f2, dir2, dirs_as_path, same_dir);
	if (a.path != b.path)
		return a.path ? 1 : -1;
	do {
		if (!*a.c) {
			/* A trailing piece of "" marks the end of the name. */
			bool was_trailing = a.state == ST_TRAILING;
			cursor_next_piece(&a, dirs_as_path);
			if (was_trailing)
				a.path = false;
			if (*b.c && a.path != b.path)
				return a.path ? 1 : -1;
		}
		if (!*b.c) {
			bool was_trailing = b.state == ST_TRAILING;
			cursor_next_piece(&b, dirs_as_path);
			if (was_trailing) {
				if (!*a.c)
					return 0;
				b.path = false;
			}
			if (a.path != b.path)
				return a.path ? 1 : -1;
		}
		/* Both at the end of a piece: go round again so the end is
		 * seen, never past a name's terminating NUL. */
		if (!*a.c && !*b.c)
			continue;
		dif = (int)*a.c++ - (int)*b.c++;
	} while (dif == 0);
	return dif;
}

int flist_name_cmp(const struct file_entry *a, const struct file_entry *b, int protocol)
{
	return name_cmp_modes(a, S_ISDIR(a->mode), b, S_ISDIR(b->mode), protocol);
}

struct sort_ctx {
	int protocol;
};

static int entry_cmp(const struct sort_ctx *c, const struct file_entry *a,
		     const struct file_entry *b)
{
	bool act_a = a->flags & FE_ACTIVE, act_b = b->flags & FE_ACTIVE;

	if (!act_a)
		return act_b ? -1 : 0;
	if (!act_b)
		return 1;
	return flist_name_cmp(a, b, c->protocol);
}

/* A stable merge sort: equal names keep their arrival order, which decides
 * which duplicate survives (mirrors rsync flist.c:fsort_tmp()). */
static void merge_sort(const struct sort_ctx *c, struct file_entry **v, size_t n,
		       struct file_entry **tmp)
{
	size_t n1 = n / 2, n2 = n - n1;
	struct file_entry **a = v, **b = v + n1, **out = v;

	if (n1 > 1)
		merge_sort(c, a, n1, tmp);
	if (n2 > 1)
		merge_sort(c, b, n2, tmp);
	while (n1 > 0 && entry_cmp(c, *a, *b) <= 0) {
		a++;
		n1--;
	}
	if (n1 == 0)
		return;
	memcpy(tmp, a, n1 * sizeof *tmp);
	out = a;
	struct file_entry **t = tmp;
	*out++ = *b++;
	n2--;
	while (n1 > 0 && n2 > 0) {
		if (entry_cmp(c, *t, *b) <= 0) {
			*out++ = *t++;
			n1--;
		} else {
			*out++ = *b++;
			n2--;
		}
	}
	if (n1 > 0)
		memcpy(out, t, n1 * sizeof *t);
}

/* Binary search of sorted[low..high] for an entry named like f, with f
 * taken as a non-directory (mirrors rsync flist.c:flist_find()). */
static long find_as_file(struct file_entry **v, const struct file_entry *f, size_t low,
			 size_t high, int protocol)
{
	long lo = (long)low, hi = (long)high;

	while (lo <= hi) {
		long mid = (lo + hi) / 2, up = mid;
		while (up <= hi && !(v[up]->flags & FE_ACTIVE))
			up++;
		if (up > hi) {
			hi = mid - 1;
			continue;
		}
		const struct file_entry *m = v[up];
		int d = name_cmp_modes(m, S_ISDIR(m->mode), f, false, protocol);
		if (d == 0)
			return up;
		if (d < 0)
			lo = up + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

bool flist_sort_entries(struct session *s, struct file_entry **v, size_t n)
{
	struct sort_ctx c = {.protocol = s->protocol};

	if (n < 2)
		return true;
	struct file_entry **tmp = xmalloc_array(&s->err, (n + 1) / 2, sizeof *tmp);
	if (!tmp)
		return false;
	merge_sort(&c, v, n, tmp);
	free(tmp);
	return true;
}

bool flist_sort_sender(struct session *s, struct flist *fl)
{
	struct sort_ctx c = {.protocol = s->protocol};

	fl->low = 0;
	fl->high = fl->count ? fl->count - 1 : 0;
	/* incremental lists are sorted part by part (flist_inc.c) */
	if (fl->count == 0 || s->inc_recurse)
		return true;
	struct file_entry **tmp = xmalloc_array(&s->err, (fl->count + 1) / 2 + 1, sizeof *tmp);
	fl->sorted = tmp ? xmalloc_array(&s->err, fl->count, sizeof *fl->sorted) : NULL;
	if (!fl->sorted) {
		free(tmp);
		return false;
	}
	for (size_t i = 0; i < fl->count; i++)
		fl->sorted[i] = &fl->files[i];
	merge_sort(&c, fl->sorted, fl->count, tmp);
	free(tmp);
	return true;
}

bool flist_clean_part(struct session *s, struct file_entry **v, size_t n, size_t *low,
		      size_t *high)
{
	size_t i, prev;

	*low = 0;
	*high = 0;
	if (n == 0)
		return true;
	if (!flist_sort_entries(s, v, n))
		return false;
	/* Remove duplicates as the receiver does: keep the first, but prefer
	 * a directory over a non-directory (flist_sort_and_clean). */
	for (prev = 0; prev < n && !(v[prev]->flags & FE_ACTIVE); prev++)
		;
	*low = prev;
	for (i = prev + 1; i < n; i++) {
		struct file_entry *f = v[i];
		long j;
		if (!(f->flags & FE_ACTIVE))
			continue;
		if (flist_name_cmp(f, v[prev], s->protocol) == 0)
			j = (long)prev;
		else if (s->protocol >= 29 && S_ISDIR(f->mode))
			j = find_as_file(v, f, *low, prev, s->protocol);
		else
			j = -1;
		if (j < 0) {
			prev = i;
			continue;
		}
		struct file_entry *other = v[j];
		size_t keep = (size_t)j, drop = i;
		if (S_ISDIR(f->mode) && !S_ISDIR(other->mode)) {
			keep = i;
			drop = (size_t)j;
		} else if (S_ISDIR(f->mode)) {
			other->flags |= f->flags & (FE_TOP_DIR | FE_CONTENT_DIR);
			other->flags &= f->flags | ~FE_IMPLIED_DIR;
		}
		v[drop]->flags &= ~FE_ACTIVE;
		if (keep == i) {
			if (*low == drop) {
				size_t k = drop + 1;
				while (k < i && !(v[k]->flags & FE_ACTIVE))
					k++;
				*low = k;
			}
			prev = i;
		}
	}
	*high = prev;
	return true;
}

/* ---- the incremental list's reserved arrays ---- */

/* Address space is made usable in steps this big. */
#define COMMIT_STEP ((size_t)2 << 20)

static void *reserve(size_t bytes, int prot)
{
	void *p = mmap(NULL, bytes, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

bool flist_inc_commit(void *base, size_t size, size_t *committed, size_t need)
{
	if (need <= *committed)
		return true;
	size_t to = (need + COMMIT_STEP - 1) / COMMIT_STEP * COMMIT_STEP;
	if (to > size)
		to = size;
	if (mprotect((char *)base + *committed, to - *committed, PROT_READ | PROT_WRITE) < 0)
		return false;
	*committed = to;
	return true;
}

/* The receiver's per-index state for an incremental list (indexes run
 * up to INC_MAX_SLOTS, one byte each); release with flist_inc_state_free. */
uint8_t *flist_inc_state_new(void)
{
	return reserve(INC_MAX_SLOTS, PROT_READ | PROT_WRITE);
}

void flist_inc_state_free(uint8_t *state)
{
	if (state)
		munmap(state, INC_MAX_SLOTS);
}

/* Can parts be released once done? Not where the receiving side goes
 * back to entries of finished parts: hard links (a later member links to
 * an earlier one), delayed updates and deletions (renamed or scanned at
 * the end), batches (read in an order of their own), and -m. */
static bool parts_releasable(const struct ferry_opts *o)
{
	bool late_delete = o->delete_mode == DELETE_BEFORE || o->delete_mode == DELETE_DELAY ||
			   o->delete_mode == DELETE_AFTER;

	return !o->hard_links && !o->delay_updates && !late_delete && !o->read_batch &&
	       !o->write_batch && !o->prune_empty_dirs;
}

bool flist_inc_reserve(struct session *s, struct flist *fl)
{
	fl->files = reserve(INC_MAX_FILES * sizeof *fl->files, PROT_NONE);
	fl->sorted = reserve(INC_MAX_SLOTS * sizeof *fl->sorted, PROT_NONE);
	fl->parts = reserve((INC_MAX_FILES + 1) * sizeof *fl->parts, PROT_NONE);
	fl->files_commit = fl->sorted_commit = fl->parts_commit = 0;
	fl->cap = 0;
	if (!fl->files || !fl->sorted || !fl->parts) {
		flist_inc_release(fl);
		return wire_fail(&s->err, RERR_MALLOC,
				 "cannot reserve address space for incremental recursion");
	}
	fl->inc = true;
	fl->release = parts_releasable(s->opts);
	return flist_inc_grow(s, fl);
}

bool flist_inc_grow(struct session *s, struct flist *fl)
{
	if (fl->cap >= INC_MAX_FILES)
		return wire_fail(&s->err, RERR_MALLOC,
				 "too many files for incremental recursion (%zu); use "
				 "--no-inc-recursive",
				 fl->cap);
	if (!flist_inc_commit(fl->files, INC_MAX_FILES * sizeof *fl->files, &fl->files_commit,
		    (fl->cap + 1) * sizeof *fl->files))
		return wire_fail(&s->err, RERR_MALLOC, "out of memory receiving the file list");
	fl->cap = fl->files_commit / sizeof *fl->files;
	if (fl->cap > INC_MAX_FILES)
		fl->cap = INC_MAX_FILES;
	return true;
}

void flist_inc_release(struct flist *fl)
{
	if (fl->files)
		munmap(fl->files, INC_MAX_FILES * sizeof *fl->files);
	if (fl->sorted)
		munmap(fl->sorted, INC_MAX_SLOTS * sizeof *fl->sorted);
	if (fl->parts)
		munmap(fl->parts, (INC_MAX_FILES + 1) * sizeof *fl->parts);
	fl->files = NULL;
	fl->sorted = NULL;
	free(fl->dirs);
	free(fl->dirs_listed);
	fl->dirs_listed = NULL;
	fl->parts = NULL;
	fl->dirs = NULL;
}

size_t flist_slots(const struct flist *fl)
{
	return fl->inc ? fl->nslots : fl->count;
}
