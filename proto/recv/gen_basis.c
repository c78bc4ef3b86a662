/*
 * The generator's choice of a basis for a missing or changed entry: the
 * --compare-dest/--copy-dest/--link-dest dirs, --partial-dir and fuzzy
 * (-y) candidates (rsync generator.c: try_dests_reg, try_dests_non,
 * find_fuzzy).
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

/* A new directory that a --compare/copy/link-dest dir holds: rsync
 * itemizes it against that one, not as new (generator.c: try_dests_non,
 * then statret 1) -- the first with the same attributes, else the first. */
bool alt_dir_stat(struct gen *g, const struct file_entry *f, const char *path,
		  struct stat *ast)
{
	bool found = false;

	for (int i = 0; i < g->rc->cfg.nalt; i++) {
		const char *aleaf = ".";
		struct stat cand;
		if (g->rc->cfg.alt_fd[i] < 0)
			continue;
		int adir = strcmp(path, ".") == 0 ? g->rc->cfg.alt_fd[i]
						  : dir_cursor_parent(&g->alt[i], path, &aleaf);
		if (adir < 0 || fstatat(adir, aleaf, &cand, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(cand.st_mode))
			continue;
		if (!found || attr_change_bits(g, f, &cand) == 0)
			*ast = cand;
		found = true;
		if (attr_change_bits(g, f, &cand) == 0)
			break;
	}
	return found;
}

/* A missing symlink that a basis dir holds as it is, target and
 * attributes (generator.c: try_dests_non, match level 3). */
bool alt_symlink_match(struct gen *g, const struct file_entry *f, const char *path)
{
	char cur[MAXPATHLEN_WIRE + 1];

	for (int i = 0; i < g->rc->cfg.nalt; i++) {
		const char *aleaf;
		struct stat ast;
		if (g->rc->cfg.alt_fd[i] < 0)
			continue;
		int adir = dir_cursor_parent(&g->alt[i], path, &aleaf);
		if (adir < 0 || fstatat(adir, aleaf, &ast, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISLNK(ast.st_mode))
			continue;
		ssize_t n = readlinkat(adir, aleaf, cur, sizeof cur - 1);
		if (n < 0)
			continue;
		cur[n] = '\0';
		if (strcmp(cur, fe_link(f)) == 0 && unchanged_attrs(g, f, &ast))
			return true;
	}
	return false;
}

/* A symlink found up to date in a basis dir: shown as rsync shows it, at
 * -ivv or -ii only; true when that was all (--compare-dest), false when it
 * is to be made as a copy of that one, quietly. */
bool symlink_from_alt(struct gen *g, int32_t ndx, const char *path)
{
	const struct ferry_opts *o = g->o;
	bool compare = o->alt_dest_mode == ALT_DEST_COMPARE;

	if (o->itemize && (info_ge(o, INFO_NAME, 2) || o->itemize > 1))
		report_item(g, ndx, compare ? 0 : ITEM_LOCAL_CHANGE, NULL);
	if (says_uptodate(g))
		session_info(g->s, "%s is uptodate\n", path);
	return compare;
}

/* --partial-dir: a partial file from an earlier try is the best basis
 * (generator.c: partialptr). Fills b (dirfd owned by *pfd) when there is
 * one. */
bool partial_basis(struct gen *g, const char *path, int *pfd, struct basis *b,
		   struct stat *st)
{
	*pfd = -1;
	if (!g->o->partial_dir)
		return false;
	int fd = partial_dir_open(g->rc, path, false);
	const char *leaf = partial_leaf(&g->rc->cfg, path);
	if (fd < 0)
		return false;
	if (fstatat(fd, leaf, st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st->st_mode)) {
		close(fd);
		return false;
	}
	*pfd = fd;
	*b = (struct basis){.dirfd = fd, .leaf = leaf, .st = st, .alt = FNAMECMP_PARTIAL_DIR};
	return true;
}

/* --copy-dest: a local copy of an up-to-date file, via a temp file. */
static bool copy_from_alt(struct gen *g, const struct file_entry *f, int adir, const char *aleaf,
			  int dirfd, const char *leaf)
{
	char tmp[MAXPATHLEN_WIRE];
	int in = openat(adir, aleaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	int out = in >= 0 ? fs_create_temp(dirfd, leaf, tmp, sizeof tmp) : -1;
	int64_t n = out >= 0 ? fs_copy_range(in, NULL, out, -1) : -1;

	if (in >= 0)
		close(in);
	if (out < 0)
		return false;
	/* the copy takes the entry's xattrs, values known by digest from
	 * the file copied (rsync.c: set_file_attrs with fnamecmp) */
	bool ok = close(out) == 0 && n >= 0 && apply_attrs(g->rc, dirfd, tmp, f, NULL, true) >= 0 &&
		  xattr_apply_gen(g->s, dirfd, tmp, f, adir, aleaf) &&
		  renameat(dirfd, tmp, dirfd, leaf) == 0;
	if (!ok)
		unlinkat(dirfd, tmp, 0);
	return ok;
}

/* A --*-dest dir outside --confine-root: rsync finds a file there by name
 * and then fails to open it through the confined walk, an error for that
 * file (exit 23); one it does not hold is no error. */
static void alt_outside_refused(struct gen *g, int i, const char *path)
{
	char name[2 * MAXPATHLEN_WIRE + 2];
	struct stat st;

	if (snprintf(name, sizeof name, "%s/%s", g->o->alt_dest[i], path) >= (int)sizeof name ||
	    fstatat(g->rc->cfg.rootfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
		return;
	session_xfer_err(g->s, "open \"%s\": %s (%d)", name, strerror(ELOOP), ELOOP);
}

/* The regular file at path in --*-dest dir i: its directory fd (from
 * that dir's cursor), name and stat; -1 when it has none. */
int alt_regular(struct gen *g, int i, const char *path, const char **aleaf,
		struct stat *ast)
{
	if (g->rc->cfg.alt_outside[i])
		alt_outside_refused(g, i, path);
	if (g->rc->cfg.alt_fd[i] < 0)
		return -1;
	int adir = dir_cursor_parent(&g->alt[i], path, aleaf);
	if (adir < 0 || fstatat(adir, *aleaf, ast, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISREG(ast->st_mode))
		return -1;
	return adir;
}

/* A missing destination file: look for it in the --compare-dest,
 * --copy-dest or --link-dest dirs (generator.c: try_dests_reg). */
enum alt_outcome try_alt_dests(struct gen *g, int32_t ndx, struct file_entry *f,
			       const char *path, int dirfd, const char *leaf,
			       struct basis *b, struct stat *bst)
{
	const struct ferry_opts *o = g->o;

	for (int i = 0; i < g->rc->cfg.nalt; i++) {
		const char *aleaf;
		struct stat ast;
		int adir = alt_regular(g, i, path, &aleaf, &ast);
		if (adir < 0)
			continue;
		if (!b->st) {
			*bst = ast;
			*b = (struct basis){.dirfd = adir, .leaf = aleaf, .st = bst, .alt = i};
		}
		if (!regular_up_to_date(g, f, adir, aleaf, &ast))
			continue;
		bool done = o->dry_run;
		if (o->alt_dest_mode == ALT_DEST_COMPARE) {
			done = true;
		} else if (!o->dry_run && o->alt_dest_mode == ALT_DEST_LINK &&
			   alt_attrs_match(g, f, &ast) && alt_xattrs_match(g, f, adir, aleaf)) {
			done = linkat(adir, aleaf, dirfd, leaf, 0) == 0 ||
			       copy_from_alt(g, f, adir, aleaf, dirfd, leaf);
		} else if (!o->dry_run) {
			done = copy_from_alt(g, f, adir, aleaf, dirfd, leaf);
		}
		if (!done)
			continue;
		if (o->alt_dest_mode != ALT_DEST_COMPARE) {
			stats_bump(&g->s->stats.created_files);
			stats_bump(&g->s->stats.created_reg);
		}
		/* a link shows as 'h' (generator.c: itemize with
		 * ITEM_XNAME_FOLLOWS and an empty name) */
		bool linked = o->alt_dest_mode == ALT_DEST_LINK && alt_attrs_match(g, f, &ast) &&
			      alt_xattrs_match(g, f, adir, aleaf);
		if (o->itemize > 1 || info_ge(o, INFO_NAME, 2))
			report_item(g, ndx, o->alt_dest_mode == ALT_DEST_COMPARE ? 0 : ITEM_LOCAL_CHANGE,
				    linked ? "" : NULL);
		if (says_uptodate(g) && unchanged_attrs(g, f, &ast))
			session_info(g->s, "%s is uptodate\n", path);
		recv_state_add(g->rc, ndx, FS_DONE);
		recv_report_success(g->rc, ndx, path, false);
		return o->alt_dest_mode == ALT_DEST_COMPARE ? ALT_COMPARED : ALT_IN_DEST;
	}
	return ALT_NONE;
}

/* An existing destination file that a --compare-dest or --link-dest dir
 * holds identically (the quick check and the attributes): rsync removes it,
 * or replaces it by a link to that one, so that the destination holds only
 * what differs (generator.c: try_dests_reg with find_exact_for_existing).
 * True when that settled the file. */
bool replace_by_alt(struct gen *g, int32_t ndx, struct file_entry *f, const char *path,
		    int dirfd, const char *leaf, const struct stat *st)
{
	const struct ferry_opts *o = g->o;

	if (!g->rc->cfg.nalt || o->alt_dest_mode == ALT_DEST_COPY)
		return false;
	for (int i = 0; i < g->rc->cfg.nalt; i++) {
		const char *aleaf;
		struct stat ast;
		int adir = alt_regular(g, i, path, &aleaf, &ast);
		if (adir < 0 || !regular_up_to_date(g, f, adir, aleaf, &ast) ||
		    !alt_attrs_match(g, f, &ast) || !alt_xattrs_match(g, f, adir, aleaf))
			continue;
		bool link = o->alt_dest_mode == ALT_DEST_LINK;
		if (link && ast.st_dev == st->st_dev && ast.st_ino == st->st_ino)
			return false; /* already that very file */
		if (!o->dry_run) {
			if (unlinkat(dirfd, leaf, 0) < 0 && errno != ENOENT)
				return false;
			if (link && linkat(adir, aleaf, dirfd, leaf, 0) < 0 &&
			    !copy_from_alt(g, f, adir, aleaf, dirfd, leaf))
				return false;
		}
		if (o->itemize > 1 || info_ge(o, INFO_NAME, 2))
			report_item(g, ndx, link ? ITEM_LOCAL_CHANGE : 0, link ? "" : NULL);
		recv_state_add(g->rc, ndx, FS_DONE);
		recv_report_success(g->rc, ndx, path, false);
		return true;
	}
	return false;
}

/* -y: the candidate lists are per directory; drop them when the
 * generator moves on (generator.c: recv_generator, need_fuzzy_dirlist). */
void fuzzy_enter_dir(struct gen *g, const struct file_entry *f)
{
	const char *dir = f->dirname ? f->dirname : "";

	if (!g->o->fuzzy || strcmp(dir, g->fuzzy_dir) == 0)
		return;
	fuzzy_reset(&g->fuzzy);
	snprintf(g->fuzzy_dir, sizeof g->fuzzy_dir, "%s", dir);
}

/* The directory of a fuzzy level: the destination's, or the same dir
 * under a --*-dest dir (-1 when that is absent). */
static int fuzzy_level_dir(struct gen *g, int level, int dirfd)
{
	if (level == 0)
		return dirfd;
	if (g->rc->cfg.alt_fd[level - 1] < 0)
		return -1;
	return dir_cursor_open(&g->alt[level - 1], g->fuzzy_dir);
}

/* -y/-yy: a missing file's basis from a similar file beside it
 * (generator.c: recv_generator's fuzzy_basis branch, find_fuzzy). */
bool fuzzy_basis(struct gen *g, const struct file_entry *f, const char *path, int dirfd,
		 struct basis *b, struct stat *bst)
{
	int levels = g->o->fuzzy > 1 ? g->rc->cfg.nalt + 1 : 1;
	int level = 0;

	if (!g->fuzzy.loaded) {
		int fds[FUZZY_LEVELS_MAX];
		if (levels > FUZZY_LEVELS_MAX)
			levels = FUZZY_LEVELS_MAX;
		/* each level has its own cursor, so all stay open together */
		for (int i = 0; i < levels; i++)
			fds[i] = fuzzy_level_dir(g, i, dirfd);
		fuzzy_load(&g->fuzzy, fds, levels);
	}
	const struct fuzzy_cand *c = fuzzy_find(&g->fuzzy, f->basename, fe_size(f), f->mtime,
						g->o->modify_window, &level);
	if (!c)
		return false;
	int bdir = fuzzy_level_dir(g, level, dirfd);
	if (bdir < 0 || fstatat(bdir, c->name, bst, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(bst->st_mode))
		return false;
	*b = (struct basis){.dirfd = bdir, .leaf = c->name, .st = bst,
			    .alt = FNAMECMP_FUZZY + level, .xname = c->name};
	if (debug_ge(g->o, DEBUG_FUZZY, 1)) {
		/* the basis by its name in the transfer, beside path */
		const char *slash = strrchr(path, '/');
		int dirlen = slash ? (int)(slash - path + 1) : 0;
		session_info(g->s, "fuzzy basis selected for %s: %.*s%s\n", path, dirlen, path,
			     c->name);
	}
	return true;
}
