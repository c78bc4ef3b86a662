/*
 * --fsync of files updated in place, off the receiver's thread: the
 * receiver hands each finished file over and goes on with the next while
 * a worker waits for the disk, so the writing of one file's changed pages
 * overlaps the transfer of the next. The receiver waits for all of them
 * at the end of each phase, before it tells the generator the phase is
 * over, so nothing reports a transfer complete before its data is on disk.
 *
 * A file written to a temporary name is not handed over: it must be on
 * disk before the rename makes it the file (tempfile.c).
 */
#ifndef FERRY_SYNCER_H
#define FERRY_SYNCER_H

#include <pthread.h>
#include <stdbool.h>

struct syncer_item;

struct syncer {
	pthread_mutex_t lock;
	pthread_cond_t work, idle;
	pthread_t thread;
	bool started, quit, busy;
	struct syncer_item *head, *tail;
	char failed[512];         /* the first failure, "" if none */
};

void syncer_init(struct syncer *y);
/* fsync fd (which the syncer now owns and closes) soon; path is for the
 * message should it fail. false: not queued (fd untouched; sync it here). */
bool syncer_add(struct syncer *y, int fd, const char *path);
/* Wait until every file handed over is synced; false if one failed, with
 * the message in msg. */
bool syncer_drain(struct syncer *y, char *msg, size_t msglen);
void syncer_free(struct syncer *y);

#endif
