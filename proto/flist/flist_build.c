/*
 * Building the sender's file list by walking the source arguments from
 * directory fds (flist.c: send_file_list, send_directory), never following
 * a symlink inside the tree. Which arguments, and -R/--files-from, are
 * flist_roots.c.
 */
#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "proto/core/msg.h"
#include "proto/meta/fakesuper.h"
#include "proto/base/fileio.h"
#include "proto/base/oppath.h"
#include "proto/flist/filesfrom.h"
#include "proto/filter/filter.h"
#include "proto/flist/sendside.h"
#include "proto/flist/flist_build_priv.h"

/* rsync's rsyserr() as the sender: "[sender] WHAT "/full/name" failed";
 * dir is what name is relative to (NULL: the working directory). */
void walk_io_error_in(struct walker *k, int bit, const char *what, const char *dir,
			const char *name)
{
	int e = errno;
	char full[PATH_MAX + 8];

	msg_full_name(k->s, dir, name, full, sizeof full);
	session_err(k->s, "[sender] %s %s failed: %s (%d)", what, full, strerror(e), e);
	session_io_error_add(k->s, bit);
}

/* The source directory the names being walked are relative to. */
static const char *cur_dir_name(const struct walker *k)
{
	const struct send_roots *r = &k->sl->roots;

	return k->lazy ? k->lazy_root : k->root < r->count ? r->paths[k->root] : NULL;
}

/* The same about a name below the current source directory. */
void walk_io_error(struct walker *k, int bit, const char *what, const char *name)
{
	walk_io_error_in(k, bit, what, cur_dir_name(k), name);
}

/* The --checksum sum of a regular file (checksum.c: file_checksum). */
static bool file_sum(struct walker *k, struct fe_extras *x, int dirfd, const char *leaf,
		     const char *path)
{
	size_t n = csum_len(k->s->flist_csum);
	struct csum_ctx c;
	ssize_t got;
	int64_t off = 0;

	uint8_t *sum = x->sum = flist_alloc(&k->sl->fl, n);
	if (!sum)
		return false;
	x->has |= FE_X_PTR;
	if (!k->sum_buf && !(k->sum_buf = malloc(SUM_BUF_SIZE)))
		return wire_fail(&k->s->err, RERR_MALLOC, "out of memory");
	uint8_t *buf = k->sum_buf;
	memset(sum, 0, n);
	int fd = fs_open_source(dirfd, leaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC,
				k->s->opts->open_noatime);
	if (fd < 0) {
		walk_io_error(k, IOERR_GENERAL, "open", path);
		return true;
	}
	csum_file_init(&c, k->s->flist_csum, 0);
	while ((got = fs_pread_full(fd, buf, SUM_BUF_SIZE, off)) > 0) {
		csum_file_update(&c, buf, (size_t)got);
		off += got;
	}
	close(fd);
	csum_file_final(&c, sum);
	return true;
}

/* --copy-devices: a device is listed as a regular file of the device's
 * size, dated now, since a device node's mtime says nothing about its
 * contents (mirrors rsync flist.c: make_file). */
static void device_as_file(int dirfd, const char *leaf, struct stat *st)
{
	if (st->st_size == 0) {
		int fd = fs_open_source(dirfd, leaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, false);
		if (fd >= 0) {
			st->st_size = fs_device_size(fd);
			close(fd);
		}
	}
	st->st_mode = S_IFREG | (st->st_mode & 07777);
	st->st_mtim.tv_sec = time(NULL);
	st->st_mtim.tv_nsec = 0;
}

/* The fields of an entry that come from its stat (--chmod applied). */
static void set_stat_fields(struct session *s, struct file_entry *f, const struct stat *st)
{
	f->mode = (uint16_t)st->st_mode;
	if (s->chmod.n && !S_ISLNK(f->mode) && f->mode)
		f->mode = (uint16_t)chmod_apply(&s->chmod, f->mode);
	f->mtime = st->st_mtim.tv_sec;
}

/* The size and optional fields of an entry that come from its stat:
 * its nanoseconds, its owner and group where -o or -g sends them, the
 * access time where -U sends it, the device number
 * of devices and specials, and room for the xattr index -X gives it when
 * it is sent. */
static void stat_extras(struct session *s, const struct stat *st, struct fe_extras *x)
{
	memset(x, 0, sizeof *x);
	x->hlink_group = x->hl_next = -1;
	x->size = S_ISREG(st->st_mode) || S_ISDIR(st->st_mode) ? st->st_size : 0;
	x->mtime_nsec = (uint32_t)st->st_mtim.tv_nsec;
	if (x->mtime_nsec)
		x->has |= FE_X_NSEC;
	if (s->opts->owner || s->opts->group) {
		x->uid = st->st_uid;
		x->gid = st->st_gid;
		x->has |= FE_X_IDS;
	}
	if (s->opts->atimes && !S_ISDIR(st->st_mode)) {
		x->atime = st->st_atim.tv_sec;
		x->has |= FE_X_ATIME;
	}
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode) || S_ISFIFO(st->st_mode) ||
	    S_ISSOCK(st->st_mode)) {
		x->rdev_major = major(st->st_rdev);
		x->rdev_minor = minor(st->st_rdev);
		x->has |= FE_X_RDEV;
	}
	if (s->opts->acls || s->opts->xattrs)
		x->has |= FE_X_META;
}

/* A lazy part's names: small blocks, growing with the directory, since
 * the list arena's first block (sized for a whole tree) would be held
 * by each of the many parts in flight. */
struct part_names {
	struct part_names *next;
	size_t used, cap;
	char data[];
};

static char *part_alloc(struct part_names **head, size_t len)
{
	struct part_names *b = *head;

	if (!b || b->cap - b->used < len) {
		size_t cap = b ? b->cap * 2 : 1024;
		while (cap < len)
			cap *= 2;
		if (cap > 64 * 1024 && len <= 64 * 1024)
			cap = 64 * 1024;
		struct part_names *nb = malloc(sizeof *nb + cap);
		if (!nb)
			return NULL;
		nb->next = b;
		nb->used = 0;
		nb->cap = cap;
		*head = b = nb;
	}
	char *p = b->data + b->used;
	b->used += len;
	return p;
}

static char *part_strdup(struct part_names **head, const char *s, size_t len)
{
	char *p = part_alloc(head, len + 1);

	if (p) {
		memcpy(p, s, len);
		p[len] = '\0';
	}
	return p;
}

static void part_names_free(struct part_names *b)
{
	while (b) {
		struct part_names *next = b->next;
		free(b);
		b = next;
	}
}

/* A name of an entry: in the part's own blocks for the lazy walk's
 * parts, else in the list's arena. */
static char *entry_strdup(struct send_list *sl, const char *s, size_t len)
{
	if (sl->part_names_on)
		return part_strdup(&sl->part_names, s, len);
	return flist_strdup(&sl->fl, s, len);
}

/* An entry's name and optional fields, placed where entry_strdup puts
 * names. False only when out of memory. */
static bool entry_place(struct send_list *sl, struct file_entry *f, const char *name,
			const struct fe_extras *x)
{
	size_t len = strlen(name);
	size_t need = fe_packed_len(len, x);
	char *buf = sl->part_names_on ? part_alloc(&sl->part_names, need)
				      : flist_alloc_bytes(&sl->fl, need);

	if (!buf)
		return false;
	fe_place(f, buf, name, len, x);
	return true;
}

/* Append an entry for path (relative to the root) with the given stat. */
struct file_entry *walk_add_entry(struct walker *k, const char *path, const struct stat *given,
				    int dirfd, const char *leaf)
{
	struct flist *fl = &k->sl->fl;
	struct flist_codec *c = &k->s->fl;
	struct stat dev_st;
	const struct stat *st = given;

	if (k->s->opts->copy_devices && (S_ISCHR(given->st_mode) || S_ISBLK(given->st_mode))) {
		dev_st = *given;
		device_as_file(dirfd, leaf, &dev_st);
		st = &dev_st;
	}

	if (fl->count == fl->cap) {
		size_t cap = fl->cap ? fl->cap * 2 : 1024;
		struct file_entry *f = realloc(fl->files, cap * sizeof *f);
		struct send_info *in = realloc(k->sl->info, cap * sizeof *in);
		struct send_devino *di = k->s->opts->hard_links
			? realloc(k->sl->devino, cap * sizeof *di) : NULL;
		if (f)
			fl->files = f;
		if (in)
			k->sl->info = in;
		if (di)
			k->sl->devino = di;
		if (!f || !in || (k->s->opts->hard_links && !di)) {
			wire_fail(&k->s->err, RERR_MALLOC, "out of memory building the file list");
			return NULL;
		}
		fl->cap = cap;
	}
	struct file_entry *f = &fl->files[fl->count];
	memset(f, 0, sizeof *f);
	const char *slash = strrchr(path, '/');
	if (slash) {
		size_t dlen = (size_t)(slash - path);
		if (!c->lastdir || c->lastdir_len != dlen || memcmp(c->lastdir, path, dlen) != 0) {
			c->lastdir = entry_strdup(k->sl, path, dlen);
			c->lastdir_len = dlen;
		}
		f->dirname = c->lastdir;
	}
	if (slash && !f->dirname) {
		wire_fail(&k->s->err, RERR_MALLOC, "out of memory");
		return NULL;
	}
	const char *base = slash ? slash + 1 : path;
	struct fe_extras x;
	f->basename = base; /* until entry_place */
	set_stat_fields(k->s, f, st);
	stat_extras(k->s, st, &x);
	f->flags = FE_ACTIVE;
	if (S_ISLNK(st->st_mode)) {
		char target[MAXPATHLEN_WIRE];
		ssize_t n = k->s->fake_super ? fake_readlink(dirfd, leaf, target, sizeof target - 1)
					     : readlinkat(dirfd, leaf, target, sizeof target - 1);
		if (n < 0) {
			walk_io_error(k, IOERR_GENERAL, "readlink", path);
			return NULL;
		}
		target[n] = '\0';
		const char *t = target;
		size_t plen = strlen(SYMLINK_MUNGE_PREFIX);
		if (k->s->module.munge_symlinks && strncmp(target, SYMLINK_MUNGE_PREFIX, plen) == 0)
			t = target + plen; /* what the client stored, unmunged */
		x.link = entry_strdup(k->sl, t, strlen(t));
		x.has |= FE_X_PTR;
		x.size = (int64_t)strlen(t);
		if (!x.link) {
			wire_fail(&k->s->err, RERR_MALLOC, "out of memory");
			return NULL;
		}
	}
	if (k->s->opts->checksum && S_ISREG(st->st_mode) && !file_sum(k, &x, dirfd, leaf, path))
		return NULL;
	if (!entry_place(k->sl, f, base, &x)) {
		wire_fail(&k->s->err, RERR_MALLOC, "out of memory");
		return NULL;
	}
	struct send_info *in = &k->sl->info[fl->count];
	in->root = k->root;
	in->unstated = false;
	if (k->sl->devino)
		k->sl->devino[fl->count] = (struct send_devino){st->st_dev, st->st_ino};
	/* Before protocol 28 every regular file carries its dev and inode. */
	if (k->s->opts->hard_links && (k->s->protocol < 28 ? S_ISREG(st->st_mode)
						       : !S_ISDIR(st->st_mode) && st->st_nlink > 1))
		f->flags |= FE_HLINKED;
	if (S_ISDIR(st->st_mode) && k->s->opts->recursive)
		f->flags |= FE_CONTENT_DIR; /* its contents follow */
	fl->count++;
	return f;
}

/* The module's rules see a name as rsyncd does, from the module's root
 * (exclude.c: rule_matches prefixes curr_dir), not from the directory
 * the client asked for: "exclude = sub/deep" also hides deep/ when the
 * client pulls mod/sub/. */
static bool daemon_rejects(struct walker *k, const char *path, bool is_dir)
{
	/* a lazy part under --files-from names its entries from the base */
	const char *root = k->lazy_root && !k->w->names ? k->lazy_root
		: k->base_fd == k->w->root_fd && k->root < k->sl->roots.count
			? k->sl->roots.paths[k->root] : NULL;
	char full[MAXPATHLEN_WIRE * 2];

	if (root && *root && strcmp(root, ".") != 0 && *root != '/' &&
	    snprintf(full, sizeof full, "%s/%s", root, path) < (int)sizeof full)
		path = full;
	return filter_check(k->w->daemon_filters, path, is_dir, false) < 0;
}

bool walk_excluded(struct walker *k, const char *path, bool is_dir)
{
	if (k->w->daemon_filters && daemon_rejects(k, path, is_dir))
		return true;
	return k->w->filters && filter_check(k->w->filters, path, is_dir, false) < 0;
}

/* A regular file (readdir's d_type says so) listed without its stat,
 * which is taken when its part is sent (flist_stat_deferred): the
 * name and the type are all that placing it in its part needs. False
 * only when out of memory. */
static bool add_deferred(struct walker *k, const char *path, int dirfd, const char *leaf)
{
	struct stat st = {.st_mode = S_IFREG};

	if (walk_excluded(k, path, false))
		return true;
	if (!walk_add_entry(k, path, &st, dirfd, leaf))
		return false;
	k->sl->info[k->sl->fl.count - 1].unstated = true;
	return true;
}

/* An entry listed unstated takes the fields of its stat: its name and
 * fields are placed again, in place when they keep their length. */
static bool restat_fields(struct session *s, struct send_list *sl, struct file_entry *f,
			  const struct stat *st)
{
	struct fe_extras was, x;
	size_t len = strlen(f->basename);

	fe_extras_get(f, &was);
	set_stat_fields(s, f, st);
	stat_extras(s, st, &x);
	x.has |= was.has & FE_X_PTR; /* a --checksum sum, taken when listed */
	x.sum = was.sum;
	if (fe_packed_len(len, &x) == fe_packed_len(len, &was)) {
		fe_place(f, (char *)f->basename, f->basename, len, &x);
		return true;
	}
	char name[MAXPATHLEN_WIRE];
	memcpy(name, f->basename, len + 1);
	if (entry_place(sl, f, name, &x))
		return true;
	return wire_fail(&s->err, RERR_MALLOC, "out of memory");
}

bool flist_stat_deferred(struct session *s, struct send_list *sl, size_t i, int dirfd)
{
	struct file_entry *f = &sl->fl.files[i];
	struct send_info *in = &sl->info[i];
	char path[MAXPATHLEN_WIRE];
	struct stat st;

	in->unstated = false;
	if (dirfd >= 0 && fstatat(dirfd, f->basename, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (!S_ISREG(st.st_mode))
			errno = ENOENT; /* replaced since it was listed: now gone */
		else {
			if (!restat_fields(s, sl, f, &st))
				return false;
			if (sl->devino)
				sl->devino[i] = (struct send_devino){st.st_dev, st.st_ino};
			return true;
		}
	}
	int e = errno;
	if (!flist_path(f, path, sizeof path))
		snprintf(path, sizeof path, "%s", f->basename);
	session_err(s, "readlink_stat \"%s\" failed: %s (%d)", path, strerror(e), e);
	session_io_error_add(s, e == ENOENT ? IOERR_VANISHED : IOERR_GENERAL);
	return false;
}

/* A path argument the module's rules exclude, named as inside the module. */
static bool daemon_hides(struct walker *k, const char *arg, bool is_dir)
{
	char path[MAXPATHLEN_WIRE];

	if (!k->w->daemon_filters)
		return false;
	snprintf(path, sizeof path, "%s", arg);
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		path[--n] = '\0';
	return filter_check(k->w->daemon_filters, path, is_dir, false) < 0;
}

/* Is a source directory, or any dir above it, hidden by the module's
 * rules? (flist.c: path_is_daemon_excluded, as change_pathname uses it) */
static bool daemon_hides_dir(struct walker *k, const char *dir)
{
	char path[MAXPATHLEN_WIRE];

	if (!k->w->daemon_filters)
		return false;
	snprintf(path, sizeof path, "%s", dir);
	for (char *sl = path + 1; (sl = strchr(sl, '/')) != NULL; sl++) {
		*sl = '\0';
		bool hidden = filter_check(k->w->daemon_filters, path, true, false) < 0;
		*sl = '/';
		if (hidden)
			return true;
	}
	return daemon_hides(k, path, true);
}

static void join(char *out, size_t size, const char *dir, const char *name)
{
	if (!*dir || strcmp(dir, ".") == 0)
		snprintf(out, size, "%s", name);
	else
		snprintf(out, size, "%s/%s", dir, name);
}

bool walk_following_links(const struct ferry_opts *o)
{
	return o->copy_links || o->copy_unsafe_links || o->copy_dirlinks;
}

/* Stat what the symlink dirfd/leaf points to. In a daemon module the
 * link may lead anywhere inside the module, but never out of it (the
 * sender opens the file the same way). */
static int stat_target(struct walker *k, int dirfd, const char *leaf, const char *path,
		       struct stat *st)
{
	if (!k->w->confined || k->s->opts->insecure_links) /* module "insecure links" */
		return fstatat(dirfd, leaf, st, 0);
	int fd = oppath_open_from(k->w->root_fd, k->sl->roots.fds[k->root], path, O_PATH,
				  OPPATH_QUIET | OPPATH_ANY_OWNER);
	if (fd < 0)
		return -1;
	int r = fstat(fd, st);
	close(fd);
	return r;
}

/* -L, --copy-unsafe-links, -k (flist.c: readlink_stat, link_stat): replace
 * a symlink's stat by its referent's when asked to. False: leave the entry
 * out (a link that must be followed but leads nowhere). */
bool walk_resolve_link(struct walker *k, int dirfd, const char *leaf, const char *path,
			 struct stat *st)
{
	const struct ferry_opts *o = k->s->opts;
	bool follow = o->copy_links;
	struct stat target;

	if (!follow && o->copy_unsafe_links) {
		char link[MAXPATHLEN_WIRE];
		ssize_t n = readlinkat(dirfd, leaf, link, sizeof link - 1);
		if (n >= 0) {
			link[n] = '\0';
			follow = fs_symlink_unsafe(link, path);
			if (follow && info_ge(o, INFO_SYMSAFE, 1))
				session_info(k->s, "copying unsafe symlink \"%s\" -> \"%s\"\n", path,
					     link);
		}
	}
	if (!follow && !o->copy_dirlinks)
		return true;
	if (stat_target(k, dirfd, leaf, path, &target) < 0) {
		if (errno == ELOOP && k->w->confined) {
			/* a link out of the module: refused, never sent as a
			 * link either (rsync 3.5's message for the open) */
			walk_io_error(k, IOERR_GENERAL, "readlink_stat", path);
			return false;
		}
		if (!follow)
			return true; /* -k: a dangling link stays a link */
		/* rsync's own text, unprefixed (flist.c: FERROR_XFER) */
		char full[PATH_MAX + 8];
		msg_full_name(k->s, cur_dir_name(k), path, full, sizeof full);
		session_xfer_err_plain(k->s, "symlink has no referent: %s", full);
		session_io_error_add(k->s, IOERR_GENERAL);
		return false;
	}
	if (follow || S_ISDIR(target.st_mode))
		*st = target;
	return true;
}

/* A subdirectory to walk: normally never through a symlink, but a link
 * the user asked to follow is opened as its referent. */
static int open_subdir(struct walker *k, int dirfd, const char *leaf, const char *sub)
{
	int fd = openat(dirfd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd >= 0 || (errno != ELOOP && errno != ENOTDIR) || !walk_following_links(k->s->opts))
		return fd;
	if (!k->w->confined || k->s->opts->insecure_links)
		return openat(dirfd, leaf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return oppath_open_from(k->w->root_fd, k->sl->roots.fds[k->root], sub,
				O_RDONLY | O_DIRECTORY, OPPATH_QUIET | OPPATH_ANY_OWNER);
}

/* Is the directory on fd one we are already inside (a followed link
 * leading back up)? Otherwise remember it while its contents are walked. */
bool walk_enter_dir(struct walker *k, int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return false;
	for (int i = 0; i < k->nabove; i++)
		if (k->above[i].dev == st.st_dev && k->above[i].ino == st.st_ino)
			return false;
	if (k->nabove == (int)(sizeof k->above / sizeof k->above[0]))
		return false;
	k->above[k->nabove].dev = st.st_dev;
	k->above[k->nabove].ino = st.st_ino;
	k->nabove++;
	return true;
}

/* Send a directory's entries, then recurse into its subdirectories, like
 * rsync's send_directory(). */
bool walk_dir(struct walker *k, int dirfd, const char *relpath)
{
	const struct ferry_opts *o = k->s->opts;
	struct flist *fl = &k->sl->fl;
	char path[MAXPATHLEN_WIRE], fsdir[64];
	struct dir_reader d;

	if (dir_reader_open(&d, dirfd) < 0) {
		walk_io_error(k, IOERR_GENERAL, "opendir", relpath);
		return true;
	}
	bool pushed = false;
	if (k->w->filters) {
		struct filter_list *filters = (struct filter_list *)k->w->filters;
		fs_proc_path(fsdir, sizeof fsdir, dirfd, NULL);
		pushed = filter_push_dir(filters, fsdir, relpath, k->err, sizeof k->err) == 0;
		/* a bad rule or merge file in a directory ends the transfer
		 * (exclude.c: parse_filter_file, exit_cleanup) */
		if (!pushed && *k->err && filters->err_soft) {
			session_xfer_err(k->s, "%s", k->err);
		} else if (!pushed && *k->err) {
			dir_reader_close(&d);
			session_err(k->s, "%s", k->err);
			return wire_fail(&k->s->err, filters->err_io ? RERR_FILEIO : RERR_SYNTAX,
					 " ");
		}
	}
	size_t first = fl->count;
	const struct dirent *de;
	while ((de = dir_reader_next(&d)) != NULL) {
		struct stat st;
		join(path, sizeof path, relpath, de->d_name);
		if (strlen(path) >= MAXPATHLEN_WIRE - 1) {
			errno = ENAMETOOLONG;
			walk_io_error(k, IOERR_GENERAL, "readdir", path);
			continue;
		}
		if (k->defer_stat && de->d_type == DT_REG) {
			if (!add_deferred(k, path, dirfd, de->d_name)) {
				dir_reader_close(&d);
				return false;
			}
			continue;
		}
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			walk_io_error(k, errno == ENOENT ? IOERR_VANISHED : IOERR_GENERAL, "readlink_stat",
				 path);
			continue;
		}
		fake_stat(k->s, dirfd, de->d_name, path, &st); /* --fake-super: x_lstat */
		if (S_ISLNK(st.st_mode) && walk_following_links(o) &&
		    !walk_resolve_link(k, dirfd, de->d_name, path, &st))
			continue;
		/* every type is listed, devices and specials without -D too:
		 * the receiver skips what it may not make (rsync's make_file) */
		if (walk_excluded(k, path, S_ISDIR(st.st_mode)))
			continue;
		/* -xx leaves out mount points; -x sends them empty (below). */
		if (o->one_file_system > 1 && S_ISDIR(st.st_mode) && st.st_dev != k->top_dev)
			continue;
		if (k->s->module.ignore_nonreadable && !S_ISLNK(st.st_mode) &&
		    faccessat(dirfd, de->d_name, R_OK, AT_EACCESS) < 0)
			continue;
		if (!walk_add_entry(k, path, &st, dirfd, de->d_name) && wire_error_code(&k->s->err)) {
			dir_reader_close(&d);
			return false;
		}
	}
	dir_reader_close(&d);
	size_t last = fl->count;
	for (size_t i = first; o->recursive && !k->lazy && i < last; i++) {
		struct file_entry *f = &fl->files[i];
		if (!S_ISDIR(f->mode))
			continue;
		char sub[MAXPATHLEN_WIRE];
		if (!flist_path(f, sub, sizeof sub))
			continue;
		int sfd = open_subdir(k, dirfd, f->basename, sub);
		if (sfd < 0) {
			walk_io_error(k, IOERR_GENERAL, "opendir", sub);
			continue;
		}
		struct stat dst;
		if (o->one_file_system && (fstat(sfd, &dst) < 0 || dst.st_dev != k->top_dev)) {
			close(sfd);
			continue;
		}
		if (!walk_enter_dir(k, sfd)) {
			session_err(k->s, "skipping directory %s: a symlink loop leads back to it", sub);
			close(sfd);
			continue;
		}
		bool ok = walk_dir(k, sfd, sub);
		k->nabove--;
		close(sfd);
		if (!ok)
			return false;
	}
	if (pushed)
		filter_pop_dir((struct filter_list *)k->w->filters);
	return true;
}

/* Split a source argument into the directory the names are relative to
 * and the first name ("." when the contents of a directory are sent). */
static void split_arg(const char *arg, char *base, size_t bsize, char *name, size_t nsize)
{
	size_t len = strlen(arg);

	while (len > 1 && arg[len - 1] == '/' && arg[len - 2] == '/')
		len--;
	bool contents = len == 0 || arg[len - 1] == '/' ||
			(len >= 2 && arg[len - 1] == '.' && arg[len - 2] == '/') ||
			(len == 1 && arg[0] == '.');
	if (contents) {
		while (len > 1 && arg[len - 1] == '/')
			len--;
		snprintf(base, bsize, "%.*s", (int)len, len ? arg : ".");
		snprintf(name, nsize, ".");
		return;
	}
	const char *slash = memrchr(arg, '/', len);
	if (!slash) {
		snprintf(base, bsize, ".");
		snprintf(name, nsize, "%.*s", (int)len, arg);
	} else {
		snprintf(base, bsize, "%.*s", slash == arg ? 1 : (int)(slash - arg), arg);
		snprintf(name, nsize, "%.*s", (int)(len - (size_t)(slash - arg) - 1), slash + 1);
	}
}

/* Open a directory below `from` (a module root: one component at a time,
 * no symlinks; the user's own files: as the path says). */
int walk_open_dir_at(struct walker *k, int from, const char *dir)
{
	if (k->w->confined) {
		/* a module's directory, through trusted links that stay in it
		 * (rsync 3.5's change_dir) */
		unsigned how = OPPATH_QUIET | (k->s->opts->insecure_links ? OPPATH_INSECURE : 0);
		return oppath_open_from(k->w->root_fd, from, dir, O_RDONLY | O_DIRECTORY, how);
	}
	return openat(from, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

int walk_open_base(struct walker *k, const char *base)
{
	return walk_open_dir_at(k, k->base_fd, base);
}

/* A source directory, fd and path (the sender's %f starts with it). */
bool walk_add_roots(struct walker *k, int fd, const char *path)
{
	struct send_roots *r = &k->sl->roots;
	int *fds = realloc(r->fds, (r->count + 1) * sizeof *fds);

	if (fds)
		r->fds = fds;
	char **paths = fds ? realloc(r->paths, (r->count + 1) * sizeof *paths) : NULL;
	if (paths)
		r->paths = paths;
	char *copy = paths ? strdup(path) : NULL;
	if (!copy)
		return false;
	r->fds[r->count] = fd;
	r->paths[r->count] = copy;
	k->root = (uint32_t)r->count++;
	return true;
}

/* Can regular files be stat'ed later, as their part is sent? Only with
 * incremental recursion, and only where nothing decided while walking
 * needs their stat: no -H groups, --checksum sums, followed links,
 * --fake-super modes, readability checks, -R or --files-from names. */
static bool can_defer_stat(const struct walker *k)
{
	const struct session *s = k->s;
	const struct ferry_opts *o = s->opts;

	return k->w->defer_stat && s->inc_recurse && !k->w->names && !o->relative &&
	       !o->checksum && !o->hard_links && !s->fake_super && !s->module.ignore_nonreadable &&
	       !walk_following_links(o);
}

/* Can each directory be read only when its part is sent (the lazy walk,
 * flist_read_dir), not all up front? The whole-tree walk stays wherever
 * listing a directory depends on more than its path, the filters and
 * its own contents:
 *  - no incremental recursion (or no -r): one list, complete before it
 *    goes; walk_opts.defer_stat unset: the caller sends no parts;
 *  - -R and --files-from: implied dirs and "/./" roots are sent in the
 *    order of the names, across directories;
 *  - more than one source argument: two arguments may hold the same
 *    directory path, whose contents go in one part from two roots;
 *  - -H: hard-link leaders are chosen over the whole list
 *    (plan_hard_links);
 *  - -c: every file's sum is read while listing, kept out of the loop
 *    that answers the generator;
 *  - -L, --copy-unsafe-links, --copy-dirlinks, -k: a followed link may
 *    lead back up the tree; the loop check needs the walk's stack;
 *  - -x: the argument's device and the mount points on the way;
 *  - --fake-super and "ignore nonreadable": decided from data beyond
 *    the name and type (xattrs, access checks), as can_defer_stat;
 *  - per-directory merge files (dir-merge, -F, -C's .cvsignore): their
 *    rules are a stack of every directory above (filter_push_dir).
 * --delete and --delete-excluded change nothing here: the sender only
 * lists. */
bool can_walk_lazily(const struct walker *k, int nargs)
{
	const struct session *s = k->s;
	const struct ferry_opts *o = s->opts;

	return k->w->defer_stat && s->inc_recurse && o->recursive && nargs == 1 && !k->w->names &&
	       !o->relative && !o->hard_links && !o->checksum && !walk_following_links(o) &&
	       !o->one_file_system && !s->fake_super && !s->module.ignore_nonreadable &&
	       !filter_list_has_dir_merge(k->w->filters) &&
	       !filter_list_has_dir_merge(k->w->daemon_filters);
}

/* Stat a top-level name with flags; a dangling symlink followed is still
 * a symlink to send (flist.c: link_stat does not follow a plain name),
 * except under -L, where link_stat is a stat and so fails. */
static int stat_arg(int dirfd, const char *name, int flags, bool copy_links, struct stat *st)
{
	if (fstatat(dirfd, name, st, flags) == 0)
		return 0;
	if (errno != ENOENT || flags != 0 || copy_links ||
	    fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	if (S_ISLNK(st->st_mode))
		return 0;
	errno = ENOENT;
	return -1;
}

/* The top directory named by the argument: is it reached without a
 * symlink (a link the user named is followed by the whole-tree walk,
 * but the lazy walk opens each part one component at a time)? */
static bool top_is_plain_dir(const struct walker *k, int bfd, const char *name)
{
	struct stat st;

	if (k->w->confined || strcmp(name, ".") == 0)
		return true;
	return fstatat(bfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

bool walk_build_one(struct walker *k, const char *arg)
{
	const struct ferry_opts *o = k->s->opts;
	char base[MAXPATHLEN_WIRE], name[MAXPATHLEN_WIRE];
	struct stat st;

	split_arg(arg, base, sizeof base, name, sizeof name);
	int bfd = -1;
	if (strcmp(base, ".") != 0 && daemon_hides_dir(k, base))
		errno = ENOENT; /* a dir the module excludes does not exist (flist.c) */
	else
		bfd = walk_open_base(k, base);
	if (bfd < 0) {
		/* a missing argument is an error, not a vanished file (flist.c) */
		walk_io_error_in(k, IOERR_GENERAL, "change_dir", NULL, base);
		k->sl->vanished = true;
		return true;
	}
	if (!walk_add_roots(k, bfd, base)) {
		close(bfd);
		return wire_fail(&k->s->err, RERR_MALLOC, "out of memory");
	}
	int flags = strcmp(name, ".") == 0 || !k->w->confined ? 0 : AT_SYMLINK_NOFOLLOW;
	if (strcmp(name, ".") == 0 ? fstat(bfd, &st) < 0 : stat_arg(bfd, name, flags, o->copy_links, &st) < 0) {
		if (errno == ENOENT && o->missing_args == 1)
			return true; /* --ignore-missing-args */
		if (errno == ENOENT && o->missing_args == 2) {
			/* --delete-missing-args: a mode-0 entry tells the
			 * receiver to delete its copy (flist.c) */
			memset(&st, 0, sizeof st);
			return walk_add_entry(k, name, &st, bfd, name) || !wire_error_code(&k->s->err);
		}
		walk_io_error_in(k, IOERR_GENERAL, "link_stat", NULL, arg);
		k->sl->vanished = true;
		return true;
	}
	if (!S_ISDIR(st.st_mode) && flags == 0 && strcmp(name, ".") != 0)
		fstatat(bfd, name, &st, AT_SYMLINK_NOFOLLOW); /* a top-level symlink stays one */
	fake_stat(k->s, bfd, name, arg, &st);
	if (S_ISLNK(st.st_mode) && walk_following_links(o) && !walk_resolve_link(k, bfd, name, name, &st))
		return true;
	if (strcmp(name, ".") != 0 && daemon_hides(k, arg, S_ISDIR(st.st_mode))) {
		/* what the module excludes does not exist for the client (flist.c) */
		session_err(k->s, "link_stat \"%s\" failed: %s (%d)", arg, strerror(ENOENT), ENOENT);
		session_io_error_add(k->s, IOERR_GENERAL);
		k->sl->vanished = true;
		return true;
	}
	k->top_dev = st.st_dev;
	if (S_ISDIR(st.st_mode) && !o->recursive && !o->dirs) {
		session_info(k->s, "skipping directory %s\n", name);
		return true;
	}
	if (strcmp(name, ".") != 0 && walk_excluded(k, name, S_ISDIR(st.st_mode)))
		return true;
	struct file_entry *f = walk_add_entry(k, name, &st, bfd, strcmp(name, ".") == 0 ? "." : name);
	if (!f)
		return !wire_error_code(&k->s->err);
	if (S_ISDIR(st.st_mode)) {
		f->flags |= FE_TOP_DIR | FE_CONTENT_DIR;
		if (!o->recursive && strcmp(name, ".") != 0)
			return true;
		int dfd = strcmp(name, ".") == 0 ? dup(bfd)
			  : k->w->confined ? open_subdir(k, bfd, name, name)
					   : openat(bfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0) {
			walk_io_error(k, IOERR_GENERAL, "opendir", name);
			return true;
		}
		if (o->recursive || strcmp(name, ".") == 0) {
			k->nabove = 0;
			/* a top-level symlink the user named is followed by the
			 * walk, but not by the deferred stat's directory cursor */
			k->defer_stat = can_defer_stat(k) &&
					(k->w->confined || strcmp(name, ".") == 0);
			k->lazy = k->lazy_ok && top_is_plain_dir(k, bfd, name);
			if (k->lazy)
				k->sl->lazy_walk = k->w;
			if (k->lazy && strcmp(name, ".") != 0) {
				close(dfd); /* its contents are its own part */
				return true;
			}
			walk_enter_dir(k, dfd);
			bool ok = walk_dir(k, dfd, name);
			close(dfd);
			return ok;
		}
		close(dfd);
	}
	return true;
}

/* Room for a few entries: walk_add_entry's first growth (1024) is sized for
 * a whole tree, too much for each of many small parts held at once. */
static bool reserve_part(struct session *s, struct send_list *part)
{
	enum { FIRST_CAP = 16 };

	part->fl.files = malloc(FIRST_CAP * sizeof *part->fl.files);
	part->info = malloc(FIRST_CAP * sizeof *part->info);
	if (s->opts->hard_links)
		part->devino = malloc(FIRST_CAP * sizeof *part->devino);
	if (!part->fl.files || !part->info || (s->opts->hard_links && !part->devino))
		return wire_fail(&s->err, RERR_MALLOC, "out of memory reading a directory");
	part->fl.cap = FIRST_CAP;
	part->part_names_on = true;
	return true;
}

/* Give back what the arrays have beyond the entries read. */
static void trim_part(struct send_list *part)
{
	size_t n = part->fl.count ? part->fl.count : 1;

	if (n >= part->fl.cap)
		return;
	struct file_entry *f = realloc(part->fl.files, n * sizeof *f);
	struct send_info *in = realloc(part->info, n * sizeof *in);
	struct send_devino *di = part->devino ? realloc(part->devino, n * sizeof *di) : NULL;
	if (f)
		part->fl.files = f;
	if (in)
		part->info = in;
	if (di)
		part->devino = di;
	if (f && in && (di || !part->devino))
		part->fl.cap = n;
}

bool flist_read_dir(struct session *s, const struct send_list *sl, const char *dirpath,
		    int dirfd, struct send_list *part)
{
	struct walker k = {.s = s, .w = sl->lazy_walk, .sl = part, .base_fd = -1, .lazy = true,
			   .lazy_root = sl->roots.count ? sl->roots.paths[0] : NULL};

	memset(part, 0, sizeof *part);
	flist_init(&part->fl);
	if (!k.w)
		return wire_fail(&s->err, RERR_PROTOCOL, "no lazy walk to read \"%s\"", dirpath);
	if (dirfd < 0) {
		/* mirrors rsync flist.c:send_directory's opendir failure */
		int e = errno;
		if (e == ENOENT) {
			session_warn(s, "directory has vanished: \"%s\"\n", dirpath);
			session_io_error_add(s, IOERR_VANISHED);
		} else {
			errno = e;
			walk_io_error(&k, IOERR_GENERAL, "opendir", dirpath);
		}
		return true;
	}
	if (!reserve_part(s, part))
		return false;
	/* walk_add_entry shares a dirname with the entry before it: never with
	 * one in another part's storage, which may be freed by now */
	s->fl.lastdir = NULL;
	bool ok = walk_dir(&k, dirfd, dirpath);
	free(k.sum_buf);
	s->fl.lastdir = NULL;
	trim_part(part);
	return ok;
}

void flist_build_free(struct send_list *sl)
{
	for (size_t i = 0; i < sl->roots.count; i++) {
		close(sl->roots.fds[i]);
		free(sl->roots.paths[i]);
	}
	free(sl->roots.fds);
	free(sl->roots.paths);
	free(sl->info);
	free(sl->devino);
	part_names_free(sl->part_names);
	flist_free(&sl->fl);
	memset(sl, 0, sizeof *sl);
}
