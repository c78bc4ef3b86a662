/*
 * Incremental recursion on the receiving side (rsync flist.c:
 * recv_file_list with a dir_ndx, flist_new's numbering). The sender's
 * parts arrive while files are transferred: each is appended to one
 * growing list whose arrays never move, sorted and cleaned on its own,
 * and numbered after the previous part with one index between them that
 * stands for the part's directory.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "proto/base/alloc.h"
#include "proto/core/flist.h"
#include "proto/core/session.h"

static bool grow(struct session *s, void **arr, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return true;
	size_t n = *cap ? *cap : 64;
	while (n < need)
		n *= 2;
	void *p = xrealloc_array(&s->err, *arr, n, size);
	if (!p)
		return false;
	*arr = p;
	*cap = n;
	return true;
}

static bool is_top_dot(const struct file_entry *f)
{
	return !f->dirname && S_ISDIR(f->mode) && strcmp(f->basename, ".") == 0;
}

/* A directory of a part that will be released: a copy that lives as
 * long as the list. Entries of one part mostly share their dirname:
 * *shared caches its copy. */
static struct file_entry *keep_dir(struct flist *fl, const struct file_entry *f,
				   const char **from, const char **shared)
{
	if (f->dirname && f->dirname != *from) {
		*shared = flist_arena_strdup(&fl->kept, f->dirname, strlen(f->dirname));
		*from = f->dirname;
		if (!*shared)
			return NULL;
	}
	return flist_keep_dir(&fl->kept, f, f->dirname ? *shared : NULL);
}

static bool keep_part_dirs(struct session *s, struct flist *fl, struct file_entry **v, size_t n)
{
	const char *from = NULL, *shared = NULL;

	for (size_t k = 0; k < n; k++) {
		if (!S_ISDIR(v[k]->mode))
			continue;
		if (!(v[k] = keep_dir(fl, v[k], &from, &shared)))
			return wire_fail(&s->err, RERR_MALLOC, "out of memory receiving the file list");
	}
	return true;
}

bool flist_part_finish(struct session *s, struct flist *fl, size_t first, size_t n,
		       int32_t dir_ndx)
{
	const struct flist_part *prev = fl->nparts ? &fl->parts[fl->nparts - 1] : NULL;
	size_t start = prev ? (size_t)prev->ndx_start + (size_t)prev->count + 1 : 1;
	size_t low, high;

	if (start + n > INC_MAX_SLOTS || start + n > INT32_MAX || fl->nparts >= INC_MAX_FILES)
		return wire_fail(&s->err, RERR_MALLOC, "file list too long");
	if (!flist_inc_commit(fl->sorted, INC_MAX_SLOTS * sizeof *fl->sorted, &fl->sorted_commit,
		    (start + n) * sizeof *fl->sorted) ||
	    !flist_inc_commit(fl->parts, (INC_MAX_FILES + 1) * sizeof *fl->parts, &fl->parts_commit,
		    (fl->nparts + 1) * sizeof *fl->parts))
		return wire_fail(&s->err, RERR_MALLOC, "out of memory receiving the file list");
	struct file_entry **v = fl->sorted + start;
	for (size_t k = 0; k < n; k++)
		v[k] = &fl->files[first + k];
	if (!flist_clean_part(s, v, n, &low, &high))
		return false;
	if (fl->release && !keep_part_dirs(s, fl, v, n))
		return false;
	/* The part's directories join the dir list in sorted order, cleared
	 * duplicates too, as the sender counts them. */
	for (size_t k = 0; k < n; k++) {
		if (!S_ISDIR(v[k]->mode))
			continue;
		if (!grow(s, (void **)&fl->dirs, &fl->dirs_cap, fl->ndirs + 1, sizeof *fl->dirs) ||
		    !grow(s, (void **)&fl->dirs_listed, &fl->dirs_listed_cap, fl->ndirs + 1, 1))
			return false;
		fl->dirs_listed[fl->ndirs] = 0;
		fl->dirs[fl->ndirs++] = v[k];
	}
	/* The first part's directory is "." when the list starts with it
	 * (flist.c: recv_file_list sets parent_ndx 0 then). */
	fl->no_dir = (struct file_entry){.basename = ""};
	struct file_entry *dir = &fl->no_dir;
	if (dir_ndx >= 0)
		dir = fl->dirs[dir_ndx];
	else if (n && is_top_dot(v[low]))
		dir = v[low];
	fl->sorted[start - 1] = dir;
	if (fl->nparts == 0)
		fl->first_dir = dir;
	fl->parts[fl->nparts++] = (struct flist_part){.ndx_start = (int32_t)start,
						      .count = (int32_t)n,
						      .dir_ndx = dir_ndx,
						      .first_file = first,
						      .first_block = fl->next_block};
	/* the next part's names start in the block this one's ended in */
	fl->next_block = fl->names.nblocks ? fl->names.nblocks - 1 : 0;
	fl->nslots = start + n;
	if (fl->nparts == 1) {
		fl->low = start + low;
		fl->high = start + high;
	}
	return true;
}

/* The published part whose range, its gap index included, holds ndx
 * (the first part for anything before it); fl->nparts > 0. */
static size_t part_at(const struct flist *fl, int32_t ndx)
{
	size_t lo = 0, hi = fl->nparts - 1;

	while (lo < hi) {
		size_t mid = lo + (hi - lo + 1) / 2;
		if (fl->parts[mid].ndx_start - 1 <= ndx)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

void flist_receiving_part(const struct flist *fl, int32_t *ndx_start, size_t *first)
{
	if (!fl->inc) {
		*ndx_start = 0;
		*first = 0;
		return;
	}
	if (fl->nparts == 0) {
		*ndx_start = 1;
		*first = 0;
		return;
	}
	const struct flist_part *p = &fl->parts[fl->nparts - 1];
	*ndx_start = p->ndx_start + p->count + 1;
	*first = p->first_file + (size_t)p->count;
}

bool flist_sent_pos(const struct flist *fl, int32_t sent, size_t *pos)
{
	int32_t start;
	size_t first;

	flist_receiving_part(fl, &start, &first);
	if (sent >= start) {
		*pos = first + (size_t)(sent - start);
		return *pos < fl->count;
	}
	if (fl->nparts == 0)
		return false;
	/* in a published part (its gap index is no entry's number) */
	const struct flist_part *p = &fl->parts[part_at(fl, sent)];
	if (sent < p->ndx_start || sent >= p->ndx_start + p->count)
		return false;
	*pos = p->first_file + (size_t)(sent - p->ndx_start);
	return true;
}

int32_t flist_file_index(const struct flist *fl, int32_t ndx)
{
	if (!fl->inc || fl->nparts == 0)
		return ndx;
	/* rsync's current_file_index: the index less one gap per part */
	return ndx - (int32_t)(part_at(fl, ndx) + 1);
}

struct file_entry *flist_part_dir(const struct flist *fl, size_t k)
{
	return k == 0 ? fl->first_dir : fl->dirs[fl->parts[k].dir_ndx];
}

/* Released memory goes back in steps this big: each madvise costs a TLB
 * flush on every CPU the threads run on, too dear per part. */
#define GIVE_BACK_STEP ((size_t)128 << 10)

void flist_give_back(void *area, size_t bytes, size_t *given)
{
	size_t end = bytes / GIVE_BACK_STEP * GIVE_BACK_STEP;

	if (end <= *given)
		return;
	madvise((char *)area + *given, end - *given, MADV_DONTNEED);
	*given = end;
}

void flist_release_parts(struct session *s, struct flist *fl, size_t upto)
{
	if (!fl->release || upto <= fl->released || upto > fl->nparts)
		return;
	size_t files_end = fl->count, slots_end = fl->nslots, block_end = fl->next_block;
	if (upto < fl->nparts) {
		const struct flist_part *p = &fl->parts[upto];
		files_end = p->first_file;
		slots_end = (size_t)p->ndx_start - 1; /* its gap index stays */
		block_end = p->first_block;
	}
	fl->released = upto;
	fl->released_files = files_end;
	fl->released_slots = slots_end;
	flist_give_back(fl->files, files_end * sizeof *fl->files, &fl->files_given);
	flist_give_back(fl->sorted, slots_end * sizeof *fl->sorted, &fl->sorted_given);
	if (block_end <= fl->names.freed)
		return;
	flist_arena_free_below(&fl->names, block_end);
	/* the decoder's last directory name may have been in them */
	s->fl.lastdir = NULL;
	s->fl.lastdir_len = 0;
}
