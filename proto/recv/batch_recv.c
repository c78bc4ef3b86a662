/*
 * --read-batch on the receiving side: the generator and the receiver
 * agree on which of the batch's files to apply (rsync receiver.c:
 * gen_wants_ndx, no_batched_update; there over a pipe, here through the
 * shared state of the two threads).
 */
#include "proto/delta/batch.h"

#include <pthread.h>

#include "proto/recv/recvside.h"

void batch_note_listed(struct recv_ctx *rc)
{
	pthread_mutex_lock(&rc->lock);
	rc->gen_listed = true;
	pthread_cond_broadcast(&rc->cond);
	pthread_mutex_unlock(&rc->lock);
}

/* With incremental lists the batch holds the later parts between the
 * files, so the receiver cannot wait for the whole list: it waits for the
 * generator to be past the part of each file instead. */
void batch_note_decided(struct recv_ctx *rc, size_t upto)
{
	pthread_mutex_lock(&rc->lock);
	if (upto > rc->gen_decided)
		rc->gen_decided = upto;
	pthread_cond_broadcast(&rc->cond);
	pthread_mutex_unlock(&rc->lock);
}

bool batch_wait_decided(struct recv_ctx *rc, size_t ndx)
{
	pthread_mutex_lock(&rc->lock);
	while (ndx >= rc->gen_decided && !rc->generator_stopped)
		pthread_cond_wait(&rc->cond, &rc->lock);
	bool decided = ndx < rc->gen_decided;
	pthread_mutex_unlock(&rc->lock);
	return decided;
}

bool batch_wait_listed(struct recv_ctx *rc)
{
	pthread_mutex_lock(&rc->lock);
	while (!rc->gen_listed && !rc->generator_stopped)
		pthread_cond_wait(&rc->cond, &rc->lock);
	bool listed = rc->gen_listed;
	pthread_mutex_unlock(&rc->lock);
	return listed;
}

void batch_report_missing(struct recv_ctx *rc)
{
	for (size_t i = 0; i < rc->fl->count; i++) {
		char path[MAXPATHLEN_WIRE * 2];
		if ((recv_state(rc, i) & (FS_REQUESTED | FS_DONE | FS_FAILED)) != FS_REQUESTED)
			continue;
		if (!flist_path(rc->fl->sorted[i], path, sizeof path))
			continue;
		session_xfer_err(rc->s, "(No batched update for \"%s\")", path);
	}
}
