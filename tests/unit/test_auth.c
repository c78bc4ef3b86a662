/*
 * Unit tests for daemon/auth.c: digest choice, challenges, and auth_check()
 * against `auth users` rules and a secrets file (rsync authenticate.c,
 * compat.c:negotiate_daemon_auth).
 *
 * The one fixed vector (user alice, password s3cret, sha512) is the
 * exchange with a real rsync 3.5.0 client shown in docs/protocol.md
 * section 3.5; every other response is built with auth_response(), itself
 * checked against 3.5.0 in test_checksum.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/auth.h"

#define VEC_CHALLENGE \
	"8ukYCz67EPav7D41iHbZPwLjQfhKVgauRyFFnP5iCpmp//LTtObjA8jjUEEUl57JlISRwwwojk5tvXFq1xhyhA"
#define VEC_RESPONSE \
	"1BDLuaMxr+mrunWTgZGAP7scn1AVrb15OJ1w/364jbPcgSLrBGabbU1AGa1W7la6pXLgGal5B7eVVSOQYBwWFg"

static char tmpdir[64];
static char secrets[128];

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/ferry-test-auth.XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(secrets, sizeof secrets, "%s/secrets", tmpdir);
	return 0;
}

static int teardown(void **state)
{
	char path[160];
	static const char *names[] = { "secrets", "link", "fifo" };
	(void)state;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", tmpdir, names[i]);
		unlink(path);
	}
	rmdir(tmpdir);
	return 0;
}

/* (Re)write the secrets file with the given text and mode. */
static void write_secrets(const char *text, mode_t mode)
{
	unlink(secrets);
	int fd = open(secrets, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

/* Build the client's reply line for user/password as a real client does. */
static void reply(char *line, size_t sz, const char *user, const char *password,
		  enum csum_type t, bool legacy, const char *challenge)
{
	char resp[128];

	auth_response(t, legacy, password, challenge, resp, sizeof resp);
	assert_true(resp[0] != '\0');
	snprintf(line, sz, "%s %s\n", user, resp);
}

/* auth_check with strict modes on, not root, sha512, and a fresh challenge;
 * err/user copied out when asked for. */
static enum auth_result check(const char *users, const char *user, const char *password,
			      char *err, size_t errsz, char *user_out, size_t usz)
{
	char challenge[AUTH_CHALLENGE_SIZE], line[400];
	char e[256], u[AUTH_USER_MAX + 1];

	auth_make_challenge(CSUM_SHA512, challenge, sizeof challenge);
	reply(line, sizeof line, user, password, CSUM_SHA512, false, challenge);
	enum auth_result r = auth_check(users, secrets, true, false, CSUM_SHA512, false,
					challenge, line, u, sizeof u, e, sizeof e);
	if (err)
		snprintf(err, errsz, "%s", e);
	if (user_out && usz) {
		size_t n = strlen(u) < usz ? strlen(u) : usz - 1;
		memcpy(user_out, u, n);
		user_out[n] = '\0';
	}
	if (r != AUTH_DENIED)
		assert_string_equal(e, "");
	return r;
}

/* ---- digest choice ------------------------------------------------------ */

static void test_pick_digest(void **state)
{
	enum csum_type t;
	bool legacy = true;
	(void)state;

	/* what rsync 3.5.0 sends */
	assert_true(auth_pick_digest("sha512 sha256 sha1 md5 md4", 32, &t, &legacy));
	assert_int_equal(t, CSUM_SHA512);
	assert_false(legacy);
	/* what 3.2.x without OpenSSL sends */
	legacy = true;
	assert_true(auth_pick_digest("md5 md4", 31, &t, &legacy));
	assert_int_equal(t, CSUM_MD5);
	assert_false(legacy);
	/* no list, protocol 31 (rsync 3.1-3.2.6): md5 */
	legacy = true;
	assert_true(auth_pick_digest("", 31, &t, &legacy));
	assert_int_equal(t, CSUM_MD5);
	assert_false(legacy);
	assert_true(auth_pick_digest(NULL, 30, &t, &legacy));
	assert_int_equal(t, CSUM_MD5);
	assert_false(legacy);
	/* no list, protocol 29 (rsync 2.6-3.0): legacy md4 */
	assert_true(auth_pick_digest("", 29, &t, &legacy));
	assert_int_equal(t, CSUM_MD4);
	assert_true(legacy);
	/* md4 named in a list is plain md4, even below 30 */
	assert_true(auth_pick_digest("md4", 29, &t, &legacy));
	assert_int_equal(t, CSUM_MD4);
	assert_false(legacy);
	/* our ranking decides, not the client's order (rsync 3.5) */
	assert_true(auth_pick_digest("md4 sha1 md5", 32, &t, &legacy));
	assert_int_equal(t, CSUM_SHA1);
	/* case-insensitive, unknown names skipped, extra blanks fine */
	assert_true(auth_pick_digest("  xxh128 SHA256\tfoo  ", 32, &t, &legacy));
	assert_int_equal(t, CSUM_SHA256);
	/* nothing in common */
	t = CSUM_NONE;
	assert_false(auth_pick_digest("xxh128 none blake3", 32, &t, &legacy));
	assert_false(auth_pick_digest(" ", 32, &t, &legacy));
	assert_int_equal(t, CSUM_NONE);
}

static void test_digest_minimum(void **state)
{
	char err[200];
	(void)state;

	assert_true(auth_digest_meets(CSUM_MD4, NULL, err, sizeof err));
	assert_true(auth_digest_meets(CSUM_MD4, "", err, sizeof err));
	assert_true(auth_digest_meets(CSUM_SHA512, "sha256", err, sizeof err));
	assert_true(auth_digest_meets(CSUM_SHA256, "SHA256", err, sizeof err));
	assert_false(auth_digest_meets(CSUM_SHA1, "sha256", err, sizeof err));
	assert_non_null(strstr(err, "weaker"));
	assert_false(auth_digest_meets(CSUM_MD4_OLD, "md5", err, sizeof err));
	assert_true(auth_digest_meets(CSUM_MD4_OLD, "md4", err, sizeof err));
	/* a floor we do not know admits nobody */
	assert_false(auth_digest_meets(CSUM_SHA512, "sha3", err, sizeof err));
	assert_non_null(strstr(err, "not a supported digest"));
}

/* ---- challenges ----------------------------------------------------------- */

static void test_challenge_lengths(void **state)
{
	static const struct {
		enum csum_type t;
		size_t len;
	} want[] = {
		{ CSUM_MD4, 22 }, { CSUM_MD4_OLD, 22 }, { CSUM_MD5, 22 },
		{ CSUM_SHA1, 27 }, { CSUM_SHA256, 43 }, { CSUM_SHA512, 86 },
	};
	(void)state;

	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		char a[AUTH_CHALLENGE_SIZE], b[AUTH_CHALLENGE_SIZE];

		auth_make_challenge(want[i].t, a, sizeof a);
		auth_make_challenge(want[i].t, b, sizeof b);
		assert_int_equal(strlen(a), want[i].len);
		assert_string_not_equal(a, b); /* random each time */
		assert_int_equal(strspn(a, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
					   "0123456789+/"),
				 want[i].len);
	}
	/* not an auth digest, or no room: nothing (the caller must refuse) */
	char c[AUTH_CHALLENGE_SIZE] = "x";
	auth_make_challenge(CSUM_XXH64, c, sizeof c);
	assert_string_equal(c, "");
	strcpy(c, "x");
	auth_make_challenge(CSUM_NONE, c, sizeof c);
	assert_string_equal(c, "");
	char small[86];
	auth_make_challenge(CSUM_SHA512, small, sizeof small);
	assert_string_equal(small, "");
	char fits[87];
	auth_make_challenge(CSUM_SHA512, fits, sizeof fits);
	assert_int_equal(strlen(fits), 86);
}

/* ---- auth_check ------------------------------------------------------------ */

static void test_known_vector(void **state)
{
	char user[64], err[256];
	(void)state;

	write_secrets("alice:s3cret\n", 0600);
	assert_int_equal(auth_check("alice", secrets, true, false, CSUM_SHA512, false,
				    VEC_CHALLENGE, "alice " VEC_RESPONSE "\n", user, sizeof user,
				    err, sizeof err),
			 AUTH_OK_DEFAULT);
	assert_string_equal(user, "alice");
	assert_string_equal(err, "");
	/* CRLF and no line end at all are fine too */
	assert_int_equal(auth_check("alice", secrets, true, false, CSUM_SHA512, false,
				    VEC_CHALLENGE, "alice " VEC_RESPONSE "\r\n", user,
				    sizeof user, err, sizeof err),
			 AUTH_OK_DEFAULT);
	assert_int_equal(auth_check("alice", secrets, true, false, CSUM_SHA512, false,
				    VEC_CHALLENGE, "alice " VEC_RESPONSE, NULL, 0, NULL, 0),
			 AUTH_OK_DEFAULT);
	/* one character off */
	assert_int_equal(auth_check("alice", secrets, true, false, CSUM_SHA512, false,
				    VEC_CHALLENGE, "alice " VEC_RESPONSE "A", user, sizeof user,
				    err, sizeof err),
			 AUTH_DENIED);
	assert_string_equal(err, "password mismatch");
	/* the same response to another challenge */
	assert_int_equal(auth_check("alice", secrets, true, false, CSUM_SHA512, false,
				    "x" VEC_CHALLENGE, "alice " VEC_RESPONSE, user, sizeof user,
				    err, sizeof err),
			 AUTH_DENIED);
	/* or under another digest */
	assert_int_equal(auth_check("alice", secrets, true, false, CSUM_SHA256, false,
				    VEC_CHALLENGE, "alice " VEC_RESPONSE, user, sizeof user,
				    err, sizeof err),
			 AUTH_DENIED);
}

static void test_each_digest(void **state)
{
	static const struct {
		enum csum_type t;
		bool legacy;
	} digests[] = {
		{ CSUM_SHA512, false }, { CSUM_SHA256, false }, { CSUM_SHA1, false },
		{ CSUM_MD5, false },    { CSUM_MD4, false },    { CSUM_MD4, true },
	};
	(void)state;

	write_secrets("# ferry test\nbob:other\nalice:s3cret\n", 0600);
	for (size_t i = 0; i < sizeof digests / sizeof digests[0]; i++) {
		char challenge[AUTH_CHALLENGE_SIZE], line[256], err[256];
		enum csum_type t = digests[i].t;
		bool legacy = digests[i].legacy;

		print_message("  %s%s\n", csum_name(t), legacy ? " (legacy)" : "");
		auth_make_challenge(t, challenge, sizeof challenge);
		reply(line, sizeof line, "alice", "s3cret", t, legacy, challenge);
		assert_int_equal(auth_check("alice bob", secrets, true, false, t, legacy,
					    challenge, line, NULL, 0, err, sizeof err),
				 AUTH_OK_DEFAULT);
		/* wrong password */
		reply(line, sizeof line, "alice", "s3cre", t, legacy, challenge);
		assert_int_equal(auth_check("alice bob", secrets, true, false, t, legacy,
					    challenge, line, NULL, 0, err, sizeof err),
				 AUTH_DENIED);
		assert_string_equal(err, "password mismatch");
	}

	/* legacy md4 and plain md4 are different answers */
	char challenge[AUTH_CHALLENGE_SIZE], line[256];
	auth_make_challenge(CSUM_MD4, challenge, sizeof challenge);
	reply(line, sizeof line, "alice", "s3cret", CSUM_MD4, true, challenge);
	assert_int_equal(auth_check("alice", secrets, true, false, CSUM_MD4, false, challenge,
				    line, NULL, 0, NULL, 0),
			 AUTH_DENIED);
	/* a transfer checksum is not an auth digest */
	assert_int_equal(auth_check("alice", secrets, true, false, CSUM_XXH128, false,
				    challenge, line, NULL, 0, NULL, 0),
			 AUTH_DENIED);
}

static void test_unknown_user(void **state)
{
	char err[256], user[64];
	(void)state;

	write_secrets("alice:s3cret\n", 0600);
	/* not in auth users */
	assert_int_equal(check("alice", "bob", "s3cret", err, sizeof err, user, sizeof user),
			 AUTH_DENIED);
	assert_string_equal(err, "no matching rule");
	assert_string_equal(user, "bob"); /* still reported, for the log line */
	/* in auth users but without a secret */
	assert_int_equal(check("*", "mallory", "s3cret", err, sizeof err, NULL, 0),
			 AUTH_DENIED);
	assert_string_equal(err, "secret not found");
	/* a prefix of a listed name is not that name */
	assert_int_equal(check("*", "alic", "s3cret", err, sizeof err, NULL, 0), AUTH_DENIED);
	write_secrets("alic:x\nalice:s3cret\n", 0600);
	assert_int_equal(check("*", "alice", "s3cret", NULL, 0, NULL, 0), AUTH_OK_DEFAULT);
	/* empty / blank auth users: nobody */
	assert_int_equal(check("", "alice", "s3cret", err, sizeof err, NULL, 0), AUTH_DENIED);
	assert_int_equal(check(" , ", "alice", "s3cret", err, sizeof err, NULL, 0),
			 AUTH_DENIED);
	assert_string_equal(err, "no matching rule");
	assert_false(auth_required(NULL));
	assert_false(auth_required(""));
	assert_true(auth_required(" "));
	assert_true(auth_required("alice"));
}

static void test_rule_options(void **state)
{
	char err[256];
	const char *users = "bob:deny alice:ro carol:rw dave erin:RW frank:Deny gina:bogus";
	(void)state;

	write_secrets("alice:pa\nbob:pb\ncarol:pc\ndave:pd\nerin:pe\nfrank:pf\ngina:pg\n",
		      0600);
	assert_int_equal(check(users, "bob", "pb", err, sizeof err, NULL, 0), AUTH_DENIED);
	assert_string_equal(err, "denied by rule");
	assert_int_equal(check(users, "alice", "pa", NULL, 0, NULL, 0), AUTH_OK_RO);
	assert_int_equal(check(users, "carol", "pc", NULL, 0, NULL, 0), AUTH_OK_RW);
	assert_int_equal(check(users, "dave", "pd", NULL, 0, NULL, 0), AUTH_OK_DEFAULT);
	assert_int_equal(check(users, "erin", "pe", NULL, 0, NULL, 0), AUTH_OK_RW);
	assert_int_equal(check(users, "frank", "pf", NULL, 0, NULL, 0), AUTH_DENIED);
	/* an option rsync does not know is ignored, as rsync */
	assert_int_equal(check(users, "gina", "pg", NULL, 0, NULL, 0), AUTH_OK_DEFAULT);
	/* :ro still needs the right password */
	assert_int_equal(check(users, "alice", "pb", err, sizeof err, NULL, 0), AUTH_DENIED);
	assert_string_equal(err, "password mismatch");

	/* first match wins */
	assert_int_equal(check("alice:deny alice:rw", "alice", "pa", NULL, 0, NULL, 0),
			 AUTH_DENIED);
	assert_int_equal(check("a*:ro alice:rw", "alice", "pa", NULL, 0, NULL, 0), AUTH_OK_RO);
	assert_int_equal(check("alice:rw a*:ro", "alice", "pa", NULL, 0, NULL, 0), AUTH_OK_RW);
	/* wildcards, commas and spaces */
	assert_int_equal(check("x,  ?ave,y", "dave", "pd", NULL, 0, NULL, 0), AUTH_OK_DEFAULT);
	assert_int_equal(check("[a-c]*:ro", "carol", "pc", NULL, 0, NULL, 0), AUTH_OK_RO);
	assert_int_equal(check("[a-c]*:ro", "dave", "pd", NULL, 0, NULL, 0), AUTH_DENIED);
	/* a leading comma splits on commas only (rsync 3.5, CVE-2026-70463): the
	 * rule "alice smith" is one name and matches neither alice nor smith */
	assert_int_equal(check(",alice smith:ro", "alice", "pa", err, sizeof err, NULL, 0),
			 AUTH_DENIED);
	assert_string_equal(err, "no matching rule");
	assert_int_equal(check(" , dave:ro ,  alice ", "dave", "pd", NULL, 0, NULL, 0),
			 AUTH_OK_RO);
	assert_int_equal(check(" , dave:ro ,  alice ", "alice", "pa", NULL, 0, NULL, 0),
			 AUTH_OK_DEFAULT);
}

/* A local account and one of its group names, for the @group cases. */
static bool local_user_group(char *user, size_t usz, char *group, size_t gsz)
{
	struct passwd *pw = getpwuid(0);
	struct group *gr;

	if (!pw || !(gr = getgrgid(pw->pw_gid)))
		return false;
	snprintf(user, usz, "%s", pw->pw_name);
	snprintf(group, gsz, "%s", gr->gr_name);
	return true;
}

static void test_groups(void **state)
{
	char user[64], group[64], text[256], rule[200], err[256];
	(void)state;

	if (!local_user_group(user, sizeof user, group, sizeof group))
		skip();
	snprintf(text, sizeof text, "%s:userpw\n@%s:grouppw\nalice:s3cret\n", user, group);
	write_secrets(text, 0600);

	/* member: user password or group password */
	snprintf(rule, sizeof rule, "@%s:rw", group);
	assert_int_equal(check(rule, user, "userpw", NULL, 0, NULL, 0), AUTH_OK_RW);
	assert_int_equal(check(rule, user, "grouppw", NULL, 0, NULL, 0), AUTH_OK_RW);
	assert_int_equal(check(rule, user, "nope", err, sizeof err, NULL, 0), AUTH_DENIED);
	assert_string_equal(err, "password mismatch");
	/* group patterns take wildcards */
	snprintf(rule, sizeof rule, "@%.1s*", group);
	assert_int_equal(check(rule, user, "grouppw", NULL, 0, NULL, 0), AUTH_OK_DEFAULT);
	/* a group rule denies its members before a later user rule */
	snprintf(rule, sizeof rule, "@%s:deny %s:rw", group, user);
	assert_int_equal(check(rule, user, "userpw", err, sizeof err, NULL, 0), AUTH_DENIED);
	assert_string_equal(err, "denied by rule");
	/* a user rule does not unlock the group password */
	assert_int_equal(check(user, user, "grouppw", NULL, 0, NULL, 0), AUTH_DENIED);
	/* not a local account: member of nothing */
	snprintf(rule, sizeof rule, "@%s alice", group);
	assert_int_equal(check(rule, "alice", "s3cret", NULL, 0, NULL, 0), AUTH_OK_DEFAULT);
	snprintf(rule, sizeof rule, "@%s", group);
	assert_int_equal(check(rule, "alice", "s3cret", err, sizeof err, NULL, 0),
			 AUTH_DENIED);
	assert_string_equal(err, "no matching rule");
	assert_int_equal(check(rule, "alice", "grouppw", NULL, 0, NULL, 0), AUTH_DENIED);
	/* a group that does not exist */
	assert_int_equal(check("@no-such-group-ferry", user, "userpw", NULL, 0, NULL, 0),
			 AUTH_DENIED);
}

static void test_bad_user_names(void **state)
{
	char err[256], user[64];
	(void)state;

	/* a comment line must never serve as a password entry */
	write_secrets("#x:pw\n# alice:s3cret\nalice:s3cret\n", 0600);
	assert_int_equal(check("*", "#x", "pw", err, sizeof err, user, sizeof user),
			 AUTH_DENIED);
	assert_string_equal(err, "invalid username");
	assert_string_equal(user, "");
	assert_int_equal(check("#x", "#x", "pw", err, sizeof err, NULL, 0), AUTH_DENIED);
	/* ':' would move the user/password split */
	write_secrets("alice:x:rest\n", 0600);
	assert_int_equal(check("*", "alice:x", "rest", err, sizeof err, NULL, 0), AUTH_DENIED);
	assert_string_equal(err, "invalid username");
	assert_int_equal(check("*", "alice", "x:rest", NULL, 0, NULL, 0), AUTH_OK_DEFAULT);
	/* control bytes, too long */
	assert_int_equal(check("*", "al\x01ice", "x:rest", err, sizeof err, NULL, 0),
			 AUTH_DENIED);
	char longname[AUTH_USER_MAX + 2];
	memset(longname, 'a', sizeof longname - 1);
	longname[sizeof longname - 1] = '\0';
	assert_int_equal(check("*", longname, "x", err, sizeof err, NULL, 0), AUTH_DENIED);
	assert_string_equal(err, "invalid username");
}

static void test_bad_response_lines(void **state)
{
	char err[256], big[2000];
	static const char *bad[] = {
		"", "\n", "alice", "alice\n", " " VEC_RESPONSE, "alice " VEC_RESPONSE "\nbob x",
		"alice " VEC_RESPONSE VEC_RESPONSE,
	};
	(void)state;

	write_secrets("alice:s3cret\n:" "s3cret\n", 0600);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(auth_check("*", secrets, true, false, CSUM_SHA512, false,
					    VEC_CHALLENGE, bad[i], NULL, 0, err, sizeof err),
				 AUTH_DENIED);
		assert_true(strcmp(err, "invalid challenge response") == 0 ||
			    strcmp(err, "invalid username") == 0);
	}
	assert_int_equal(auth_check("*", secrets, true, false, CSUM_SHA512, false,
				    VEC_CHALLENGE, NULL, NULL, 0, err, sizeof err),
			 AUTH_DENIED);
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	big[5] = ' ';
	assert_int_equal(auth_check("*", secrets, true, false, CSUM_SHA512, false,
				    VEC_CHALLENGE, big, NULL, 0, err, sizeof err),
			 AUTH_DENIED);
	assert_string_equal(err, "invalid challenge response");
	/* no challenge sent: nothing can be right */
	assert_int_equal(auth_check("*", secrets, true, false, CSUM_SHA512, false, "",
				    "alice " VEC_RESPONSE, NULL, 0, err, sizeof err),
			 AUTH_DENIED);
	/* user buffer too small for the name: refused, not truncated */
	char u[3];
	assert_int_equal(auth_check("*", secrets, true, false, CSUM_SHA512, false,
				    VEC_CHALLENGE, "alice " VEC_RESPONSE, u, sizeof u, err,
				    sizeof err),
			 AUTH_DENIED);
}

static void test_secrets_file_format(void **state)
{
	char err[256];
	(void)state;

	/* comments, blank lines, CRLF, spaces inside the password */
	write_secrets("# users\n\n\r\nbob:b\r\nalice:pa ss:wd \r\n", 0600);
	assert_int_equal(check("*", "alice", "pa ss:wd ", NULL, 0, NULL, 0), AUTH_OK_DEFAULT);
	assert_int_equal(check("*", "bob", "b", NULL, 0, NULL, 0), AUTH_OK_DEFAULT);
	/* only the first line for a user counts */
	write_secrets("alice:wrong\nalice:s3cret\n", 0600);
	assert_int_equal(check("*", "alice", "s3cret", err, sizeof err, NULL, 0), AUTH_DENIED);
	assert_string_equal(err, "password mismatch");
	/* no trailing newline, empty password */
	write_secrets("alice:s3cret\nbob:", 0600);
	assert_int_equal(check("*", "bob", "", NULL, 0, NULL, 0), AUTH_OK_DEFAULT);
	/* a long line is one line: its tail is not a new entry */
	char text[3000];
	memset(text, 'x', sizeof text);
	memcpy(text, "carol:", 6);
	memcpy(text + 1500, "alice:evil", 10);
	strcpy(text + sizeof text - 20, "\nalice:s3cret\n");
	write_secrets(text, 0600);
	assert_int_equal(check("*", "alice", "evil", NULL, 0, NULL, 0), AUTH_DENIED);
	assert_int_equal(check("*", "alice", "s3cret", NULL, 0, NULL, 0), AUTH_OK_DEFAULT);
}

static void test_strict_modes(void **state)
{
	char challenge[AUTH_CHALLENGE_SIZE], line[256], err[256];
	(void)state;

	auth_make_challenge(CSUM_MD5, challenge, sizeof challenge);
	reply(line, sizeof line, "alice", "s3cret", CSUM_MD5, false, challenge);

	/* other-readable: refused with strict modes, accepted without */
	write_secrets("alice:s3cret\n", 0644);
	assert_int_equal(auth_check("alice", secrets, true, false, CSUM_MD5, false, challenge,
				    line, NULL, 0, err, sizeof err),
			 AUTH_DENIED);
	assert_string_equal(err, "secrets file must not be other-accessible (see strict modes "
				 "option)\nignoring secrets file");
	assert_int_equal(auth_check("alice", secrets, false, false, CSUM_MD5, false, challenge,
				    line, NULL, 0, err, sizeof err),
			 AUTH_OK_DEFAULT);
	/* other-writable too; group bits and other-execute are not looked at */
	write_secrets("alice:s3cret\n", 0602);
	assert_int_equal(auth_check("alice", secrets, true, false, CSUM_MD5, false, challenge,
				    line, NULL, 0, err, sizeof err),
			 AUTH_DENIED);
	write_secrets("alice:s3cret\n", 0661);
	assert_int_equal(auth_check("alice", secrets, true, false, CSUM_MD5, false, challenge,
				    line, NULL, 0, err, sizeof err),
			 AUTH_OK_DEFAULT);

	/* running as root: the file must be owned by root */
	write_secrets("alice:s3cret\n", 0600);
	if (geteuid() == 0) {
		assert_int_equal(auth_check("alice", secrets, true, true, CSUM_MD5, false,
					    challenge, line, NULL, 0, err, sizeof err),
				 AUTH_OK_DEFAULT);
		if (chown(secrets, 65534, 65534) != 0)
			return; /* cannot give it away here */
	}
	assert_int_equal(auth_check("alice", secrets, true, true, CSUM_MD5, false, challenge,
				    line, NULL, 0, err, sizeof err),
			 AUTH_DENIED);
	assert_string_equal(err, "secrets file must be owned by root when running as root (see "
				 "strict modes)\nignoring secrets file");
	assert_int_equal(auth_check("alice", secrets, false, true, CSUM_MD5, false, challenge,
				    line, NULL, 0, err, sizeof err),
			 AUTH_OK_DEFAULT);
}

static void test_secrets_file_refused(void **state)
{
	char challenge[AUTH_CHALLENGE_SIZE], line[256], err[256], link[160], fifo[160];
	(void)state;

	auth_make_challenge(CSUM_SHA1, challenge, sizeof challenge);
	reply(line, sizeof line, "alice", "s3cret", CSUM_SHA1, false, challenge);
	write_secrets("alice:s3cret\n", 0600);

	/* our own symlink to a good secrets file is followed (rsync 3.5.0:
	 * links owned by root or the euid are trusted) ... */
	snprintf(link, sizeof link, "%s/link", tmpdir);
	unlink(link);
	assert_int_equal(symlink(secrets, link), 0);
	assert_int_equal(auth_check("alice", link, false, false, CSUM_SHA1, false, challenge,
				    line, NULL, 0, err, sizeof err),
			 AUTH_OK_DEFAULT);
	/* ... one planted by another user is refused, strict or not (only
	 * root can give a link away to try it) */
	if (geteuid() == 0 && lchown(link, 65534, 65534) == 0) {
		for (int strict = 0; strict <= 1; strict++) {
			assert_int_equal(auth_check("alice", link, strict, false, CSUM_SHA1,
						    false, challenge, line, NULL, 0, err,
						    sizeof err),
					 AUTH_DENIED);
			assert_non_null(strstr(err, "symbolic link"));
		}
	}
	/* the real file works */
	assert_int_equal(auth_check("alice", secrets, true, false, CSUM_SHA1, false, challenge,
				    line, NULL, 0, err, sizeof err),
			 AUTH_OK_DEFAULT);
	/* missing or unset */
	assert_int_equal(auth_check("alice", "/nonexistent/ferry-secrets", true, false,
				    CSUM_SHA1, false, challenge, line, NULL, 0, err, sizeof err),
			 AUTH_DENIED);
	assert_non_null(strstr(err, "no secrets file"));
	assert_int_equal(auth_check("alice", NULL, true, false, CSUM_SHA1, false, challenge,
				    line, NULL, 0, err, sizeof err),
			 AUTH_DENIED);
	assert_string_equal(err, "no secrets file");
	/* a directory or a FIFO is refused without blocking */
	assert_int_equal(auth_check("alice", tmpdir, false, false, CSUM_SHA1, false, challenge,
				    line, NULL, 0, err, sizeof err),
			 AUTH_DENIED);
	snprintf(fifo, sizeof fifo, "%s/fifo", tmpdir);
	unlink(fifo);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(auth_check("alice", fifo, false, false, CSUM_SHA1, false, challenge,
				    line, NULL, 0, err, sizeof err),
			 AUTH_DENIED);
	assert_non_null(strstr(err, "not a regular file"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pick_digest),
		cmocka_unit_test(test_digest_minimum),
		cmocka_unit_test(test_challenge_lengths),
		cmocka_unit_test(test_known_vector),
		cmocka_unit_test(test_each_digest),
		cmocka_unit_test(test_unknown_user),
		cmocka_unit_test(test_rule_options),
		cmocka_unit_test(test_groups),
		cmocka_unit_test(test_bad_user_names),
		cmocka_unit_test(test_bad_response_lines),
		cmocka_unit_test(test_secrets_file_format),
		cmocka_unit_test(test_strict_modes),
		cmocka_unit_test(test_secrets_file_refused),
	};
	return cmocka_run_group_tests_name("auth", tests, setup, teardown);
}
