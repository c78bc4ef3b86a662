/*
 * The sender's file list from its arguments (flist.c: send_file_list):
 * each argument walked as it is, or with -R/--relative its implied
 * directories first, or the names --files-from lists. The walk itself is
 * flist_build.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/core/msg.h"
#include "proto/meta/fakesuper.h"
#include "proto/flist/filesfrom.h"
#include "proto/filter/filter.h"
#include "proto/flist/flist_build_priv.h"
#include "proto/base/fname.h"

/* ---- -R/--relative and --files-from (flist.c: send_file_list) ---- */

enum name_type { NORMAL_NAME, SLASH_ENDING_NAME, DOTDIR_NAME };

/* Make the "/./" dir of a name (relative to the base; "" is the base)
 * the current root, opening it the first time. False after reporting. */
static bool set_root(struct walker *k, const char *dir)
{
	for (size_t i = 0; i < k->nroot_names; i++) {
		if (strcmp(k->root_names[i], dir) == 0) {
			k->root = (uint32_t)i;
			return true;
		}
	}
	int fd;
	if (*dir)
		fd = walk_open_base(k, dir);
	else if (k->base_fd == AT_FDCWD)
		fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	else
		fd = fcntl(k->base_fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0) {
		int e = errno;
		char where[MAXPATHLEN_WIRE * 2];
		snprintf(where, sizeof where, "%s/%s", k->base_name ? k->base_name : ".", dir);
		errno = e;
		walk_io_error_in(k, IOERR_GENERAL, "change_dir", NULL, where);
		return false;
	}
	char **names = realloc(k->root_names, (k->nroot_names + 1) * sizeof *names);
	char *copy = strdup(dir);
	if (names)
		k->root_names = names;
	if (!names || !copy || !walk_add_roots(k, fd, dir)) {
		free(copy);
		close(fd);
		return wire_fail(&k->s->err, RERR_MALLOC, "out of memory");
	}
	k->root_names[k->nroot_names++] = copy; /* walk_add_roots made it k->root */
	return true;
}

static int cur_root_fd(const struct walker *k)
{
	return k->sl->roots.fds[k->root];
}

/* The directory holding name inside the current root, and its last
 * component. Symlinks on the way are followed for the user's own files
 * (rsync follows implied dirs), in a module only while they stay in it. */
static int open_parent(struct walker *k, const char *name, const char **leaf)
{
	char dir[MAXPATHLEN_WIRE];
	const char *slash = strrchr(name, '/');

	if (!slash) {
		*leaf = name;
		return fcntl(cur_root_fd(k), F_DUPFD_CLOEXEC, 0);
	}
	*leaf = slash + 1;
	snprintf(dir, sizeof dir, "%.*s", slash == name ? 1 : (int)(slash - name), name);
	return walk_open_dir_at(k, cur_root_fd(k), dir);
}

/* One implied directory: its own attributes, as a dir with no contents
 * of its own in the transfer; only the module's rules filter it. */
static bool add_implied(struct walker *k, const char *path)
{
	struct stat st;
	int fd = walk_open_dir_at(k, cur_root_fd(k), path);

	if (fd < 0 || fstat(fd, &st) < 0) {
		walk_io_error(k, IOERR_GENERAL, "link_stat", path);
		if (fd >= 0)
			close(fd);
		return !wire_error_code(&k->s->err);
	}
	close(fd);
	if (k->w->daemon_filters && filter_check(k->w->daemon_filters, path, true, false) < 0)
		return true;
	struct file_entry *f = walk_add_entry(k, path, &st, cur_root_fd(k), path);
	if (!f)
		return !wire_error_code(&k->s->err);
	f->flags = FE_ACTIVE | FE_IMPLIED_DIR;
	return true;
}

/* The directories leading to name[0..limit), skipping those the last
 * call already sent. mirrors rsync flist.c:send_implied_dirs() */
static bool send_implied(struct walker *k, const char *name, size_t limit)
{
	char path[MAXPATHLEN_WIRE];
	size_t start = 0, i;

	for (i = 0;; i++) {
		if (i == limit) {
			if (k->lastpath[i] == '/' || k->lastpath[i] == '\0')
				return true;
			break;
		}
		if (k->lastpath[i] != name[i])
			break;
		if (name[i] == '/')
			start = i;
	}
	memcpy(path, name, limit);
	path[limit] = '\0';
	for (char *sl = path + start; (sl = strchr(sl + 1, '/')) != NULL;) {
		*sl = '\0';
		bool ok = add_implied(k, path);
		*sl = '/';
		if (!ok)
			return false;
	}
	if (!add_implied(k, path))
		return false;
	snprintf(k->lastpath, sizeof k->lastpath, "%s", path);
	return true;
}

/* Is any leading part of name hidden by the module's rules?
 * (flist.c: path_is_daemon_excluded) */
static bool daemon_hides_path(struct walker *k, const char *name)
{
	char path[MAXPATHLEN_WIRE];

	if (!k->w->daemon_filters)
		return false;
	snprintf(path, sizeof path, "%s", name);
	for (char *sl = path + 1; (sl = strchr(sl, '/')) != NULL; sl++) {
		*sl = '\0';
		bool hidden = filter_check(k->w->daemon_filters, path, true, false) < 0;
		*sl = '/';
		if (hidden)
			return true;
	}
	return false;
}

/* Split one -R name at "/./" into its root dir and the name sent, and
 * classify it. False (after reporting) for a ".." in the sent part, which
 * ends the run as in rsync. */
static bool split_relative(struct walker *k, char *fbuf, const char **dir, char **fn,
			   enum name_type *type)
{
	char *p = strstr(fbuf, "/./");

	*dir = "";
	*fn = fbuf;
	if (p) {
		*p = '\0';
		*dir = p == fbuf ? "/" : fbuf;
		*fn = p + 3;
		while (**fn == '/')
			(*fn)++;
	}
	/* A leading "./" puts "." itself in the list (implied_dot_dir). */
	if ((*fn)[0] == '.' && (*fn)[1] == '/' && (*fn)[2] && !k->implied_dot)
		k->implied_dot = -1;
	size_t len =
		(size_t)clean_fname(*fn, CFN_KEEP_TRAILING_SLASH | CFN_DROP_TRAILING_DOT_DIR);
	*type = NORMAL_NAME;
	if (len == 1 && (*fn)[0] == '/') {
		*fn = "/.";
		*type = DOTDIR_NAME;
	} else if (len == 1 && (*fn)[0] == '.') {
		*type = DOTDIR_NAME;
	} else if ((*fn)[len - 1] == '/') {
		(*fn)[--len] = '\0';
		*type = len == 1 && **fn == '.' ? DOTDIR_NAME : SLASH_ENDING_NAME;
	}
	for (char *d = *fn; (d = strstr(d, "..")) != NULL; d += 2) {
		if ((d[2] == '/' || d[2] == '\0') && (d == *fn || d[-1] == '/')) {
			session_err(k->s, "found \"..\" dir in relative path: %s", *fn);
			return wire_fail(&k->s->err, RERR_SYNTAX, " ");
		}
	}
	return true;
}

/* Stat a -R name: symlinks are followed for "dir/" and "." names
 * (link_stat with copy_dirlinks || name_type != NORMAL_NAME). */
static int stat_relative(struct walker *k, const char *fn, enum name_type type, struct stat *st,
			 int *pfd, const char **leaf)
{
	*pfd = open_parent(k, fn, leaf);
	if (*pfd < 0)
		return -1;
	bool follow = type != NORMAL_NAME && !k->w->confined;
	if (strcmp(*leaf, ".") == 0)
		return fstat(*pfd, st);
	if (fstatat(*pfd, *leaf, st, follow ? 0 : AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	fake_stat(k->s, *pfd, *leaf, fn, st);
	return 0;
}

/* The entry for the name itself and, for a directory, what it holds. */
static bool add_named(struct walker *k, const char *fn, enum name_type type,
		      const struct stat *st, int pfd, const char *leaf)
{
	const struct ferry_opts *o = k->s->opts;
	bool whole = o->recursive || (o->dirs && type != NORMAL_NAME);
	struct file_entry *f = walk_add_entry(k, fn, st, pfd, leaf);

	if (!f)
		return !wire_error_code(&k->s->err);
	if (!S_ISDIR(st->st_mode))
		return true;
	f->flags &= ~(FE_TOP_DIR | FE_CONTENT_DIR);
	if (!whole)
		return true;
	f->flags |= FE_TOP_DIR | FE_CONTENT_DIR;
	int dfd = strcmp(leaf, ".") == 0 ? fcntl(pfd, F_DUPFD_CLOEXEC, 0)
					 : openat(pfd, leaf, O_RDONLY | O_DIRECTORY | O_CLOEXEC |
							     (k->w->confined ? O_NOFOLLOW : 0));
	if (dfd < 0) {
		walk_io_error(k, IOERR_GENERAL, "opendir", fn);
		return true;
	}
	k->nabove = 0;
	walk_enter_dir(k, dfd);
	bool ok = walk_dir(k, dfd, fn);
	close(dfd);
	return ok;
}

/* One source name under -R (an argument or a --files-from line). */
static bool build_relative(struct walker *k, const char *arg)
{
	const struct ferry_opts *o = k->s->opts;
	char fbuf[MAXPATHLEN_WIRE];
	const char *dir, *leaf;
	char *fn;
	enum name_type type;
	struct stat st;

	snprintf(fbuf, sizeof fbuf, "%s", arg);
	if (!split_relative(k, fbuf, &dir, &fn, &type))
		return false;
	if (!set_root(k, dir)) {
		if (k->implied_dot < 0)
			k->implied_dot = 0;
		return !wire_error_code(&k->s->err);
	}
	if (k->implied_dot < 0) {
		k->implied_dot = 1;
		if (!add_implied(k, "."))
			return false;
	}
	int pfd = -1;
	int e = 0;
	bool hidden = false;
	if (stat_relative(k, fn, type, &st, &pfd, &leaf) < 0)
		e = errno;
	else if (S_ISLNK(st.st_mode) && walk_following_links(o) &&
		 !walk_resolve_link(k, pfd, leaf, fn, &st)) {
		close(pfd);
		return true;
	}
	else if (type != DOTDIR_NAME && k->w->daemon_filters &&
		 filter_check(k->w->daemon_filters, fn, S_ISDIR(st.st_mode), false) < 0)
		hidden = true;
	else if (daemon_hides_path(k, fn))
		hidden = true;
	if ((e == ENOENT || hidden) && o->missing_args == 1) {
		if (pfd >= 0) /* --ignore-missing-args */
			close(pfd);
		return true;
	}
	if ((e == ENOENT || hidden) && o->missing_args == 2) {
		/* --delete-missing-args: a mode-0 entry tells the receiver to
		 * delete its copy (flist.c: send_file_list) */
		memset(&st, 0, sizeof st);
		e = 0;
		hidden = false;
	}
	if (e || hidden) {
		/* what the module excludes does not exist for the client */
		e = e ? e : ENOENT;
		char where[MAXPATHLEN_WIRE * 2], full[PATH_MAX + 8];
		snprintf(where, sizeof where, "%s/%s", k->base_name ? k->base_name : ".", dir);
		msg_full_name(k->s, where, fn, full, sizeof full);
		session_xfer_err(k->s, "[sender] link_stat %s failed: %s (%d)", full, strerror(e), e);
		if (e != ENOENT)
			session_io_error_add(k->s, IOERR_GENERAL);
		if (pfd >= 0)
			close(pfd);
		return true;
	}
	bool ok = true;
	if (type != DOTDIR_NAME && walk_excluded(k, fn, S_ISDIR(st.st_mode))) {
		/* left out by the filter rules */
	} else if (S_ISDIR(st.st_mode) && !o->dirs) {
		session_info(k->s, "skipping directory %s\n", fn);
	} else {
		/* From protocol 30 the implied dirs always go, flagged, and
		 * the receiver decides (flist.c: implied_dirs = 1). */
		const char *last = strrchr(fn, '/');
		if ((k->s->protocol >= 30 || !o->no_implied_dirs) && last && last != fn)
			ok = send_implied(k, fn, (size_t)(last - fn));
		k->top_dev = st.st_dev;
		ok = ok && add_named(k, fn, type, &st, pfd, leaf);
	}
	close(pfd);
	return ok;
}

/* The --files-from names, relative to the source directory args[0].
 * A source directory that cannot be entered ends the run (exit 3). */
static bool build_listed(struct walker *k, const char *base)
{
	const struct ferry_opts *o = k->s->opts;
	char name[MAXPATHLEN_WIRE];
	int r;

	int bfd = walk_open_dir_at(k, k->w->root_fd, base);
	if (bfd < 0) {
		int e = errno;
		session_err(k->s, "change_dir \"%s\" failed: %s (%d)", base, strerror(e), e);
		return wire_fail(&k->s->err, RERR_FILESELECT, " ");
	}
	k->base_fd = bfd;
	k->base_name = base;
	while ((r = names_next(k->w->names, name, sizeof name)) > 0) {
		names_sanitize(name, o->relative);
		if (!(o->relative ? build_relative(k, name) : walk_build_one(k, name)))
			break;
	}
	close(bfd);
	k->base_fd = k->w->root_fd;
	if (r < 0 && k->w->names->fd >= 0) {
		int e = errno;
		return wire_fail(&k->s->err, RERR_FILEIO, "reading the --files-from list: %s",
				 strerror(e));
	}
	return r == 0 && !wire_error_code(&k->s->err);
}

bool flist_build(struct session *s, const struct walk_opts *w, char **args, int nargs,
		 struct send_list *out)
{
	struct walker k = {.s = s, .w = w, .sl = out, .base_fd = w->root_fd};
	bool ok = true;

	memset(out, 0, sizeof *out);
	out->confined = w->confined;
	out->module_fd = w->root_fd;
	flist_init(&out->fl);
	/* -R outside a module: the sender opens files by their path, through
	 * implied dirs that may be symlinks, as rsync does. */
	out->open_plain = s->opts->relative && !w->confined;
	k.lazy_ok = can_walk_lazily(&k, nargs);
	if (w->names)
		ok = build_listed(&k, nargs ? args[0] : ".");
	for (int i = 0; ok && !w->names && i < nargs; i++)
		ok = s->opts->relative ? build_relative(&k, args[i]) : walk_build_one(&k, args[i]);
	for (size_t i = 0; i < k.nroot_names; i++)
		free(k.root_names[i]);
	free(k.root_names);
	free(k.sum_buf);
	return ok;
}
