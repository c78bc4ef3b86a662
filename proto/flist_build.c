/*
 * Building the sender's file list by walking the source arguments from
 * directory fds (flist.c: send_file_list, send_directory), never following
 * a symlink inside the tree.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "proto/fileio.h"
#include "proto/filter.h"
#include "proto/sendside.h"

struct walker {
	struct session *s;
	const struct walk_opts *w;
	struct send_list *sl;
	uint32_t root;
	dev_t top_dev;  /* -x: the file system of the current source argument */
	struct { dev_t dev; ino_t ino; } above[128]; /* dirs being walked: no loops */
	int nabove;
	char err[512];
};

static void io_error(struct walker *k, int bit, const char *what, const char *name)
{
	int e = errno;

	session_err(k->s, "%s \"%s\" failed: %s (%d)", what, name, strerror(e), e);
	k->s->io_error |= bit;
}

/* The --checksum sum of a regular file (checksum.c: file_checksum). */
static bool file_sum(struct walker *k, struct file_entry *f, int dirfd, const char *leaf,
		     const char *path)
{
	size_t n = csum_len(k->s->flist_csum);
	static __thread uint8_t buf[256 * 1024];
	struct csum_ctx c;
	ssize_t got;
	int64_t off = 0;

	f->sum = flist_alloc(&k->sl->fl, n);
	if (!f->sum)
		return false;
	memset(f->sum, 0, n);
	int fd = openat(dirfd, leaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		io_error(k, IOERR_GENERAL, "open", path);
		return true;
	}
	csum_file_init(&c, k->s->flist_csum, 0);
	while ((got = fs_pread_full(fd, buf, sizeof buf, off)) > 0) {
		csum_file_update(&c, buf, (size_t)got);
		off += got;
	}
	close(fd);
	csum_file_final(&c, f->sum);
	return true;
}

/* Append an entry for path (relative to the root) with the given stat. */
static struct file_entry *add_entry(struct walker *k, const char *path, const struct stat *st,
				    int dirfd, const char *leaf)
{
	struct flist *fl = &k->sl->fl;
	struct flist_codec *c = &k->s->fl;

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
			c->lastdir = flist_strdup(fl, path, dlen);
			c->lastdir_len = dlen;
		}
		f->dirname = c->lastdir;
		f->basename = flist_strdup(fl, slash + 1, strlen(slash + 1));
	} else {
		f->basename = flist_strdup(fl, path, strlen(path));
	}
	if (!f->basename || (slash && !f->dirname)) {
		wire_fail(&k->s->err, RERR_MALLOC, "out of memory");
		return NULL;
	}
	f->mode = st->st_mode;
	if (k->s->chmod.n && !S_ISLNK(f->mode))
		f->mode = chmod_apply(&k->s->chmod, f->mode);
	f->size = S_ISREG(st->st_mode) ? st->st_size : S_ISDIR(st->st_mode) ? st->st_size : 0;
	f->mtime = st->st_mtim.tv_sec;
	f->mtime_nsec = (uint32_t)st->st_mtim.tv_nsec;
	f->uid = st->st_uid;
	f->gid = st->st_gid;
	f->rdev_major = major(st->st_rdev);
	f->rdev_minor = minor(st->st_rdev);
	f->hlink_group = -1;
	f->flags = FE_ACTIVE;
	if (S_ISLNK(st->st_mode)) {
		char target[MAXPATHLEN_WIRE];
		ssize_t n = readlinkat(dirfd, leaf, target, sizeof target - 1);
		if (n < 0) {
			io_error(k, IOERR_GENERAL, "readlink", path);
			return NULL;
		}
		target[n] = '\0';
		const char *t = target;
		size_t plen = strlen(SYMLINK_MUNGE_PREFIX);
		if (k->s->munge_symlinks && strncmp(target, SYMLINK_MUNGE_PREFIX, plen) == 0)
			t = target + plen; /* what the client stored, unmunged */
		f->link = flist_strdup(fl, t, strlen(t));
		f->size = (int64_t)strlen(t);
	}
	if (k->s->opts->checksum && S_ISREG(st->st_mode) && !file_sum(k, f, dirfd, leaf, path))
		return NULL;
	struct send_info *in = &k->sl->info[fl->count];
	in->root = k->root;
	in->dev = (int64_t)st->st_dev;
	in->ino = (int64_t)st->st_ino;
	/* Before protocol 28 every regular file carries its dev and inode. */
	if (k->s->opts->hard_links && (k->s->protocol < 28 ? S_ISREG(st->st_mode)
						       : !S_ISDIR(st->st_mode) && st->st_nlink > 1))
		f->flags |= FE_HLINKED;
	if (S_ISDIR(st->st_mode) && k->s->opts->recursive)
		f->flags |= FE_CONTENT_DIR; /* its contents follow */
	fl->count++;
	return f;
}

static bool excluded(struct walker *k, const char *path, bool is_dir)
{
	if (k->w->daemon_filters && filter_check(k->w->daemon_filters, path, is_dir, false) < 0)
		return true;
	return k->w->filters && filter_check(k->w->filters, path, is_dir, false) < 0;
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

static bool wanted_type(const struct ferry_opts *o, mode_t m)
{
	if (S_ISREG(m) || S_ISDIR(m))
		return true;
	if (S_ISLNK(m))
		return true; /* sent even without -l; the receiver skips it */
	if (S_ISCHR(m) || S_ISBLK(m))
		return o->devices;
	return o->specials;
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
 * link is resolved from the source argument's directory and may not lead
 * out of it (the sender opens the file the same way). */
static int stat_target(struct walker *k, int dirfd, const char *leaf, const char *path,
		       struct stat *st)
{
	if (!k->w->confined)
		return fstatat(dirfd, leaf, st, 0);
	int fd = fs_open_beneath(k->sl->roots.fds[k->root], path, O_PATH);
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
			if (follow && o->verbose)
				session_info(k->s, "copying unsafe symlink \"%s\" -> \"%s\"\n", path,
					     link);
		}
	}
	if (!follow && !o->copy_dirlinks)
		return true;
	if (stat_target(k, dirfd, leaf, path, &target) < 0) {
		if (!follow)
			return true; /* -k: a dangling link stays a link */
		session_err(k->s, "symlink has no referent: \"%s\"", path);
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
	if (!k->w->confined)
		return openat(dirfd, leaf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fs_open_beneath(k->sl->roots.fds[k->root], sub, O_RDONLY | O_DIRECTORY);
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
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0) {
		io_error(k, IOERR_GENERAL, "opendir", relpath);
		return true;
	}
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		io_error(k, IOERR_GENERAL, "opendir", relpath);
		return true;
	}
	bool pushed = false;
	if (k->w->filters) {
		snprintf(fsdir, sizeof fsdir, "/proc/self/fd/%d", dirfd);
		pushed = filter_push_dir((struct filter_list *)k->w->filters, fsdir, relpath, k->err,
					 sizeof k->err) == 0;
	}
	size_t first = fl->count;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		struct stat st;
		join(path, sizeof path, relpath, de->d_name);
		if (strlen(path) >= MAXPATHLEN_WIRE - 1) {
			errno = ENAMETOOLONG;
			io_error(k, IOERR_GENERAL, "readdir", path);
			continue;
		}
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			io_error(k, errno == ENOENT ? IOERR_VANISHED : IOERR_GENERAL, "readlink_stat",
				 path);
			continue;
		}
		if (S_ISLNK(st.st_mode) && following_links(o) &&
		    !resolve_link(k, dirfd, de->d_name, path, &st))
			continue;
		if (!wanted_type(o, st.st_mode) || excluded(k, path, S_ISDIR(st.st_mode)))
			continue;
		/* -xx leaves out mount points; -x sends them empty (below). */
		if (o->one_file_system > 1 && S_ISDIR(st.st_mode) && st.st_dev != k->top_dev)
			continue;
		if (k->s->ignore_nonreadable && !S_ISLNK(st.st_mode) &&
		    faccessat(dirfd, de->d_name, R_OK, AT_EACCESS) < 0)
			continue;
		if (!add_entry(k, path, &st, dirfd, de->d_name) && wire_error_code(&k->s->err)) {
			closedir(d);
			return false;
		}
	}
	closedir(d);
	size_t last = fl->count;
	for (size_t i = first; o->recursive && i < last; i++) {
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

static int open_base(struct walker *k, const char *base)
{
	if (k->w->confined) {
		struct dir_cursor c;
		dir_cursor_init(&c, k->w->root_fd);
		int fd = dir_cursor_open(&c, strcmp(base, ".") == 0 ? "" : base);
		int dupfd = fd >= 0 ? dup(fd) : -1;
		dir_cursor_close(&c);
		return dupfd;
	}
	return openat(k->w->root_fd, base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static bool add_roots(struct walker *k, int fd)
{
	struct send_roots *r = &k->sl->roots;
	int *fds = realloc(r->fds, (r->count + 1) * sizeof *fds);

	if (!fds)
		return false;
	r->fds = fds;
	r->fds[r->count] = fd;
	k->root = (uint32_t)r->count++;
	return true;
}

static bool build_one(struct walker *k, const char *arg)
{
	const struct ferry_opts *o = k->s->opts;
	char base[MAXPATHLEN_WIRE], name[MAXPATHLEN_WIRE];
	struct stat st;

	split_arg(arg, base, sizeof base, name, sizeof name);
	int bfd = open_base(k, base);
	if (bfd < 0) {
		/* a missing argument is an error, not a vanished file (flist.c) */
		io_error(k, IOERR_GENERAL, "change_dir", base);
		k->sl->vanished = true;
		return true;
	}
	if (!add_roots(k, bfd)) {
		close(bfd);
		return wire_fail(&k->s->err, RERR_MALLOC, "out of memory");
	}
	int flags = strcmp(name, ".") == 0 || !k->w->confined ? 0 : AT_SYMLINK_NOFOLLOW;
	if (strcmp(name, ".") == 0 ? fstat(bfd, &st) < 0 : fstatat(bfd, name, &st, flags) < 0) {
		session_err(k->s, "link_stat \"%s\" failed: %s (%d)", arg, strerror(errno), errno);
		k->s->io_error |= IOERR_GENERAL;
		k->sl->vanished = true;
		return true;
	}
	if (!S_ISDIR(st.st_mode) && flags == 0 && strcmp(name, ".") != 0)
		fstatat(bfd, name, &st, AT_SYMLINK_NOFOLLOW); /* a top-level symlink stays one */
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
			enter_dir(k, dfd);
			bool ok = walk_dir(k, dfd, name);
			close(dfd);
			return ok;
		}
		close(dfd);
	}
	return true;
}

bool flist_build(struct session *s, const struct walk_opts *w, char **args, int nargs,
		 struct send_list *out)
{
	struct walker k = {.s = s, .w = w, .sl = out};

	memset(out, 0, sizeof *out);
	out->confined = w->confined;
	flist_init(&out->fl);
	for (int i = 0; i < nargs; i++)
		if (!build_one(&k, args[i]))
			return false;
	return true;
}

void send_list_free(struct send_list *sl)
{
	for (size_t i = 0; i < sl->roots.count; i++)
		close(sl->roots.fds[i]);
	free(sl->roots.fds);
	free(sl->info);
	flist_free(&sl->fl);
	memset(sl, 0, sizeof *sl);
}
