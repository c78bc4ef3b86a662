/*
 * Filter rules (--filter/--include/--exclude and friends), with rsync's
 * syntax and matching semantics (exclude.c), and the filter list on the
 * wire (docs/protocol.md section 7).
 *
 * A filter_list holds the rules in order. Matching is first-match-wins.
 * Per-directory merge files (dir-merge / ':' rules) are kept as rules and
 * sent on the wire; their files are read while walking a tree with
 * filter_push_dir()/filter_pop_dir(), and their rules then take part in
 * filter_check() at the dir-merge rule's place in the list.
 */
#ifndef FERRY_FILTER_H
#define FERRY_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ferry_opts;
struct session;

/* Rule flags (rsync.h: FILTRULE_*). */
#define FR_WILD (1u << 0)          /* pattern has '*', '[' or '?' */
#define FR_WILD2 (1u << 1)         /* pattern has "**" */
#define FR_WILD2_PREFIX (1u << 2)  /* pattern starts with "**" */
#define FR_WILD3_SUFFIX (1u << 3)  /* pattern ends with "***" */
#define FR_ABS_PATH (1u << 4)      /* '/' modifier: match the absolute path */
#define FR_INCLUDE (1u << 5)       /* include (+, S, R), else exclude */
#define FR_DIRECTORY (1u << 6)     /* trailing '/': directories only */
#define FR_WORD_SPLIT (1u << 7)    /* 'w': merge file split on whitespace */
#define FR_NO_INHERIT (1u << 8)    /* 'n': per-dir rules not inherited */
#define FR_NO_PREFIXES (1u << 9)   /* '+'/'-' modifier: no rule prefixes */
#define FR_MERGE_FILE (1u << 10)   /* '.' or ':' */
#define FR_PERDIR_MERGE (1u << 11) /* ':' (dir-merge) */
#define FR_EXCLUDE_SELF (1u << 12) /* 'e' */
#define FR_NEGATE (1u << 14)       /* '!' modifier */
#define FR_CVS_IGNORE (1u << 15)   /* 'C' */
#define FR_SENDER_SIDE (1u << 16)  /* 's', H, S */
#define FR_RECEIVER_SIDE (1u << 17) /* 'r', P, R */
#define FR_CLEAR_LIST (1u << 18)   /* '!' rule */
#define FR_PERISHABLE (1u << 19)   /* 'p' */
#define FR_XATTR (1u << 20)        /* 'x': matches xattr names only */
#define FR_FROM_FILE (1u << 21)    /* read from a file: its text is not shown */
#define FR_SIDES (FR_SENDER_SIDE | FR_RECEIVER_SIDE)

/* How a file named by the rules failed to open: the name and errno are
 * told (rsync's rsyserr), or, the name being a file's contents, hidden
 * (exclude.c: parse_filter_file). */
#define FILTER_OPEN_NAMED 1
#define FILTER_OPEN_HIDDEN 2

/* filter_parse_rule() flags. */
#define FILTER_PARSE_OLD_PREFIXES 0x01 /* only "- "/"+ " prefixes (--exclude,
					* and the list of a protocol < 29 peer) */
#define FILTER_PARSE_INCLUDE 0x02      /* with OLD_PREFIXES: default include */
#define FILTER_PARSE_DELETE_EXCLUDED 0x04 /* --delete-excluded: plain rules
					   * become sender-side (parse_rule_tok) */
#define FILTER_PARSE_FROM_PEER 0x08    /* the peer's rule: never read stdin,
					* no '.' merge files, no parent scan */
#define FILTER_PARSE_FROM_FILE 0x10    /* a line of a file the options read:
					* its text is not shown (FR_FROM_FILE) */
#define FILTER_PARSE_WORD_SPLIT 0x20   /* whitespace separates rules, and a
					* rule's prefix from its pattern (a
					* daemon module's filter/exclude) */
#define FILTER_PARSE_DIR2WILD3 0x40    /* a directory exclude "d/" becomes
					* "d" + "/" + "***", covering its subtree
					* (a daemon module's rules) */

/* filter_check_flags() flags. */
#define FILTER_CHECK_DIR 0x01
#define FILTER_CHECK_RECEIVER 0x02     /* deletion side: receiver's rules */
#define FILTER_CHECK_IGNORE_PERISHABLE 0x04 /* skip 'p' rules (rsync's
					     * ignore_perishable) */

struct filter_dm;

struct filter_rule {
	uint32_t flags;     /* FR_* */
	char *pattern;      /* without a dir-only rule's trailing '/' */
	unsigned slash_cnt; /* slashes in pattern (anchored per-dir: with prefix) */
	struct filter_dm *dm; /* per-directory state of a dir-merge rule */
};

struct filter_rules {
	struct filter_rule **v;
	size_t n, cap;
};

struct filter_list {
	struct filter_rules rules; /* in order; first match wins */
	struct filter_rules cvs;   /* what a "-C" rule stands for */
	bool cvs_loaded;
	int protocol;              /* for "-C" rules: perishable if >= 30 */
	bool from_peer;            /* rules came from the peer (a server) */
	unsigned oppath_how;       /* OPPATH_* for opening merge files (oppath.h) */
	bool confined_root;        /* --confine-root: merge files must resolve */
	int confine_fd;            /* ... inside this directory (oppath_*_under) */
	/* a daemon module reads a peer's '.' merge file beneath
	 * peer_merge_root, as if absent when peer_merge_hidden (the
	 * module's rules) excludes it; otherwise such a rule is refused */
	bool peer_merge_ok;
	int peer_merge_root;
	const struct filter_list *peer_merge_hidden;
	bool delete_excluded;      /* parsed for --delete-excluded */
	char *abs_root;            /* absolute transfer root, for '/' rules */
	bool abs_root_fixed;       /* set by filter_set_abs_root() */
	/* active dir-merge rules, outermost first */
	struct filter_dm **dms;
	size_t ndms, dmcap;
	int depth;                 /* filter_push_dir() nesting */
	int merge_depth;           /* nested merge files being read */
	/* a failed parse could not open a file (FILTER_OPEN_*, 0 if not) */
	int open_failed;
	bool err_io;               /* the last error was a merge file that could
				    * not be opened or nested too deep (exit 11,
				    * RERR_FILEIO), not a bad rule (exit 1) */
	bool err_soft;             /* filter_push_dir() failed only for this
				    * directory (a name too long): the transfer
				    * goes on without its rules, exit 23 */
	/* -vv: each match as rsync's report_filter_result() words it,
	 * "[sender] hiding file X because of pattern P\n", to report() */
	void (*report)(void *ctx, const char *line);
	void *report_ctx;
	/* --debug=FILTER: each rule as it is added, "[WHO] add_rule(RULE)"
	 * (level 1: a rule ending in whitespace, 2: all) to report(); the
	 * lines from before report() was set wait in trace_pending */
	int trace_level;
	const char *trace_who;     /* NULL: no trace */
	char *trace_pending;       /* lines, each tagged 'T' (trace), 'W' or
				    * 'X' (warnings, see warn) */
	size_t trace_pending_len;
	/* a rule dropped or a merge file skipped, as rsync reports it
	 * ("discarding over-long filter: ..."; no newline), to warn(); xfer:
	 * a file's rules are missing, so the transfer is incomplete (exit
	 * 23). Those from before warn() was set wait in trace_pending too. */
	void (*warn)(void *ctx, const char *line, bool xfer);
	void *warn_ctx;
};

void filter_list_init(struct filter_list *fl);
void filter_list_free(struct filter_list *fl);
/* Number of rules at the top level (a dir-merge rule counts as one). */
size_t filter_list_count(const struct filter_list *fl);
/* Does the list read per-directory merge files (dir-merge, -F, -C)? What
 * it excludes then depends on files met along the way. NULL: no. */
bool filter_list_has_dir_merge(const struct filter_list *fl);

/* Parse one rule as --filter does (exclude.c: parse_filter_str): short or
 * long rule names, modifiers, the comma form. A merge ('.') rule reads its
 * file now (relative to the cwd; "-" is stdin); '!' clears the list.
 * Returns 0, or -1 with a message naming the bad rule in err, and
 * fl->open_failed set when it was a file that could not be opened. */
int filter_parse_rule(struct filter_list *fl, const char *text, int flags, char *err,
		      size_t errsz);

/* The rules of a file, one a line, with filter_parse_rule()'s flags (a
 * daemon module's "exclude from"/"include from"); a file that cannot be
 * read is an error. */
int filter_parse_file(struct filter_list *fl, const char *path, int flags, char *err,
		      size_t errsz);

/* All of o->filters, in order; --delete-excluded and --protocol from o. */
/* -C: rsync adds ":C" (a per-directory .cvsignore) and "-C" (the CVS
 * default patterns, ~/.cvsignore, $CVSIGNORE) to the list, each side as
 * exclude.c: send_filter_list / recv_filter_list decide. */
int filter_add_cvs_rules(struct filter_list *fl, bool dir_merge, bool defaults, char *err,
			 size_t errsz);

int filter_list_from_opts(struct filter_list *fl, const struct ferry_opts *o, char *err,
			  size_t errsz);

/* The transfer has begun: warn() and (with --debug=FILTER) report() are
 * set. What was traced and warned of so far goes to them when show_parsed
 * (else it is dropped: a server's), and later traces (per-directory
 * files) go by `who` ("sender", "generator"; NULL: none). */
void filter_trace_start(struct filter_list *fl, bool show_parsed, const char *who);

struct session;
/* -vv: report what fl's rules match as rsync's --debug=filter does; and
 * the rules fl drops (too long), as rsync's errors, through s's messages
 * (filter_trace.c). */
void session_watch_filters(struct session *s, struct filter_list *fl);

/* Is path (relative to the transfer root, '/'-separated) filtered?
 * 1: matched an include, -1: matched an exclude, 0: no rule matched
 * (included). receiver_side: checking for deletion on the receiver, so
 * only rules that apply there count (not hide/show or 's' rules); the
 * sender skips protect/risk and 'r' rules. (exclude.c: check_filter) */
int filter_check(const struct filter_list *fl, const char *path, bool is_dir,
		 bool receiver_side);
int filter_check_flags(const struct filter_list *fl, const char *path, int cflags);

/* Per-directory merge files (exclude.c: push_local_filters and
 * pop_local_filters). Call filter_push_dir() on entering a directory,
 * before checking its entries, and filter_pop_dir() on leaving it;
 * pushes nest. fsdir is where the directory is on disk; relpath is its
 * name in the namespace filter_check() paths use ("" or "." for the
 * transfer root). Reads each active dir-merge file there (a missing file
 * is no error). Returns 0, or -1 with err set (the push is undone). */
int filter_push_dir(struct filter_list *fl, const char *fsdir, const char *relpath,
		    char *err, size_t errsz);
/* As filter_push_dir(), reading the directory's own merge files through
 * dirfd (opened by the caller, without following symlinks) and never
 * through a symlink: the receiver's way into the destination. fsdir still
 * names the directory (parent scan, files the merge files name). */
int filter_push_dir_at(struct filter_list *fl, int dirfd, const char *fsdir, const char *relpath,
		       char *err, size_t errsz);
void filter_pop_dir(struct filter_list *fl);
/* The absolute path of the transfer root, which rules with the '/'
 * modifier match against. Without this, a depth-1 filter_push_dir()
 * derives it from its fsdir and relpath. */
int filter_set_abs_root(struct filter_list *fl, const char *abs_dir);

/* A rule's prefix as rsync writes it (exclude.c: get_rule_prefix): for
 * the wire (for_xfer) in the form `protocol` understands; am_sender and
 * delete_excluded are the local side's. Returns the prefix length
 * (written to buf, at least 16 bytes), or -1 if the rule cannot be
 * expressed for that protocol. */
int filter_rule_prefix(const struct filter_rule *r, bool for_xfer, int protocol,
		       bool am_sender, bool delete_excluded, char *buf);

/* Does the receiver want the filter list? (exclude.c: send_filter_list,
 * receiver_wants_list) A pushing client sends nothing at all otherwise. */
bool filter_receiver_wants_list(const struct session *s);

/* The client's side of the exchange (exclude.c: send_filter_list,
 * send_rules): writes the rules the peer needs, each as int32 length +
 * prefixed rule text, then int32 0 -- or nothing at all when we push and
 * the receiver does not want the list. Rules that only matter locally are
 * left out. Fails ("filter rules are too modern for remote rsync") if a
 * rule cannot be expressed for s->protocol. Does not flush. */
bool filter_send(struct session *s, const struct filter_list *fl, bool we_are_sender);

/* The server's side (exclude.c: recv_filter_list): reads the list (if
 * this side gets one) and parses each rule as --filter would (with old
 * prefixes for protocol < 29). */
bool filter_recv(struct session *s, struct filter_list *fl);

#endif
