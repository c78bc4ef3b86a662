/*
 * Building the sender's file list by walking the source arguments from
 * directory fds (flist.c: send_file_list, send_directory), never following
 * a symlink inside the tree.
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

#include "proto/msg.h"
#include "proto/fakesuper.h"
#include "proto/fileio.h"
#include "proto/oppath.h"
#include "proto/filesfrom.h"
#include "proto/filter.h"
#include "proto/sendside.h"

struct walker {
	struct session *s;
	const struct walk_opts *w;
	struct send_list *sl;
	uint32_t root;
	dev_t top_dev;  /* -x: the file system of the current source argument */
	int base_fd;    /* names are relative to this: w->root_fd, or the
			 * --files-from source directory */
	struct { dev_t dev; ino_t ino; } above[128]; /* dirs being walked: no loops */
	int nabove;
	char err[512];
	/* -R (flist.c: send_file_list's statics) */
	char **root_names;     /* the "/./" dir of each root, "" = base */
	size_t nroot_names;
	char lastpath[MAXPATHLEN_WIRE]; /* the last implied dirs sent */
	int implied_dot;       /* rsync's implied_dot_dir: 0, -1 due, 1 sent */
	bool defer_stat;       /* regular files are stat'ed as their part is
				* sent (flist_stat_deferred) */
	bool lazy_ok;          /* the lazy walk may be used (can_walk_lazily) */
	bool lazy;             /* list one level: subdirectories are read when
				* their own part is sent (flist_read_dir) */
	const char *lazy_root; /* the source directory a lazy walk is under,
				* relative to the module (NULL: see sl->roots) */
	const char *base_name; /* the --files-from source directory, as named */
	uint8_t *sum_buf;      /* -c: file_sum's read buffer (SUM_BUF_SIZE),
				* made at its first use, freed with the walker */
};

#define SUM_BUF_SIZE (256 * 1024)

/* rsync's rsyserr() as the sender: "[sender] WHAT "/full/name" failed";
 * dir is what name is relative to (NULL: the working directory). */
static void io_error_in(struct walker *k, int bit, const char *what, const char *dir,
			const char *name)
{
	int e = errno;
	char full[PATH_MAX + 8];

	msg_full_name(k->s, dir, name, full, sizeof full);
	session_err(k->s, "[sender] %s %s failed: %s (%d)", what, full, strerror(e), e);
	k->s->io_error |= bit;
}

/* The source directory the names being walked are relative to. */
static const char *cur_dir_name(const struct walker *k)
{
	const struct send_roots *r = &k->sl->roots;

	return k->lazy ? k->lazy_root : k->root < r->count ? r->paths[k->root] : NULL;
}

/* The same about a name below the current source directory. */
static void io_error(struct walker *k, int bit, const char *what, const char *name)
{
	io_error_in(k, bit, what, cur_dir_name(k), name);
}

/* The --checksum sum of a regular file (checksum.c: file_checksum). */
static bool file_sum(struct walker *k, struct file_entry *f, int dirfd, const char *leaf,
		     const char *path)
{
	size_t n = csum_len(k->s->flist_csum);
	struct csum_ctx c;
	ssize_t got;
	int64_t off = 0;

	f->sum = flist_alloc(&k->sl->fl, n);
	if (!f->sum)
		return false;
	if (!k->sum_buf && !(k->sum_buf = malloc(SUM_BUF_SIZE)))
		return wire_fail(&k->s->err, RERR_MALLOC, "out of memory");
	uint8_t *buf = k->sum_buf;
	memset(f->sum, 0, n);
	int fd = fs_open_source(dirfd, leaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC,
				k->s->opts->open_noatime);
	if (fd < 0) {
		io_error(k, IOERR_GENERAL, "open", path);
		return true;
	}
	csum_file_init(&c, k->s->flist_csum, 0);
	while ((got = fs_pread_full(fd, buf, SUM_BUF_SIZE, off)) > 0) {
		csum_file_update(&c, buf, (size_t)got);
		off += got;
	}
	close(fd);
	csum_file_final(&c, f->sum);
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
	f->mode = st->st_mode;
	if (s->chmod.n && !S_ISLNK(f->mode) && f->mode)
		f->mode = chmod_apply(&s->chmod, f->mode);
	f->size = S_ISREG(st->st_mode) ? st->st_size : S_ISDIR(st->st_mode) ? st->st_size : 0;
	f->mtime = st->st_mtim.tv_sec;
	f->mtime_nsec = (uint32_t)st->st_mtim.tv_nsec;
	f->atime = st->st_atim.tv_sec;
	f->uid = st->st_uid;
	f->gid = st->st_gid;
	f->rdev_major = major(st->st_rdev);
	f->rdev_minor = minor(st->st_rdev);
}

/* A lazy part's names: small blocks, growing with the directory, since
 * the list arena's first block (sized for a whole tree) would be held
 * by each of the many parts in flight. */
struct part_names {
	struct part_names *next;
	size_t used, cap;
	char data[];
};

static char *part_strdup(struct part_names **head, const char *s, size_t len)
{
	struct part_names *b = *head;

	if (!b || b->cap - b->used < len + 1) {
		size_t cap = b ? b->cap * 2 : 1024;
		while (cap < len + 1)
			cap *= 2;
		if (cap > 64 * 1024 && len + 1 <= 64 * 1024)
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
	memcpy(p, s, len);
	p[len] = '\0';
	b->used += len + 1;
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

/* Append an entry for path (relative to the root) with the given stat. */
static struct file_entry *add_entry(struct walker *k, const char *path, const struct stat *given,
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
		if (f)
			fl->files = f;
		if (in)
			k->sl->info = in;
		if (!f || !in) {
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
		f->basename = entry_strdup(k->sl, slash + 1, strlen(slash + 1));
	} else {
		f->basename = entry_strdup(k->sl, path, strlen(path));
	}
	if (!f->basename || (slash && !f->dirname)) {
		wire_fail(&k->s->err, RERR_MALLOC, "out of memory");
		return NULL;
	}
	set_stat_fields(k->s, f, st);
	f->hlink_group = -1;
	f->flags = FE_ACTIVE;
	if (S_ISLNK(st->st_mode)) {
		char target[MAXPATHLEN_WIRE];
		ssize_t n = k->s->fake_super ? fake_readlink(dirfd, leaf, target, sizeof target - 1)
					     : readlinkat(dirfd, leaf, target, sizeof target - 1);
		if (n < 0) {
			io_error(k, IOERR_GENERAL, "readlink", path);
			return NULL;
		}
		target[n] = '\0';
		const char *t = target;
		size_t plen = strlen(SYMLINK_MUNGE_PREFIX);
		if (k->s->munge_symlinks && strncmp(target, SYMLINK_MUNGE_PREFIX, plen) == 0)
			t = target + plen; /* what the client stored, unmunged */
		f->link = entry_strdup(k->sl, t, strlen(t));
		f->size = (int64_t)strlen(t);
	}
	if (k->s->opts->checksum && S_ISREG(st->st_mode) && !file_sum(k, f, dirfd, leaf, path))
		return NULL;
	struct send_info *in = &k->sl->info[fl->count];
	in->root = k->root;
	in->dev = (int64_t)st->st_dev;
	in->ino = (int64_t)st->st_ino;
	in->unstated = false;
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

static bool excluded(struct walker *k, const char *path, bool is_dir)
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

	if (excluded(k, path, false))
		return true;
	if (!add_entry(k, path, &st, dirfd, leaf))
		return false;
	k->sl->info[k->sl->fl.count - 1].unstated = true;
	return true;
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
			set_stat_fields(s, f, &st);
			in->dev = (int64_t)st.st_dev;
			in->ino = (int64_t)st.st_ino;
			return true;
		}
	}
	int e = errno;
	if (!flist_path(f, path, sizeof path))
		snprintf(path, sizeof path, "%s", f->basename);
	session_err(s, "readlink_stat \"%s\" failed: %s (%d)", path, strerror(e), e);
	s->io_error |= e == ENOENT ? IOERR_VANISHED : IOERR_GENERAL;
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

static bool walk_dir(struct walker *k, int dirfd, const char *relpath);

static bool following_links(const struct ferry_opts *o)
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
static bool resolve_link(struct walker *k, int dirfd, const char *leaf, const char *path,
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
			io_error(k, IOERR_GENERAL, "readlink_stat", path);
			return false;
		}
		if (!follow)
			return true; /* -k: a dangling link stays a link */
		/* rsync's own text, unprefixed (flist.c: FERROR_XFER) */
		char full[PATH_MAX + 8];
		msg_full_name(k->s, cur_dir_name(k), path, full, sizeof full);
		session_xfer_err_plain(k->s, "symlink has no referent: %s", full);
		k->s->io_error |= IOERR_GENERAL;
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

	if (fd >= 0 || (errno != ELOOP && errno != ENOTDIR) || !following_links(k->s->opts))
		return fd;
	if (!k->w->confined || k->s->opts->insecure_links)
		return openat(dirfd, leaf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return oppath_open_from(k->w->root_fd, k->sl->roots.fds[k->root], sub,
				O_RDONLY | O_DIRECTORY, OPPATH_QUIET | OPPATH_ANY_OWNER);
}

/* Is the directory on fd one we are already inside (a followed link
 * leading back up)? Otherwise remember it while its contents are walked. */
static bool enter_dir(struct walker *k, int fd)
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
static bool walk_dir(struct walker *k, int dirfd, const char *relpath)
{
	const struct ferry_opts *o = k->s->opts;
	struct flist *fl = &k->sl->fl;
	char path[MAXPATHLEN_WIRE], fsdir[64];
	struct dir_reader d;

	if (dir_reader_open(&d, dirfd) < 0) {
		io_error(k, IOERR_GENERAL, "opendir", relpath);
		return true;
	}
	bool pushed = false;
	if (k->w->filters) {
		struct filter_list *filters = (struct filter_list *)k->w->filters;
		snprintf(fsdir, sizeof fsdir, "/proc/self/fd/%d", dirfd);
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
			io_error(k, IOERR_GENERAL, "readdir", path);
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
			io_error(k, errno == ENOENT ? IOERR_VANISHED : IOERR_GENERAL, "readlink_stat",
				 path);
			continue;
		}
		fake_stat(k->s, dirfd, de->d_name, path, &st); /* --fake-super: x_lstat */
		if (S_ISLNK(st.st_mode) && following_links(o) &&
		    !resolve_link(k, dirfd, de->d_name, path, &st))
			continue;
		/* every type is listed, devices and specials without -D too:
		 * the receiver skips what it may not make (rsync's make_file) */
		if (excluded(k, path, S_ISDIR(st.st_mode)))
			continue;
		/* -xx leaves out mount points; -x sends them empty (below). */
		if (o->one_file_system > 1 && S_ISDIR(st.st_mode) && st.st_dev != k->top_dev)
			continue;
		if (k->s->ignore_nonreadable && !S_ISLNK(st.st_mode) &&
		    faccessat(dirfd, de->d_name, R_OK, AT_EACCESS) < 0)
			continue;
		if (!add_entry(k, path, &st, dirfd, de->d_name) && wire_error_code(&k->s->err)) {
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
			io_error(k, IOERR_GENERAL, "opendir", sub);
			continue;
		}
		struct stat dst;
		if (o->one_file_system && (fstat(sfd, &dst) < 0 || dst.st_dev != k->top_dev)) {
			close(sfd);
			continue;
		}
		if (!enter_dir(k, sfd)) {
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
static int open_dir_at(struct walker *k, int from, const char *dir)
{
	if (k->w->confined) {
		/* a module's directory, through trusted links that stay in it
		 * (rsync 3.5's change_dir) */
		unsigned how = OPPATH_QUIET | (k->s->opts->insecure_links ? OPPATH_INSECURE : 0);
		return oppath_open_from(k->w->root_fd, from, dir, O_RDONLY | O_DIRECTORY, how);
	}
	return openat(from, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static int open_base(struct walker *k, const char *base)
{
	return open_dir_at(k, k->base_fd, base);
}

/* A source directory, fd and path (the sender's %f starts with it). */
static bool add_roots(struct walker *k, int fd, const char *path)
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
	       !o->checksum && !o->hard_links && !s->fake_super && !s->ignore_nonreadable &&
	       !following_links(o);
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
static bool can_walk_lazily(const struct walker *k, int nargs)
{
	const struct session *s = k->s;
	const struct ferry_opts *o = s->opts;

	return k->w->defer_stat && s->inc_recurse && o->recursive && nargs == 1 && !k->w->names &&
	       !o->relative && !o->hard_links && !o->checksum && !following_links(o) &&
	       !o->one_file_system && !s->fake_super && !s->ignore_nonreadable &&
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

static bool build_one(struct walker *k, const char *arg)
{
	const struct ferry_opts *o = k->s->opts;
	char base[MAXPATHLEN_WIRE], name[MAXPATHLEN_WIRE];
	struct stat st;

	split_arg(arg, base, sizeof base, name, sizeof name);
	int bfd = -1;
	if (strcmp(base, ".") != 0 && daemon_hides_dir(k, base))
		errno = ENOENT; /* a dir the module excludes does not exist (flist.c) */
	else
		bfd = open_base(k, base);
	if (bfd < 0) {
		/* a missing argument is an error, not a vanished file (flist.c) */
		io_error_in(k, IOERR_GENERAL, "change_dir", NULL, base);
		k->sl->vanished = true;
		return true;
	}
	if (!add_roots(k, bfd, base)) {
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
			return add_entry(k, name, &st, bfd, name) || !wire_error_code(&k->s->err);
		}
		io_error_in(k, IOERR_GENERAL, "link_stat", NULL, arg);
		k->sl->vanished = true;
		return true;
	}
	if (!S_ISDIR(st.st_mode) && flags == 0 && strcmp(name, ".") != 0)
		fstatat(bfd, name, &st, AT_SYMLINK_NOFOLLOW); /* a top-level symlink stays one */
	fake_stat(k->s, bfd, name, arg, &st);
	if (S_ISLNK(st.st_mode) && following_links(o) && !resolve_link(k, bfd, name, name, &st))
		return true;
	if (strcmp(name, ".") != 0 && daemon_hides(k, arg, S_ISDIR(st.st_mode))) {
		/* what the module excludes does not exist for the client (flist.c) */
		session_err(k->s, "link_stat \"%s\" failed: %s (%d)", arg, strerror(ENOENT), ENOENT);
		k->s->io_error |= IOERR_GENERAL;
		k->sl->vanished = true;
		return true;
	}
	k->top_dev = st.st_dev;
	if (S_ISDIR(st.st_mode) && !o->recursive && !o->dirs) {
		session_info(k->s, "skipping directory %s\n", name);
		return true;
	}
	if (strcmp(name, ".") != 0 && excluded(k, name, S_ISDIR(st.st_mode)))
		return true;
	struct file_entry *f = add_entry(k, name, &st, bfd, strcmp(name, ".") == 0 ? "." : name);
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
			io_error(k, IOERR_GENERAL, "opendir", name);
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
			enter_dir(k, dfd);
			bool ok = walk_dir(k, dfd, name);
			close(dfd);
			return ok;
		}
		close(dfd);
	}
	return true;
}

/* ---- -R/--relative and --files-from (flist.c: send_file_list) ---- */

enum name_type { NORMAL_NAME, SLASH_ENDING_NAME, DOTDIR_NAME };

/* rsync's clean_fname(CFN_KEEP_TRAILING_SLASH | CFN_DROP_TRAILING_DOT_DIR):
 * collapse "//" and "./", drop a trailing ".", keep a trailing "/" and
 * a leading one; an empty result is ".". Returns the new length. */
static size_t clean_relative(char *name)
{
	char *t = name, *f = name;
	bool anchored = *f == '/';

	if (anchored)
		*t++ = *f++;
	while (*f) {
		if (*f == '/') {
			f++;
			continue;
		}
		if (*f == '.' && f[1] == '/') {
			f += 2;
			continue;
		}
		if (*f == '.' && f[1] == '\0')
			break;
		while (*f && (*t++ = *f++) != '/')
			;
	}
	if (t == name)
		*t++ = '.';
	*t = '\0';
	return (size_t)(t - name);
}

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
		fd = open_base(k, dir);
	else if (k->base_fd == AT_FDCWD)
		fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	else
		fd = fcntl(k->base_fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0) {
		int e = errno;
		char where[MAXPATHLEN_WIRE * 2];
		snprintf(where, sizeof where, "%s/%s", k->base_name ? k->base_name : ".", dir);
		errno = e;
		io_error_in(k, IOERR_GENERAL, "change_dir", NULL, where);
		return false;
	}
	char **names = realloc(k->root_names, (k->nroot_names + 1) * sizeof *names);
	char *copy = strdup(dir);
	if (names)
		k->root_names = names;
	if (!names || !copy || !add_roots(k, fd, dir)) {
		free(copy);
		close(fd);
		return wire_fail(&k->s->err, RERR_MALLOC, "out of memory");
	}
	k->root_names[k->nroot_names++] = copy; /* add_roots made it k->root */
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
	return open_dir_at(k, cur_root_fd(k), dir);
}

/* One implied directory: its own attributes, as a dir with no contents
 * of its own in the transfer; only the module's rules filter it. */
static bool add_implied(struct walker *k, const char *path)
{
	struct stat st;
	int fd = open_dir_at(k, cur_root_fd(k), path);

	if (fd < 0 || fstat(fd, &st) < 0) {
		io_error(k, IOERR_GENERAL, "link_stat", path);
		if (fd >= 0)
			close(fd);
		return !wire_error_code(&k->s->err);
	}
	close(fd);
	if (k->w->daemon_filters && filter_check(k->w->daemon_filters, path, true, false) < 0)
		return true;
	struct file_entry *f = add_entry(k, path, &st, cur_root_fd(k), path);
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
	size_t len = clean_relative(*fn);
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
	struct file_entry *f = add_entry(k, fn, st, pfd, leaf);

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
		io_error(k, IOERR_GENERAL, "opendir", fn);
		return true;
	}
	k->nabove = 0;
	enter_dir(k, dfd);
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
	else if (S_ISLNK(st.st_mode) && following_links(o) &&
		 !resolve_link(k, pfd, leaf, fn, &st)) {
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
			k->s->io_error |= IOERR_GENERAL;
		if (pfd >= 0)
			close(pfd);
		return true;
	}
	bool ok = true;
	if (type != DOTDIR_NAME && excluded(k, fn, S_ISDIR(st.st_mode))) {
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

	int bfd = open_dir_at(k, k->w->root_fd, base);
	if (bfd < 0) {
		int e = errno;
		session_err(k->s, "change_dir \"%s\" failed: %s (%d)", base, strerror(e), e);
		return wire_fail(&k->s->err, RERR_FILESELECT, " ");
	}
	k->base_fd = bfd;
	k->base_name = base;
	while ((r = names_next(k->w->names, name, sizeof name)) > 0) {
		names_sanitize(name, o->relative);
		if (!(o->relative ? build_relative(k, name) : build_one(k, name)))
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
		ok = s->opts->relative ? build_relative(&k, args[i]) : build_one(&k, args[i]);
	for (size_t i = 0; i < k.nroot_names; i++)
		free(k.root_names[i]);
	free(k.root_names);
	free(k.sum_buf);
	return ok;
}

/* Room for a few entries: add_entry's first growth (1024) is sized for
 * a whole tree, too much for each of many small parts held at once. */
static bool reserve_part(struct session *s, struct send_list *part)
{
	enum { FIRST_CAP = 16 };

	part->fl.files = malloc(FIRST_CAP * sizeof *part->fl.files);
	part->info = malloc(FIRST_CAP * sizeof *part->info);
	if (!part->fl.files || !part->info)
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
	if (f)
		part->fl.files = f;
	if (in)
		part->info = in;
	if (f && in)
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
			s->io_error |= IOERR_VANISHED;
		} else {
			errno = e;
			io_error(&k, IOERR_GENERAL, "opendir", dirpath);
		}
		return true;
	}
	if (!reserve_part(s, part))
		return false;
	/* add_entry shares a dirname with the entry before it: never with
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
	part_names_free(sl->part_names);
	flist_free(&sl->fl);
	memset(sl, 0, sizeof *sl);
}
