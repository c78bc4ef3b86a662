/*
 * The sending side's file list: building it from disk and sending it.
 * The sender's own entry points are in proto/send/sender.h.
 */
#ifndef FERRY_SENDSIDE_H
#define FERRY_SENDSIDE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto/core/flist.h"
#include "proto/core/session.h"

struct filter_list;
struct names_source;
struct flist_enc;
struct inc_plan;
struct part_names;

/* Where the sent entries come from: one directory fd per source argument
 * (the directory the names are relative to). */
struct send_roots {
	int *fds;
	char **paths;         /* each as the argument named it (%f) */
	size_t count;
};

/* Sender-only facts of an entry, parallel to fl->files (arrival order). */
struct send_info {      /* one per entry: 8 bytes */
	uint32_t root;        /* index into send_roots */
	bool unstated;        /* listed from readdir alone: stat'ed when its
			       * part is sent (flist_stat_deferred) */
};

/* An entry's file, for -H only: the list keeps them apart, as the other
 * runs have no use for them. */
struct send_devino {
	int64_t dev, ino;
};

struct send_list {
	struct flist fl;
	struct send_info *info;
	struct send_devino *devino; /* parallel to info with -H, else NULL */
	size_t info_cap;
	struct send_roots roots;
	bool vanished;        /* some source arg was missing */
	bool open_plain;      /* -R on the user's own files: open by path
			       * (implied dirs may be symlinks, followed as
			       * rsync does), not one component at a time */
	bool confined;        /* built in a daemon module (walk_opts.confined) */
	int module_fd;        /* ... whose root this is (walk_opts.root_fd) */
	struct flist_enc *enc; /* the list encoder's session state */
	struct inc_plan *inc; /* incremental recursion: the parts and how far
			       * they have been sent (flist_inc.c), or NULL */
	struct part_names *part_names; /* a lazy part's names (flist_read_dir) */
	bool part_names_on;
	const struct walk_opts *lazy_walk; /* the lazy walk: fl holds the top
			       * level only, each directory is read when its
			       * part is due (flist_read_dir); NULL: the whole
			       * tree is in fl */
};

struct walk_opts {
	const struct filter_list *filters;  /* the peer's and ours, sender side */
	const struct filter_list *daemon_filters; /* module exclude rules, or NULL */
	int root_fd;          /* module root (daemon) or AT_FDCWD (client) */
	bool confined;        /* refuse symlinks in source arg paths (daemon) */
	struct names_source *names; /* --files-from: the names to send, relative
				     * to the first argument; NULL otherwise */
	bool defer_stat;      /* the list goes out in incremental parts: stat
			       * regular files only as their part is sent, and
			       * read directories only then where that is safe
			       * (the lazy walk); these options (and the filters)
			       * must then stay valid until send_list_free */
};

/* Build the list for the source arguments (paths as the user or client
 * wrote them, relative to root_fd). Errors on individual files are printed
 * and recorded in s->io_error, as rsync does. */
bool flist_build(struct session *s, const struct walk_opts *w, char **args, int nargs,
		 struct send_list *out);
/* Free a send list: its encoder and incremental state, then what
 * flist_build made (flist_inc.c, the top of the sending list). */
void send_list_free(struct send_list *sl);
/* Free what flist_build made (roots, entries, a lazy walk's names) and
 * clear sl; the encoder and incremental state must be freed before. */
void flist_build_free(struct send_list *sl);

/* Stat entry i, listed unstated (send_info.unstated), in its directory
 * dirfd (-1: that could not be opened; errno says why). False: it is gone
 * or no longer a regular file; the error is reported and recorded in
 * s->io_error, and the caller leaves the entry out of its part. */
bool flist_stat_deferred(struct session *s, struct send_list *sl, size_t i, int dirfd);

/* The lazy walk: list the directory dirpath (relative to the root, open
 * on dirfd; -1: it could not be opened, errno says why) into *part, a
 * send_list of its own, applying the filters as the whole-tree walk
 * does, without descending. Errors on the directory or its entries are
 * reported and recorded in s->io_error; false only for a fatal error. */
bool flist_read_dir(struct session *s, const struct send_list *sl, const char *dirpath,
		    int dirfd, struct send_list *part);

/* The statistics' "File list generation time" since t0 (wire_now_ms);
 * never 0, so that it is always reported (flist.c: send_file_list). */
void flist_note_build_time(struct session *s, int64_t t0);

/* Send the list (entries in building order, end marker, id lists), or
 * with incremental recursion its first part (flist_inc.c). */
bool flist_send(struct session *s, struct send_list *sl);
/* flist_send without incremental recursion (flist_send.c), once the
 * protocol allows the list's -A/-X. */
bool flist_send_whole(struct session *s, struct send_list *sl);

/* Incremental recursion: send the entries v[0..n) (pointers into
 * sl->fl.files), numbered from ndx_start, as one list with its end marker.
 * lead_wire (by index into files, or NULL): the wire number of each
 * hard-linked entry's leader, -1 for a leader. */
bool flist_send_part(struct session *s, struct send_list *sl, struct file_entry *const *v,
		     size_t n, int io_err, const int32_t *lead_wire, int32_t ndx_start);
/* -H: each entry's leader (index into files) in sending order: files[]
 * order, or order[0..count) when given; -1 for leaders. NULL: no memory. */
int32_t *flist_hlink_leaders(const struct send_list *sl, const size_t *order);
void flist_enc_free(struct flist_enc *enc);
/* The --stats counts of one entry sent (number of files, dirs, ...). */
void flist_count_entry(struct stats *st, const struct file_entry *f);

/* Incremental recursion (flist_inc.c). flist_inc_start cuts the built
 * list into rsync's per-directory lists and sends the first; the sender
 * calls flist_inc_send_ahead before each read of a request, and
 * flist_inc_list_done for each NDX_DONE (true: it ended a list, echo it
 * and go on). flist_send_entry maps a wire index to its entry (NULL if
 * not a sent entry) for both modes; flist_send_slots bounds the indexes. */
bool flist_inc_start(struct session *s, struct send_list *sl);
bool flist_inc_send_ahead(struct session *s, struct send_list *sl);
bool flist_inc_list_done(struct send_list *sl);
void flist_inc_note_request(struct send_list *sl, int32_t ndx);
void flist_inc_free(struct inc_plan *inc);
struct file_entry *flist_send_entry(const struct send_list *sl, int32_t ndx);
size_t flist_send_slots(const struct send_list *sl);
/* The root (index into sl->roots) of the entry sent as ndx, which
 * flist_send_entry found. */
uint32_t flist_send_root(const struct send_list *sl, int32_t ndx);
/* For --progress: the entry's position among all entries (the wire index
 * less its gaps), and whether every list has been sent. */
int32_t flist_send_file_index(const struct send_list *sl, int32_t ndx);
bool flist_send_complete(const struct send_list *sl);

/* Sort the sender's copy so indexes match the receiver's (the sender keeps
 * duplicates; see flist_sort_and_clean). */
bool flist_sort_sender(struct session *s, struct flist *fl);

#endif
