/*
 * The option parser's errors and its small stores (see
 * proto/args/options_priv.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "proto/args/options.h"
#include "proto/args/options_priv.h"

const char *options_last_error(const struct ferry_opts *o)
{
	return o->parse_error;
}

/* Where --help, --version and --info=help print: stdout, or stderr with
 * --stderr=all, where rsync sends every message (log.c: rwrite). */
FILE *opt_msgs_stream(const struct ferry_opts *o)
{
	return o->msgs2stderr ? stderr : stdout;
}

/* ---- errors ---- */

static void vreport(struct pstate *ps, const char *fmt, va_list ap)
{
	char *text = ps->o->parse_error;

	vsnprintf(text, sizeof ps->o->parse_error, fmt, ap);
	if (!(ps->flags & OPTS_FROM_REMOTE))
		fprintf(stderr, "ferry: %s\n", text);
}

/* A usage error: message, in daemon mode the "how to get help" hint
 * (rsync has none for the client: popt's error and the exit line), then
 * RERR_SYNTAX. */
int opt_usage_err(struct pstate *ps, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(ps, fmt, ap);
	va_end(ap);
	if (!(ps->flags & OPTS_FROM_REMOTE) && ps->mode == OM_DAEMON)
		fprintf(stderr, "(Type \"ferry --daemon --help\" for assistance with daemon mode.)\n");
	return RERR_SYNTAX;
}

int opt_other_err(struct pstate *ps, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(ps, fmt, ap);
	va_end(ap);
	return code;
}

/* "on remote machine: " when we are a server, as rsync's option errors. */
const char *opt_where_prefix(struct pstate *ps)
{
	return ps->o->server ? "on remote machine: " : "";
}

/* ---- small helpers ---- */

/* options.c: create_refuse_error */
int opt_refuse_err(struct pstate *ps, const struct opt_spec *sp)
{
	if (sp->shortopt)
		return opt_other_err(ps, RERR_UNSUPPORTED, "The server is configured to refuse --%s (-%c)",
				 sp->name ? sp->name : "", sp->shortopt);
	return opt_other_err(ps, RERR_UNSUPPORTED, "The server is configured to refuse --%s",
			 sp->name ? sp->name : "");
}

int opt_oom(struct pstate *ps)
{
	return opt_other_err(ps, RERR_MALLOC, "out of memory while parsing options");
}

int opt_set_str(struct pstate *ps, char **dst, const char *val)
{
	char *s = strdup(val);

	if (!s)
		return opt_oom(ps);
	free(*dst);
	*dst = s;
	return 0;
}

/* Append val to *dst with a comma between (repeated --info, --chmod). */
int opt_join_str(struct pstate *ps, char **dst, const char *val)
{
	size_t old = *dst ? strlen(*dst) : 0, add = strlen(val);
	char *s;

	if (!*dst)
		return opt_set_str(ps, dst, val);
	if (!add)
		return 0;
	if (!(s = realloc(*dst, old + 1 + add + 1)))
		return opt_oom(ps);
	s[old] = ',';
	memcpy(s + old + 1, val, add + 1);
	*dst = s;
	return 0;
}

int opt_add_arg(struct pstate *ps, const char *arg)
{
	struct ferry_opts *o = ps->o;

	if ((size_t)o->nargs + 2 > ps->args_cap) {
		size_t cap = ps->args_cap ? ps->args_cap * 2 : 8;
		char **a = realloc(o->args, cap * sizeof *a);
		if (!a)
			return opt_oom(ps);
		o->args = a;
		ps->args_cap = cap;
	}
	if (!(o->args[o->nargs] = strdup(arg)))
		return opt_oom(ps);
	o->args[++o->nargs] = NULL;
	return 0;
}
/* The name to use in "not supported" messages: what the user typed. */
void opt_label(const struct opt_spec *sp, const char *elem, char *buf, size_t sz)
{
	if (sp->name && (!sp->shortopt || !strncmp(elem, "--", 2)))
		snprintf(buf, sz, "--%s", sp->name);
	else if (sp->name)
		snprintf(buf, sz, "-%c (--%s)", sp->shortopt, sp->name);
	else
		snprintf(buf, sz, "-%c", sp->shortopt);
}
