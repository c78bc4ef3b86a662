/*
 * The daemon side of rsync authentication (authenticate.c: auth_server,
 * gen_challenge, check_secret; compat.c: negotiate_daemon_auth).
 *
 * A module with `auth users` runs, in order:
 *   auth_pick_digest()     from the client's greeting list
 *                          (false -> "@ERROR: your client does not support
 *                          one of our daemon-auth checksums: <our list>")
 *   auth_digest_meets()    when `auth digest` (a minimum) is set
 *   auth_make_challenge()  -> "@RSYNCD: AUTHREQD <challenge>\n"
 *   auth_check()           on the client's one-line reply
 *                          (AUTH_DENIED -> "@ERROR: auth failed on module <m>")
 * A module whose `auth users` is unset or "" is anonymous: no challenge at
 * all (see auth_required()).
 */
#ifndef FERRY_DAEMON_AUTH_H
#define FERRY_DAEMON_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/base/checksum.h"

/* Longest user name we accept in a response (rsync has no explicit limit;
 * its line buffer is BIGPATHBUFLEN). */
#define AUTH_USER_MAX 255
/* Room for any challenge: 86 characters for sha512, plus the NUL. */
#define AUTH_CHALLENGE_SIZE (2 * CSUM_MAX_DIGEST)

enum auth_result {
	AUTH_DENIED = 0,
	AUTH_OK_RO,      /* matched a `:ro` rule: read-only whatever the module says */
	AUTH_OK_RW,      /* matched a `:rw` rule: writable whatever the module says */
	AUTH_OK_DEFAULT, /* matched a rule without option: the module's `read only` */
};

/* Tokens of a config list (`auth users`, `gid`) as rsync util1.c:conf_strtok()
 * splits them: on blanks and commas, or on commas alone (tokens trimmed)
 * when the value starts with a comma. rules_begin() starts a walk over s,
 * which it modifies; rules_next() gives the next non-empty token or NULL. */
struct rule_iter {
	char *p;
	bool commas_only;
};

void rules_begin(struct rule_iter *it, char *s);
char *rules_next(struct rule_iter *it);

/* Does `auth users` ask for authentication? (rsync: set and non-empty; a
 * value of only blanks still asks, and then nobody gets in.) */
bool auth_required(const char *auth_users);

/* The digest for this connection. client_list is the digest list of the
 * client's greeting ("" or NULL when it had none). With a list: the entry
 * we rank highest in auth_default_list() (names case-insensitive, unknown
 * names skipped), legacy false; false if none is ours. Without a list: md5
 * for protocol >= 30, else md4 with *legacy_md4 true (four zero bytes hashed
 * first). Mirrors rsync compat.c:negotiate_daemon_auth/parse_negotiate_str. */
bool auth_pick_digest(const char *client_list, int protocol, enum csum_type *out,
		      bool *legacy_md4);

/* `auth digest = NAME` (rsync 3.5): is the negotiated digest at least as
 * strong as NAME in auth_default_list() order? An empty/NULL min accepts
 * anything; an unknown NAME accepts nothing (err says why). */
bool auth_digest_meets(enum csum_type t, const char *min_name, char *err, size_t errsz);

/* A fresh challenge: base64 (no padding) of the digest of 32 bytes from
 * getrandom(); 22 characters for md4/md5, 27 sha1, 43 sha256, 86 sha512.
 * Mirrors rsync authenticate.c:gen_challenge() minus its time/pid mix-in.
 * Writes "" when no randomness is available, t is not an auth digest, or
 * outsz is too small (AUTH_CHALLENGE_SIZE always suffices): the caller must
 * then refuse the login rather than send a guessable challenge. */
void auth_make_challenge(enum csum_type t, char *out, size_t outsz);

/* Check the client's reply "<user> <base64 response>" (trailing CR/LF
 * allowed) to `challenge`, mirrors rsync authenticate.c:auth_server() and
 * check_secret():
 *  - auth_users: comma/space separated rules `name` or `@group`, wildcards
 *    allowed (rsync wildmatch), optional `:deny`, `:ro`, `:rw`; a value that
 *    starts with ',' is split on commas only (names may hold spaces). The
 *    first rule that matches decides; `@group` matches when the user is a
 *    local account one of whose groups (getgrouplist) matches the pattern.
 *  - secrets_file: `user:password` and `@group:password` lines, `#` comments;
 *    the first line for the user (and for the matching group) counts. It is
 *    opened with O_NOFOLLOW (a symlink is refused) and must be a regular
 *    file; with strict_modes it must not be readable or writable by others
 *    and, when am_root, must be owned by root.
 *  - the response is compared in constant time with auth_response(t,
 *    legacy_md4, password, challenge).
 * user_out gets the user name whenever one could be parsed (for the log
 * line, even on denial); err gets a reason fit for the log, never a
 * password ("" on success), after lines to log before it, each ended by
 * '\n' (a strict-modes complaint). Returns AUTH_DENIED on any failure. */
enum auth_result auth_check(const char *auth_users, const char *secrets_file,
			    bool strict_modes, bool am_root, enum csum_type t,
			    bool legacy_md4, const char *challenge,
			    const char *response_line, char *user_out, size_t usz,
			    char *err, size_t errsz);

/* The `auth users` rule user matches, for a login proven another way (the
 * SSH listener's public-key authentication): the first matching rule as
 * auth_check() finds it, without any password. AUTH_DENIED when no rule
 * matches, the rule is `:deny`, or the name is not one auth_check() would
 * accept. */
enum auth_result auth_user_rule(const char *auth_users, const char *user);

#endif
