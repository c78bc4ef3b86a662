/*
 * The generator: walks the sorted file list, brings directories, symlinks
 * and devices into shape locally, and asks the sender for every regular
 * file that is missing or out of date, with the block sums of the version
 * we already have. Mirrors rsync generator.c:generate_files() and
 * recv_generator(). This file is the top: the thread, the walk over the
 * list (whole or by incremental parts), the phases, redo and the end; one
 * entry is gen_entry.c's, with gen_item.c, gen_sums.c, gen_basis.c and
 * gen_hlink.c below it (gen.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "proto/core/msg.h"
#include "proto/recv/tempfile.h"
#include "proto/meta/acls.h"
#include "proto/delta/batch.h"
#include "proto/meta/fakesuper.h"
#include "proto/meta/xattrs.h"
#include "proto/recv/delete.h"
#include "proto/core/logfmt.h"
#include "proto/base/fileio.h"
#include "proto/filter/filter.h"
#include "proto/recv/fuzzy.h"
#include "proto/core/heap_stats.h"
#include "proto/recv/hlink.h"
#include "proto/recv/recvside.h"
#include "proto/flist/sendside.h"
#include "proto/delta/sumcache.h"
#include "proto/recv/gen.h"

/* Wait until the receiver has seen `count` NDX_DONEs, requesting again
 * every file it queued for a redo meanwhile. */
static bool wait_phase(struct gen *g, int count, bool allow_redo)
{
	struct recv_ctx *rc = g->rc;

	for (;;) {
		pthread_mutex_lock(&rc->lock);
		while (rc->nredo == 0 && rc->done_count < count && !rc->receiver_failed &&
		       !wire_error_code(&g->s->err))
			pthread_cond_wait(&rc->cond, &rc->lock);
		size_t n = rc->nredo;
		int32_t *todo = NULL;
		if (n) {
			todo = malloc(n * sizeof *todo);
			if (todo)
				memcpy(todo, rc->redo, n * sizeof *todo);
			rc->nredo = 0;
		}
		bool reached = rc->done_count >= count;
		bool failed = rc->receiver_failed || wire_error_code(&g->s->err);
		pthread_mutex_unlock(&rc->lock);
		for (size_t i = 0; todo && i < n; i++)
			redo_request(g, todo[i], allow_redo);
		free(todo);
		if (!wire_flush(&g->s->out))
			return false;
		if (failed)
			return false;
		if (reached && n == 0)
			return true;
	}
}

void redo_request(struct gen *g, int32_t ndx, bool allow)
{
	struct file_entry *f = g->rc->fl->sorted[ndx];
	char path[MAXPATHLEN_WIRE * 2];
	const char *leaf;
	struct stat st;
	int dirfd;

	if (!allow || !flist_path(f, path, sizeof path)) {
		recv_state_add(g->rc, ndx, FS_FAILED);
		return;
	}
	if (g->rc->cfg.solo_name) {
		dirfd = solo_dir(g);
		leaf = g->rc->cfg.solo_name;
	} else {
		dirfd = parent_of(g, path, &leaf);
	}
	if (dirfd < 0) {
		recv_state_add(g->rc, ndx, FS_FAILED);
		return;
	}
	bool have = fstatat(dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    (S_ISREG(st.st_mode) || writable_device(g->o, &st));
	if (have && writable_device(g->o, &st))
		device_size(dirfd, leaf, &st);
	request_file(g, ndx, f, dirfd, leaf, have ? &st : NULL,
		     have ? attr_change_bits(g, f, &st) : ITEM_IS_NEW, true);
}

/* Members waiting for a transferred file are linked as soon as the
 * generator sees it has arrived, as rsync's generator does between files
 * (generator.c: check_for_finished_files). */
static void link_arrived_targets(struct gen *g)
{
	size_t cursor = 0;
	int32_t t;

	if (!g->o->hard_links)
		return;
	while ((t = hlink_pending(g->rc, &cursor)) >= 0) {
		if (target_arrived(g, t))
			link_waiting(g, t);
		else if (target_state(g, t) & FS_FAILED)
			hlink_release(g->rc, g->rc->fl->sorted[t]);
	}
}

/* Hard-link groups whose member was transferred: link the members that
 * waited for it, once it has arrived (hlink.c: finish_hard_link). */
static void link_sent_targets(struct gen *g)
{
	size_t cursor = 0;
	int32_t t;

	link_arrived_targets(g);
	/* and any a full pending list could not record */
	while ((t = hlink_next_sent(g->rc, &cursor)) >= 0)
		if (target_arrived(g, t))
			link_waiting(g, t);
}

/* Directories get their times after everything inside them is written
 * (generator.c: touch_up_dirs). */
/* Set a directory's time again if writing into it changed it
 * (generator.c: touch_up_dirs). */
static void touch_up_dir(struct gen *g, const struct file_entry *f, uint8_t state)
{
	char path[MAXPATHLEN_WIRE * 2];

	if (!(f->flags & FE_ACTIVE) || !S_ISDIR(f->mode) || (state & FS_FAILED))
		return;
	if ((f->flags & FE_IMPLIED_DIR) && g->o->relative && g->o->no_implied_dirs)
		return;
	if (!flist_path(f, path, sizeof path))
		return;
	const char *leaf;
	struct stat st;
	int dirfd = strcmp(path, ".") == 0 ? g->rc->cfg.rootfd : parent_of(g, path, &leaf);
	if (strcmp(path, ".") == 0)
		leaf = ".";
	/* rsync restores only the modes that lack owner write */
	if (dirfd >= 0 && tweaks_dir_perms(g) && !(f->mode & S_IWUSR))
		fchmodat(dirfd, leaf, f->mode & 07777, 0);
	if (!g->o->times || g->o->omit_dir_times)
		return;
	if (dirfd >= 0 && fstatat(dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    !recv_mtime_differs(g->o, &st, f))
		return;
	if (dirfd < 0 || fs_set_mtime(dirfd, leaf, f->mtime, fe_mtime_nsec(f)) < 0)
		file_error_at(g, "failed to set times on ", path, "");
}

static void touch_up_dirs(struct gen *g)
{
	struct flist *fl = g->rc->fl;

	if (g->o->dry_run || ((!g->o->times || g->o->omit_dir_times) && !tweaks_dir_perms(g)))
		return;
	if (fl->inc) {
		/* each directory once, at the index its own part names it by,
		 * where its full handling (and any failure) was recorded */
		for (size_t k = 0; k < fl->nparts; k++)
			touch_up_dir(g, flist_part_dir(fl, k), recv_part_dir_state(g->rc, k));
		return;
	}
	for (size_t i = fl->low; i <= fl->high && i < fl->count; i++)
		touch_up_dir(g, fl->sorted[i], recv_state(g->rc, i));
}

static bool send_done(struct gen *g)
{
	return wire_write_ndx(&g->s->out, NDX_DONE);
}

static bool delete_stats(struct gen *g)
{
	struct stats *st = &g->s->stats;
	struct wire_out *out = &g->s->out;

	if (g->o->delete_mode == DELETE_NONE && !g->o->force)
		return true;
	return wire_write_ndx(out, NDX_DEL_STATS) &&
	       wire_write_varint(out, st->deleted_files - st->deleted_dirs - st->deleted_symlinks -
					      st->deleted_devices - st->deleted_specials) &&
	       wire_write_varint(out, st->deleted_dirs) &&
	       wire_write_varint(out, st->deleted_symlinks) &&
	       wire_write_varint(out, st->deleted_devices) &&
	       wire_write_varint(out, st->deleted_specials);
}

static bool settled(uint8_t state)
{
	return !(state & (FS_REQUESTED | FS_HLINK_WAIT)) || (state & (FS_DONE | FS_FAILED));
}

/* How many more parts, in order and below `upto`, have every file we
 * asked for settled (arrived or given up). Called with rc->lock held. */
static size_t finishable_parts(struct gen *g, size_t upto)
{
	struct recv_ctx *rc = g->rc;
	size_t done = g->done_parts;

	/* A batch's sender is gone: nothing waits for our NDX_DONEs, and a
	 * file the batch lacks never settles (batch_report_missing). */
	if (g->o->read_batch)
		return upto > done ? upto - done : 0;
	while (done < upto) {
		const struct flist_part *p = &rc->fl->parts[done];
		size_t end = (size_t)p->ndx_start + (size_t)p->count;
		if (g->settle_pos < (size_t)p->ndx_start)
			g->settle_pos = (size_t)p->ndx_start;
		while (g->settle_pos < end && settled(recv_state(rc, g->settle_pos)))
			g->settle_pos++;
		if (g->settle_pos < end)
			break;
		done++;
	}
	return done - g->done_parts;
}

/* The file whose settling the generator waits for (gen_waits_on), with
 * finishable_parts() just returned 0 and rc->lock held: the last file of
 * the first part to end that has yet to settle (the part ends only once
 * it has). Any file, where hard links are in play: a target's arrival
 * lets the generator link members that then settle. */
static int64_t file_to_wait_on(struct gen *g, size_t upto)
{
	struct recv_ctx *rc = g->rc;

	if (g->o->read_batch || g->done_parts >= upto)
		return RECV_WAKE_NONE;
	if (rc->hl_nsent > 0)
		return RECV_WAKE_ANY;
	/* a file that settled stays so: each part is scanned down once,
	 * whatever order its files arrive in */
	if (g->settle_top_part != g->done_parts + 1) {
		const struct flist_part *p = &rc->fl->parts[g->done_parts];
		g->settle_top = (size_t)p->ndx_start + (size_t)p->count;
		g->settle_top_part = g->done_parts + 1;
	}
	for (; g->settle_top > g->settle_pos; g->settle_top--) {
		uint8_t st = recv_state(rc, g->settle_top - 1);
		if (st & FS_HLINK_WAIT)
			return RECV_WAKE_ANY;
		if (!settled(st))
			return (int64_t)(g->settle_top - 1);
	}
	return RECV_WAKE_ANY;
}

/* Wait for something to do, then do it: ask again for files the receiver
 * queued for a redo, and end (NDX_DONE) the parts below `upto` that are
 * settled (generator.c: check_for_finished_files). Returns once part
 * `next` or the end of the parts has arrived, or, with `all`, once every
 * part below `upto` is ended. */
static bool sync_parts(struct gen *g, size_t next, size_t upto, bool all, size_t *ready,
		       bool *eof)
{
	struct recv_ctx *rc = g->rc;

	for (;;) {
		pthread_mutex_lock(&rc->lock);
		size_t n_done, n_redo;
		bool failed, arrived;
		for (;;) {
			n_done = finishable_parts(g, upto);
			n_redo = rc->nredo;
			*ready = rc->parts_ready;
			*eof = rc->parts_eof;
			failed = rc->receiver_failed || wire_error_code(&g->s->err);
			arrived = all ? g->done_parts + n_done >= upto : (*ready > next || *eof);
			if (n_done || n_redo || failed || arrived || hlink_arrivals(rc))
				break;
			rc->gen_waits_on = file_to_wait_on(g, upto);
			pthread_cond_wait(&rc->cond, &rc->lock);
			rc->gen_waits_on = RECV_WAKE_ANY;
		}
		int32_t *todo = n_redo ? malloc(n_redo * sizeof *todo) : NULL;
		if (todo)
			memcpy(todo, rc->redo, n_redo * sizeof *todo);
		rc->nredo = 0;
		g->done_parts += n_done;
		if (n_done) {
			/* before the NDX_DONEs go: the receiver may free these
			 * parts once the sender has echoed them */
			const struct flist_part *last = &rc->fl->parts[g->done_parts - 1];
			rc->names_stale_below = last->first_file + (size_t)last->count;
		}
		pthread_mutex_unlock(&rc->lock);
		link_arrived_targets(g);
		for (size_t i = 0; todo && i < n_redo; i++)
			redo_request(g, todo[i], true);
		free(todo);
		for (size_t i = 0; i < n_done; i++)
			if (!send_done(g))
				return false;
		if (!wire_flush(&g->s->out) || failed)
			return false;
		if (arrived)
			return true;
	}
}

/* One part: its directory in full, then its entries (directories in it
 * only made, see gen_dir_early). */
static bool generate_part(struct gen *g, const struct flist_part *p)
{
	struct recv_ctx *rc = g->rc;

	if (!delete_index_add_part(rc, p))
		return wire_fail(&g->s->err, RERR_MALLOC, "out of memory");
	g->last_dir = NULL; /* names of released parts may come back at its address */
	if (rc->fl->sorted[p->ndx_start - 1]->flags & FE_ACTIVE)
		gen_entry(g, p->ndx_start - 1);
	g->dir_early = true;
	for (int32_t i = p->ndx_start; i < p->ndx_start + p->count; i++) {
		if (wire_error_code(&g->s->err))
			break;
		gen_entry(g, i);
		link_arrived_targets(g);
		wire_keepalive(&g->s->out); /* unchanged files send nothing */
	}
	g->dir_early = false;
	if (g->o->read_batch)
		batch_note_decided(rc, (size_t)p->ndx_start + (size_t)p->count);
	return !wire_error_code(&g->s->err);
}

/* Match the hard links of the parts that arrived since last time. */
static bool match_parts(struct gen *g, size_t *matched, size_t ready)
{
	const struct flist *fl = g->rc->fl;

	for (; *matched < ready; ++*matched) {
		const struct flist_part *p = &fl->parts[*matched];
		size_t lo = (size_t)p->ndx_start, end = lo + (size_t)p->count;
		if (!hlink_match(g->rc, lo, end, p->first_file + (size_t)p->count))
			return wire_fail(&g->s->err, RERR_MALLOC, "out of memory");
	}
	return true;
}

/* Has enough of the list arrived to generate part `next`? */
static bool looked_ahead(struct gen *g, size_t next, size_t ready, bool eof)
{
	size_t files = 0;

	/* a batch holds its later parts behind the data we must decide on
	 * first; its own choice of member is followed instead */
	if (!g->o->hard_links || eof || g->o->read_batch)
		return true;
	for (size_t i = next; i < ready && files < HLINK_LOOKAHEAD; i++)
		files += (size_t)g->rc->fl->parts[i].count;
	return files >= HLINK_LOOKAHEAD;
}

/* Phase 0 with incremental recursion: the parts as they come, each ended
 * once the generator is past it and its files have settled; the last
 * part's NDX_DONE ends the phase. */
static bool generate_parts(struct gen *g)
{
	struct recv_ctx *rc = g->rc;
	size_t next = 0, ready = 0, matched = 0, want = 0;
	bool eof = false;

	for (;;) {
		if (!sync_parts(g, want, next ? next - 1 : 0, false, &ready, &eof))
			return false;
		if (g->o->hard_links && !match_parts(g, &matched, ready))
			return false;
		if (next >= ready && eof)
			break;
		want = next;
		if (next >= ready)
			continue;
		if (!looked_ahead(g, next, ready, eof)) {
			want = ready; /* wait for one more part */
			continue;
		}
		/* published parts never move (flist_inc_recv.c) */
		struct flist_part p = rc->fl->parts[next];
		if (!generate_part(g, &p))
			return false;
		next++;
	}
	if (g->o->hard_links)
		hlink_release_all(rc);
	return sync_parts(g, next, next, true, &ready, &eof);
}

static bool generate_files(struct gen *g)
{
	struct recv_ctx *rc = g->rc;
	struct flist *fl = rc->fl;
	struct session *s = g->s;
	bool late_delete = g->o->delete_mode == DELETE_AFTER || g->o->delete_mode == DELETE_DELAY;

	if (g->o->delete_mode == DELETE_BEFORE && !rc->cfg.list_only)
		delete_pass(rc, &g->dirs);
	/* -vv (generator.c: generate_files) */
	if (debug_ge(g->o, DEBUG_FLIST, 1))
		session_info(s, "delta-transmission %s\n",
			     g->o->whole_file == 1 && !g->o->append
				     ? "disabled for local transfer or --whole-file"
				     : "enabled");
	if (fl->inc) {
		if (!generate_parts(g))
			return false;
	} else {
		for (size_t i = fl->low; i <= fl->high && i < fl->count && !rc->cfg.list_only; i++) {
			if (wire_error_code(&s->err))
				return false;
			gen_entry(g, (int32_t)i);
			link_arrived_targets(g);
			wire_keepalive(&s->out); /* unchanged files send nothing */
		}
		batch_note_listed(rc);
		/* A: end of phase 0 */
		if (!send_done(g) || !wire_flush(&s->out))
			return false;
	}
	if (!wait_phase(g, 1, true))
		return false;
	if (!rc->cfg.list_only)
		link_sent_targets(g);
	/* B, and C/D early when nothing delays them (generate_files). */
	if (!send_done(g))
		return false;
	if (s->protocol >= 29 && !send_done(g))
		return false;
	if (s->protocol >= 31 && !late_delete && (!delete_stats(g) || !send_done(g)))
		return false;
	if (!wire_flush(&s->out) || !wait_phase(g, 2, false))
		return false;
	if (s->protocol >= 29 && !wait_phase(g, 3, false))
		return false;
	if (late_delete && !rc->cfg.list_only)
		delete_pass(rc, &g->dirs);
	/* before the last deletion stats, so that a sending client still
	 * reads it (generator.c: generate_files) */
	if (rc->skipped_deletes && g->o->max_delete >= 0) {
		session_warn(s, "Deletions stopped due to --max-delete limit (%ld skipped)\n",
			     rc->skipped_deletes);
		session_io_error_add(s, IOERR_DEL_LIMIT);
	}
	if (s->protocol >= 31 && late_delete && (!delete_stats(g) || !send_done(g)))
		return false;
	if (!wire_flush(&s->out))
		return false;
	if (!rc->cfg.list_only)
		touch_up_dirs(g);
	/* Wait for the receiver to finish reading (stats and, for protocol 31,
	 * the echo of D) before the goodbye. */
	pthread_mutex_lock(&rc->lock);
	while (!rc->receiver_finished && !rc->receiver_failed && !wire_error_code(&s->err))
		pthread_cond_wait(&rc->cond, &rc->lock);
	bool ok = rc->receiver_finished;
	pthread_mutex_unlock(&rc->lock);
	if (!ok)
		return false;
	/* --info=stats3, as rsync's receiver and generator each end */
	heap_stats_report(s, "receiver");
	heap_stats_report(s, "generator");
	/* E: the final goodbye */
	return send_done(g) && wire_flush(&s->out);
}

void *generator_main(void *arg)
{
	struct recv_ctx *rc = arg;
	struct gen g = {.rc = rc, .s = rc->s, .o = rc->s->opts};

	g.dflt_perms = 0777 & ~rc->s->umask_bits;
	dir_cursor_init(&g.dirs, rc->cfg.rootfd);
	g.dirs.follow = recv_follows_dest_links(g.o);
	/* -K follows a destination symlink only while it stays beneath the
	 * destination, for every receiver (rsync 3.5), but anywhere in a
	 * module with "insecure links" (rsync 3.2.7's way, which it restores) */
	g.dirs.beneath = !(rc->cfg.confined && g.o->insecure_links);
	g.alt = rc->cfg.nalt ? calloc((size_t)rc->cfg.nalt, sizeof *g.alt) : NULL;
	for (int i = 0; g.alt && i < rc->cfg.nalt; i++)
		dir_cursor_init(&g.alt[i], rc->cfg.alt_fd[i]);
	g.buf = malloc(SUMS_READ_BUF);
	if (!g.buf || (rc->cfg.nalt && !g.alt)) {
		wire_fail(&rc->s->err, RERR_MALLOC, "out of memory");
	} else if (g.o->fuzzy && rc->s->protocol < 29) {
		/* the basis is named in the item flags (compat.c: setup_protocol) */
		wire_fail(&rc->s->err, RERR_PROTOCOL,
			  "--fuzzy requires protocol 29 or higher (negotiated %d).", rc->s->protocol);
	} else if (!generate_files(&g)) {
		wire_fail(&rc->s->err, RERR_STREAMIO, "generator stopped");
		pthread_mutex_lock(&rc->lock);
		rc->generator_stopped = true;
		bool receiver_running = !rc->receiver_failed && !rc->receiver_finished;
		pthread_mutex_unlock(&rc->lock);
		/* Wake the receiver if it still waits for the peer. Only the
		 * reading side: on a socket in and out are one fd, and the error
		 * message must still reach the client, which a receiver that
		 * has stopped may still be waiting to hear from. A stop signal
		 * wakes the receiver itself, and the error exit then reads on. */
		if (receiver_running && wire_error_code(&rc->s->err) != RERR_SIGNAL)
			shutdown(rc->s->in.fd, SHUT_RD);
	}
	pthread_mutex_lock(&rc->lock);
	rc->generator_stopped = true;
	pthread_cond_broadcast(&rc->cond);
	pthread_mutex_unlock(&rc->lock);
	free(g.buf);
	fuzzy_reset(&g.fuzzy);
	dir_cursor_close(&g.dirs);
	for (int i = 0; g.alt && i < rc->cfg.nalt; i++)
		dir_cursor_close(&g.alt[i]);
	free(g.alt);
	return NULL;
}
