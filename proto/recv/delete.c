/*
 * --delete (generator.c: delete_in_dir, do_delete_pass; delete.c:
 * delete_item). Only directories marked as content directories are
 * scanned; names the filter rules exclude are kept unless
 * --delete-excluded; after a sender I/O error nothing is deleted unless
 * --ignore-errors.
 */
#include "proto/core/itemlog.h"
#include "proto/recv/delete.h"
#include "proto/recv/recvside.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/filter/filter.h"
#include "proto/base/outfilter.h"

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	while (*s)
		h = (h ^ (uint8_t)*s++) * 1099511628211ull;
	return h;
}

/* Does entry f spell path? Compared piecewise: no copy of the name. */
static bool entry_is(const struct file_entry *f, const char *path)
{
	if (!f->dirname)
		return strcmp(f->basename, path) == 0;
	size_t dlen = strlen(f->dirname);
	return strncmp(f->dirname, path, dlen) == 0 && path[dlen] == '/' &&
	       strcmp(f->basename, path + dlen + 1) == 0;
}

/* The set of listed paths holds pointers to the entries, not copies of
 * their paths: 8 bytes a slot and no string per entry. With released
 * parts (flist.h) an entry of a part the generator has ended may be
 * gone: it is skipped, and dropped when the set is rebuilt; directories
 * are kept copies, outside files[], and stay. */
static bool entry_stale(const struct recv_ctx *rc, const struct file_entry *f)
{
	const struct flist *fl = rc->fl;

	if (!fl->release)
		return false;
	uintptr_t off = (uintptr_t)f - (uintptr_t)fl->files;
	return off < rc->names_stale_below * sizeof *f;
}

static void index_insert(const struct file_entry **names, size_t cap, const char *path,
			 const struct file_entry *f)
{
	size_t h = hash_str(path) & (cap - 1);

	while (names[h])
		h = (h + 1) & (cap - 1);
	names[h] = f;
}

/* Room for `more` entries, the set at most half full; a rebuild moves
 * the live entries over and leaves the stale ones out, with room for
 * `slack` times what it then holds (4 while parts keep coming, 2 for a
 * whole list, which never grows). */
static bool index_reserve(struct recv_ctx *rc, size_t more, size_t slack)
{
	char path[MAXPATHLEN_WIRE * 2];
	size_t live = 0;

	if ((rc->names_used + more) * 2 + 16 <= rc->names_cap)
		return true;
	for (size_t h = 0; h < rc->names_cap; h++)
		live += rc->names[h] && !entry_stale(rc, rc->names[h]);
	size_t cap = 16;
	while (cap < (live + more) * slack + 16)
		cap *= 2;
	const struct file_entry **names = calloc(cap, sizeof *names);
	if (!names)
		return false;
	for (size_t h = 0; h < rc->names_cap; h++) {
		const struct file_entry *f = rc->names[h];
		if (f && !entry_stale(rc, f) && flist_path(f, path, sizeof path))
			index_insert(names, cap, path, f);
	}
	free(rc->names);
	rc->names = names;
	rc->names_cap = cap;
	rc->names_used = live;
	return true;
}

/* Without deletions only directories are ever looked up (is an entry's
 * directory listed?): the other entries stay out of the set, which for a
 * list of a million files is most of its memory. */
static bool wanted(const struct recv_ctx *rc, const struct file_entry *f)
{
	return (f->flags & FE_ACTIVE) &&
	       (S_ISDIR(f->mode) || rc->s->opts->delete_mode != DELETE_NONE);
}

static void index_add(struct recv_ctx *rc, const struct file_entry *f)
{
	char path[MAXPATHLEN_WIRE * 2];

	if (wanted(rc, f) && flist_path(f, path, sizeof path)) {
		index_insert(rc->names, rc->names_cap, path, f);
		rc->names_used++;
	}
}

bool delete_index_add_part(struct recv_ctx *rc, const struct flist_part *p)
{
	struct file_entry **v = rc->fl->sorted + p->ndx_start;

	size_t n = 0;

	for (int32_t k = 0; k < p->count; k++)
		n += wanted(rc, v[k]);
	if (!index_reserve(rc, n, 4))
		return false;
	for (int32_t k = 0; k < p->count; k++)
		index_add(rc, v[k]);
	return true;
}

bool delete_index_build(struct recv_ctx *rc)
{
	struct flist *fl = rc->fl;

	/* incremental lists are added part by part, as they are generated */
	if (fl->inc)
		return index_reserve(rc, 0, 4);
	size_t n = 0;
	for (size_t i = 0; i < fl->count; i++)
		n += wanted(rc, &fl->files[i]);
	if (!index_reserve(rc, n, 2))
		return false;
	for (size_t i = 0; i < fl->count; i++)
		index_add(rc, &fl->files[i]);
	return true;
}

void delete_index_free(struct recv_ctx *rc)
{
	free(rc->names);
	rc->names = NULL;
	while (rc->nmerge > 0) {
		filter_pop_dir(rc->cfg.filters);
		free(rc->merge_dirs[--rc->nmerge]);
	}
	free(rc->merge_dirs);
	rc->merge_dirs = NULL;
}

/* The destination directory `rel` (relative to the root, "" the root
 * itself) as a path for messages and the files its merge files name. */
static void merge_dir_name(const struct recv_ctx *rc, const char *rel, char *buf, size_t size)
{
	const char *root = rc->cfg.root_path ? rc->cfg.root_path : ".";

	snprintf(buf, size, "%s%s%s", root, *rel ? "/" : "", rel);
}

/* Per-directory merge files (-F, -C, dir-merge) count on the receiving
 * side too: before deleting in a directory, rsync reads them in it and in
 * each directory above it, in the destination (generator.c:
 * delete_in_dir, change_local_filter_dir), so what they exclude is kept.
 * The stack follows the directories as they come, popping what is no
 * longer above. False: a merge file could not be read (nothing is
 * deleted there then). */
static bool merge_dirs_enter(struct recv_ctx *rc, struct dir_cursor *dirs, const char *dirpath)
{
	char rel[MAXPATHLEN_WIRE * 2], fsdir[PATH_MAX + MAXPATHLEN_WIRE * 2], err[512];

	if (!filter_list_has_dir_merge(rc->cfg.filters))
		return true;
	snprintf(rel, sizeof rel, "%s", strcmp(dirpath, ".") == 0 ? "" : dirpath);
	/* level k of the stack is the directory of rel's first k components */
	size_t want = 1;
	for (const char *p = rel; *p; p++)
		if (*p != '/' && (p == rel || p[-1] == '/'))
			want++;
	size_t keep = 0;
	while (keep < rc->nmerge && keep < want) {
		const char *have = rc->merge_dirs[keep];
		size_t n = strlen(have);
		if (strncmp(have, rel, n) != 0 || (rel[n] != '\0' && rel[n] != '/' && n > 0))
			break;
		keep++;
	}
	while (rc->nmerge > keep) {
		filter_pop_dir(rc->cfg.filters);
		free(rc->merge_dirs[--rc->nmerge]);
	}
	if (!rc->merge_dirs && !(rc->merge_dirs = calloc(MAXPATHLEN_WIRE, sizeof *rc->merge_dirs)))
		return false;
	while (rc->nmerge < want && rc->nmerge < MAXPATHLEN_WIRE) {
		/* the prefix of rel with as many components as the level */
		size_t len = 0, comps = 0;
		while (comps < rc->nmerge && rel[len]) {
			len += strcspn(rel + len, "/");
			comps++;
			if (comps < rc->nmerge)
				len += strspn(rel + len, "/");
		}
		char *level = strndup(rel, len);
		if (!level)
			return false;
		int fd = dir_cursor_open(dirs, level);
		merge_dir_name(rc, level, fsdir, sizeof fsdir);
		if (fd < 0 || filter_push_dir_at(rc->cfg.filters, fd, fsdir, level, err, sizeof err) < 0) {
			if (fd >= 0)
				session_err(rc->s, "%s", err);
			free(level);
			return false;
		}
		rc->merge_dirs[rc->nmerge++] = level;
	}
	return true;
}

static const struct file_entry *lookup(const struct recv_ctx *rc, const char *path)
{
	size_t h = hash_str(path) & (rc->names_cap - 1);

	while (rc->names[h]) {
		const struct file_entry *f = rc->names[h];
		if (!entry_stale(rc, f) && entry_is(f, path))
			return f;
		h = (h + 1) & (rc->names_cap - 1);
	}
	return NULL;
}

static bool listed(const struct recv_ctx *rc, const char *path)
{
	return lookup(rc, path) != NULL;
}

bool recv_dir_listed(const struct recv_ctx *rc, const char *dir)
{
	const struct file_entry *e = lookup(rc, dir);

	return e && S_ISDIR(e->mode);
}

static bool protected_by_filter(struct recv_ctx *rc, const char *path, bool is_dir)
{
	/* filter_list_from_opts() already made plain rules sender-only under
	 * --delete-excluded, so protect/risk rules still count here. */
	/* what a daemon module excludes is not there to delete
	 * (flist.c: is_excluded checks the daemon's rules first) */
	if (recv_daemon_excludes(&rc->cfg, path, is_dir))
		return true;
	if (!rc->cfg.filters)
		return false;
	return filter_check(rc->cfg.filters, path, is_dir, true) < 0;
}

static void log_deletion(struct recv_ctx *rc, const char *path, mode_t mode)
{
	bool is_dir = S_ISDIR(mode);
	const struct ferry_opts *o = rc->s->opts;

	if (rc->s->am_server) {
		/* The client logs our deletions (log.c: log_delete): a
		 * directory's name carries a trailing NUL. */
		if (rc->s->protocol >= 29 && rc->s->out.mux)
			wire_send_msg_ahead(&rc->s->out, MSG_DELETED, path,
					    strlen(path) + (is_dir ? 1 : 0));
		if (rc->s->module.xfer_log_format) /* and a daemon's transfer log */
			session_log_delete(rc->s, path, mode);
		return;
	}
	(void)o;
	session_log_delete(rc->s, path, mode);
}

static void count_deletion(struct stats *st, mode_t mode)
{
	st->deleted_files++;
	if (S_ISDIR(mode))
		st->deleted_dirs++;
	else if (S_ISLNK(mode))
		st->deleted_symlinks++;
	else if (S_ISCHR(mode) || S_ISBLK(mode))
		st->deleted_devices++;
	else if (!S_ISREG(mode))
		st->deleted_specials++;
}

/* A directory's entries in rsync's file-list order (get_dirlist sorts
 * them), so deletions happen, and are reported, in rsync's order: that
 * list walked backwards. */
struct dir_names {
	struct file_entry *v;
	size_t n;
	int protocol;
};

static int cmp_names(const void *a, const void *b, void *ctx)
{
	return flist_name_cmp(a, b, *(int *)ctx);
}

/* The type bits of a directory entry: from d_type when the file system
 * gives it (no stat per entry: sorting and the filter check only need to
 * know what is a directory, and delete_item stats what it removes), else
 * from an lstat. Returns 0 when the entry vanished. */
static mode_t entry_type(int dirfd, const struct dirent *de)
{
	struct stat st;

	switch (de->d_type) {
	case DT_DIR: return S_IFDIR;
	case DT_REG: return S_IFREG;
	case DT_LNK: return S_IFLNK;
	case DT_CHR: return S_IFCHR;
	case DT_BLK: return S_IFBLK;
	case DT_FIFO: return S_IFIFO;
	case DT_SOCK: return S_IFSOCK;
	default:
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return 0;
		return st.st_mode & S_IFMT;
	}
}

/* The name of a directory's entry as the file list spells it. */
/* dirpath/name ("." as dirpath: name alone), joined by hand since it
 * runs for every name in every directory checked. */
static bool entry_path(char *buf, size_t size, const char *dirpath, const char *name)
{
	bool top = strcmp(dirpath, ".") == 0;
	size_t dlen = top ? 0 : strlen(dirpath), nlen = strlen(name);

	if ((top ? 0 : dlen + 1) + nlen >= size)
		return false;
	if (!top) {
		memcpy(buf, dirpath, dlen);
		buf[dlen++] = '/';
	}
	memcpy(buf + dlen, name, nlen + 1);
	return true;
}

/* A directory's entries, sorted. With rc, names the file list holds are
 * left out as they are read (they are never deleted), so a no-change
 * re-sync neither copies nor sorts them. */
static bool read_sorted(int dirfd, int protocol, const struct recv_ctx *rc,
			const char *dirpath, struct dir_names *out)
{
	char path[MAXPATHLEN_WIRE * 2];
	size_t cap = 0;
	struct dir_reader d;

	out->v = NULL;
	out->n = 0;
	out->protocol = protocol;
	if (dir_reader_open(&d, dirfd) < 0)
		return false;
	const struct dirent *de;
	while ((de = dir_reader_next(&d)) != NULL) {
		if (rc && entry_path(path, sizeof path, dirpath, de->d_name) && listed(rc, path))
			continue;
		mode_t type = entry_type(dirfd, de);
		if (!type)
			continue;
		if (out->n == cap) {
			cap = cap ? cap * 2 : 32;
			struct file_entry *v = realloc(out->v, cap * sizeof *v);
			if (!v)
				break;
			out->v = v;
		}
		char *name = strdup(de->d_name);
		if (!name)
			break;
		out->v[out->n++] = (struct file_entry){.basename = name, .mode = type,
						       .flags = FE_ACTIVE};
	}
	dir_reader_close(&d);
	if (out->n > 1)
		qsort_r(out->v, out->n, sizeof *out->v, cmp_names, &out->protocol);
	return true;
}

static void free_names(struct dir_names *dn)
{
	for (size_t i = 0; i < dn->n; i++)
		free((char *)dn->v[i].basename);
	free(dn->v);
}

static bool may_delete_more(struct recv_ctx *rc)
{
	long max = rc->s->opts->max_delete;

	if (max >= 0 && rc->deletions >= max) {
		rc->skipped_deletes++;
		return false;
	}
	return true;
}

static bool delete_item(struct recv_ctx *rc, int dirfd, const char *leaf, const char *path,
			bool contents_gone);

/* Delete a directory's contents, deepest first, logging each; a directory
 * that keeps something is reported (delete.c: delete_dir_contents).
 * A subdirectory is offered to delete_item even when its own contents
 * stayed, as rsync does, so --max-delete counts it as skipped. */
static bool delete_dir_contents(struct recv_ctx *rc, int dirfd, const char *leaf,
				const char *path)
{
	char child[MAXPATHLEN_WIRE * 2];
	struct dir_names dn;
	bool all = true;
	int fd = openat(dirfd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return false;
	if (!read_sorted(fd, rc->s->protocol, NULL, NULL, &dn)) {
		close(fd);
		return false;
	}
	/* its own merge files count for what is inside (delete.c:
	 * delete_dir_contents pushes them too) */
	bool pushed = filter_list_has_dir_merge(rc->cfg.filters);
	if (pushed) {
		char fsdir[PATH_MAX + MAXPATHLEN_WIRE * 2], err[512];
		merge_dir_name(rc, path, fsdir, sizeof fsdir);
		if (filter_push_dir_at(rc->cfg.filters, fd, fsdir, path, err, sizeof err) < 0) {
			session_err(rc->s, "%s", err);
			free_names(&dn);
			close(fd);
			return false;
		}
	}
	for (size_t i = dn.n; i-- > 0;) {
		const struct file_entry *e = &dn.v[i];
		snprintf(child, sizeof child, "%s/%s", path, e->basename);
		if (protected_by_filter(rc, child, S_ISDIR(e->mode))) {
			all = false;
			continue;
		}
		if (S_ISDIR(e->mode) && !delete_dir_contents(rc, fd, e->basename, child))
			all = false;
		if (!delete_item(rc, fd, e->basename, child, true))
			all = false;
	}
	if (pushed)
		filter_pop_dir(rc->cfg.filters);
	free_names(&dn);
	close(fd);
	if (!all)
		session_info(rc->s, "cannot delete non-empty directory: %s\n", path);
	return all;
}

/* Does leaf already carry the backup suffix, with no --backup-dir? Such a
 * name is deleted as it is, not backed up a second time as name~~
 * (delete.c: is_backup_file). */
static bool is_backup_name(const struct ferry_opts *o, const char *leaf)
{
	const char *suffix = o->suffix ? o->suffix : "~";
	size_t n = strlen(leaf), k = strlen(suffix);

	return !o->backup_dir && k > 0 && n > k && strcmp(leaf + n - k, suffix) == 0;
}

/* Delete one entry, a directory with its contents unless the caller
 * already went through them (contents_gone). --max-delete is checked
 * after the contents, before the entry itself (delete.c: delete_item). */
static bool delete_item(struct recv_ctx *rc, int dirfd, const char *leaf, const char *path,
			bool contents_gone)
{
	struct stat st;

	if (fstatat(dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT;
	if (S_ISDIR(st.st_mode) && !contents_gone && !delete_dir_contents(rc, dirfd, leaf, path))
		return false;
	if (!may_delete_more(rc))
		return false;
	if (!rc->s->opts->dry_run && !S_ISDIR(st.st_mode) && rc->s->opts->backup &&
	    !is_backup_name(rc->s->opts, leaf)) {
		/* -b: a deleted file is kept as its backup */
		if (!backup_make(rc, dirfd, leaf, path)) {
			rc->s->got_xfer_error = true;
			return false;
		}
	} else if (!rc->s->opts->dry_run &&
		   unlinkat(dirfd, leaf, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) < 0) {
		/* e.g. -b left the backups of its contents in it: not an
		 * error (delete.c: delete_item's DR_NOT_EMPTY) */
		if (S_ISDIR(st.st_mode) && (errno == ENOTEMPTY || errno == EEXIST)) {
			session_info(rc->s, "cannot delete non-empty directory: %s\n", path);
			return false;
		}
		session_xfer_err(rc->s, "delete_file: %s \"%s\" failed: %s",
				 S_ISDIR(st.st_mode) ? "rmdir" : "unlink", path, strerror(errno));
		rc->s->got_xfer_error = true;
		return false;
	}
	log_deletion(rc, path, st.st_mode);
	count_deletion(&rc->s->stats, st.st_mode);
	rc->deletions++;
	return true;
}

/* Is directory leaf empty (or gone)? */
static bool dir_is_empty(int dirfd, const char *leaf)
{
	struct dir_names dn;
	int fd = openat(dirfd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return errno == ENOENT;
	bool ok = read_sorted(fd, 0, NULL, NULL, &dn);
	close(fd);
	if (!ok)
		return false;
	bool empty = dn.n == 0;
	free_names(&dn);
	return empty;
}

bool delete_make_room(struct recv_ctx *rc, int dirfd, const char *leaf, const char *path,
		      bool recurse)
{
	/* delete_dir_contents reports a directory it could not empty */
	if (recurse && !delete_dir_contents(rc, dirfd, leaf, path))
		return false;
	bool emptied = recurse || dir_is_empty(dirfd, leaf);

	if (emptied && !rc->s->opts->dry_run && unlinkat(dirfd, leaf, AT_REMOVEDIR) < 0 &&
	    errno != ENOENT)
		emptied = false;
	if (!emptied)
		session_info(rc->s, "cannot delete non-empty directory: %s\n", path);
	return emptied;
}

static bool deletions_allowed(struct recv_ctx *rc)
{
	if ((session_io_error(rc->s) & IOERR_GENERAL) && !rc->s->opts->ignore_errors) {
		if (!rc->warned_io_error)
			session_info(rc->s, "IO error encountered -- skipping file deletion\n");
		rc->warned_io_error = true;
		return false;
	}
	return true;
}

void delete_missing_arg(struct recv_ctx *rc, struct dir_cursor *dirs, const char *path)
{
	const char *leaf;
	struct stat st;
	int dirfd = rc->cfg.solo_name ? rc->cfg.rootfd : dir_cursor_parent(dirs, path, &leaf);

	if (rc->cfg.solo_name)
		leaf = rc->cfg.solo_name;
	if (dirfd < 0 || fstatat(dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	if (protected_by_filter(rc, path, S_ISDIR(st.st_mode)))
		return;
	/* without --delete or --force only an empty directory goes (rsync's
	 * del_opts lack DEL_RECURSE) */
	const struct ferry_opts *o = rc->s->opts;
	if (S_ISDIR(st.st_mode) && o->delete_mode == DELETE_NONE && !o->force) {
		if (unlinkat(dirfd, leaf, AT_REMOVEDIR) == 0) {
			log_deletion(rc, path, st.st_mode);
			count_deletion(&rc->s->stats, st.st_mode);
		} else if (errno == ENOTEMPTY || errno == EEXIST) {
			session_info(rc->s, "cannot delete non-empty directory: %s\n", path);
		}
		return;
	}
	delete_item(rc, dirfd, leaf, path, false);
}

void delete_in_dir(struct recv_ctx *rc, struct dir_cursor *dirs, const char *dirpath,
		   int32_t ndx)
{
	char path[MAXPATHLEN_WIRE * 2];
	(void)ndx;

	/* a long deletion pass must not let the peer's --timeout expire */
	wire_keepalive(&rc->s->out);
	if (!deletions_allowed(rc) || rc->cfg.solo_name || !merge_dirs_enter(rc, dirs, dirpath))
		return;
	int dfd = dir_cursor_open(dirs, strcmp(dirpath, ".") == 0 ? "" : dirpath);
	if (dfd < 0)
		return;
	struct dir_names dn;
	if (!read_sorted(dfd, rc->s->protocol, rc, dirpath, &dn))
		return;
	for (size_t i = dn.n; i-- > 0;) {
		const struct file_entry *e = &dn.v[i];
		if (!entry_path(path, sizeof path, dirpath, e->basename) ||
		    protected_by_filter(rc, path, S_ISDIR(e->mode)))
			continue;
		dfd = dir_cursor_open(dirs, strcmp(dirpath, ".") == 0 ? "" : dirpath);
		if (dfd >= 0)
			delete_item(rc, dfd, e->basename, path, false);
	}
	free_names(&dn);
	if (rc->skipped_deletes && rc->s->opts->max_delete >= 0)
		session_io_error_add(rc->s, IOERR_DEL_LIMIT);
}

static void delete_pass_dir(struct recv_ctx *rc, struct dir_cursor *dirs, size_t i)
{
	const struct file_entry *f = rc->fl->sorted[i];
	char path[MAXPATHLEN_WIRE * 2];

	/* a part's directory that failed was recorded at its gap index */
	if (!(f->flags & FE_ACTIVE) || !S_ISDIR(f->mode) || !(f->flags & FE_CONTENT_DIR) ||
	    (rc->fl->inc && (recv_state(rc, i) & FS_FAILED)) || !flist_path(f, path, sizeof path))
		return;
	delete_in_dir(rc, dirs, path, (int32_t)i);
}

void delete_pass(struct recv_ctx *rc, struct dir_cursor *dirs)
{
	struct flist *fl = rc->fl;

	if (fl->inc) {
		/* each directory once, in the order its list came, at the
		 * index its own part names it by (a delayed --delete) */
		for (size_t k = 0; k < fl->nparts; k++)
			delete_pass_dir(rc, dirs, (size_t)fl->parts[k].ndx_start - 1);
		return;
	}
	for (size_t i = fl->low; i <= fl->high && i < fl->count; i++)
		delete_pass_dir(rc, dirs, i);
}
