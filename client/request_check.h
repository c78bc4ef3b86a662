/*
 * The receiving client's check of a remote sender's file list against
 * what was asked for (rsync 3.2.5+, the checks --trust-sender turns off):
 * every name must lie under one of the source arguments ("rejecting
 * unrequested file-list name") and must not be one our own filter rules
 * exclude ("rejecting excluded file-list name"). Either ends the transfer
 * with RERR_UNSUPPORTED before anything is written.
 *
 * These are extra to the path-safety checks every file list gets
 * (no "..", no absolute names, each entry's directory in the list), which
 * --trust-sender never turns off.
 */
#ifndef FERRY_CLIENT_REQUEST_CHECK_H
#define FERRY_CLIENT_REQUEST_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/filter/filter.h"

struct ferry_opts;
struct remote_spec;
struct session;
struct flist;

struct request_check {
	bool check_names;        /* the implied rules below apply */
	/* rsync's implied_filter_list, split: the rules for what was asked
	 * for (an argument, its contents) and the directory-only rules for
	 * the parents -R sends along */
	struct filter_list implied;
	struct filter_list implied_parents;
	bool root_content;       /* a rule asks for the root's contents */
	bool whole_tree;         /* the root with -r was asked for: every name passes */
	bool check_filters;      /* our filter rules apply to the names */
	const struct filter_list *filters; /* our rules (not owned) */
};

/*
 * Set up the checks for a pull of srcs (exclude.c: add_implied_include,
 * options.c: the trust_sender_args/trust_sender_filter rules): nothing with
 * --trust-sender; no name rules with --old-args or a --files-from list (the
 * names are the list's, not the arguments'); no filter check when a
 * dir-merge rule (or -C) lets the sender's own files decide. Returns false
 * with a message in err when a rule cannot be built (out of memory).
 */
bool request_check_init(struct request_check *rq, const struct ferry_opts *o,
			const struct remote_spec *srcs, int nsrc, const struct filter_list *filters,
			char *err, size_t errsz);
void request_check_free(struct request_check *rq);

/*
 * Check every name of a received file list, in arrival order (flist.c:
 * recv_file_entry). True when all pass; otherwise the session error is
 * set (RERR_UNSUPPORTED) naming the first name refused. A directory that
 * was only asked for as a parent (and "." unless the root's contents were
 * asked for) is made an implied directory whatever the sender flagged, so
 * --delete never sweeps it (flist.c: the is_implied_parent_dir downgrade).
 * rq may be NULL (a batch, a local copy: nothing to check).
 */
bool request_check_list(struct session *s, const struct request_check *rq, struct flist *fl);
/* The same for the entries files[first..end) (a part of an incremental
 * list). */
bool request_check_range(struct session *s, const struct request_check *rq, struct flist *fl,
			 size_t first, size_t end);

#endif
