/*
 * Running the receiving side: shared state, the two threads, and the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <time.h>

#include "proto/base/alloc.h"
#include "proto/base/byteorder.h"
#include "proto/recv/delete.h"
#include "proto/filter/filter.h"
#include "proto/recv/hlink.h"
#include "proto/recv/recvside.h"
#include "proto/delta/sumcache.h"
#include "proto/base/syncer.h"
#include "proto/recv/tempfile.h"
#include "proto/base/stop_signal.h"

/* Bytes read at a time when input is only being discarded. */
#define WIRE_DRAIN_STEP (64 * 1024)

/* MSG_NO_SEND (receiver thread): the file will not come; the generator
 * may end its part (generator.c: got_flist_entry_status FES_NO_SEND). */
static void recv_no_send(void *ctx, int32_t ndx)
{
	struct recv_ctx *rc = ctx;

	if (ndx < 0 || (size_t)ndx >= flist_slots(rc->fl))
		return;
	pthread_mutex_lock(&rc->lock);
	recv_state_add(rc, ndx, FS_FAILED);
	pthread_cond_broadcast(&rc->cond);
	pthread_mutex_unlock(&rc->lock);
}

/* --sums-cache: read before the generator needs it, written back when
 * both threads are done. A single-file destination has no directory of
 * its own to keep it in. */
static void sums_cache_open(struct recv_ctx *rc, struct sumcache *sc)
{
	struct session *s = rc->s;
	const struct ferry_opts *o = s->opts;

	rc->cfg.sums = NULL;
	if (!o->sums_cache || o->dry_run || rc->cfg.solo_name || rc->cfg.list_only || o->read_batch ||
	    s->xfer_csum == CSUM_NONE || o->whole_file == 1)
		return;
	/* a name the module's filters keep clients from is not ours to write */
	if (recv_daemon_excludes(&rc->cfg, o->sums_cache, false)) {
		session_warn(s, "ferry: --sums-cache: %s is excluded by the module\n", o->sums_cache);
		return;
	}
	if (!sumcache_may_replace(rc->cfg.rootfd, o->sums_cache)) {
		session_warn(s, "ferry: --sums-cache: %s exists and is not a sums cache; left as it is\n",
			     o->sums_cache);
		return;
	}
	sumcache_open(sc, rc->cfg.rootfd, o->sums_cache, s->xfer_csum, s->seed, s->proper_seed_order);
	rc->cfg.sums = sc;
}

static void sums_cache_close(struct recv_ctx *rc)
{
	char err[512];

	if (!rc->cfg.sums)
		return;
	/* The transfer is over: the peer may be gone, so the message goes
	 * to our own stderr, and it changes no exit code. */
	if (!sumcache_save(rc->cfg.sums, rc->cfg.rootfd, err, sizeof err))
		fprintf(stderr, "ferry: --sums-cache: %s\n", err);
	sumcache_close(rc->cfg.sums);
	rc->cfg.sums = NULL;
}

/* The receiver stopped on a local error (a full disk) while the
 * generator still runs: a server reads on, discarding, until the
 * generator has seen the error and stopped, so that a peer blocked
 * writing to us can go on and read what we say next (the reason, and
 * the exit code) instead of meeting a reset connection. */
static void drain_until_generator_stops(struct recv_ctx *rc)
{
	struct session *s = rc->s;
	struct pollfd p = {.fd = s->in.fd, .events = POLLIN};
	size_t got;

	for (;;) {
		pthread_mutex_lock(&rc->lock);
		bool stopped = rc->generator_stopped;
		pthread_mutex_unlock(&rc->lock);
		if (stopped)
			return;
		int r = poll(&p, 1, 100);
		if (r < 0 && errno != EINTR)
			return;
		if (r > 0 && !wire_read_some(&s->in, WIRE_DRAIN_STEP, &got))
			return;
	}
}

int recv_run(struct recv_ctx *rc)
{
	struct session *s = rc->s;
	pthread_t gen;

	pthread_mutex_init(&rc->lock, NULL);
	pthread_cond_init(&rc->cond, NULL);
	/* incremental lists grow while we run: their state is reserved */
	rc->state = rc->fl->inc ? flist_inc_state_new()
				: xcalloc_array(&s->err, rc->fl->count, 1);
	rc->parts_ready = rc->fl->nparts;
	rc->parts_eof = rc->fl->eof;
	rc->gen_waits_on = RECV_WAKE_ANY;
	if (!rc->state ||
	    !(rc->fl->inc || !rc->s->opts->hard_links || hlink_match(rc, 0, rc->fl->count, rc->fl->count)) ||
	    !delete_index_build(rc)) {
		wire_fail(&s->err, RERR_MALLOC, "out of memory");
		return session_exit_code(s);
	}
	int side = recv_open_side_dirs(rc);
	if (side) {
		recv_close_side_dirs(rc);
		wire_fail(&s->err, side, " ");
		return session_exit_code(s);
	}
	s->hooks.on_no_send = recv_no_send;
	s->hooks.on_no_send_ctx = rc;
	struct sumcache sums;
	sums_cache_open(rc, &sums);
	struct syncer syncer;
	syncer_init(&syncer);
	/* a sender removing its copy on MSG_SUCCESS waits for the disk too */
	rc->cfg.syncer = s->opts->fsync && s->opts->inplace && !s->opts->remove_source_files
			     ? &syncer
			     : NULL;
	if (stop_signal_thread_create(&gen, generator_main, rc) != 0) {
		syncer_free(&syncer);
		rc->cfg.syncer = NULL;
		s->hooks.on_no_send = NULL;
		wire_fail(&s->err, RERR_IPC, "cannot start the generator thread: %s",
			  strerror(errno));
		recv_close_side_dirs(rc);
		return session_exit_code(s);
	}
	receiver_run(rc);
	pthread_mutex_lock(&rc->lock);
	bool gen_running = !rc->generator_stopped;
	pthread_mutex_unlock(&rc->lock);
	int failed = wire_error_code(&s->err);
	if (failed == RERR_FILEIO && gen_running && s->am_server)
		drain_until_generator_stops(rc);
	else if (failed && failed != RERR_SIGNAL && gen_running) {
		/* Unblock a generator waiting on the peer: nothing more will
		 * come. A generator that already stopped needs no waking, and
		 * leaving the socket open lets its error reach the client; so
		 * does a stop signal, which the generator sees itself (and the
		 * grace period bounds, stop_signal.h). */
		shutdown(s->out.fd, SHUT_RDWR);
	}
	pthread_join(gen, NULL);
	s->hooks.on_no_send = NULL;
	syncer_free(&syncer); /* after a failure: what was handed over */
	rc->cfg.syncer = NULL;
	sums_cache_close(rc);
	recv_close_side_dirs(rc);
	delete_index_free(rc);
	for (size_t i = 0; i < rc->nfailed_dirs; i++)
		free(rc->failed_dirs[i]);
	free(rc->failed_dirs);
	if (rc->fl->inc)
		flist_inc_state_free(rc->state);
	else
		free(rc->state);
	free(rc->redo);
	free(rc->part_dir_state);
	hlink_free(rc);
	return session_exit_code(s);
}
