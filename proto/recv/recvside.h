/*
 * The receiving side of a transfer: the generator (decides what to ask
 * for, sends block sums) and the receiver (rebuilds files from the
 * sender's token streams) run as two threads over one session; the
 * generator owns the output stream, the receiver the input stream.
 */
#ifndef FERRY_RECVSIDE_H
#define FERRY_RECVSIDE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "proto/delta/sum_head.h"
#include "proto/base/fileio.h"
#include "proto/core/flist.h"
#include "proto/core/session.h"

/* Per-entry state shared by the two threads (indexed like fl->sorted). */
#define FS_REQUESTED 0x01  /* a transfer was requested */
#define FS_DONE 0x02       /* received and renamed into place */
#define FS_FAILED 0x04     /* given up */
#define FS_REDO 0x08       /* queued for the redo pass */
#define FS_HLINK_WAIT 0x10 /* a hard link waiting for its group's target:
			    * its part is not ended before (hlink.c) */

/*
 * The receiving side's set-once configuration: where the files go and
 * what the destination, the daemon module and the side directories are.
 * Filled before the generator thread starts, by the role that receives
 * (client/pull.c, proto/run/server.c: the destination, the module) and
 * by recv_run's set-up (recv_open_side_dirs: the --*-dest and --temp-dir
 * fds; the --sums-cache and the --fsync syncer); read-only from then on,
 * by both threads without a lock. A function that needs nothing else
 * takes it as const struct recv_config *. What changes during the
 * transfer is in struct recv_ctx beside it.
 */
struct recv_config {
	int rootfd;               /* destination directory */
	const char *solo_name;    /* single-file destination name, or NULL */
	bool dry_run_missing_root;
	bool list_only;           /* --list-only: request nothing */
	bool root_created;        /* we made the destination directory */

	struct filter_list *filters; /* the rules we sent, for --delete (the
				      * pointer is set once; the generator
				      * thread alone pushes and pops the
				      * per-directory merge rules in it) */
	const char *root_path;    /* the destination as named, or NULL (a server) */
	const struct filter_list *daemon_filters; /* the module's rules, or NULL */
	char daemon_dest[4096];   /* the destination inside the module ("" = root) */
	/* the client's check of a part's names (client/request_check.c), or
	 * NULL: called by the receiver thread for files[first..end) */
	bool (*check_part)(struct session *s, const void *ctx, struct flist *fl, size_t first,
			   size_t end);
	const void *check_ctx;
	/* --list-only with incremental recursion: prints an entry as the
	 * generator reaches it (generator.c: list_file_entry), so that
	 * finished parts can be released; NULL when not listing */
	void (*on_list)(const struct ferry_opts *o, const struct file_entry *f);

	bool local;               /* the receiving half of a local copy */
	bool confined;            /* a daemon module: alt dirs stay inside it */
	int module_fd;            /* ... whose root this is (confined only) */
	const char *dest_rel;     /* ... and the destination dir inside it */
	int alt_fd[ALT_DEST_MAX]; /* --compare/copy/link-dest dirs (-1: absent) */
	bool alt_outside[ALT_DEST_MAX]; /* ... refused by --confine-root: each
					 * file's lookup there fails, exit 23 */
	int nalt;
	int temp_fd;              /* --temp-dir, or -1 */
	int temp_dir_errno;       /* ELOOP: the --temp-dir passes a symlink we may
				   * not follow, so every temp file fails */
	struct sumcache *sums;    /* --sums-cache, or NULL (its entries change
				   * under its own rules: sumcache.h) */
	struct syncer *syncer;    /* --fsync of in-place files, or NULL */
};

/* One receiving side's run: its configuration (cfg, read-only once the
 * threads run), the session and list it works on, and the state the two
 * threads share, under lock unless a field says otherwise. */
struct recv_ctx {
	struct session *s;
	struct flist *fl;
	struct recv_config cfg;

	uint8_t *state;           /* FS_* per sorted index */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int32_t *redo;            /* indexes to request again */
	size_t nredo, redo_cap;
	int done_count;           /* NDX_DONEs the receiver has read */
	int64_t gen_waits_on;     /* the generator sleeps until this file
				   * settles (RECV_WAKE_ANY: any file) */
	bool receiver_finished;   /* stats read, receiver ended */
	bool receiver_failed;
	bool generator_stopped;   /* the generator thread gave up or finished */
	bool gen_listed;          /* the generator went through the whole list
				   * once (--read-batch waits for it) */
	struct hl_group *hl_groups; /* by group number (hlink.c) */
	size_t hl_cap;
	int32_t *hl_sent;         /* targets being sent, to link after (hlink.c) */
	size_t hl_nsent, hl_sent_cap;
	size_t gen_decided;       /* --read-batch with incremental lists: the
				   * generator has decided on every index
				   * below this */

	char **failed_dirs;       /* dirs we could not create: skip their contents */
	size_t nfailed_dirs;

	char **merge_dirs;        /* directories whose merge files are read, */
	size_t nmerge;            /* ... outermost first (delete.c) */
	const struct file_entry **names; /* hash set of listed paths (delete.c) */
	size_t names_cap;
	size_t names_used;        /* slots taken, stale ones included */
	size_t names_stale_below; /* released parts: files[] below this belong
				   * to parts the generator has ended (set by
				   * the generator thread, which alone looks
				   * names up) */
	/* Incremental recursion: the parts the receiver thread has read
	 * (under lock), and whether the sender said there are no more. */
	size_t parts_ready;
	bool parts_eof;
	/* Released parts (flist_release_parts): their state pages go back
	 * to the kernel as well, but first the state of each one's
	 * directory (at its gap index), which touch_up_dirs reads at the
	 * end, is saved here, by part (under lock). */
	uint8_t *part_dir_state;
	size_t part_dir_saved, part_dir_cap;
	size_t state_given;       /* state bytes given back (receiver thread) */
	long deletions;           /* for --max-delete */
	long skipped_deletes;
	bool warned_io_error;

	int backup_fd;            /* --backup-dir, or -1: state, since a
				   * missing one is made at the first backup
				   * (recv_backup_dir, under lock) */
	bool backup_dir_pending;  /* ... to be made at the first backup */
};

/* Do the daemon module's filters keep clients from path (relative to
 * the destination)? False outside a daemon. */
bool recv_daemon_excludes(const struct recv_config *cfg, const char *path, bool is_dir);

/* --compare-dest/--copy-dest/--link-dest and --backup-dir directories,
 * opened once relative to the destination (altdest.c). */
/* 0, or the exit code of a failure it has reported. */
int recv_open_side_dirs(struct recv_ctx *rc);
void recv_close_side_dirs(struct recv_ctx *rc);
/* The --backup-dir fd, making the directory at the first call if it was
 * missing (-1 after reporting a failure). */
int recv_backup_dir(struct recv_ctx *rc);
/* The destination directory as messages name it (relative to our working
 * directory, or absolute): the server's dest_rel, or a pull's named
 * destination (its directory for a single file's new name); NULL when
 * unknown. buf holds it when it had to be made. */
const char *recv_dest_dir(const struct recv_config *cfg, char *buf, size_t size);

/* -b: move dirfd/leaf (the destination's path) aside as its backup before
 * it is replaced or deleted (backup.c). True when done or when there was
 * nothing to back up. */
bool backup_make(struct recv_ctx *rc, int dirfd, const char *leaf, const char *path);
/* -b with --inplace: the backup is a copy, made before the file is
 * updated where it stands; it gets the old file's mode (and owner and
 * time where those are kept). */
bool backup_copy(struct recv_ctx *rc, int dirfd, const char *leaf, const char *path);
/* ... which then serves as the delta basis (FNAMECMP_BACKUP): an fd for
 * reading it, or -1. */
int backup_open_basis(struct recv_ctx *rc, int dirfd, const char *leaf, const char *path);

/* --remove-source-files: tell the sender that entry ndx (at path) is
 * safely in place, so it may remove its copy. `always`: also for
 * --remove-sent-files (the file was sent, not just found up to date). */
void recv_report_success(struct recv_ctx *rc, int32_t ndx, const char *path, bool always);

/* --partial-dir (partial.c): the name a file of path has there, the dir
 * opened (created 0700 when create; -1 with errno), and removing the
 * partial file and, when empty, its dir. */
const char *partial_leaf(const struct recv_config *cfg, const char *path);
int partial_dir_open(struct recv_ctx *rc, const char *path, bool create);
void partial_remove(struct recv_ctx *rc, const char *path);
/* The partial file of path opened for writing into in place (rsync's
 * one-inplace partial update): created 0600 when missing, walked from the
 * destination like an operator path on every try, so a partial dir
 * swapped for an untrusted link fails (ELOOP) and is never followed;
 * EACCES is retried without O_CREAT, then by briefly adding owner write
 * to a read-only file. Returns the fd or -1 with errno. */
int partial_file_open(struct recv_ctx *rc, const char *path);

/* Run the receiving side after the file list has been received and
 * sorted. Returns the exit code. */
int recv_run(struct recv_ctx *rc);


/* The generator thread's body. */
void *generator_main(void *arg);
/* The receiver's loop (runs on the calling thread). */
bool receiver_run(struct recv_ctx *rc);

/* gen_waits_on: wake the generator whatever file settles; or for none. */
#define RECV_WAKE_ANY (-1)
#define RECV_WAKE_NONE INT64_MAX

/* An entry's FS_* bits: the generator and the receiver thread each set
 * bits of entries the other reads or sets, with no lock held, so every
 * access is atomic (a plain |= of one thread can undo the other's bit). */
static inline uint8_t recv_state(const struct recv_ctx *rc, size_t ndx)
{
	return __atomic_load_n(&rc->state[ndx], __ATOMIC_ACQUIRE);
}

static inline void recv_state_add(struct recv_ctx *rc, size_t ndx, uint8_t bits)
{
	__atomic_fetch_or(&rc->state[ndx], bits, __ATOMIC_ACQ_REL);
}

static inline void recv_state_drop(struct recv_ctx *rc, size_t ndx, uint8_t bits)
{
	__atomic_fetch_and(&rc->state[ndx], (uint8_t)~bits, __ATOMIC_ACQ_REL);
}

/* Parts of an incremental list were released (receiver thread, after
 * flist_release_parts): save their directories' states and give the
 * state of their entries back to the kernel. */
void recv_release_state(struct recv_ctx *rc);
/* The state of part k's directory (its gap index), saved or not. */
uint8_t recv_part_dir_state(struct recv_ctx *rc, size_t k);

/* Tell the generator about progress (receiver thread). */
void recv_note_done(struct recv_ctx *rc);
void recv_queue_redo(struct recv_ctx *rc, int32_t ndx);

/* The path the entry is written to (solo-file destination aware). */
bool recv_dest_path(const struct recv_ctx *rc, const struct file_entry *f, char *buf,
		    size_t size);

/* Block-size and strong-sum-length rules (generator.c: sum_sizes_sqroot). */
void sum_sizes_sqroot(struct sum_head *h, int64_t len, int protocol, long block_size,
		      size_t digest_len, bool redo);

/* Do the times differ, by rsync's --modify-window rules? */
bool recv_mtime_differs(const struct ferry_opts *o, const struct stat *st,
			const struct file_entry *f);

/* Set permissions, owner and times of a finished entry at dirfd/leaf,
 * mirroring rsync rsync.c:set_file_attrs(). `st` is the current state (or
 * NULL if unknown). Returns the ITEM_REPORT_* bits that changed. */
int apply_attrs(struct recv_ctx *rc, int dirfd, const char *leaf, const struct file_entry *f,
		const struct stat *st, bool set_times);
/* The same from the receiver thread: its errors say "[receiver]" where
 * apply_attrs's say "[generator]" (rsync's who_am_i()). */
int apply_attrs_recv(struct recv_ctx *rc, int dirfd, const char *leaf,
		     const struct file_entry *f, const struct stat *st, bool set_times);
/* apply_attrs_recv for a file just written and still open as fd: it is
 * looked at through fd instead of by its name. */
int apply_attrs_written(struct recv_ctx *rc, int dirfd, const char *leaf, int fd,
			const struct file_entry *f);

/* Is the entry inside a directory we failed to create? */
bool parent_failed(struct recv_ctx *rc, const struct file_entry *f);
void recv_mark_dir_failed(struct recv_ctx *rc, const char *path);

/* Do the receiver's walks to an entry follow a destination symlink on the
 * way (always staying beneath the destination)? With -K, and with -R
 * --no-implied-dirs, whose path elements are not in the list and so are
 * the user's own, used as they are (rsync: the file "ends up being created
 * in" the link's target). */
bool recv_follows_dest_links(const struct ferry_opts *o);

/* Print one item line the way rsync's client does for -v/-i/--out-format. */
void recv_log_item(struct recv_ctx *rc, const struct file_entry *f, int iflags,
		   const char *xname);

#endif
