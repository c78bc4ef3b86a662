/*
 * What the user sees: --itemize-changes strings, --out-format escapes,
 * --stats and the closing summary, each in rsync's exact layout.
 */
#ifndef FERRY_LOGFMT_H
#define FERRY_LOGFMT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "proto/core/flist.h"
#include "proto/core/session.h"

/* One line's worth of facts for --out-format / -i / -v output. */
struct log_item {
	const struct file_entry *file; /* the file-list entry */
	const char *name;        /* path as rsync prints it (%n/%f) */
	int iflags;              /* ITEM_* bits */
	const char *xname;       /* hard-link target for %L " => x", or NULL */
	bool sending;            /* %o: "send" vs "recv"; '<' vs '>' in %i */
	bool local;              /* a local copy: %i shows ">" even when sending */
	bool deleting;           /* %o "del." and "*deleting" in %i */
	int64_t bytes_xferred;   /* %b */
	int64_t checksum_bytes;  /* %c */
	const uint8_t *sum;      /* %C, csum_len(sum_type) bytes, or NULL */
	int sum_len;             /* set even when sum is NULL: %C is then
				  * 2*sum_len blanks */
	const char *module;      /* %m, daemon only */
	const char *host, *addr, *user; /* %h %a %u, daemon only */
	int human;               /* the -h level for %l/%b (unused: like rsync, %l %b %c
				  * are humanized only by apostrophes, "%'l") */
	bool preserve_times;     /* -t (rsync shows 'T' instead of 't' without it) */
	/* Added fields. */
	uint32_t mode;           /* the mode when file is NULL (deletions: rsync
				  * passes only the S_IFMT bits, %B "---------") */
	const char *dir;         /* %f: directory joined before name (the sender's
				  * source dir, a daemon's module-relative cwd) */
	const char *module_path; /* %P, daemon only (NULL: "%P" stays verbatim) */
	enum csum_type sum_type; /* of sum: xxh* print reversed (rsync's canonical
				  * order); CSUM_NONE/CSUM_MD4_OLD print blanks */
	bool preserve_uid;       /* -o: %U shows the uid, else 0 */
	bool preserve_gid;       /* -g: %G shows the gid, else "DEFAULT" */
	bool no_symlink_times;   /* receiver can't set symlink times: 'T' for links */
};

/* The 11-character %i string (log.c: log_formatted case 'i'). */
void itemize_string(const struct log_item *it, char out[12]);
/* Expand an --out-format string into out (always NUL-terminated, no
 * trailing newline; rsync's log_formatted adds one). Escapes whose value is
 * unavailable (%h %a %u %P with a NULL field) and unknown escapes are copied
 * verbatim, as rsync does outside a daemon; %m with no module is "". */
void log_format(const char *fmt, const struct log_item *it, char *out, size_t outsz);

/* One --list-only line as rsync's list_file_entry() (generator.c) makes
 * it, without the newline: mode, size, time, name (and " -> target"). */
void list_format(const struct ferry_opts *o, const struct file_entry *f, char *out,
		 size_t outsz);
/* Is the entry shown by --list-only (active, and not an implied dir left
 * out by --no-implied-dirs)? */
bool list_wanted(const struct ferry_opts *o, const struct file_entry *f);

/* Numbers as rsync prints them: big_num() with thousands separators when
 * human == 1... and human_num() (K/M/G with decimals) when human >= 2.
 * `human` is rsync's human_readable: 0 = --no-h (plain digits), 1 = the
 * default (thousands separators), 2 = -h (K/M/G/T/P in 1000s, 2 decimals),
 * 3+ = -hh (1024s). Returns buf. */
const char *fmt_num(int64_t n, int human, char *buf, size_t bufsz);
/* A double with `decimals` digits as rsync's do_big_dnum() (separators in the
 * integer part once |d| >= 1000; units when human >= 2). */
const char *fmt_dnum(double d, int human, int decimals, char *buf, size_t bufsz);

/* The --stats block (main.c: output_summary), for a client, starting with
 * rsync's blank line. Counts use separators whenever human != 0, sizes use
 * fmt_num(human). "reg:" is num_files minus the other kinds, as rsync. */
void stats_print(FILE *fp, const struct stats *st, int protocol, int human, bool am_sender);
/* The two closing lines: "sent N bytes  received N bytes  N bytes/sec" and
 * "total size is N  speedup is X" (with " (DRY RUN)" when dry_run), after a
 * blank line. elapsed_sec is rsync's endtime - starttime, whole seconds of
 * time(NULL) (the rate divides by elapsed + 0.5); negative: "UNKNOWN". */
void summary_print(FILE *fp, const struct stats *st, double elapsed_sec, int human,
		   bool dry_run);

/* Does a log format use the escape %<esc> (with any width flags)? */
bool log_format_has(const char *format, char esc);

#endif
