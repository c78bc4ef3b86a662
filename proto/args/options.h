/*
 * Command-line options: rsync's whole option table, parsed into a
 * struct ferry_opts (proto/base/opts.h), and the argument vector a client sends
 * to a server. Mirrors rsync options.c (parse_arguments, server_options).
 *
 * Every option rsync knows has one row in options_table[] (options_table.c)
 * with its long name, short letter, argument kind, help text and a
 * `supported` flag. A recognised option whose flag is false makes parsing
 * fail with "ferry: --OPTION is not supported yet" and exit code 1; it is
 * never silently ignored. Enabling an option is a one-word change there
 * (plus whatever the engine needs).
 */
#ifndef FERRY_OPTIONS_H
#define FERRY_OPTIONS_H

#include <stdbool.h>
#include <time.h>
#include <stdio.h>

#include "proto/base/opts.h"
#include "proto/base/version.h"
#include "proto/base/wire.h" /* enum rerr: rsync's exit codes */

#define FERRY_PROTOCOL_VERSION 32
#define FERRY_PROTOCOL_OLDEST 27

/* options_parse() result for --help/--version/--info=help: exit 0 once the
 * front end has printed what o->print_request names (client/usage.h). */
#define FERRY_OPTS_EXIT_OK (-1)


/* Flags for options_parse_flags(). */
#define OPTS_FROM_REMOTE 0x1u /* argv came from a client over a daemon
			       * connection: refuse --daemon and friends and
			       * --help/--version/--info=help, print nothing
			       * (read options_last_error() and send it as
			       * rsync does, "ferry: <text>"), never read stdin */

/*
 * Fill *o from argv (argv[0] is the program name and is skipped).
 * Returns 0 to go on; FERRY_OPTS_EXIT_OK after printing --help/--version
 * output to stdout (exit 0); otherwise a positive rsync exit code after the
 * error was printed to stderr (RERR_SYNTAX for usage errors, RERR_FILEIO for
 * an unreadable --exclude-from file, RERR_UNSUPPORTED for an unknown
 * --checksum-choice name, as rsync). *o is always initialised, so
 * options_free() may be called whatever the result.
 *
 * Besides the plain option values it applies rsync's post-processing
 * (options.c: parse_arguments): a lone source (fewer than two arguments)
 * implies list_only; -r and a listing imply dirs; --delete-excluded implies
 * --delete; --inplace clears partial; --checksum-choice=none forces
 * whole_file; "-h" (or any -h count > 1) as the only argument prints help.
 * A server (--server) takes the -e value as the client's capability letters
 * (server_caps) and ignores --info/--debug words it does not know.
 * Uses getopt_long, so it is not thread-safe (the daemon forks first).
 */
int options_parse(struct ferry_opts *o, int argc, char **argv);
int options_parse_flags(struct ferry_opts *o, int argc, char **argv,
			unsigned flags);
/* The text of the error options_parse*() reported while filling o,
 * without the "ferry: " prefix or newline; "" when none. */
const char *options_last_error(const struct ferry_opts *o);
void options_free(struct ferry_opts *o);
/* A daemon module's "max verbosity": -v and every info level no higher
 * than that many -v give (options.c: limit_output_verbosity). */
void options_limit_verbosity(struct ferry_opts *o, int max);

/* A daemon module's "refuse options": a flag per options_table row
 * (malloc'd, free() it). options_parse_refusing() then fails on a refused
 * option with rsync's "The server is configured to refuse --NAME" and
 * RERR_UNSUPPORTED (also when a --delete-WHEN implies a refused --delete). */
bool *options_refusals(const char *list);
int options_refused_row(const bool *refused, const char *name);
int options_parse_refusing(struct ferry_opts *o, int argc, char **argv, unsigned flags,
			   const bool *refused);

/*
 * The argument vector a client sends to a server (a daemon, or
 * `ferry/rsync --server` over a remote shell), mirroring rsync
 * options.c:server_options(): "--server", "--sender" when the server sends,
 * "-<flag letters>" in rsync's order with "e.LsfxCIvu" appended when
 * protocol >= 30 (incremental recursion 'i' is never offered), the long
 * options rsync would send for what is set (delete options only in a push,
 * where the server deletes), the -M/--remote-option values, then "." — the
 * caller appends the path arguments (see options_safe_arg()). protocol 0
 * means FERRY_PROTOCOL_VERSION. Returns a NULL-terminated malloc'd vector
 * (free with options_free_argv()); NULL only when out of memory.
 */
char **options_server_argv(const struct ferry_opts *o, bool server_is_sender,
			   int protocol);
void options_free_argv(char **argv);

/*
 * rsync options.c:safe_arg(): backslash-escape what the remote shell would
 * interpret. opt == NULL: arg is a file name (wildcards kept, a leading '-'
 * becomes "./-"; escape_tilde puts a backslash before a leading '~', which
 * rsync does for a receiving client's remote source args); opt == "": an
 * option value (wildcards escaped too); otherwise returns "opt=<escaped arg>".
 * Returns a malloc'd string, NULL when out of memory.
 */
char *options_safe_arg(const char *opt, const char *arg, bool escape_tilde);

/* --files-from=[host]:FILE: the FILE part when the list is on the remote
 * end (main.c: check_for_hostspec), NULL when it is local or absent; the
 * host ("" for ":FILE") goes into host when it is not NULL. */
const char *options_files_from_remote(const struct ferry_opts *o, char *host, size_t hostsize);

/* options_safe_arg() as o asks: nothing is escaped with --secluded-args
 * (the arguments never meet a shell) or with --old-args twice; with one
 * --old-args, file names and the -M values (split_when_old) are not
 * escaped, so the remote shell splits them as rsync before 3.2.4 did. */
char *options_remote_arg(const struct ferry_opts *o, const char *opt, const char *arg,
			 bool split_when_old);

/* With --secluded-args, the number of leading elements of a
 * options_server_argv() vector that go on the remote command line; the
 * rest (and the paths) are sent over the connection. */
int options_secluded_split(char **server_args);

/* ---- the option table (options_table.c) ---- */

enum opt_argkind { OA_NONE, OA_REQ };

/* Which parser sees a row: the normal one, the daemon one (after --daemon
 * and friends, as rsync re-parses argv with its daemon table), or both. */
#define OM_CLIENT 0x1u
#define OM_DAEMON 0x2u
#define OM_BOTH (OM_CLIENT | OM_DAEMON)

struct opt_spec {
	const char *name;     /* long name without "--"; NULL: short only */
	char shortopt;        /* short letter, 0 if none */
	unsigned char arg;    /* enum opt_argkind */
	unsigned char modes;  /* OM_* */
	bool supported;       /* false: recognised, refused with an error */
	short id;             /* OPT_* action, see options.c */
	short val;            /* value the action stores (negations: 0) */
	const char *argname;  /* "FILE" in --exclude-from=FILE; NULL if none */
	const char *help;     /* --help text; NULL: not listed (an alias) */
	const char *display;  /* --help left column override, or NULL */
	const char *dhelp;    /* --daemon --help text, or NULL */
};

extern const struct opt_spec options_table[];
extern const int options_table_len;

/* Option actions (opt_spec.id). */
enum opt_id {
	OPT_NONE = 0,     /* a help-only line, never parsed */
	OPT_HELP, OPT_VERSION, OPT_VERBOSE, OPT_QUIET, OPT_INFO, OPT_DEBUG,
	OPT_STDERR, OPT_MSGS2STDERR, OPT_MOTD, OPT_CHECKSUM, OPT_ARCHIVE,
	OPT_RECURSIVE, OPT_INC_RECURSIVE, OPT_RELATIVE, OPT_IMPLIED_DIRS,
	OPT_BACKUP, OPT_BACKUP_DIR, OPT_SUFFIX, OPT_UPDATE, OPT_INPLACE,
	OPT_APPEND, OPT_APPEND_VERIFY, OPT_DIRS, OPT_OLD_DIRS, OPT_MKPATH,
	OPT_LINKS, OPT_COPY_LINKS, OPT_COPY_UNSAFE_LINKS, OPT_SAFE_LINKS,
	OPT_INSECURE_LINKS, OPT_CONFINE_ROOT, OPT_MUNGE_LINKS,
	OPT_COPY_DIRLINKS, OPT_KEEP_DIRLINKS, OPT_HARD_LINKS, OPT_PERMS,
	OPT_EXECUTABILITY, OPT_CHMOD, OPT_ACLS, OPT_XATTRS, OPT_OWNER,
	OPT_GROUP, OPT_DEVICES, OPT_COPY_DEVICES, OPT_WRITE_DEVICES,
	OPT_SPECIALS, OPT_DROP_D, OPT_D, OPT_TIMES, OPT_ATIMES,
	OPT_OPEN_NOATIME, OPT_CRTIMES, OPT_OMIT_DIR_TIMES, OPT_OMIT_LINK_TIMES,
	OPT_SUPER, OPT_FAKE_SUPER, OPT_SPARSE, OPT_PREALLOCATE, OPT_DRY_RUN,
	OPT_WHOLE_FILE, OPT_CHECKSUM_CHOICE, OPT_ONE_FILE_SYSTEM,
	OPT_BLOCK_SIZE, OPT_RSH, OPT_RSYNC_PATH, OPT_EXISTING,
	OPT_IGNORE_EXISTING, OPT_REMOVE_SOURCE_FILES,
	OPT_DELETE, OPT_DELETE_BEFORE, OPT_DELETE_DURING, OPT_DELETE_DELAY,
	OPT_DELETE_AFTER, OPT_DELETE_EXCLUDED, OPT_MISSING_ARGS,
	OPT_IGNORE_ERRORS, OPT_FORCE, OPT_MAX_DELETE, OPT_MAX_SIZE,
	OPT_MIN_SIZE, OPT_MAX_ALLOC, OPT_PARTIAL, OPT_PARTIAL_DIR,
	OPT_DELAY_UPDATES, OPT_PRUNE_EMPTY_DIRS, OPT_NUMERIC_IDS, OPT_USERMAP,
	OPT_GROUPMAP, OPT_CHOWN, OPT_TIMEOUT, OPT_CONTIMEOUT, OPT_IGNORE_TIMES,
	OPT_SIZE_ONLY, OPT_MODIFY_WINDOW, OPT_TEMP_DIR, OPT_FUZZY,
	OPT_ALT_DEST, OPT_COMPRESS, OPT_OLD_COMPRESS, OPT_NEW_COMPRESS,
	OPT_COMPRESS_CHOICE, OPT_COMPRESS_LEVEL, OPT_COMPRESS_THREADS,
	OPT_SKIP_COMPRESS, OPT_CVS_EXCLUDE, OPT_FILTER, OPT_F, OPT_EXCLUDE,
	OPT_EXCLUDE_FROM, OPT_INCLUDE, OPT_INCLUDE_FROM, OPT_FILES_FROM,
	OPT_FROM0, OPT_OLD_ARGS, OPT_SECLUDED_ARGS, OPT_TRUST_SENDER,
	OPT_COPY_AS, OPT_ADDRESS, OPT_PORT, OPT_SOCKOPTS, OPT_BLOCKING_IO,
	OPT_OUTBUF, OPT_STATS, OPT_8BIT, OPT_HUMAN, OPT_PROGRESS, OPT_P,
	OPT_ITEMIZE, OPT_REMOTE_OPTION, OPT_OUT_FORMAT, OPT_LOG_FILE,
	OPT_LOG_FILE_FORMAT, OPT_PASSWORD_FILE, OPT_EARLY_INPUT, OPT_LIST_ONLY,
	OPT_BWLIMIT, OPT_STOP_AFTER, OPT_STOP_AT, OPT_FSYNC, OPT_WRITE_BATCH,
	OPT_READ_BATCH, OPT_PROTOCOL, OPT_ICONV, OPT_CHECKSUM_SEED, OPT_IPV4,
	OPT_IPV6, OPT_QSORT, OPT_SERVER, OPT_SENDER, OPT_DAEMON, OPT_CONFIG,
	OPT_DPARAM, OPT_DETACH, OPT_SSH_MODE, OPT_SSH_CIPHER, OPT_SUMS_CACHE, OPT_JSON,
	OPT_CHECK_CONFIG,
	OPT_ID_COUNT      /* the number of ids, not an option */
};

/* ---- stop_time.c ---- */

/* --stop-at's argument as a time after now, or (time_t)-1 when invalid. */
time_t stop_at_parse(const char *arg, time_t now);


/* The --info/--debug words (options.c); NULL-terminated. */
struct output_word {
	const char *name;
	const char *help;
	unsigned char where; /* W_* bits */
};
#define W_CLI (1u << 0) /* client side */
#define W_SRV (1u << 1) /* server side */
#define W_SND (1u << 2) /* sending side */
#define W_REC (1u << 3) /* receiving side */
extern const struct output_word options_info_words[];
extern const struct output_word options_debug_words[];

/* Parse comma-separated --info/--debug words as rsync
 * options.c:parse_output_words(): levels[j]/set[j] (OPTIONS_MAX_WORDS
 * slots) receive the level of each word named, "all"/"none" name them all.
 * Returns 0; 1 for "help"; -1 for an unknown word (copied into bad), unless
 * tolerant (a server ignores words it does not know). */
#define OPTIONS_MAX_WORDS 32
int options_parse_words(const struct output_word *words, const char *str, short *levels,
			bool *set, bool tolerant, char *bad, size_t badsz);

/* The command line's filter rules failed to parse (filter_list_from_opts):
 * say so as rsync's client does while it reads its options, "[client]"
 * for a file it cannot open, and return the exit code, RERR_FILEIO for
 * such a file, else RERR_SYNTAX (exclude.c: parse_filter_file). */
struct filter_list;
int options_filter_failed(const struct ferry_opts *o, const struct filter_list *fl,
			  const char *err);

#endif
