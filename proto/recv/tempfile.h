/*
 * Receiving into a temporary file beside the destination and renaming it
 * into place, so an interrupted transfer never leaves a truncated file
 * under the final name (rsync receiver.c: get_tmpname, finish_transfer).
 */
#ifndef FERRY_TEMPFILE_H
#define FERRY_TEMPFILE_H

#include <stdbool.h>
#include <sys/stat.h>

#include "proto/base/fileio.h"
#include "proto/recv/recvside.h"
#include "proto/base/stop_signal.h"

struct temp_file {
	struct recv_ctx *rc;
	int dirfd;            /* a dup of the parent dir, owned */
	int tmpdirfd;         /* where the temp file lives: dirfd, or --temp-dir's */
	int fd;               /* the data fd, -1 when closed */
	char tmpname[300];
	char leaf[256];
	char path[8192];      /* for messages */
	bool inplace;
	bool partial_inplace; /* written over its --partial-dir basis, renamed
			       * into place when done, kept there otherwise */
	bool keep_partial;
	bool delayed;         /* --delay-updates: commit into the partial dir */
	char partial_name[600]; /* --partial-dir: "DIR/leaf" from dirfd, for the
				 * cleanup at exit ("" when not usable there) */
	char partial_dir[300];  /* ... and "DIR" to create */
	bool want_placed;       /* stat the file once in place (--sums-cache) */
	bool placed_ok;
	struct stat placed;
	struct stop_cleanup on_exit; /* registered while the file is open */
};

/* Create the temporary file (or open the destination with --inplace). */
bool temp_open(struct temp_file *t, struct recv_ctx *rc, struct dir_cursor *dirs,
	       const char *path, const struct file_entry *f);
/* Open the file's partial-dir copy (the basis) to be written over in
 * place and renamed into place once complete (rsync's one-inplace update:
 * protocol 30's CF_INPLACE_PARTIAL_DIR). Reports a failure as rsync's
 * "open ... failed" and returns false. */
bool temp_open_partial(struct temp_file *t, struct recv_ctx *rc, struct dir_cursor *dirs,
		       const char *path);
/* Set the entry's attributes and rename into place. */
bool temp_commit(struct temp_file *t, const struct file_entry *f);
/* --delay-updates: the same, but into the file's --partial-dir, from
 * where the end of the transfer renames it into place. */
bool temp_commit_delayed(struct temp_file *t, const struct file_entry *f);
/* Throw the data away (checksum mismatch or write error). */
void temp_discard(struct temp_file *t);
/* The stream broke: keep the partial file with --partial, else remove. */
void temp_abandon(struct temp_file *t);

#endif
