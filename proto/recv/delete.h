/*
 * --delete: removing what the sender does not have, inside the directories
 * whose contents are part of the transfer.
 */
#ifndef FERRY_DELETE_H
#define FERRY_DELETE_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/base/fileio.h"
#include "proto/recv/recvside.h"

/* Build the set of names the file list holds (call once, after sorting). */
bool delete_index_build(struct recv_ctx *rc);
/* Incremental recursion: add a part's entries (as it is generated). */
bool delete_index_add_part(struct recv_ctx *rc, const struct flist_part *p);
void delete_index_free(struct recv_ctx *rc);
/* Does the file list hold this directory? (Every parent of an entry must
 * be in the list: generator.c: recv_generator.) */
bool recv_dir_listed(const struct recv_ctx *rc, const char *dir);

/* Delete the extraneous entries of one content directory (generator.c:
 * delete_in_dir). ndx is the directory's index in the sorted list. */
void delete_in_dir(struct recv_ctx *rc, struct dir_cursor *dirs, const char *dirpath,
		   int32_t ndx);

/* --delete-before / --delete-after: one pass over every content directory. */
void delete_pass(struct recv_ctx *rc, struct dir_cursor *dirs);
/* Make way for a new entry where directory leaf (path) stands, as rsync's
 * delete_item(DEL_MAKE_ROOM) does: with recurse (--delete, --force) its
 * contents go first, each logged and counted, then the directory itself,
 * unlogged; without, only an empty one goes. A dry run only tells. False,
 * after "cannot delete non-empty directory", when something stays. */
bool delete_make_room(struct recv_ctx *rc, int dirfd, const char *leaf, const char *path,
		      bool recurse);

/* --delete-missing-args: the sender had no such argument, so ours goes
 * (generator.c: recv_generator with a mode-0 entry). */
void delete_missing_arg(struct recv_ctx *rc, struct dir_cursor *dirs, const char *path);

#endif
