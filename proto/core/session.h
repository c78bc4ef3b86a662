/*
 * One transfer session: the negotiated protocol facts, the two byte
 * streams, the statistics, and the options it runs with. Passed explicitly
 * to every function of the engine.
 */
#ifndef FERRY_SESSION_H
#define FERRY_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "proto/base/checksum.h"
#include "proto/base/chmod.h"
#include "proto/core/flist.h"
#include "proto/base/opts.h"
#include "proto/base/wire.h"

struct log_item;

#define PROTOCOL_NEWEST 32
#define PROTOCOL_OLDEST 27

/* What a daemon with "munge symlinks" puts before every symlink target. */
#define SYMLINK_MUNGE_PREFIX "/rsyncd-munged/"

/* Compat flags (compat.c). */
#define CF_INC_RECURSE (1u << 0)
#define CF_SYMLINK_TIMES (1u << 1)
#define CF_SYMLINK_ICONV (1u << 2)
#define CF_SAFE_FLIST (1u << 3)
#define CF_AVOID_XATTR_OPTIM (1u << 4)
#define CF_CHKSUM_SEED_FIX (1u << 5)
#define CF_INPLACE_PARTIAL_DIR (1u << 6)
#define CF_VARINT_FLIST_FLAGS (1u << 7)
#define CF_ID0_NAMES (1u << 8)

/* Item flags (rsync.h: ITEM_*). */
#define ITEM_REPORT_ATIME (1 << 0)
#define ITEM_REPORT_CHANGE (1 << 1)
#define ITEM_REPORT_SIZE (1 << 2)
#define ITEM_REPORT_TIMEFAIL (1 << 2)
#define ITEM_REPORT_TIME (1 << 3)
#define ITEM_REPORT_PERMS (1 << 4)
#define ITEM_REPORT_OWNER (1 << 5)
#define ITEM_REPORT_GROUP (1 << 6)
#define ITEM_REPORT_ACL (1 << 7)
#define ITEM_REPORT_XATTR (1 << 8)
#define ITEM_REPORT_CRTIME (1 << 10)
#define ITEM_BASIS_TYPE_FOLLOWS (1 << 11)
#define ITEM_XNAME_FOLLOWS (1 << 12)
#define ITEM_IS_NEW (1 << 13)
#define ITEM_LOCAL_CHANGE (1 << 14)
#define ITEM_TRANSFER (1 << 15)
/* not sent */
#define ITEM_MISSING_DATA (1 << 16)
#define ITEM_DELETED (1 << 17)
#define ITEM_MATCHED (1 << 18)

#define SIGNIFICANT_ITEM_FLAGS                                                     \
	(~(ITEM_BASIS_TYPE_FOLLOWS | ITEM_XNAME_FOLLOWS | ITEM_LOCAL_CHANGE))

#define FNAMECMP_FNAME 0x80
#define FNAMECMP_PARTIAL_DIR 0x81
#define FNAMECMP_BACKUP 0x82
#define FNAMECMP_FUZZY 0x83   /* + level: -y's basis, named in the xname */

struct stats {
	int64_t total_size;          /* sizes of regular files and symlinks */
	int64_t total_transferred_size;
	int64_t literal_data;
	int64_t matched_data;
	int64_t flist_size;
	int64_t flist_buildtime_ms;
	int64_t flist_xfertime_ms;
	int64_t total_read, total_written; /* as reported at the end */
	int num_files, num_reg, num_dirs, num_symlinks, num_devices, num_specials;
	int created_files, created_reg, created_dirs, created_symlinks,
		created_devices, created_specials;
	int deleted_files, deleted_reg, deleted_dirs, deleted_symlinks,
		deleted_devices, deleted_specials;
	int xferred_files;
};

/* Add one to a count that both threads of a receiving side keep
 * (created_files, created_reg): atomic, or one thread's increment could
 * undo the other's. Read once the threads have ended. */
static inline void stats_bump(int *count)
{
	__atomic_fetch_add(count, 1, __ATOMIC_RELAXED);
}

/* Names of uids/gids sent by the peer, to map them to local ids. */
/* One --usermap/--groupmap (or --chown) rule: a sender name pattern, or
 * a sender id range, and the local id it becomes. */
struct id_rule {
	char *pattern;     /* name or wildcard; NULL for an id range */
	uint32_t lo, hi;   /* the id range when pattern is NULL */
	uint32_t to;
};

struct id_map {
	uint32_t *from;
	uint32_t *to;
	size_t count, cap;
	struct id_rule *rules; /* in the order given; the first match wins */
	size_t nrules;
	bool rules_parsed;
};

struct session;
/* Frees state a module hangs on the session (see session_on_free). */
typedef void (*session_cleanup_fn)(struct session *s);
/* How many modules may register a clean-up: acls, xattrs, idmap so far. */
#define SESSION_CLEANUPS_MAX 8

/* A daemon module's policy for the session (daemon/serve.c sets it
 * before the transfer; outside a daemon only munge_symlinks may be on,
 * from --munge-links). Set once, like everything in it. */
struct session_module {
	bool munge_symlinks;        /* "munge symlinks": /rsyncd-munged/ prefix */
	bool sanitize_links;        /* a daemon without chroot: received link
				     * targets climb no higher than their own
				     * depth (rsync: sanitize_paths) */
	bool ids_by_number;         /* "numeric ids": no name mapping, no names sent */
	bool ignore_nonreadable;    /* "ignore nonreadable": leave them out */
	const char *dont_compress;  /* "dont compress" (NULL outside a daemon) */
	/* Its name, which rsync's full_fname() adds to names as " (in NAME)"
	 * (NULL outside a daemon), and whether it is chrooted (its root is
	 * then named "/"). */
	const char *name;
	bool chrooted;
	/* "transfer logging": each item line in the module's "log format"
	 * (NULL: none), with the connection's %m %P %h %a %u taken from
	 * xfer_log_who, goes to hooks.xfer_log_line. */
	const char *xfer_log_format;
	const struct log_item *xfer_log_who;
};

/* What the engine calls back into the program that runs it: the role,
 * the daemon. Set once, before the transfer. */
struct session_hooks {
	/* a daemon's transfer log line (see session_module.xfer_log_format) */
	void (*xfer_log_line)(void *ctx, const char *line);
	/* Called for every file sent or received (unused: see xfer_log_line). */
	void (*xfer_log)(void *ctx, const struct file_entry *f, int iflags);
	void *xfer_log_ctx;
	/* --remove-source-files on the sending side: the receiver reports a
	 * file safely in place (MSG_SUCCESS, with the destination's dev and
	 * inode in a local copy, or 0/0) */
	void (*on_success)(void *ctx, int32_t ndx, int64_t dev, int64_t ino);
	void *on_success_ctx;
	/* MSG_NO_SEND: the sender could not open a file we asked for */
	void (*on_no_send)(void *ctx, int32_t ndx);
	void *on_no_send_ctx;
	/* the daemon log every message goes to as well (proto/core/msg.h;
	 * NULL outside a daemon) */
	void (*daemon_log_line)(void *ctx, const char *line);
	void *daemon_log_ctx;
};

/*
 * The session holds two kinds of fields, in two halves:
 *
 * - Set once: the options, the facts negotiated with the peer, the roles,
 *   the compression settings, the module policy, the hooks and the output
 *   streams. They are written by session_init, negotiate_client/_server
 *   (proto/run/negotiate.c), session_set_privilege, and the set-up of the
 *   role or the daemon module (recv_run sets hooks.on_no_send before it
 *   starts the generator), all before the first file is requested; from
 *   then on every thread only reads them.
 * - Per-transfer state: the two wire streams and their error, the
 *   statistics, the error and exit flags, the id maps and list decoder
 *   that grow with the list, the progress counters, the ACL/xattr tables
 *   and the clean-up list. Fields the generator and receiver threads both
 *   write say how they share them.
 *
 * The negotiated facts stay plain fields (s->protocol, s->opts are on
 * every path); the module policy and the hooks are groups of their own.
 */
struct session {
	/* ---- set once ---- */
	const struct ferry_opts *opts;
	int protocol;              /* negotiated */
	uint32_t compat_flags;
	int32_t seed;
	enum csum_type xfer_csum;  /* block and whole-file sums */
	enum csum_type flist_csum; /* --checksum sums */
	bool proper_seed_order;
	bool varint_flist_flags;
	bool id0_names;
	bool safe_flist;
	bool inc_recurse;          /* CF_INC_RECURSE: the file list comes in
				    * per-directory parts (flist_inc.c) */
	bool am_server;
	bool am_sender;
	bool am_root;
	bool fake_super;             /* --fake-super: privileged attributes in
	                            * user.rsync.%stat (proto/meta/fakesuper.h) */
	bool local_copy;            /* a half of a local copy: items show '>' */
	int namecvt_req_fd, namecvt_ans_fd; /* a daemon's "name converter":
	                            * requests, answers (-1: none; idmap.c) */

	/* Compression of file data (negotiate.c; proto/delta/token.h). */
	int compress;              /* CPRES_*: the algorithm in use, 0 = none */
	int compress_level;        /* its resolved level */
	bool compress_adaptive;    /* no --compress-level: ferry's probe rule */
	const char *skip_compress; /* --skip-compress LIST (NULL: not given) */

	struct chmod_rules chmod;   /* --chmod, applied to the local side's list */
	mode_t umask_bits;          /* the process's umask, read once by
				     * session_init: reading it means setting
				     * it, which no thread may race */
	int64_t run_start_ms;       /* wire_now_ms() at session_init: --json's elapsed_ms */

	struct session_module module; /* a daemon module's policy */
	struct session_hooks hooks;

	FILE *info;                 /* where MSG_INFO and our -v output go */
	FILE *errors;               /* where errors and warnings go (NULL:
				     * stderr; tests capture them) */
	FILE *log_fp;               /* --log-file, or NULL */

	/* ---- per-transfer state ---- */
	struct wire_error err;
	struct wire_in in;          /* read by one thread (the receiver, the sender) */
	struct wire_out out;        /* shared, under its own lock (wire_out_lock) */

	struct stats stats;
	int io_error;               /* IOERR_* bits seen (ours and the peer's) */
	bool got_xfer_error;        /* a file failed: exit 23 */
	int peer_exit_code;         /* from MSG_ERROR_EXIT */
	bool peer_exit_line;        /* the peer's last error was its closing line */
	bool output_needs_newline;  /* "building file list ... " awaits "done" */

	struct id_map uids, gids;
	struct flist_codec fl;      /* file-list decoding state */
	const char *log_dir;        /* the sender's source dir of the file it
				     * logs next (%f), or NULL */

	/* --info=progress2 / --json: the whole transfer's progress */
	int64_t progress_done;      /* bytes of the files finished so far */
	int progress_checked;       /* entries of the sorted list passed so far */
	bool progress_ir;           /* incremental lists still coming: "ir-chk" */
	int64_t progress_start_ms, progress_last_ms;

	/* -A/-X: ACLs and xattr sets seen in the file list (acls.c, xattrs.c). */
	struct acl_state *acl_state;
	struct xattr_state *xattr_state;

	/* What session_free runs for the modules above (session_on_free):
	 * the session is the bottom layer and names none of them. */
	session_cleanup_fn cleanups[SESSION_CLEANUPS_MAX];
	unsigned ncleanups;
	pthread_mutex_t cleanup_lock;
};

/* The IOERR_* bits seen: the receiving side's two threads both add to
 * them and read them (the generator before deleting), so every access is
 * atomic. */
static inline void session_io_error_add(struct session *s, int bits)
{
	__atomic_fetch_or(&s->io_error, bits, __ATOMIC_RELAXED);
}

static inline int session_io_error(const struct session *s)
{
	return __atomic_load_n(&s->io_error, __ATOMIC_RELAXED);
}


/* --log-file (logfile.c): opened by session_init when asked for; lines
 * are stamped with the time and our pid. */
void logfile_open(struct session *s);
void logfile_write(struct session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void logfile_close(struct session *s);
/* A line for the --log-file named file after its session has ended (the
 * client's closing line), stamped and escaped as logfile_write's are. */
void logfile_append(const char *file, const char *text);

/* Record the peer's name for an id and the local id it maps to. */
/* The name of our user (is_user) or group id, into buf: from a daemon's
 * name converter when there is one, else the passwd/group files. NULL
 * when it has none. */
const char *id_local_name(struct session *s, bool is_user, uint32_t id, char *buf,
			  size_t size);
bool id_map_add(struct session *s, struct id_map *map, uint32_t id, const char *name,
		bool is_user);
/* Map an entry's uid/gid to local ids as rsync's match_uid/match_gid do. */
void id_map_apply(struct session *s, struct file_entry *f);
/* Read --usermap/--groupmap (rsync uidlist.c: parse_name_map). False,
 * with the error reported and the exit code set, for a malformed map. */
bool id_rules_parse(struct session *s, struct id_map *map, const char *spec, bool users);

void session_init(struct session *s, const struct ferry_opts *opts, int fd_in, int fd_out);
/* am_root and fake_super from s->opts->super_mode and our euid (again
 * after a daemon drops privileges or a module says "fake super"). */
void session_set_privilege(struct session *s);
/* Run the registered clean-ups (last registered first), then free what
 * the session itself holds. */
void session_free(struct session *s);
/* Have session_free call fn(s): for state a module hangs on the session
 * and frees itself. Registering the same fn again is a no-op. Safe from
 * any thread. False only when SESSION_CLEANUPS_MAX is exceeded (a
 * programming error; the state then leaks until the process ends). */
bool session_on_free(struct session *s, session_cleanup_fn fn);

/* The wrappers below all go through the one message path (proto/core/msg.h).
 * Print an error like rsync's rprintf(FERROR): "ferry: ..." on stderr. */
void session_err(struct session *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* As session_err, without the prefix: rsync's rprintf(FERROR) of a line
 * that starts with its own "ERROR: ...". */
void session_err_plain(struct session *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* An error about one file (rprintf(FERROR_XFER)): as session_err, but a
 * server sends it as MSG_ERROR_XFER, and the run exits 23. */
void session_xfer_err(struct session *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* As session_xfer_err, without the prefix: rsync's rprintf(FERROR_XFER)
 * of its own text (rsyserr's messages carry the name, these do not). */
void session_xfer_err_plain(struct session *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A warning as rsync's rprintf(FWARNING) prints it: the text as given, no
 * "ferry:" prefix, on stderr (a server sends it as MSG_WARNING). */
void session_warn(struct session *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Informational output (rsync's FINFO): stdout for a client, and the
 * log. */
void session_info(struct session *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* As session_info, but never logged (rsync's FCLIENT: "is uptodate"). */
void session_client(struct session *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The final exit code: the stream error if any, else derived from io_error
 * and transfer errors as rsync's _exit_cleanup() does. */
int session_exit_code(struct session *s);

#endif
