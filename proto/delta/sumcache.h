/*
 * The block-sum cache (--sums-cache=NAME, a ferry extension): the receiving
 * side keeps the block sums of the files it wrote in one file, NAME, in
 * the destination directory. When such a file is the basis of a later
 * transfer and has not changed since (same device, inode, size, mtime and
 * ctime), the generator sends the kept sums instead of reading and hashing
 * the whole basis again. The wire is unchanged: the sender cannot tell.
 *
 * Strong block sums depend on the session's checksum and seed, so the
 * cache serves only sessions with the same ones (a fixed --checksum-seed).
 * A wrong cache cannot corrupt a file: the whole-file checksum catches a
 * block the sums misdescribe and the redo pass, which never uses the
 * cache, sends the file again.
 *
 * The receiver builds a file's new sums while it writes it: a block that
 * came whole from an aligned basis block takes that block's sums (the
 * generator hands them over), anything else is hashed as it is written.
 */
#ifndef FERRY_SUMCACHE_H
#define FERRY_SUMCACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "proto/base/checksum.h"
#include "proto/base/ixtable.h"

/* Stored strong-sum bytes a block: the most any sum head asks for. */
#define SUMCACHE_S2_MAX 16

/* The sums of one file's blocks, as the cache and the hand-over hold them. */
struct block_sums {
	int32_t blength;
	int32_t count;
	uint32_t *sum1;   /* count weak sums */
	uint8_t *sum2;    /* count * s2len strong-sum prefixes */
};

struct sumcache_entry {
	char *path;
	struct block_sums sums;
	uint64_t dev, ino;
	int64_t size, mtime_s, ctime_s;
	uint32_t mtime_ns, ctime_ns;
	bool keep;                /* to be written back */
	struct sumcache_entry *next_fresh;
};

struct sums_handoff;

struct sumcache {
	const char *name;         /* NAME in the destination directory */
	enum csum_type type;
	int32_t seed;
	bool seed_order;
	size_t s2len;             /* strong bytes kept a block */
	pthread_mutex_t lock;
	struct sumcache_entry **entries; /* the file's entries, in its order */
	size_t count, entries_cap;
	struct ixtable by_path;          /* entries[] by path */
	struct sumcache_entry *fresh;  /* this run's, newest first */
	struct sums_handoff *handoffs; /* the generator's basis sums, by index */
	size_t handoff_bytes;
};

/* Open the cache for a session with this checksum and seed and read NAME
 * from rootfd. A missing, foreign or damaged file leaves it empty. */
void sumcache_open(struct sumcache *sc, int rootfd, const char *name, enum csum_type type,
		   int32_t seed, bool seed_order);
/* May NAME in rootfd be (re)written as a cache: absent, or a regular file
 * that starts as one does? Anything else (a user's file, a symlink) is
 * left alone. */
bool sumcache_may_replace(int rootfd, const char *name);
/* Write the cache back (a temporary file renamed over NAME): this run's
 * entries, and the old ones whose files have not changed. */
bool sumcache_save(struct sumcache *sc, int rootfd, char *err, size_t errlen);
void sumcache_close(struct sumcache *sc);

/* The kept sums of path, if st (the open basis) is the file they were
 * taken of and they have this block length. */
const struct block_sums *sumcache_lookup(struct sumcache *sc, const char *path,
					 const struct stat *st, int32_t blength);

/* The generator's sums of index ndx's basis, for the receiver (copied). */
void sumcache_hand_over(struct sumcache *sc, int32_t ndx, const struct block_sums *b);
/* The receiver's side: the sums handed over for ndx, now the caller's
 * (NULL if none); block_sums_free() them. */
struct block_sums *sumcache_take(struct sumcache *sc, int32_t ndx);
void block_sums_free(struct block_sums *b);

/* Building a file's sums as the receiver writes it. */
struct sums_builder {
	struct sumcache *sc;
	struct block_sums out;
	struct block_sums *basis; /* handed over by the generator, or NULL */
	int64_t size;             /* the size the file will have */
	int64_t pos;              /* bytes seen */
	uint8_t *acc;             /* a block being gathered */
	size_t acc_len;
	bool failed;              /* too big, out of memory or a short file */
};

/* Start for a file of size bytes whose blocks are blength long. */
void sums_builder_begin(struct sums_builder *b, struct sumcache *sc, int32_t ndx, int64_t size,
			int32_t blength);
/* Bytes written to the file, in order. */
void sums_builder_bytes(struct sums_builder *b, const uint8_t *p, size_t n);
/* Basis block `block` (len bytes) is written next: true when its sums
 * could be taken over, and then its bytes must not be passed too;
 * *digest is then its strong sum (sumcache->s2len bytes). */
bool sums_builder_basis_block(struct sums_builder *b, int32_t basis_blength, int64_t block,
			      size_t len, const uint8_t **digest);
/* The file is in place as st describes it: keep its sums under path. */
void sums_builder_commit(struct sums_builder *b, const char *path, const struct stat *st);
void sums_builder_end(struct sums_builder *b);

#endif
