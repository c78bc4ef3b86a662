/*
 * Option values: integers and sizes as popt and rsync read them, --chmod
 * checks, --info/--debug words, --max-alloc.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "proto/args/options.h"
#include "proto/args/options_priv.h"

/* The --debug words behind enum debug_word. */
static const char *const debug_names[DEBUG_COUNT] = {"DELTASUM", "FILTER", "FLIST", "CMD",
						      "CONNECT",  "NSTR",   "FUZZY"};
/* popt's POPT_ARG_INT: strtol base 0, the whole string, int range. */
int opt_parse_int(struct pstate *ps, const char *arg, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 0);
	if (end == arg || *end)
		return opt_usage_err(ps, "%s%s: invalid numeric value", opt_where_prefix(ps), ps->elem);
	if (errno == ERANGE || v < INT_MIN || v > INT_MAX)
		return opt_usage_err(ps, "%s%s: number too large or too small", opt_where_prefix(ps),
				 ps->elem);
	if (v < lo || v > hi) {
		if (lo == 0 && v < 0)
			return opt_usage_err(ps, "%s%s: the value must not be negative",
					 opt_where_prefix(ps), ps->elem);
		return opt_usage_err(ps, "%s%s: the value must be between %ld and %ld",
				 opt_where_prefix(ps), ps->elem, lo, hi);
	}
	*out = v;
	return 0;
}

/* rsync's do_big_num(n, 3): 1024-based units with two decimals. */
void opt_big_num(long n, char *buf, size_t sz)
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
long opt_parse_size(const char *size_arg, char def_suf, long max_value, const char **err)
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
bool opt_chmod_valid(const char *s)
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

int opt_handle_words(struct pstate *ps, bool debug, const char *arg)
{
	const struct output_word *words = debug ? options_debug_words : options_info_words;
	short levels[OPTIONS_MAX_WORDS] = {0};
	bool set[OPTIONS_MAX_WORDS] = {false};
	char bad[64];
	int r = options_parse_words(words, arg, levels, set, ps->o->server, bad, sizeof bad);

	if (r == 1) {
		if (ps->flags & OPTS_FROM_REMOTE)
			return opt_usage_err(ps, "%s--%s=help is not allowed here", opt_where_prefix(ps),
					 debug ? "debug" : "info");
		ps->o->print_request = debug ? OPTS_PRINT_DEBUG_WORDS : OPTS_PRINT_INFO_WORDS;
		return FERRY_OPTS_EXIT_OK;
	}
	if (r < 0)
		return opt_usage_err(ps, "Unknown --%s item: \"%s\"", debug ? "debug" : "info", bad);
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
	return opt_join_str(ps, debug ? &ps->o->debug : &ps->o->info, arg);
}
/* --max-alloc=SIZE (rsync parse_arguments: parse_size_arg with a 1 MiB
 * minimum, 0 for unlimited). The parsed value becomes the process's
 * allocation limit (proto/base/alloc.h); the text is forwarded to the remote. */
int opt_set_max_alloc(struct pstate *ps, const char *arg)
{
	const char *err;
	long size = opt_parse_size(arg, 'b', LONG_MAX / 2, &err);

	if (size < 0)
		return opt_usage_err(ps, "--max-alloc=%s is %s", arg, err);
	/* 0 is unlimited (options.c: parse_size_arg with unlimited_0) */
	if (size > 0 && size < 1024 * 1024)
		return opt_usage_err(ps, "--max-alloc=%s is too small (min: 1.00M or 0 for unlimited)",
				 arg);
	ps->o->max_alloc_bytes = size;
	return opt_set_str(ps, &ps->o->max_alloc, arg);
}

/* ---- one option ---- */

/* --max-size, --min-size, --bwlimit: a size as opt_parse_size() reads it, at
 * least min (0 also allowed when zero_unlimited), with rsync's messages. */
int opt_parse_size_opt(struct pstate *ps, const char *name, const char *arg, char def_unit,
			  long min, bool zero_unlimited, int64_t *out)
{
	const char *err;
	long size = opt_parse_size(arg, def_unit, LONG_MAX / 2, &err);

	if (size < 0)
		return opt_usage_err(ps, "--%s=%s is %s", name, arg, err);
	if (size < min && !(zero_unlimited && size == 0))
		return opt_usage_err(ps, "--%s=%s is too small (min: %ld%s)", name, arg, min,
				 zero_unlimited ? " or 0 for unlimited" : "");
	*out = size;
	return 0;
}
