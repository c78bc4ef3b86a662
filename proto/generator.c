/*
 * The generator: walks the sorted file list, brings directories, symlinks
 * and devices into shape locally, and asks the sender for every regular
 * file that is missing or out of date, with the block sums of the version
 * we already have. Mirrors rsync generator.c:generate_files() and
 * recv_generator(), without incremental recursion.
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

#include "proto/msg.h"
#include "proto/tempfile.h"
#include "proto/acls.h"
#include "proto/batch.h"
#include "proto/fakesuper.h"
#include "proto/xattrs.h"
#include "proto/delete.h"
#include "proto/logfmt.h"
#include "proto/fileio.h"
#include "proto/filter.h"
#include "proto/fuzzy.h"
#include "proto/heap_stats.h"
#include "proto/hlink.h"
#include "proto/recvside.h"
#include "proto/sendside.h"
#include "proto/sumcache.h"

#define SUMS_READ_BUF (1024 * 1024)
#define SUMS_EARLY_HEAD (8 * 1024 * 1024)

struct gen {
	struct recv_ctx *rc;
	struct session *s;
	const struct ferry_opts *o;
	struct dir_cursor dirs;
	uint8_t *buf;            /* basis read buffer */
	const char *last_dir;    /* the dirname last checked against the list */
	mode_t dflt_perms;
	struct dir_cursor *alt;  /* one per --*-dest dir (allocated: 4 KiB each) */
	struct fuzzy_cache fuzzy;  /* -y: candidates of the dir below */
	char fuzzy_dir[MAXPATHLEN_WIRE];
	/* incremental recursion */
	bool dir_early;          /* a directory inside its parent's part: only
				  * made, handled in full with its own part */
	size_t done_parts;       /* parts we sent NDX_DONE for */
	size_t settle_pos;       /* first index of that part not yet settled */
};

static void redo_request(struct gen *g, int32_t ndx, bool allow);
static bool unchanged_attrs(struct gen *g, const struct file_entry *f, const struct stat *st);

/* ---- block sums ---- */

static bool write_sum_head(struct session *s, const struct sum_head *h)
{
	return wire_write_i32(&s->out, h->count) && wire_write_i32(&s->out, h->blength) &&
	       (s->protocol < 27 || wire_write_i32(&s->out, h->s2length)) &&
	       wire_write_i32(&s->out, h->remainder);
}

/* --sums-cache: the kept sums of the basis, when it is the file they were
 * taken of; the head is already out. */
static bool send_kept_sums(struct gen *g, const struct sum_head *h, const struct block_sums *k)
{
	struct session *s = g->s;
	size_t s2 = g->rc->sums->s2len;

	for (int32_t i = 0; i < h->count; i++)
		if (!wire_write_i32(&s->out, (int32_t)k->sum1[i]) ||
		    !wire_write(&s->out, k->sum2 + (size_t)i * s2, (size_t)h->s2length))
			return false;
	return true;
}

/* --sums-cache: the sums as the generator computes them, full length,
 * for the receiver to build the new file's from (sumcache.h). */
static bool sums_to_keep(struct gen *g, const struct sum_head *h, struct block_sums *keep)
{
	size_t s2 = g->rc->sums->s2len;

	*keep = (struct block_sums){.blength = h->blength, .count = h->count};
	keep->sum1 = malloc((size_t)h->count * 4 + 1);
	keep->sum2 = malloc((size_t)h->count * s2 + 1);
	if (keep->sum1 && keep->sum2)
		return true;
	free(keep->sum1);
	free(keep->sum2);
	keep->sum1 = NULL;
	keep->sum2 = NULL;
	return false;
}

/* The kept sums for the basis open on fd, if cache_path names it. */
static const struct block_sums *kept_sums(struct gen *g, int fd, const char *cache_path,
					  const struct sum_head *h, int64_t len)
{
	struct stat st;

	if (!cache_path || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size != len)
		return NULL;
	const struct block_sums *k = sumcache_lookup(g->rc->sums, cache_path, &st, h->blength);
	return k && k->count == h->count ? k : NULL;
}

/* Send the sum head and the block sums of the basis open on fd. With
 * --sums-cache, cache_path is the basis's path when it is the destination
 * file itself, and the sums go to the receiver too. */
static bool send_sums(struct gen *g, int fd, int64_t len, bool redo, int32_t ndx,
		      const char *cache_path)
{
	struct session *s = g->s;
	struct sum_head h;
	uint8_t strong[CSUM_MAX_DIGEST];
	int64_t off = 0;
	struct sumcache *sc = redo ? NULL : g->rc->sums;
	struct block_sums keep = {0};

	sum_sizes_sqroot(&h, len, s->protocol, g->o->block_size, csum_len(s->xfer_csum), redo);
	/* -c reads every byte anyway; its sums are then taken afresh, so a
	 * destination block that changed behind the cache's back (its
	 * metadata left as it was) is found and replaced, not trusted. */
	const struct block_sums *kept = sc && !g->o->append && !g->o->checksum
						? kept_sums(g, fd, cache_path, &h, len)
						: NULL;
	/* Kept sums are full length, and sent so they cost the sender less:
	 * strong sums that long decide a match alone (MATCH_STRONG_DECIDES),
	 * so it need not compute a weak sum of every block it reads. */
	if (kept)
		h.s2length = (int32_t)sc->s2len;
	if (!write_sum_head(s, &h))
		return false;
	/* --append: the head says how much we have; no block sums follow
	 * (generator.c: generate_and_send_sums) */
	if (g->o->append && !redo)
		return true;
	if (kept) {
		sumcache_hand_over(sc, ndx, kept);
		return send_kept_sums(g, &h, kept);
	}
	if (sc && !sums_to_keep(g, &h, &keep))
		sc = NULL;
	/* A big file's head goes out at once: a ferry sender then hashes its
	 * own blocks while we read the basis (match_ahead.c). */
	if (len >= SUMS_EARLY_HEAD && !wire_flush(&s->out))
		return false;
	size_t per_read = SUMS_READ_BUF - SUMS_READ_BUF % (size_t)h.blength;
	while (off < len) {
		size_t want = len - off < (int64_t)per_read ? (size_t)(len - off) : per_read;
		ssize_t got = fs_pread_full(fd, g->buf, want, off);
		if (got <= 0)
			break; /* shrank under us: the sums we sent still describe a prefix */
		for (size_t p = 0; p < (size_t)got; p += (size_t)h.blength) {
			size_t n = (size_t)got - p < (size_t)h.blength ? (size_t)got - p
								    : (size_t)h.blength;
			uint32_t sum1 = csum_rolling(g->buf + p, n);
			csum_block(s->xfer_csum, s->seed, s->proper_seed_order, g->buf + p, n,
				   strong);
			if (sc) {
				int64_t k = (off + (int64_t)p) / h.blength;
				keep.sum1[k] = sum1;
				memcpy(keep.sum2 + (size_t)k * sc->s2len, strong, sc->s2len);
			}
			if (!wire_write_i32(&s->out, (int32_t)sum1) ||
			    !wire_write(&s->out, strong, (size_t)h.s2length)) {
				free(keep.sum1);
				free(keep.sum2);
				return false;
			}
		}
		off += got;
		if ((size_t)got < want)
			break;
	}
	/* only the sums of a whole basis describe what the receiver will
	 * rebuild from */
	if (sc && off == len)
		sumcache_hand_over(sc, ndx, &keep);
	free(keep.sum1);
	free(keep.sum2);
	/* A basis that shrank while we read it: pad with sums that match
	 * nothing, so the count we promised holds. */
	int64_t sent_blocks = (off + h.blength - 1) / h.blength;
	memset(strong, 0, sizeof strong);
	for (int64_t i = sent_blocks; i < h.count; i++)
		if (!wire_write_i32(&s->out, 0) || !wire_write(&s->out, strong, (size_t)h.s2length))
			return false;
	return true;
}

static bool send_null_sums(struct session *s)
{
	struct sum_head h = {0, 0, 0, 0};

	return write_sum_head(s, &h);
}

/* ---- comparing what we have with what the sender has ---- */


/* Attribute bits that differ between the entry and what is on disk
 * (generator.c: itemize, the statret >= 0 branch). */
static int attr_change_bits_for(struct gen *g, const struct file_entry *f, const struct stat *st,
				int intent)
{
	const struct ferry_opts *o = g->o;
	int iflags = 0;
	bool keep_time = o->times && !(S_ISDIR(f->mode) && o->omit_dir_times) &&
			 !(S_ISLNK(f->mode) && o->omit_link_times);

	if (S_ISREG(f->mode) && f->size != st->st_size)
		iflags |= ITEM_REPORT_SIZE;
	/* Where times are not kept, rewriting an entry changes its time,
	 * and rsync says so ('T'). */
	if (keep_time ? recv_mtime_differs(o, st, f) : (intent & (ITEM_TRANSFER | ITEM_LOCAL_CHANGE)) != 0)
		iflags |= ITEM_REPORT_TIME;
	if (!S_ISLNK(f->mode)) {
		if (o->perms) {
			if ((st->st_mode & 07777) != (f->mode & 07777))
				iflags |= ITEM_REPORT_PERMS;
		} else if (o->executability &&
			   (!!(st->st_mode & 0111) ^ !!(f->mode & 0111))) {
			iflags |= ITEM_REPORT_PERMS;
		}
	}
	if (o->owner && g->s->am_root && f->uid != st->st_uid)
		iflags |= ITEM_REPORT_OWNER;
	if (o->group && !(f->flags & FE_SKIP_GROUP) && f->gid != st->st_gid)
		iflags |= ITEM_REPORT_GROUP;
	if (o->atimes && !S_ISDIR(f->mode) && !S_ISLNK(f->mode) && st->st_atim.tv_sec != f->atime)
		iflags |= ITEM_REPORT_ATIME;
	return iflags;
}

static int attr_change_bits(struct gen *g, const struct file_entry *f, const struct stat *st)
{
	return attr_change_bits_for(g, f, st, 0);
}

/* -A/-X: the 'a' and 'x' item bits, comparing the entry with what is at
 * dirfd/leaf (dirfd < 0: nothing there yet). */
static int meta_item_bits(struct gen *g, const struct file_entry *f, int dirfd, const char *leaf)
{
	if (!g->o->acls && !g->o->xattrs)
		return 0;
	int bits = xattr_item_bits(g->s, dirfd, leaf, f);
	if (dirfd >= 0)
		bits |= acl_item_bits(g->s, dirfd, leaf, f);
	return bits;
}

/* meta_item_bits() for an entry at its place in the destination. */
static int meta_item_bits_at_dest(struct gen *g, const struct file_entry *f, int iflags)
{
	char path[MAXPATHLEN_WIRE * 2];

	if (!g->o->acls && !g->o->xattrs)
		return 0;
	if ((iflags & ITEM_IS_NEW) || !flist_path(f, path, sizeof path))
		return meta_item_bits(g, f, -1, NULL);
	if (g->rc->solo_name && !S_ISDIR(f->mode))
		return meta_item_bits(g, f, g->rc->rootfd, g->rc->solo_name);
	return meta_item_bits(g, f, g->rc->rootfd, path);
}

/* A report-only record: sent to the sender for protocol >= 29 (which
 * echoes it to our receiver, who prints it in order), printed here before.
 * From 29 on it goes whether or not anyone shows it: the sender counts
 * the created directories, links and specials of --stats from these
 * records (generator.c: itemizing is set for every run then). */
static bool report_item(struct gen *g, int32_t ndx, int iflags, const char *xname)
{
	struct session *s = g->s;
	const struct ferry_opts *o = g->o;
	const struct file_entry *f = g->rc->fl->sorted[ndx];
	iflags |= meta_item_bits_at_dest(g, f, iflags);
	bool want = (iflags & SIGNIFICANT_ITEM_FLAGS & 0xffff) || o->itemize > 1 ||
		    info_ge(o, INFO_NAME, 2) || (xname && *xname);
	/* An xattr request rides on the record, so it goes out regardless. */
	bool xattr_req = xattr_request_follows(s, iflags);

	bool shown = o->itemize || info_ge(o, INFO_NAME, 1) || o->out_format || o->progress ||
		     s->log_fp;
	if (!xattr_req && !want)
		return true;
	if (s->protocol < 29) {
		if (shown)
			recv_log_item(g->rc, g->rc->fl->sorted[ndx], iflags, xname);
		return true;
	}
	if (xname)
		iflags |= ITEM_XNAME_FOLLOWS;
	wire_out_lock(&s->out);
	bool ok = wire_write_ndx(&s->out, ndx) && wire_write_u16(&s->out, (uint16_t)iflags) &&
		  (!xname || wire_write_vstring(&s->out, xname)) && xattr_gen_request(s, f, iflags);
	wire_out_unlock(&s->out);
	return ok;
}

/* Does -vv name what needed nothing ("X is uptodate")? Only without an
 * itemizing format (generator.c: maybe_ATTRS_REPORT). */
static bool says_uptodate(const struct gen *g)
{
	return info_ge(g->o, INFO_NAME, 2) && !g->o->itemize &&
	       !log_format_has(g->o->out_format, 'i');
}

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

/* ---- one entry ---- */

/* rsync's rsyserr() as the generator: "[generator] " pre, the name as
 * full_fname() gives it (made absolute from our working directory through
 * the destination; in a daemon module as given), then post and errno. */
static void file_error_at(struct gen *g, const char *pre, const char *name, const char *post)
{
	int e = errno;
	char full[PATH_MAX + 300], dest[4096];

	/* the receiver's curr_dir is the destination (main.c: get_local_name) */
	msg_full_name(g->s, recv_dest_dir(g->rc, dest, sizeof dest), name, full, sizeof full);
	session_xfer_err(g->s, "[generator] %s%s%s: %s (%d)", pre, full, post, strerror(e), e);
}

/* The same, "WHAT NAME failed". */
static void file_error(struct gen *g, const char *what, const char *name)
{
	char pre[64];

	snprintf(pre, sizeof pre, "%s ", what);
	file_error_at(g, pre, name, " failed");
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

/* The directory of path, or -1 with errno; in a dry run into a destination
 * that does not exist yet, nothing exists. */
static int parent_of(struct gen *g, const char *path, const char **leaf)
{
	if (g->rc->dry_run_missing_root) {
		const char *slash = strrchr(path, '/');
		*leaf = slash ? slash + 1 : path;
		errno = ENOENT;
		return -1;
	}
	return dir_cursor_parent(&g->dirs, path, leaf);
}

/* The directory a single file is written in, or -1 when a dry run did
 * not make it (--mkpath). */
static int solo_dir(struct gen *g)
{
	if (g->rc->dry_run_missing_root) {
		errno = ENOENT;
		return -1;
	}
	return g->rc->rootfd;
}

/* The directory a non-directory entry is written in and its name there:
 * the single-file destination's name when the destination names the file
 * (main.c: a lone source given a new name), else the list path's. */
static int entry_dir(struct gen *g, const char *path, const char **leaf)
{
	if (!g->rc->solo_name)
		return parent_of(g, path, leaf);
	*leaf = g->rc->solo_name;
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
	int fd = fs_open_beneath(g->rc->rootfd, path, O_PATH);
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

/* A new directory that a --compare/copy/link-dest dir holds: rsync
 * itemizes it against that one, not as new (generator.c: try_dests_non,
 * then statret 1) -- the first with the same attributes, else the first. */
static bool alt_dir_stat(struct gen *g, const struct file_entry *f, const char *path,
			 struct stat *ast)
{
	bool found = false;

	for (int i = 0; i < g->rc->nalt; i++) {
		const char *aleaf = ".";
		struct stat cand;
		if (g->rc->alt_fd[i] < 0)
			continue;
		int adir = strcmp(path, ".") == 0 ? g->rc->alt_fd[i]
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
static bool tweaks_dir_perms(const struct gen *g)
{
	return !g->s->am_root && !g->o->dry_run && !g->rc->solo_name;
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
		dirfd = g->rc->rootfd;
		leaf = ".";
	}
	if (g->rc->dry_run_missing_root || dry_missing(g, dirfd)) {
		report_item(g, ndx, ITEM_LOCAL_CHANGE | ITEM_IS_NEW, NULL);
		return;
	}
	if (dirfd < 0) {
		file_error_at(g, "recv_generator: failed to stat ", path, "");
		g->rc->state[ndx] |= FS_FAILED;
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
		g->rc->state[ndx] |= FS_FAILED;
		recv_mark_dir_failed(g->rc, path);
		return;
	}
	if (statret == 0 && !S_ISDIR(st.st_mode)) {
		if (!clear_way(g, dirfd, leaf, path, &st, f->mode)) {
			g->rc->state[ndx] |= FS_FAILED;
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
	bool created_root = (strcmp(path, ".") == 0 && g->rc->root_created) || made_early;
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
		g->s->stats.created_files++;
	}
	if (statret != 0 && !g->o->dry_run) {
		if (mkdirat(dirfd, leaf, (f->mode | 0700) & 07777) < 0 && errno != EEXIST) {
			file_error(g, "recv_generator: mkdir", path);
			session_err_plain(g->s, "*** Skipping any contents from this failed directory ***");
			g->rc->state[ndx] |= FS_FAILED;
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
			g->s->stats.created_files++;
		}
	}
	if (!g->o->dry_run)
		apply_attrs(g->rc, dirfd, leaf, f, &st, false);
	if (made_early && !g->o->perms && !g->o->dry_run &&
	    fchmodat(dirfd, leaf, f->mode & 07777, 0) < 0)
		file_error(g, "chmod", path);
	widen_dir_for_filling(g, dirfd, leaf, f, path);
	if (g->o->delete_mode == DELETE_DURING || g->o->delete_mode == DELETE_DEFAULT) {
		if ((f->flags & FE_CONTENT_DIR) && !(g->rc->state[ndx] & FS_FAILED))
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
	if (mkdirat(dirfd, leaf, (f->mode | 0700) & 0700) == 0)
		f->flags |= FE_DIR_CREATED;
}

/* A missing symlink that a basis dir holds as it is, target and
 * attributes (generator.c: try_dests_non, match level 3). */
static bool alt_symlink_match(struct gen *g, const struct file_entry *f, const char *path)
{
	char cur[MAXPATHLEN_WIRE + 1];

	for (int i = 0; i < g->rc->nalt; i++) {
		const char *aleaf;
		struct stat ast;
		if (g->rc->alt_fd[i] < 0)
			continue;
		int adir = dir_cursor_parent(&g->alt[i], path, &aleaf);
		if (adir < 0 || fstatat(adir, aleaf, &ast, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISLNK(ast.st_mode))
			continue;
		ssize_t n = readlinkat(adir, aleaf, cur, sizeof cur - 1);
		if (n < 0)
			continue;
		cur[n] = '\0';
		if (strcmp(cur, f->link) == 0 && unchanged_attrs(g, f, &ast))
			return true;
	}
	return false;
}

/* A symlink found up to date in a basis dir: shown as rsync shows it, at
 * -ivv or -ii only; true when that was all (--compare-dest), false when it
 * is to be made as a copy of that one, quietly. */
static bool symlink_from_alt(struct gen *g, int32_t ndx, const char *path)
{
	const struct ferry_opts *o = g->o;
	bool compare = o->alt_dest_mode == ALT_DEST_COMPARE;

	if (o->itemize && (info_ge(o, INFO_NAME, 2) || o->itemize > 1))
		report_item(g, ndx, compare ? 0 : ITEM_LOCAL_CHANGE, NULL);
	if (says_uptodate(g))
		session_info(g->s, "%s is uptodate\n", path);
	return compare;
}

static void gen_symlink(struct gen *g, int32_t ndx, struct file_entry *f, const char *path)
{
	const char *leaf;
	struct stat st;
	char cur[MAXPATHLEN_WIRE + 1];
	int dirfd = entry_dir(g, path, &leaf);
	int iflags = ITEM_LOCAL_CHANGE | ITEM_REPORT_CHANGE;

	if (g->o->safe_links && fs_symlink_unsafe(f->link, path)) {
		if (info_ge(g->o, INFO_SYMSAFE, 1))
			session_info(g->s, "ignoring unsafe symlink \"%s\" -> \"%s\"\n", path,
				     f->link);
		return;
	}
	if (dry_missing(g, dirfd)) {
		report_item(g, ndx, iflags | ITEM_IS_NEW, NULL);
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
				if (g->s->munge_symlinks)
					have = strncmp(cur, SYMLINK_MUNGE_PREFIX, plen) == 0 ? cur + plen
											: NULL;
				if (have && strcmp(have, f->link) == 0) {
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
		if (g->rc->nalt && alt_symlink_match(g, f, path)) {
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
	snprintf(post, sizeof post, " -> \"%s\" failed", f->link);
	if (fd < 0) {
		file_error_at(g, "symlink ", path, post);
		return;
	}
	char munged[MAXPATHLEN_WIRE + sizeof SYMLINK_MUNGE_PREFIX];
	const char *target = f->link;
	if (g->s->munge_symlinks) {
		snprintf(munged, sizeof munged, "%s%s", SYMLINK_MUNGE_PREFIX, f->link);
		target = munged;
	}
	/* --fake-super: a regular file holding the target stands for it */
	bool made = g->s->fake_super ? fs_write_all(fd, target, strlen(target)) : true;
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
		g->s->stats.created_files++;
	}
	apply_attrs(g->rc, dirfd, leaf, f, NULL, true);
	recv_report_success(g->rc, ndx, path, true);
}

static void gen_device(struct gen *g, int32_t ndx, struct file_entry *f, const char *path)
{
	const char *leaf;
	struct stat st;
	dev_t rdev = makedev(f->rdev_major, f->rdev_minor);
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
	g->s->stats.created_files++;
	apply_attrs(g->rc, dirfd, leaf, f, NULL, true);
}

/* The quick check (generator.c: quick_check_ok for regular files). */
static bool regular_up_to_date(struct gen *g, const struct file_entry *f, int dirfd,
			       const char *leaf, const struct stat *st)
{
	const struct ferry_opts *o = g->o;

	if (st->st_size != f->size)
		return false;
	if (o->checksum) {
		uint8_t sum[CSUM_MAX_DIGEST];
		struct csum_ctx c;
		int fd = openat(dirfd, leaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || !f->sum) {
			if (fd >= 0)
				close(fd);
			return false;
		}
		csum_file_init(&c, g->s->flist_csum, 0);
		int64_t off = 0;
		ssize_t got;
		while ((got = fs_pread_full(fd, g->buf, SUMS_READ_BUF, off)) > 0) {
			csum_file_update(&c, g->buf, (size_t)got);
			off += got;
		}
		close(fd);
		csum_file_final(&c, sum);
		return memcmp(sum, f->sum, csum_len(g->s->flist_csum)) == 0;
	}
	if (o->size_only)
		return true;
	if (o->ignore_times)
		return false;
	return !recv_mtime_differs(o, st, f);
}

/* Where the basis of a requested file comes from: the destination itself
 * or, for a missing file, a --*-dest directory. */
struct basis {
	int dirfd;
	const char *leaf;
	const struct stat *st;  /* NULL: no basis */
	int alt;                /* index of the --*-dest dir, FNAMECMP_PARTIAL_DIR,
				 * FNAMECMP_FUZZY + level, or -1 for the destination itself */
	const char *xname;      /* -y: the basis' name in the file's dir */
};

/* --write-devices: an existing device takes the file's data in place
 * (generator.c: recv_generator, the write_devices && FT_DEVICE case). */
static bool writable_device(const struct ferry_opts *o, const struct stat *st)
{
	return o->write_devices && (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode));
}

/* A device's st_size is 0: its size is where seeking to the end lands. */
static void device_size(int dirfd, const char *leaf, struct stat *st)
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
	if (fd >= 0 && b->alt >= 0)
		iflags |= ITEM_BASIS_TYPE_FOLLOWS;
	/* a fuzzy basis is named whether or not sums follow (generator.c:
	 * recv_generator) */
	if (b->xname)
		iflags |= ITEM_BASIS_TYPE_FOLLOWS | ITEM_XNAME_FOLLOWS;
	const struct file_entry *f = g->rc->fl->sorted[ndx];
	bool at_dest = b->st && (b->alt < 0 || b->alt == FNAMECMP_BACKUP) && !(iflags & ITEM_IS_NEW);
	iflags |= meta_item_bits(g, f, at_dest ? b->dirfd : -1, at_dest ? b->leaf : NULL);
	g->rc->state[ndx] |= FS_REQUESTED;
	wire_out_lock(&s->out);
	ok = wire_write_ndx(&s->out, ndx) &&
	     (s->protocol < 29 || wire_write_u16(&s->out, (uint16_t)(iflags & 0xffff))) &&
	     (!(iflags & ITEM_BASIS_TYPE_FOLLOWS) || wire_write_u8(&s->out, (uint8_t)b->alt)) &&
	     (!(iflags & ITEM_XNAME_FOLLOWS) || wire_write_vstring(&s->out, b->xname)) &&
	     xattr_gen_request(s, f, iflags);
	/* the kept sums are by the destination's own path */
	char cpath[MAXPATHLEN_WIRE * 2];
	const char *cache_path = g->rc->sums && b->alt < 0 && !b->xname &&
				 flist_path(f, cpath, sizeof cpath) ? cpath : NULL;
	if (ok && batch_do_xfers(g->o))
		ok = fd >= 0 ? send_sums(g, fd, b->st->st_size, redo, ndx, cache_path)
			     : send_null_sums(s);
	wire_out_unlock(&s->out);
	if (fd >= 0)
		close(fd);
	return ok;
}

static bool request_file(struct gen *g, int32_t ndx, const struct file_entry *f, int dirfd,
			 const char *leaf, const struct stat *st, int iflags, bool redo)
{
	struct basis b = {.dirfd = dirfd, .leaf = leaf, .st = st, .alt = -1};

	(void)f;
	return request_from(g, ndx, &b, iflags, redo);
}

/* --partial-dir: a partial file from an earlier try is the best basis
 * (generator.c: partialptr). Fills b (dirfd owned by *pfd) when there is
 * one. */
static bool partial_basis(struct gen *g, const char *path, int *pfd, struct basis *b,
			  struct stat *st)
{
	*pfd = -1;
	if (!g->o->partial_dir)
		return false;
	int fd = partial_dir_open(g->rc, path, false);
	const char *leaf = partial_leaf(g->rc, path);
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

/* Does the --link-dest copy carry the attributes we preserve, so that a
 * hard link to it is a correct copy? (generator.c: unchanged_attrs) */
static bool alt_attrs_match(struct gen *g, const struct file_entry *f, const struct stat *st)
{
	const struct ferry_opts *o = g->o;

	return (!o->perms || (st->st_mode & 07777) == (f->mode & 07777)) &&
	       (!o->owner || f->uid == (int64_t)st->st_uid) &&
	       (!o->group || f->gid == (int64_t)st->st_gid);
}

/* A --link-dest file linked in must carry the entry's xattrs too
 * (generator.c: unchanged_attrs with xattr_diff). */
static bool alt_xattrs_match(struct gen *g, const struct file_entry *f, int adir,
			     const char *aleaf)
{
	return xattr_same(g->s, adir, aleaf, f);
}

/* Does what is at the destination carry the entry's preserved times,
 * permissions (not a symlink's) and ownership? (generator.c:
 * unchanged_attrs) */
static bool unchanged_attrs(struct gen *g, const struct file_entry *f, const struct stat *st)
{
	const struct ferry_opts *o = g->o;

	if (o->times && !(S_ISLNK(f->mode) && o->omit_link_times) &&
	    recv_mtime_differs(o, st, f))
		return false;
	if (S_ISLNK(f->mode))
		return (!o->owner || f->uid == (int64_t)st->st_uid) &&
		       (!o->group || f->gid == (int64_t)st->st_gid);
	return alt_attrs_match(g, f, st);
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

/* The regular file at path in --*-dest dir i: its directory fd (from
 * that dir's cursor), name and stat; -1 when it has none. */
static int alt_regular(struct gen *g, int i, const char *path, const char **aleaf,
		       struct stat *ast)
{
	if (g->rc->alt_fd[i] < 0)
		return -1;
	int adir = dir_cursor_parent(&g->alt[i], path, aleaf);
	if (adir < 0 || fstatat(adir, *aleaf, ast, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISREG(ast->st_mode))
		return -1;
	return adir;
}

/* What try_alt_dests() made of a missing file. */
enum alt_outcome {
	ALT_NONE,     /* not settled: b names the best basis found, if any */
	ALT_IN_DEST,  /* copied or linked into the destination */
	ALT_COMPARED, /* a --compare-dest dir has it: nothing is written */
};

/* A missing destination file: look for it in the --compare-dest,
 * --copy-dest or --link-dest dirs (generator.c: try_dests_reg). */
static enum alt_outcome try_alt_dests(struct gen *g, int32_t ndx, struct file_entry *f,
				      const char *path, int dirfd, const char *leaf,
				      struct basis *b, struct stat *bst)
{
	const struct ferry_opts *o = g->o;

	for (int i = 0; i < g->rc->nalt; i++) {
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
		if (o->alt_dest_mode != ALT_DEST_COMPARE)
			g->s->stats.created_files++, g->s->stats.created_reg++;
		/* a link shows as 'h' (generator.c: itemize with
		 * ITEM_XNAME_FOLLOWS and an empty name) */
		bool linked = o->alt_dest_mode == ALT_DEST_LINK && alt_attrs_match(g, f, &ast) &&
			      alt_xattrs_match(g, f, adir, aleaf);
		if (o->itemize > 1 || info_ge(o, INFO_NAME, 2))
			report_item(g, ndx, o->alt_dest_mode == ALT_DEST_COMPARE ? 0 : ITEM_LOCAL_CHANGE,
				    linked ? "" : NULL);
		if (says_uptodate(g) && unchanged_attrs(g, f, &ast))
			session_info(g->s, "%s is uptodate\n", path);
		g->rc->state[ndx] |= FS_DONE;
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
static bool replace_by_alt(struct gen *g, int32_t ndx, struct file_entry *f, const char *path,
			   int dirfd, const char *leaf, const struct stat *st)
{
	const struct ferry_opts *o = g->o;

	if (!g->rc->nalt || o->alt_dest_mode == ALT_DEST_COPY)
		return false;
	for (int i = 0; i < g->rc->nalt; i++) {
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
		g->rc->state[ndx] |= FS_DONE;
		recv_report_success(g->rc, ndx, path, false);
		return true;
	}
	return false;
}

/* -y: the candidate lists are per directory; drop them when the
 * generator moves on (generator.c: recv_generator, need_fuzzy_dirlist). */
static void fuzzy_enter_dir(struct gen *g, const struct file_entry *f)
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
	if (g->rc->alt_fd[level - 1] < 0)
		return -1;
	return dir_cursor_open(&g->alt[level - 1], g->fuzzy_dir);
}

/* -y/-yy: a missing file's basis from a similar file beside it
 * (generator.c: recv_generator's fuzzy_basis branch, find_fuzzy). */
static bool fuzzy_basis(struct gen *g, const struct file_entry *f, const char *path, int dirfd,
			struct basis *b, struct stat *bst)
{
	int levels = g->o->fuzzy > 1 ? g->rc->nalt + 1 : 1;
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
	const struct fuzzy_cand *c = fuzzy_find(&g->fuzzy, f->basename, f->size, f->mtime,
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

/* Make f (at ndx) a hard link to the group's member at `target`, and say
 * so as rsync does (hlink.c: maybe_hard_link). */
/* Settle an entry the generator handled itself (a hard link), under the
 * lock the part accounting reads it with. */
static void set_state(struct recv_ctx *rc, int32_t ndx, uint8_t bits)
{
	pthread_mutex_lock(&rc->lock);
	rc->state[ndx] |= bits;
	pthread_cond_broadcast(&rc->cond);
	pthread_mutex_unlock(&rc->lock);
}

/* What a missing hard link finds of itself in the basis dirs (hlink.c:
 * hard_link_check, statret 1): it is then itemized against that file, not
 * as new. */
enum hlink_alt {
	HL_ALT_NONE,
	HL_ALT_MATCH,  /* an up-to-date copy (*ast) */
	HL_ALT_TARGET, /* a --link-dest file that is the group's target itself */
};

static enum hlink_alt hlink_alt_match(struct gen *g, const struct file_entry *f,
				      const char *path, const struct stat *tst, struct stat *ast)
{
	enum hlink_alt found = HL_ALT_NONE;

	for (int i = 0; i < g->rc->nalt; i++) {
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
	dir_cursor_init(&tc, rc->rootfd);
	tc.follow = g->dirs.follow;
	tc.beneath = g->dirs.beneath;
	int tdirfd = dir_cursor_parent(&tc, tpath, &tleaf);
	bool have_target = tdirfd >= 0 && fstatat(tdirfd, tleaf, &tst, AT_SYMLINK_NOFOLLOW) == 0;
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
	enum hlink_alt alt = !exists && g->rc->nalt ? hlink_alt_match(g, f, path, &tst, &ast)
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
static void link_waiting(struct gen *g, int32_t target)
{
	struct flist *fl = g->rc->fl;

	hlink_set_target(g->rc, target, fl->sorted[target], true);
	for (int32_t m = hlink_take_waiting(g->rc, fl->sorted[target]); m >= 0;) {
		int32_t next = fl->sorted[m]->hl_next;
		make_hard_link(g, m, fl->sorted[m], target);
		m = next;
	}
}

/* The receiver's state of a group's target, read under the lock it is
 * written with. */
static uint8_t target_state(struct gen *g, int32_t target)
{
	pthread_mutex_lock(&g->rc->lock);
	uint8_t st = g->rc->state[target];
	pthread_mutex_unlock(&g->rc->lock);
	return st;
}

static bool target_arrived(struct gen *g, int32_t target)
{
	return (target_state(g, target) & (FS_DONE | FS_FAILED)) == FS_DONE;
}

/* A member of a group that has its target already: linked now when the
 * target is in place, else it waits for it (hlink.c: hard_link_check).
 * False: no target yet, f is handled as a file of its own. */
static bool hlink_joined(struct gen *g, int32_t ndx, struct file_entry *f)
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

	if (g->rc->solo_name) {
		dirfd = solo_dir(g);
		leaf = g->rc->solo_name;
	} else {
		dirfd = parent_of(g, path, &leaf);
	}
	fuzzy_enter_dir(g, f);
	if (dry_missing(g, dirfd)) {
		if (o->existing)
			return REG_SKIPPED;
		if (defer_missing)
			return REG_DEFERRED;
		request_file(g, ndx, f, -1, leaf, NULL, ITEM_IS_NEW, false);
		return REG_REQUESTED;
	}
	if (dirfd < 0) {
		file_error_at(g, "recv_generator: failed to stat ", path, "");
		return REG_SKIPPED;
	}
	int statret = dest_lstat(g, dirfd, leaf, path, &st);
	if (statret < 0) {
		if (o->existing) {
			if (info_ge(o, INFO_SKIP, 1))
				session_info(g->s, "not creating new file \"%s\"\n", path);
			return REG_SKIPPED;
		}
		if (!o->perms)
			f->mode = dest_mode(g, f->mode, 0, false, dirfd);
		struct basis b = {.dirfd = dirfd, .leaf = leaf, .st = NULL, .alt = -1};
		struct stat bst;
		int pfd;
		if (partial_basis(g, path, &pfd, &b, &bst)) {
			request_from(g, ndx, &b, ITEM_IS_NEW, false);
			close(pfd);
			return REG_REQUESTED;
		}
		/* a hard link waits for its group only after the basis dirs had
		 * their say (generator.c: try_dests_reg before the
		 * F_HLINK_NOT_LAST deferral) */
		enum alt_outcome alt = g->rc->nalt ? try_alt_dests(g, ndx, f, path, dirfd, leaf,
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
		if (!b.st && o->fuzzy)
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
	if (o->update && (st.st_mtim.tv_sec > f->mtime ||
			  (st.st_mtim.tv_sec == f->mtime &&
			   (uint32_t)st.st_mtim.tv_nsec > f->mtime_nsec))) {
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
		g->rc->state[ndx] |= FS_DONE;
		recv_report_success(g->rc, ndx, path, false);
		if (o->partial_dir && !o->dry_run)
			partial_remove(g->rc, path); /* a leftover of an older try */
		return REG_IN_PLACE;
	}
	if (o->append && st.st_size >= f->size)
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

	if ((o->max_size >= 0 && f->size > o->max_size) ||
	    (o->min_size >= 0 && f->size < o->min_size)) {
		if (info_ge(o, INFO_SKIP, 1))
			session_info(g->s, "%s is %s\n", path,
				     f->size > o->max_size && o->max_size >= 0 ? "over max-size"
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
	int dirfd = g->rc->solo_name ? solo_dir(g) : parent_of(g, path, &leaf);
	if (g->rc->solo_name)
		leaf = g->rc->solo_name;
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
			  (size_t)n != strlen(f->link ? f->link : "") || memcmp(cur, f->link, (size_t)n)))
			why = " (file change)";
		else if ((S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) &&
			 st.st_rdev != makedev(f->rdev_major, f->rdev_minor))
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
	return recv_daemon_excludes(g->rc, path, S_ISDIR(f->mode));
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
	g->rc->state[ndx] |= FS_FAILED;
	if (is_dir) {
		session_xfer_err_plain(g->s,
				       "*** Skipping any contents from this failed directory ***");
		recv_mark_dir_failed(g->rc, path);
	}
	return true;
}

static void gen_entry(struct gen *g, int32_t ndx)
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
	if (g->dir_early && S_ISDIR(f->mode)) {
		if (!daemon_excludes(g, f, path))
			gen_dir_early(g, f, path);
		return;
	}
	if (parent_failed(g->rc, f)) {
		/* skipped with its parent: no time is set on it later either
		 * (rsync's FLAG_MISSING_DIR) */
		g->rc->state[ndx] |= FS_FAILED;
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
	if (no_implied && f->dirname && !o->dry_run && !g->rc->solo_name &&
	    dir_cursor_open(&g->dirs, f->dirname) < 0 && errno == ENOENT &&
	    fs_mkpath_at(g->rc->rootfd, f->dirname) < 0)
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

/* ---- phases ---- */

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

static void redo_request(struct gen *g, int32_t ndx, bool allow)
{
	struct file_entry *f = g->rc->fl->sorted[ndx];
	char path[MAXPATHLEN_WIRE * 2];
	const char *leaf;
	struct stat st;
	int dirfd;

	if (!allow || !flist_path(f, path, sizeof path)) {
		g->rc->state[ndx] |= FS_FAILED;
		return;
	}
	if (g->rc->solo_name) {
		dirfd = solo_dir(g);
		leaf = g->rc->solo_name;
	} else {
		dirfd = parent_of(g, path, &leaf);
	}
	if (dirfd < 0) {
		g->rc->state[ndx] |= FS_FAILED;
		return;
	}
	bool have = fstatat(dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    (S_ISREG(st.st_mode) || writable_device(g->o, &st));
	if (have && writable_device(g->o, &st))
		device_size(dirfd, leaf, &st);
	request_file(g, ndx, f, dirfd, leaf, have ? &st : NULL,
		     have ? attr_change_bits(g, f, &st) : ITEM_IS_NEW, true);
}

/* Is the entry below a directory we failed to create? Entries are sorted
 * so that a directory precedes its contents; we keep the failed ones in
 * the state array and look the parent up by name. */
bool parent_failed(struct recv_ctx *rc, const struct file_entry *f)
{
	if (!f->dirname || !rc->failed_dirs)
		return false;
	for (size_t i = 0; i < rc->nfailed_dirs; i++) {
		size_t n = strlen(rc->failed_dirs[i]);
		if (strncmp(f->dirname, rc->failed_dirs[i], n) == 0 &&
		    (f->dirname[n] == '\0' || f->dirname[n] == '/'))
			return true;
	}
	return false;
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
	int dirfd = strcmp(path, ".") == 0 ? g->rc->rootfd : parent_of(g, path, &leaf);
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
	if (dirfd < 0 || fs_set_mtime(dirfd, leaf, f->mtime, f->mtime_nsec) < 0)
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
		for (size_t k = 0; k < fl->nparts; k++) {
			size_t gap = (size_t)fl->parts[k].ndx_start - 1;
			touch_up_dir(g, flist_part_dir(fl, k), g->rc->state[gap]);
		}
		return;
	}
	for (size_t i = fl->low; i <= fl->high && i < fl->count; i++)
		touch_up_dir(g, fl->sorted[i], g->rc->state[i]);
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

/* ---- incremental recursion ---- */

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
		while (g->settle_pos < end && settled(rc->state[g->settle_pos]))
			g->settle_pos++;
		if (g->settle_pos < end)
			break;
		done++;
	}
	return done - g->done_parts;
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
			pthread_cond_wait(&rc->cond, &rc->lock);
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
	}
	g->dir_early = false;
	if (g->o->read_batch)
		batch_note_decided(rc, (size_t)p->ndx_start + (size_t)p->count);
	return !wire_error_code(&g->s->err);
}

/* -H: rsync's generator keeps this many files of later parts read (and
 * their hard links matched) before it goes on, so the last member of a
 * group is known across parts (generator.c: MIN_FILECNT_LOOKAHEAD/2). */
#define HLINK_LOOKAHEAD 500

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

	if (g->o->delete_mode == DELETE_BEFORE && !rc->list_only)
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
		for (size_t i = fl->low; i <= fl->high && i < fl->count && !rc->list_only; i++) {
			if (wire_error_code(&s->err))
				return false;
			gen_entry(g, (int32_t)i);
			link_arrived_targets(g);
		}
		batch_note_listed(rc);
		/* A: end of phase 0 */
		if (!send_done(g) || !wire_flush(&s->out))
			return false;
	}
	if (!wait_phase(g, 1, true))
		return false;
	if (!rc->list_only)
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
	if (late_delete && !rc->list_only)
		delete_pass(rc, &g->dirs);
	/* before the last deletion stats, so that a sending client still
	 * reads it (generator.c: generate_files) */
	if (rc->skipped_deletes && g->o->max_delete >= 0) {
		session_warn(s, "Deletions stopped due to --max-delete limit (%ld skipped)\n",
			     rc->skipped_deletes);
		s->io_error |= IOERR_DEL_LIMIT;
	}
	if (s->protocol >= 31 && late_delete && (!delete_stats(g) || !send_done(g)))
		return false;
	if (!wire_flush(&s->out))
		return false;
	if (!rc->list_only)
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
	dir_cursor_init(&g.dirs, rc->rootfd);
	g.dirs.follow = recv_follows_dest_links(g.o);
	/* -K follows a destination symlink only while it stays beneath the
	 * destination, for every receiver (rsync 3.5), but anywhere in a
	 * module with "insecure links" (rsync 3.2.7's way, which it restores) */
	g.dirs.beneath = !(rc->confined && g.o->insecure_links);
	g.alt = rc->nalt ? calloc((size_t)rc->nalt, sizeof *g.alt) : NULL;
	for (int i = 0; g.alt && i < rc->nalt; i++)
		dir_cursor_init(&g.alt[i], rc->alt_fd[i]);
	g.buf = malloc(SUMS_READ_BUF);
	if (!g.buf || (rc->nalt && !g.alt)) {
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
	for (int i = 0; g.alt && i < rc->nalt; i++)
		dir_cursor_close(&g.alt[i]);
	free(g.alt);
	return NULL;
}
