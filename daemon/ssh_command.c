/*
 * Exec commands on the SSH listener: splitting, the two allowed forms, and
 * turning a plain server command into a daemon request (see
 * daemon/ssh_command.h).
 */
#include "daemon/ssh_command.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/args/options.h"

#define PATH_BUF 4096

static bool fail(char *why, size_t whysz, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static bool fail(char *why, size_t whysz, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whysz, fmt, ap);
	va_end(ap);
	return false;
}

void ssh_cmd_free_words(char **words)
{
	for (int i = 0; words && words[i]; i++)
		free(words[i]);
	free(words);
}

/* Characters a shell would act on when unquoted (rsync's safe_arg quotes
 * all of them in what it sends). */
static bool shell_special(char c)
{
	return strchr("|&;<>()$`*?[]{}~#!\n\r", c) != NULL;
}

struct word_buf {
	char *p;
	size_t len, cap;
};

static bool wb_add(struct word_buf *w, char c)
{
	if (w->len + 2 > w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 64;
		char *np = realloc(w->p, cap);
		if (!np)
			return false;
		w->p = np;
		w->cap = cap;
	}
	w->p[w->len++] = c;
	w->p[w->len] = '\0';
	return true;
}

/* Read one word starting at *sp (not a blank). */
static char *split_word(const char **sp, char *why, size_t whysz)
{
	struct word_buf w = {0};
	const char *s = *sp;

	if (!wb_add(&w, 'x'))
		goto oom;
	w.len = 0;
	w.p[0] = '\0';
	while (*s && *s != ' ' && *s != '\t') {
		if (*s == '\\') {
			if (!s[1] || s[1] == '\n') {
				fail(why, whysz, "a backslash ends the command");
				goto bad;
			}
			if (!wb_add(&w, s[1]))
				goto oom;
			s += 2;
		} else if (*s == '\'') {
			const char *e = strchr(s + 1, '\'');
			if (!e) {
				fail(why, whysz, "unterminated quote");
				goto bad;
			}
			for (s++; s < e; s++)
				if (!wb_add(&w, *s))
					goto oom;
			s++;
		} else if (*s == '"') {
			for (s++; *s && *s != '"'; s++) {
				if (*s == '$' || *s == '`') {
					fail(why, whysz, "an expansion inside double quotes");
					goto bad;
				}
				if (*s == '\\' && s[1] && strchr("\"\\$`", s[1]))
					s++;
				if (!wb_add(&w, *s))
					goto oom;
			}
			if (*s != '"') {
				fail(why, whysz, "unterminated quote");
				goto bad;
			}
			s++;
		} else if (shell_special(*s) || (unsigned char)*s < 0x20) {
			fail(why, whysz, "an unquoted shell character '%c'",
			     (unsigned char)*s < 0x20 ? '?' : *s);
			goto bad;
		} else {
			if (!wb_add(&w, *s))
				goto oom;
			s++;
		}
	}
	*sp = s;
	return w.p;
oom:
	fail(why, whysz, "out of memory");
bad:
	free(w.p);
	return NULL;
}

char **ssh_cmd_split(const char *command, int *n, char *why, size_t whysz)
{
	char **words;
	int count = 0;

	if (strlen(command) > SSH_CMD_MAX_LEN) {
		fail(why, whysz, "command longer than %d bytes", SSH_CMD_MAX_LEN);
		return NULL;
	}
	if (!(words = calloc(SSH_CMD_MAX_WORDS + 1, sizeof *words))) {
		fail(why, whysz, "out of memory");
		return NULL;
	}
	const char *s = command;
	for (;;) {
		s += strspn(s, " \t");
		if (!*s)
			break;
		if (count >= SSH_CMD_MAX_WORDS) {
			fail(why, whysz, "more than %d words", SSH_CMD_MAX_WORDS);
			goto bad;
		}
		if (!(words[count] = split_word(&s, why, whysz)))
			goto bad;
		count++;
	}
	*n = count;
	return words;
bad:
	ssh_cmd_free_words(words);
	return NULL;
}

void ssh_cmd_free(struct ssh_cmd *c)
{
	if (!c)
		return;
	free(c->module);
	ssh_cmd_free_words(c->args);
	memset(c, 0, sizeof *c);
}

static bool is_our_program(const char *w)
{
	const char *base = strrchr(w, '/');

	base = base ? base + 1 : w;
	return strcmp(base, "rsync") == 0 || strcmp(base, "ferry") == 0;
}

/* -s / --secluded-args among the option words: the real arguments would
 * follow on the channel, which this listener does not read. */
static bool asks_secluded_args(char **words, int nopts)
{
	for (int i = 1; i < nopts; i++) {
		const char *w = words[i];
		if (!strcmp(w, "--secluded-args") || !strcmp(w, "--protect-args"))
			return true;
		if (w[0] != '-' || w[1] == '-')
			continue;
		/* a cluster of flags; 'e' takes the rest ("-e.LsfxCIvu") */
		for (const char *p = w + 1; *p && *p != 'e'; p++)
			if (*p == 's')
				return true;
	}
	return false;
}

/* Lexically clean path: drop "." and empty components, resolve "..",
 * never climbing above the start. Keeps a leading '/'. */
static bool normalize(const char *path, char *out, size_t outsz)
{
	size_t n = 0;
	bool abs = path[0] == '/';

	if (abs)
		out[n++] = '/';
	for (const char *p = path; *p;) {
		p += strspn(p, "/");
		size_t len = strcspn(p, "/");
		if (len == 0)
			break;
		if (len == 1 && p[0] == '.') {
			/* drop */
		} else if (len == 2 && p[0] == '.' && p[1] == '.') {
			while (n > (abs ? 1u : 0u) && out[n - 1] != '/')
				n--;
			if (n > (abs ? 1u : 0u))
				n--;
		} else {
			if (n + len + 2 >= outsz)
				return false;
			if (n > (abs ? 1u : 0u))
				out[n++] = '/';
			memcpy(out + n, p, len);
			n += len;
		}
		p += len;
	}
	out[n] = '\0';
	return true;
}

/* The part of abs_path inside module path mpath: "" for the root itself,
 * NULL when it is not inside. */
static const char *inside(const char *abs_path, const char *mpath)
{
	size_t len = strlen(mpath);

	if (strcmp(mpath, "/") == 0)
		return abs_path + 1;
	if (strncmp(abs_path, mpath, len) != 0)
		return NULL;
	if (abs_path[len] == '\0')
		return abs_path + len;
	return abs_path[len] == '/' ? abs_path + len + 1 : NULL;
}

/* The module of view that may serve path (which must allow plain server
 * mode) and path as a daemon argument "module[/rest]". */
static const struct daemon_module *module_for(const struct daemon_config *view, const char *path,
					      char *darg, size_t dsz)
{
	char clean[PATH_BUF];
	const struct daemon_module *best = NULL;
	const char *rest = NULL;
	size_t best_len = 0;

	if (!*path || !normalize(path, clean, sizeof clean))
		return NULL;
	if (clean[0] != '/') {
		size_t len = strcspn(clean, "/");
		for (size_t i = 0; i < view->nmodules; i++) {
			const struct daemon_module *m = &view->modules[i];
			if (m->ssh_allow_server && strlen(m->name) == len &&
			    strncmp(m->name, clean, len) == 0)
				best = m;
		}
		rest = clean[len] ? clean + len + 1 : "";
	} else {
		for (size_t i = 0; i < view->nmodules; i++) {
			const struct daemon_module *m = &view->modules[i];
			if (!m->ssh_allow_server || !m->path)
				continue;
			char *mpath = config_expand(m->path);
			const char *r = mpath ? inside(clean, mpath) : NULL;
			size_t len = mpath ? strlen(mpath) : 0;
			if (r && (!best || len >= best_len)) {
				best = m;
				best_len = len;
				rest = r; /* points into clean, not mpath */
			}
			free(mpath);
		}
	}
	if (!best)
		return NULL;
	size_t plen = strlen(path);
	bool trailing = plen > 0 && path[plen - 1] == '/';
	int n = snprintf(darg, dsz, "%s%s%s%s", best->name, *rest ? "/" : "", rest,
			 trailing ? "/" : "");
	return n > 0 && (size_t)n < dsz ? best : NULL;
}

/* The words after the options are ". PATH...", as rsync sends them. */
static bool plain_server(char **words, int nwords, const struct daemon_config *view,
			 struct ssh_cmd *out, char *why, size_t whysz)
{
	struct ferry_opts o;
	int rc = options_parse_flags(&o, nwords, words, OPTS_FROM_REMOTE);

	if (rc != 0) {
		fail(why, whysz, "bad server options: %s", options_last_error(&o));
		options_free(&o);
		return false;
	}
	bool ok = o.server && !o.daemon && o.nargs >= 2 && o.nargs < nwords &&
		  strcmp(words[nwords - o.nargs], ".") == 0;
	for (int i = 0; ok && i < o.nargs; i++)
		ok = strcmp(o.args[i], words[nwords - o.nargs + i]) == 0;
	int nopts = nwords - o.nargs;
	options_free(&o);
	if (!ok)
		return fail(why, whysz, "not an rsync server command (--server ... . PATH...)");
	if (asks_secluded_args(words, nopts))
		return fail(why, whysz, "--secluded-args (-s) is not supported over the SSH listener");
	out->kind = SSH_CMD_SERVER;
	out->args = calloc((size_t)nwords + 1, sizeof *out->args);
	if (!out->args)
		return fail(why, whysz, "out of memory");
	for (int i = 1; i <= nopts; i++) /* the options and "." */
		out->args[out->nargs++] = strdup(words[i]);
	const struct daemon_module *m = NULL;
	for (int i = nopts + 1; i < nwords; i++) {
		char darg[PATH_BUF + 256];
		const struct daemon_module *pm = module_for(view, words[i], darg, sizeof darg);
		if (!pm) {
			ssh_cmd_free(out);
			return fail(why, whysz, "path \"%.200s\" is not inside a module that allows "
						"plain server commands over SSH",
				    words[i]);
		}
		if (m && pm != m) {
			ssh_cmd_free(out);
			return fail(why, whysz, "the paths lie in more than one module (%s, %s)",
				    m->name, pm->name);
		}
		m = pm;
		out->args[out->nargs++] = strdup(darg);
	}
	for (int i = 0; i < out->nargs; i++) {
		if (!out->args[i]) {
			ssh_cmd_free(out);
			return fail(why, whysz, "out of memory");
		}
	}
	if (!(out->module = strdup(m->name))) {
		ssh_cmd_free(out);
		return fail(why, whysz, "out of memory");
	}
	return true;
}

bool ssh_cmd_parse(const char *command, const struct daemon_config *view, struct ssh_cmd *out,
		   char *why, size_t whysz)
{
	int n = 0;

	memset(out, 0, sizeof *out);
	char **words = ssh_cmd_split(command, &n, why, whysz);
	if (!words)
		return false;
	bool ok;
	if (n < 2 || !is_our_program(words[0]) || strcmp(words[1], "--server") != 0) {
		ok = fail(why, whysz, "only rsync server commands are served");
	} else if (n == 4 && !strcmp(words[2], "--daemon") && !strcmp(words[3], ".")) {
		out->kind = SSH_CMD_DAEMON;
		ok = true;
	} else if (n > 2 && !strcmp(words[2], "--daemon")) {
		ok = fail(why, whysz, "a daemon command takes no other arguments");
	} else {
		ok = plain_server(words, n, view, out, why, whysz);
	}
	ssh_cmd_free_words(words);
	return ok;
}
