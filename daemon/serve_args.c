/*
 * The client's arguments: reading them (io.c: read_args), the secluded
 * list, the path arguments inside the module, and the module's filter
 * rules (clientserver.c: rsync_module).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/args/options.h"
#include "proto/args/secluded.h"
#include "daemon/log.h"
#include "daemon/serve_priv.h"

/* \X -> X in place: a client escapes wildcards and shell characters in
 * its option values (options.c: safe_arg), and no remote shell removes the
 * escapes on the way to a daemon (io.c: unbackslash_arg). */
static void unbackslash(char *s)
{
	char *t = s;

	for (; *s; s++) {
		if (*s == '\\' && s[1])
			s++;
		*t++ = *s;
	}
	*t = '\0';
}

/* The argument vector after "@RSYNCD: OK" (io.c: read_args): NUL- or
 * newline-separated, ended by an empty argument, bounded in count and
 * size. argv[0] is ours ("rsyncd"). The options before the "." are
 * un-backslashed; the paths after it keep theirs for the module's
 * wildcard expansion. */
static char **read_args(struct conn *c, int *argc_out)
{
	char sep = c->s.protocol >= 30 ? '\0' : '\n';
	char **argv = calloc(MAX_DAEMON_ARGS + 2, sizeof *argv);
	char arg[LINE_MAX_LEN];
	size_t total = 0;
	int argc = 0;
	bool past_dot = false;

	if (!argv)
		return NULL;
	argv[argc++] = strdup("rsyncd");
	for (;;) {
		size_t n = 0;
		char ch;
		for (;;) {
			if (!wire_read(&c->s.in, &ch, 1))
				goto fail;
			if (ch == sep)
				break;
			if (ch == '\r' && sep == '\n')
				continue;
			if (n + 1 >= sizeof arg)
				goto fail;
			arg[n++] = ch;
		}
		arg[n] = '\0';
		if (n == 0)
			break;
		total += n;
		if (argc > MAX_DAEMON_ARGS || total > MAX_ARGS_BYTES)
			goto fail;
		if (!past_dot)
			unbackslash(arg);
		past_dot = past_dot || strcmp(arg, ".") == 0;
		argv[argc++] = strdup(arg);
	}
	*argc_out = argc;
	return argv;
fail:
	for (int i = 0; i < argc; i++)
		free(argv[i]);
	free(argv);
	return NULL;
}

void module_arg_relative(const char *arg, const char *module, bool keep_dots, char *out,
			    size_t size)
{
	size_t mlen = strlen(module);
	const char *p = arg;
	char buf[4096];
	size_t n = 0;

	if (strncmp(p, module, mlen) == 0 && (p[mlen] == '/' || p[mlen] == '\0'))
		p += mlen;
	bool trailing = *p && p[strlen(p) - 1] == '/';
	while (*p) {
		while (*p == '/')
			p++;
		const char *e = strchr(p, '/');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len == 0)
			break;
		if (len == 1 && p[0] == '.' && !keep_dots) {
			/* drop */
		} else if (len == 2 && p[0] == '.' && p[1] == '.') {
			while (n > 0 && buf[n - 1] != '/')
				n--;
			if (n > 0)
				n--;
		} else if (n + len + 4 < sizeof buf) {
			if (n)
				buf[n++] = '/';
			memcpy(buf + n, p, len);
			n += len;
		}
		p += len;
	}
	if (n == 0)
		buf[n++] = '.';
	if (trailing || (n == 1 && buf[0] == '.'))
		buf[n++] = '/';
	buf[n] = '\0';
	if (n >= size)
		n = size - 1;
	memcpy(out, buf, n);
	out[n] = '\0';
}

bool module_path_args(const struct daemon_module *m, const struct ferry_opts *o,
			     int root_fd, const struct filter_list *filters,
			     struct path_list *out)
{
	char sep[300];
	int n = snprintf(sep, sizeof sep, " %s/", m->name);
	bool split = !o->secluded_args && n > 0 && (size_t)n < sizeof sep;

	for (int i = 1; i < o->nargs; i++) {
		const char *arg = o->args[i];
		const char *module = m->name; /* stripped from the first piece only */
		for (;;) {
			const char *next = split ? strstr(arg, sep) : NULL;
			size_t len = next ? (size_t)(next - arg) : strlen(arg);
			char piece[4096], rel[4096];
			if (len >= sizeof piece)
				len = sizeof piece - 1;
			memcpy(piece, arg, len);
			piece[len] = '\0';
			module_arg_relative(piece, module, o->relative, rel, sizeof rel);
			if (!module_glob(root_fd, filters, rel, out))
				return false;
			if (!next)
				break;
			arg = next + strlen(sep);
			module = "";
		}
	}
	return true;
}

int module_filters(const struct daemon_module *m, struct filter_list *fl, char *err,
			  size_t errsz)
{
	/* a directory exclude covers its subtree (clientserver.c:
	 * XFLG_DIR2WILD3), so nothing can be written below it */
	const int old = FILTER_PARSE_OLD_PREFIXES | FILTER_PARSE_DIR2WILD3,
		  split = FILTER_PARSE_WORD_SPLIT, inc = FILTER_PARSE_INCLUDE;
	const struct {
		const char *v;
		int flags;
		bool file;
	} lists[] = {{m->filter, split | FILTER_PARSE_DIR2WILD3, false},
		     {m->include_from, old | inc, true},
		     {m->include, old | inc | split, false},
		     {m->exclude_from, old, true},
		     {m->exclude, old | split, false}};

	filter_list_init(fl);
	/* "exclude from" and merge files are admin paths (oppath.h) */
	fl->oppath_how = module_oppath_how(m);
	for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
		const char *v = lists[i].v;
		if (!v || !*v)
			continue;
		int r = lists[i].file ? filter_parse_file(fl, v, lists[i].flags, err, errsz)
				      : filter_parse_rule(fl, v, lists[i].flags, err, errsz);
		if (r < 0)
			return -1;
	}
	return filter_list_count(fl) ? 1 : 0;
}
/* Whether a directory the client names lies in what the module's rules
 * exclude, judged by name once ".." is resolved inside the module. */
static bool dir_excluded(const struct filter_list *fl, const char *dir)
{
	char rel[4096];

	module_arg_relative(dir, "", false, rel, sizeof rel);
	size_t n = strlen(rel);
	while (n > 1 && rel[n - 1] == '/')
		rel[--n] = '\0';
	if (strcmp(rel, ".") == 0)
		return false;
	return filter_check(fl, rel, true, false) < 0;
}

int push_dirs_refused(const struct ferry_opts *o, const struct filter_list *fl)
{
	if ((o->temp_dir && dir_excluded(fl, o->temp_dir)) ||
	    (o->backup_dir && dir_excluded(fl, o->backup_dir)))
		return RERR_UNSUPPORTED;
	for (int i = 0; i < o->nalt_dest && i < ALT_DEST_MAX; i++)
		if (o->alt_dest[i] && dir_excluded(fl, o->alt_dest[i]))
			return RERR_SYNTAX;
	if (o->partial_dir && *o->partial_dir == '/' && dir_excluded(fl, o->partial_dir))
		return RERR_SYNTAX;
	return 0;
}
static bool conn_getc(void *ctx, char *ch)
{
	return wire_read(&((struct conn *)ctx)->s.in, ch, 1);
}

/* A client that sent -s (--secluded-args) sends the rest of its arguments
 * after the first list (clientserver.c: rsync_module reads them with a
 * second read_args()); parse the two together. Returns the options
 * parser's result, or -1 when the list could not be read (*merged and
 * *extra are then NULL). */
static int parse_secluded(struct conn *c, struct ferry_opts *o, int argc, char **argv,
			  const bool *refused, char ***merged, char ***extra)
{
	const char *why = NULL;
	int nextra = 0, margc = 0;

	*merged = NULL;
	*extra = secluded_read(conn_getc, c, &nextra, &why);
	if (!*extra) {
		daemon_log(c->cfg, c->m, "reading the secluded arguments from %s (%s): %s", c->host,
			   c->addr, why);
		return -1;
	}
	/* Only the options before the secluded ones count: rsync 3.5.0 at
	 * protocol < 30 also sends "(null)", "." and the paths in the first
	 * list, which its daemon ignores. */
	*merged = secluded_merge(argv, options_secluded_split(argv), *extra, nextra, &margc);
	if (!*merged) {
		secluded_free(*extra);
		*extra = NULL;
		return -1;
	}
	options_free(o);
	return options_parse_refusing(o, margc, *merged, OPTS_FROM_REMOTE, refused);
}
bool module_args_read(struct conn *c, const struct daemon_module *m,
			     struct module_args *a)
{
	a->argv = read_args(c, &a->argc);
	if (!a->argv) {
		a->argc = 0;
		return false;
	}
	bool *refused = options_refusals(m->refuse_options);
	a->rc = options_parse_refusing(&a->o, a->argc, a->argv, OPTS_FROM_REMOTE, refused);
	a->parsed = true;
	if (a->rc == 0 && a->o.secluded_args) {
		a->rc = parse_secluded(c, &a->o, a->argc, a->argv, refused, &a->merged,
				       &a->secluded);
		a->lost = a->rc < 0;
	}
	free(refused);
	return true;
}

void module_args_free(struct module_args *a)
{
	if (a->parsed)
		options_free(&a->o);
	free(a->merged);
	secluded_free(a->secluded);
	for (int i = 0; i < a->argc; i++)
		free(a->argv[i]);
	free(a->argv);
}
