/*
 * Hard-link groups on the receiving side (hlink.c): rsync's choice of the
 * member that is written and the order the others are linked to it.
 */
#ifndef FERRY_HLINK_H
#define FERRY_HLINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct recv_ctx;
struct file_entry;

enum hl_state { HL_NO_TARGET, HL_TARGET_SENT, HL_TARGET_DONE };

/* One group, indexed by its number (the leader's place in files[]). */
struct hl_group {
	int32_t target;        /* sorted index of the member others link to */
	int32_t waiting;       /* earlier members waiting, latest first */
	int32_t after;         /* members that came while the target was sent */
	int32_t after_tail;
	int32_t last;          /* sorted index of the member marked last */
	uint8_t state;         /* enum hl_state */
};

/* Mark the last member of each group among the sorted slots [lo, end),
 * whose group numbers are below `groups`, taking the mark from an earlier
 * range's member. Called once per range, in order: the whole list, or
 * each part of an incremental one as it arrives. */
bool hlink_match(struct recv_ctx *rc, size_t lo, size_t end, size_t groups);

/* Is f a regular file in a hard-link group that -H keeps? */
bool hlink_member(const struct recv_ctx *rc, const struct file_entry *f);

/* The group's target (sorted index) or -1; *done when it is in place. */
int32_t hlink_target(struct recv_ctx *rc, const struct file_entry *f, bool *done);

/* Does a missing member wait for a later one (it is not the last)? */
bool hlink_defers(const struct recv_ctx *rc, const struct file_entry *f);

/* f (at ndx) waits to be linked to its group's target. */
void hlink_wait(struct recv_ctx *rc, int32_t ndx, struct file_entry *f);

/* f (at ndx) is its group's target: in place (done) or being sent. */
void hlink_set_target(struct recv_ctx *rc, int32_t ndx, const struct file_entry *f, bool done);

/* The members waiting for target's group, as a chain through hl_next in
 * the order rsync links them; the group's lists are emptied. */
int32_t hlink_take_waiting(struct recv_ctx *rc, const struct file_entry *target);

/* The targets being sent, oldest first: call with *cursor 0 and again
 * until -1 (used to link the waiting members soon after one arrives). */
int32_t hlink_pending(struct recv_ctx *rc, size_t *cursor);

/* The next target still being sent, from group *cursor on; -1 at the end. */
int32_t hlink_next_sent(struct recv_ctx *rc, size_t *cursor);

/* --read-batch: the batch holds the data of f (at ndx), which our
 * generator left to wait, because the writer's generator saw a later part
 * before it chose (rsync matches hard links of parts read ahead). When the
 * group's chosen member has not arrived, f takes its place as the member
 * written, and the other waits to be linked. Called by the receiver. */
bool hlink_batch_adopt(struct recv_ctx *rc, int32_t ndx, struct file_entry *f);

/* Called with rc->lock held: has a target being sent arrived or failed? */
bool hlink_arrivals(const struct recv_ctx *rc);

/* f's group will get no target (its last member was skipped, or its
 * target failed): the members waiting are settled as not made. */
void hlink_release(struct recv_ctx *rc, const struct file_entry *f);

/* The same for every group still without a target, at the end of the
 * list: nothing else will come for them. */
void hlink_release_all(struct recv_ctx *rc);

void hlink_free(struct recv_ctx *rc);

#endif
