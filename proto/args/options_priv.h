/*
 * What the files of the option parser (client/options*.c) share: the
 * parser's state and its helpers. Not for use outside the parser.
 */
#ifndef FERRY_OPTIONS_PRIV_H
#define FERRY_OPTIONS_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "proto/args/options.h"


/* Parser state that is not part of the result. */
struct pstate {
	struct ferry_opts *o;
	unsigned flags;
	unsigned mode;      /* OM_CLIENT or OM_DAEMON */
	int argc;
	char **argv;
	const char *elem;   /* the argv element being parsed, for messages */
	int dirs;           /* rsync's xfer_dirs: -1 unset, 0, 2 (-d), 4 (--old-d) */
	int del_before, del_during, del_after, del_plain;
	bool chown_user, chown_group; /* --chown made the user/group map */
	int version_cnt, f_cnt;
	bool from0, daemon_opt;
	int relative;       /* rsync's relative_paths: -1 unset, 0, 1 */
	int recurse;        /* rsync's recurse: 0, 1 (from -a), 2 (-r) */
	int secluded;       /* rsync's protect_args: -1 unset, 0, 1 */
	int old_args;       /* rsync's old_style_args: -1 unset, 0, 1, 2... */
	size_t args_cap, filters_cap;
	const bool *refused; /* a daemon module's "refuse options", or NULL */
	short info_user[INFO_COUNT]; /* --info levels given, over -v's */
	bool info_user_set[INFO_COUNT];
	short debug_user[DEBUG_COUNT]; /* --debug levels given, over -v's */
	bool debug_user_set[DEBUG_COUNT];
};

/* ---- proto/args/options_report.c ---- */

/* Where --help, --version and --info=help print: stdout, or stderr with
 * --stderr=all, where rsync sends every message (log.c: rwrite). */
FILE *opt_msgs_stream(const struct ferry_opts *o);

/* Append val to *dst with a comma between (repeated --info, --chmod). */
int opt_join_str(struct pstate *ps, char **dst, const char *val);

/* The name to use in "not supported" messages: what the user typed. */
void opt_label(const struct opt_spec *sp, const char *elem, char *buf, size_t sz);

/* *dst = a copy of val (the old value freed). 0, or the out-of-memory
 * error code after reporting it. */
int opt_set_str(struct pstate *ps, char **dst, const char *val);

/* Report an option error (to stderr and options_last_error()) and
 * return code. */
int opt_other_err(struct pstate *ps, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* "on remote machine: " when we are a server, as rsync's option errors. */
const char *opt_where_prefix(struct pstate *ps);

/* Append arg to the non-option arguments. 0, or the out-of-memory code. */
int opt_add_arg(struct pstate *ps, const char *arg);

/* options.c: create_refuse_error */
int opt_refuse_err(struct pstate *ps, const struct opt_spec *sp);

/* Report a usage error as rsync words it; returns RERR_SYNTAX. */
int opt_usage_err(struct pstate *ps, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Report running out of memory; returns RERR_MALLOC. */
int opt_oom(struct pstate *ps);

/* ---- proto/args/options_rules.c ---- */

/* Add one filter rule in rsync's rule text form. */
int opt_add_rule(struct pstate *ps, const char *prefix, const char *text);

/* Read an --exclude-from/--include-from file now, as rsync does
 * (exclude.c: parse_filter_file): one pattern per line (NUL-separated with
 * --from0), CR/LF/CRLF ends a line, empty lines and lines starting with
 * ';' or '#' are skipped; "-" is stdin. 0, or the exit code. */
int opt_read_rule_file(struct pstate *ps, const char *fname, bool include);

/* An --exclude/--include pattern (or a line of an -from file): only the
 * optional "- " / "+ " prefixes and a lone "!" are special, as rsync
 * exclude.c:parse_rule_tok() with XFLG_OLD_PREFIXES. */
int opt_add_old_rule(struct pstate *ps, const char *pat, bool include);

/* ---- proto/args/options_values.c ---- */

/* Syntax check of a --chmod value, the state machine of rsync
 * chmod.c:parse_chmod() without building the modes. */
bool opt_chmod_valid(const char *s);

/* --info=WORDS (debug false) or --debug=WORDS: the levels given, kept
 * over what -v implies; "help" lists the words. 0, FERRY_OPTS_EXIT_OK or
 * the exit code. */
int opt_handle_words(struct pstate *ps, bool debug, const char *arg);

/* rsync's do_big_num(n, 3): 1024-based units with two decimals. */
void opt_big_num(long n, char *buf, size_t sz);

/* --max-size, --min-size, --bwlimit: a size as opt_parse_size() reads it, at
 * least min (0 also allowed when zero_unlimited), with rsync's messages. */
int opt_parse_size_opt(struct pstate *ps, const char *name, const char *arg, char def_unit,
			  long min, bool zero_unlimited, int64_t *out);

/* rsync options.c:parse_size_arg() for --block-size ('b' default suffix,
 * 1024/1000 multipliers, "+1"/"-1" adjustments). Returns -1 on error with
 * *err set to "invalid" or "too large". */
long opt_parse_size(const char *size_arg, char def_suf, long max_value, const char **err);

/* popt's POPT_ARG_INT: strtol base 0, the whole string, int range. */
int opt_parse_int(struct pstate *ps, const char *arg, long lo, long hi, long *out);

/* --max-alloc=SIZE (rsync parse_arguments: parse_size_arg with a 1 MiB
 * minimum, 0 for unlimited). The parsed value becomes the process's
 * allocation limit (proto/base/alloc.h); the text is forwarded to the remote. */
int opt_set_max_alloc(struct pstate *ps, const char *arg);

/* ---- proto/args/options_finish.c ---- */

/* rsync parse_arguments() after the option loop. */
int opt_finish(struct pstate *ps);

#endif
