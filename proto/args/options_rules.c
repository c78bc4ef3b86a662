/*
 * Filter rules from the command line: --filter, --exclude, --include and
 * their -from files (exclude.c: parse_filter_file).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "proto/core/exit_line.h"
#include "proto/args/options.h"
#include "proto/args/options_priv.h"
#include "proto/base/oppath.h"
#include "proto/filter/filter.h"

/* Add one filter rule in rsync's rule text form. */
int opt_add_rule(struct pstate *ps, const char *prefix, const char *text)
{
	struct ferry_opts *o = ps->o;
	size_t plen = strlen(prefix), tlen = strlen(text);
	char *s;

	if (o->nfilters + 1 > ps->filters_cap) {
		size_t cap = ps->filters_cap ? ps->filters_cap * 2 : 8;
		struct filter_arg *f = realloc(o->filters, cap * sizeof *f);
		if (!f)
			return opt_oom(ps);
		o->filters = f;
		ps->filters_cap = cap;
	}
	if (!(s = malloc(plen + tlen + 1)))
		return opt_oom(ps);
	memcpy(s, prefix, plen);
	memcpy(s + plen, text, tlen + 1);
	o->filters[o->nfilters++] = (struct filter_arg){.text = s};
	return 0;
}

/* An --exclude/--include pattern (or a line of an -from file): only the
 * optional "- " / "+ " prefixes and a lone "!" are special, as rsync
 * exclude.c:parse_rule_tok() with XFLG_OLD_PREFIXES. */
int opt_add_old_rule(struct pstate *ps, const char *pat, bool include)
{
	if (!*pat)
		return 0;
	if ((pat[0] == '-' || pat[0] == '+') && pat[1] == ' ')
		return opt_add_rule(ps, "", pat);
	if (pat[0] == '!' && !pat[1])
		return opt_add_rule(ps, "", "!");
	return opt_add_rule(ps, include ? "+ " : "- ", pat);
}

int options_filter_failed(const struct ferry_opts *o, const struct filter_list *fl,
			  const char *err)
{
	/* rsync parses them with its options, before any role but "client" */
	exit_line_set_role(o->exit_note, "client");
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

int opt_read_rule_file(struct pstate *ps, const char *fname, bool include)
{
	bool use_stdin = !strcmp(fname, "-") && !ps->o->server;
	FILE *fp;
	char *line = NULL;
	size_t len = 0, cap = 0;
	int ch, rc = 0;

	if (!*fname)
		return 0;
	if (use_stdin && (ps->flags & OPTS_FROM_REMOTE))
		return opt_usage_err(ps, "%s--%sclude-from=- is not allowed here",
				 opt_where_prefix(ps), include ? "in" : "ex");
	fp = use_stdin ? stdin : open_rule_file(fname, ps->o->insecure_links);
	if (!fp)
		return opt_other_err(ps, RERR_FILEIO, "[%s] failed to open %sclude file %s: %s (%d)",
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
					rc = opt_oom(ps);
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
			if ((rc = opt_add_old_rule(ps, line, include)) != 0)
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
