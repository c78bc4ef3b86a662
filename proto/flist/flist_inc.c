/*
 * Incremental recursion on the sending side (rsync flist.c:
 * send_extra_file_list). The list goes in rsync's parts - the top-level
 * names, then the contents of each directory as a list of its own,
 * directories taken depth first in the order the receiver sorts them -
 * only some thousand files ahead of the generator, so the receiver starts
 * work at once and can free the parts it has finished.
 *
 * Two ways to get there. The lazy walk (sl->lazy_walk, the common case)
 * has listed only the top level: each directory is read when its part is
 * due, into storage of its own that is freed when the generator has
 * finished the part (NDX_DONE), so the sender holds the parts in flight,
 * not the tree. Where that would be wrong (flist_build.c: can_walk_lazily)
 * the whole tree was walked first, and this file cuts that list into the
 * same parts.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "proto/base/fileio.h"
#include "proto/flist/sendside.h"
#include "proto/meta/xattrs.h"

/* rsync.h MIN/MAX_FILECNT_LOOKAHEAD: files listed ahead of the part the
 * generator works on - at least before each request, at most when idle. */
#define LOOKAHEAD_MIN 1000
#define LOOKAHEAD_MAX 10000
/* The lazy walk holds the parts in flight as file_entry structs, about
 * twice the size of rsync's file_struct: a lower ceiling keeps their
 * memory at what rsync's sender spends on its lookahead. */
#define LOOKAHEAD_MAX_LAZY 4000

/* A part the lazy walk read: its entries, their send_info and names in
 * a send_list of its own. */
struct lazy_store {
	struct send_list list;
	struct file_entry **v; /* list.fl.files in the receiver's order */
	struct file_entry **kept; /* v[k]'s copy on the dir list, or NULL */
};

struct inc_part {
	size_t first;        /* into inc_plan.by_dir (the top level, or the
			      * whole tree without the lazy walk) */
	size_t count;
	int32_t ndx_start;   /* wire index of its first entry */
	int32_t dir_ndx;     /* its directory in the dir list; -1: the top */
	size_t files_before; /* entries in the parts before it */
	struct lazy_store *store; /* lazy walk, below the top: its entries,
				   * NULL once the generator is done with it */
};

/* The entries of one directory, found by the directory's path. */
struct dir_group {
	const char *path; /* "" for the top level */
	size_t first, count;
};

struct inc_plan {
	struct file_entry **by_dir; /* grouped by directory, each group sorted */
	struct dir_group *groups;
	size_t ngroups;
	struct inc_part *parts;     /* in sending order */
	size_t nparts, parts_cap;
	struct file_entry **slots;  /* wire index -> entry; the gap before a
				     * part holds the part's directory */
	size_t nslots;
	struct file_entry **dirs;   /* the receiver's dir list (dir_flist) */
	size_t ndirs, dirs_cap;
	int32_t *stack;             /* dirs whose parts are still to come,
				     * the next on top (depth first) */
	size_t sp, stack_cap;
	bool lazy;                  /* sl->lazy_walk: parts read when due */
	int32_t *lead_wire;         /* -H: by index into files, the wire
				     * number of its group's first entry */
	size_t sent;                /* parts sent */
	size_t freed;               /* parts the generator has finished */
	size_t current;             /* part of the last requested index */
	bool eof_sent;
	struct dir_cursor cursor;   /* the directory of the deferred stats */
	uint32_t cursor_root;       /* ... beneath this root */
	bool cursor_set;
};

static const char *dir_key(const struct file_entry *f)
{
	return f->dirname ? f->dirname : "";
}

/* By directory, then in building order (the files array). */
static int cmp_by_dir(const void *a, const void *b)
{
	const struct file_entry *x = *(struct file_entry *const *)a;
	const struct file_entry *y = *(struct file_entry *const *)b;
	/* the entries of one directory share one dirname string */
	int c = x->dirname == y->dirname ? 0 : strcmp(dir_key(x), dir_key(y));

	if (c)
		return c;
	return x < y ? -1 : x > y;
}

static bool group_entries(struct session *s, struct send_list *sl, struct inc_plan *p)
{
	size_t n = sl->fl.count;

	p->by_dir = malloc((n ? n : 1) * sizeof *p->by_dir);
	p->groups = malloc((n ? n : 1) * sizeof *p->groups);
	if (!p->by_dir || !p->groups)
		return wire_fail(&s->err, RERR_MALLOC, "out of memory planning the file lists");
	for (size_t i = 0; i < n; i++)
		p->by_dir[i] = &sl->fl.files[i];
	if (n > 1)
		qsort(p->by_dir, n, sizeof *p->by_dir, cmp_by_dir);
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		const char *key = dir_key(p->by_dir[i]);
		while (j < n && (p->by_dir[j]->dirname == p->by_dir[i]->dirname ||
				 strcmp(dir_key(p->by_dir[j]), key) == 0))
			j++;
		p->groups[p->ngroups++] = (struct dir_group){.path = key, .first = i, .count = j - i};
		if (!flist_sort_entries(s, p->by_dir + i, j - i))
			return false;
		i = j;
	}
	return true;
}

static const struct dir_group *find_group(const struct inc_plan *p, const char *path)
{
	size_t lo = 0, hi = p->ngroups;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(p->groups[mid].path, path);
		if (c == 0)
			return &p->groups[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static bool no_memory(struct session *s)
{
	return wire_fail(&s->err, RERR_MALLOC, "out of memory planning the file lists");
}

/* Make room for one more of an array of `size`-byte items. */
static bool grow(struct session *s, void **v, size_t *cap, size_t used, size_t size)
{
	if (used < *cap)
		return true;
	size_t n = *cap ? *cap * 2 : 64;
	void *t = realloc(*v, n * size);
	if (!t)
		return no_memory(s);
	*v = t;
	*cap = n;
	return true;
}

static bool add_dir(struct session *s, struct inc_plan *p, struct file_entry *f)
{
	if (!grow(s, (void **)&p->dirs, &p->dirs_cap, p->ndirs, sizeof *p->dirs))
		return false;
	p->dirs[p->ndirs++] = f;
	return true;
}

/* Append a part of count entries, numbered after the part before it
 * (whose count is final), for the directory dir_ndx. */
static struct inc_part *new_part(struct session *s, struct inc_plan *p, size_t count,
				 int32_t dir_ndx)
{
	if (!grow(s, (void **)&p->parts, &p->parts_cap, p->nparts, sizeof *p->parts))
		return NULL;
	const struct inc_part *prev = p->nparts ? &p->parts[p->nparts - 1] : NULL;
	struct inc_part *part = &p->parts[p->nparts];
	memset(part, 0, sizeof *part);
	part->count = count;
	part->dir_ndx = dir_ndx;
	part->files_before = prev ? prev->files_before + prev->count : 0;
	int64_t start = prev ? (int64_t)prev->ndx_start + (int64_t)prev->count + 1 : 1;
	if (start + (int64_t)part->count >= INT32_MAX) {
		wire_fail(&s->err, RERR_MALLOC, "file list too long");
		return NULL;
	}
	part->ndx_start = (int32_t)start;
	p->nparts++;
	return part;
}

/* Append a part (a directory's group, or an empty one) and put its
 * directories on the dir list, as the receiver will. */
static bool add_part(struct session *s, struct inc_plan *p, const struct dir_group *g,
		     int32_t dir_ndx)
{
	struct inc_part *part = new_part(s, p, g ? g->count : 0, dir_ndx);

	if (!part)
		return false;
	part->first = g ? g->first : 0;
	for (size_t k = 0; k < part->count; k++) {
		struct file_entry *f = p->by_dir[part->first + k];
		if (S_ISDIR(f->mode) && !add_dir(s, p, f))
			return false;
	}
	return true;
}

static bool is_top_dot(const struct file_entry *f)
{
	return !f->dirname && strcmp(f->basename, ".") == 0;
}

/* Push the directories dirs[from..to) that get a list of their own, last
 * first so they come off the stack in order: the next part is the first
 * child's, else the next sibling's, else the next up (flist.c:
 * send_extra_file_list). A directory listed twice (the same path given
 * twice) has one list, the first's. */
static bool push_subdirs(struct session *s, struct inc_plan *p, size_t from, size_t to)
{
	char path[MAXPATHLEN_WIRE], prev[MAXPATHLEN_WIRE];

	for (size_t d = to; d-- > from;) {
		if (is_top_dot(p->dirs[d]))
			continue;
		if (d > from && flist_path(p->dirs[d], path, sizeof path) &&
		    flist_path(p->dirs[d - 1], prev, sizeof prev) && strcmp(path, prev) == 0)
			continue;
		if (d > INT32_MAX || !grow(s, (void **)&p->stack, &p->stack_cap, p->sp, sizeof *p->stack))
			return no_memory(s);
		p->stack[p->sp++] = (int32_t)d;
	}
	return true;
}

/* The parts of the whole tree in rsync's order: the top level, then
 * depth first. */
static bool plan_parts(struct session *s, struct inc_plan *p)
{
	char path[MAXPATHLEN_WIRE];
	bool ok = add_part(s, p, find_group(p, ""), -1) && push_subdirs(s, p, 0, p->ndirs);

	while (ok && p->sp > 0) {
		int32_t d = p->stack[--p->sp];
		size_t from = p->ndirs;
		if (!flist_path(p->dirs[d], path, sizeof path))
			return wire_fail(&s->err, RERR_PROTOCOL, "file name too long");
		ok = add_part(s, p, find_group(p, path), d) && push_subdirs(s, p, from, p->ndirs);
	}
	return ok;
}

/* Room for every wire index the plan can use; the parts fill theirs as
 * they are sent (fill_part_slots), since deferred stats may shrink them. */
static bool alloc_slots(struct session *s, struct inc_plan *p)
{
	const struct inc_part *last = &p->parts[p->nparts - 1];

	p->nslots = (size_t)last->ndx_start + last->count;
	p->slots = calloc(p->nslots, sizeof *p->slots);
	if (!p->slots)
		return wire_fail(&s->err, RERR_MALLOC, "out of memory planning the file lists");
	return true;
}

static void fill_part_slots(struct inc_plan *p, const struct inc_part *part)
{
	if (part->dir_ndx >= 0)
		p->slots[part->ndx_start - 1] = p->dirs[part->dir_ndx];
	else if (part->count && is_top_dot(p->by_dir[part->first]) &&
		 S_ISDIR(p->by_dir[part->first]->mode))
		/* the receiver takes a first list led by "." as the contents
		 * of "." and handles "." at index 0 */
		p->slots[0] = p->by_dir[part->first];
	for (size_t k = 0; k < part->count; k++)
		p->slots[(size_t)part->ndx_start + k] = p->by_dir[part->first + k];
}

/* Number part i after the parts sent before it, which may have come out
 * shorter than planned. */
static void number_part(struct inc_plan *p, size_t i)
{
	if (i == 0)
		return;
	const struct inc_part *prev = &p->parts[i - 1];
	p->parts[i].ndx_start = prev->ndx_start + (int32_t)prev->count + 1;
	p->parts[i].files_before = prev->files_before + prev->count;
}

/* The open directory holding entry f (of root `root`), for its deferred
 * stat; -1 with errno when it cannot be opened. */
static int deferred_dirfd(struct inc_plan *p, const struct send_list *sl, uint32_t root,
			  const struct file_entry *f)
{
	if (root >= sl->roots.count) {
		errno = EBADF;
		return -1;
	}
	if (!p->cursor_set || p->cursor_root != root) {
		if (p->cursor_set)
			dir_cursor_close(&p->cursor);
		dir_cursor_init(&p->cursor, sl->roots.fds[root]);
		p->cursor_root = root;
		p->cursor_set = true;
	}
	return dir_cursor_open(&p->cursor, f->dirname ? f->dirname : "");
}

/* Stat the part's entries that the walk listed from readdir alone and
 * leave out those gone since: the stats of a directory's files are taken
 * while the generator works on the parts before it, not all up front. */
static void stat_part(struct session *s, struct send_list *sl, struct inc_part *part)
{
	struct inc_plan *p = sl->inc;
	size_t kept = 0;

	for (size_t k = 0; k < part->count; k++) {
		struct file_entry *f = p->by_dir[part->first + k];
		size_t i = (size_t)(f - sl->fl.files);
		if (!sl->info[i].unstated ||
		    flist_stat_deferred(s, sl, i, deferred_dirfd(p, sl, sl->info[i].root, f)))
			p->by_dir[part->first + kept++] = f;
	}
	part->count = kept;
}

/* -H: the leader of each group is its first entry on the wire, which the
 * others name by its wire number (flist.c: send_file_entry). */
static bool plan_hard_links(struct session *s, const struct send_list *sl, struct inc_plan *p)
{
	size_t n = sl->fl.count, k = 0;
	size_t *order = malloc((n ? n : 1) * sizeof *order);
	int32_t *wire = malloc((n ? n : 1) * sizeof *wire);
	p->lead_wire = malloc((n ? n : 1) * sizeof *p->lead_wire);

	if (!order || !wire || !p->lead_wire) {
		free(order);
		free(wire);
		return wire_fail(&s->err, RERR_MALLOC, "out of memory planning the file lists");
	}
	for (size_t i = 0; i < n; i++)
		wire[i] = -1;
	for (size_t j = 0; j < p->nparts; j++) {
		const struct inc_part *part = &p->parts[j];
		for (size_t e = 0; e < part->count; e++) {
			size_t i = (size_t)(p->by_dir[part->first + e] - sl->fl.files);
			if (wire[i] >= 0)
				continue; /* listed twice: numbered where first sent */
			wire[i] = part->ndx_start + (int32_t)e;
			order[k++] = i;
		}
	}
	for (size_t i = 0; i < n; i++)
		if (wire[i] < 0)
			order[k++] = i; /* not sent: never anyone's leader */
	int32_t *lead = flist_hlink_leaders(sl, order);
	bool ok = lead != NULL;
	for (size_t i = 0; ok && i < n; i++)
		p->lead_wire[i] = lead[i] >= 0 ? wire[lead[i]] : -1;
	free(lead);
	free(order);
	free(wire);
	return ok || wire_fail(&s->err, RERR_MALLOC, "out of memory planning the file lists");
}

static void store_free(struct lazy_store *st)
{
	if (st) {
		free(st->v);
		free(st->kept);
		send_list_free(&st->list);
		free(st);
	}
}

/* The directory of a lazy part, open beneath the (only) root; -1 with
 * errno when it cannot be opened. */
static int open_part_dir(struct inc_plan *p, const struct send_list *sl, const char *path)
{
	if (sl->roots.count == 0) {
		errno = EBADF;
		return -1;
	}
	if (!p->cursor_set || p->cursor_root != 0) {
		if (p->cursor_set)
			dir_cursor_close(&p->cursor);
		dir_cursor_init(&p->cursor, sl->roots.fds[0]);
		p->cursor_root = 0;
		p->cursor_set = true;
	}
	return dir_cursor_open(&p->cursor, path);
}

/* A directory of a lazy part, copied to the list's long-lived arena: the
 * dir list, and the index before the directory's own part, still name it
 * after the part that listed it is freed. *dirname: the listing part's
 * path in that arena, made by the first call. */
static struct file_entry *keep_dir(struct session *s, struct send_list *sl,
				   const struct file_entry *f, const char *path,
				   const char **dirname)
{
	if (!*dirname && !(*dirname = flist_strdup(&sl->fl, path, strlen(path))))
		return NULL;
	return flist_keep_dir(&sl->fl.names, f, *dirname);
}

/* The entries of a lazy part in the receiver's order; its directories go
 * on the dir list, and those with a part of their own on the stack. */
static bool order_store(struct session *s, struct send_list *sl, struct lazy_store *st,
			const char *path)
{
	struct inc_plan *p = sl->inc;
	size_t n = st->list.fl.count;
	const char *dirname = NULL;

	st->v = malloc((n ? n : 1) * sizeof *st->v);
	st->kept = calloc(n ? n : 1, sizeof *st->kept);
	if (!st->v || !st->kept)
		return no_memory(s);
	for (size_t i = 0; i < n; i++)
		st->v[i] = &st->list.fl.files[i];
	if (!flist_sort_entries(s, st->v, n))
		return false;
	size_t from = p->ndirs;
	for (size_t k = 0; k < n; k++) {
		if (!S_ISDIR(st->v[k]->mode))
			continue;
		struct file_entry *keep = keep_dir(s, sl, st->v[k], path, &dirname);
		if (!keep || !add_dir(s, p, keep))
			return no_memory(s);
		st->kept[k] = keep;
	}
	return push_subdirs(s, p, from, p->ndirs);
}

/* Read the directory whose part is next (the top of the stack) into a
 * part of its own. */
static bool read_lazy_part(struct session *s, struct send_list *sl)
{
	struct inc_plan *p = sl->inc;
	int32_t d = p->stack[--p->sp];
	char path[MAXPATHLEN_WIRE];
	struct lazy_store *st = calloc(1, sizeof *st);

	if (!st)
		return no_memory(s);
	if (!flist_path(p->dirs[d], path, sizeof path)) {
		free(st);
		return wire_fail(&s->err, RERR_PROTOCOL, "file name too long");
	}
	if (!flist_read_dir(s, sl, path, open_part_dir(p, sl, path), &st->list) ||
	    !order_store(s, sl, st, path)) {
		store_free(st);
		return false;
	}
	struct inc_part *part = new_part(s, p, st->list.fl.count, d);
	if (!part) {
		store_free(st);
		return false;
	}
	part->store = st;
	return true;
}

/* Send a lazy part: flist_send_part finds an entry's send_info by its
 * place in sl->fl.files, so it is given a view of the list whose arrays
 * are the part's own. */
static bool send_store(struct session *s, struct send_list *sl, const struct inc_part *part,
		       int io_err)
{
	struct send_list view = *sl;

	view.fl.files = part->store->list.fl.files;
	view.fl.count = part->store->list.fl.count;
	view.info = part->store->list.info;
	view.devino = part->store->list.devino;
	bool ok = flist_send_part(s, &view, part->store->v, part->count, io_err, NULL,
				  part->ndx_start);
	sl->enc = view.enc; /* the encoder made for the first part sent */
	/* the ACL and xattr indexes were given as the part was sent, after
	 * its directories were copied to the dir list, where a request for a
	 * directory looks its xattrs up (flist_send_entry) */
	for (size_t k = 0; ok && k < part->count; k++) {
		struct file_entry *kept = part->store->kept[k];
		if (kept) {
			const struct file_entry *sent = part->store->v[k];
			fe_set_meta(kept, fe_acl_ndx(sent), fe_defacl_ndx(sent), fe_xattr_ndx(sent));
		}
	}
	/* what follows needs only the entries (flist_send_root: one root) */
	free(part->store->list.info);
	part->store->list.info = NULL;
	free(part->store->list.devino);
	part->store->list.devino = NULL;
	return ok;
}

void flist_inc_free(struct inc_plan *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nparts; i++)
		store_free(p->parts[i].store);
	free(p->stack);
	free(p->lead_wire);
	free(p->by_dir);
	free(p->groups);
	free(p->parts);
	free(p->slots);
	free(p->dirs);
	if (p->cursor_set)
		dir_cursor_close(&p->cursor);
	free(p);
}

static bool send_next_part(struct session *s, struct send_list *sl)
{
	struct inc_plan *p = sl->inc;
	int io_err = 0, io_before = session_io_error(s);

	if (p->lazy && p->sent > 0 && !read_lazy_part(s, sl))
		return false;
	struct inc_part *part = &p->parts[p->sent];
	if (p->sent > 0 && !wire_write_ndx(&s->out, NDX_FLIST_OFFSET - part->dir_ndx))
		return false;
	if (!part->store) {
		stat_part(s, sl, part);
		number_part(p, p->sent);
	}
	if (!p->lazy)
		fill_part_slots(p, part);
	/* The walk is over before the first part goes: its errors go with
	 * that part; a deferred stat's with its own part, as rsync reports
	 * each with the part it happened in (flist.c: send_extra_file_list). */
	if ((p->sent == 0 || session_io_error(s) != io_before) && !s->opts->ignore_errors)
		io_err = session_io_error(s) & IOERR_VALID_MASK;
	bool in_marker = s->varint_flist_flags || s->safe_flist;
	if (part->store ? !send_store(s, sl, part, in_marker ? io_err : 0)
			: !flist_send_part(s, sl, p->by_dir + part->first, part->count,
					   in_marker ? io_err : 0, p->lead_wire, part->ndx_start))
		return false;
	if (io_err && !in_marker &&
	    !wire_send_msg(&s->out, MSG_IO_ERROR, (uint8_t[]){(uint8_t)io_err, 0, 0, 0}, 4))
		return false;
	p->sent++;
	if (p->lazy ? p->sp == 0 : p->sent == p->nparts) {
		p->eof_sent = true;
		return wire_write_ndx(&s->out, NDX_FLIST_EOF);
	}
	return true;
}

bool flist_inc_start(struct session *s, struct send_list *sl)
{
	struct inc_plan *p = calloc(1, sizeof *p);

	if (!p)
		return wire_fail(&s->err, RERR_MALLOC, "out of memory planning the file lists");
	sl->inc = p;
	p->lazy = sl->lazy_walk != NULL;
	if (!group_entries(s, sl, p))
		return false;
	if (p->lazy) {
		/* only the top level is listed: its part now, the others as
		 * they are due (read_lazy_part) */
		if (!add_part(s, p, find_group(p, ""), -1) || !push_subdirs(s, p, 0, p->ndirs))
			return false;
	} else if (!plan_parts(s, p) || !alloc_slots(s, p)) {
		return false;
	}
	if (s->opts->hard_links && s->protocol >= 30 && !plan_hard_links(s, sl, p))
		return false;
	if (!send_next_part(s, sl))
		return false;
	/* A first list of one entry is followed at once by the next list
	 * (or the end): the receiver reads it before anything else, to tell
	 * a single-file transfer (flist.c: send_file_list). */
	if (p->parts[0].count == 1 && !p->eof_sent)
		return send_next_part(s, sl);
	return true;
}

static size_t lookahead(const struct inc_plan *p)
{
	size_t old = p->current + 1 > p->freed ? p->current + 1 : p->freed;
	size_t sent_total = p->sent ? p->parts[p->sent - 1].files_before + p->parts[p->sent - 1].count
				    : 0;

	if (old > p->sent)
		old = p->sent;
	size_t old_total = old ? p->parts[old - 1].files_before + p->parts[old - 1].count : 0;
	return sent_total - old_total;
}

static bool input_waiting(struct session *s)
{
	struct pollfd pfd = {.fd = s->in.fd, .events = POLLIN};

	return wire_buffered(&s->in) > 0 || poll(&pfd, 1, 0) > 0;
}

bool flist_inc_send_ahead(struct session *s, struct send_list *sl)
{
	struct inc_plan *p = sl->inc;
	bool wrote = false;

	if (!p)
		return true;
	while (!p->eof_sent && lookahead(p) < LOOKAHEAD_MIN) {
		if (!send_next_part(s, sl))
			return false;
		wrote = true;
	}
	/* While the generator is quiet it may be waiting for the next list
	 * (io.c: extra_flist_sending_enabled). */
	size_t most = p->lazy ? LOOKAHEAD_MAX_LAZY : LOOKAHEAD_MAX;
	while (!p->eof_sent && lookahead(p) < most && !input_waiting(s)) {
		if (!send_next_part(s, sl))
			return false;
		wrote = true;
	}
	/* The generator waits for files to finish before it ends a list:
	 * what we have written must go before we wait for it. */
	if (wrote || wire_buffered(&s->in) == 0)
		return wire_flush(&s->out);
	return true;
}

bool flist_inc_list_done(struct send_list *sl)
{
	struct inc_plan *p = sl->inc;

	if (!p || p->freed >= p->sent)
		return false;
	/* the generator asks for nothing more in it (rsync's sender frees
	 * the list here: sender.c, send_files) */
	store_free(p->parts[p->freed].store);
	p->parts[p->freed].store = NULL;
	p->freed++;
	return p->freed < p->sent;
}

/* The sent part whose range (its gap included) holds ndx; p->sent > 0. */
static size_t part_of(const struct inc_plan *p, int32_t ndx)
{
	size_t lo = 0, hi = p->sent - 1;

	while (lo < hi) {
		size_t mid = lo + (hi - lo + 1) / 2;
		if (p->parts[mid].ndx_start - 1 <= ndx)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

void flist_inc_note_request(struct send_list *sl, int32_t ndx)
{
	struct inc_plan *p = sl->inc;

	if (p && p->sent > 0)
		p->current = part_of(p, ndx);
}

size_t flist_send_slots(const struct send_list *sl)
{
	const struct inc_plan *p = sl->inc;

	if (!p)
		return sl->fl.count;
	if (p->sent == 0)
		return 0;
	const struct inc_part *last = &p->parts[p->sent - 1];
	return (size_t)last->ndx_start + last->count;
}

/* The entry of a sent index under the lazy walk: in the top level's
 * part, a lazy part not yet freed, or the directory before a part. */
static struct file_entry *lazy_entry(const struct inc_plan *p, int32_t ndx)
{
	size_t i = part_of(p, ndx);
	const struct inc_part *part = &p->parts[i];
	int32_t k = ndx - part->ndx_start;

	if (k < 0 && part->dir_ndx >= 0)
		return p->dirs[part->dir_ndx];
	if (k < 0)
		/* index 0: "." when it leads the first list (fill_part_slots) */
		return part->count && is_top_dot(p->by_dir[part->first]) &&
		       S_ISDIR(p->by_dir[part->first]->mode) ? p->by_dir[part->first] : NULL;
	if (i == 0)
		return p->by_dir[part->first + (size_t)k];
	return part->store ? part->store->v[k] : NULL;
}

struct file_entry *flist_send_entry(const struct send_list *sl, int32_t ndx)
{
	if (ndx < 0 || (size_t)ndx >= flist_send_slots(sl))
		return NULL;
	if (sl->inc && sl->inc->lazy)
		return lazy_entry(sl->inc, ndx);
	return sl->inc ? sl->inc->slots[ndx] : sl->fl.sorted[ndx];
}

uint32_t flist_send_root(const struct send_list *sl, int32_t ndx)
{
	const struct file_entry *f = flist_send_entry(sl, ndx);

	if (!f || (sl->inc && sl->inc->lazy))
		return 0; /* the lazy walk has one source argument */
	return sl->info[f - sl->fl.files].root;
}

int32_t flist_send_file_index(const struct send_list *sl, int32_t ndx)
{
	const struct inc_plan *p = sl->inc;

	if (!p || p->sent == 0)
		return ndx;
	/* rsync's current_file_index: the index less one gap per part */
	return ndx - (int32_t)(part_of(p, ndx) + 1);
}

bool flist_send_complete(const struct send_list *sl)
{
	return !sl->inc || sl->inc->eof_sent;
}

/* The top of the sending list: the whole list at once (flist_send.c), or
 * its first part with the rest to follow (above). */
bool flist_send(struct session *s, struct send_list *sl)
{
	if (!meta_check_protocol(s))
		return false;
	if (s->inc_recurse)
		return flist_inc_start(s, sl) && wire_flush(&s->out);
	return flist_send_whole(s, sl);
}

void send_list_free(struct send_list *sl)
{
	flist_enc_free(sl->enc);
	flist_inc_free(sl->inc);
	flist_build_free(sl); /* ... and clears sl */
}
