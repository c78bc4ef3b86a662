/*
 * The generator's files share this private header: struct gen (the
 * generator thread's state) and what one of its files calls in another.
 * Only proto/recv/generator.c and proto/gen_*.c include it.
 */
#ifndef FERRY_GEN_H
#define FERRY_GEN_H

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
	size_t settle_top;       /* and above this all of it has settled */
	size_t settle_top_part;  /* the part settle_top is of, plus one (0: none) */
};

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

/* What try_alt_dests() made of a missing file. */
enum alt_outcome {
	ALT_NONE,     /* not settled: b names the best basis found, if any */
	ALT_IN_DEST,  /* copied or linked into the destination */
	ALT_COMPARED, /* a --compare-dest dir has it: nothing is written */
};

/* What a missing hard link finds of itself in the basis dirs (hlink.c:
 * hard_link_check, statret 1): it is then itemized against that file, not
 * as new. */
enum hlink_alt {
	HL_ALT_NONE,
	HL_ALT_MATCH,  /* an up-to-date copy (*ast) */
	HL_ALT_TARGET, /* a --link-dest file that is the group's target itself */
};

/* -H: rsync's generator keeps this many files of later parts read (and
 * their hard links matched) before it goes on, so the last member of a
 * group is known across parts (generator.c: MIN_FILECNT_LOOKAHEAD/2). */
#define HLINK_LOOKAHEAD 500

/* ---- gen_item.c: comparing what we have with what the sender has, and reporting it ---- */

/* Attribute bits that differ between the entry and what is on disk
 * (generator.c: itemize, the statret >= 0 branch). */
int attr_change_bits_for(struct gen *g, const struct file_entry *f, const struct stat *st,
			 int intent);
/* attr_change_bits_for with the intent the entry implies. */
int attr_change_bits(struct gen *g, const struct file_entry *f, const struct stat *st);
/* -A/-X: the 'a' and 'x' item bits, comparing the entry with what is at
 * dirfd/leaf (dirfd < 0: nothing there yet). */
int meta_item_bits(struct gen *g, const struct file_entry *f, int dirfd, const char *leaf);
/* A report-only record: sent to the sender for protocol >= 29 (which
 * echoes it to our receiver, who prints it in order), printed here before.
 * From 29 on it goes whether or not anyone shows it: the sender counts
 * the created directories, links and specials of --stats from these
 * records (generator.c: itemizing is set for every run then). */
bool report_item(struct gen *g, int32_t ndx, int iflags, const char *xname);
/* Does -vv name what needed nothing ("X is uptodate")? Only without an
 * itemizing format (generator.c: maybe_ATTRS_REPORT). */
bool says_uptodate(const struct gen *g);
/* rsync's rsyserr() as the generator: "[generator] " pre, the name as
 * full_fname() gives it (made absolute from our working directory through
 * the destination; in a daemon module as given), then post and errno. */
void file_error_at(struct gen *g, const char *pre, const char *name, const char *post);
/* The same, "WHAT NAME failed". */
void file_error(struct gen *g, const char *what, const char *name);
/* The directory of path, or -1 with errno; in a dry run into a destination
 * that does not exist yet, nothing exists. */
int parent_of(struct gen *g, const char *path, const char **leaf);
/* The quick check (generator.c: quick_check_ok for regular files). */
bool regular_up_to_date(struct gen *g, const struct file_entry *f, int dirfd,
			const char *leaf, const struct stat *st);
/* Does the --link-dest copy carry the attributes we preserve, so that a
 * hard link to it is a correct copy? (generator.c: unchanged_attrs) */
bool alt_attrs_match(struct gen *g, const struct file_entry *f, const struct stat *st);
/* A --link-dest file linked in must carry the entry's xattrs too
 * (generator.c: unchanged_attrs with xattr_diff). */
bool alt_xattrs_match(struct gen *g, const struct file_entry *f, int adir,
		      const char *aleaf);
/* Does what is at the destination carry the entry's preserved times,
 * permissions (not a symlink's) and ownership? (generator.c:
 * unchanged_attrs) */
bool unchanged_attrs(struct gen *g, const struct file_entry *f, const struct stat *st);

/* ---- gen_sums.c: the block sums of a basis ---- */

/* Send the sum head and the block sums of the basis open on fd. With
 * --sums-cache, cache_path is the basis's path when it is the destination
 * file itself, and the sums go to the receiver too. */
bool send_sums(struct gen *g, int fd, int64_t len, bool redo, int32_t ndx,
	       const char *cache_path);
/* An empty sum head: the whole file is asked for (no basis). */
bool send_null_sums(struct session *s);

/* ---- gen_basis.c: choosing a basis (--*-dest dirs, --partial-dir, -y) ---- */

/* A new directory that a --compare/copy/link-dest dir holds: rsync
 * itemizes it against that one, not as new (generator.c: try_dests_non,
 * then statret 1) -- the first with the same attributes, else the first. */
bool alt_dir_stat(struct gen *g, const struct file_entry *f, const char *path,
		  struct stat *ast);
/* A missing symlink that a basis dir holds as it is, target and
 * attributes (generator.c: try_dests_non, match level 3). */
bool alt_symlink_match(struct gen *g, const struct file_entry *f, const char *path);
/* A symlink found up to date in a basis dir: shown as rsync shows it, at
 * -ivv or -ii only; true when that was all (--compare-dest), false when it
 * is to be made as a copy of that one, quietly. */
bool symlink_from_alt(struct gen *g, int32_t ndx, const char *path);
/* --partial-dir: a partial file from an earlier try is the best basis
 * (generator.c: partialptr). Fills b (dirfd owned by *pfd) when there is
 * one. */
bool partial_basis(struct gen *g, const char *path, int *pfd, struct basis *b,
		   struct stat *st);
/* The regular file at path in --*-dest dir i: its directory fd (from
 * that dir's cursor), name and stat; -1 when it has none. */
int alt_regular(struct gen *g, int i, const char *path, const char **aleaf,
		struct stat *ast);
/* A missing destination file: look for it in the --compare-dest,
 * --copy-dest or --link-dest dirs (generator.c: try_dests_reg). */
enum alt_outcome try_alt_dests(struct gen *g, int32_t ndx, struct file_entry *f,
			       const char *path, int dirfd, const char *leaf,
			       struct basis *b, struct stat *bst);
/* An existing destination file that a --compare-dest or --link-dest dir
 * holds identically (the quick check and the attributes): rsync removes it,
 * or replaces it by a link to that one, so that the destination holds only
 * what differs (generator.c: try_dests_reg with find_exact_for_existing).
 * True when that settled the file. */
bool replace_by_alt(struct gen *g, int32_t ndx, struct file_entry *f, const char *path,
		    int dirfd, const char *leaf, const struct stat *st);
/* -y: the candidate lists are per directory; drop them when the
 * generator moves on (generator.c: recv_generator, need_fuzzy_dirlist). */
void fuzzy_enter_dir(struct gen *g, const struct file_entry *f);
/* -y/-yy: a missing file's basis from a similar file beside it
 * (generator.c: recv_generator's fuzzy_basis branch, find_fuzzy). */
bool fuzzy_basis(struct gen *g, const struct file_entry *f, const char *path, int dirfd,
		 struct basis *b, struct stat *bst);

/* ---- gen_hlink.c: hard links ---- */

/* Link the members waiting for the group's target, which is in place. */
void link_waiting(struct gen *g, int32_t target);
/* The receiver's state of a group's target, read under the lock it is
 * written with. */
uint8_t target_state(struct gen *g, int32_t target);
/* (see its definition) */
bool target_arrived(struct gen *g, int32_t target);
/* A member of a group that has its target already: linked now when the
 * target is in place, else it waits for it (hlink.c: hard_link_check).
 * False: no target yet, f is handled as a file of its own. */
bool hlink_joined(struct gen *g, int32_t ndx, struct file_entry *f);

/* ---- gen_entry.c: one entry, per type (directories, symlinks, devices, regular files) ---- */

/* The directory a single file is written in, or -1 when a dry run did
 * not make it (--mkpath). */
int solo_dir(struct gen *g);
/* A receiver that is not root cannot write into a directory whose mode
 * lacks owner rwx, so it opens the directory up while it fills it;
 * touch_up_dir() puts the mode back (generator.c: dir_tweaking). */
bool tweaks_dir_perms(const struct gen *g);
/* --write-devices: an existing device takes the file's data in place
 * (generator.c: recv_generator, the write_devices && FT_DEVICE case). */
bool writable_device(const struct ferry_opts *o, const struct stat *st);
/* A device's st_size is 0: its size is where seeking to the end lands. */
void device_size(int dirfd, const char *leaf, struct stat *st);
/* (see its definition) */
bool request_file(struct gen *g, int32_t ndx, const struct file_entry *f, int dirfd,
		  const char *leaf, const struct stat *st, int iflags, bool redo);
/* (see its definition) */
void gen_entry(struct gen *g, int32_t ndx);

/* ---- generator.c: phases, redo, directory touch-ups and incremental recursion ---- */

/* (see its definition) */
void redo_request(struct gen *g, int32_t ndx, bool allow);

#endif
