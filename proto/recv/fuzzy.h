/*
 * -y/--fuzzy basis selection (fuzzy.c): a cache of the candidate files of
 * the directory the generator is in, and rsync's choice among them.
 */
#ifndef FERRY_FUZZY_H
#define FERRY_FUZZY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/base/opts.h"

/* the destination dir and one per --*-dest dir (rsync: MAX_BASIS_DIRS+1) */
#define FUZZY_LEVELS_MAX (ALT_DEST_MAX + 1)

struct fuzzy_cand {
	char *name;     /* basename */
	int64_t size;
	int64_t mtime;
	bool changing;  /* being transferred itself: not a basis (FLAG_FILE_SENT) */
};

struct fuzzy_list {
	struct fuzzy_cand *v; /* sorted by name */
	size_t n;
};

struct fuzzy_cache {
	bool loaded;          /* for the directory the generator is in */
	int levels;
	struct fuzzy_list lists[FUZZY_LEVELS_MAX];
};

/* Forget the lists (the generator moved to another directory). */
void fuzzy_reset(struct fuzzy_cache *fc);
/* Read the candidates of dirfds[0..levels) (-1: a dir that is absent). */
void fuzzy_load(struct fuzzy_cache *fc, const int *dirfds, int levels);
/* A file of the destination dir is being rewritten: never its basis. */
void fuzzy_mark_changing(struct fuzzy_cache *fc, const char *name);
/* The basis for a missing file of this name, size and mtime, or NULL;
 * *level is the list it came from. */
const struct fuzzy_cand *fuzzy_find(const struct fuzzy_cache *fc, const char *name, int64_t size,
				    int64_t mtime, long modify_window, int *level);

uint32_t fuzzy_distance(const char *s1, size_t len1, const char *s2, size_t len2, uint32_t limit);
const char *fuzzy_suffix(const char *name, size_t len, size_t *suf_len);

#endif
