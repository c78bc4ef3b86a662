/*
 * The file list: entries as rsync sends them, decoded, sorted and cleaned
 * exactly as rsync does, so that file indexes mean the same on both sides.
 */
#ifndef FERRY_FLIST_H
#define FERRY_FLIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct session;
struct wire_in;

/* Transmission flags of an entry (rsync.h: XMIT_*). */
#define XMIT_TOP_DIR (1u << 0)
#define XMIT_SAME_MODE (1u << 1)
#define XMIT_EXTENDED_FLAGS (1u << 2)
#define XMIT_SAME_RDEV_PRE28 XMIT_EXTENDED_FLAGS
#define XMIT_SAME_UID (1u << 3)
#define XMIT_SAME_GID (1u << 4)
#define XMIT_SAME_NAME (1u << 5)
#define XMIT_LONG_NAME (1u << 6)
#define XMIT_SAME_TIME (1u << 7)
#define XMIT_SAME_RDEV_MAJOR (1u << 8)
#define XMIT_NO_CONTENT_DIR (1u << 8)
#define XMIT_HLINKED (1u << 9)
#define XMIT_SAME_DEV_PRE30 (1u << 10)
#define XMIT_USER_NAME_FOLLOWS (1u << 10)
#define XMIT_RDEV_MINOR_8_PRE30 (1u << 11)
#define XMIT_GROUP_NAME_FOLLOWS (1u << 11)
#define XMIT_HLINK_FIRST (1u << 12)
#define XMIT_IO_ERROR_ENDLIST (1u << 12)
#define XMIT_MOD_NSEC (1u << 13)
#define XMIT_SAME_ATIME (1u << 14)
#define XMIT_CRTIME_EQ_MTIME (1u << 17)

/* io_error bits (rsync.h: IOERR_*). */
#define IOERR_GENERAL 1
#define IOERR_VANISHED 2
#define IOERR_DEL_LIMIT 4
#define IOERR_VALID_MASK 7

/* Entry flags we keep (a subset of rsync's FLAG_*). */
#define FE_ACTIVE 0x0001       /* not a removed duplicate */
#define FE_TOP_DIR 0x0002      /* a transfer root directory */
#define FE_CONTENT_DIR 0x0004  /* its contents are part of the transfer */
#define FE_IMPLIED_DIR 0x0008  /* an implied parent (-R) */
#define FE_HLINKED 0x0010      /* member of a hard-link group */
#define FE_HLINK_FIRST 0x0020  /* leader of its group (first sent) */
#define FE_SKIP_GROUP 0x0100  /* not root and not a member: leave the group alone */
#define FE_DIR_CREATED 0x0400 /* made ahead of its own part: report it as new */
#define FE_HLINK_LAST 0x0800  /* last of its hard-link group in its part */

#define MAXPATHLEN_WIRE 4096

/* Which optional fields an entry carries (FE_X_* in its flags): they
 * are stored after its base name, in the order of fe_field, only where
 * an option and the entry's type need them, as rsync keeps its "extras".
 * A size of 4 GiB - 1 or more is there too (size32 says so). */
#define FE_X_PTR 0x0040   /* symlink target or --checksum sum (by type) */
#define FE_X_NSEC 0x0080  /* mtime nanoseconds: not 0 (the sender: always) */
#define FE_X_ATIME 0x1000 /* -U */
#define FE_X_RDEV 0x2000  /* devices and specials */
#define FE_X_HLINK 0x4000 /* -H: hard-link group and the next waiting member */
#define FE_X_META 0x8000  /* -A / -X: ACL, default ACL and xattr indexes */
#define FE_X_IDS 0x0200   /* -o / -g: owner and group ids */
#define FE_X_MASK \
	(FE_X_PTR | FE_X_NSEC | FE_X_ATIME | FE_X_RDEV | FE_X_HLINK | FE_X_META | FE_X_IDS)
#define FE_SIZE_BIG UINT32_MAX /* size32: the size follows the name */

/* A million of these make a big list: 32 bytes, with the base name and
 * the optional fields (FE_X_*) packed after it in the names arena. Read
 * the size and the optional fields with the fe_* accessors below. */
struct file_entry {
	const char *dirname;   /* shared between entries of one dir; NULL at top */
	const char *basename;  /* its NUL is followed by the FE_X_* fields */
	int64_t mtime;
	uint32_t size32;       /* the size, or FE_SIZE_BIG: see fe_size */
	uint16_t mode;         /* st_mode's type and permission bits */
	uint16_t flags;        /* FE_* and FE_X_* */
};

/* The optional fields unpacked: what a decoder or the list builder
 * gathers before the entry's name is placed (fe_place). */
struct fe_extras {
	uint16_t has;          /* FE_X_* */
	int64_t size;          /* placed in size32, or after the name */
	uint32_t mtime_nsec;
	union {                /* FE_X_PTR, by type */
		const char *link; /* symlink target */
		uint8_t *sum;     /* regular file: --checksum sum */
	};
	int64_t atime;
	uint32_t rdev_major, rdev_minor;
	int32_t hlink_group;   /* group id (leader's arrival index) */
	int32_t hl_next;       /* next member waiting for the same link (hlink.c) */
	/* index + 1 into the session's ACL and xattr lists, 0 = none */
	int32_t acl_ndx, defacl_ndx, xattr_ndx;
	uint32_t uid, gid;     /* FE_X_IDS: with -o or -g (both kept) */
};

/* Bytes a name of len chars, its NUL and x's fields (a big size, and
 * those of x->has) take. */
size_t fe_packed_len(size_t len, const struct fe_extras *x);
/* Write name (len chars), its NUL and x's fields into buf (fe_packed_len
 * bytes) and make them f's base name and optional fields. */
void fe_place(struct file_entry *f, char *buf, const char *name, size_t len,
	      const struct fe_extras *x);
/* All of f's optional fields (the defaults for those it lacks). */
void fe_extras_get(const struct file_entry *f, struct fe_extras *x);

/* Where the packed fields of f start: after its base name. */
static inline const char *fe_tail(const struct file_entry *f)
{
	const char *p = f->basename;

	while (*p)
		p++;
	return p + 1;
}

/* Where field `bit` of f starts, NULL when f does not carry it. */
static inline const char *fe_field(const struct file_entry *f, unsigned bit)
{
	static const uint16_t bits[] = {FE_X_NSEC,  FE_X_PTR,  FE_X_ATIME, FE_X_RDEV,
					FE_X_HLINK, FE_X_META, FE_X_IDS};
	static const uint8_t len[] = {4, 8, 8, 8, 8, 12, 8};

	if (!(f->flags & bit))
		return NULL;
	const char *p = fe_tail(f);
	if (f->size32 == FE_SIZE_BIG)
		p += 8; /* a big size comes first */
	for (size_t i = 0; bits[i] != bit; i++)
		if (f->flags & bits[i])
			p += len[i];
	return p;
}

static inline int64_t fe_get64(const struct file_entry *f, unsigned bit, size_t off, int64_t dflt)
{
	const char *p = fe_field(f, bit);
	int64_t v = dflt;

	if (p)
		__builtin_memcpy(&v, p + off, sizeof v);
	return v;
}

static inline int32_t fe_get32(const struct file_entry *f, unsigned bit, size_t off, int32_t dflt)
{
	const char *p = fe_field(f, bit);
	int32_t v = dflt;

	if (p)
		__builtin_memcpy(&v, p + off, sizeof v);
	return v;
}

/* Set a 32-bit optional field f was placed with; false when it lacks it. */
static inline bool fe_set32(struct file_entry *f, unsigned bit, size_t off, int32_t v)
{
	char *p = (char *)fe_field(f, bit);

	if (p)
		__builtin_memcpy(p + off, &v, sizeof v);
	return p != NULL;
}

static inline const void *fe_ptr(const struct file_entry *f)
{
	const char *p = fe_field(f, FE_X_PTR);
	const void *v = NULL;

	if (p)
		__builtin_memcpy(&v, p, sizeof v);
	return v;
}

static inline uint32_t fe_mtime_nsec(const struct file_entry *f)
{
	return (uint32_t)fe_get32(f, FE_X_NSEC, 0, 0);
}
static inline int64_t fe_size(const struct file_entry *f)
{
	int64_t v = f->size32;

	if (f->size32 == FE_SIZE_BIG)
		__builtin_memcpy(&v, fe_tail(f), sizeof v);
	return v;
}
/* Owner and group: 0 for an entry placed without them (neither -o nor
 * -g); setting them there does nothing and returns false. */
static inline uint32_t fe_uid(const struct file_entry *f)
{
	return (uint32_t)fe_get32(f, FE_X_IDS, 0, 0);
}
static inline uint32_t fe_gid(const struct file_entry *f)
{
	return (uint32_t)fe_get32(f, FE_X_IDS, 4, 0);
}
static inline bool fe_set_uid(struct file_entry *f, uint32_t uid)
{
	return fe_set32(f, FE_X_IDS, 0, (int32_t)uid);
}
static inline bool fe_set_gid(struct file_entry *f, uint32_t gid)
{
	return fe_set32(f, FE_X_IDS, 4, (int32_t)gid);
}
/* Symlink target (NULL: not a symlink, or links not kept). */
static inline const char *fe_link(const struct file_entry *f)
{
	return (f->mode & 0170000) == 0120000 ? (const char *)fe_ptr(f) : NULL;
}
/* --checksum sum of a regular file, or NULL. */
static inline uint8_t *fe_sum(const struct file_entry *f)
{
	return (f->mode & 0170000) == 0100000 ? (uint8_t *)fe_ptr(f) : NULL;
}
static inline int64_t fe_atime(const struct file_entry *f)
{
	return fe_get64(f, FE_X_ATIME, 0, 0);
}
static inline uint32_t fe_rdev_major(const struct file_entry *f)
{
	return (uint32_t)fe_get32(f, FE_X_RDEV, 0, 0);
}
static inline uint32_t fe_rdev_minor(const struct file_entry *f)
{
	return (uint32_t)fe_get32(f, FE_X_RDEV, 4, 0);
}
/* Hard-link group id, -1 for none. */
static inline int32_t fe_hlink_group(const struct file_entry *f)
{
	return fe_get32(f, FE_X_HLINK, 0, -1);
}
static inline int32_t fe_hl_next(const struct file_entry *f)
{
	return fe_get32(f, FE_X_HLINK, 4, -1);
}
static inline bool fe_set_hl_next(struct file_entry *f, int32_t next)
{
	return fe_set32(f, FE_X_HLINK, 4, next);
}
static inline int32_t fe_acl_ndx(const struct file_entry *f)
{
	return fe_get32(f, FE_X_META, 0, 0);
}
static inline int32_t fe_defacl_ndx(const struct file_entry *f)
{
	return fe_get32(f, FE_X_META, 4, 0);
}
static inline int32_t fe_xattr_ndx(const struct file_entry *f)
{
	return fe_get32(f, FE_X_META, 8, 0);
}
static inline bool fe_set_meta(struct file_entry *f, int32_t acl, int32_t defacl, int32_t xattr)
{
	return fe_set32(f, FE_X_META, 0, acl) && fe_set32(f, FE_X_META, 4, defacl) &&
	       fe_set32(f, FE_X_META, 8, xattr);
}
static inline bool fe_set_xattr_ndx(struct file_entry *f, int32_t xattr)
{
	return fe_set32(f, FE_X_META, 8, xattr);
}

/* What the previous entry left behind: rsync compresses each entry against
 * it, for the whole session (flist.c: recv_file_entry's statics). */
struct flist_codec {
	char lastname[MAXPATHLEN_WIRE];
	const char *lastdir;
	size_t lastdir_len;
	int32_t lastdir_depth;
	int64_t mtime;
	int64_t atime;  /* -U: the last one sent, for XMIT_SAME_ATIME */
	uint32_t mode;
	uint32_t uid, gid;
	uint32_t rdev_major, rdev_minor;
	int64_t dev; /* protocol < 30 hard links */
	int32_t hlink_count;
	/* (dev, ino) -> group for protocol < 30 hard links */
	struct hl_pair *hl_pairs;
	size_t hl_count, hl_cap;
	uint64_t hl_key;  /* the table's hash secret (getrandom) */
};

/* Incremental recursion (receiver): one list received after another.
 * Wire index ndx_start - 1 names the directory the part holds. */
struct flist_part {
	int32_t ndx_start;   /* wire index of its first sorted entry */
	int32_t count;
	int32_t dir_ndx;     /* its directory in the dir list, -1 for the first */
	size_t first_file;   /* index into files of its first arrival */
	size_t first_block;  /* the names arena block its names start in */
};

/* Strings (and kept entries) allocated in 256 KiB blocks. Blocks below
 * `freed` have been given back (an incremental list's released parts). */
struct flist_arena {
	char **blocks;
	size_t nblocks, freed;
	size_t used, cap;    /* of the last block */
};

struct flist {
	struct file_entry *files;  /* in arrival order */
	size_t count, cap;
	struct file_entry **sorted; /* the order indexes refer to */
	size_t low, high;          /* active range of sorted (high < low: empty) */
	/* Incremental recursion: files and sorted are reserved once, never
	 * moved, so the generator thread can use entries of published parts
	 * while the receiver thread appends more (flist_inc_recv.c). */
	bool inc;
	size_t nslots;             /* sorted slots in use, gaps included */
	size_t files_commit, sorted_commit, parts_commit; /* bytes usable */
	struct flist_part *parts;  /* reserved too: the generator reads them */
	size_t nparts;
	struct file_entry **dirs;  /* every directory received, in list order */
	size_t ndirs, dirs_cap;
	uint8_t *dirs_listed;      /* per dir: its part has arrived. The
				    * receiver thread's alone: as an FE_ flag
				    * it would share a word the generator
				    * writes (FE_DIR_CREATED) */
	size_t dirs_listed_cap;
	bool eof;                  /* NDX_FLIST_EOF read: no more parts */
	/* Incremental recursion, parts released once both sides are done
	 * with them (flist_release_parts), so memory follows the parts in
	 * flight, not the whole tree. Directories are copied out of their
	 * part when it is published (into kept), so dirs[], the gap
	 * indexes and first_dir stay valid for the whole run. */
	bool release;
	size_t released;           /* parts released: a prefix of parts[] */
	size_t released_files;     /* files[0..released_files) are gone */
	size_t released_slots;     /* sorted[0..released_slots) are gone */
	size_t files_given, sorted_given; /* bytes returned to the kernel */
	struct file_entry *first_dir; /* what the first part's gap stands for */
	struct file_entry no_dir;  /* what a gap stands for when it stands for
				    * no directory (one per list, not per
				    * process: the engine may run two) */
	size_t next_block;         /* names block the next part starts in */
	struct flist_arena names;  /* entries' strings */
	struct flist_arena kept;   /* copied directories and their strings */
	/* id name maps from the sender (uid/gid -> name), see uidmap in session */
	int io_error;
	/* A listing client's list (--list-only): its entries are printed,
	 * to the second, never compared with files, so the decoder keeps
	 * no nanoseconds (4 bytes an entry). Set before the first entry. */
	bool listing;
};

void flist_init(struct flist *fl);
void flist_free(struct flist *fl);

/* Read a whole file list (entries, end marker, id lists, io_error) from the
 * session's input. Validates every field; on failure the session error says
 * why. mirrors rsync flist.c:recv_file_list() without incremental recursion. */
bool flist_recv(struct session *s, struct flist *fl);

/* Sort and remove duplicates as the receiver does (flist_sort_and_clean).
 * With incremental recursion the list is the first part. */
bool flist_sort_and_clean(struct session *s, struct flist *fl);

/* The most entries and indexes an incremental list may hold: address
 * space reserved up front, inaccessible, and made usable in steps as
 * entries arrive, so that the kernel's commit accounting (strict under
 * vm.overcommit_memory=2) only sees what is used. */
#ifndef INC_MAX_FILES /* the fuzz build reserves less (Makefile: FUZZ_DEFS) */
#define INC_MAX_FILES ((size_t)1 << 24)
#endif
#define INC_MAX_SLOTS (INC_MAX_FILES * 2 + 2)

/* Incremental recursion, receiving side: reserve the arrays before the
 * first entry (flist.c); read the contents of dir_ndx announced by
 * NDX_FLIST_OFFSET - dir_ndx (flist_recv.c); close a part (sort, clean,
 * number: flist_inc_recv.c). */
bool flist_inc_reserve(struct session *s, struct flist *fl);
/* Make the first `need` bytes of a reserved area (of `size` bytes, base)
 * usable, in steps; *committed is how much already is. Pages already
 * usable stay where they are: the other thread may be reading them.
 * False when the kernel refuses. */
bool flist_inc_commit(void *base, size_t size, size_t *committed, size_t need);
/* Room for more entries in files[] (cap grows); false past the limit. */
bool flist_inc_grow(struct session *s, struct flist *fl);
/* The part being received: the sender's number of its first entry and its
 * place in files[] (0 and 0 for a whole list). */
void flist_receiving_part(const struct flist *fl, int32_t *ndx_start, size_t *first);
/* The place in files[] of the entry the sender numbered `sent` (parts
 * published or being received); false for a gap or past the end. */
bool flist_sent_pos(const struct flist *fl, int32_t sent, size_t *pos);
void flist_inc_release(struct flist *fl);
uint8_t *flist_inc_state_new(void);
void flist_inc_state_free(uint8_t *state);
bool flist_recv_part(struct session *s, struct flist *fl, int32_t dir_ndx);
bool flist_part_finish(struct session *s, struct flist *fl, size_t first, size_t n,
		       int32_t dir_ndx);
/* A first list of one entry is followed at once by the next part or
 * the end (flist.c: recv_additional_file_list): read it. */
bool flist_recv_second(struct session *s, struct flist *fl);
/* The entry's position among all entries received (its wire index
 * less the gaps before it), for --progress's to-chk count. */
int32_t flist_file_index(const struct flist *fl, int32_t ndx);
/* The number of valid wire indexes (gap slots included). */
size_t flist_slots(const struct flist *fl);
/* Decode entries until the end marker (the common loop of a list). */
bool flist_recv_entries(struct session *s, struct flist *fl);
/* Stable sort then duplicate removal of v[0..n) (the cleaning rules of
 * flist_sort_and_clean); *low and *high get the active range. */
bool flist_clean_part(struct session *s, struct file_entry **v, size_t n, size_t *low,
		      size_t *high);

/* Sort entry pointers in rsync's order (stable: equal names keep their
 * order). */
bool flist_sort_entries(struct session *s, struct file_entry **v, size_t n);

/* rsync's f_name_cmp() for the negotiated protocol. */
int flist_name_cmp(const struct file_entry *a, const struct file_entry *b, int protocol);

/* Full relative path of an entry into buf ("." for the top dir). Returns
 * false if it does not fit. */
bool flist_path(const struct file_entry *f, char *buf, size_t size);

/* Incremental recursion: the sender is done with parts [0, upto) (it
 * echoed their NDX_DONE, which the generator sends once it is done with
 * them): give back their entries, names and indexes (receiver thread). */
void flist_release_parts(struct session *s, struct flist *fl, size_t upto);
/* Return area[*given..bytes) of a reserved area (page-aligned base) to
 * the kernel, in whole steps of 128 KiB; *given is how much already is.
 * What is given back reads as zeros if touched again. */
void flist_give_back(void *area, size_t bytes, size_t *given);
/* The directory part k stands for (its gap index), valid after release. */
struct file_entry *flist_part_dir(const struct flist *fl, size_t k);

/* Allocate len bytes (8-aligned) in an arena; NULL: out of memory. */
void *flist_arena_alloc(struct flist_arena *a, size_t len);
char *flist_arena_strdup(struct flist_arena *a, const char *s, size_t len);
/* A copy of directory entry f, its base name in arena a and its dirname
 * the given string (already in a, or NULL), that outlives the part f came
 * in; a kept directory needs neither link nor sum. NULL: out of memory. */
struct file_entry *flist_keep_dir(struct flist_arena *a, const struct file_entry *f,
				  const char *dirname);
/* Give back the blocks below `upto` (nothing may point into them). */
void flist_arena_free_below(struct flist_arena *a, size_t upto);
/* Allocate len bytes in the list's arena (freed with the list). */
void *flist_alloc(struct flist *fl, size_t len);
/* Allocate a copy of a string in the list's arena. */
char *flist_strdup(struct flist *fl, const char *s, size_t len);
/* Allocate len bytes, unaligned (a name and its packed fields), in the
 * list's arena; NULL: out of memory. */
char *flist_alloc_bytes(struct flist *fl, size_t len);

/* Clean a received name in place: collapse "//" and "./", strip a trailing
 * "/"; returns false for names with a ".." component or a NUL (rsync
 * clean_fname with CFN_REFUSE_DOT_DOT_DIRS). */
bool flist_clean_name(char *name);

#endif
