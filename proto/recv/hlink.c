/*
 * Hard links on the receiving side: which member of a group is written
 * and which are linked to it, in rsync's order (hlink.c: match_gnums,
 * hard_link_check, finish_hard_link). rsync's choice shows in what -v and
 * -i print and in what a batch file holds, so it is followed exactly:
 *
 * - a member that is already in place and up to date becomes the group's
 *   target, and every later member is linked to it as it comes;
 * - a missing member waits, unless it is the last of its group in this
 *   (part of the) list: that one is transferred;
 * - a member that is transferred (missing and last, or changed) becomes
 *   the target too, and the members waiting for it are linked once it has
 *   arrived: first those that came after it, then the earlier ones,
 *   latest first.
 *
 * The group table is shared with the receiver thread, which may change a
 * group's target while reading a batch (hlink_batch_adopt), so every
 * function here holds rc->lock while it looks at it.
 */
#include "proto/recv/hlink.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "proto/recv/recvside.h"

static struct hl_group *group_of(const struct recv_ctx *rc, const struct file_entry *f)
{
	int32_t g = fe_hlink_group(f);

	if (g < 0 || (size_t)g >= rc->hl_cap)
		return NULL;
	return &rc->hl_groups[g];
}

static bool grow_groups(struct recv_ctx *rc, size_t groups)
{
	if (groups <= rc->hl_cap)
		return true;
	size_t n = rc->hl_cap ? rc->hl_cap : 256;
	while (n < groups)
		n *= 2;
	struct hl_group *t = realloc(rc->hl_groups, n * sizeof *t);
	if (!t)
		return false;
	for (size_t i = rc->hl_cap; i < n; i++)
		t[i] = (struct hl_group){
			.target = -1, .waiting = -1, .after = -1, .after_tail = -1, .last = -1};
	rc->hl_groups = t;
	rc->hl_cap = n;
	return true;
}

static void note_sent(struct recv_ctx *rc, int32_t ndx)
{
	if (rc->hl_nsent == rc->hl_sent_cap) {
		size_t n = rc->hl_sent_cap ? rc->hl_sent_cap * 2 : 64;
		int32_t *t = realloc(rc->hl_sent, n * sizeof *t);
		if (!t)
			return; /* linked at the end instead (hlink_next_sent) */
		rc->hl_sent = t;
		rc->hl_sent_cap = n;
	}
	rc->hl_sent[rc->hl_nsent++] = ndx;
}

static bool in_group(const struct file_entry *f)
{
	return (f->flags & FE_ACTIVE) && (f->flags & FE_HLINKED) && S_ISREG(f->mode) &&
	       fe_hlink_group(f) >= 0;
}

bool hlink_match(struct recv_ctx *rc, size_t lo, size_t end, size_t groups)
{
	struct flist *fl = rc->fl;

	pthread_mutex_lock(&rc->lock);
	bool ok = grow_groups(rc, groups);
	pthread_mutex_unlock(&rc->lock);
	if (!ok)
		return false;
	/* Each member is the last of its group until a later one comes, in
	 * this range or a later one (match_gnums clears FLAG_HLINK_LAST of
	 * the previous list's last). Only this thread touches last. */
	for (size_t i = lo; i < end; i++) {
		struct file_entry *f = fl->sorted[i];
		if (!in_group(f) || (size_t)fe_hlink_group(f) >= groups)
			continue;
		fe_set_hl_next(f, -1);
		struct hl_group *hg = &rc->hl_groups[fe_hlink_group(f)];
		if (hg->last >= 0)
			fl->sorted[hg->last]->flags &= ~FE_HLINK_LAST;
		f->flags |= FE_HLINK_LAST;
		hg->last = (int32_t)i;
	}
	return true;
}

bool hlink_member(const struct recv_ctx *rc, const struct file_entry *f)
{
	return rc->s->opts->hard_links && in_group(f) && (size_t)fe_hlink_group(f) < rc->hl_cap;
}

int32_t hlink_target(struct recv_ctx *rc, const struct file_entry *f, bool *done)
{
	pthread_mutex_lock(&rc->lock);
	struct hl_group *hg = group_of(rc, f);
	*done = hg && hg->state == HL_TARGET_DONE;
	int32_t target = hg && hg->state != HL_NO_TARGET ? hg->target : -1;
	pthread_mutex_unlock(&rc->lock);
	return target;
}

static void wait_locked(struct recv_ctx *rc, int32_t ndx, struct file_entry *f)
{
	struct hl_group *hg = group_of(rc, f);

	if (!hg)
		return;
	fe_set_hl_next(f, -1);
	recv_state_add(rc, ndx, FS_HLINK_WAIT);
	if (hg->state == HL_TARGET_SENT) {
		/* after the target in rsync's chain: linked in arrival order */
		if (hg->after_tail >= 0)
			fe_set_hl_next(rc->fl->sorted[hg->after_tail], ndx);
		else
			hg->after = ndx;
		hg->after_tail = ndx;
		return;
	}
	/* before any target: linked latest first */
	fe_set_hl_next(f, hg->waiting);
	hg->waiting = ndx;
}

void hlink_wait(struct recv_ctx *rc, int32_t ndx, struct file_entry *f)
{
	pthread_mutex_lock(&rc->lock);
	wait_locked(rc, ndx, f);
	pthread_mutex_unlock(&rc->lock);
}

bool hlink_defers(const struct recv_ctx *rc, const struct file_entry *f)
{
	return !(f->flags & FE_HLINK_LAST);
}

void hlink_set_target(struct recv_ctx *rc, int32_t ndx, const struct file_entry *f, bool done)
{
	pthread_mutex_lock(&rc->lock);
	struct hl_group *hg = group_of(rc, f);
	if (hg) {
		hg->target = ndx;
		hg->state = done ? HL_TARGET_DONE : HL_TARGET_SENT;
		if (!done)
			note_sent(rc, ndx);
	}
	pthread_mutex_unlock(&rc->lock);
}

int32_t hlink_take_waiting(struct recv_ctx *rc, const struct file_entry *target)
{
	pthread_mutex_lock(&rc->lock);
	struct hl_group *hg = group_of(rc, target);
	int32_t head = -1;
	if (hg) {
		/* one chain: the later members, then the earlier ones */
		head = hg->after >= 0 ? hg->after : hg->waiting;
		if (hg->after_tail >= 0)
			fe_set_hl_next(rc->fl->sorted[hg->after_tail], hg->waiting);
		hg->after = hg->after_tail = hg->waiting = -1;
	}
	pthread_mutex_unlock(&rc->lock);
	return head;
}

static bool still_sent(const struct recv_ctx *rc, int32_t ndx)
{
	const struct hl_group *hg = group_of(rc, rc->fl->sorted[ndx]);

	return hg && hg->state == HL_TARGET_SENT && hg->target == ndx;
}

int32_t hlink_pending(struct recv_ctx *rc, size_t *cursor)
{
	int32_t target = -1;

	pthread_mutex_lock(&rc->lock);
	while (target < 0 && *cursor < rc->hl_nsent) {
		int32_t t = rc->hl_sent[*cursor];
		if (still_sent(rc, t)) {
			target = t;
			++*cursor;
		} else {
			/* keep the order: targets are linked as they arrived */
			memmove(rc->hl_sent + *cursor, rc->hl_sent + *cursor + 1,
				(--rc->hl_nsent - *cursor) * sizeof *rc->hl_sent);
		}
	}
	pthread_mutex_unlock(&rc->lock);
	return target;
}

int32_t hlink_next_sent(struct recv_ctx *rc, size_t *cursor)
{
	int32_t target = -1;

	pthread_mutex_lock(&rc->lock);
	while (target < 0 && *cursor < rc->hl_cap) {
		struct hl_group *hg = &rc->hl_groups[(*cursor)++];
		if (hg->state == HL_TARGET_SENT)
			target = hg->target;
	}
	pthread_mutex_unlock(&rc->lock);
	return target;
}

/* Take ndx out of the group's waiting lists. */
static void unwait(struct recv_ctx *rc, struct hl_group *hg, int32_t ndx)
{
	struct file_entry **sorted = rc->fl->sorted;
	int32_t *lists[2] = {&hg->after, &hg->waiting};

	for (int i = 0; i < 2; i++) {
		int32_t prev = -1;
		for (int32_t m = *lists[i]; m >= 0; prev = m, m = fe_hl_next(sorted[m])) {
			if (m != ndx)
				continue;
			/* unlink: from the head, or from the member before */
			if (prev < 0)
				*lists[i] = fe_hl_next(sorted[ndx]);
			else
				fe_set_hl_next(sorted[prev], fe_hl_next(sorted[ndx]));
			if (i == 0 && hg->after_tail == ndx)
				hg->after_tail = prev;
			return;
		}
	}
}

bool hlink_batch_adopt(struct recv_ctx *rc, int32_t ndx, struct file_entry *f)
{
	pthread_mutex_lock(&rc->lock);
	struct hl_group *hg = group_of(rc, f);
	bool adopt = hg && hg->state == HL_TARGET_SENT && hg->target != ndx &&
		     !(recv_state(rc, hg->target) & FS_DONE);
	if (adopt) {
		int32_t old = hg->target;
		unwait(rc, hg, ndx);
		recv_state_drop(rc, old, FS_REQUESTED);
		hg->target = ndx;
		wait_locked(rc, old, rc->fl->sorted[old]);
		recv_state_add(rc, ndx, FS_REQUESTED);
		note_sent(rc, ndx);
	}
	pthread_mutex_unlock(&rc->lock);
	return adopt;
}

bool hlink_arrivals(const struct recv_ctx *rc)
{
	for (size_t i = 0; i < rc->hl_nsent; i++) {
		int32_t t = rc->hl_sent[i];
		if ((recv_state(rc, t) & (FS_DONE | FS_FAILED)) && still_sent(rc, t))
			return true;
	}
	return false;
}

/* Give up the group's waiting members: settled, not made. */
static void release_locked(struct recv_ctx *rc, struct hl_group *hg)
{
	struct file_entry **sorted = rc->fl->sorted;
	int32_t *lists[2] = {&hg->after, &hg->waiting};

	for (int i = 0; i < 2; i++) {
		for (int32_t m = *lists[i]; m >= 0; m = fe_hl_next(sorted[m]))
			recv_state_add(rc, m, FS_FAILED);
		*lists[i] = -1;
	}
	hg->after_tail = -1;
	if (hg->state == HL_TARGET_SENT)
		hg->state = HL_NO_TARGET;
	pthread_cond_broadcast(&rc->cond);
}

void hlink_release(struct recv_ctx *rc, const struct file_entry *f)
{
	pthread_mutex_lock(&rc->lock);
	struct hl_group *hg = group_of(rc, f);
	if (hg)
		release_locked(rc, hg);
	pthread_mutex_unlock(&rc->lock);
}

void hlink_release_all(struct recv_ctx *rc)
{
	pthread_mutex_lock(&rc->lock);
	for (size_t i = 0; i < rc->hl_cap; i++) {
		struct hl_group *hg = &rc->hl_groups[i];
		if (hg->state == HL_NO_TARGET && (hg->waiting >= 0 || hg->after >= 0))
			release_locked(rc, hg);
	}
	pthread_mutex_unlock(&rc->lock);
}

void hlink_free(struct recv_ctx *rc)
{
	free(rc->hl_groups);
	free(rc->hl_sent);
	rc->hl_groups = NULL;
	rc->hl_sent = NULL;
	rc->hl_cap = rc->hl_nsent = rc->hl_sent_cap = 0;
}
