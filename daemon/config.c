/*
 * The rsyncd.conf parser: rsync's params.c lexer (sections, parameters,
 * continuations, comments, &include/&merge) and loadparm.c semantics
 * (global defaults copied into each module at its header, [global], the
 * &include save/restore of the defaults, --dparam), made strict: anything
 * rsync would warn about and skip is an error naming file:line. Like rsync,
 * the parser reads on past such a line (so that every mistake is reported
 * at once), and stops at the errors rsync stops at; either way the load
 * fails.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/access.h"
#include "daemon/config.h"
#include "daemon/config_priv.h"
#include "proto/base/oppath.h"

#define EOFC (-1)

/* One input being lexed: a config file's bytes, or a string. */
struct src {
	const char *name;                /* for messages */
	const unsigned char *p, *end;
	const unsigned char *line_start; /* of the current physical line */
	int line;
};

/* What &include saves and restores: rsync's "Vars" (globals and module
 * defaults), plus whether --dparam has been applied to them. */
struct saved_vars {
	struct daemon_config g;          /* global-only fields only */
	struct daemon_module d;
	bool dparams_done;
};

struct parser {
	struct daemon_config *c;         /* the config being built */
	const struct config_dparam *dparams;
	size_t ndparams;
	bool in_global;                  /* rsync's bInGlobalSection */
	size_t cur;                      /* the current module, when !in_global */
	bool dparams_done;
	int depth;                       /* &include/&merge nesting */
	int nfiles;
	struct {
		dev_t dev;
		ino_t ino;
	} open[CONFIG_MAX_INCLUDE_DEPTH + 1]; /* files being read, for loops */
	int nopen;
	struct {
		const char *name;
		int line;
	} from[CONFIG_MAX_INCLUDE_DEPTH + 1]; /* the &include/&merge lines being followed */
	int nfrom;
	const unsigned char *stmt;       /* first byte of the current statement's line */
	char *err;                       /* the errors so far, one per line */
	size_t errsz;
	bool quiet;                      /* no warnings on stderr */
	int nerr;
	char buf[CONFIG_MAX_LINE + 8];   /* name '\0' value '\0' of one statement */
};

static int parse(struct parser *P, struct src *s);

/* ---------------------------------------------------------------- errors */

/* Append one error to P->err as a line of its own: the message, where it
 * is, and the &include/&merge lines that led there. An error that does not
 * fit is counted but not shown. */
static void record(struct parser *P, const struct src *s, int line, const char *fmt,
		   va_list ap)
{
	char msg[1024];
	size_t len, used;

	P->nerr++;
	if (!P->err || !P->errsz)
		return;
	len = (size_t)vsnprintf(msg, sizeof msg, fmt, ap);
	if (len >= sizeof msg)
		len = sizeof msg - 1;
	if (s) {
		len += (size_t)snprintf(msg + len, sizeof msg - len, " at %s:%d", s->name, line);
		for (int i = P->nfrom - 1; i >= 0 && len < sizeof msg; i--)
			len += (size_t)snprintf(msg + len, sizeof msg - len,
						" (included from %s:%d)", P->from[i].name,
						P->from[i].line);
	}
	used = strlen(P->err);
	if (used + (used > 0) + strlen(msg) >= P->errsz)
		return;
	snprintf(P->err + used, P->errsz - used, "%s%s", used > 0 ? "\n" : "", msg);
}

/* An error the parser cannot read past (rsync stops there too): returns -1. */
static int perr(struct parser *P, const struct src *s, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int perr(struct parser *P, const struct src *s, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	record(P, s, line, fmt, ap);
	va_end(ap);
	return -1;
}

/* An error in one statement that rsync would warn about and skip: the load
 * will fail, but the parser goes on to report the rest. Returns 0, or -1
 * once CONFIG_MAX_ERRORS have been recorded. */
static int pskip(struct parser *P, const struct src *s, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int pskip(struct parser *P, const struct src *s, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	record(P, s, line, fmt, ap);
	va_end(ap);
	if (P->nerr < CONFIG_MAX_ERRORS)
		return 0;
	return perr(P, NULL, 0, "too many errors, giving up");
}

/* ----------------------------------------------------------------- lexer */

static bool is_blank(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static int nextc(struct src *s)
{
	int c;

	if (s->p >= s->end)
		return EOFC;
	c = *s->p++;
	if (c == '\n') {
		s->line++;
		s->line_start = s->p;
	}
	return c;
}

/* params.c: EatWhitespace -- the next non-blank, or newline, or EOF. */
static int eat_ws(struct src *s)
{
	int c;

	do
		c = nextc(s);
	while (c != EOFC && c != '\n' && is_blank(c));
	return c;
}

/* params.c: EatComment -- skip to the end of the line. */
static int eat_comment(struct src *s)
{
	int c;

	do
		c = nextc(s);
	while (c != EOFC && c != '\n');
	return c;
}

/* params.c: Continuation -- if the last non-blank before pos is '\',
 * its offset, else -1. */
static int continuation(const char *line, int pos)
{
	pos--;
	while (pos >= 0 && is_blank((unsigned char)line[pos]))
		pos--;
	return pos >= 0 && line[pos] == '\\' ? pos : -1;
}

/* The statement being read has grown past CONFIG_MAX_LINE bytes (c is the
 * character just read; the newline that ends a line is not counted). */
static bool too_long(const struct parser *P, const struct src *s, int c)
{
	size_t n = (size_t)(s->p - P->stmt);

	if (c == '\n')
		n--;
	return n > CONFIG_MAX_LINE;
}

static int err_too_long(struct parser *P, const struct src *s, int line)
{
	return perr(P, s, line, "line longer than %d bytes (continuations included)",
		    CONFIG_MAX_LINE);
}

/* --------------------------------------------------------------- semantics */

static void free_vars(struct saved_vars *v)
{
	cfg_class_free(true, &v->g);
	cfg_class_free(false, &v->d);
}

static int save_vars(const struct parser *P, struct saved_vars *v)
{
	memset(v, 0, sizeof *v);
	if (cfg_class_copy(true, &v->g, P->c) < 0)
		return -1;
	if (cfg_class_copy(false, &v->d, &P->c->defaults) < 0) {
		cfg_class_free(true, &v->g);
		return -1;
	}
	v->dparams_done = P->dparams_done;
	return 0;
}

/* Put the saved globals and defaults back; v stays valid (a "reset"). */
static int restore_vars(struct parser *P, const struct saved_vars *v)
{
	cfg_class_free(true, P->c);
	cfg_class_free(false, &P->c->defaults);
	if (cfg_class_copy(true, P->c, &v->g) < 0 ||
	    cfg_class_copy(false, &P->c->defaults, &v->d) < 0)
		return -1;
	P->dparams_done = v->dparams_done;
	P->in_global = true;
	return 0;
}

/* Apply the --dparam overrides to the global section (loadparm.c:
 * set_dparams). */
static int apply_dparams(struct parser *P)
{
	char why[CONFIG_MAX_LINE / 2];

	P->dparams_done = true;
	for (size_t i = 0; i < P->ndparams; i++) {
		const struct config_dparam *d = &P->dparams[i];
		const struct config_param *p = config_param_find(d->name);
		void *base;

		if (!p)
			return perr(P, NULL, 0, "unknown parameter \"%s\" in --dparam", d->name);
		base = p->global_only ? (void *)P->c : (void *)&P->c->defaults;
		if (cfg_param_set(p, base, d->value, why, sizeof why) < 0)
			return perr(P, NULL, 0, "%s in --dparam", why);
	}
	return 0;
}

/* A "[name]" header (loadparm.c: do_section). */
static int do_section(struct parser *P, const struct src *s, int line, const char *name)
{
	struct daemon_config *c = P->c;
	bool isglobal = cfg_name_eq(name, "global");
	struct daemon_module *m;
	char at[1024];

	/* At the end of the initial global section, add the --dparam items. */
	if (P->in_global && !isglobal && !P->dparams_done && apply_dparams(P) < 0)
		return -1;
	P->in_global = isglobal;
	if (isglobal)
		return 0;
	if (strchr(name, '/'))
		return perr(P, s, line, "invalid module name \"%s\" (it may not contain '/')", name);

	/* A repeated header reopens the module (matched as rsync does:
	 * ignoring case and blanks). */
	for (size_t i = c->nmodules; i-- > 0;) {
		if (cfg_name_eq(c->modules[i].name, name)) {
			P->cur = i;
			return 0;
		}
	}
	if (c->nmodules >= CONFIG_MAX_MODULES)
		return perr(P, s, line, "too many modules (more than %d)", CONFIG_MAX_MODULES);
	/* capacity 4, then doubled each time the count reaches a power of 2 */
	if (c->nmodules == 0 || (c->nmodules >= 4 && !(c->nmodules & (c->nmodules - 1)))) {
		size_t cap = c->nmodules ? c->nmodules * 2 : 4;

		if (!(m = realloc(c->modules, cap * sizeof *m)))
			return perr(P, s, line, "out of memory");
		c->modules = m;
	}
	m = &c->modules[c->nmodules];
	memset(m, 0, sizeof *m);
	/* each module starts from the defaults as they are at its header */
	if (cfg_class_copy(false, m, &c->defaults) < 0)
		return perr(P, s, line, "out of memory");
	free(m->name);
	snprintf(at, sizeof at, "%s:%d", s->name, line);
	m->name = strdup(name);
	m->defined_at = strdup(at);
	c->nmodules++;
	if (!m->name || !m->defined_at)
		return perr(P, s, line, "out of memory");
	P->cur = c->nmodules - 1;
	return 0;
}

struct host_list_at {
	const struct src *s;
	int line;
	const char *label;
};

static void warn_host_entry(void *ctx, const char *why)
{
	const struct host_list_at *at = ctx;

	fprintf(stderr, "ferry: warning: %s (\"%s\" at %s:%d): the entry matches no client\n",
		why, at->label, at->s->name, at->line);
}

/* An address pattern in "hosts allow", "hosts deny" or "proxy protocol
 * hosts" that can never match is a mistake the operator should hear about
 * when the daemon starts, not find out from a client let in or kept out.
 * rsync logs it at every connection; the daemon still starts either way,
 * and says it once (not again as each connection re-reads the file). */
static void warn_host_list(const struct src *s, int line, const char *label, const char *value)
{
	struct host_list_at at = {.s = s, .line = line, .label = label};

	access_list_problems(value, warn_host_entry, &at);
}

/* A "name = value" line (loadparm.c: do_parameter). */
static int do_parameter(struct parser *P, const struct src *s, int line, const char *name,
			const char *value)
{
	const struct config_param *p = config_param_find(name);
	char why[CONFIG_MAX_LINE / 2];
	void *base;

	if (!p)
		return pskip(P, s, line, "unknown parameter \"%s\"", name);
	if (P->in_global)
		base = p->global_only ? (void *)P->c : (void *)&P->c->defaults;
	else if (p->global_only)
		return pskip(P, s, line,
			    "global parameter \"%s\" in module [%s] (set it before the first "
			    "module or in a [global] section)",
			    p->label, P->c->modules[P->cur].name);
	else
		base = &P->c->modules[P->cur];
	if (cfg_param_set(p, base, value, why, sizeof why) < 0)
		return pskip(P, s, line, "%s", why);
	if (!P->quiet && p->type == CT_STRING && strstr(p->label, "hosts"))
		warn_host_list(s, line, p->label, value);
	return 0;
}

/* ---------------------------------------------------------- &include/&merge */

static int read_file(const char *path, struct stat *st, char **data, size_t *len,
		     char *why, size_t whysz)
{
	size_t got = 0;
	char *buf;
	int fd;

	/* an admin path: no other user's symlink on the way (oppath.h) */
	fd = oppath_open(AT_FDCWD, path, O_RDONLY | O_NOCTTY, 0, OPPATH_QUIET);
	if (fd < 0) {
		snprintf(why, whysz, "%s", strerror(errno));
		return -1;
	}
	if (fstat(fd, st) < 0) {
		snprintf(why, whysz, "%s", strerror(errno));
		close(fd);
		return -1;
	}
	if (!S_ISREG(st->st_mode)) {
		snprintf(why, whysz, "not a regular file");
		close(fd);
		return -1;
	}
	if (st->st_size > CONFIG_MAX_FILE_SIZE) {
		snprintf(why, whysz, "larger than %d bytes", CONFIG_MAX_FILE_SIZE);
		close(fd);
		return -1;
	}
	if (!(buf = malloc((size_t)st->st_size + 1))) {
		snprintf(why, whysz, "out of memory");
		close(fd);
		return -1;
	}
	for (;;) {
		ssize_t n = read(fd, buf + got, (size_t)st->st_size + 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(why, whysz, "%s", strerror(errno));
			free(buf);
			close(fd);
			return -1;
		}
		if (n == 0)
			break;
		got += (size_t)n;
		if (got > (size_t)st->st_size) { /* grew while we read it */
			snprintf(why, whysz, "file changed while being read");
			free(buf);
			close(fd);
			return -1;
		}
	}
	close(fd);
	buf[got] = '\0';
	*data = buf;
	*len = got;
	return 0;
}

/* Parse one in-memory source from its first line. */
static int parse_text(struct parser *P, const char *name, const char *text, size_t len)
{
	struct src s;
	const char *nul = memchr(text, '\0', len);

	if (nul) {
		int line = 1;

		for (const char *q = text; q < nul; q++)
			line += *q == '\n';
		return perr(P, &(struct src){ .name = name }, line, "NUL byte in config file");
	}
	s.name = name;
	s.p = s.line_start = (const unsigned char *)text;
	s.end = s.p + len;
	s.line = 1;
	return parse(P, &s);
}

/* Read and parse the file at path; from is where the directive was. */
static int parse_file(struct parser *P, const char *path, const struct src *from, int line)
{
	struct stat st;
	char why[256], *data;
	size_t len;
	int rc;

	if (++P->nfiles > CONFIG_MAX_FILES)
		return perr(P, from, line, "more than %d config files", CONFIG_MAX_FILES);
	if (read_file(path, &st, &data, &len, why, sizeof why) < 0) {
		if (from)
			return perr(P, from, line, "cannot read config file \"%s\" (%s)", path, why);
		return perr(P, NULL, 0, "unable to open config file \"%s\": %s", path, why);
	}
	for (int i = 0; i < P->nopen; i++) {
		if (P->open[i].dev == st.st_dev && P->open[i].ino == st.st_ino) {
			free(data);
			return perr(P, from, line, "&include loop: \"%s\" is already being read",
				    path);
		}
	}
	P->open[P->nopen].dev = st.st_dev;
	P->open[P->nopen].ino = st.st_ino;
	P->nopen++;
	if (from) {
		P->from[P->nfrom].name = from->name;
		P->from[P->nfrom].line = line;
		P->nfrom++;
	}
	rc = parse_text(P, path, data, len);
	if (from)
		P->nfrom--;
	P->nopen--;
	free(data);
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The *.conf or *.inc files of a directory, sorted (params.c:
 * include_config). */
static int list_dir(struct parser *P, const struct src *s, int line, const char *dir,
		    const char *pattern, char ***out, size_t *n)
{
	char **v = NULL;
	size_t cnt = 0;
	struct dirent *de;
	DIR *d = opendir(dir);

	*out = NULL;
	*n = 0;
	if (!d)
		return perr(P, s, line, "cannot open config dir \"%s\" (%s)", dir, strerror(errno));
	while ((de = readdir(d)) != NULL) {
		char **nv;
		size_t sz;

		if (fnmatch(pattern, de->d_name, 0) != 0)
			continue;
		if (cnt >= CONFIG_MAX_FILES)
			goto too_many;
		sz = strlen(dir) + strlen(de->d_name) + 2;
		if (!(nv = realloc(v, (cnt + 1) * sizeof *v)))
			goto oom;
		v = nv;
		if (!(v[cnt] = malloc(sz)))
			goto oom;
		snprintf(v[cnt], sz, "%s%s%s", dir,
			 dir[strlen(dir) - 1] == '/' ? "" : "/", de->d_name);
		cnt++;
	}
	closedir(d);
	if (cnt > 1)
		qsort(v, cnt, sizeof *v, cmp_str);
	*out = v;
	*n = cnt;
	return 0;
too_many:
	closedir(d);
	for (size_t i = 0; i < cnt; i++)
		free(v[i]);
	free(v);
	return perr(P, s, line, "more than %d files in config dir \"%s\"", CONFIG_MAX_FILES, dir);
oom:
	closedir(d);
	for (size_t i = 0; i < cnt; i++)
		free(v[i]);
	free(v);
	return perr(P, s, line, "out of memory");
}

/* &include (manage_globals) or &merge of a file or directory (params.c:
 * include_config). An &include saves the globals and defaults, parses the
 * file starting in the global section, then puts them back and leaves the
 * parser in the global section; each file of a directory starts from the
 * same saved state. &merge reads the text as if it were inline. */
static int include_config(struct parser *P, const struct src *s, int line, const char *what,
			  const char *path, bool manage_globals)
{
	struct saved_vars saved;
	struct stat st;
	char **files = NULL;
	size_t nfiles = 0;
	int rc = 0;

	if (stat(path, &st) < 0)
		return perr(P, s, line, "%s: cannot stat \"%s\" (%s)", what, path, strerror(errno));
	if (S_ISDIR(st.st_mode)) {
		if (list_dir(P, s, line, path, manage_globals ? "*.conf" : "*.inc", &files,
			     &nfiles) < 0)
			return -1;
		if (nfiles == 0) {
			free(files);
			return 0;
		}
	} else if (!S_ISREG(st.st_mode))
		return perr(P, s, line, "%s: \"%s\" is neither a file nor a directory", what, path);

	if (manage_globals) {
		if (save_vars(P, &saved) < 0) {
			rc = perr(P, s, line, "out of memory");
			goto out;
		}
		P->in_global = true;
	}
	P->depth++;
	if (!files)
		rc = parse_file(P, path, s, line);
	for (size_t i = 0; i < nfiles && rc == 0; i++) {
		if (manage_globals && i > 0 && restore_vars(P, &saved) < 0)
			rc = perr(P, s, line, "out of memory");
		if (rc == 0)
			rc = parse_file(P, files[i], s, line);
	}
	P->depth--;
	if (manage_globals) {
		if (rc == 0 && restore_vars(P, &saved) < 0)
			rc = perr(P, s, line, "out of memory");
		free_vars(&saved);
	}
out:
	for (size_t i = 0; i < nfiles; i++)
		free(files[i]);
	free(files);
	return rc;
}

/* params.c: parse_directives */
static int do_directive(struct parser *P, const struct src *s, int line, const char *name,
			const char *value)
{
	bool incl;
	char *path;
	int rc;

	if (strcasecmp(name, "&include") == 0)
		incl = true;
	else if (strcasecmp(name, "&merge") == 0)
		incl = false;
	else
		return perr(P, s, line, "unknown directive \"%s\" (use &include or &merge)", name);
	if (!*value)
		return perr(P, s, line, "%s needs a file or directory name", name);
	if (P->depth >= CONFIG_MAX_INCLUDE_DEPTH)
		return perr(P, s, line, "%s nested more than %d deep", name,
			    CONFIG_MAX_INCLUDE_DEPTH);
	if (!(path = strdup(value))) /* P->buf is reused by the nested parse */
		return perr(P, s, line, "out of memory");
	rc = include_config(P, s, line, incl ? "&include" : "&merge", path, incl);
	free(path);
	return rc;
}

/* ------------------------------------------------------------------ parser */

/* params.c: Section -- the '[' has been read. */
static int section(struct parser *P, struct src *s, int line)
{
	char *b = P->buf;
	int i = 0, end = 0;
	int c = eat_ws(s);

	while (c != EOFC) {
		if (too_long(P, s, c))
			return err_too_long(P, s, line);
		switch (c) {
		case ']': {
			int rc;

			b[end] = '\0';
			if (end == 0)
				return perr(P, s, line, "empty section name");
			rc = do_section(P, s, line, b);
			(void)eat_comment(s); /* the rest of the line is ignored */
			return rc;
		}
		case '\n':
			i = continuation(b, i);
			if (i < 0) {
				b[end] = '\0';
				return perr(P, s, line, "section header \"[%s\" has no closing ']'", b);
			}
			end = (i > 0 && b[i - 1] == ' ') ? i - 1 : i;
			c = nextc(s);
			break;
		default:
			if (is_blank(c)) { /* one space per run of blanks */
				b[end] = ' ';
				i = end + 1;
				c = eat_ws(s);
			} else {
				b[i++] = (char)c;
				end = i;
				c = nextc(s);
			}
		}
	}
	b[end] = '\0';
	return perr(P, s, line, "unexpected end of file in section header \"[%s\"", b);
}

/* params.c: Parameter -- c is the first character of the name. */
static int parameter(struct parser *P, struct src *s, int c, int line)
{
	char *b = P->buf;
	int i = 0, end = 0, vstart = 0;

	/* the name, blanks compressed, up to the first '=' */
	while (vstart == 0) {
		if (too_long(P, s, c))
			return err_too_long(P, s, line);
		switch (c) {
		case '=':
			if (end == 0)
				return perr(P, s, line, "missing parameter name before '='");
			b[end++] = '\0';
			i = vstart = end;
			c = eat_ws(s);
			break;
		case '\n':
			i = continuation(b, i);
			if (i < 0) {
				b[end] = '\0';
				return pskip(P, s, line, "badly formed line \"%s\" (no '=')", b);
			}
			end = (i > 0 && b[i - 1] == ' ') ? i - 1 : i;
			c = nextc(s);
			break;
		case EOFC:
			b[end] = '\0';
			return pskip(P, s, line, "badly formed line \"%s\" (no '=')", b);
		case ' ':
		case '\t':
			if (i > 0 && b[0] == '&') { /* a directive ends at a blank */
				b[end++] = '\0';
				i = vstart = end;
				c = eat_ws(s);
				if (c == '=')
					c = eat_ws(s);
				break;
			}
			/* fall through */
		default:
			if (is_blank(c)) {
				b[end] = ' ';
				i = end + 1;
				c = eat_ws(s);
			} else {
				b[i++] = (char)c;
				end = i;
				c = nextc(s);
			}
		}
	}

	/* the value, verbatim but for '\r' and trailing blanks */
	for (;;) {
		if (c == EOFC)
			break;
		if (too_long(P, s, c))
			return err_too_long(P, s, line);
		if (c == '\r') {
			c = nextc(s);
		} else if (c == '\n') {
			i = continuation(b, i);
			if (i < 0)
				break;
			end = i;
			c = nextc(s);
		} else {
			b[i++] = (char)c;
			if (!is_blank(c))
				end = i;
			c = nextc(s);
		}
	}
	b[end] = '\0';

	if (b[0] == '&')
		return do_directive(P, s, line, b, b + vstart);
	return do_parameter(P, s, line, b, b + vstart);
}

/* params.c: Parse */
static int parse(struct parser *P, struct src *s)
{
	int c = eat_ws(s);

	while (c != EOFC) {
		int line = s->line;

		P->stmt = s->line_start;
		switch (c) {
		case '\n': /* blank line */
			c = eat_ws(s);
			break;
		case ';': /* comment line */
		case '#':
			c = eat_comment(s);
			break;
		case '[':
			if (section(P, s, line) < 0)
				return -1;
			c = eat_ws(s);
			break;
		case '\\': /* a stray backslash is skipped, as rsync does */
			c = eat_ws(s);
			break;
		default:
			if (parameter(P, s, c, line) < 0)
				return -1;
			c = eat_ws(s);
		}
	}
	return 0;
}

/* ------------------------------------------------------------------- API */

void config_init(struct daemon_config *c)
{
	memset(c, 0, sizeof *c);
	cfg_class_defaults(true, c);
	cfg_class_defaults(false, &c->defaults);
}

static void free_parsed(struct daemon_config *c)
{
	cfg_class_free(true, c);
	config_module_free(&c->defaults);
	for (size_t i = 0; i < c->nmodules; i++)
		config_module_free(&c->modules[i]);
	free(c->modules);
	c->modules = NULL;
	c->nmodules = 0;
}

void config_free(struct daemon_config *c)
{
	if (!c)
		return;
	free_parsed(c);
	for (size_t i = 0; i < c->ndparams; i++) {
		free(c->dparams[i].name);
		free(c->dparams[i].value);
	}
	free(c->dparams);
	memset(c, 0, sizeof *c);
}

/* After the last line: --dparam if no module header took them, rsync's
 * fallback of unset module strings to the final defaults (its
 * FN_LOCAL_STRING accessors), and the checks rsync makes only when a
 * module is used. */
static int finish(struct parser *P)
{
	struct daemon_config *c = P->c;
	size_t np;
	const struct config_param *params = config_params(&np);

	if (!P->dparams_done && apply_dparams(P) < 0)
		return -1;
	for (size_t i = 0; i < c->nmodules; i++) {
		struct daemon_module *m = &c->modules[i];

		for (size_t j = 0; j < np; j++) {
			const struct config_param *p = &params[j];
			char **ms, **ds;

			if (p->global_only || (p->type != CT_STRING && p->type != CT_PATH))
				continue;
			ms = cfg_str_field(p, m);
			ds = cfg_str_field(p, &c->defaults);
			if (!*ms && *ds && !(*ms = strdup(*ds)))
				return perr(P, NULL, 0, "out of memory");
		}
		if ((!m->name || !*m->name || strchr(m->name, '/')) &&
		    pskip(P, NULL, 0, "module defined at %s has an invalid name \"%s\"",
			  m->defined_at, m->name ? m->name : "") < 0)
			return -1;
		if ((!m->path || !*m->path) &&
		    pskip(P, NULL, 0, "module [%s] has no \"path\" at %s", m->name,
			  m->defined_at) < 0)
			return -1;
	}
	return 0;
}

/* Parse into a fresh config and swap it in only on success. */
static int load(struct daemon_config *c, const char *path, const char *text,
		const char *name, char *err, size_t errsz)
{
	struct daemon_config n;
	struct parser *P;
	int rc;

	if (err && errsz)
		err[0] = '\0';
	if (!(P = calloc(1, sizeof *P))) {
		if (err && errsz)
			snprintf(err, errsz, "out of memory");
		return -1;
	}
	config_init(&n);
	P->c = &n;
	P->quiet = c->quiet_load;
	P->dparams = c->dparams;
	P->ndparams = c->ndparams;
	P->in_global = true;
	P->err = err;
	P->errsz = errsz;
	if (path)
		rc = parse_file(P, path, NULL, 0);
	else
		rc = parse_text(P, name ? name : "<string>", text, strlen(text));
	if (rc == 0)
		rc = finish(P);
	if (P->nerr > 0)
		rc = -1;
	free(P);
	if (rc < 0) {
		free_parsed(&n);
		return -1;
	}
	free_parsed(c);
	n.dparams = c->dparams;
	n.ndparams = c->ndparams;
	n.loaded = true;
	*c = n;
	return 0;
}

int config_load_file(struct daemon_config *c, const char *path, char *err, size_t errsz)
{
	return load(c, path, NULL, NULL, err, errsz);
}

int config_load_string(struct daemon_config *c, const char *text, const char *name,
		       char *err, size_t errsz)
{
	return load(c, NULL, text, name, err, errsz);
}

const struct daemon_module *config_find_module(const struct daemon_config *c,
					       const char *name)
{
	if (!c || !name)
		return NULL;
	for (size_t i = c->nmodules; i-- > 0;)
		if (c->modules[i].name && strcmp(c->modules[i].name, name) == 0)
			return &c->modules[i];
	return NULL;
}
