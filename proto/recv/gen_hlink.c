/*
 * The generator's hard links: a member made as a link to its group's
 * target once that has arrived (rsync hlink.c: hard_link_check,
 * maybe_hard_link, finish_hard_link).
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

#include "proto/recv/gen.h"

/* Make f (at ndx) a hard link to the group's member at `target`, and say
 * so as rsync does (hlink.c: maybe_hard_link). */
/* Settle an entry the generator handled itself (a hard link), under the
 * lock the part accounting reads it with. */
static void set_state(struct recv_ctx *rc, int32_t ndx, uint8_t bits)
{
	pthread_mutex_lock(&rc->lock);
	recv_state_add(rc, ndx, bits);
	pthread_cond_broadcast(&rc->cond);
	pthread_mutex_unlock(&rc->lock);
}

static enum hlink_alt hlink_alt_match(struct gen *g, const struct file_entry *f,
				      const char *path, const struct stat *tst, struct stat *ast)
{
	enum hlink_alt found = HL_ALT_NONE;

	for (int i = 0; i < g->rc->cfg.nalt; i++) {
		const char *aleaf;
		struct stat st;
		int adir = alt_regular(g, i, path, &aleaf, &st);
		if (adir < 0)
			continue;
		if (g->o->alt_dest_mode == ALT_DEST_LINK) {
			if (st.st_dev != tst->st_dev || st.st_ino != tst->st_ino)
				continue;
			*ast = st;
			return HL_ALT_TARGET;
		}
		if (!regular_up_to_date(g, f, adir, aleaf, &st))
			continue;
		*ast = st;
		found = HL_ALT_MATCH;
		if (unchanged_attrs(g, f, &st))
			break;
	}
	return found;
}

/* A dry run made no target: the one a --link-dest dir would have given
 * (try_alt_dests links the first up-to-date copy whose attributes
 * match), else none, and then a stat that matches nothing (hlink.c:
 * dry-run zeroes prev_st). */
static bool dry_run_target(struct gen *g, const struct file_entry *tf, const char *tpath,
			   struct stat *tst)
{
	memset(tst, 0, sizeof *tst);
	for (int i = 0; g->o->alt_dest_mode == ALT_DEST_LINK && i < g->rc->cfg.nalt; i++) {
		const char *aleaf;
		struct stat ast;
		int adir = alt_regular(g, i, tpath, &aleaf, &ast);
		if (adir < 0 || !regular_up_to_date(g, tf, adir, aleaf, &ast))
			continue;
		if (!alt_attrs_match(g, tf, &ast) || !alt_xattrs_match(g, tf, adir, aleaf))
			return false;
		*tst = ast;
		return true;
	}
	return false;
}

static void make_hard_link(struct gen *g, int32_t ndx, struct file_entry *f, int32_t target)
{
	struct recv_ctx *rc = g->rc;
	char path[MAXPATHLEN_WIRE * 2], tpath[MAXPATHLEN_WIRE * 2];
	const char *leaf, *tleaf;
	struct stat st, tst;

	if (!flist_path(f, path, sizeof path) ||
	    !flist_path(rc->fl->sorted[target], tpath, sizeof tpath)) {
		set_state(rc, ndx, FS_FAILED);
		return;
	}
	int dirfd = parent_of(g, path, &leaf);
	struct dir_cursor tc;
	dir_cursor_init(&tc, rc->cfg.rootfd);
	tc.follow = g->dirs.follow;
	tc.beneath = g->dirs.beneath;
	int tdirfd = dir_cursor_parent(&tc, tpath, &tleaf);
	bool have_target = tdirfd >= 0 && fstatat(tdirfd, tleaf, &tst, AT_SYMLINK_NOFOLLOW) == 0;
	if (!have_target && g->o->dry_run)
		have_target = dry_run_target(g, rc->fl->sorted[target], tpath, &tst);
	if (!have_target && !g->o->dry_run) {
		file_error(g, "stat", tpath);
		dir_cursor_close(&tc);
		set_state(rc, ndx, FS_FAILED);
		return;
	}
	bool exists = dirfd >= 0 && fstatat(dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (exists && have_target && st.st_ino == tst.st_ino && st.st_dev == tst.st_dev) {
		report_item(g, ndx, attr_change_bits(g, f, &st) | ITEM_LOCAL_CHANGE, "");
		if (says_uptodate(g))
			session_info(g->s, "%s is uptodate\n", path);
		set_state(rc, ndx, FS_DONE);
		dir_cursor_close(&tc);
		return;
	}
	if (!g->o->dry_run) {
		char tmp[300];
		int fd = dirfd >= 0 ? fs_create_temp(dirfd, leaf, tmp, sizeof tmp) : -1;
		if (fd >= 0) {
			close(fd);
			unlinkat(dirfd, tmp, 0);
		}
		if (fd < 0 || linkat(tdirfd, tleaf, dirfd, tmp, 0) < 0 ||
		    renameat(dirfd, tmp, dirfd, leaf) < 0) {
			file_error(g, "link", path);
			if (fd >= 0)
				unlinkat(dirfd, tmp, 0);
			dir_cursor_close(&tc);
			set_state(rc, ndx, FS_FAILED);
			return;
		}
	}
	dir_cursor_close(&tc);
	struct stat ast;
	enum hlink_alt alt = !exists && g->rc->cfg.nalt ? hlink_alt_match(g, f, path, &tst, &ast)
						    : HL_ALT_NONE;
	/* compared with the file the link replaced, or its match in a basis
	 * dir, as a local change */
	int iflags = exists ? attr_change_bits_for(g, f, &st, ITEM_LOCAL_CHANGE)
		     : alt != HL_ALT_NONE ? attr_change_bits_for(g, f, &ast, ITEM_LOCAL_CHANGE)
					  : ITEM_IS_NEW;
	/* the very file of a --link-dest dir is only told of at -ii or -ivv */
	if (alt != HL_ALT_TARGET || g->o->itemize > 1 ||
	    (g->o->itemize && info_ge(g->o, INFO_NAME, 2)))
		report_item(g, ndx, iflags | ITEM_LOCAL_CHANGE, tpath);
	else if (says_uptodate(g))
		session_info(g->s, "%s is uptodate\n", path);
	recv_report_success(rc, ndx, path, false);
	set_state(rc, ndx, FS_DONE); /* after its report: then its part may end */
}

/* Link the members waiting for the group's target, which is in place. */
void link_waiting(struct gen *g, int32_t target)
{
	struct flist *fl = g->rc->fl;

	hlink_set_target(g->rc, target, fl->sorted[target], true);
	for (int32_t m = hlink_take_waiting(g->rc, fl->sorted[target]); m >= 0;) {
		int32_t next = fe_hl_next(fl->sorted[m]);
		make_hard_link(g, m, fl->sorted[m], target);
		m = next;
	}
}

/* The receiver's state of a group's target, read under the lock it is
 * written with. */
uint8_t target_state(struct gen *g, int32_t target)
{
	pthread_mutex_lock(&g->rc->lock);
	uint8_t st = recv_state(g->rc, target);
	pthread_mutex_unlock(&g->rc->lock);
	return st;
}

bool target_arrived(struct gen *g, int32_t target)
{
	return (target_state(g, target) & (FS_DONE | FS_FAILED)) == FS_DONE;
}

/* A member of a group that has its target already: linked now when the
 * target is in place, else it waits for it (hlink.c: hard_link_check).
 * False: no target yet, f is handled as a file of its own. */
bool hlink_joined(struct gen *g, int32_t ndx, struct file_entry *f)
{
	bool done;
	int32_t target = hlink_target(g->rc, f, &done);

	if (target < 0)
		return false;
	if (!done && target_arrived(g, target)) {
		link_waiting(g, target);
		done = true;
	}
	if (done)
		make_hard_link(g, ndx, f, target);
	else
		hlink_wait(g->rc, ndx, f);
	return true;
}
