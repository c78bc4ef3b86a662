/*
 * The lexical pass over ssh_config for the built-in SSH client (see the
 * header). It reads lines as libssh does (fgets of 1024 bytes, its
 * tokenizer) and knows, keyword by keyword, what libssh 0.10 does with a
 * line and what OpenSSH does; anything where the two differ, or that
 * neither libssh nor ferry applies, makes the pass refuse.
 */
#include "client/ssh_config_scan.h"

#include <ctype.h>
#include <glob.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define LINE_MAX_LIBSSH 1024 /* libssh's MAX_LINE_SIZE: longer lines split */
#define MAX_TOKENS 64

struct scan_ctx {
	const struct ssh_cfg_paths *paths;
	struct ssh_cfg_scan *sc;
	int nfiles;
};

/* Where the pass is, and whether the lines here apply to every host (top
 * level or under "Host *"), which lets SendEnv and GSSAPIAuthentication be
 * honoured without deciding which block matches. */
struct file_pos {
	const char *path;
	int line;
	bool global;        /* the global file or one it includes */
	bool every_host;
};

enum kw_kind {
	KW_REFUSE,     /* not applied exactly: spawn ssh */
	KW_HOST,
	KW_INCLUDE,
	KW_HOSTNAME,
	KW_NUMBER,     /* Port, ConnectTimeout */
	KW_YESNO,      /* applied by libssh, or no prompt either way */
	KW_ANY,        /* only changes what is logged */
	KW_NO_TOKENS,  /* User, IdentityFile: '%' means something else in libssh */
	KW_ONE_FILE,   /* known-hosts files: libssh takes one */
	KW_CIPHERS,
	KW_MACS,
	KW_STRICT,
	KW_SENDENV,
	KW_GSSAPI,
	KW_HASH_KH,
};

static const struct {
	const char *name;
	enum kw_kind kind;
} keywords[] = {
	{"host", KW_HOST},
	{"include", KW_INCLUDE},
	{"hostname", KW_HOSTNAME},
	{"port", KW_NUMBER},
	{"connecttimeout", KW_NUMBER},
	{"user", KW_NO_TOKENS},
	{"identityfile", KW_NO_TOKENS},
	{"userknownhostsfile", KW_ONE_FILE},
	{"globalknownhostsfile", KW_ONE_FILE},
	{"ciphers", KW_CIPHERS},
	{"macs", KW_MACS},
	{"stricthostkeychecking", KW_STRICT},
	{"compression", KW_YESNO},
	{"batchmode", KW_YESNO},
	/* libssh's publickey_auto obeys PubkeyAuthentication; the built-in
	 * never prompts, so password and keyboard-interactive are unused
	 * whatever these say */
	{"pubkeyauthentication", KW_YESNO},
	{"passwordauthentication", KW_YESNO},
	{"kbdinteractiveauthentication", KW_YESNO},
	{"loglevel", KW_ANY},
	{"sendenv", KW_SENDENV},
	{"gssapiauthentication", KW_GSSAPI},
	{"hashknownhosts", KW_HASH_KH},
};

static enum kw_kind keyword_kind(const char *kw)
{
	for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
		if (!strcasecmp(kw, keywords[i].name))
			return keywords[i].kind;
	return KW_REFUSE;
}

static bool refuse(struct scan_ctx *c, const struct file_pos *at, const char *fmt, ...)
{
	char reason[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof reason, fmt, ap);
	va_end(ap);
	if (at)
		snprintf(c->sc->why, sizeof c->sc->why, "%s line %d: %s", at->path, at->line, reason);
	else
		snprintf(c->sc->why, sizeof c->sc->why, "%s", reason);
	return false;
}

/* One token as libssh's ssh_config_get_token takes it: blanks skipped, a
 * quoted run, or up to a blank, '=' or newline; one '=' after it eaten. */
static char *next_token(char **str)
{
	char *c = *str, *r;
	bool had_equal = false;

	while (*c && isblank((unsigned char)*c))
		c++;
	if (*c == '"') {
		for (r = ++c; *c; c++)
			if (*c == '"' || *c == '\n') {
				*c++ = '\0';
				break;
			}
	} else {
		for (r = c; *c; c++)
			if (isblank((unsigned char)*c) || *c == '=' || *c == '\n') {
				had_equal = *c == '=';
				*c++ = '\0';
				break;
			}
	}
	while (*c && (isblank((unsigned char)*c) || *c == '\n' || (!had_equal && *c == '='))) {
		had_equal |= *c == '=';
		c++;
	}
	*str = c;
	return r;
}

/* The line's tokens (empty ones dropped); -1 when there are too many. */
static int split_line(char *line, char **tok)
{
	int n = 0;

	for (char *p = line; *p;) {
		char *t = next_token(&p);
		if (!*t)
			continue;
		if (n == MAX_TOKENS)
			return -1;
		tok[n++] = t;
	}
	return n;
}

static bool is_number(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

static bool yes_or_no(const char *s)
{
	return !strcasecmp(s, "yes") || !strcasecmp(s, "no");
}

static const char *const cipher_names[] = {
	"aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "chacha20-poly1305@openssh.com",
	"aes128-ctr", "aes192-ctr", "aes256-ctr", "aes128-cbc", "aes192-cbc", "aes256-cbc",
	"3des-cbc", NULL};
static const char *const mac_names[] = {
	"hmac-sha2-256-etm@openssh.com", "hmac-sha2-512-etm@openssh.com", "hmac-sha1-etm@openssh.com",
	"hmac-sha2-256", "hmac-sha2-512", "hmac-sha1", "none", NULL};

static bool all_known(const char *list, const char *const *known)
{
	const char *p = list;

	if (!*p)
		return false;
	while (*p) {
		size_t len = strcspn(p, ",");
		bool found = false;
		for (int i = 0; known[i] && !found; i++)
			found = strlen(known[i]) == len && !strncmp(p, known[i], len);
		if (!found)
			return false;
		p += len;
		if (*p == ',' && !*++p)
			return false; /* a trailing comma */
	}
	return true;
}

bool ssh_cfg_known_ciphers(const char *list)
{
	return all_known(list, cipher_names);
}

bool ssh_cfg_known_macs(const char *list)
{
	return all_known(list, mac_names);
}

bool ssh_cfg_pattern_match(const char *pattern, const char *s)
{
	for (;; pattern++, s++) {
		if (!*pattern)
			return !*s;
		if (*pattern == '*') {
			while (pattern[1] == '*')
				pattern++;
			if (!pattern[1])
				return true;
			for (; *s; s++)
				if (ssh_cfg_pattern_match(pattern + 1, s))
					return true;
			return false;
		}
		if (!*s || (*pattern != '?' && *pattern != *s))
			return false;
	}
}

/* OpenSSH's Host rule: some pattern matches and no negated one does. */
static bool host_line_matches(const char *line, const char *host)
{
	char copy[LINE_MAX_LIBSSH], *save = NULL;
	bool positive = false;

	snprintf(copy, sizeof copy, "%s", line);
	for (char *p = strtok_r(copy, " ", &save); p; p = strtok_r(NULL, " ", &save)) {
		bool negated = *p == '!';
		if (ssh_cfg_pattern_match(p + negated, host)) {
			if (negated)
				return false;
			positive = true;
		}
	}
	return positive;
}

static void lower_copy(char *dst, size_t size, const char *src)
{
	size_t i = 0;

	for (; src[i] && i + 1 < size; i++)
		dst[i] = (char)tolower((unsigned char)src[i]);
	dst[i] = '\0';
}

/* The index of the HostName line ssh applies for host (the first one in
 * a block that matches; an Included file cannot open a block when the
 * Include sits in one that does not match), or -1. */
static int applied_hostname(const struct ssh_cfg_scan *sc, const char *host)
{
	bool active = true, never = false;
	bool saved_active[SSH_CFG_MAX_DEPTH + 1], saved_never[SSH_CFG_MAX_DEPTH + 1];
	int depth = 0;

	for (int i = 0; i < sc->nevents; i++) {
		const struct ssh_cfg_event *e = &sc->events[i];
		switch (e->kind) {
		case SSH_CFG_FILE:
			active = true, never = false, depth = 0;
			break;
		case SSH_CFG_HOST:
			active = !never && host_line_matches(e->text, host);
			break;
		case SSH_CFG_HOSTNAME:
			if (active)
				return i;
			break;
		case SSH_CFG_INC_IN:
			if (depth > SSH_CFG_MAX_DEPTH)
				return -1;
			saved_active[depth] = active, saved_never[depth] = never;
			depth++;
			never |= !active;
			break;
		case SSH_CFG_INC_OUT:
			if (depth == 0)
				return -1;
			depth--;
			active = saved_active[depth], never = saved_never[depth];
			break;
		}
	}
	return -1;
}

bool ssh_cfg_hosts_agree(const struct ssh_cfg_scan *sc, const char *alias, const char *hostname)
{
	char a[LINE_MAX_LIBSSH], h[LINE_MAX_LIBSSH], n[LINE_MAX_LIBSSH];

	/* both compare the lowercased name */
	lower_copy(a, sizeof a, alias);
	lower_copy(h, sizeof h, hostname);
	int k = applied_hostname(sc, a);
	if (k < 0)
		return !strcmp(a, h);
	lower_copy(n, sizeof n, sc->events[k].text);
	if (strcmp(n, h) != 0)
		return false;
	for (int i = k + 1; i < sc->nevents; i++)
		if (sc->events[i].kind == SSH_CFG_HOST &&
		    host_line_matches(sc->events[i].text, a) != host_line_matches(sc->events[i].text, h))
			return false;
	return true;
}

/* Record a line for ssh_cfg_hosts_agree(). */
static bool add_event(struct scan_ctx *c, const struct file_pos *at, enum ssh_cfg_event_kind kind,
		      const char *text)
{
	struct ssh_cfg_scan *sc = c->sc;

	if (sc->nevents == SSH_CFG_MAX_EVENTS)
		return refuse(c, at, "more than %d Host, HostName and Include lines",
			      SSH_CFG_MAX_EVENTS);
	sc->events[sc->nevents].kind = kind;
	sc->events[sc->nevents].text = NULL;
	if (text && !(sc->events[sc->nevents].text = strdup(text)))
		return refuse(c, at, "out of memory");
	sc->nevents++;
	return true;
}

/* Host: libssh stops at a negated match only before any positive one,
 * and splits patterns at commas, which OpenSSH does not. */
static bool take_host(struct scan_ctx *c, struct file_pos *at, char **arg, int n)
{
	char joined[LINE_MAX_LIBSSH] = "";
	bool positive = false;

	if (n == 0)
		return refuse(c, at, "Host without a pattern");
	for (int i = 0; i < n; i++) {
		if (arg[i][0] != '!')
			positive = true;
		else if (positive)
			return refuse(c, at, "Host with a negated pattern after a plain one "
					     "(libssh would not honour the negation)");
		if (strpbrk(arg[i], ", \t\""))
			return refuse(c, at, "Host pattern \"%s\" holds a comma or blank", arg[i]);
		if (i)
			strcat(joined, " ");
		strcat(joined, arg[i]); /* fits: the tokens came from one line */
	}
	if (!add_event(c, at, SSH_CFG_HOST, joined))
		return false;
	at->every_host = n == 1 && !strcmp(arg[0], "*");
	return true;
}

static bool take_sendenv(struct scan_ctx *c, const struct file_pos *at, char **arg, int n)
{
	if (!at->every_host)
		return refuse(c, at, "SendEnv inside a Host block other than \"Host *\"");
	for (int i = 0; i < n; i++) {
		if (arg[i][0] == '-')
			return refuse(c, at, "SendEnv removing a pattern");
		if (c->sc->nsendenv == SSH_CFG_MAX_SENDENV)
			return refuse(c, at, "more than %d SendEnv patterns", SSH_CFG_MAX_SENDENV);
		if (!(c->sc->sendenv[c->sc->nsendenv] = strdup(arg[i])))
			return refuse(c, at, "out of memory");
		c->sc->nsendenv++;
	}
	return true;
}

static bool scan_file(struct scan_ctx *c, const char *path, bool global, bool every_host,
		      int depth, bool *saw_host);

/* The path an Include names, resolved as both libssh and ssh resolve it
 * (ssh globs "~" and "~/.ssh" with $HOME, libssh uses the passwd home and
 * reads "~" in the global file as a relative name). */
static bool include_path(struct scan_ctx *c, const struct file_pos *at, const char *arg,
			 char *out, size_t size)
{
	const struct ssh_cfg_paths *p = c->paths;
	bool home_differs = p->env_home && strcmp(p->env_home, p->pw_home) != 0;
	int len;

	if (strpbrk(arg, "%$"))
		return refuse(c, at, "Include with %% or $ in its path");
	if (arg[0] == '/')
		len = snprintf(out, size, "%s", arg);
	else if (at->global && arg[0] != '~')
		len = snprintf(out, size, "%s/%s", p->global_dir, arg);
	else if (at->global || home_differs || (arg[0] == '~' && arg[1] != '/'))
		return refuse(c, at, "Include %s (libssh would read another file than ssh)", arg);
	else if (arg[0] == '~')
		len = snprintf(out, size, "%s%s", p->pw_home, arg + 1);
	else
		len = snprintf(out, size, "%s/.ssh/%s", p->pw_home, arg);
	if (len < 0 || (size_t)len >= size)
		return refuse(c, at, "Include path too long");
	return true;
}

static bool take_include(struct scan_ctx *c, struct file_pos *at, char **arg, int n, int depth,
			 bool *saw_host)
{
	char path[4096];
	glob_t g;

	if (n != 1)
		return refuse(c, at, "Include with %s one file (libssh reads only the first)",
			      n ? "more than" : "less than");
	if (!include_path(c, at, arg[0], path, sizeof path))
		return false;
	if (depth >= SSH_CFG_MAX_DEPTH)
		return refuse(c, at, "Includes nested more than %d deep", SSH_CFG_MAX_DEPTH);
	int rc = glob(path, 0, NULL, &g);
	if (rc == GLOB_NOMATCH)
		return true;
	if (rc != 0)
		return refuse(c, at, "cannot expand Include %s", arg[0]);
	bool ok = true;
	for (size_t i = 0; ok && i < g.gl_pathc; i++)
		ok = add_event(c, at, SSH_CFG_INC_IN, NULL) &&
		     scan_file(c, g.gl_pathv[i], at->global, at->every_host, depth + 1, saw_host) &&
		     add_event(c, at, SSH_CFG_INC_OUT, NULL);
	globfree(&g);
	return ok;
}

static bool check_value(struct scan_ctx *c, struct file_pos *at, enum kw_kind kind,
			const char *kw, char **arg, int n)
{
	if (n < 1)
		return refuse(c, at, "%s without a value", kw);
	switch (kind) {
	case KW_HOSTNAME:
		if (n != 1 || strchr(arg[0], '%'))
			return refuse(c, at, "%s with %% tokens or several values", kw);
		return add_event(c, at, SSH_CFG_HOSTNAME, arg[0]);
	case KW_NO_TOKENS:
		if (n != 1 || strchr(arg[0], '%'))
			return refuse(c, at, "%s with %% tokens or several values", kw);
		return true;
	case KW_NUMBER:
		return (n == 1 && is_number(arg[0])) || refuse(c, at, "%s %s", kw, arg[0]);
	case KW_YESNO:
		return (n == 1 && yes_or_no(arg[0])) || refuse(c, at, "%s %s", kw, arg[0]);
	case KW_ANY:
		return true;
	case KW_ONE_FILE:
		if (n != 1 || strchr(arg[0], '%'))
			return refuse(c, at, "%s with several files or %% tokens", kw);
		return true;
	case KW_CIPHERS:
		return (n == 1 && ssh_cfg_known_ciphers(arg[0])) ||
		       refuse(c, at, "Ciphers %s (a name or form the built-in does not take)", arg[0]);
	case KW_MACS:
		return (n == 1 && ssh_cfg_known_macs(arg[0])) ||
		       refuse(c, at, "MACs %s (a name or form the built-in does not take)", arg[0]);
	case KW_STRICT:
		/* libssh takes yes; ask is the default, which cannot ask here
		 * and refuses like yes. Anything laxer decides per host. */
		if (n == 1 && (!strcasecmp(arg[0], "yes") || !strcasecmp(arg[0], "ask")))
			return true;
		return refuse(c, at, "StrictHostKeyChecking %s", arg[0]);
	case KW_GSSAPI:
		if (n != 1 || !yes_or_no(arg[0]))
			return refuse(c, at, "%s %s", kw, arg[0]);
		if (!at->every_host)
			return refuse(c, at, "%s inside a Host block other than \"Host *\"", kw);
		if (c->sc->gssapi < 0) /* the first value wins, as in ssh */
			c->sc->gssapi = !strcasecmp(arg[0], "yes");
		return true;
	case KW_HASH_KH:
		if (n != 1 || !yes_or_no(arg[0]))
			return refuse(c, at, "%s %s", kw, arg[0]);
		/* the first value wins; one inside a Host block is only known
		 * to apply once the blocks are matched */
		if (c->sc->hash_known_hosts < 0)
			c->sc->hash_known_hosts = !at->every_host ? SSH_CFG_PER_HOST
								   : !strcasecmp(arg[0], "yes");
		return true;
	default:
		return refuse(c, at, "%s is not applied by the built-in client", kw);
	}
}

/* One line: false (with the reason) when the built-in cannot honour it. */
static bool scan_line(struct scan_ctx *c, struct file_pos *at, char *line, int depth,
		      bool *saw_host, bool *after_include_host)
{
	char *tok[MAX_TOKENS];
	int n = split_line(line, tok);

	if (n < 0)
		return refuse(c, at, "more than %d words", MAX_TOKENS);
	if (n == 0 || tok[0][0] == '#')
		return true;
	enum kw_kind kind = keyword_kind(tok[0]);
	/* OpenSSH goes back to the including file's block after an Include;
	 * libssh stays in the last block of the included file. */
	if (*after_include_host && kind != KW_HOST)
		return refuse(c, at, "a line after an Include whose file has Host lines");
	*after_include_host = false;
	switch (kind) {
	case KW_HOST:
		*saw_host = true;
		return take_host(c, at, tok + 1, n - 1);
	case KW_INCLUDE: {
		bool inner_host = false;
		if (!take_include(c, at, tok + 1, n - 1, depth, &inner_host))
			return false;
		*after_include_host = inner_host;
		*saw_host |= inner_host;
		return true;
	}
	case KW_SENDENV:
		return n > 1 ? take_sendenv(c, at, tok + 1, n - 1) : refuse(c, at, "SendEnv without a value");
	case KW_REFUSE:
		return refuse(c, at, "%s is not applied by the built-in client", tok[0]);
	default:
		return check_value(c, at, kind, tok[0], tok + 1, n - 1);
	}
}

static bool scan_file(struct scan_ctx *c, const char *path, bool global, bool every_host,
		      int depth, bool *saw_host)
{
	char line[LINE_MAX_LIBSSH];
	struct file_pos at = {.path = path, .global = global, .every_host = every_host};
	bool ok = true, after_include_host = false;

	if (++c->nfiles > SSH_CFG_MAX_FILES)
		return refuse(c, NULL, "more than %d config files", SSH_CFG_MAX_FILES);
	FILE *f = fopen(path, "r");
	if (!f)
		return true; /* both skip a file they cannot open (but see -F) */
	while (ok && fgets(line, sizeof line, f)) {
		at.line++;
		size_t len = strlen(line);
		if (len == sizeof line - 1 && line[len - 1] != '\n' && !feof(f))
			ok = refuse(c, &at, "line longer than %d bytes", LINE_MAX_LIBSSH - 1);
		else
			ok = scan_line(c, &at, line, depth, saw_host, &after_include_host);
	}
	fclose(f);
	return ok;
}

bool ssh_cfg_scan(const struct ssh_cfg_paths *paths, struct ssh_cfg_scan *sc)
{
	struct scan_ctx c = {.paths = paths, .sc = sc};
	bool saw_host = false;

	memset(sc, 0, sizeof *sc);
	sc->gssapi = -1;
	sc->hash_known_hosts = -1;
	/* libssh would take it for the global file, ssh for a user file */
	if (!strcmp(paths->user_config, SSH_CFG_GLOBAL_PATH))
		return refuse(&c, NULL, "-F names the system-wide config file");
	if (paths->user_config_required) {
		FILE *f = fopen(paths->user_config, "r");
		if (!f)
			return refuse(&c, NULL, "cannot read the config file %s", paths->user_config);
		fclose(f);
	}
	if (!add_event(&c, NULL, SSH_CFG_FILE, NULL) ||
	    !scan_file(&c, paths->user_config, false, true, 0, &saw_host))
		return false;
	return !paths->global_config ||
	       (add_event(&c, NULL, SSH_CFG_FILE, NULL) &&
		scan_file(&c, paths->global_config, true, true, 0, &saw_host));
}

void ssh_cfg_scan_release(struct ssh_cfg_scan *sc)
{
	for (int i = 0; i < sc->nevents; i++)
		free(sc->events[i].text);
	for (int i = 0; i < sc->nsendenv; i++)
		free(sc->sendenv[i]);
	sc->nevents = sc->nsendenv = 0;
}
