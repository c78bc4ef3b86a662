/*
 * One daemon connection: greetings, module choice, access checks,
 * authentication, entering the module, the client's arguments, and then
 * the server side of the protocol (clientserver.c: start_daemon,
 * rsync_module).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/exit_line.h"
#include "proto/alloc.h"
#include "proto/stop_signal.h"
#include "client/options.h"
#include "client/secluded.h"
#include "daemon/access.h"
#include "daemon/auth.h"
#include "daemon/daemon.h"
#include "daemon/log.h"
#include "daemon/module_glob.h"
#include "daemon/proxy_header.h"
#include "daemon/xfer_exec.h"
#include "proto/checksum.h"
#include "proto/chmod.h"
#include "proto/filter.h"
#include "proto/logfmt.h"
#include "proto/oppath.h"
#include "proto/server.h"
#include "proto/session.h"
#include "proto/token.h"

#define LINE_MAX_LEN 5120   /* BIGPATHBUFLEN */
#define MAX_DAEMON_ARGS 16000
#define MAX_ARGS_BYTES (1024 * 1024)
#define EARLY_INPUT_CMD "#early_input="
#define EARLY_INPUT_MAX 5120
#define HOOK_REQUEST_MAX 1024 /* rsync stops adding to RSYNC_REQUEST here */

struct conn {
	const struct daemon_config *cfg;
	const struct daemon_module *m;
	bool chrooted;
	bool inner_subdir;       /* chrooted to OUTER of "path = OUTER/./SUB" */
	char user[AUTH_USER_MAX + 1];
	const struct ferry_opts *dopts;
	struct session s;
	char addr[80];
	char host[256];
	int remote_protocol;
	int remote_sub;
	char digests[512];
	int lock_fd;
	int fd_in, fd_out;
	char *early_input;       /* "#early_input=" bytes for early exec */
	size_t early_input_len;
	struct xfer_hook namecvt; /* the module's "name converter", if running */
	struct log_item log_who;  /* %m %P %h %a %u of the transfer log */
};

/* Why the client's name could not be found (clientname.c: client_name). */
static void log_lookup_note(const struct daemon_config *cfg)
{
	if (*access_lookup_note())
		daemon_log(cfg, NULL, "%s", access_lookup_note());
}

static bool send_line(struct conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool send_line(struct conn *c, const char *fmt, ...)
{
	char buf[LINE_MAX_LEN];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n < 0)
		return false;
	if ((size_t)n >= sizeof buf)
		n = (int)sizeof buf - 1;
	return wire_write(&c->s.out, buf, (size_t)n) && wire_flush(&c->s.out);
}

/* One absolute bound for the whole handshake (greeting, module, auth,
 * arguments): the "timeout" in force, at most 60 seconds, as rsync 3.5
 * does. Hooks run between reads, so the bound is set again before the
 * arguments are read. */
static void set_handshake_deadline(struct conn *c, int timeout_s)
{
	int limit = timeout_s > 0 && timeout_s < 60 ? timeout_s : 60;

	c->s.in.deadline_ms = wire_now_ms() + (int64_t)limit * 1000;
}

static void send_motd(struct conn *c)
{
	char buf[4096];

	if (!c->cfg->motd_file || !*c->cfg->motd_file)
		return;
	char *motd = config_expand(c->cfg->motd_file);
	int fd = motd ? oppath_open(AT_FDCWD, motd, O_RDONLY, 0, OPPATH_QUIET) : -1;
	free(motd);
	ssize_t n;
	while (fd >= 0 && (n = read(fd, buf, sizeof buf)) > 0)
		wire_write(&c->s.out, buf, (size_t)n);
	if (fd >= 0)
		close(fd);
	/* rsync sends the extra newline even when the file cannot be read */
	wire_write(&c->s.out, "\n", 1);
	wire_flush(&c->s.out);
}

/* "@RSYNCD: 31.0 md5 md4" from the client (clientserver.c: exchange_protocols). */
static bool read_client_greeting(struct conn *c)
{
	char line[LINE_MAX_LEN];
	int n = 0;

	if (!wire_read_line(&c->s.in, line, sizeof line))
		return false;
	c->remote_sub = -1;
	if (strncmp(line, "@RSYNCD: ", 9) != 0 ||
	    sscanf(line + 9, "%d%n", &c->remote_protocol, &n) != 1) {
		send_line(c, "@ERROR: protocol startup error\n");
		return false;
	}
	const char *p = line + 9 + n;
	if (*p == '.') {
		int m = 0;
		if (sscanf(p + 1, "%d%n", &c->remote_sub, &m) == 1)
			p += 1 + m;
	}
	if (c->remote_sub < 0 && c->remote_protocol >= 30) {
		send_line(c, "@ERROR: your client omitted the subprotocol value: %s\n", line);
		return false;
	}
	while (*p == ' ')
		p++;
	snprintf(c->digests, sizeof c->digests, "%s", p);
	if (!*c->digests && c->remote_protocol > 31) {
		send_line(c, "@ERROR: your client omitted the digest name list: %s\n", line);
		return false;
	}
	int proto = c->remote_protocol < PROTOCOL_NEWEST ? c->remote_protocol : PROTOCOL_NEWEST;
	if (c->remote_protocol < PROTOCOL_NEWEST && c->remote_sub > 0)
		proto--;
	c->remote_protocol = proto;
	c->s.protocol = c->s.in.protocol = c->s.out.protocol = proto;
	return true;
}

/* "#early_input=LEN" and LEN bytes before the module name (rsync 3.2.4+
 * --early-input), kept for the module's early exec; then the next line. */
static bool read_early_input(struct conn *c, char *line, size_t size)
{
	char *end;
	long len = strtol(line + strlen(EARLY_INPUT_CMD), &end, 10);

	if (*end || len <= 0 || len > EARLY_INPUT_MAX) {
		send_line(c, "@ERROR: invalid early_input length\n");
		return false;
	}
	c->early_input = malloc((size_t)len);
	if (!c->early_input || !wire_read(&c->s.in, c->early_input, (size_t)len))
		return false;
	c->early_input_len = (size_t)len;
	return wire_read_line(&c->s.in, line, size);
}

static void send_listing(struct conn *c)
{
	for (size_t i = 0; i < c->cfg->nmodules; i++) {
		const struct daemon_module *m = &c->cfg->modules[i];
		/* rsync lists a module even to a host it would refuse;
		 * only "list = no" hides it (clientserver.c: send_listing). */
		if (!m->list)
			continue;
		send_line(c, "%-15s\t%s\n", m->name, m->comment ? m->comment : "");
	}
	if (c->s.protocol >= 25)
		send_line(c, "@RSYNCD: EXIT\n");
}

/* How a module's admin paths are opened: never with a hint on stderr, and
 * following any symlink only with "insecure links = yes". */
static unsigned module_oppath_how(const struct daemon_module *m)
{
	return OPPATH_QUIET | (m->insecure_links ? OPPATH_INSECURE : 0);
}

/* Claim one of the module's `max connections` slots with a record lock on
 * the lock file (connection.c: claim_connection). */
static bool claim_slot(struct conn *c, const struct daemon_module *m)
{
	const char *lock = m->lock_file ? m->lock_file : "/var/run/rsyncd.lock";

	if (m->max_connections <= 0)
		return m->max_connections == 0;
	c->lock_fd = oppath_open(AT_FDCWD, lock, O_RDWR | O_CREAT, 0600, module_oppath_how(m));
	if (c->lock_fd < 0)
		return false;
	for (int i = 0; i < m->max_connections; i++) {
		struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = i * 4,
				   .l_len = 4};
		if (fcntl(c->lock_fd, F_SETLK, &fl) == 0)
			return true;
	}
	close(c->lock_fd);
	c->lock_fd = -1;
	return false;
}

static bool authenticate(struct conn *c, const struct daemon_module *m, bool *read_only,
			 char *user, size_t usz)
{
	enum csum_type t;
	bool legacy;
	char challenge[AUTH_CHALLENGE_SIZE], line[LINE_MAX_LEN], err[512];

	user[0] = '\0';
	if (!auth_required(m->auth_users))
		return true;
	if (!auth_pick_digest(c->digests, c->s.protocol, &t, &legacy)) {
		send_line(c, "@ERROR: your client does not support one of our daemon-auth "
			     "checksums: %s\n", auth_default_list());
		return false;
	}
	if (!auth_digest_meets(t, m->auth_digest, err, sizeof err)) {
		daemon_log(c->cfg, NULL, "auth digest refused: %s", err);
		send_line(c, "@ERROR: auth failed on module %s\n", m->name);
		return false;
	}
	auth_make_challenge(t, challenge, sizeof challenge);
	if (!*challenge || !send_line(c, "@RSYNCD: AUTHREQD %s\n", challenge) ||
	    !wire_read_line(&c->s.in, line, sizeof line)) {
		send_line(c, "@ERROR: auth failed on module %s\n", m->name);
		return false;
	}
	enum auth_result r = auth_check(m->auth_users, m->secrets_file, m->strict_modes,
					geteuid() == 0, t, legacy, challenge, line, user, usz, err,
					sizeof err);
	if (r == AUTH_DENIED) {
		char *reason = err, *nl;
		while ((nl = strchr(reason, '\n')) != NULL) {
			daemon_log(c->cfg, NULL, "%.*s", (int)(nl - reason), reason);
			reason = nl + 1;
		}
		daemon_log(c->cfg, NULL, "auth failed on module %s from %s (%s) for %s: %s", m->name,
			   c->host, c->addr, *user ? user : "?", reason);
		send_line(c, "@ERROR: auth failed on module %s\n", m->name);
		return false;
	}
	if (r == AUTH_OK_RO)
		*read_only = true;
	else if (r == AUTH_OK_RW)
		*read_only = false;
	return true;
}

static bool name_to_id(const char *name, bool is_group, unsigned *id)
{
	char *end;
	unsigned long v = strtoul(name, &end, 10);

	if (*name && !*end && v <= 0xffffffffUL) {
		*id = (unsigned)v;
		return true;
	}
	if (is_group) {
		struct group *gr = getgrnam(name);
		if (gr)
			*id = gr->gr_gid;
		return gr != NULL;
	}
	struct passwd *pw = getpwnam(name);
	if (pw)
		*id = pw->pw_uid;
	return pw != NULL;
}

/* Groups a module's `gid` may name; "*" past this many fails as rsync's
 * getgrouplist() failure does. */
#define MODULE_GROUPS_MAX 1024

/* Whom a root daemon becomes for a module: the uid, and the groups, the
 * first being the primary one. */
struct module_ids {
	uid_t uid;
	gid_t gids[MODULE_GROUPS_MAX];
	int ngids;
};

static bool bad_id(struct conn *c, const char *what, const char *name)
{
	daemon_log(c->cfg, c->m, "Invalid %s %s", what, name);
	send_line(c, "@ERROR: invalid %s %s\n", what, name);
	return false;
}

static bool add_group(struct conn *c, struct module_ids *ids, const char *name)
{
	unsigned id;

	if (!name_to_id(name, true, &id) || ids->ngids >= MODULE_GROUPS_MAX)
		return bad_id(c, "gid", name);
	ids->gids[ids->ngids++] = id;
	return true;
}

/* "gid = *": every group of the module's user, its primary group first
 * (uidlist.c: getallgroups). */
static bool add_all_groups(struct conn *c, struct module_ids *ids)
{
	struct passwd *pw = getpwuid(ids->uid);
	int n = MODULE_GROUPS_MAX;
	const char *err = NULL;

	if (!pw)
		err = "getpwuid failed";
	else if (getgrouplist(pw->pw_name, pw->pw_gid, ids->gids, &n) < 0)
		err = "getgrouplist failed";
	if (err) {
		daemon_log(c->cfg, c->m, "%s", err);
		send_line(c, "@ERROR: %s\n", err);
		return false;
	}
	ids->ngids = n;
	for (int j = 1; j < n; j++) {
		if (ids->gids[j] == pw->pw_gid) {
			ids->gids[j] = ids->gids[0];
			ids->gids[0] = pw->pw_gid;
			break;
		}
	}
	return true;
}

/* The module's `gid` list ("*" only first), or nogroup (nobody where there
 * is no nogroup) when it has none (clientserver.c: rsync_module). */
static bool lookup_groups(struct conn *c, const struct daemon_module *m,
			  struct module_ids *ids)
{
	if (!m->gid || !*m->gid) {
		unsigned id;
		if (!name_to_id("nogroup", true, &id) && !name_to_id("nobody", true, &id))
			return bad_id(c, "gid", "nogroup");
		ids->gids[ids->ngids++] = id;
		return true;
	}
	char *list = strdup(m->gid);
	struct rule_iter it;
	bool ok = list != NULL;

	if (list)
		rules_begin(&it, list);
	for (char *tok; ok && (tok = rules_next(&it)) != NULL;) {
		if (ids->ngids == 0 && strcmp(tok, "*") == 0)
			ok = add_all_groups(c, ids);
		else
			ok = add_group(c, ids, tok);
	}
	free(list);
	return ok;
}

/* The module's uid (default nobody) and groups, as names or numbers; on
 * failure the client has been told why. */
static bool lookup_ids(struct conn *c, const struct daemon_module *m, struct module_ids *ids)
{
	const char *user = m->uid && *m->uid ? m->uid : "nobody";
	unsigned id;

	if (!name_to_id(user, false, &id))
		return bad_id(c, "uid", user);
	ids->uid = id;
	ids->ngids = 0;
	return lookup_groups(c, m, ids);
}

/* Does INNER (after "/./") name a directory below the chroot's root? */
static bool names_subdir(const char *inner)
{
	return inner[strspn(inner, "/.")] != '\0';
}

/* chroot (as `use chroot` says), open the module root, and drop to the
 * module's uid/gid when we are root. A "/./" in the path asks for a chroot
 * even when `use chroot` is unset. Returns the root fd or -1. */
static int enter_module(struct conn *c, const struct daemon_module *m)
{
	bool root = geteuid() == 0;
	struct module_ids ids;

	if (!m->path || !*m->path) {
		send_line(c, "@ERROR: no path setting.\n");
		return -1;
	}
	if (root && !lookup_ids(c, m, &ids))
		return -1;
	/* The module path is the admin's (oppath.h): resolved once, with no
	 * other user's symlink on the way, and entered by that fd. With
	 * "OUTER/./INNER" the chroot is OUTER and INNER is served. */
	const char *inner = m->use_chroot != 0 ? strstr(m->path, "/./") : NULL;
	char *outer = inner ? strndup(m->path, (size_t)(inner - m->path)) : NULL;
	if (inner && !outer) {
		send_line(c, "@ERROR: chroot failed\n");
		return -1;
	}
	const char *top = inner ? (*outer ? outer : "/") : m->path;
	int fd = oppath_open(AT_FDCWD, top, O_RDONLY | O_DIRECTORY, 0, module_oppath_how(m));
	int path_errno = errno;
	if (fd >= 0 && m->use_chroot != 0 && (root || inner) && fchdir(fd) == 0 &&
	    chroot(".") == 0 && chdir("/") == 0 && (!inner || chdir(inner + 2) == 0)) {
		close(fd);
		fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		c->chrooted = true;
		c->inner_subdir = inner && names_subdir(inner + 2);
	} else if ((m->use_chroot == 1 || inner) && !(fd < 0 && path_errno == ELOOP)) {
		daemon_log(c->cfg, m, "chroot(\"%s\") failed: %s", m->path,
			   strerror(fd < 0 ? path_errno : errno));
		send_line(c, "@ERROR: chroot failed\n");
		if (fd >= 0)
			close(fd);
		free(outer);
		return -1;
	} else if (fd >= 0 && fchdir(fd) < 0) {
		path_errno = errno;
		close(fd);
		fd = -1;
	}
	free(outer);
	if (fd < 0) {
		errno = path_errno;
		daemon_log(c->cfg, m, "ferry: chdir %s failed: %s (%d)", m->path, strerror(errno),
			   errno);
		send_line(c, "@ERROR: chdir failed\n");
		return -1;
	}
	if (root) {
		if (setgroups((size_t)ids.ngids, ids.gids) < 0 || setgid(ids.gids[0]) < 0 ||
		    setuid(ids.uid) < 0) {
			daemon_log(c->cfg, m, "dropping privileges failed: %s", strerror(errno));
			send_line(c, "@ERROR: setuid failed\n");
			close(fd);
			return -1;
		}
	}
	return fd;
}

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

/* A path argument "module/some/path" as a path inside the module: the
 * module name stripped, "." and empty components dropped, ".." never
 * climbing above the root (util1.c: sanitize_path). A trailing slash is
 * kept: it decides whether a directory or its contents are sent. With -R
 * the "." components stay (SP_KEEP_DOT_DIRS): "/./" marks where the
 * sent names begin. */
static void module_relative(const char *arg, const char *module, bool keep_dots, char *out,
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

/* The path arguments as the module will use them: each made relative to
 * the module, its wildcards expanded (io.c: read_args calls
 * glob_expand_module). Without -s an argument may name several paths,
 * "mod/a mod/b", split at " mod/" as rsync does. */
static bool module_path_args(const struct daemon_module *m, const struct ferry_opts *o,
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
			module_relative(piece, module, o->relative, rel, sizeof rel);
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

/* The module's filter, include from, include, exclude from and exclude,
 * in that order, parsed as rsyncd does (clientserver.c: rsync_module):
 * "filter" as filter rules split at whitespace, the others as patterns
 * ("- "/"+ " prefixes allowed), the lists split at whitespace, the files
 * one a line. Returns 1 when there are rules, 0 when none, -1 when a file
 * cannot be read or a rule is bad (err says why). */
static int module_filters(const struct daemon_module *m, struct filter_list *fl, char *err,
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

static int serve_module(struct conn *c, struct daemon_module *m);

/* Whether a directory the client names lies in what the module's rules
 * exclude, judged by name once ".." is resolved inside the module. */
static bool dir_excluded(const struct filter_list *fl, const char *dir)
{
	char rel[4096];

	module_relative(dir, "", false, rel, sizeof rel);
	size_t n = strlen(rel);
	while (n > 1 && rel[n - 1] == '/')
		rel[--n] = '\0';
	if (strcmp(rel, ".") == 0)
		return false;
	return filter_check(fl, rel, true, false) < 0;
}

/* A push's side directories must stay out of the module's excluded names,
 * as rsync checks them: --temp-dir and --backup-dir while it parses the
 * options (options.c, exit 4), an absolute --partial-dir and the --*-dest
 * dirs when the receiver starts (main.c: do_server_recv, exit 1). Returns
 * 0, or the exit code of the refusal. */
static int push_dirs_refused(const struct ferry_opts *o, const struct filter_list *fl)
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

static bool hook_set(const char *cmd)
{
	return cmd && *cmd;
}

/* Before the module is entered (so the hooks run with the daemon's
 * privileges, outside the chroot): fork off the post-xfer exec waiter, run
 * early exec, and start pre-xfer exec, which then waits for the request. */
static bool start_module_hooks(struct conn *c, const struct daemon_module *m,
			       struct xfer_hook *pre)
{
	if (!hook_set(m->early_exec) && !hook_set(m->pre_xfer_exec) &&
	    !hook_set(m->post_xfer_exec) && !hook_set(m->name_converter))
		return true;
	if (getenv("RSYNC_NO_XFER_EXEC"))
		return true;
	char pid[32];
	snprintf(pid, sizeof pid, "%ld", (long)getpid());
	setenv("RSYNC_PID", pid, 1);
	if (hook_set(m->post_xfer_exec) &&
	    !xfer_post_exec_fork(m->post_xfer_exec, c->fd_in, c->fd_out)) {
		daemon_log(c->cfg, m, "fork failed: %s", strerror(errno));
		send_line(c, "@ERROR: fork failed\n");
		return false;
	}
	/* The name converter, too, runs outside the chroot, where the user
	 * and group databases are (clientserver.c: rsync_module). */
	if (hook_set(m->name_converter) && !xfer_hook_start(m->name_converter, true, &c->namecvt)) {
		daemon_log(c->cfg, m, "name-converter exec preparation failed: %s", strerror(errno));
		send_line(c, "@ERROR: name-converter exec preparation failed\n");
		return false;
	}
	if (hook_set(m->early_exec)) {
		struct xfer_hook early;
		if (!xfer_hook_start(m->early_exec, false, &early)) {
			daemon_log(c->cfg, m, "early exec preparation failed: %s", strerror(errno));
			send_line(c, "@ERROR: early exec preparation failed\n");
			return false;
		}
		xfer_hook_send(&early, NULL, NULL, 0, c->early_input, c->early_input_len);
		char *failure = xfer_hook_finish(&early, "early exec");
		if (failure) {
			daemon_log(c->cfg, m, "%s", failure);
			free(failure);
			send_line(c, "@ERROR: early exec failed\n");
			return false;
		}
	}
	if (hook_set(m->pre_xfer_exec) && !xfer_hook_start(m->pre_xfer_exec, true, pre)) {
		daemon_log(c->cfg, m, "pre-xfer exec preparation failed: %s", strerror(errno));
		send_line(c, "@ERROR: pre-xfer exec preparation failed\n");
		return false;
	}
	return true;
}

/* The client's request: its path arguments after ".", space-separated,
 * added while the string is shorter than 1024 bytes (io.c: read_args).
 * NULL when there are none; rsync then logs no "rsync on" line and hooks
 * see "(NONE)". */
static char *client_request(char *const *argv, int argc)
{
	char *req = NULL;
	size_t n = 0;
	int dot = 0;

	while (dot < argc && strcmp(argv[dot], ".") != 0)
		dot++;
	for (int i = dot + 1; i < argc && n < HOOK_REQUEST_MAX; i++) {
		size_t len = strlen(argv[i]);
		char *grown = realloc(req, n + len + 2);
		if (!grown)
			break;
		req = grown;
		if (n)
			req[n++] = ' ';
		memcpy(req + n, argv[i], len + 1);
		n += len;
	}
	return req;
}

/* Give pre-xfer exec the client's request and its whole argument list;
 * NULL when it approves, else the message for the client. */
static char *run_pre_xfer_hook(struct xfer_hook *pre, const char *request, char **argv,
			       int argc, const char *module)
{
	int dot = 0;

	while (dot < argc && strcmp(argv[dot], ".") != 0)
		dot++;
	/* The hook sees the path arguments as the module will use them:
	 * relative to the module, without its name (rsync glob-expands them
	 * before the hook runs). */
	char **hook_argv = calloc((size_t)argc + 1, sizeof *hook_argv);
	if (!hook_argv) {
		xfer_hook_cancel(pre);
		return strdup("pre-xfer exec: out of memory\n");
	}
	for (int i = 0; i < argc; i++) {
		char rel[4096];
		if (i <= dot) {
			hook_argv[i] = argv[i];
			continue;
		}
		module_relative(argv[i], module, false, rel, sizeof rel);
		hook_argv[i] = strdup(rel);
		if (!hook_argv[i])
			hook_argv[i] = argv[i];
	}
	xfer_hook_send(pre, request, hook_argv, argc, NULL, 0);
	for (int i = dot + 1; i < argc; i++)
		if (hook_argv[i] != argv[i])
			free(hook_argv[i]);
	free(hook_argv);
	return xfer_hook_finish(pre, "pre-xfer exec");
}

/* Give the name converter the request and arguments as pre-xfer exec
 * gets them, keeping its stdin open for the lookups: from now on the
 * session asks it instead of the passwd and group files (idmap.c). */
static void start_name_converter(struct conn *c, const char *request, char **argv, int argc)
{
	if (c->namecvt.pid <= 0)
		return;
	if (!xfer_hook_send_keep_open(&c->namecvt, request, argv, argc)) {
		daemon_log(c->cfg, c->m, "name converter: could not send it the request");
		return;
	}
	c->s.namecvt_req_fd = c->namecvt.arg_fd;
	c->s.namecvt_ans_fd = c->namecvt.out_fd;
}

/* Expand %VAR% references in the module's strings once the connection's
 * RSYNC_* variables are known (rsync expands parameters when used). */
static int serve_expanded(struct conn *c, const struct daemon_module *raw)
{
	struct daemon_module xm;
	char err[512];

	/* "reverse lookup" off globally but on for this module: look the
	 * name up now (clientserver.c: rsync_module) */
	if (strcmp(c->host, ACCESS_NAME_UNDETERMINED) == 0 && raw->reverse_lookup) {
		addr_name(c->addr, c->host, sizeof c->host, true);
		log_lookup_note(c->cfg);
	}
	setenv("RSYNC_MODULE_NAME", raw->name, 1);
	setenv("RSYNC_HOST_ADDR", c->addr, 1);
	setenv("RSYNC_HOST_NAME", c->host, 1);
	if (config_module_expand(raw, &xm, err, sizeof err) < 0) {
		daemon_log(c->cfg, raw, "module %s: %s", raw->name, err);
		send_line(c, "@ERROR: module configuration error\n");
		return RERR_STARTCLIENT;
	}
	c->namecvt = (struct xfer_hook){.pid = -1, .arg_fd = -1, .out_fd = -1};
	int code = serve_module(c, &xm);
	xfer_hook_cancel(&c->namecvt); /* it ends when its stdin closes */
	config_module_free(&xm);
	return code;
}

/* "transfer logging": the lines the engine makes in the module's log
 * format (proto/attrs.c), and its messages, go to the module's log. */
static void log_transfer_line(void *ctx, const char *line)
{
	struct conn *c = ctx;

	daemon_log(c->cfg, c->m, "%s", line);
}

/* The module's policies that change how the engine behaves. */
static bool apply_module_policy(struct conn *c, const struct daemon_module *m, bool sending,
				int root_fd)
{
	struct session *s = &c->s;

	/* a chroot confines only what lies below its root; an inner subdir is
	 * guarded as a module without chroot is (clientserver.c: module_dirlen) */
	bool confined = c->chrooted && !c->inner_subdir;
	s->munge_symlinks = m->munge_symlinks < 0 ? !confined : m->munge_symlinks == 1;
	s->sanitize_links = !confined;
	if (s->munge_symlinks) {
		/* Munged links would be followable again through such a dir. */
		struct stat st;
		if (fstatat(root_fd, "rsyncd-munged", &st, AT_SYMLINK_NOFOLLOW) == 0) {
			daemon_log(c->cfg, m, "Symlink munging is unsafe when a /rsyncd-munged "
					      "directory exists.");
			return false;
		}
	}
	s->ids_by_number = c->chrooted ? m->numeric_ids != 0 && !m->name_converter
				       : m->numeric_ids == 1;
	s->ignore_nonreadable = m->ignore_nonreadable;
	const char *cm = sending ? m->outgoing_chmod : m->incoming_chmod;
	if (cm && *cm) {
		mode_t um = umask(0);
		umask(um);
		if (!chmod_parse(&s->chmod, cm, um))
			daemon_log(c->cfg, m, "Invalid \"%sing chmod\" directive: %s",
				   sending ? "outgo" : "incom", cm);
	}
	if (m->transfer_logging) {
		c->log_who = (struct log_item){.module = m->name, .module_path = m->path,
					       .host = c->host, .addr = c->addr, .user = c->user};
		s->xfer_log_format = m->log_format ? m->log_format : "%o %h [%a] %m (%u) %f %l";
		s->xfer_log_who = &c->log_who;
		s->xfer_log_line = log_transfer_line;
		s->xfer_log_ctx = c;
	}
	return true;
}

/* "fake super" and "max verbosity" (clientserver.c: rsync_module): the
 * module's fake super makes this side keep privileged attributes in
 * xattrs (and -XX falls back to -X, whose user.rsync.%* names it uses);
 * a client's own --fake-super is taken as --super, as rsyncd does. The
 * client's -v level is capped (limit_output_verbosity). */
static void apply_module_privilege(const struct daemon_module *m, struct ferry_opts *o)
{
	if (m->fake_super) {
		o->super_mode = SUPER_FAKE;
		if (o->xattrs > 1)
			o->xattrs = 1;
	} else if (o->super_mode == SUPER_FAKE) {
		o->super_mode = SUPER_ON;
	}
	options_limit_verbosity(o, m->max_verbosity);
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

/* The log's last lines for a transfer (log.c: log_exit): the byte
 * counts, which only a sender has when the run failed, and the error. */
static void exit_text(char *buf, size_t size, int code, bool sender, int line)
{
	const char *name = exit_code_name(code);

	snprintf(buf, size, "ferry %s: %s (code %d) at serve.c(%d) [%s=%s]",
		 code == RERR_VANISHED ? "warning" : "error", name ? name : "unexplained error", code,
		 line, sender ? "sender" : "Receiver", FERRY_VERSION);
}

static void log_end(struct conn *c, int code, int line)
{
	const struct session *s = &c->s;
	char end[300];

	if (code == 0 || s->am_sender)
		daemon_log(c->cfg, c->m, "sent %llu bytes  received %llu bytes  total size %lld",
			   (unsigned long long)(s->out.total_written + s->out.len),
			   (unsigned long long)s->in.total_read, (long long)s->stats.total_size);
	if (code == 0)
		return;
	exit_text(end, sizeof end, code, s->am_sender, line);
	daemon_log(c->cfg, c->m, "%s", end);
}

/* The path and the hooks see who logged in. A refused hook value ends
 * the connection without a reply, as rsync's exit_cleanup does there. */
static bool expand_after_auth(struct conn *c, struct daemon_module *m)
{
	char err[512], end[300];

	if (config_module_expand_late(m, err, sizeof err) == 0)
		return true;
	daemon_log(c->cfg, m, "%s", err);
	exit_text(end, sizeof end, RERR_UNSUPPORTED, false, __LINE__);
	daemon_log(c->cfg, m, "%s", end);
	return false;
}

static int serve_module(struct conn *c, struct daemon_module *m)
{
	char *user = c->user;
	bool read_only = m->read_only;

	c->m = m;

	/* without a reverse lookup, a hostname pattern that resolves to the
	 * client's address names it from now on (access.c: match_hostname) */
	char named[sizeof c->host] = "";
	bool allowed = access_check(m->hosts_allow, m->hosts_deny, c->addr, c->host,
				    m->forward_lookup, named, sizeof named);
	if (*named)
		snprintf(c->host, sizeof c->host, "%s", named);
	if (!allowed) {
		daemon_log(c->cfg, NULL, "rsync denied on module %s from %s (%s)", m->name,
			   c->host, c->addr);
		if (!m->list)
			send_line(c, "@ERROR: Unknown module '%s'\n", m->name);
		else
			send_line(c, "@ERROR: access denied to %s from %s (%s)\n", m->name, c->host,
				  c->addr);
		return RERR_STARTCLIENT;
	}
	/* Until the module's own log is opened (just before its hooks run),
	 * its lines go to the daemon's log (clientserver.c: log_init(1)):
	 * "the global log will still contain any authorization failures". */
	if (!c->dopts->server) /* not over a remote shell (am_daemon > 0) */
		daemon_log(c->cfg, NULL, "rsync allowed access on module %s from %s (%s)", m->name,
			   c->host, c->addr);
	if (!claim_slot(c, m)) {
		daemon_log(c->cfg, NULL, "max connections (%d) reached", m->max_connections);
		send_line(c, "@ERROR: max connections (%d) reached -- try again later\n",
			  m->max_connections);
		return RERR_STARTCLIENT;
	}
	if (!authenticate(c, m, &read_only, user, sizeof c->user))
		return RERR_STARTCLIENT;
	if (!*user && *c->cfg->login_user) /* an SSH-listener login */
		snprintf(user, sizeof c->user, "%s", c->cfg->login_user);
	setenv("RSYNC_USER_NAME", user, 1);
	daemon_log_open(c->cfg, m); /* while we can: before chroot and setuid */
	if (!expand_after_auth(c, m))
		return RERR_UNSUPPORTED;
	struct xfer_hook pre = {.pid = -1, .arg_fd = -1, .out_fd = -1};
	if (!start_module_hooks(c, m, &pre))
		return RERR_STARTCLIENT;
	int root_fd = enter_module(c, m);
	if (root_fd < 0) {
		xfer_hook_cancel(&pre);
		return RERR_STARTCLIENT;
	}
	c->s.am_root = geteuid() == 0; /* we may have dropped to the module's uid */
	set_handshake_deadline(c, m->timeout);
	send_line(c, "@RSYNCD: OK\n");
	int argc = 0;
	char **argv = read_args(c, &argc);
	if (!argv) {
		daemon_log(c->cfg, m, "invalid argument list from %s (%s)", c->host, c->addr);
		xfer_hook_cancel(&pre);
		close(root_fd);
		return RERR_STREAMIO;
	}
	struct ferry_opts o;
	bool *refused = options_refusals(m->refuse_options);
	int rc = options_parse_refusing(&o, argc, argv, OPTS_FROM_REMOTE, refused);
	char **merged = NULL, **secluded = NULL;
	if (rc == 0 && o.secluded_args &&
	    (rc = parse_secluded(c, &o, argc, argv, refused, &merged, &secluded)) < 0) {
		free(refused);
		options_free(&o);
		for (int i = 0; i < argc; i++)
			free(argv[i]);
		free(argv);
		xfer_hook_cancel(&pre);
		close(root_fd);
		return RERR_STREAMIO;
	}
	free(refused);
	if (rc == 0)
		alloc_limit_set(alloc_limit_for(o.max_alloc != NULL, (size_t)o.max_alloc_bytes,
						true, alloc_limit()));
	/* with -s the hooks and the log see the second list (clientserver.c) */
	char **req_argv = merged ? merged : argv;
	int req_argc = 0;
	while (merged && merged[req_argc])
		req_argc++;
	if (!merged)
		req_argc = argc;
	char *request = client_request(req_argv, req_argc);
	char *hook_refusal = pre.pid > 0 ? run_pre_xfer_hook(&pre, request, req_argv, req_argc,
							     m->name)
					 : NULL;
	start_name_converter(c, request, req_argv, req_argc);
	struct server_ctx ctx = {.root_fd = root_fd, .confined = true,
				 .remote_protocol = c->remote_protocol,
				 .client_caps = rc == 0 ? o.server_caps : NULL};
	char refusal[600] = "";
	if (hook_refusal) {
		daemon_log(c->cfg, m, "%s", hook_refusal);
		ctx.refusal_verbatim = true;
		ctx.refusal_code = RERR_UNSUPPORTED;
	} else if (rc != 0) {
		snprintf(refusal, sizeof refusal, "%s", options_last_error());
		ctx.refusal_code = RERR_UNSUPPORTED;
	} else if (!o.server) {
		snprintf(refusal, sizeof refusal, "the client did not ask for --server");
		ctx.refusal_code = RERR_PROTOCOL;
	} else if (!o.sender && read_only) {
		/* rsync writes these "ERROR:" lines without its name */
		snprintf(refusal, sizeof refusal, "ERROR: module is read only\n");
		ctx.refusal_verbatim = true;
		ctx.refusal_code = RERR_SYNTAX;
	} else if (o.sender && m->write_only) {
		snprintf(refusal, sizeof refusal, "ERROR: module is write only\n");
		ctx.refusal_verbatim = true;
		ctx.refusal_code = RERR_SYNTAX;
	} else if (o.sender && read_only && o.remove_source_files) {
		snprintf(refusal, sizeof refusal,
			 "ERROR: --remove-%s-files cannot be used with a read-only module\n",
			 o.remove_source_files == 1 ? "source" : "sent");
		ctx.refusal_verbatim = true;
		ctx.refusal_code = RERR_SYNTAX;
	}
	if (!refusal[0] && !apply_module_policy(c, m, o.sender, root_fd)) {
		snprintf(refusal, sizeof refusal, "daemon security issue -- contact admin");
		ctx.refusal_code = RERR_UNSUPPORTED;
	}
	ctx.refusal = hook_refusal ? hook_refusal : refusal[0] ? refusal : NULL;
	struct filter_list dfilters;
	char ferr[600];
	int nf = module_filters(m, &dfilters, ferr, sizeof ferr);
	if (nf > 0)
		ctx.daemon_filters = &dfilters;
	int dirs_code = nf > 0 && rc == 0 && !o.sender && !ctx.refusal
				? push_dirs_refused(&o, &dfilters)
				: 0;
	if (dirs_code) {
		/* rsync's wording; only the options.c one carries its name */
		snprintf(refusal, sizeof refusal, "Your options have been rejected by the server.\n");
		ctx.refusal = refusal;
		ctx.refusal_verbatim = dirs_code == RERR_SYNTAX;
		ctx.refusal_code = dirs_code;
	}
	if (nf < 0 && !ctx.refusal) {
		/* a rule file that cannot be read must not leave the module
		 * unfiltered (exclude.c: XFLG_FATAL_ERRORS) */
		snprintf(refusal, sizeof refusal, "%s", ferr);
		ctx.refusal = refusal;
		ctx.refusal_code = RERR_FILEIO;
	}
	struct path_list paths = {0};
	if (rc == 0 && !module_path_args(m, &o, root_fd, ctx.daemon_filters, &paths)) {
		daemon_log(c->cfg, m, "expanding the path arguments failed: %s", strerror(errno));
		if (!ctx.refusal) {
			snprintf(refusal, sizeof refusal, "ERROR: expanding the path arguments failed: %s",
				 strerror(errno));
			ctx.refusal = refusal;
			ctx.refusal_code = errno == E2BIG ? RERR_SYNTAX : RERR_MALLOC;
		}
	}
	ctx.paths = paths.v;
	ctx.npaths = (int)paths.n;
	if (request)
		daemon_log(c->cfg, m, "rsync %s %s from %s%s%s (%s)", o.sender ? "on" : "to",
			   request, user, *user ? "@" : "", c->host, c->addr);
	free(request);
	struct ferry_opts run_opts = o;
	if (m->ignore_errors)
		run_opts.ignore_errors = true;
	if (m->temp_dir && *m->temp_dir && !run_opts.temp_dir) {
		run_opts.temp_dir = m->temp_dir;
		run_opts.temp_dir_trusted = true;
	}
	/* the module's "insecure links" (a client's --insecure-links was refused) */
	run_opts.insecure_links = m->insecure_links;
	if (m->open_noatime >= 0) /* the module decides when it says */
		run_opts.open_noatime = m->open_noatime == 1;
	if (m->timeout && (!run_opts.timeout || m->timeout < run_opts.timeout))
		run_opts.timeout = m->timeout;
	apply_module_privilege(m, &run_opts);
	c->s.opts = &run_opts;
	session_set_privilege(&c->s);
	c->s.skip_compress = run_opts.skip_compress;
	c->s.dont_compress = m->dont_compress;
	c->s.in.timeout_ms = c->s.out.timeout_ms = run_opts.timeout * 1000;
	c->s.in.deadline_ms = 0; /* the handshake is over */
	/* the daemon's own --bwlimit caps what a client may ask for */
	if (c->dopts->bwlimit && (!run_opts.bwlimit || run_opts.bwlimit > c->dopts->bwlimit))
		run_opts.bwlimit = c->dopts->bwlimit;
	c->s.out.bwlimit = run_opts.bwlimit;
	/* a client must not make the daemon start hundreds of zstd workers
	 * (rsync 3.5's cap, CVE-2026-70455) */
	if (run_opts.compress_threads > TOKEN_DAEMON_MAX_THREADS)
		run_opts.compress_threads = TOKEN_DAEMON_MAX_THREADS;
	const int exit_at = __LINE__;
	char told[sizeof refusal + 6000]; /* a hook's message is up to 5119 bytes */
	if (ctx.refusal) {
		if (ctx.refusal != hook_refusal)
			daemon_log(c->cfg, m, "%s%.*s", ctx.refusal_verbatim ? "" : "ferry: ",
				   (int)strcspn(ctx.refusal, "\n"), ctx.refusal);
		/* the client sees the error line the daemon logs too, as
		 * rsyncd's log_exit sends it */
		char end[300];
		size_t n = strlen(ctx.refusal);
		exit_text(end, sizeof end, ctx.refusal_code, o.sender, exit_at);
		snprintf(told, sizeof told, "%s%s%s%s\n", ctx.refusal_verbatim ? "" : "ferry: ",
			 ctx.refusal, n && ctx.refusal[n - 1] == '\n' ? "" : "\n", end);
		ctx.refusal = told;
		ctx.refusal_verbatim = true;
	} else {
		daemon_log(c->cfg, m, o.sender ? "building file list" : "receiving file list");
	}
	/* from here the engine's messages name the module and go to its log
	 * too (log.c: rwrite with am_daemon; util1.c: full_fname) */
	c->s.module_name = m->name;
	c->s.module_chrooted = c->chrooted;
	c->s.daemon_log_line = log_transfer_line;
	c->s.daemon_log_ctx = c;
	int code = server_run(&c->s, &ctx);
	log_end(c, code, exit_at);
	path_list_free(&paths);
	filter_list_free(&dfilters);
	free(hook_refusal);
	options_free(&o);
	free(merged);
	secluded_free(secluded);
	for (int i = 0; i < argc; i++)
		free(argv[i]);
	free(argv);
	close(root_fd);
	return code;
}

/* "proxy protocol": the peer must be a trusted proxy, and its header
 * names the real client, whose address then counts for access checks and
 * logging (clientserver.c: start_daemon). */
static bool accept_proxy_header(struct conn *c)
{
	const char *trusted = c->cfg->proxy_protocol_hosts;
	char addr[sizeof c->addr];

	if (!trusted || !*trusted ||
	    !access_list_match(trusted, c->addr, c->host, false, false, NULL, 0)) {
		daemon_log(c->cfg, NULL, "proxy protocol rejected from untrusted peer %s (%s)",
			   c->host, c->addr);
		return false;
	}
	if (!proxy_header_read(&c->s.in, addr, sizeof addr)) {
		daemon_log(c->cfg, NULL, "invalid proxy protocol header from %s (%s)", c->host,
			   c->addr);
		return false;
	}
	if (*addr) {
		snprintf(c->addr, sizeof c->addr, "%s", addr);
		addr_name(c->addr, c->host, sizeof c->host, c->cfg->defaults.reverse_lookup);
		log_lookup_note(c->cfg);
	}
	return true;
}

/* "daemon chroot", "daemon gid", "daemon uid": confine the whole
 * connection before it reads anything from the client (clientserver.c:
 * start_daemon). Names are looked up after the chroot, as rsync does, so
 * they come from the chroot's /etc. */
static bool enter_daemon_jail(const struct daemon_config *cfg)
{
	unsigned id;

	if (cfg->daemon_chroot && *cfg->daemon_chroot) {
		tzset();
		if (chroot(cfg->daemon_chroot) < 0) {
			daemon_log(cfg, NULL, "daemon chroot(\"%s\") failed: %s",
				   cfg->daemon_chroot, strerror(errno));
			return false;
		}
		if (chdir("/") < 0) {
			daemon_log(cfg, NULL, "daemon chdir(\"/\") failed: %s", strerror(errno));
			return false;
		}
	}
	if (cfg->daemon_gid && *cfg->daemon_gid) {
		if (!name_to_id(cfg->daemon_gid, true, &id)) {
			daemon_log(cfg, NULL, "Invalid daemon gid: %s", cfg->daemon_gid);
			return false;
		}
		gid_t gid = id;
		if ((geteuid() == 0 && setgroups(1, &gid) < 0) || setgid(gid) < 0) {
			daemon_log(cfg, NULL, "Unable to set group to daemon gid %u: %s", id,
				   strerror(errno));
			return false;
		}
	}
	if (cfg->daemon_uid && *cfg->daemon_uid) {
		if (!name_to_id(cfg->daemon_uid, false, &id)) {
			daemon_log(cfg, NULL, "Invalid daemon uid: %s", cfg->daemon_uid);
			return false;
		}
		if (setuid(id) < 0) {
			daemon_log(cfg, NULL, "Unable to set user to daemon uid %u: %s", id,
				   strerror(errno));
			return false;
		}
	}
	return true;
}

int daemon_serve_client(const struct daemon_config *cfg, const struct ferry_opts *dopts,
			int fd_in, int fd_out)
{
	struct conn c = {.cfg = cfg, .dopts = dopts, .lock_fd = -1, .fd_in = fd_in,
			 .fd_out = fd_out};
	char line[LINE_MAX_LEN];
	int code = 0;

	/* the listener ignores SIGHUP and dies by SIGTERM; one connection
	 * ends as a transfer does, logging code 20 */
	stop_signal_install(NULL);
	session_init(&c.s, dopts, fd_in, fd_out);
	c.s.in.timeout_ms = c.s.out.timeout_ms = 60 * 1000; /* bound the handshake */
	set_handshake_deadline(&c, cfg->defaults.timeout);
	client_addr_name(fd_in, c.addr, sizeof c.addr, c.host, sizeof c.host,
			 cfg->defaults.reverse_lookup);
	log_lookup_note(cfg);
	/* over a remote shell without a client address rsync says 0.0.0.0
	 * (clientname.c: client_addr) */
	if (!*c.addr)
		snprintf(c.addr, sizeof c.addr, "%s", dopts->server ? "0.0.0.0" : "UNKNOWN");
	if (cfg->proxy_protocol && !accept_proxy_header(&c)) {
		code = RERR_STARTCLIENT;
		goto out;
	}
	if (!enter_daemon_jail(cfg)) {
		code = RERR_STARTCLIENT;
		goto out;
	}
	daemon_log(cfg, NULL, "connect from %s (%s)", c.host, c.addr);
	if (!send_line(&c, "@RSYNCD: %d.0 %s\n", PROTOCOL_NEWEST, auth_default_list()))
		goto out;
	send_motd(&c);
	if (!read_client_greeting(&c) || !wire_read_line(&c.s.in, line, sizeof line))
		goto out;
	if (strncmp(line, EARLY_INPUT_CMD, strlen(EARLY_INPUT_CMD)) == 0 &&
	    !read_early_input(&c, line, sizeof line))
		goto out;
	if (!*line || strcmp(line, "#list") == 0) {
		daemon_log(cfg, NULL, "module-list request from %s (%s)", c.host, c.addr);
		send_listing(&c);
		goto out;
	}
	if (line[0] == '#') {
		send_line(&c, "@ERROR: Unknown command '%s'\n", line);
		goto out;
	}
	const struct daemon_module *m = config_find_module(cfg, line);
	if (!m) {
		daemon_log(cfg, NULL, "unknown module '%s' tried from %s (%s)", line, c.host, c.addr);
		send_line(&c, "@ERROR: Unknown module '%s'\n", line);
		code = RERR_STARTCLIENT;
		goto out;
	}
	code = serve_expanded(&c, m);
out:
	if (c.lock_fd >= 0)
		close(c.lock_fd);
	free(c.early_input);
	session_free(&c.s);
	return code;
}

/* The client-driven steps of serve_module, without its effects. */
static int check_module_request(struct conn *c, const struct daemon_module *m)
{
	bool read_only = m->read_only;
	int argc = 0, rc;

	c->m = m;
	if (!authenticate(c, m, &read_only, c->user, sizeof c->user))
		return RERR_STARTCLIENT;
	char **argv = read_args(c, &argc);
	if (!argv)
		return RERR_STREAMIO;
	struct ferry_opts o;
	bool *refused = options_refusals(m->refuse_options);
	rc = options_parse_refusing(&o, argc, argv, OPTS_FROM_REMOTE, refused);
	char **merged = NULL, **secluded = NULL;
	if (rc == 0 && o.secluded_args)
		rc = parse_secluded(c, &o, argc, argv, refused, &merged, &secluded);
	free(refused);
	options_free(&o);
	free(merged);
	secluded_free(secluded);
	for (int i = 0; i < argc; i++)
		free(argv[i]);
	free(argv);
	return rc == 0 ? 0 : RERR_SYNTAX;
}

int daemon_handshake_check(const struct daemon_config *cfg, const struct ferry_opts *dopts,
			   int fd_in, int fd_out)
{
	struct conn c = {.cfg = cfg, .dopts = dopts, .lock_fd = -1, .fd_in = fd_in,
			 .fd_out = fd_out};
	char line[LINE_MAX_LEN];
	int code = RERR_STARTCLIENT;

	session_init(&c.s, dopts, fd_in, fd_out);
	snprintf(c.addr, sizeof c.addr, "127.0.0.1");
	snprintf(c.host, sizeof c.host, "localhost");
	if (!read_client_greeting(&c) || !wire_read_line(&c.s.in, line, sizeof line))
		goto out;
	if (strncmp(line, EARLY_INPUT_CMD, strlen(EARLY_INPUT_CMD)) == 0 &&
	    !read_early_input(&c, line, sizeof line))
		goto out;
	if (!*line || strcmp(line, "#list") == 0) {
		send_listing(&c);
		code = 0;
		goto out;
	}
	const struct daemon_module *m = line[0] == '#' ? NULL : config_find_module(cfg, line);
	if (m)
		code = check_module_request(&c, m);
out:
	free(c.early_input);
	session_free(&c.s);
	return code;
}
