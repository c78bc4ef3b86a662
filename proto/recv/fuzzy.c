/*
 * -y/--fuzzy: for a destination file that is missing, a file in the same
 * directory (and with -yy in the same directory under each --*-dest dir)
 * serves as the delta basis: one with the sender's size and mtime, else
 * the one whose name is closest. Mirrors rsync generator.c:find_fuzzy()
 * with util1.c:fuzzy_distance() and find_filename_suffix().
 */
#include <assert.h>
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/recv/fuzzy.h"

/* One unit of distance: a character inserted, deleted or replaced. The
 * low 16 bits weigh how far apart the characters involved are. */
#define FUZZY_UNIT (1u << 16)
#define FUZZY_FAR (0xFFFFu * FUZZY_UNIT + 1)
#define FUZZY_MAX_NAME 4096

/* The distance between a name and an empty one: its length in units plus
 * its characters' values (as signed chars, as rsync sums them). */
static uint32_t distance_to_empty(const char *s, size_t len)
{
	int32_t weight = 0;

	for (size_t i = 0; i < len; i++)
		weight += (signed char)s[i];
	return (uint32_t)((int32_t)len * (int32_t)FUZZY_UNIT + weight);
}

/* mirrors rsync util1.c:fuzzy_distance(), a one-row Levenshtein distance
 * whose costs add the character values; gives up (FUZZY_FAR) when the
 * lengths alone put it above limit. */
uint32_t fuzzy_distance(const char *s1, size_t len1, const char *s2, size_t len2, uint32_t limit)
{
	static_assert(FUZZY_MAX_NAME > 255, "names up to NAME_MAX fit");
	uint32_t row[FUZZY_MAX_NAME];
	size_t gap = len1 > len2 ? len1 - len2 : len2 - len1;

	if (gap * FUZZY_UNIT > limit)
		return FUZZY_FAR;
	if (len1 == 0)
		return distance_to_empty(s2, len2);
	if (len2 == 0)
		return distance_to_empty(s1, len1);
	if (len2 > FUZZY_MAX_NAME)
		return FUZZY_FAR;
	for (size_t j = 0; j < len2; j++)
		row[j] = (uint32_t)(j + 1) * FUZZY_UNIT;
	for (size_t i = 0; i < len1; i++) {
		unsigned char c1 = (unsigned char)s1[i];
		uint32_t diag = (uint32_t)i * FUZZY_UNIT;
		uint32_t above = (uint32_t)(i + 1) * FUZZY_UNIT;
		for (size_t j = 0; j < len2; j++) {
			unsigned char c2 = (unsigned char)s2[j];
			uint32_t left = row[j];
			uint32_t change = c1 == c2 ? 0 : FUZZY_UNIT + (uint32_t)abs((int)c1 - (int)c2);
			uint32_t by_change = diag + change;
			uint32_t by_left = left + FUZZY_UNIT + c1;
			uint32_t by_above = above + FUZZY_UNIT + c2;
			/* rsync picks between the cheaper neighbour's step and
			 * the diagonal, not the least of all three */
			uint32_t side = left < above ? by_left : by_above;
			row[j] = above = side < by_change ? side : by_change;
			diag = left;
		}
	}
	return row[len2 - 1];
}

/* Ignored as a suffix: ".bak", ".old" and ".orig" at the very end of the
 * name, and "~N..." in a backup name like "foo.~3~". */
static bool suffix_is_noise(const char *dot, size_t len, bool had_tilde)
{
	if (len == 4)
		return strcmp(dot + 1, "bak") == 0 || strcmp(dot + 1, "old") == 0;
	if (len == 5)
		return strcmp(dot + 1, "orig") == 0;
	return len > 2 && had_tilde && dot[1] == '~' && isdigit((unsigned char)dot[2]);
}

static bool all_digits(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)p[i]))
			return false;
	return true;
}

/* mirrors rsync util1.c:find_filename_suffix(): the last significant
 * ".ext" of a name (an all-digit one only if no earlier one exists), or
 * "" with *len 0. */
const char *fuzzy_suffix(const char *name, size_t len, size_t *suf_len)
{
	const char *suf = "";
	bool had_tilde = false;

	while (len && *name == '.')
		name++, len--;
	if (len > 1 && name[len - 1] == '~')
		len--, had_tilde = true;
	*suf_len = 0;
	while (len > 1) {
		size_t dot = len - 1;
		while (dot > 0 && name[dot] != '.')
			dot--;
		if (dot == 0)
			break;
		size_t n = len - dot;
		len = dot;
		if (suffix_is_noise(name + dot, n, had_tilde))
			continue;
		suf = name + dot;
		*suf_len = n;
		if (n == 1 || !all_digits(suf + 1, n - 1))
			break;
	}
	return suf;
}

static int cand_cmp(const void *a, const void *b)
{
	return strcmp(((const struct fuzzy_cand *)a)->name, ((const struct fuzzy_cand *)b)->name);
}

static void list_free(struct fuzzy_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].name);
	free(l->v);
	*l = (struct fuzzy_list){0};
}

void fuzzy_reset(struct fuzzy_cache *fc)
{
	for (int i = 0; i < FUZZY_LEVELS_MAX; i++)
		list_free(&fc->lists[i]);
	fc->loaded = false;
}

/* The non-empty regular files of one directory, sorted by name as rsync's
 * dir list is (filter rules do not apply). */
static void list_load(struct fuzzy_list *l, int dirfd)
{
	int fd = dirfd >= 0 ? openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	size_t cap = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		struct stat st;
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
		    st.st_size == 0)
			continue;
		if (l->n == cap) {
			size_t ncap = cap ? cap * 2 : 32;
			struct fuzzy_cand *v = realloc(l->v, ncap * sizeof *v);
			if (!v)
				break; /* fewer candidates: only a slower transfer */
			l->v = v;
			cap = ncap;
		}
		char *name = strdup(e->d_name);
		if (!name)
			break;
		l->v[l->n++] = (struct fuzzy_cand){.name = name, .size = st.st_size,
						   .mtime = st.st_mtim.tv_sec};
	}
	closedir(d);
	if (l->n)
		qsort(l->v, l->n, sizeof *l->v, cand_cmp);
}

void fuzzy_load(struct fuzzy_cache *fc, const int *dirfds, int levels)
{
	fuzzy_reset(fc);
	fc->levels = levels < FUZZY_LEVELS_MAX ? levels : FUZZY_LEVELS_MAX;
	for (int i = 0; i < fc->levels; i++)
		list_load(&fc->lists[i], dirfds[i]);
	fc->loaded = true;
}

void fuzzy_mark_changing(struct fuzzy_cache *fc, const char *name)
{
	struct fuzzy_list *l = &fc->lists[0];
	struct fuzzy_cand key = {.name = (char *)name};

	if (!fc->loaded || l->n == 0)
		return;
	struct fuzzy_cand *c = bsearch(&key, l->v, l->n, sizeof *l->v, cand_cmp);
	if (c)
		c->changing = true;
}

static bool same_mtime(int64_t a, int64_t b, long window)
{
	int64_t d = a - b;

	if (window <= 0)
		return d == 0;
	return d <= window && d >= -window;
}

const struct fuzzy_cand *fuzzy_find(const struct fuzzy_cache *fc, const char *name, int64_t size,
				    int64_t mtime, long modify_window, int *level)
{
	size_t name_len = strlen(name), suf_len;
	const char *suf = fuzzy_suffix(name, name_len, &suf_len);
	uint32_t lowest = 25 * FUZZY_UNIT; /* farther than 25 edits: no basis */
	const struct fuzzy_cand *best = NULL;

	/* the first file with the same size and mtime wins outright */
	for (int i = 0; i < fc->levels; i++)
		for (size_t j = 0; j < fc->lists[i].n; j++) {
			const struct fuzzy_cand *c = &fc->lists[i].v[j];
			if (!c->changing && c->size == size && same_mtime(c->mtime, mtime, modify_window)) {
				*level = i;
				return c;
			}
		}
	/* else the closest name, the last one on a tie; a matching suffix
	 * weighs ten times as much */
	for (int i = 0; i < fc->levels; i++)
		for (size_t j = 0; j < fc->lists[i].n; j++) {
			const struct fuzzy_cand *c = &fc->lists[i].v[j];
			if (c->changing)
				continue;
			size_t len = strlen(c->name), clen;
			const char *csuf = fuzzy_suffix(c->name, len, &clen);
			uint32_t dist = fuzzy_distance(c->name, len, name, name_len, lowest);
			if (dist < 0xFFFF0000u)
				dist += fuzzy_distance(csuf, clen, suf, suf_len, 0xFFFF0000u) * 10;
			if (dist <= lowest) {
				lowest = dist;
				best = c;
				*level = i;
			}
		}
	return best;
}
