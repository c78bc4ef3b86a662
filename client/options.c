/*
 * Command-line parsing into struct ferry_opts, mirroring rsync options.c:
 * parse_arguments(). getopt_long does the tokenising; the table in
 * options_table.c says what each option is and whether we support it.
 * The argument vector sent to a server is built in options_server.c.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "client/connect.h"
#include "proto/exit_line.h"
#include "client/options.h"
#include "proto/logfmt.h"
#include "proto/oppath.h"
#include "proto/batch.h"
#include "proto/filter.h"
#include "proto/token.h"
#include "proto/checksum.h"

#define MAX_BLOCK_SIZE (1L << 17)     /* rsync.h, protocol >= 30 */
#define OLD_MAX_BLOCK_SIZE (1L << 29) /* protocol < 30 */
#define MAX_DPARAMS ((int)(sizeof ((struct ferry_opts *)0)->dparam / sizeof (char *)))
#define RESTART_DAEMON (-2)           /* internal: re-parse with the daemon rows */
#define LONG_BASE 1000                /* getopt val of table row i is LONG_BASE + i */

static _Thread_local char last_error[512];

const char *options_last_error(void)
{
	return last_error;
}

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

/* The --debug words behind enum debug_word. */
static const char *const debug_names[DEBUG_COUNT] = {"DELTASUM", "FILTER", "FLIST", "CMD",
						      "CONNECT",  "NSTR",   "FUZZY"};

/* Where --help, --version and --info=help print: stdout, or stderr with
 * --stderr=all, where rsync sends every message (log.c: rwrite). */
static FILE *msgs_stream(const struct ferry_opts *o)
{
	return o->msgs2stderr ? stderr : stdout;
}

/* ---- errors ---- */

static void vreport(struct pstate *ps, const char *fmt, va_list ap)
{
	vsnprintf(last_error, sizeof last_error, fmt, ap);
	if (!(ps->flags & OPTS_FROM_REMOTE))
		fprintf(stderr, "ferry: %s\n", last_error);
}

/* A usage error: message, in daemon mode the "how to get help" hint
 * (rsync has none for the client: popt's error and the exit line), then
 * RERR_SYNTAX. */
static int usage_err(struct pstate *ps, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int usage_err(struct pstate *ps, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(ps, fmt, ap);
	va_end(ap);
	if (!(ps->flags & OPTS_FROM_REMOTE) && ps->mode == OM_DAEMON)
		fprintf(stderr, "(Type \"ferry --daemon --help\" for assistance with daemon mode.)\n");
	return RERR_SYNTAX;
}

static int other_err(struct pstate *ps, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int other_err(struct pstate *ps, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(ps, fmt, ap);
	va_end(ap);
	return code;
}

/* "on remote machine: " when we are a server, as rsync's option errors. */
static const char *where_prefix(struct pstate *ps)
{
	return ps->o->server ? "on remote machine: " : "";
}

/* ---- small helpers ---- */

/* options.c: create_refuse_error */
static int refuse_err(struct pstate *ps, const struct opt_spec *sp)
{
	if (sp->shortopt)
		return other_err(ps, RERR_UNSUPPORTED, "The server is configured to refuse --%s (-%c)",
				 sp->name ? sp->name : "", sp->shortopt);
	return other_err(ps, RERR_UNSUPPORTED, "The server is configured to refuse --%s",
			 sp->name ? sp->name : "");
}

static int oom(struct pstate *ps)
{
	return other_err(ps, RERR_MALLOC, "out of memory while parsing options");
}

static int set_str(struct pstate *ps, char **dst, const char *val)
{
	char *s = strdup(val);

	if (!s)
		return oom(ps);
	free(*dst);
	*dst = s;
	return 0;
}

/* Append val to *dst with a comma between (repeated --info, --chmod). */
static int join_str(struct pstate *ps, char **dst, const char *val)
{
	size_t old = *dst ? strlen(*dst) : 0, add = strlen(val);
	char *s;

	if (!*dst)
		return set_str(ps, dst, val);
	if (!add)
		return 0;
	if (!(s = realloc(*dst, old + 1 + add + 1)))
		return oom(ps);
	s[old] = ',';
	memcpy(s + old + 1, val, add + 1);
	*dst = s;
	return 0;
}

static int add_arg(struct pstate *ps, const char *arg)
{
	struct ferry_opts *o = ps->o;

	if ((size_t)o->nargs + 2 > ps->args_cap) {
		size_t cap = ps->args_cap ? ps->args_cap * 2 : 8;
		char **a = realloc(o->args, cap * sizeof *a);
		if (!a)
			return oom(ps);
		o->args = a;
		ps->args_cap = cap;
	}
	if (!(o->args[o->nargs] = strdup(arg)))
		return oom(ps);
	o->args[++o->nargs] = NULL;
	return 0;
}

/* Add one filter rule in rsync's rule text form. */
static int add_rule(struct pstate *ps, const char *prefix, const char *text)
{
	struct ferry_opts *o = ps->o;
	size_t plen = strlen(prefix), tlen = strlen(text);
	char *s;

	if (o->nfilters + 1 > ps->filters_cap) {
		size_t cap = ps->filters_cap ? ps->filters_cap * 2 : 8;
		struct filter_arg *f = realloc(o->filters, cap * sizeof *f);
		if (!f)
			return oom(ps);
		o->filters = f;
		ps->filters_cap = cap;
	}
	if (!(s = malloc(plen + tlen + 1)))
		return oom(ps);
	memcpy(s, prefix, plen);
	memcpy(s + plen, text, tlen + 1);
	o->filters[o->nfilters++] = (struct filter_arg){.text = s};
	return 0;
}

/* An --exclude/--include pattern (or a line of an -from file): only the
 * optional "- " / "+ " prefixes and a lone "!" are special, as rsync
 * exclude.c:parse_rule_tok() with XFLG_OLD_PREFIXES. */
static int add_old_rule(struct pstate *ps, const char *pat, bool include)
{
	if (!*pat)
		return 0;
	if ((pat[0] == '-' || pat[0] == '+') && pat[1] == ' ')
		return add_rule(ps, "", pat);
	if (pat[0] == '!' && !pat[1])
		return add_rule(ps, "", "!");
	return add_rule(ps, include ? "+ " : "- ", pat);
}

int options_filter_failed(const struct filter_list *fl, const char *err)
{
	/* rsync parses them with its options, before any role but "client" */
	exit_line_set_role("client");
	/* a merge file named in another one, or merge files nested too
	 * deep: rsync's bare rprintf(FERROR); a file named on the command
	 * line that cannot be opened: its rsyserr */
	if (fl->open_failed == FILTER_OPEN_HIDDEN || (fl->err_io && !fl->open_failed))
		fprintf(stderr, "%s\n", err);
	else
		fprintf(stderr, "ferry: %s%s\n", fl->open_failed ? "[client] " : "", err);
	return fl->open_failed || fl->err_io ? RERR_FILEIO : RERR_SYNTAX;
}

/* Read an --exclude-from/--include-from file now, as rsync does
 * (exclude.c: parse_filter_file): one pattern per line (NUL-separated with
 * --from0), CR/LF/CRLF ends a line, empty lines and lines starting with
 * ';' or '#' are skipped; "-" is stdin. */
/* An --exclude-from/--include-from file is an operator path (oppath.h);
 * --insecure-links counts from where it stands on the command line, as in
 * rsync, which reads the file while parsing. */
static FILE *open_rule_file(const char *fname, bool insecure)
{
	int fd = oppath_open(AT_FDCWD, fname, O_RDONLY, 0, insecure);
	FILE *fp = fd >= 0 ? fdopen(fd, "rb") : NULL;

	if (!fp && fd >= 0)
		close(fd);
	return fp;
}

static int read_rule_file(struct pstate *ps, const char *fname, bool include)
{
	bool use_stdin = !strcmp(fname, "-") && !ps->o->server;
	FILE *fp;
	char *line = NULL;
	size_t len = 0, cap = 0;
	int ch, rc = 0;

	if (!*fname)
		return 0;
	if (use_stdin && (ps->flags & OPTS_FROM_REMOTE))
		return usage_err(ps, "%s--%sclude-from=- is not allowed here",
				 where_prefix(ps), include ? "in" : "ex");
	fp = use_stdin ? stdin : open_rule_file(fname, ps->o->insecure_links);
	if (!fp)
		return other_err(ps, RERR_FILEIO, "[%s] failed to open %sclude file %s: %s (%d)",
				 ps->o->server ? "server" : "client", include ? "in" : "ex", fname,
				 strerror(errno), errno);
	for (;;) {
		ch = getc(fp);
		bool eol = ch == EOF || (ps->from0 ? ch == 0 : (ch == '\n' || ch == '\r'));
		if (!eol) {
			if (len + 2 > cap) {
				size_t ncap = cap ? cap * 2 : 256;
				char *n = realloc(line, ncap);
				if (!n) {
					rc = oom(ps);
					break;
				}
				line = n;
				cap = ncap;
			}
			line[len++] = (char)ch;
			continue;
		}
		if (ch == '\r') { /* CRLF is one line */
			int nxt = getc(fp);
			if (nxt != '\n' && nxt != EOF)
				ungetc(nxt, fp);
		}
		if (len && line[0] != ';' && line[0] != '#') {
			line[len] = '\0';
			size_t before = ps->o->nfilters;
			if ((rc = add_old_rule(ps, line, include)) != 0)
				break;
			for (size_t i = before; i < ps->o->nfilters; i++)
				ps->o->filters[i].from_file = true;
		}
		len = 0;
		if (ch == EOF)
			break;
	}
	free(line);
	if (!use_stdin)
		fclose(fp);
	return rc;
}

/* popt's POPT_ARG_INT: strtol base 0, the whole string, int range. */
static int parse_int(struct pstate *ps, const char *arg, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 0);
	if (end == arg || *end)
		return usage_err(ps, "%s%s: invalid numeric value", where_prefix(ps), ps->elem);
	if (errno == ERANGE || v < INT_MIN || v > INT_MAX)
		return usage_err(ps, "%s%s: number too large or too small", where_prefix(ps),
				 ps->elem);
	if (v < lo || v > hi) {
		if (lo == 0 && v < 0)
			return usage_err(ps, "%s%s: the value must not be negative",
					 where_prefix(ps), ps->elem);
		return usage_err(ps, "%s%s: the value must be between %ld and %ld",
				 where_prefix(ps), ps->elem, lo, hi);
	}
	*out = v;
	return 0;
}

/* rsync's do_big_num(n, 3): 1024-based units with two decimals. */
static void big_num(long n, char *buf, size_t sz)
{
	static const char units[] = "KMGTP";
	double d = (double)n;
	int u = -1;

	while (d >= 1024.0 && u < 4) {
		d /= 1024.0;
		u++;
	}
	if (u < 0)
		snprintf(buf, sz, "%ld", n);
	else
		snprintf(buf, sz, "%.2f%c", d, units[u]);
}

/* rsync options.c:parse_size_arg() for --block-size ('b' default suffix,
 * 1024/1000 multipliers, "+1"/"-1" adjustments). Returns -1 on error with
 * *err set to "invalid" or "too large". */
static long parse_size(const char *size_arg, char def_suf, long max_value, const char **err)
{
	const char *arg;
	long size = 1, mult;
	int reps;
	double dsize;

	*err = "invalid";
	for (arg = size_arg; isdigit((unsigned char)*arg); arg++) {}
	if (*arg == '.')
		for (arg++; isdigit((unsigned char)*arg); arg++) {}
	switch (*arg && *arg != '+' && *arg != '-' ? *arg++ : def_suf) {
	case 'b': case 'B': reps = 0; break;
	case 'k': case 'K': reps = 1; break;
	case 'm': case 'M': reps = 2; break;
	case 'g': case 'G': reps = 3; break;
	case 't': case 'T': reps = 4; break;
	case 'p': case 'P': reps = 5; break;
	default: return -1;
	}
	if (*arg == 'b' || *arg == 'B')
		mult = 1000, arg++;
	else if (!*arg || *arg == '+' || *arg == '-')
		mult = 1024;
	else if (strncasecmp(arg, "ib", 2) == 0)
		mult = 1024, arg += 2;
	else
		return -1;
	while (reps--) {
		if (size > max_value / mult) {
			*err = "too large";
			return -1;
		}
		size *= mult;
	}
	errno = 0;
	dsize = strtod(size_arg, NULL);
	if (errno == ERANGE || dsize < 0 || dsize > (double)max_value / (double)size) {
		*err = "too large";
		return -1;
	}
	size = (long)(dsize * (double)size);
	if ((*arg == '+' || *arg == '-') && arg[1] == '1' && arg != size_arg) {
		size += *arg == '+' ? 1 : -1;
		arg += 2;
	}
	if (*arg)
		return -1;
	if (size < 0 || size > max_value) {
		*err = "too large";
		return -1;
	}
	return size;
}

/* Syntax check of a --chmod value, the state machine of rsync
 * chmod.c:parse_chmod() without building the modes. */
static bool chmod_valid(const char *s)
{
	enum { ERR, FIRST, SECOND, OCTAL } state = FIRST;
	int where = 0, what = 0, op = 0, topoct = 0, copybits = 0;
	bool dirs_only = false, files_only = false;

	for (;; s++) {
		if (!*s || *s == ',') {
			if (!op)
				return false;
			if (!*s)
				return true;
			state = FIRST;
			where = what = op = topoct = copybits = 0;
			dirs_only = files_only = false;
			continue;
		}
		switch (state) {
		case FIRST:
			switch (*s) {
			case 'D': if (files_only) return false; dirs_only = true; break;
			case 'F': if (dirs_only) return false; files_only = true; break;
			case 'u': case 'g': case 'o': case 'a': where = 1; break;
			case '+': case '-': case '=': op = 1; state = SECOND; break;
			default:
				if (*s >= '0' && *s <= '7' && !where) {
					op = 1;
					state = OCTAL;
					what = *s - '0';
				} else
					return false;
			}
			break;
		case SECOND:
			switch (*s) {
			case 'r': case 'w': case 'X': case 'x':
				if (copybits) return false;
				what = 1;
				break;
			case 's': case 't':
				if (copybits) return false;
				topoct = 1;
				break;
			case 'u': case 'g': case 'o':
				if (what || topoct || copybits) return false;
				copybits = 1;
				break;
			default:
				return false;
			}
			break;
		case OCTAL:
			if (*s < '0' || *s > '7')
				return false;
			what = what * 8 + (*s - '0');
			if (what > 07777)
				return false;
			break;
		case ERR:
			return false;
		}
	}
}

/* mirrors rsync options.c:parse_output_words(); see options.h */
int options_parse_words(const struct output_word *words, const char *str, short *levels,
			bool *set, bool tolerant, char *bad, size_t badsz)
{
	while (str) {
		const char *comma = strchr(str, ',');
		size_t len = comma ? (size_t)(comma - str) : strlen(str);
		const char *next = comma ? comma + 1 : NULL;
		int lev = 1, j;

		if (!len) {
			str = next;
			continue;
		}
		if (!isdigit((unsigned char)str[0])) {
			size_t n = len;
			while (n && isdigit((unsigned char)str[n - 1]))
				n--;
			if (n < len) {
				long l = strtol(str + n, NULL, 10);
				lev = l > 4 || l < 0 ? 4 : (int)l;
			}
			len = n;
		}
		if (len == 4 && strncasecmp(str, "help", 4) == 0)
			return 1;
		if (len == 4 && strncasecmp(str, "none", 4) == 0)
			len = 0, lev = 0;
		else if (len == 3 && strncasecmp(str, "all", 3) == 0)
			len = 0;
		for (j = 0; words[j].name; j++) {
			if (!len || (strlen(words[j].name) == len
				     && strncasecmp(str, words[j].name, len) == 0)) {
				levels[j] = (short)lev;
				set[j] = true;
				if (len)
					break;
			}
		}
		if (len && !words[j].name && !tolerant) {
			snprintf(bad, badsz, "%.*s", (int)len, str);
			return -1;
		}
		str = next;
	}
	return 0;
}

static int handle_words(struct pstate *ps, bool debug, const char *arg)
{
	const struct output_word *words = debug ? options_debug_words : options_info_words;
	short levels[OPTIONS_MAX_WORDS] = {0};
	bool set[OPTIONS_MAX_WORDS] = {false};
	char bad[64];
	int r = options_parse_words(words, arg, levels, set, ps->o->server, bad, sizeof bad);

	if (r == 1) {
		if (ps->flags & OPTS_FROM_REMOTE)
			return usage_err(ps, "%s--%s=help is not allowed here", where_prefix(ps),
					 debug ? "debug" : "info");
		usage_print_output_words(msgs_stream(ps->o), debug);
		return FERRY_OPTS_EXIT_OK;
	}
	if (r < 0)
		return usage_err(ps, "Unknown --%s item: \"%s\"", debug ? "debug" : "info", bad);
	for (int i = 0; !debug && i < INFO_COUNT && words[i].name; i++) {
		if (set[i]) {
			ps->info_user[i] = levels[i];
			ps->info_user_set[i] = true;
		}
	}
	for (int i = 0; debug && words[i].name; i++) {
		for (int w = 0; set[i] && w < DEBUG_COUNT; w++) {
			if (strcmp(words[i].name, debug_names[w]) == 0) {
				ps->debug_user[w] = levels[i];
				ps->debug_user_set[w] = true;
			}
		}
	}
	for (int i = 0; !debug && words[i].name; i++) {
		if (strcmp(words[i].name, "PROGRESS") != 0 || !set[i])
			continue;
		/* --info=progress2 is the whole-transfer line; progress1 the
		 * per-file one --progress gives (options.c) */
		ps->o->progress2 = levels[i] >= 2;
		if (levels[i] == 1)
			ps->o->progress = true;
		else if (levels[i] == 0)
			ps->o->progress = false;
	}
	return join_str(ps, debug ? &ps->o->debug : &ps->o->info, arg);
}

/* The name to use in "not supported" messages: what the user typed. */
static void opt_label(const struct opt_spec *sp, const char *elem, char *buf, size_t sz)
{
	if (sp->name && (!sp->shortopt || !strncmp(elem, "--", 2)))
		snprintf(buf, sz, "--%s", sp->name);
	else if (sp->name)
		snprintf(buf, sz, "-%c (--%s)", sp->shortopt, sp->name);
	else
		snprintf(buf, sz, "-%c", sp->shortopt);
}

/* --max-alloc=SIZE (rsync parse_arguments: parse_size_arg with a 1 MiB
 * minimum, 0 for unlimited). The parsed value becomes the process's
 * allocation limit (proto/alloc.h); the text is forwarded to the remote. */
static int set_max_alloc(struct pstate *ps, const char *arg)
{
	const char *err;
	long size = parse_size(arg, 'b', LONG_MAX / 2, &err);

	if (size < 0)
		return usage_err(ps, "--max-alloc=%s is %s", arg, err);
	/* 0 is unlimited (options.c: parse_size_arg with unlimited_0) */
	if (size > 0 && size < 1024 * 1024)
		return usage_err(ps, "--max-alloc=%s is too small (min: 1.00M or 0 for unlimited)",
				 arg);
	ps->o->max_alloc_bytes = size;
	return set_str(ps, &ps->o->max_alloc, arg);
}

/* ---- one option ---- */

/* --max-size, --min-size, --bwlimit: a size as parse_size() reads it, at
 * least min (0 also allowed when zero_unlimited), with rsync's messages. */
static int parse_size_opt(struct pstate *ps, const char *name, const char *arg, char def_unit,
			  long min, bool zero_unlimited, int64_t *out)
{
	const char *err;
	long size = parse_size(arg, def_unit, LONG_MAX / 2, &err);

	if (size < 0)
		return usage_err(ps, "--%s=%s is %s", name, arg, err);
	if (size < min && !(zero_unlimited && size == 0))
		return usage_err(ps, "--%s=%s is too small (min: %ld%s)", name, arg, min,
				 zero_unlimited ? " or 0 for unlimited" : "");
	*out = size;
	return 0;
}

static int handle(struct pstate *ps, const struct opt_spec *sp, const char *arg)
{
	struct ferry_opts *o = ps->o;
	int v = sp->val;
	long n;
	int rc;

	if (!sp->supported) {
		char label[64];
		opt_label(sp, ps->elem, label, sizeof label);
		return usage_err(ps, "%s%s is not supported yet", where_prefix(ps), label);
	}
	if (ps->refused && ps->refused[sp - options_table])
		return refuse_err(ps, sp);

	switch ((enum opt_id)sp->id) {
	case OPT_HELP:
		if (ps->flags & OPTS_FROM_REMOTE)
			return usage_err(ps, "%s--help: unknown option", where_prefix(ps));
		if (ps->mode == OM_DAEMON)
			usage_print_daemon_help(stdout);
		else
			usage_print_help(msgs_stream(o));
		return FERRY_OPTS_EXIT_OK;
	case OPT_VERSION: ps->version_cnt++; break;
	case OPT_VERBOSE: o->verbose = v ? o->verbose + 1 : 0; break;
	case OPT_QUIET: o->quiet = true; break;
	case OPT_INFO: return handle_words(ps, false, arg);
	case OPT_DEBUG: return handle_words(ps, true, arg);
	case OPT_STDERR: {
		size_t len = strlen(arg);
		if (len && !strncmp("errors", arg, len))
			o->msgs2stderr = o->no_msgs2stderr = false;
		else if (len && !strncmp("all", arg, len))
			o->msgs2stderr = true, o->no_msgs2stderr = false;
		else if (len && !strncmp("client", arg, len))
			o->msgs2stderr = false, o->no_msgs2stderr = true;
		else
			return usage_err(ps, "--stderr mode \"%s\" is not one of errors, all, or client",
					 arg);
		break;
	}
	case OPT_MSGS2STDERR: o->msgs2stderr = v; o->no_msgs2stderr = !v; break;
	case OPT_MOTD: o->no_motd = !v; break;
	case OPT_CHECKSUM: o->checksum = v; break;
	case OPT_ARCHIVE:
		o->recursive = o->links = o->perms = o->times = true;
		o->group = o->owner = o->devices = o->specials = true;
		if (!ps->recurse)
			ps->recurse = 1; /* -a's -r gives way to --files-from */
		break;
	case OPT_RECURSIVE: o->recursive = v; ps->recurse = v ? 2 : 0; break;
	case OPT_RELATIVE: ps->relative = v; break;
	case OPT_INC_RECURSIVE: o->no_inc_recursive = !v; break;
	case OPT_IMPLIED_DIRS: o->no_implied_dirs = !v; break;
	case OPT_FILES_FROM: return set_str(ps, &o->files_from, arg);
	case OPT_UPDATE: o->update = true; break;
	case OPT_INPLACE: o->inplace = v; break;
	case OPT_DIRS: case OPT_OLD_DIRS: ps->dirs = v; break;
	case OPT_DROP_D: o->drop_devices = v; break;
	case OPT_QSORT: o->qsort = true; break;
	case OPT_LINKS: o->links = v; break;
	case OPT_HARD_LINKS: o->hard_links = v; break;
	case OPT_PERMS: o->perms = v; break;
	case OPT_ACLS: o->acls = v; o->perms = o->perms || v; break;
	case OPT_XATTRS: o->xattrs = v ? o->xattrs + 1 : 0; break;
	case OPT_EXECUTABILITY: o->executability = true; break;
	case OPT_CHMOD:
		if (!chmod_valid(arg))
			return usage_err(ps, "Invalid argument passed to --chmod (%s)", arg);
		return join_str(ps, &o->chmod, arg);
	case OPT_OWNER: o->owner = v; break;
	case OPT_GROUP: o->group = v; break;
	case OPT_DEVICES: o->devices = v; break;
	case OPT_SPECIALS: o->specials = v; break;
	case OPT_COPY_DEVICES: o->copy_devices = v; break;
	case OPT_WRITE_DEVICES: o->write_devices = v; break;
	case OPT_TRUST_SENDER: o->trust_sender = v; break;
	case OPT_COPY_AS: return set_str(ps, &o->copy_as, arg);
	case OPT_D: o->devices = o->specials = v; break;
	case OPT_TIMES: o->times = v; break;
	case OPT_OMIT_DIR_TIMES: o->omit_dir_times = o->omit_dir_times_opt = v; break;
	case OPT_OMIT_LINK_TIMES: o->omit_link_times = v; break;
	case OPT_DRY_RUN: o->dry_run = true; break;
	case OPT_WHOLE_FILE: o->whole_file = v; break;
	case OPT_CHECKSUM_CHOICE: return set_str(ps, &o->checksum_choice, arg);
	case OPT_BLOCK_SIZE: {
		/* Checked against the --protocol seen so far, as rsync does. */
		long max = o->protocol && o->protocol < 30 ? OLD_MAX_BLOCK_SIZE : MAX_BLOCK_SIZE;
		const char *err;
		long size = parse_size(arg, 'b', max, &err);
		if (size < 0) {
			char lim[32];
			big_num(max, lim, sizeof lim);
			if (!strcmp(err, "too large"))
				return usage_err(ps, "--block-size=%s is too large (max: %s)", arg, lim);
			return usage_err(ps, "--block-size=%s is invalid", arg);
		}
		o->block_size = size;
		break;
	}
	case OPT_RSH: return set_str(ps, &o->rsh, arg);
	case OPT_RSYNC_PATH: return set_str(ps, &o->rsync_path, arg);
	case OPT_SSH_MODE:
		if (strcmp(arg, "auto") && strcmp(arg, "builtin") && strcmp(arg, "spawn"))
			return usage_err(ps, "--ssh=%s: expected auto, builtin or spawn", arg);
		return set_str(ps, &o->ssh_mode, arg);
	case OPT_SSH_CIPHER: return set_str(ps, &o->ssh_cipher, arg);
	case OPT_EXISTING: o->existing = true; break;
	case OPT_IGNORE_EXISTING: o->ignore_existing = true; break;
	case OPT_DELETE_DURING: case OPT_DELETE_DELAY: ps->del_during = v; break;
	case OPT_DELETE: ps->del_plain = 1; break;
	case OPT_DELETE_BEFORE: ps->del_before = 1; break;
	case OPT_DELETE_AFTER: ps->del_after = 1; break;
	case OPT_DELETE_EXCLUDED: o->delete_excluded = true; break;
	case OPT_IGNORE_ERRORS: o->ignore_errors = v; break;
	case OPT_FORCE: o->force = v; break;
	case OPT_MAX_DELETE:
		if ((rc = parse_int(ps, arg, INT_MIN, INT_MAX, &n)) != 0)
			return rc;
		if (n < 0) {
			/* rsync treats a negative value as "no deletions"; its
			 * client sends --max-delete=-1 for --max-delete=0. */
			if (!o->server)
				return usage_err(ps, "%s: the value must not be negative "
						 "(use --max-delete=0 to allow no deletions)", ps->elem);
			n = 0;
		}
		o->max_delete = n;
		break;
	case OPT_PARTIAL: o->partial = v; break;
	case OPT_MAX_SIZE: return parse_size_opt(ps, "max-size", arg, 'b', 0, false, &o->max_size);
	case OPT_MIN_SIZE: return parse_size_opt(ps, "min-size", arg, 'b', 0, false, &o->min_size);
	case OPT_BWLIMIT: {
		int64_t bytes = 0;
		if (v && (rc = parse_size_opt(ps, "bwlimit", arg, 'k', 512, true, &bytes)) != 0)
			return rc;
		o->bwlimit = (long)((bytes + 512) / 1024);
		break;
	}
	case OPT_FSYNC: o->fsync = v; break;
	case OPT_SPARSE: o->sparse = v; break;
	case OPT_OPEN_NOATIME: o->open_noatime = v; break;
	case OPT_SUPER: o->super_mode = v ? SUPER_ON : SUPER_OFF; break;
	case OPT_FAKE_SUPER: o->super_mode = v ? SUPER_FAKE : SUPER_OFF; break;
	case OPT_CRTIMES:
		/* Linux has no settable creation time, so rsync built there
		 * refuses -N outright (options.c: create_refuse_error). */
		if (v)
			return other_err(ps, RERR_SYNTAX, "%s does not support --crtimes (-N)",
					 o->server ? "The server" : "This ferry");
		break;
	case OPT_ATIMES:
		o->atimes = v ? o->atimes + 1 : 0;
		if (o->atimes > 1)
			o->open_noatime = true; /* -UU: reading must not change them */
		break;
	case OPT_PRUNE_EMPTY_DIRS: o->prune_empty_dirs = v; break;
	case OPT_CVS_EXCLUDE: o->cvs_exclude = v; break;
	case OPT_MISSING_ARGS: o->missing_args = v; break;
	case OPT_APPEND:
		/* a server counts its --append words; a client takes the value */
		o->append = !v ? 0 : o->server ? o->append + 1 : v;
		break;
	case OPT_APPEND_VERIFY: o->append = v ? 2 : 0; break;
	case OPT_PARTIAL_DIR: return set_str(ps, &o->partial_dir, arg);
	case OPT_DELAY_UPDATES: o->delay_updates = v; break;
	case OPT_USERMAP:
		if (o->usermap)
			return usage_err(ps, ps->chown_user ? "--usermap conflicts with prior --chown."
							    : "You can only specify --usermap once.");
		return set_str(ps, &o->usermap, arg);
	case OPT_GROUPMAP:
		if (o->groupmap)
			return usage_err(ps, ps->chown_group ? "--groupmap conflicts with prior --chown."
							     : "You can only specify --groupmap once.");
		return set_str(ps, &o->groupmap, arg);
	case OPT_CHOWN: {
		/* rsync implements --chown as the map "*:USER" / "*:GROUP" */
		const char *colon = strchr(arg, ':');
		size_t ulen = colon ? (size_t)(colon - arg) : strlen(arg);
		char map[4096];
		if (ulen) {
			if (o->usermap)
				return usage_err(ps, ps->chown_user
							     ? "You can only specify a user-affecting --chown once."
							     : "--chown conflicts with prior --usermap.");
			snprintf(map, sizeof map, "*:%.*s", (int)ulen, arg);
			if ((rc = set_str(ps, &o->usermap, map)) != 0)
				return rc;
			ps->chown_user = true;
			o->owner = true;
		}
		if (colon && colon[1]) {
			if (o->groupmap)
				return usage_err(ps, ps->chown_group
							     ? "You can only specify a group-affecting --chown once."
							     : "--chown conflicts with prior --groupmap.");
			snprintf(map, sizeof map, "*:%s", colon + 1);
			if ((rc = set_str(ps, &o->groupmap, map)) != 0)
				return rc;
			ps->chown_group = true;
			o->group = true;
		}
		break;
	}
	case OPT_REMOVE_SOURCE_FILES: o->remove_source_files = v; break;
	case OPT_PREALLOCATE: o->preallocate = v; break;
	case OPT_OUTBUF:
		if (!strchr("NnLlBbUu", *arg) || !*arg)
			return usage_err(ps, "Invalid --outbuf setting -- specify N, L, or B.");
		o->outbuf = (char)toupper((unsigned char)*arg);
		if (o->outbuf == 'U')
			o->outbuf = 'N';
		break;
	case OPT_STOP_AFTER: {
		char *end;
		long mins = strtol(arg, &end, 10);
		time_t now = time(NULL);
		if (mins <= 0 || mins > INT_MAX / 60)
			return usage_err(ps, "invalid --stop-after value: %s", arg);
		o->stop_at = (int64_t)now + mins * 60;
		break;
	}
	case OPT_STOP_AT: {
		time_t t = stop_at_parse(arg, time(NULL));
		if (t == (time_t)-1)
			return usage_err(ps, "invalid --stop-at format: %s", arg);
		if (t <= time(NULL))
			return usage_err(ps, "--stop-at time is not in the future: %s", arg);
		o->stop_at = (int64_t)t;
		break;
	}
	case OPT_COPY_LINKS: o->copy_links = v; break;
	case OPT_COPY_UNSAFE_LINKS: o->copy_unsafe_links = v; break;
	case OPT_COPY_DIRLINKS: o->copy_dirlinks = v; break;
	case OPT_KEEP_DIRLINKS: o->keep_dirlinks = v; break;
	case OPT_SAFE_LINKS: o->safe_links = v; break;
	case OPT_MUNGE_LINKS: o->munge_links = v; break;
	case OPT_INSECURE_LINKS: o->insecure_links = v; break;
	case OPT_CONFINE_ROOT: return set_str(ps, &o->confine_root, arg);
	case OPT_ONE_FILE_SYSTEM: o->one_file_system = v ? o->one_file_system + 1 : 0; break;
	case OPT_MKPATH: o->mkpath = v; break;
	case OPT_BACKUP: o->backup = v; break;
	case OPT_FUZZY: o->fuzzy = v ? o->fuzzy + 1 : 0; break;
	case OPT_BACKUP_DIR: o->backup = true; return set_str(ps, &o->backup_dir, arg);
	case OPT_SUFFIX: return set_str(ps, &o->suffix, arg);
	case OPT_TEMP_DIR: return set_str(ps, &o->temp_dir, arg);
	case OPT_ALT_DEST:
		if (o->alt_dest_mode && o->alt_dest_mode != v)
			return usage_err(ps, "ERROR: the --%s option conflicts with the --%s option",
					 v == ALT_DEST_COMPARE ? "compare-dest"
					 : v == ALT_DEST_COPY ? "copy-dest" : "link-dest",
					 o->alt_dest_mode == ALT_DEST_COMPARE ? "compare-dest"
					 : o->alt_dest_mode == ALT_DEST_COPY ? "copy-dest"
									     : "link-dest");
		if (o->nalt_dest >= ALT_DEST_MAX)
			return usage_err(ps, "ERROR: at most %d --%s args may be specified",
					 ALT_DEST_MAX, sp->name);
		o->alt_dest_mode = v;
		if (!(o->alt_dest[o->nalt_dest] = strdup(arg)))
			return oom(ps);
		o->nalt_dest++;
		break;
	case OPT_NUMERIC_IDS: o->numeric_ids = v; break;
	case OPT_TIMEOUT: case OPT_CONTIMEOUT:
		n = 0;
		if (v && (rc = parse_int(ps, arg, 0, INT_MAX, &n)) != 0)
			return rc;
		*(sp->id == OPT_TIMEOUT ? &o->timeout : &o->contimeout) = (int)n;
		break;
	case OPT_IGNORE_TIMES: o->ignore_times = true; break;
	case OPT_SIZE_ONLY: o->size_only = true; break;
	case OPT_MODIFY_WINDOW:
		if ((rc = parse_int(ps, arg, INT_MIN, INT_MAX, &n)) != 0)
			return rc;
		o->modify_window = (int)n;
		o->modify_window_set = true;
		break;
	case OPT_COMPRESS:
		if (v)
			o->compress++;
		else {
			o->compress = 0;
			free(o->compress_choice);
	free(o->skip_compress);
			o->compress_choice = NULL;
		}
		break;
	case OPT_OLD_COMPRESS: return set_str(ps, &o->compress_choice, "zlib");
	case OPT_NEW_COMPRESS: return set_str(ps, &o->compress_choice, "zlibx");
	case OPT_COMPRESS_CHOICE: return set_str(ps, &o->compress_choice, arg);
	case OPT_SKIP_COMPRESS: return set_str(ps, &o->skip_compress, arg);
	case OPT_COMPRESS_LEVEL:
		if ((rc = parse_int(ps, arg, INT_MIN, INT_MAX, &n)) != 0)
			return rc;
		o->compress_level = (int)n;
		o->compress_level_set = true;
		break;
	case OPT_COMPRESS_THREADS:
		if ((rc = parse_int(ps, arg, INT_MIN, INT_MAX, &n)) != 0)
			return rc;
		/* as rsync (options.c): a negative count means none; the daemon
		 * caps what a client asks for (daemon/serve.c) */
		o->compress_threads = n < 0 ? 0 : (int)n;
		break;
	case OPT_FILTER: return *arg ? add_rule(ps, "", arg) : 0;
	case OPT_F:
		if (++ps->f_cnt == 1)
			return add_rule(ps, "", ": /.rsync-filter");
		if (ps->f_cnt == 2)
			return add_rule(ps, "", "- .rsync-filter");
		break;
	case OPT_EXCLUDE: return add_old_rule(ps, arg, false);
	case OPT_INCLUDE: return add_old_rule(ps, arg, true);
	case OPT_EXCLUDE_FROM: return read_rule_file(ps, arg, false);
	case OPT_INCLUDE_FROM: return read_rule_file(ps, arg, true);
	case OPT_FROM0: ps->from0 = o->from0 = v; break;
	case OPT_ADDRESS: return set_str(ps, &o->bind_address, arg);
	case OPT_PORT:
		if ((rc = parse_int(ps, arg, 1, 65535, &n)) != 0)
			return rc;
		o->port = (int)n;
		break;
	case OPT_SOCKOPTS:
		/* Unknown names are an error here; rsync only reports them
		 * when it sets the options, and carries on. */
		if (!sockopts_apply(-1, arg))
			return usage_err(ps, "--sockopts=%s: see the socket option names in ferry(1)",
					 arg);
		return set_str(ps, &o->sockopts, arg);
	case OPT_BLOCKING_IO: o->blocking_io = v; break;
	case OPT_EARLY_INPUT: return set_str(ps, &o->early_input, arg);
	case OPT_OLD_ARGS: ps->old_args = v ? (ps->old_args > 0 ? ps->old_args + 1 : 1) : 0; break;
	case OPT_SECLUDED_ARGS: ps->secluded = v; break;
	case OPT_MAX_ALLOC: return set_max_alloc(ps, arg);
	case OPT_WRITE_BATCH:
		o->write_batch = v;
		return set_str(ps, &o->batch_name, arg);
	case OPT_READ_BATCH:
		o->read_batch = true;
		return set_str(ps, &o->batch_name, arg);
	case OPT_STATS: o->stats = true; break;
	case OPT_8BIT: o->eight_bit_output = v; break;
	case OPT_HUMAN: o->human = v ? o->human + 1 : 0; break;
	case OPT_PROGRESS: o->progress = v; break;
	case OPT_JSON: o->json = v; break;
	case OPT_P: o->progress = o->partial = true; break;
	case OPT_ITEMIZE: o->itemize = v ? o->itemize + 1 : 0; break;
	case OPT_REMOTE_OPTION: {
		char **ro;
		if (*arg != '-')
			return usage_err(ps, "Remote option must start with a dash: %s", arg);
		ro = realloc(o->remote_options, (size_t)(o->nremote_options + 2) * sizeof *ro);
		if (!ro)
			return oom(ps);
		o->remote_options = ro;
		if (!(ro[o->nremote_options] = strdup(arg)))
			return oom(ps);
		ro[++o->nremote_options] = NULL;
		break;
	}
	case OPT_OUT_FORMAT: return set_str(ps, &o->out_format, arg);
	case OPT_LOG_FILE: return set_str(ps, &o->log_file, arg);
	case OPT_LOG_FILE_FORMAT: return set_str(ps, &o->log_file_format, arg);
	case OPT_PASSWORD_FILE: return set_str(ps, &o->password_file, arg);
	case OPT_LIST_ONLY: o->list_only = o->list_only_opt = true; break;
	case OPT_PROTOCOL:
		if ((rc = parse_int(ps, arg, INT_MIN, INT_MAX, &n)) != 0)
			return rc;
		if (n < FERRY_PROTOCOL_OLDEST || n > FERRY_PROTOCOL_VERSION)
			return usage_err(ps, "%s%s: protocol version must be between %d and %d",
					 where_prefix(ps), ps->elem, FERRY_PROTOCOL_OLDEST,
					 FERRY_PROTOCOL_VERSION);
		o->protocol = (int)n;
		break;
	case OPT_CHECKSUM_SEED:
		if ((rc = parse_int(ps, arg, INT_MIN, INT_MAX, &n)) != 0)
			return rc;
		o->checksum_seed = (uint32_t)(int32_t)n;
		o->checksum_seed_set = true;
		break;
	case OPT_SUMS_CACHE:
		/* one plain name in the destination directory: nothing to
		 * follow or climb out of */
		if (!*arg || strchr(arg, '/') || !strcmp(arg, ".") || !strcmp(arg, "..") ||
		    strlen(arg) > 200)
			return usage_err(ps, "--sums-cache=%s: expected a plain file name", arg);
		return set_str(ps, &o->sums_cache, arg);
	case OPT_IPV4: case OPT_IPV6: o->ip_family = v; break;
	case OPT_SERVER: o->server = true; break;
	case OPT_SENDER:
		if (!o->server)
			return usage_err(ps, "--sender may only be used with --server");
		o->sender = true;
		break;
	case OPT_DAEMON: case OPT_CONFIG: case OPT_DPARAM: case OPT_DETACH:
	case OPT_CHECK_CONFIG:
		if (ps->mode == OM_CLIENT)
			return RESTART_DAEMON;
		if (sp->id == OPT_DAEMON)
			ps->daemon_opt = true;
		else if (sp->id == OPT_CONFIG)
			return set_str(ps, &o->config_file, arg);
		else if (sp->id == OPT_DETACH)
			o->no_detach = !v;
		else if (sp->id == OPT_CHECK_CONFIG)
			o->check_config = true;
		else {
			if (!strchr(arg, '='))
				return usage_err(ps, "--dparam value is missing an '=': %s", arg);
			if (o->ndparam >= MAX_DPARAMS)
				return usage_err(ps, "too many --dparam values (at most %d)", MAX_DPARAMS);
			if (!(o->dparam[o->ndparam] = strdup(arg)))
				return oom(ps);
			o->ndparam++;
		}
		break;
	default:
		/* Recognised, supported, nothing to store. */
		break;
	}
	return 0;
}

/* ---- the getopt loop ---- */

static int run_getopt(struct pstate *ps)
{
	struct option *lo;
	char so[3 + 3 * 128];
	short shortidx[256];
	int i, nlo = 0, nso = 0, rc = 0;

	if (!(lo = calloc((size_t)options_table_len + 1, sizeof *lo)))
		return oom(ps);
	memset(shortidx, -1, sizeof shortidx);
	so[nso++] = '-'; /* non-options come back in order as 1 */
	so[nso++] = ':'; /* a missing argument is ':' */
	for (i = 0; i < options_table_len; i++) {
		const struct opt_spec *sp = &options_table[i];
		if (!(sp->modes & ps->mode) || sp->id == OPT_NONE)
			continue;
		if (sp->name) {
			lo[nlo].name = sp->name;
			lo[nlo].has_arg = sp->arg == OA_REQ ? required_argument : no_argument;
			lo[nlo].val = LONG_BASE + i;
			nlo++;
		}
		if (sp->shortopt && shortidx[(unsigned char)sp->shortopt] < 0) {
			shortidx[(unsigned char)sp->shortopt] = (short)i;
			so[nso++] = sp->shortopt;
			if (sp->arg == OA_REQ)
				so[nso++] = ':';
		}
	}
	so[nso] = '\0';

	optind = 0; /* full re-initialisation of glibc's getopt */
	opterr = 0;
	for (;;) {
		int prev = optind < 1 ? 1 : optind, c, idx;
		const struct opt_spec *sp;

		c = getopt_long(ps->argc, ps->argv, so, lo, NULL);
		if (c == -1)
			break;
		ps->elem = ps->argv[prev];
		if (c == 1) {
			if ((rc = add_arg(ps, optarg)) != 0)
				break;
			continue;
		}
		if (c == '?') {
			if (optopt >= LONG_BASE)
				rc = usage_err(ps, "%s%s: option does not take an argument",
					       where_prefix(ps), ps->elem);
			else
				rc = usage_err(ps, "%s%s: unknown option%s", where_prefix(ps),
					       ps->elem, ps->mode == OM_DAEMON ? " (in daemon mode)" : "");
			break;
		}
		if (c == ':') {
			rc = usage_err(ps, "%s%s: missing argument", where_prefix(ps), ps->elem);
			break;
		}
		idx = c >= LONG_BASE ? c - LONG_BASE : shortidx[(unsigned char)c];
		if (idx < 0 || idx >= options_table_len) {
			rc = usage_err(ps, "%s%s: unknown option", where_prefix(ps), ps->elem);
			break;
		}
		sp = &options_table[idx];
		if (c >= LONG_BASE) {
			/* getopt_long takes unique abbreviations; rsync (popt) does not. */
			size_t nl = strlen(sp->name);
			const char *e = ps->elem;
			if (strncmp(e, "--", 2) || strncmp(e + 2, sp->name, nl)
			    || (e[2 + nl] && e[2 + nl] != '=')) {
				rc = usage_err(ps, "%s%s: unknown option%s", where_prefix(ps), e,
					       ps->mode == OM_DAEMON ? " (in daemon mode)" : "");
				break;
			}
		}
		if ((rc = handle(ps, sp, optarg)) != 0)
			break;
	}
	if (!rc)
		for (i = optind; i < ps->argc; i++)
			if ((rc = add_arg(ps, ps->argv[i])) != 0)
				break;
	free(lo);
	return rc;
}

/* --partial-dir and --delay-updates (options.c, after parsing): the
 * directory is cleaned, "." means none, RSYNC_PARTIAL_DIR stands in for a
 * plain --partial, and a relative one is excluded (perishably) so it is
 * neither sent nor deleted (compat.c). */
/* What each -v level adds to the info levels (options.c: info_verbosity):
 * "NONREG" / "COPY,DEL,FLIST,MISC,NAME,STATS,SYMSAFE" /
 * "BACKUP,MISC2,MOUNT,NAME2,REMOVE,SKIP". */
static void verbosity_levels(int verbose, short *levels)
{
	static const struct {
		enum info_word w;
		short level;
	} by_verbosity[3][8] = {
		{{INFO_NONREG, 1}, {INFO_COUNT, 0}},
		{{INFO_COPY, 1}, {INFO_DEL, 1}, {INFO_FLIST, 1}, {INFO_MISC, 1}, {INFO_NAME, 1},
		 {INFO_STATS, 1}, {INFO_SYMSAFE, 1}, {INFO_COUNT, 0}},
		{{INFO_BACKUP, 1}, {INFO_MISC, 2}, {INFO_MOUNT, 1}, {INFO_NAME, 2}, {INFO_REMOVE, 1},
		 {INFO_SKIP, 1}, {INFO_COUNT, 0}},
	};

	memset(levels, 0, INFO_COUNT * sizeof *levels);
	for (int v = 0; v <= verbose && v < 3; v++)
		for (int j = 0; by_verbosity[v][j].w != INFO_COUNT; j++)
			levels[by_verbosity[v][j].w] = by_verbosity[v][j].level;
}

/* rsync's info levels: -v's, then --stats and --progress, then the --info
 * words given, which win. */
static void settle_info_levels(struct pstate *ps)
{
	struct ferry_opts *o = ps->o;

	verbosity_levels(o->verbose, o->info_level);
	if (o->stats)
		o->info_level[INFO_STATS] = o->verbose > 1 ? 3 : 2;
	if (o->progress || o->progress2)
		o->info_level[INFO_PROGRESS] = o->progress2 ? 2 : 1;
	/* --progress names the files when nothing else does (options.c:
	 * "name" when !log_before_transfer && INFO_EQ(NAME, 0)) */
	bool logs_before = o->itemize ||
			   (o->out_format && !log_format_has(o->out_format, 'b') &&
			    !log_format_has(o->out_format, 'c') && !log_format_has(o->out_format, 'C'));
	if (o->progress && !o->server && !o->info_level[INFO_NAME] && !logs_before)
		o->info_level[INFO_NAME] = 1;
	for (int i = 0; i < INFO_COUNT; i++)
		if (ps->info_user_set[i])
			o->info_level[i] = ps->info_user[i];
	/* -vv: each at 1 but NSTR and FUZZY; -vvv: DELTASUM2, FILTER2,
	 * FLIST2, CONNECT2, FUZZY; -vvvv: DELTASUM3, FLIST3, CMD2;
	 * -vvvvv: DELTASUM4, FLIST4, FUZZY2; NSTR only by name
	 * (options.c: debug_verbosity) */
	static const short by_verbosity[6][DEBUG_COUNT] = {
		{0, 0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0, 0}, {1, 1, 1, 1, 1, 0, 0},
		{2, 2, 2, 1, 2, 0, 1}, {3, 2, 3, 2, 2, 0, 1}, {4, 2, 4, 2, 2, 0, 2},
	};
	int v = o->verbose < 0 ? 0 : o->verbose > 5 ? 5 : o->verbose;
	for (int i = 0; i < DEBUG_COUNT; i++)
		o->debug_level[i] = ps->debug_user_set[i] ? ps->debug_user[i] : by_verbosity[v][i];
}

void options_limit_verbosity(struct ferry_opts *o, int max)
{
	short limit[INFO_COUNT];

	if (max < 0)
		max = 0;
	if (o->verbose > max)
		o->verbose = max;
	if (max < 2) /* -v and below allow no debugging output */
		memset(o->debug_level, 0, sizeof o->debug_level);
	if (max >= 2)
		return; /* rsync's MAX_VERBOSITY: nothing to limit */
	verbosity_levels(max, limit);
	for (int i = 0; i < INFO_COUNT; i++)
		if (o->info_level[i] > limit[i])
			o->info_level[i] = limit[i];
}

static int settle_partial_dir(struct pstate *ps)
{
	struct ferry_opts *o = ps->o;
	const char *env = getenv("RSYNC_PARTIAL_DIR");

	if (o->delay_updates && !o->partial_dir) {
		if (set_str(ps, &o->partial_dir, ".~tmp~") != 0)
			return RERR_MALLOC;
		o->partial_dir_implied = true;
	}
	if (o->inplace && o->partial_dir)
		return usage_err(ps, "--%s cannot be used with --%s",
				 o->append ? "append" : "inplace",
				 o->delay_updates ? "delay-updates" : "partial-dir");
	if (o->inplace)
		return 0;
	if (o->partial && !o->partial_dir && !o->server && env && *env &&
	    set_str(ps, &o->partial_dir, env) != 0)
		return RERR_MALLOC;
	if (!o->partial_dir)
		return 0;
	size_t n = strlen(o->partial_dir);
	while (n > 1 && o->partial_dir[n - 1] == '/')
		o->partial_dir[--n] = '\0';
	while (strncmp(o->partial_dir, "./", 2) == 0)
		memmove(o->partial_dir, o->partial_dir + 2, strlen(o->partial_dir + 2) + 1);
	if (!*o->partial_dir || strcmp(o->partial_dir, ".") == 0) {
		free(o->partial_dir);
		o->partial_dir = NULL;
		return 0;
	}
	o->partial = true;
	if (*o->partial_dir != '/' && !o->server) {
		char rule[4200];
		bool old = o->protocol && o->protocol < 30;
		snprintf(rule, sizeof rule, "%s %s/", old ? "-" : "-p", o->partial_dir);
		return add_rule(ps, "", rule);
	}
	return 0;
}

static void opts_init(struct ferry_opts *o)
{
	memset(o, 0, sizeof *o);
	o->whole_file = -1;
	o->max_delete = -1;
	o->max_size = o->min_size = -1;
	o->human = 1;
	o->files_from_fd = -1;
	o->confine_fd = -1;
}

/* Check --checksum-choice (rsync checksum.c:parse_checksum_choice()):
 * "auto" (or "auto,auto") means no choice; "none" for the transfer sum
 * forces --whole-file. */
static int check_checksum_choice(struct pstate *ps)
{
	struct ferry_opts *o = ps->o;
	const char *cc = o->checksum_choice, *comma;
	size_t len1;
	enum csum_type t1 = CSUM_MD5, t2 = CSUM_MD5;

	if (!cc)
		return 0;
	if (!strcasecmp(cc, "auto") || !strcasecmp(cc, "auto,auto")) {
		free(o->checksum_choice);
		o->checksum_choice = NULL;
		return 0;
	}
	comma = strchr(cc, ',');
	len1 = comma ? (size_t)(comma - cc) : strlen(cc);
	if (csum_parse_n(cc, len1, &t1) < 0)
		return other_err(ps, RERR_UNSUPPORTED, "unknown checksum name: %.*s", (int)len1, cc);
	if (comma && csum_parse(comma + 1, &t2) < 0)
		return other_err(ps, RERR_UNSUPPORTED, "unknown checksum name: %s", comma + 1);
	if (t1 == CSUM_NONE && !(len1 == 4 && !strncasecmp(cc, "auto", 4)))
		o->whole_file = 1;
	return 0;
}

/* --old-args / --secluded-args and their environment variables, as rsync
 * parse_arguments() settles old_style_args and protect_args. */
static int settle_arg_protection(struct pstate *ps)
{
	struct ferry_opts *o = ps->o;
	const char *env;

	if (ps->old_args < 0) {
		env = getenv("RSYNC_OLD_ARGS");
		if (!o->server && ps->secluded <= 0 && env && *env) {
			ps->secluded = 0;
			ps->old_args = atoi(env);
		} else {
			ps->old_args = 0;
		}
	} else if (ps->old_args) {
		if (ps->secluded > 0)
			return usage_err(ps, "--secluded-args conflicts with --old-args.");
		ps->secluded = 0;
	}
	if (ps->secluded < 0) {
		env = getenv("RSYNC_PROTECT_ARGS");
		ps->secluded = !o->server && env && *env ? atoi(env) != 0 : 0;
	}
	o->old_args = ps->old_args < 0 ? 0 : ps->old_args;
	o->secluded_args = ps->secluded > 0;
	return 0;
}

/* The batch options together (rsync options.c: parse_arguments). */
static int check_batch(struct pstate *ps)
{
	struct ferry_opts *o = ps->o;

	if (o->write_batch && o->read_batch)
		return usage_err(ps, "--write-batch and --read-batch can not be used together");
	if (o->batch_name && strlen(o->batch_name) > BATCH_NAME_MAX)
		return usage_err(ps, "the batch-file name must be %d characters or less.",
				 BATCH_NAME_MAX);
	if (o->write_batch > 0 || o->read_batch) {
		if (o->server) {
			/* Older clients send them; rsync carries on without. */
			fprintf(stderr, "ignoring --%s-batch option sent to server\n",
				o->write_batch ? "write" : "read");
			o->write_batch = 0;
			o->read_batch = false;
		} else if (o->dry_run) {
			o->write_batch = 0;
		}
	} else if (o->write_batch < 0 && o->dry_run) {
		o->write_batch = 0;
	}
	if (o->read_batch && o->files_from)
		return usage_err(ps, "--read-batch cannot be used with --files-from");
	if (o->read_batch && o->remove_source_files)
		return usage_err(ps, "--read-batch cannot be used with --remove-%s-files",
				 o->remove_source_files == 1 ? "source" : "sent");
	/* A batch holds the transfer's whole-file sums, which --sums-cache
	 * makes block-wise (blockwise.h): no receiver without the option
	 * could check them when the batch is read. */
	if ((o->write_batch || o->read_batch) && o->sums_cache && !o->server)
		return usage_err(ps, "--sums-cache cannot be used with --%s-batch",
				 o->read_batch ? "read" : o->write_batch < 0 ? "only-write" : "write");
	/* Nothing changes on the receiving side (main.c). */
	if (o->write_batch < 0)
		o->dry_run = true;
	return 0;
}

/* --confine-root (rsync options.c): a daemon drops it, its module being
 * the boundary already (a client's DIR could only widen it); elsewhere DIR
 * must be absolute and is opened once, for oppath_*_under. */
static int settle_confine_root(struct pstate *ps)
{
	struct ferry_opts *o = ps->o;

	if (!o->confine_root)
		return 0;
	if (ps->flags & OPTS_FROM_REMOTE) {
		free(o->confine_root);
		o->confine_root = NULL;
		return 0;
	}
	if (o->confine_root[0] != '/')
		return usage_err(ps, "--confine-root must be an absolute path");
	if (o->insecure_links)
		return usage_err(ps, "--insecure-links cannot be combined with --confine-root");
	if (o->confine_fd >= 0)
		close(o->confine_fd);
	/* a DIR that is not there holds nothing: every confined path is
	 * outside it, as in rsync, which compares names */
	o->confine_fd = open(o->confine_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (o->confine_fd < 0)
		o->confine_fd = OPPATH_ROOT_MISSING;
	return 0;
}

/* rsync parse_arguments() after the option loop. */
static int finish(struct pstate *ps)
{
	struct ferry_opts *o = ps->o;
	int rc;

	if (ps->mode == OM_DAEMON) {
		if (!ps->daemon_opt)
			return usage_err(ps, "Daemon option(s) used without --daemon.");
		o->daemon = true;
		/* the daemon's own allocation limit, which its clients can
		 * lower but not lift (proto/alloc.h) */
		const char *env = getenv("RSYNC_MAX_ALLOC");
		return env && *env ? set_max_alloc(ps, env) : 0;
	}
	if (ps->version_cnt) {
		if (ps->flags & OPTS_FROM_REMOTE)
			return usage_err(ps, "%s--version: unknown option", where_prefix(ps));
		/* rsync: -VV asks for JSON, except from a server. */
		if (ps->version_cnt > 1 && !o->server)
			usage_print_version_json(msgs_stream(o));
		else
			usage_print_version(msgs_stream(o));
		return FERRY_OPTS_EXIT_OK;
	}
	/* clientserver.c: a daemon's stderr leads nowhere, so its messages
	 * always go over the connection, whatever --stderr the client sent. */
	if (ps->flags & OPTS_FROM_REMOTE) {
		o->msgs2stderr = false;
		o->no_msgs2stderr = true;
	}
	if ((rc = check_checksum_choice(ps)) != 0)
		return rc;
	/* compat.c: parse_compress_choice refuses an unknown name at once */
	if (o->compress_choice && strcasecmp(o->compress_choice, "auto") != 0 &&
	    token_alg_by_name(o->compress_choice) < 0)
		return other_err(ps, RERR_UNSUPPORTED, "unknown compress name: %s", o->compress_choice);
	/* Compression however asked for (--zc, --compress-level) is refused
	 * as -z is (options.c: do_compression && refused_compress). */
	int z_row = options_refused_row(ps->refused, "compress");
	bool z_on = o->compress_choice && strcasecmp(o->compress_choice, "auto") != 0
			    ? token_alg_by_name(o->compress_choice) != CPRES_NONE ||
				      o->compress_level_set
			    : o->compress || o->compress_level_set;
	if (z_on && z_row >= 0)
		return refuse_err(ps, &options_table[z_row]);
	/* The old meaning of 'h' (--help) on its own. */
	if (o->human > 1 && ps->argc == 2 && !o->server) {
		usage_print_help(msgs_stream(o));
		return FERRY_OPTS_EXIT_OK;
	}
	if ((rc = settle_arg_protection(ps)) != 0)
		return rc;
	const char *env_alloc = getenv("RSYNC_MAX_ALLOC");
	if (!o->max_alloc && env_alloc && *env_alloc && (rc = set_max_alloc(ps, env_alloc)) != 0)
		return rc;
	if (o->server && o->rsh && (rc = set_str(ps, &o->server_caps, o->rsh)) != 0)
		return rc;
	/* --files-from: -a no longer implies -r, -d is implied, and so is -R
	 * unless given either way (options.c: the files_from block). */
	if (o->files_from) {
		if (ps->recurse == 1)
			o->recursive = false;
		if (ps->dirs < 0)
			ps->dirs = 1;
	}
	o->relative = ps->relative < 0 ? o->files_from != NULL : ps->relative != 0;
	if (o->nargs < 2 && !o->server && !o->read_batch)
		o->list_only = true;

	if (ps->dirs >= 4) {
		if ((rc = add_rule(ps, "", "- /*/*")) != 0)
			return rc;
		o->recursive = o->dirs = true;
	} else if (o->recursive)
		o->dirs = true;
	else if (ps->dirs < 0)
		o->dirs = o->list_only;
	else
		o->dirs = ps->dirs != 0;
	o->dirs_explicit = ps->dirs == 2 && !o->recursive;

	if (ps->del_before + !!ps->del_during + ps->del_after > 1)
		return usage_err(ps, "You may not combine multiple --delete-WHEN options.");
	if (ps->del_before)
		o->delete_mode = DELETE_BEFORE;
	else if (ps->del_during == 2)
		o->delete_mode = DELETE_DELAY;
	else if (ps->del_during)
		o->delete_mode = DELETE_DURING;
	else if (ps->del_after)
		o->delete_mode = DELETE_AFTER;
	else if (ps->del_plain || o->delete_excluded)
		o->delete_mode = DELETE_DEFAULT;
	if (!o->dirs && o->delete_mode != DELETE_NONE)
		return usage_err(ps, "--delete does not work without --recursive (-r) or --dirs (-d).");
	/* Every --delete-WHEN implies --delete, and implied options are
	 * refused like explicit ones. */
	int del_row = options_refused_row(ps->refused, "delete");
	if ((o->delete_mode != DELETE_NONE || o->missing_args == 2) && del_row >= 0)
		return refuse_err(ps, &options_table[del_row]);
	/* a sender removing what it sent deletes too (only "delete" itself
	 * implies this refusal) */
	if (o->remove_source_files && o->sender && del_row >= 0)
		return refuse_err(ps, &options_table[del_row]);

	if (o->append) {
		if (o->whole_file > 0)
			return usage_err(ps, "--append cannot be used with --whole-file");
		int inplace_row = options_refused_row(ps->refused, "inplace");
		if (inplace_row >= 0)
			return refuse_err(ps, &options_table[inplace_row]);
		o->inplace = true; /* options.c: append implies inplace */
		o->whole_file = 0;
	}
	if (o->write_devices) {
		/* options.c: write_devices implies inplace, refused or not */
		int inplace_row = options_refused_row(ps->refused, "inplace");
		if (inplace_row >= 0)
			return refuse_err(ps, &options_table[inplace_row]);
		o->inplace = true;
	}
	if ((rc = settle_partial_dir(ps)) != 0)
		return rc;
	settle_info_levels(ps);
	/* --inplace keeps partial data by nature; rsync clears keep_partial,
	 * but refuses it as it would --partial. */
	int partial_row = options_refused_row(ps->refused, "partial");
	if (o->inplace && partial_row >= 0)
		return refuse_err(ps, &options_table[partial_row]);
	if (o->inplace)
		o->partial = false;
	/* Backups beside their files change their directory's time after it
	 * was set: rsync then leaves directory times alone (options.c:
	 * omit_dir_times = -1, "implied, so avoid -O to sender"). */
	if (o->backup && !o->backup_dir) {
		o->omit_dir_times = true;
		o->omit_dir_times_opt = false;
	}
	/* Backups beside their files must survive --delete (options.c). */
	if (o->backup && !o->backup_dir && o->delete_mode != DELETE_NONE && !o->delete_excluded &&
	    !o->server) {
		char rule[4096];
		snprintf(rule, sizeof rule, "P *%s", o->suffix ? o->suffix : "~");
		if ((rc = add_rule(ps, "", rule)) != 0)
			return rc;
	}
	if (o->super_mode == SUPER_FAKE && o->xattrs > 1)
		return other_err(ps, RERR_SYNTAX, "--fake-super conflicts with -XX");
	if (o->suffix && strchr(o->suffix, '/'))
		return usage_err(ps, "--suffix cannot contain slashes: %s", o->suffix);
	if ((rc = settle_confine_root(ps)) != 0)
		return rc;
	return check_batch(ps);
}

int options_parse_flags(struct ferry_opts *o, int argc, char **argv, unsigned flags)
{
	return options_parse_refusing(o, argc, argv, flags, NULL);
}

int options_parse_refusing(struct ferry_opts *o, int argc, char **argv, unsigned flags,
			   const bool *refused)
{
	struct pstate ps;
	int rc;

	last_error[0] = '\0';
	opts_init(o);
	memset(&ps, 0, sizeof ps);
	ps.o = o;
	ps.flags = flags;
	ps.argc = argc;
	ps.argv = argv;
	ps.mode = OM_CLIENT;
	ps.dirs = -1;
	ps.secluded = ps.old_args = -1;
	ps.relative = -1;
	ps.elem = "";
	ps.refused = refused;
	if (argc < 1)
		return 0;
	rc = run_getopt(&ps);
	if (rc == RESTART_DAEMON) {
		/* rsync re-parses the whole command line with its daemon table. */
		if (flags & OPTS_FROM_REMOTE)
			return other_err(&ps, RERR_SYNTAX, "Attempt to hack rsync thwarted!");
		options_free(o);
		opts_init(o);
		memset(&ps, 0, sizeof ps);
		ps.o = o;
		ps.flags = flags;
		ps.argc = argc;
		ps.argv = argv;
		ps.mode = OM_DAEMON;
		ps.dirs = -1;
		ps.secluded = ps.old_args = -1;
		ps.relative = -1;
		ps.elem = "";
		rc = run_getopt(&ps);
	}
	if (rc)
		return rc;
	return finish(&ps);
}

int options_parse(struct ferry_opts *o, int argc, char **argv)
{
	return options_parse_flags(o, argc, argv, 0);
}

void options_free(struct ferry_opts *o)
{
	int i;
	size_t j;

	if (!o)
		return;
	free(o->config_file);
	free(o->log_file);
	free(o->log_file_format);
	free(o->partial_dir);
	free(o->usermap);
	free(o->groupmap);
	free(o->backup_dir);
	free(o->suffix);
	free(o->temp_dir);
	free(o->files_from);
	for (i = 0; i < o->nalt_dest; i++)
		free(o->alt_dest[i]);
	for (i = 0; i < o->ndparam; i++)
		free(o->dparam[i]);
	free(o->out_format);
	free(o->info);
	free(o->debug);
	free(o->chmod);
	free(o->checksum_choice);
	free(o->sums_cache);
	for (j = 0; j < o->nfilters; j++)
		free(o->filters[j].text);
	free(o->filters);
	free(o->bind_address);
	free(o->password_file);
	free(o->rsh);
	free(o->rsync_path);
	free(o->ssh_mode);
	free(o->ssh_cipher);
	free(o->sockopts);
	free(o->early_input);
	free(o->max_alloc);
	free(o->copy_as);
	free(o->batch_name);
	free(o->compress_choice);
	free(o->skip_compress);
	for (i = 0; i < o->nremote_options; i++)
		free(o->remote_options[i]);
	free(o->remote_options);
	free(o->server_caps);
	for (i = 0; i < o->nargs; i++)
		free(o->args[i]);
	free(o->args);
	opts_init(o);
}
