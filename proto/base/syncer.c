/*
 * Deferred --fsync of files updated in place (syncer.h).
 */
#include "proto/base/syncer.h"
#include "proto/base/stop_signal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct syncer_item {
	struct syncer_item *next;
	int fd;
	char path[];
};

void syncer_init(struct syncer *y)
{
	memset(y, 0, sizeof *y);
	pthread_mutex_init(&y->lock, NULL);
	pthread_cond_init(&y->work, NULL);
	pthread_cond_init(&y->idle, NULL);
}

static void *syncer_main(void *arg)
{
	struct syncer *y = arg;

	pthread_mutex_lock(&y->lock);
	for (;;) {
		while (!y->head && !y->quit)
			pthread_cond_wait(&y->work, &y->lock);
		if (!y->head)
			break;
		struct syncer_item *it = y->head;
		y->head = it->next;
		if (!y->head)
			y->tail = NULL;
		y->busy = true;
		pthread_mutex_unlock(&y->lock);
		int rc = fsync(it->fd);
		int e = errno;
		close(it->fd);
		pthread_mutex_lock(&y->lock);
		if (rc < 0 && !y->failed[0])
			snprintf(y->failed, sizeof y->failed, "fsync \"%s\" failed: %s", it->path,
				 strerror(e));
		free(it);
		y->busy = false;
		if (!y->head)
			pthread_cond_broadcast(&y->idle);
	}
	pthread_mutex_unlock(&y->lock);
	return NULL;
}

bool syncer_add(struct syncer *y, int fd, const char *path)
{
	size_t n = strlen(path) + 1;
	struct syncer_item *it = malloc(sizeof *it + n);

	if (!it)
		return false;
	it->next = NULL;
	it->fd = fd;
	memcpy(it->path, path, n);
	pthread_mutex_lock(&y->lock);
	if (!y->started) {
		if (stop_signal_thread_create(&y->thread, syncer_main, y) != 0) {
			pthread_mutex_unlock(&y->lock);
			free(it);
			return false;
		}
		y->started = true;
	}
	if (y->tail)
		y->tail->next = it;
	else
		y->head = it;
	y->tail = it;
	pthread_cond_signal(&y->work);
	pthread_mutex_unlock(&y->lock);
	return true;
}

bool syncer_drain(struct syncer *y, char *msg, size_t msglen)
{
	pthread_mutex_lock(&y->lock);
	while (y->head || y->busy)
		pthread_cond_wait(&y->idle, &y->lock);
	bool ok = !y->failed[0];
	if (!ok)
		snprintf(msg, msglen, "%s", y->failed);
	y->failed[0] = '\0';
	pthread_mutex_unlock(&y->lock);
	return ok;
}

void syncer_free(struct syncer *y)
{
	pthread_mutex_lock(&y->lock);
	y->quit = true;
	pthread_cond_signal(&y->work);
	pthread_mutex_unlock(&y->lock);
	if (y->started)
		pthread_join(y->thread, NULL);
	while (y->head) {
		struct syncer_item *it = y->head;
		y->head = it->next;
		close(it->fd);
		free(it);
	}
	pthread_cond_destroy(&y->work);
	pthread_cond_destroy(&y->idle);
	pthread_mutex_destroy(&y->lock);
}
