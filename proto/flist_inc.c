/*
 * Incremental recursion on the sending side (rsync flist.c:
 * send_extra_file_list). ferry walks the whole tree first, as it does
 * without it; this file cuts that list into rsync's parts - the top-level
 * names, then the contents of each directory as a list of its own,
 * directories taken depth first in the order the receiver sorts them - and
 * sends the parts only some thousand files ahead of the generator, so the
 * receiver starts work at once and can free the parts it has finished.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "proto/fileio.h"
#include "proto/sendside.h"

/* rsync.h MIN/MAX_FILECNT_LOOKAHEAD: files listed ahead of the part the
 * generator works on - at least before each request, at most when idle. */
#define LOOKAHEAD_MIN 1000
#define LOOKAHEAD_MAX 10000

struct inc_part {
	size_t first;        /* into inc_plan.by_dir */
	size_t count;
	int32_t ndx_start;   /* wire index of its first entry */
	int32_t dir_ndx;     /* its directory in the dir list; -1: the top */
	size_t files_before; /* entries in the parts before it */
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
	size_t ndirs;
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

/* Append a part (a directory's group, or an empty one) and put its
 * directories on the dir list, as the receiver will. */
static bool add_part(struct session *s, struct inc_plan *p, const struct dir_group *g,
		     int32_t dir_ndx)
{
	if (p->nparts == p->parts_cap) {
		size_t cap = p->parts_cap ? p->parts_cap * 2 : 64;
		struct inc_part *t = realloc(p->parts, cap * sizeof *t);
		if (!t)
			return wire_fail(&s->err, RERR_MALLOC, "out of memory planning the file lists");
		p->parts = t;
		p->parts_cap = cap;
	}
	const struct inc_part *prev = p->nparts ? &p->parts[p->nparts - 1] : NULL;
	struct inc_part *part = &p->parts[p->nparts];
	part->first = g ? g->first : 0;
	part->count = g ? g->count : 0;
	part->dir_ndx = dir_ndx;
	part->files_before = prev ? prev->files_before + prev->count : 0;
	int64_t start = prev ? (int64_t)prev->ndx_start + (int64_t)prev->count + 1 : 1;
	if (start + (int64_t)part->count >= INT32_MAX)
		return wire_fail(&s->err, RERR_MALLOC, "file list too long");
	part->ndx_start = (int32_t)start;
	p->nparts++;
	for (size_t k = 0; k < part->count; k++) {
		struct file_entry *f = p->by_dir[part->first + k];
		if (S_ISDIR(f->mode))
			p->dirs[p->ndirs++] = f;
	}
	return true;
}

static bool is_top_dot(const struct file_entry *f)
{
	return !f->dirname && strcmp(f->basename, ".") == 0;
}

/* Push the directories dirs[from..to) that get a list of their own, last
 * first so they come off the stack in order. A directory listed twice
 * (the same path given twice) has one list, the first's. */
static void push_subdirs(const struct inc_plan *p, int32_t *stack, size_t *sp, size_t from,
			 size_t to)
{
	char path[MAXPATHLEN_WIRE], prev[MAXPATHLEN_WIRE];

	for (size_t d = to; d-- > from;) {
		if (is_top_dot(p->dirs[d]))
			continue;
		if (d > from && flist_path(p->dirs[d], path, sizeof path) &&
		    flist_path(p->dirs[d - 1], prev, sizeof prev) && strcmp(path, prev) == 0)
			continue;
		stack[(*sp)++] = (int32_t)d;
	}
}

/* The parts in rsync's order: the top level, then depth first. */
static bool plan_parts(struct session *s, struct inc_plan *p)
{
	size_t n = p->ngroups ? p->groups[p->ngroups - 1].first + p->groups[p->ngroups - 1].count : 0;
	int32_t *stack = malloc((n ? n : 1) * sizeof *stack);
	char path[MAXPATHLEN_WIRE];
	size_t sp = 0;
	bool ok = stack != NULL;

	p->dirs = malloc((n ? n : 1) * sizeof *p->dirs);
	if (!stack || !p->dirs) {
		free(stack);
		return wire_fail(&s->err, RERR_MALLOC, "out of memory planning the file lists");
	}
	ok = add_part(s, p, find_group(p, ""), -1);
	if (ok)
		push_subdirs(p, stack, &sp, 0, p->ndirs);
	while (ok && sp > 0) {
		int32_t d = stack[--sp];
		size_t from = p->ndirs;
		if (!flist_path(p->dirs[d], path, sizeof path)) {
			ok = wire_fail(&s->err, RERR_PROTOCOL, "file name too long");
			break;
		}
		ok = add_part(s, p, find_group(p, path), d);
		if (ok)
			push_subdirs(p, stack, &sp, from, p->ndirs);
	}
	free(stack);
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

void flist_inc_free(struct inc_plan *p)
{
	if (!p)
		return;
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
	struct inc_part *part = &p->parts[p->sent];
	int io_err = 0, io_before = s->io_error;

	if (p->sent > 0 && !wire_write_ndx(&s->out, NDX_FLIST_OFFSET - part->dir_ndx))
		return false;
	stat_part(s, sl, part);
	number_part(p, p->sent);
	fill_part_slots(p, part);
	/* The walk is over before the first part goes: its errors go with
	 * that part; a deferred stat's with its own part, as rsync reports
	 * each with the part it happened in (flist.c: send_extra_file_list). */
	if ((p->sent == 0 || s->io_error != io_before) && !s->opts->ignore_errors)
		io_err = s->io_error & IOERR_VALID_MASK;
	bool in_marker = s->varint_flist_flags || s->safe_flist;
	if (!flist_send_part(s, sl, p->by_dir + part->first, part->count, in_marker ? io_err : 0,
			     p->lead_wire, part->ndx_start))
		return false;
	if (io_err && !in_marker &&
	    !wire_send_msg(&s->out, MSG_IO_ERROR, (uint8_t[]){(uint8_t)io_err, 0, 0, 0}, 4))
		return false;
	p->sent++;
	if (p->sent == p->nparts) {
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
	if (!group_entries(s, sl, p) || !plan_parts(s, p) || !alloc_slots(s, p))
		return false;
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
	while (!p->eof_sent && lookahead(p) < LOOKAHEAD_MAX && !input_waiting(s)) {
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

struct file_entry *flist_send_entry(const struct send_list *sl, int32_t ndx)
{
	if (ndx < 0 || (size_t)ndx >= flist_send_slots(sl))
		return NULL;
	return sl->inc ? sl->inc->slots[ndx] : sl->fl.sorted[ndx];
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
