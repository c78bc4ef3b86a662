/*
 * What the files of the filter rules (proto/filter*.c) share: a dir-merge
 * rule's per-directory state, and the notes (traces, warnings) they make.
 */
#ifndef FERRY_PROTO_FILTER_PRIV_H
#define FERRY_PROTO_FILTER_PRIV_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/filter/filter.h"

/* One directory's worth of a dir-merge rule's rules. */
struct dm_level {
	int depth;    /* filter_push_dir() depth that added it */
	size_t start; /* its first rule in dm->rules */
	bool cut;     /* a '!' in this file: parents' rules no longer apply */
};

/* A dir-merge rule's per-directory state (rsync's mergelist). Rules of
 * all open directories are in one array, oldest level first; matching
 * goes newest level first, as rsync's inherited-list layout does. */
struct filter_dm {
	struct filter_rule *owner;
	char *fname;     /* the file looked for in each directory */
	struct filter_rules rules;
	struct dm_level *lv;
	size_t nlv, lvcap;
	bool set_up;     /* parent-directory scan done (setup_merge_file) */
};

/* A trace line (tag 'T', with its newline) to fl->report(), or a warning
 * ('W', or 'X' for a transfer's; without) to fl->warn(); kept, tagged,
 * in fl->trace_pending until those are set (filter_trace.c). */
void filter_note_emit(struct filter_list *fl, char tag, const char *line);

/* filter_note_emit() of a formatted line. */
void filter_note(struct filter_list *fl, char tag, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
