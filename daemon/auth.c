/*
 * Daemon authentication, server side: digest choice, challenge, and the
 * check of the client's reply against `auth users` and the secrets file
 * (rsync authenticate.c, compat.c:negotiate_daemon_auth). See auth.h.
 */
#include "daemon/auth.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/base/fdio.h"
#include "proto/base/oppath.h"
#include "proto/base/wildmatch.h"

#define CHALLENGE_RANDOM_BYTES 32
/* Longest response we read: a user, a space, and a response with room to
 * spare (sha512 gives 86 characters). */
#define RESPONSE_MAX 128
#define LINE_MAX_LEN (AUTH_USER_MAX + 1 + RESPONSE_MAX)

static void set_err(char *err, size_t errsz, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errsz, const char *fmt, ...)
{
	va_list ap;

	if (!err || errsz == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errsz, fmt, ap);
	va_end(ap);
}

bool auth_required(const char *auth_users)
{
	return auth_users && *auth_users;
}

/* Position of t in auth_default_list() (0 = strongest), -1 if absent;
 * md4-old ranks as md4. */
static int auth_rank(enum csum_type t)
{
	const char *p = auth_default_list();
	int rank = 0;

	if (t == CSUM_MD4_OLD)
		t = CSUM_MD4;
	while (*p) {
		char name[32];
		size_t n = strcspn(p, " ");
		enum csum_type u;

		if (n > 0 && n < sizeof name) {
			memcpy(name, p, n);
			name[n] = '\0';
			if (auth_parse(name, &u) == 0 && u == t)
				return rank;
			rank++;
		}
		p += n;
		p += strspn(p, " ");
	}
	return -1;
}

/* mirrors rsync compat.c:negotiate_daemon_auth() and parse_negotiate_str() */
bool auth_pick_digest(const char *client_list, int protocol, enum csum_type *out,
		      bool *legacy_md4)
{
	int best = -1;
	enum csum_type pick = CSUM_NONE;

	if (!out || !legacy_md4)
		return false;
	*legacy_md4 = false;
	if (!client_list || !*client_list) {
		/* no list in the greeting: the client can only mean the old
		 * default, md5 from protocol 30 on, md4 (seeded) before */
		if (protocol >= 30) {
			*out = CSUM_MD5;
		} else {
			*out = CSUM_MD4;
			*legacy_md4 = true;
		}
		return true;
	}
	for (const char *p = client_list; *p;) {
		p += strspn(p, " \t");
		size_t n = strcspn(p, " \t");
		char name[32];
		enum csum_type t;
		int r;

		if (n > 0 && n < sizeof name) {
			memcpy(name, p, n);
			name[n] = '\0';
			if (auth_parse(name, &t) == 0 && (r = auth_rank(t)) >= 0 &&
			    (best < 0 || r < best)) {
				best = r;
				pick = t;
			}
		}
		p += n;
	}
	if (best < 0)
		return false;
	*out = pick;
	return true;
}

/* mirrors the `auth digest` check of rsync 3.5 authenticate.c:auth_server() */
bool auth_digest_meets(enum csum_type t, const char *min_name, char *err, size_t errsz)
{
	enum csum_type floor;
	int floor_rank, got_rank;

	set_err(err, errsz, "%s", "");
	if (!min_name || !*min_name)
		return true;
	if (auth_parse(min_name, &floor) != 0 || (floor_rank = auth_rank(floor)) < 0) {
		set_err(err, errsz, "the configured 'auth digest = %s' is not a supported digest",
			min_name);
		return false;
	}
	got_rank = auth_rank(t);
	if (got_rank < 0 || got_rank > floor_rank) {
		set_err(err, errsz,
			"negotiated auth digest %s is weaker than the required 'auth digest = %s'",
			csum_name(t) ? csum_name(t) : "?", min_name);
		return false;
	}
	return true;
}

/* Fill buf from the kernel CSPRNG; false if it cannot be had. */
static bool random_bytes(uint8_t *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = getrandom(buf + got, len - got, 0);
		if (n > 0) {
			got += (size_t)n;
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else if (n < 0 && errno == ENOSYS) {
			break; /* an old kernel: try the device below */
		} else {
			return false;
		}
	}
	if (got == len)
		return true;

	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	got += fd_read_full(fd, buf + got, len - got);
	close(fd);
	return got == len;
}

/* mirrors rsync authenticate.c:gen_challenge() */
void auth_make_challenge(enum csum_type t, char *out, size_t outsz)
{
	uint8_t rnd[CHALLENGE_RANDOM_BYTES], digest[CSUM_MAX_DIGEST];
	struct csum_ctx c;

	if (!out || outsz == 0)
		return;
	out[0] = '\0';
	if (auth_rank(t) < 0 || base64_nopad_len(csum_len(t)) >= outsz)
		return;
	if (!random_bytes(rnd, sizeof rnd))
		return;
	csum_file_init(&c, t, 0);
	csum_file_update(&c, rnd, sizeof rnd);
	csum_file_final(&c, digest);
	base64_nopad(digest, csum_len(t), out, outsz);
	explicit_bzero(rnd, sizeof rnd);
}

/* ---- auth users rules ------------------------------------------------------ */

void rules_begin(struct rule_iter *it, char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	it->commas_only = *s == ',';
	it->p = it->commas_only ? s + 1 : s;
}

char *rules_next(struct rule_iter *it)
{
	static const char seps[] = " ,\t\r\n";

	while (it->commas_only && *it->p) {
		char *tok = it->p, *end = strchr(tok, ',');

		if (end) {
			*end = '\0';
			it->p = end + 1;
		} else {
			it->p = tok + strlen(tok);
		}
		while (isspace((unsigned char)*tok))
			tok++;
		end = tok + strlen(tok);
		while (end > tok && isspace((unsigned char)end[-1]))
			*--end = '\0';
		if (*tok)
			return tok;
	}
	if (it->commas_only)
		return NULL;
	it->p += strspn(it->p, seps);
	if (!*it->p)
		return NULL;
	char *tok = it->p;
	it->p += strcspn(it->p, seps);
	if (*it->p)
		*it->p++ = '\0';
	return tok;
}

/* The option after a rule's ':' as rsync reads it: 'd' for anything
 * starting with d (deny), 'r' for ro, 'w' for rw, 0 otherwise. */
static char rule_option(const char *opt)
{
	int c = tolower((unsigned char)opt[0]);

	if (c == 'd')
		return 'd';
	if (c == 'r') {
		c = tolower((unsigned char)opt[1]);
		return c == 'o' ? 'r' : c == 'w' ? 'w' : 0;
	}
	return 0;
}

/* The names of a local user's groups, primary group first. */
struct user_groups {
	bool loaded;
	size_t n;
	char **names; /* an entry is NULL for a gid without a name */
};

static void groups_free(struct user_groups *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->names[i]);
	free(g->names);
	g->names = NULL;
	g->n = 0;
}

/* getpwnam_r/getgrgid_r with a growing buffer; the result lives in *buf. */
static struct passwd *lookup_user(const char *user, struct passwd *pw, char **buf)
{
	struct passwd *res = NULL;

	for (size_t sz = 4096; sz <= (1u << 20); sz *= 2) {
		char *nb = realloc(*buf, sz);
		if (!nb)
			return NULL;
		*buf = nb;
		int rc = getpwnam_r(user, pw, *buf, sz, &res);
		if (rc != ERANGE)
			return rc == 0 ? res : NULL;
	}
	return NULL;
}

static char *group_name(gid_t gid, char **buf)
{
	struct group gr, *res = NULL;

	for (size_t sz = 4096; sz <= (1u << 20); sz *= 2) {
		char *nb = realloc(*buf, sz);
		if (!nb)
			return NULL;
		*buf = nb;
		int rc = getgrgid_r(gid, &gr, *buf, sz, &res);
		if (rc != ERANGE)
			return rc == 0 && res && res->gr_name ? strdup(res->gr_name) : NULL;
	}
	return NULL;
}

/* mirrors rsync uidlist.c:getallgroups() as auth_server() uses it: a user
 * that is not a local account has no groups. */
static void groups_load(const char *user, struct user_groups *g)
{
	struct passwd pw;
	char *buf = NULL;
	gid_t *gids = NULL;
	int ng = 32;

	g->loaded = true;
	if (!lookup_user(user, &pw, &buf))
		goto out;
	for (int tries = 0; tries < 3; tries++) {
		gid_t *ng_gids = realloc(gids, (size_t)ng * sizeof *gids);
		if (!ng_gids)
			goto out;
		gids = ng_gids;
		int want = ng;
		if (getgrouplist(pw.pw_name, pw.pw_gid, gids, &want) >= 0) {
			ng = want;
			break;
		}
		if (want <= ng || tries == 2)
			goto out;
		ng = want;
	}
	/* primary group first, as rsync */
	for (int i = 1; i < ng; i++) {
		if (gids[i] == pw.pw_gid) {
			gids[i] = gids[0];
			gids[0] = pw.pw_gid;
			break;
		}
	}
	g->names = calloc((size_t)ng, sizeof *g->names);
	if (!g->names)
		goto out;
	g->n = (size_t)ng;
	for (int i = 0; i < ng; i++)
		g->names[i] = group_name(gids[i], &buf);
out:
	free(gids);
	free(buf);
}

/* ---- secrets file ----------------------------------------------------------- */

/* Equal strings? Time depends on the lengths only, not on where they differ. */
static bool ct_equal(const char *expect, const char *got)
{
	size_t le = strlen(expect), lg = strlen(got);
	volatile unsigned char d = (unsigned char)(le != lg);

	for (size_t i = 0; i < le; i++)
		d |= (unsigned char)(expect[i] ^ (i < lg ? got[i] : 0));
	return d == 0;
}

/* Check pass against the first `user:` line and, when group is set, the
 * first `@group:` line of the secrets file. Returns true on a match; err
 * gets the reason otherwise. mirrors rsync authenticate.c:check_secret() */
static bool check_secret(const char *path, bool strict_modes, bool am_root,
			 const char *user, const char *group, enum csum_type t,
			 bool legacy_md4, const char *challenge, const char *pass,
			 char *err, size_t errsz)
{
	struct stat st;
	char expect[AUTH_CHALLENGE_SIZE + 16];
	char *line = NULL;
	size_t cap = 0;
	bool ok = false;

	if (!path || !*path) {
		set_err(err, errsz, "no secrets file");
		return false;
	}
	/* An admin path (oppath.h): a symlink planted by another user, at the
	 * leaf or in a parent directory, would otherwise make us read another
	 * file (/etc/shadow, say) as the secrets. The check is never turned
	 * off here, not even by a module's "insecure links". O_NONBLOCK: a
	 * FIFO must not hang us; it is refused below. */
	int fd = oppath_open(AT_FDCWD, path, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0, OPPATH_QUIET);
	if (fd < 0) {
		if (errno == ELOOP)
			set_err(err, errsz, "secrets file %s: %s", path, strerror(errno));
		else
			set_err(err, errsz, "no secrets file: cannot open %s: %s", path,
				strerror(errno));
		return false;
	}
	if (fstat(fd, &st) != 0) {
		set_err(err, errsz, "fstat(%s) failed: %s", path, strerror(errno));
		close(fd);
		return false;
	}
	if (!S_ISREG(st.st_mode)) {
		set_err(err, errsz, "secrets file %s is not a regular file: refused", path);
		close(fd);
		return false;
	}
	if (strict_modes && (st.st_mode & 06) != 0) {
		/* rsync logs this line, then the denial's reason (authenticate.c) */
		set_err(err, errsz, "secrets file must not be other-accessible (see strict modes "
				    "option)\nignoring secrets file");
		close(fd);
		return false;
	}
	if (strict_modes && am_root && st.st_uid != 0) {
		set_err(err, errsz, "secrets file must be owned by root when running as root (see "
				    "strict modes)\nignoring secrets file");
		close(fd);
		return false;
	}
	FILE *fh = fdopen(fd, "r");
	if (!fh) {
		set_err(err, errsz, "cannot read secrets file %s: %s", path, strerror(errno));
		close(fd);
		return false;
	}

	set_err(err, errsz, "secret not found");
	while ((user || group) && getline(&line, &cap, fh) >= 0) {
		char *s = line + strspn(line, "\r\n");
		const char **want;

		s[strcspn(s, "\r\n")] = '\0';
		if (!*s || *s == '#')
			continue;
		if (*s == '@') {
			want = &group;
			s++;
		} else {
			want = &user;
		}
		size_t n = *want ? strlen(*want) : 0;
		if (!*want || strncmp(s, *want, n) != 0 || s[n] != ':')
			continue;
		auth_response(t, legacy_md4, s + n + 1, challenge, expect, sizeof expect);
		if (expect[0] && ct_equal(expect, pass)) {
			ok = true;
			break;
		}
		set_err(err, errsz, "password mismatch");
		*want = NULL; /* only the first line for a name counts */
	}
	if (line) {
		explicit_bzero(line, cap);
		free(line);
	}
	explicit_bzero(expect, sizeof expect);
	fclose(fh);
	if (ok)
		set_err(err, errsz, "%s", "");
	return ok;
}

/* ---- the whole check ------------------------------------------------------ */

/* A user name we are willing to look up and log. */
static bool user_ok(const char *user)
{
	size_t n = strlen(user);

	if (n == 0 || n > AUTH_USER_MAX || user[0] == '#')
		return false; /* '#': would match a secrets-file comment */
	for (const char *p = user; *p; p++) {
		/* ':' would shift the secrets-file split; control bytes would
		 * forge log lines */
		if (*p == ':' || (unsigned char)*p < 0x20 || *p == 0x7f)
			return false;
	}
	return true;
}

/* The first rule of rules (a writable copy of `auth users`) that user
 * matches, by name or through one of its groups (*group then names it);
 * *opt gets the rule's option letter (rule_option). NULL when none does. */
static char *first_matching_rule(char *rules, const char *user, struct user_groups *groups,
				 const char **group, char *opt)
{
	struct rule_iter it;
	char *tok;

	rules_begin(&it, rules);
	while ((tok = rules_next(&it)) != NULL) {
		char *colon = strchr(tok, ':');

		*opt = 0;
		if (colon) {
			*colon = '\0';
			*opt = rule_option(colon + 1);
		}
		if (*tok != '@') {
			if (wildmatch(tok, user))
				return tok;
			continue;
		}
		if (!groups->loaded)
			groups_load(user, groups);
		for (size_t i = 0; i < groups->n && !*group; i++) {
			if (groups->names[i] && wildmatch(tok + 1, groups->names[i]))
				*group = groups->names[i];
		}
		if (*group)
			return tok;
	}
	return NULL;
}

enum auth_result auth_user_rule(const char *auth_users, const char *user)
{
	struct user_groups groups = { 0 };
	const char *group = NULL;
	char opt = 0;
	enum auth_result result = AUTH_DENIED;

	if (!auth_users || !user || !user_ok(user))
		return AUTH_DENIED;
	char *rules = strdup(auth_users);
	if (rules && first_matching_rule(rules, user, &groups, &group, &opt) && opt != 'd')
		result = opt == 'r' ? AUTH_OK_RO : opt == 'w' ? AUTH_OK_RW : AUTH_OK_DEFAULT;
	free(rules);
	groups_free(&groups);
	return result;
}

/* mirrors rsync authenticate.c:auth_server() from reading the response on */
enum auth_result auth_check(const char *auth_users, const char *secrets_file,
			    bool strict_modes, bool am_root, enum csum_type t,
			    bool legacy_md4, const char *challenge,
			    const char *response_line, char *user_out, size_t usz,
			    char *err, size_t errsz)
{
	char line[LINE_MAX_LEN + 1];
	struct user_groups groups = { 0 };
	const char *group = NULL;
	char opt = 0, *tok = NULL, *rules = NULL;
	enum auth_result result = AUTH_DENIED;

	if (user_out && usz)
		user_out[0] = '\0';
	set_err(err, errsz, "%s", "");
	if (auth_rank(t) < 0) {
		set_err(err, errsz, "no usable auth digest was negotiated");
		return AUTH_DENIED;
	}
	if (!challenge || !*challenge) {
		set_err(err, errsz, "no challenge was sent");
		return AUTH_DENIED;
	}
	size_t n = response_line ? strcspn(response_line, "\r\n") : 0;
	char *pass;
	if (!response_line || n > LINE_MAX_LEN ||
	    response_line[n + strspn(response_line + n, "\r\n")] != '\0') {
		set_err(err, errsz, "invalid challenge response");
		return AUTH_DENIED;
	}
	memcpy(line, response_line, n);
	line[n] = '\0';
	if ((pass = strchr(line, ' ')) == NULL) {
		set_err(err, errsz, "invalid challenge response");
		goto out;
	}
	*pass++ = '\0';
	if (!user_ok(line)) {
		set_err(err, errsz, "invalid username");
		goto out;
	}
	if (user_out) {
		if (strlen(line) >= usz) {
			set_err(err, errsz, "user name longer than the caller's buffer");
			goto out;
		}
		memcpy(user_out, line, strlen(line) + 1);
	}
	if (strlen(pass) > RESPONSE_MAX) {
		set_err(err, errsz, "invalid challenge response");
		goto out;
	}

	if (!auth_users || !(rules = strdup(auth_users))) {
		set_err(err, errsz, auth_users ? "out of memory" : "no matching rule");
		goto out;
	}
	tok = first_matching_rule(rules, line, &groups, &group, &opt);
	if (!tok)
		set_err(err, errsz, "no matching rule");
	else if (opt == 'd')
		set_err(err, errsz, "denied by rule");
	else if (check_secret(secrets_file, strict_modes, am_root, line, group, t, legacy_md4,
			      challenge, pass, err, errsz))
		result = opt == 'r' ? AUTH_OK_RO : opt == 'w' ? AUTH_OK_RW : AUTH_OK_DEFAULT;
out:
	free(rules);
	groups_free(&groups);
	explicit_bzero(line, sizeof line);
	return result;
}
