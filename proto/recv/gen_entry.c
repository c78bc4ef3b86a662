/*
 * The generator's work on one entry of the list, by type: directories,
 * symlinks, devices and specials, regular files (rsync generator.c:
 * recv_generator). The basis of a file is chosen in gen_basis.c, hard
 * links are gen_hlink.c's, the walk over the list generator.c's.
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

#include "proto/base/fdio.h"
#include "proto/recv/gen.h"

/* An entry kept where it is: its attributes brought up to date, and at
 * -vv (NAME2) without an itemized format its name, or "X is uptodate"
 * when nothing needed touching (rsync.c: set_file_attrs, ATTRS_REPORT). */
static void settle_in_place(struct gen *g, int dirfd, const char *leaf, const char *path,
			    const struct file_entry *f, const struct stat *st, int iflags)
{
	const struct ferry_opts *o = g->o;
	int changed = iflags;

	if (!o->dry_run)
		changed = apply_attrs(g->rc, dirfd, leaf, f, st, true);
	if (says_uptodate(g))
		session_client(g->s, changed ? "%s\n" : "%s is uptodate\n", path);
}

/* mirrors rsync generator.c:dest_mode() for when -p is off; a new entry
 * in directory dirfd gets the permissions that directory's default ACL
 * allows, or else those the umask allows (acls.c: default_perms_for_dir) */
static uint32_t dest_mode(struct gen *g, uint32_t flist_mode, uint32_t stat_mode, bool exists,
			  int dirfd)
{
	uint32_t m;

	if (!exists)
		return flist_mode & (~07777u | acl_default_perms(dirfd, g->dflt_perms));
	m = (flist_mode & ~07777u) | (stat_mode & 07777u);
	if (g->o->executability && S_ISREG(flist_mode)) {
		if (!(flist_mode & 0111))
			m &= ~0111u;
		else if (!(stat_mode & 0111))
			m |= (m & 0444) >> 2;
	}
	return m;
}

/* Remove what stands where an entry of another type must go. */
/* rsync's names for what a way is made for (delete.c: delete_item) */
static const char *kind_name(uint32_t mode)
{
	if (S_ISREG(mode))
		return "regular file";
	if (S_ISDIR(mode))
		return "directory";
	if (S_ISLNK(mode))
		return "symlink";
	if (S_ISCHR(mode) || S_ISBLK(mode))
		return "device file";
	return "special file";
}

static bool clear_way(struct gen *g, int dirfd, const char *leaf, const char *path,
		      const struct stat *st, uint32_t new_mode)
{
	bool recursive = g->o->delete_mode != DELETE_NONE || g->o->force;

	if (S_ISDIR(st->st_mode)) {
		if (!delete_make_room(g->rc, dirfd, leaf, path, recursive)) {
			session_xfer_err_plain(g->s, "could not make way for new %s: %s",
					       kind_name(new_mode), path);
			return false;
		}
		dir_cursor_reset(&g->dirs);
		return true;
	}
	if (g->o->dry_run)
		return true;
	/* -b: what another kind of entry replaces is kept as its backup
	 * (generator.c: make_backup before atomic_create) */
	if (g->o->backup)
		return backup_make(g->rc, dirfd, leaf, path);
	if (fs_remove_any(dirfd, leaf, true) < 0) {
		file_error(g, "delete", path);
		return false;
	}
	return true;
}

/* The directory a single file is written in, or -1 when a dry run did
 * not make it (--mkpath). */
int solo_dir(struct gen *g)
{
	if (g->rc->cfg.dry_run_missing_root) {
		errno = ENOENT;
		return -1;
	}
	return g->rc->cfg.rootfd;
}

/* The directory a non-directory entry is written in and its name there:
 * the single-file destination's name when the destination names the file
 * (main.c: a lone source given a new name), else the list path's. */
static int entry_dir(struct gen *g, const char *path, const char **leaf)
{
	if (!g->rc->cfg.solo_name)
		return parent_of(g, path, leaf);
	*leaf = g->rc->cfg.solo_name;
	return solo_dir(g);
}

/* In a dry run a directory we would have created does not exist, so
 * everything below it is simply new (generator.c: dry_missing_dir). */
static bool dry_missing(struct gen *g, int dirfd)
{
	return dirfd < 0 && g->o->dry_run && (errno == ENOENT || errno == ENOTDIR);
}

/* lstat of what is at the destination, as --fake-super records it. */
static int dest_lstat(struct gen *g, int dirfd, const char *leaf, const char *path,
		      struct stat *st)
{
	if (fstatat(dirfd, leaf, st, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	fake_stat(g->s, dirfd, leaf, path, st);
	return 0;
}

/* -K: what a directory symlink in the destination leads to; in a daemon
 * module only what lies beneath the destination counts. */
static bool stat_dirlink(struct gen *g, int dirfd, const char *leaf, const char *path,
			 struct stat *st)
{
	if (!g->dirs.beneath)
		return fstatat(dirfd, leaf, st, 0) == 0;
	int fd = fs_open_beneath(g->rc->cfg.rootfd, path, O_PATH);
	bool ok = fd >= 0 && fstat(fd, st) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

/* -K: a destination symlink to a directory that stat_dirlink() refused
 * because it leads out of the destination (absolute, or too many "..")? */
static bool dirlink_escapes(int dirfd, const char *leaf)
{
	struct stat st;

	return (errno == EXDEV || errno == ELOOP) && fstatat(dirfd, leaf, &st, 0) == 0 &&
	       S_ISDIR(st.st_mode);
}

/* Without -p, a directory we just made keeps the setgid bit it took from
 * its parent (rsync.c: set_file_attrs, "make sure it stays on"). */
static void keep_inherited_setgid(struct gen *g, struct file_entry *f, const struct stat *made)
{
	if (!g->o->perms && (made->st_mode & S_ISGID))
		f->mode |= S_ISGID;
}

/* A receiver that is not root cannot write into a directory whose mode
 * lacks owner rwx, so it opens the directory up while it fills it;
 * touch_up_dir() puts the mode back (generator.c: dir_tweaking). */
bool tweaks_dir_perms(const struct gen *g)
{
	return !g->s->am_root && !g->o->dry_run && !g->rc->cfg.solo_name;
}

static void widen_dir_for_filling(struct gen *g, int dirfd, const char *leaf,
				  const struct file_entry *f, const char *path)
{
	if (!tweaks_dir_perms(g) || (f->mode & S_IRWXU) == S_IRWXU)
		return;
	if (fchmodat(dirfd, leaf, (f->mode | S_IRWXU) & 07777, 0) < 0)
		file_error_at(g, "failed to modify permissions on ", path, "");
}

static void gen_dir(struct gen *g, int32_t ndx, struct file_entry *f, const char *path)
{
	const char *leaf;
	struct stat st;
	int statret, dirfd = parent_of(g, path, &leaf);

	if (strcmp(path, ".") == 0) {
		dirfd = g->rc->cfg.rootfd;
		leaf = ".";
	}
	if (g->rc->cfg.dry_run_missing_root || dry_missing(g, dirfd)) {
		/* nothing there, but the basis dirs still have their say
		 * (generator.c: statret -1, then try_dests_non) */
		struct stat ast;
		bool alt = g->rc->cfg.nalt && alt_dir_stat(g, f, path, &ast);
		report_item(g, ndx, ITEM_LOCAL_CHANGE | (alt ? attr_change_bits(g, f, &ast) : ITEM_IS_NEW),
			    NULL);
		if (alt && says_uptodate(g) && unchanged_attrs(g, f, &ast))
			session_info(g->s, "%s/ is uptodate\n", path);
		return;
	}
	if (dirfd < 0) {
		file_error_at(g, "recv_generator: failed to stat ", path, "");
		recv_state_add(g->rc, ndx, FS_FAILED);
		recv_mark_dir_failed(g->rc, path);
		return;
	}
	statret = dest_lstat(g, dirfd, leaf, path, &st);
	struct stat target;
	if (statret == 0 && S_ISLNK(st.st_mode) && g->o->keep_dirlinks) {
		if (stat_dirlink(g, dirfd, leaf, path, &target)) {
			if (S_ISDIR(target.st_mode))
				st = target; /* -K: a symlink to a directory stands for it */
		} else if (dirlink_escapes(dirfd, leaf)) {
			/* rsync 3.5 keeps the link and refuses what would go
			 * through it (each entry below fails to open) */
			report_item(g, ndx, 0, NULL);
			return;
		}
	}
	if (statret < 0 && g->o->existing) {
		/* --existing: neither this directory nor what is below it */
		recv_state_add(g->rc, ndx, FS_FAILED);
		recv_mark_dir_failed(g->rc, path);
		return;
	}
	if (statret == 0 && !S_ISDIR(st.st_mode)) {
		if (!clear_way(g, dirfd, leaf, path, &st, f->mode)) {
			recv_state_add(g->rc, ndx, FS_FAILED);
			recv_mark_dir_failed(g->rc, path);
			return;
		}
		statret = -1;
	}
	/* made ahead of its part (0700): new in every respect, mode too */
	bool made_early = statret == 0 && (f->flags & FE_DIR_CREATED);
	bool exists = statret == 0 && !made_early;
	if (!g->o->perms)
		f->mode = dest_mode(g, f->mode, exists ? st.st_mode : 0, exists, dirfd);
	if (made_early)
		keep_inherited_setgid(g, f, &st);
	/* The transfer root we created counts as new (FLAG_DIR_CREATED). */
	bool created_root = (strcmp(path, ".") == 0 && g->rc->cfg.root_created) || made_early;
	struct stat ast;
	int iflags = statret == 0 && !created_root ? attr_change_bits(g, f, &st)
		     : alt_dir_stat(g, f, path, &ast) ? ITEM_LOCAL_CHANGE | attr_change_bits(g, f, &ast)
						      : ITEM_LOCAL_CHANGE | ITEM_IS_NEW;
	report_item(g, ndx, iflags, NULL);
	bool from_alt = (statret != 0 || created_root) && !(iflags & ITEM_IS_NEW);
	if (from_alt && says_uptodate(g) && unchanged_attrs(g, f, &ast))
		session_info(g->s, "%s/ is uptodate\n", path); /* try_dests_non */
	if (created_root && (iflags & ITEM_IS_NEW)) {
		g->s->stats.created_dirs++;
		stats_bump(&g->s->stats.created_files);
	}
	if (statret != 0 && !g->o->dry_run) {
		if (mkdirat(dirfd, leaf, (f->mode | 0700) & 07777) < 0 && errno != EEXIST) {
			file_error(g, "recv_generator: mkdir", path);
			session_err_plain(g->s, "*** Skipping any contents from this failed directory ***");
			recv_state_add(g->rc, ndx, FS_FAILED);
			recv_mark_dir_failed(g->rc, path);
			return;
		}
		if (dest_lstat(g, dirfd, leaf, path, &st) < 0) {
			file_error(g, "stat", path);
			return;
		}
		keep_inherited_setgid(g, f, &st);
		if (iflags & ITEM_IS_NEW) {
			g->s->stats.created_dirs++;
			stats_bump(&g->s->stats.created_files);
		}
	}
	if (!g->o->dry_run)
		apply_attrs(g->rc, dirfd, leaf, f, &st, false);
	if (made_early && !g->o->perms && !g->o->dry_run &&
	    fchmodat(dirfd, leaf, f->mode & 07777, 0) < 0)
		file_error(g, "chmod", path);
	widen_dir_for_filling(g, dirfd, leaf, f, path);
	if (g->o->delete_mode == DELETE_DURING || g->o->delete_mode == DELETE_DEFAULT) {
		if ((f->flags & FE_CONTENT_DIR) && !(recv_state(g->rc, ndx) & FS_FAILED))
			delete_in_dir(g->rc, &g->dirs, path, ndx);
	}
}

/* Incremental recursion: a directory met in its parent's part is only
 * made, so that the parent's time can be set at once; the rest waits for
 * its own part (generator.c: recv_generator with is_dir < 0). */
static void gen_dir_early(struct gen *g, struct file_entry *f, const char *path)
{
	const char *leaf;
	struct stat st;

	if (!g->o->times || g->o->omit_dir_times || g->o->dry_run || g->o->existing ||
	    parent_failed(g->rc, f))
		return;
	int dirfd = parent_of(g, path, &leaf);
	if (dirfd < 0 || dest_lstat(g, dirfd, leaf, path, &st) == 0)
		return;
	/* atomic: the receiver thread reads this entry's flags when its
	 * part arrives */
	if (mkdirat(dirfd, leaf, (f->mode | 0700) & 0700) == 0)
		__atomic_fetch_or(&f->flags, FE_DIR_CREATED, __ATOMIC_RELAXED);
}

static void gen_symlink(struct gen *g, int32_t ndx, struct file_entry *f, const char *path)
{
	const char *leaf;
	struct stat st;
	char cur[MAXPATHLEN_WIRE + 1];
	int dirfd = entry_dir(g, path, &leaf);
	int iflags = ITEM_LOCAL_CHANGE | ITEM_REPORT_CHANGE;

	if (g->o->safe_links && fs_symlink_unsafe(fe_link(f), path)) {
		if (info_ge(g->o, INFO_SYMSAFE, 1))
			session_info(g->s, "ignoring unsafe symlink \"%s\" -> \"%s\"\n", path,
				     fe_link(f));
		return;
	}
	if (dry_missing(g, dirfd)) {
		if (g->o->existing)
			return;
		/* a basis dir's copy is as good as in a real run */
		if (!g->rc->cfg.nalt || !alt_symlink_match(g, f, path))
			report_item(g, ndx, iflags | ITEM_IS_NEW, NULL);
		else if (symlink_from_alt(g, ndx, path))
			recv_report_success(g->rc, ndx, path, false);
		return;
	}
	if (dirfd < 0) {
		file_error_at(g, "recv_generator: failed to stat ", path, "");
		return;
	}
	if (dest_lstat(g, dirfd, leaf, path, &st) == 0) {
		if (S_ISLNK(st.st_mode)) {
			ssize_t n = g->s->fake_super ? fake_readlink(dirfd, leaf, cur, sizeof cur - 1)
						     : readlinkat(dirfd, leaf, cur, sizeof cur - 1);
			if (n >= 0) {
				cur[n] = '\0';
				/* munged, the right link is the munged one: rsync
				 * compares with the target it munged on receipt */
				const char *have = cur;
				size_t plen = strlen(SYMLINK_MUNGE_PREFIX);
				if (g->s->module.munge_symlinks)
					have = strncmp(cur, SYMLINK_MUNGE_PREFIX, plen) == 0 ? cur + plen
											: NULL;
				if (have && strcmp(have, fe_link(f)) == 0) {
					/* the link points to the right place */
					int bits = attr_change_bits(g, f, &st);
					report_item(g, ndx, bits, NULL);
					settle_in_place(g, dirfd, leaf, path, f, &st, bits);
					recv_report_success(g->rc, ndx, path, false);
					return;
				}
			}
			iflags |= attr_change_bits_for(g, f, &st, ITEM_LOCAL_CHANGE);
			/* -b: the old link is kept too (generator.c: make_backup
			 * before atomic_create) */
			if (g->o->backup && !g->o->dry_run && !backup_make(g->rc, dirfd, leaf, path))
				return;
		} else {
			if (!clear_way(g, dirfd, leaf, path, &st, f->mode))
				return;
			iflags |= ITEM_IS_NEW;
		}
	} else {
		if (g->o->existing)
			return;
		iflags |= ITEM_IS_NEW;
		if (g->rc->cfg.nalt && alt_symlink_match(g, f, path)) {
			if (symlink_from_alt(g, ndx, path)) {
				recv_report_success(g->rc, ndx, path, false);
				return;
			}
			iflags = 0; /* made as a copy of that one, quietly */
		}
	}
	if (iflags)
		report_item(g, ndx, iflags, NULL);
	if (g->o->dry_run)
		return;
	/* Create under a temporary name and rename over, so a reader never
	 * sees the name missing (rsync's atomic_create). */
	char tmp[300];
	int fd = fs_create_temp(dirfd, leaf, tmp, sizeof tmp);
	char post[MAXPATHLEN_WIRE + 16];
	snprintf(post, sizeof post, " -> \"%s\" failed", fe_link(f));
	if (fd < 0) {
		file_error_at(g, "symlink ", path, post);
		return;
	}
	char munged[MAXPATHLEN_WIRE + sizeof SYMLINK_MUNGE_PREFIX];
	const char *target = fe_link(f);
	if (g->s->module.munge_symlinks) {
		snprintf(munged, sizeof munged, "%s%s", SYMLINK_MUNGE_PREFIX, fe_link(f));
		target = munged;
	}
	/* --fake-super: a regular file holding the target stands for it */
	bool made = g->s->fake_super ? fd_write_all(fd, target, strlen(target)) : true;
	close(fd);
	if (!g->s->fake_super) {
		unlinkat(dirfd, tmp, 0);
		made = symlinkat(target, dirfd, tmp) == 0;
	}
	if (!made || renameat(dirfd, tmp, dirfd, leaf) < 0) {
		file_error_at(g, "symlink ", path, post);
		unlinkat(dirfd, tmp, 0);
		return;
	}
	if (iflags & ITEM_IS_NEW) {
		g->s->stats.created_symlinks++;
		stats_bump(&g->s->stats.created_files);
	}
	apply_attrs(g->rc, dirfd, leaf, f, NULL, true);
	recv_report_success(g->rc, ndx, path, true);
}

static void gen_device(struct gen *g, int32_t ndx, struct file_entry *f, const char *path)
{
	const char *leaf;
	struct stat st;
	dev_t rdev = makedev(fe_rdev_major(f), fe_rdev_minor(f));
	int dirfd = entry_dir(g, path, &leaf);

	if (dry_missing(g, dirfd)) {
		report_item(g, ndx, ITEM_LOCAL_CHANGE | ITEM_IS_NEW, NULL);
		return;
	}
	if (dirfd < 0) {
		file_error_at(g, "recv_generator: failed to stat ", path, "");
		return;
	}
	int iflags = ITEM_LOCAL_CHANGE | ITEM_IS_NEW;
	if (dest_lstat(g, dirfd, leaf, path, &st) == 0) {
		bool same_kind = (st.st_mode & S_IFMT) == (f->mode & S_IFMT);
		if (same_kind && (!(S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) || st.st_rdev == rdev)) {
			int bits = attr_change_bits(g, f, &st);
			report_item(g, ndx, bits, NULL);
			settle_in_place(g, dirfd, leaf, path, f, &st, bits);
			return;
		}
		if (!clear_way(g, dirfd, leaf, path, &st, f->mode))
			return;
		/* a device whose numbers changed is "cDc"; what replaces
		 * another kind of entry is new (generator.c: itemize after
		 * do_mknod) */
		if (same_kind)
			iflags = ITEM_LOCAL_CHANGE | ITEM_REPORT_CHANGE |
				 attr_change_bits_for(g, f, &st, ITEM_LOCAL_CHANGE);
	} else if (g->o->existing) {
		return;
	}
	report_item(g, ndx, iflags, NULL);
	if (g->o->dry_run)
		return;
	if (g->s->fake_super ? fake_placeholder(dirfd, leaf, NULL) < 0
			     : mknodat(dirfd, leaf, (f->mode & S_IFMT) | 0600, rdev) < 0) {
		file_error(g, "mknod", path);
		return;
	}
	if (!(iflags & ITEM_IS_NEW)) {
		apply_attrs(g->rc, dirfd, leaf, f, NULL, true);
		return;
	}
	if (S_ISCHR(f->mode) || S_ISBLK(f->mode))
		g->s->stats.created_devices++;
	else
		g->s->stats.created_specials++;
	stats_bump(&g->s->stats.created_files);
	apply_attrs(g->rc, dirfd, leaf, f, NULL, true);
}

/* --write-devices: an existing device takes the file's data in place
 * (generator.c: recv_generator, the write_devices && FT_DEVICE case). */
bool writable_device(const struct ferry_opts *o, const struct stat *st)
{
	return o->write_devices && (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode));
}

/* A device's st_size is 0: its size is where seeking to the end lands. */
void device_size(int dirfd, const char *leaf, struct stat *st)
{
	if (st->st_size != 0)
		return;
	int fd = openat(dirfd, leaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		st->st_size = fs_device_size(fd);
		close(fd);
	}
}

/* Ask the sender for the file, with block sums of the basis if any. */
static bool request_from(struct gen *g, int32_t ndx, const struct basis *b, int iflags,
			 bool redo)
{
	struct session *s = g->s;
	int fd = -1;
	bool ok;

	iflags |= ITEM_TRANSFER;
	if (g->o->checksum)
		iflags |= ITEM_REPORT_CHANGE;
	if (b->st && (S_ISREG(b->st->st_mode) || writable_device(g->o, b->st)) &&
	    b->st->st_size > 0 && g->o->whole_file != 1 &&
	    batch_do_xfers(g->o) && s->xfer_csum != CSUM_NONE)
		fd = openat(b->dirfd, b->leaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	/* a --partial-dir basis is named even with no sums: the receiver
	 * writes over it in place (generator.c: prepare_to_open) */
	if ((fd >= 0 && b->alt >= 0) || (b->st && b->alt == FNAMECMP_PARTIAL_DIR))
		iflags |= ITEM_BASIS_TYPE_FOLLOWS;
	/* a fuzzy basis is named whether or not sums follow (generator.c:
	 * recv_generator) */
	if (b->xname)
		iflags |= ITEM_BASIS_TYPE_FOLLOWS | ITEM_XNAME_FOLLOWS;
	const struct file_entry *f = g->rc->fl->sorted[ndx];
	bool at_dest = b->st && (b->alt < 0 || b->alt == FNAMECMP_BACKUP) && !(iflags & ITEM_IS_NEW);
	iflags |= meta_item_bits(g, f, at_dest ? b->dirfd : -1, at_dest ? b->leaf : NULL);
	recv_state_add(g->rc, ndx, FS_REQUESTED);
	wire_out_lock(&s->out);
	ok = wire_write_ndx(&s->out, ndx) &&
	     (s->protocol < 29 || wire_write_u16(&s->out, (uint16_t)(iflags & 0xffff))) &&
	     (!(iflags & ITEM_BASIS_TYPE_FOLLOWS) || wire_write_u8(&s->out, (uint8_t)b->alt)) &&
	     (!(iflags & ITEM_XNAME_FOLLOWS) || wire_write_vstring(&s->out, b->xname)) &&
	     xattr_gen_request(s, f, iflags);
	/* the kept sums are by the destination's own path */
	char cpath[MAXPATHLEN_WIRE * 2];
	const char *cache_path = g->rc->cfg.sums && b->alt < 0 && !b->xname &&
				 flist_path(f, cpath, sizeof cpath) ? cpath : NULL;
	if (ok && batch_do_xfers(g->o))
		ok = fd >= 0 ? send_sums(g, fd, b->st->st_size, redo, ndx, cache_path)
			     : send_null_sums(s);
	wire_out_unlock(&s->out);
	if (fd >= 0)
		close(fd);
	return ok;
}

bool request_file(struct gen *g, int32_t ndx, const struct file_entry *f, int dirfd,
		  const char *leaf, const struct stat *st, int iflags, bool redo)
{
	struct basis b = {.dirfd = dirfd, .leaf = leaf, .st = st, .alt = -1};

	(void)f;
	return request_from(g, ndx, &b, iflags, redo);
}

/* What gen_regular_file did with a regular file. */
enum regular_outcome {
	REG_SKIPPED,   /* left alone: not there, or an error */
	REG_DEFERRED,  /* missing, and a later hard link of it will come */
	REG_REQUESTED, /* asked the sender for it */
	REG_IN_PLACE,  /* there already, kept as it is or brought up to date */
	REG_COMPARED,  /* a --compare-dest dir has it: not in the destination */
};

static enum regular_outcome gen_regular_file(struct gen *g, int32_t ndx, struct file_entry *f,
					     const char *path, bool defer_missing)
{
	const struct ferry_opts *o = g->o;
	const char *leaf;
	struct stat st;
	int dirfd;

	if (g->rc->cfg.solo_name) {
		dirfd = solo_dir(g);
		leaf = g->rc->cfg.solo_name;
	} else {
		dirfd = parent_of(g, path, &leaf);
	}
	fuzzy_enter_dir(g, f);
	/* in a dry run under a directory not made: missing, with no
	 * partial or fuzzy basis, but the basis dirs still have their say
	 * (generator.c: dry_missing_dir, statret -1) */
	bool missing = dry_missing(g, dirfd);
	if (dirfd < 0 && !missing) {
		file_error_at(g, "recv_generator: failed to stat ", path, "");
		return REG_SKIPPED;
	}
	int statret = missing ? -1 : dest_lstat(g, dirfd, leaf, path, &st);
	if (statret < 0) {
		if (o->existing) {
			if (info_ge(o, INFO_SKIP, 1))
				session_info(g->s, "not creating new file \"%s\"\n", path);
			return REG_SKIPPED;
		}
		if (!o->perms && !missing)
			f->mode = dest_mode(g, f->mode, 0, false, dirfd);
		struct basis b = {.dirfd = dirfd, .leaf = leaf, .st = NULL, .alt = -1};
		struct stat bst;
		int pfd;
		if (!missing && partial_basis(g, path, &pfd, &b, &bst)) {
			request_from(g, ndx, &b, ITEM_IS_NEW, false);
			close(pfd);
			return REG_REQUESTED;
		}
		/* a hard link waits for its group only after the basis dirs had
		 * their say (generator.c: try_dests_reg before the
		 * F_HLINK_NOT_LAST deferral) */
		enum alt_outcome alt = g->rc->cfg.nalt ? try_alt_dests(g, ndx, f, path, dirfd, leaf,
								   &b, &bst)
						   : ALT_NONE;
		if (alt != ALT_NONE)
			return alt == ALT_COMPARED ? REG_COMPARED : REG_REQUESTED;
		if (defer_missing)
			return REG_DEFERRED;
		if (b.st && b.alt >= 0) {
			/* a file in a basis dir is what the item is compared
			 * with: not new (generator.c: recv_generator, statret
			 * 0 after try_dests_reg) */
			int iflags = attr_change_bits_for(g, f, b.st, ITEM_TRANSFER);
			if (!o->times)
				iflags |= ITEM_REPORT_TIME;
			request_from(g, ndx, &b, iflags, false);
			return REG_REQUESTED;
		}
		if (!b.st && o->fuzzy && !missing)
			fuzzy_basis(g, f, path, dirfd, &b, &bst);
		request_from(g, ndx, &b, ITEM_IS_NEW, false);
		return REG_REQUESTED;
	}
	if (o->ignore_existing) {
		/* --info=skip2 says why it would have changed (generator.c:
		 * recv_generator) */
		const char *why = "";
		if (info_ge(o, INFO_SKIP, 2))
			why = !S_ISREG(st.st_mode) ? " (type change)"
			      : !regular_up_to_date(g, f, dirfd, leaf, &st)
				      ? (o->checksum ? " (sum change)" : " (file change)")
			      : !unchanged_attrs(g, f, &st) ? " (attr change)" : " (uptodate)";
		if (info_ge(o, INFO_SKIP, 1))
			session_info(g->s, "%s exists%s\n", path, why);
		return REG_IN_PLACE;
	}
	if (writable_device(o, &st)) {
		device_size(dirfd, leaf, &st);
	} else if (!S_ISREG(st.st_mode)) {
		if (!clear_way(g, dirfd, leaf, path, &st, f->mode))
			return REG_SKIPPED;
		if (!o->perms)
			f->mode = dest_mode(g, f->mode, 0, false, dirfd);
		request_file(g, ndx, f, dirfd, leaf, NULL, ITEM_IS_NEW, false);
		return REG_REQUESTED;
	}
	/* rsync compares whole seconds here, within --modify-window: a
	 * destination touched later in the same second is not newer */
	if (o->update && (int64_t)f->mtime - (int64_t)st.st_mtim.tv_sec < o->modify_window) {
		if (info_ge(o, INFO_SKIP, 1))
			session_info(g->s, "%s is newer\n", path);
		return REG_IN_PLACE;
	}
	if (replace_by_alt(g, ndx, f, path, dirfd, leaf, &st))
		return REG_IN_PLACE;
	if (!o->perms)
		f->mode = dest_mode(g, f->mode, st.st_mode, true, dirfd);
	int iflags = attr_change_bits(g, f, &st);
	if (regular_up_to_date(g, f, dirfd, leaf, &st)) {
		report_item(g, ndx, iflags, NULL);
		settle_in_place(g, dirfd, leaf, path, f, &st, iflags);
		recv_state_add(g->rc, ndx, FS_DONE);
		recv_report_success(g->rc, ndx, path, false);
		if (o->partial_dir && !o->dry_run)
			partial_remove(g->rc, path); /* a leftover of an older try */
		return REG_IN_PLACE;
	}
	if (o->append && st.st_size >= fe_size(f))
		return REG_IN_PLACE; /* --append only ever adds to a shorter file */
	if (!o->times)
		iflags |= ITEM_REPORT_TIME; /* attr_change_bits_for() with a transfer */
	struct basis b = {.dirfd = dirfd, .leaf = leaf, .st = &st, .alt = -1};
	struct stat pst;
	int pfd;
	/* don't use a changing file as a later file's basis */
	if (o->fuzzy && o->whole_file != 1)
		fuzzy_mark_changing(&g->fuzzy, leaf);
	partial_basis(g, path, &pfd, &b, &pst);
	/* -b --inplace: the old data is copied aside first and is the
	 * basis from then on (generator.c: recv_generator, FNAMECMP_BACKUP) */
	if (o->backup && o->inplace && b.alt < 0 && !o->dry_run) {
		if (!backup_copy(g->rc, dirfd, leaf, path)) {
			g->s->got_xfer_error = true;
			return REG_SKIPPED;
		}
		b.alt = FNAMECMP_BACKUP;
	}
	request_from(g, ndx, &b, iflags, false);
	if (pfd >= 0)
		close(pfd);
	return REG_REQUESTED;
}

static void gen_regular(struct gen *g, int32_t ndx, struct file_entry *f, const char *path)
{
	const struct ferry_opts *o = g->o;

	if ((o->max_size >= 0 && fe_size(f) > o->max_size) ||
	    (o->min_size >= 0 && fe_size(f) < o->min_size)) {
		if (info_ge(o, INFO_SKIP, 1))
			session_info(g->s, "%s is %s\n", path,
				     fe_size(f) > o->max_size && o->max_size >= 0 ? "over max-size"
									: "under min-size");
		if (hlink_member(g->rc, f) && (f->flags & FE_HLINK_LAST))
			hlink_release(g->rc, f);
		return;
	}
	if (!hlink_member(g->rc, f)) {
		gen_regular_file(g, ndx, f, path, false);
		return;
	}
	if (hlink_joined(g, ndx, f))
		return;
	switch (gen_regular_file(g, ndx, f, path, hlink_defers(g->rc, f))) {
	case REG_DEFERRED:
		hlink_wait(g->rc, ndx, f);
		break;
	case REG_REQUESTED:
		/* a dry run writes nothing: the others are "linked" at once */
		if (o->dry_run) {
			link_waiting(g, ndx);
			break;
		}
		hlink_set_target(g->rc, ndx, f, false);
		break;
	case REG_IN_PLACE:
		hlink_set_target(g->rc, ndx, f, true);
		link_waiting(g, ndx);
		break;
	case REG_COMPARED:
		/* nothing to link to: each later member looks for itself */
	case REG_SKIPPED:
		/* the others waited for this one: they are left out */
		if (f->flags & FE_HLINK_LAST)
			hlink_release(g->rc, f);
		break;
	}
}

/* The module's exclude rules decide what a daemon takes in: a refused
 * entry is an error and a refused directory's contents are skipped
 * (generator.c: recv_generator, "daemon refused to receive"). The rules
 * see the name inside the module. */
/* --ignore-existing for an entry that is not a regular file (those are
 * gen_regular_file's): whatever is already at its place stays, except a
 * directory where a directory goes; --info=skip says so (generator.c:
 * recv_generator). True when the entry is skipped. */
static bool ignore_existing(struct gen *g, const struct file_entry *f, const char *path)
{
	const struct ferry_opts *o = g->o;
	const char *leaf;
	struct stat st;

	if (!o->ignore_existing)
		return false;
	int dirfd = g->rc->cfg.solo_name ? solo_dir(g) : parent_of(g, path, &leaf);
	if (g->rc->cfg.solo_name)
		leaf = g->rc->cfg.solo_name;
	if (dirfd < 0 || fstatat(dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    (S_ISDIR(f->mode) && S_ISDIR(st.st_mode)))
		return false;
	if (!info_ge(o, INFO_SKIP, 1))
		return true;
	const char *why = "";
	if (info_ge(o, INFO_SKIP, 2)) {
		char cur[MAXPATHLEN_WIRE];
		ssize_t n;
		bool same = (st.st_mode & S_IFMT) == (f->mode & S_IFMT);
		if (!same)
			why = " (type change)";
		else if (S_ISLNK(st.st_mode) &&
			 ((n = readlinkat(dirfd, leaf, cur, sizeof cur - 1)) < 0 ||
			  (size_t)n != strlen(fe_link(f) ? fe_link(f) : "") || memcmp(cur, fe_link(f), (size_t)n)))
			why = " (file change)";
		else if ((S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) &&
			 st.st_rdev != makedev(fe_rdev_major(f), fe_rdev_minor(f)))
			why = " (file change)";
		else
			why = unchanged_attrs(g, f, &st) ? " (uptodate)" : " (attr change)";
	}
	session_info(g->s, "%s exists%s\n", path, why);
	return true;
}

/* Do the module's exclude rules keep path out? */
static bool daemon_excludes(struct gen *g, const struct file_entry *f, const char *path)
{
	return recv_daemon_excludes(&g->rc->cfg, path, S_ISDIR(f->mode));
}

static bool daemon_refuses(struct gen *g, int32_t ndx, const struct file_entry *f,
			   const char *path)
{
	bool is_dir = S_ISDIR(f->mode);

	if (!daemon_excludes(g, f, path))
		return false;
	/* rsync's own text, unprefixed (FERROR_XFER) */
	session_xfer_err_plain(g->s, "ERROR: daemon refused to receive %s \"%s\"",
			       is_dir ? "directory" : "file", path);
	recv_state_add(g->rc, ndx, FS_FAILED);
	if (is_dir) {
		session_xfer_err_plain(g->s,
				       "*** Skipping any contents from this failed directory ***");
		recv_mark_dir_failed(g->rc, path);
	}
	return true;
}

void gen_entry(struct gen *g, int32_t ndx)
{
	struct file_entry *f = g->rc->fl->sorted[ndx];
	const struct ferry_opts *o = g->o;
	char path[MAXPATHLEN_WIRE * 2];

	if (!(f->flags & FE_ACTIVE) || !flist_path(f, path, sizeof path))
		return;
	/* Each entry's directory must itself be in the list, or the sender
	 * is leading us somewhere we did not agree to go. */
	if (f->dirname && f->dirname != g->last_dir) {
		if (!recv_dir_listed(g->rc, f->dirname)) {
			wire_fail(&g->s->err, RERR_PROTOCOL,
				  "ABORTING due to invalid path from sender: %s", path);
			return;
		}
		g->last_dir = f->dirname;
	}
	if (g->rc->cfg.on_list) {
		/* a directory is listed at the start of its own part
		 * (generator.c: recv_generator, is_dir < 0) */
		if (!(g->dir_early && S_ISDIR(f->mode)) && list_wanted(o, f))
			g->rc->cfg.on_list(o, f);
		return;
	}
	if (g->dir_early && S_ISDIR(f->mode)) {
		if (!daemon_excludes(g, f, path))
			gen_dir_early(g, f, path);
		return;
	}
	if (parent_failed(g->rc, f)) {
		/* skipped with its parent: no time is set on it later either
		 * (rsync's FLAG_MISSING_DIR) */
		recv_state_add(g->rc, ndx, FS_FAILED);
		return;
	}
	if (daemon_refuses(g, ndx, f, path))
		return;
	if (f->mode == 0 && o->missing_args == 2) {
		if (!o->dry_run)
			delete_missing_arg(g->rc, &g->dirs, path);
		return;
	}
	/* --no-implied-dirs: an implied dir is left as it is (a symlink
	 * stays one), and a missing one made plain (generator.c:
	 * recv_generator, make_path). */
	bool no_implied = o->relative && o->no_implied_dirs;
	if (no_implied && S_ISDIR(f->mode) && (f->flags & FE_IMPLIED_DIR))
		return;
	if (no_implied && f->dirname && !o->dry_run && !g->rc->cfg.solo_name &&
	    dir_cursor_open(&g->dirs, f->dirname) < 0 && errno == ENOENT &&
	    fs_mkpath_at(g->rc->cfg.rootfd, f->dirname) < 0)
		file_error(g, "recv_generator: mkdir", f->dirname);
	if (!S_ISREG(f->mode) && ignore_existing(g, f, path))
		return;
	if (S_ISDIR(f->mode)) {
		/* every directory in the list is made, whatever our -r/-d say
		 * (a --files-from push sends listed dirs with neither) */
		gen_dir(g, ndx, f, path);
	} else if (S_ISLNK(f->mode)) {
		if (o->links)
			gen_symlink(g, ndx, f, path);
		else if (info_ge(o, INFO_NONREG, 1))
			session_info(g->s, "skipping non-regular file \"%s\"\n", path);
	} else if (S_ISREG(f->mode)) {
		gen_regular(g, ndx, f, path);
	} else if (!o->drop_devices &&
		   (((S_ISCHR(f->mode) || S_ISBLK(f->mode)) && o->devices && g->s->am_root) ||
		    ((S_ISFIFO(f->mode) || S_ISSOCK(f->mode)) && o->specials))) {
		/* --drop-D skips them as --no-D would (generator.c:
		 * recv_generator), leaving any node already there alone */
		gen_device(g, ndx, f, path);
	} else if (info_ge(o, INFO_NONREG, 1)) {
		session_info(g->s, "skipping non-regular file \"%s\"\n", path);
	}
}
