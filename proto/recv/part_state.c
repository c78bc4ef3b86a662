/*
 * The receiving side's per-index state once parts of an incremental list
 * are released: each released part's directory state is saved, and the
 * rest goes back to the kernel (recvside.h). Kept apart from recv.c so
 * that the generator and receiver threads call down, not up.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "proto/recv/recvside.h"

void recv_release_state(struct recv_ctx *rc)
{
	const struct flist *fl = rc->fl;
	size_t upto = fl->released;

	pthread_mutex_lock(&rc->lock);
	if (upto > rc->part_dir_cap) {
		size_t cap = rc->part_dir_cap ? rc->part_dir_cap * 2 : 256;
		while (cap < upto)
			cap *= 2;
		uint8_t *v = realloc(rc->part_dir_state, cap);
		if (!v) {
			/* the states stay where they are */
			pthread_mutex_unlock(&rc->lock);
			return;
		}
		rc->part_dir_state = v;
		rc->part_dir_cap = cap;
	}
	/* a part's directory was handled before its entries, so its state
	 * is final once the part is released */
	for (size_t k = rc->part_dir_saved; k < upto; k++)
		rc->part_dir_state[k] = recv_state(rc, (size_t)fl->parts[k].ndx_start - 1);
	rc->part_dir_saved = upto;
	/* slots below released_slots belong to released parts alone */
	flist_give_back(rc->state, fl->released_slots, &rc->state_given);
	pthread_mutex_unlock(&rc->lock);
}

uint8_t recv_part_dir_state(struct recv_ctx *rc, size_t k)
{
	pthread_mutex_lock(&rc->lock);
	uint8_t st = k < rc->part_dir_saved
			     ? rc->part_dir_state[k]
			     : recv_state(rc, (size_t)rc->fl->parts[k].ndx_start - 1);
	pthread_mutex_unlock(&rc->lock);
	return st;
}
