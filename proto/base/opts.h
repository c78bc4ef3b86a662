/*
 * The transfer options: everything the engine needs to know about what the
 * user asked for. Filled once by the command-line parser (proto/args/options.c),
 * for a client from argv and for a server from the argument vector the client
 * sent; read-only afterwards.
 */
#ifndef FERRY_OPTS_H
#define FERRY_OPTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

/* The text an informational option asks for. The parser only records
 * it: the text belongs to the command-line front end (client/usage.c). */
enum opts_print {
	OPTS_PRINT_NONE,
	OPTS_PRINT_HELP,         /* --help, or -h alone */
	OPTS_PRINT_DAEMON_HELP,  /* --daemon --help */
	OPTS_PRINT_VERSION,      /* --version */
	OPTS_PRINT_VERSION_JSON, /* -VV */
	OPTS_PRINT_INFO_WORDS,   /* --info=help */
	OPTS_PRINT_DEBUG_WORDS,  /* --debug=help */
};

struct json_totals; /* proto/base/json.h */
struct exit_note;   /* proto/core/exit_line.h */

enum delete_mode {
	DELETE_NONE = 0,
	DELETE_DEFAULT, /* --delete: during for protocol >= 30, else before */
	DELETE_BEFORE,
	DELETE_DURING,
	DELETE_DELAY,
	DELETE_AFTER,
};

/* One --include/--exclude/--filter/-from rule, kept as rsync's rule text
 * ("- *.o", "+ dir/", ": .rules"), in command-line order. */
struct filter_arg {
	char *text;
	bool from_file;   /* a line of an --exclude-from/--include-from file */
};

/* --compare-dest / --copy-dest / --link-dest (rsync allows 20 in all, of
 * one kind) */
enum { ALT_DEST_COMPARE = 1, ALT_DEST_COPY = 2, ALT_DEST_LINK = 3 };
#define ALT_DEST_MAX 20

/* rsync's am_root as the options set it (options.c: 2 --super, 0
 * --no-super, -1 --fake-super); SUPER_DEFAULT: root when euid is 0. */
enum super_mode { SUPER_DEFAULT = 0, SUPER_ON, SUPER_OFF, SUPER_FAKE };

/* rsync's --info words, in its order (options.c: info_words). */
enum info_word {
	INFO_BACKUP, INFO_COPY, INFO_DEL, INFO_FLIST, INFO_MISC, INFO_MOUNT, INFO_NAME,
	INFO_NONREG, INFO_PROGRESS, INFO_REMOVE, INFO_SKIP, INFO_STATS, INFO_SYMSAFE,
	INFO_COUNT
};

/* The --debug words ferry reports on (rsync's debug_words, a subset). */
enum debug_word {
	DEBUG_DELTASUM, DEBUG_FILTER, DEBUG_FLIST, DEBUG_CMD, DEBUG_CONNECT, DEBUG_NSTR,
	DEBUG_FUZZY, DEBUG_COUNT
};

struct ferry_opts {
	/* mode of operation */
	bool server;       /* --server */
	bool sender;       /* --sender (with --server) */
	bool daemon;       /* --daemon */
	bool no_detach;    /* --no-detach */
	bool check_config; /* --daemon --check-config: load the config and exit */
	char *config_file; /* --config */
	char *dparam[32];  /* --dparam NAME=VALUE, daemon only */
	int ndparam;

	/* verbosity and output */
	int verbose;       /* -v count */
	bool quiet;        /* -q */
	bool no_motd;      /* --no-motd */
	int itemize;       /* -i count */
	char *out_format;  /* --out-format / --log-format */
	char *log_file;    /* --log-file */
	char *log_file_format; /* --log-file-format */
	bool stats;        /* --stats */
	int human;         /* -h count; 1 is rsync's default output unit */
	bool progress;     /* --progress (or --info=progress1) */
	bool progress2;    /* --info=progress2: one line for the whole transfer */
	bool json;         /* --json: progress, items and stats as JSON lines */
	struct json_totals *json_totals; /* --json: where a client's transfer leaves
					  * its totals for the end event (main's) */
	struct exit_note *exit_note; /* a client's closing-line facts, filled
				      * during the run (main's; NULL in a
				      * server or daemon) */
	bool list_only;    /* --list-only, or implied by a lone source */
	enum opts_print print_request; /* what --help, --version or
					* --info=help asked to be shown
					* (options_parse's FERRY_OPTS_EXIT_OK) */
	char *info;        /* --info=FLAGS, as given (comma-joined if repeated) */
	short info_level[INFO_COUNT]; /* from -v, --stats, --progress and --info
				       * (options.c: info_levels); see info_ge() */
	char *debug;       /* --debug=FLAGS, as given */
	short debug_level[DEBUG_COUNT]; /* from -vv... and --debug; see debug_ge() */
	bool msgs2stderr;  /* --msgs2stderr */

	/* what to transfer */
	bool recursive;    /* -r */
	bool no_inc_recursive; /* --no-inc-recursive */
	bool dirs;         /* -d; as rsync's xfer_dirs also set by -r and by a listing */
	bool links;        /* -l */
	bool perms;        /* -p */
	bool acls;         /* -A (implies -p) */
	int xattrs;        /* -X count: 2 also copies user.rsync.%* */
	bool executability; /* -E */
	bool times;        /* -t */
	bool omit_dir_times;  /* -O, or implied by --backup without --backup-dir */
	bool omit_dir_times_opt; /* -O as given: what a receiving server is told */
	bool omit_link_times; /* -J */
	bool group;        /* -g */
	bool owner;        /* -o */
	bool devices;      /* --devices (-D) */
	bool specials;     /* --specials (-D) */
	bool copy_devices; /* --copy-devices: a sender sends a device's contents
			    * as a regular file */
	bool write_devices; /* --write-devices: a receiver writes into an
			     * existing device in place (implies --inplace) */
	bool drop_devices; /* --drop-D: a receiver creates no devices or
			    * specials (the list keeps their rdev fields);
			    * never forwarded */
	bool qsort;        /* --qsort: rsync's unstable file-list sort; it
			    * turns incremental recursion off (compat.c) */
	bool hard_links;   /* -H */
	bool numeric_ids;  /* --numeric-ids */
	bool relative;     /* -R (also implied by --files-from) */
	bool no_implied_dirs; /* --no-implied-dirs (only meaningful with -R) */
	char *files_from;  /* --files-from FILE as given ("-", "host:FILE", ":FILE") */
	bool from0;        /* -0/--from0: lists are NUL-separated */
	int files_from_fd; /* a client's local --files-from list, opened by
			    * main() before the transfer; -1 otherwise */
	char *chmod;       /* --chmod=CHMOD (comma-joined if repeated) */

	/* how to decide what changed */
	bool checksum;     /* -c */
	bool size_only;    /* --size-only */
	bool ignore_times; /* -I */
	bool update;       /* -u */
	bool existing;     /* --existing */
	bool ignore_existing; /* --ignore-existing */
	int modify_window; /* --modify-window */

	/* how to transfer */
	int whole_file;    /* -W: 1 on, 0 off (--no-W), -1 default */
	bool inplace;      /* --inplace */
	int append;        /* 1 --append, 2 --append-verify (implies --inplace) */
	bool partial;      /* --partial */
	char *partial_dir; /* --partial-dir (or ".~tmp~" for --delay-updates) */
	bool partial_dir_implied; /* ... the --delay-updates default */
	bool delay_updates; /* --delay-updates */
	bool dry_run;      /* -n */
	long block_size;   /* -B, 0 = automatic */
	char *checksum_choice; /* --checksum-choice / --cc */
	uint32_t checksum_seed; /* --checksum-seed */
	bool checksum_seed_set;
	char *sums_cache;  /* --sums-cache: a file in the destination dir */

	/* deletion */
	enum delete_mode delete_mode;
	bool delete_excluded; /* --delete-excluded */
	long max_delete;   /* --max-delete, -1 = unlimited */
	bool ignore_errors; /* --ignore-errors */
	bool force;        /* --force */

	/* filters */
	struct filter_arg *filters;
	size_t nfilters;

	/* connection */
	int port;          /* --port, 0 = default */
	char *bind_address; /* --address */
	int ip_family;     /* 0, 4 or 6 (-4/-6) */
	int timeout;       /* --timeout seconds, 0 = none */
	int contimeout;    /* --contimeout seconds, 0 = none */
	char *password_file; /* --password-file */
	int protocol;      /* --protocol, 0 = newest */
	char *rsh;         /* -e / --rsh */
	char *rsync_path;  /* --rsync-path */
	char *ssh_mode;    /* --ssh=auto|builtin|spawn (NULL = auto) */
	char *ssh_cipher;  /* --ssh-cipher=LIST */
	char *sockopts;    /* --sockopts */
	bool blocking_io;  /* --blocking-io: accepted; ferry's remote-shell
	                    * I/O is always poll()-driven, so it changes nothing */
	char *early_input; /* --early-input=FILE: sent to the daemon before the
	                    * module name ("#early_input=LEN") */
	bool secluded_args; /* -s: the paths and options go over the protocol
	                     * stream, not the remote shell's command line */
	int old_args;      /* --old-args count (or RSYNC_OLD_ARGS): 1 stops
	                    * escaping file names for the remote shell, 2 also
	                    * option values */
	char *max_alloc;   /* --max-alloc=SIZE as given, forwarded to the server */
	long max_alloc_bytes; /* ... and parsed (0: no limit); see proto/base/alloc.h */
	char *copy_as;     /* --copy-as=USER[:GROUP]: the copying side becomes
			    * this user (root only; never sent to a server) */
	bool trust_sender; /* --trust-sender: no check of a remote sender's
			    * names against the request and the filters */

	/* compression (not supported yet; kept so the parser can refuse it) */
	int compress;      /* -z count */
	char *compress_choice;
	char *skip_compress;  /* --skip-compress LIST */
	int compress_level;
	int compress_threads; /* --compress-threads/--zt: zstd workers (0: none) */

	/* added for the option parser (proto/args/options.c) */
	bool dirs_explicit;   /* -d given without -r: sent to a server as 'd' */
	bool list_only_opt;   /* --list-only given (not just implied): sent on */
	bool no_msgs2stderr;  /* --no-msgs2stderr (rsync's --stderr=client) */
	bool modify_window_set; /* --modify-window / -@ given */
	bool eight_bit_output; /* -8 */
	bool compress_level_set; /* --compress-level / --zl given */
	char **remote_options; /* -M/--remote-option values, sent to the server */
	int nremote_options;
	char *server_caps;    /* with --server: the -e capability letters the
	                       * client sent (".LsfxCIvu"); rsh is set too */

	/* symlinks */
	bool copy_links;        /* -L */
	bool copy_unsafe_links; /* --copy-unsafe-links */
	bool copy_dirlinks;     /* -k */
	bool keep_dirlinks;     /* -K */
	bool safe_links;        /* --safe-links */
	bool munge_links;       /* --munge-links */
	bool insecure_links;    /* --insecure-links (local only, never sent on), or
				 * a daemon module's "insecure links": operator
				 * paths follow symlinks of any owner (oppath.h) */
	char *confine_root;     /* --confine-root=DIR (local only, never sent on;
				 * a daemon drops it) */
	int confine_fd;         /* DIR opened (OPPATH_ROOT_MISSING when it could
				 * not be), or -1: operator and merge-file paths
				 * must resolve inside it (oppath_*_under) */

	/* limits, safety and extras */
	int64_t max_size;  /* --max-size in bytes, -1 = none */
	int64_t min_size;  /* --min-size in bytes, -1 = none */
	long bwlimit;      /* --bwlimit in KiB/s, 0 = none */
	bool fsync;        /* --fsync */
	int64_t stop_at;   /* --stop-at / --stop-after as a Unix time, 0 = none */
	char outbuf;       /* --outbuf: 'N', 'L', 'B', or 0 for the default */
	bool sparse;       /* -S */
	bool open_noatime; /* --open-noatime */
	int super_mode;    /* SUPER_*: --super, --no-super, --fake-super */
	int atimes;        /* -U count: access times kept (-UU: and not changed) */
	bool prune_empty_dirs; /* -m */
	bool cvs_exclude;  /* -C */
	int missing_args;  /* 1 --ignore-missing-args, 2 --delete-missing-args */
	char *usermap;     /* --usermap, or "*:USER" from --chown */
	char *groupmap;    /* --groupmap, or "*:GROUP" from --chown */
	int remove_source_files; /* 1 --remove-source-files, 2 --remove-sent-files */
	bool preallocate;  /* --preallocate */
	int one_file_system; /* -x count */
	bool mkpath;       /* --mkpath */
	bool backup;       /* -b */
	char *backup_dir;  /* --backup-dir */
	char *suffix;      /* --suffix, NULL = "~" (or "" with --backup-dir) */
	char *temp_dir;    /* --temp-dir */
	bool temp_dir_trusted; /* ... from a daemon's "temp dir": not confined */
	int alt_dest_mode; /* ALT_DEST_COMPARE/COPY/LINK, 0 = none */
	char *alt_dest[ALT_DEST_MAX]; /* --compare-dest/--copy-dest/--link-dest */
	int nalt_dest;
	int fuzzy;         /* -y count: 1 the destination dir, 2 also the --*-dest dirs */

	/* batch mode (proto/delta/batch.h) */
	char *batch_name;  /* --write-batch/--only-write-batch/--read-batch FILE */
	int write_batch;   /* 1 --write-batch, -1 --only-write-batch, 0 none */
	bool read_batch;   /* --read-batch */
	char **raw_argv;   /* the command line as typed, for FILE.sh */
	int raw_argc;

	/* the remaining non-option arguments */
	char **args;
	int nargs;

	/* why options_parse* failed, without "ferry: " (options_last_error);
	 * "" when it did not */
	char parse_error[512];
};

/* Is informational output `w` at `level` or above wanted (rsync's
 * INFO_GTE)? */
static inline bool info_ge(const struct ferry_opts *o, enum info_word w, int level)
{
	return o->info_level[w] >= level;
}

/* Is debugging output `w` at `level` or above wanted (DEBUG_GTE)? */
static inline bool debug_ge(const struct ferry_opts *o, enum debug_word w, int level)
{
	return o->debug_level[w] >= level;
}

/* The --confine-root directory fd for oppath_*_under, or -1. Keyed on the
 * name too: an opts struct zeroed without opts_init has fd 0, no root. */
static inline int opts_confine_fd(const struct ferry_opts *o)
{
	return o->confine_root ? o->confine_fd : -1;
}

#endif
