/*
 * `hosts allow` / `hosts deny` matching and client address/name lookup
 * (rsync access.c, clientname.c). See access.h for the pattern syntax.
 */
#include "daemon/access.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "proto/base/wildmatch.h"

/* glibc provides innetgr(); elsewhere an @netgroup pattern matches nothing. */
#if defined(__GLIBC__) && !defined(FERRY_NO_INNETGR)
#define HAVE_INNETGR 1
#endif

#define LIST_SEPS " ,\t\r\n"
#define ADDR_TEXT_MAX (INET6_ADDRSTRLEN + IF_NAMESIZE + 2)

/* An address parsed from text: 4 (IPv4) or 16 (IPv6) bytes used. */
struct ipaddr {
	int family;
	uint8_t b[16];
	uint32_t scope; /* IPv6 zone index, 0 when none */
};

static size_t addr_len(int family)
{
	return family == AF_INET ? 4 : 16;
}

/* A numeric address, parsed as rsync parses both the client address and a
 * pattern (getaddrinfo with AI_NUMERICHOST, so glibc's inet_aton forms such
 * as "127.1" are IPv4 too, and "fe80::1%eth0" carries its zone). False if
 * it is not a numeric address; no DNS query is ever made. */
static bool parse_ip(const char *s, struct ipaddr *a)
{
	struct addrinfo hints, *res = NULL;
	bool ok = false;

	memset(a, 0, sizeof *a);
	if (!s || !*s || strlen(s) >= ADDR_TEXT_MAX)
		return false;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST;
	if (getaddrinfo(s, NULL, &hints, &res) != 0 || !res || !res->ai_addr)
		goto out;
	if (res->ai_family == AF_INET && res->ai_addrlen >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *s4 = (const void *)res->ai_addr;
		a->family = AF_INET;
		memcpy(a->b, &s4->sin_addr, 4);
		ok = true;
	} else if (res->ai_family == AF_INET6 &&
		   res->ai_addrlen >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *s6 = (const void *)res->ai_addr;
		a->family = AF_INET6;
		memcpy(a->b, &s6->sin6_addr, 16);
		a->scope = s6->sin6_scope_id;
		ok = true;
	}
out:
	if (res)
		freeaddrinfo(res);
	return ok;
}

static bool is_v4mapped(const struct ipaddr *a)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return a->family == AF_INET6 && memcmp(a->b, prefix, sizeof prefix) == 0;
}

static void v4_to_mapped(struct ipaddr *a)
{
	uint8_t v4[4];

	memcpy(v4, a->b, 4);
	memset(a->b, 0, 10);
	a->b[10] = a->b[11] = 0xff;
	memcpy(a->b + 12, v4, 4);
	a->family = AF_INET6;
	a->scope = 0;
}

static void mapped_to_v4(struct ipaddr *a)
{
	memmove(a->b, a->b + 12, 4);
	memset(a->b + 4, 0, 12);
	a->family = AF_INET;
}

/* Bring client and pattern addresses into one family; false if they cannot
 * be the same host. An IPv4 pattern matches an IPv4-mapped client, and a
 * pattern inside ::ffff:0:0/96 matches a plain IPv4 client. */
static bool same_family(struct ipaddr *client, const struct ipaddr *pat)
{
	if (client->family == pat->family)
		return true;
	if (pat->family == AF_INET && is_v4mapped(client)) {
		mapped_to_v4(client);
		return true;
	}
	if (client->family == AF_INET && is_v4mapped(pat)) {
		v4_to_mapped(client);
		return true;
	}
	return false;
}

/* The part after '/': a netmask in the pattern's family (any bits, as
 * rsync), else a prefix length read as rsync reads it (strtol, whole string,
 * 0..32 / 0..128). False if malformed. Mirrors the mask half of rsync
 * access.c:match_address(). */
static bool parse_mask(const char *m, int family, uint8_t mask[16])
{
	size_t alen = addr_len(family);
	char *end = NULL;
	long bits;

	memset(mask, 0, 16);
	if (inet_pton(family, m, mask) == 1)
		return true;
	memset(mask, 0, 16);
	errno = 0;
	bits = strtol(m, &end, 10);
	if (!*m || *end || errno || bits < 0 || bits > (long)(alen * 8))
		return false;
	for (size_t i = 0; i < alen; i++) {
		long take = bits >= 8 ? 8 : bits;
		mask[i] = (uint8_t)(0xff00u >> take);
		bits -= take;
	}
	return true;
}

/* Does the address pattern tok (addr, addr/bits, addr/mask) match addr?
 * A token that is not address-shaped, or that does not parse, does not.
 * Mirrors rsync access.c:match_address(). */
static bool match_address(const char *addr, const char *tok)
{
	char buf[2 * ADDR_TEXT_MAX];
	struct ipaddr client, pat;
	uint8_t mask[16];
	size_t n = strlen(tok);

	if (!addr || !*addr || n >= sizeof buf)
		return false;
	memcpy(buf, tok, n + 1);
	char *slash = strchr(buf, '/');
	if (slash)
		*slash++ = '\0';
	/* a hostname, not an address: the name matcher's business */
	if (buf[strspn(buf, ".0123456789")] != '\0' && !strchr(buf, ':'))
		return false;
	if (!parse_ip(addr, &client) || !parse_ip(buf, &pat))
		return false;
	if (!same_family(&client, &pat))
		return false;
	if (pat.family == AF_INET6 && pat.scope && pat.scope != client.scope)
		return false;
	if (slash) {
		if (!parse_mask(slash, pat.family, mask))
			return false;
	} else {
		memset(mask, 0xff, sizeof mask);
	}
	uint8_t diff = 0;
	for (size_t i = 0; i < addr_len(pat.family); i++)
		diff |= (uint8_t)((client.b[i] ^ pat.b[i]) & mask[i]);
	return diff == 0;
}

/* What is wrong with an address-shaped pattern, in rsync's words
 * (access.c: match_address, which logs them each time a client is
 * checked), into why; false if nothing is. Names, wildcards and
 * netgroups are never wrong here. */
static bool address_problem(const char *tok, char *why, size_t wsz)
{
	char buf[2 * ADDR_TEXT_MAX];
	struct ipaddr pat;
	uint8_t mask[16];
	size_t n = strlen(tok);

	if (n >= sizeof buf) {
		if (tok[strspn(tok, ".0123456789/")] != '\0' && !strchr(tok, ':'))
			return false;
		snprintf(why, wsz, "error matching address %.60s...: too long", tok);
		return true;
	}
	memcpy(buf, tok, n + 1);
	char *slash = strchr(buf, '/');
	if (slash)
		*slash++ = '\0';
	if (buf[strspn(buf, ".0123456789")] != '\0' && !strchr(buf, ':'))
		return false;
	if (!parse_ip(buf, &pat)) {
		struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST};
		struct addrinfo *res = NULL;
		int gai = getaddrinfo(buf, NULL, &hints, &res);
		if (res)
			freeaddrinfo(res);
		snprintf(why, wsz, "error matching address %s: %s", tok,
			 gai ? gai_strerror(gai) : "not a numeric address");
		return true;
	}
	if (slash && !parse_mask(slash, pat.family, mask)) {
		snprintf(why, wsz, "malformed mask in %s", tok);
		return true;
	}
	return false;
}

size_t access_list_problems(const char *list, void (*warn)(void *ctx, const char *why),
			    void *ctx)
{
	char *copy = list ? strdup(list) : NULL;
	char why[600];
	size_t found = 0;
	char *save = NULL;

	if (!copy)
		return 0;
	for (char *tok = strtok_r(copy, LIST_SEPS, &save); tok; tok = strtok_r(NULL, LIST_SEPS, &save)) {
		if (address_problem(tok, why, sizeof why)) {
			found++;
			warn(ctx, why);
		}
	}
	free(copy);
	return found;
}

/* Does a resolver answer equal the client address (mapped forms equal)? */
static bool sockaddr_is(const struct sockaddr *sa, const struct ipaddr *client)
{
	struct ipaddr res, c = *client;

	memset(&res, 0, sizeof res);
	if (sa->sa_family == AF_INET) {
		res.family = AF_INET;
		memcpy(res.b, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		res.family = AF_INET6;
		memcpy(res.b, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
	} else {
		return false;
	}
	if (!same_family(&c, &res))
		return false;
	return memcmp(c.b, res.b, addr_len(res.family)) == 0;
}

static void lower_copy(char *dst, const char *src)
{
	while (*src)
		*dst++ = (char)tolower((unsigned char)*src++);
	*dst = '\0';
}

static bool is_undetermined(const char *host)
{
	return host && strcmp(host, ACCESS_NAME_UNDETERMINED) == 0;
}

/* Name side of one pattern: @netgroup, wildcard on the client's name, then
 * (forward lookup) resolve a plain hostname and compare addresses.
 * lhost is the client's name in lower case (or NULL when none is known);
 * ltok is tok in lower case. Mirrors rsync access.c:match_hostname(). */
static bool match_name(const char *tok, const char *ltok, const char *host,
		       const char *lhost, const char *addr, bool fwd, bool deny,
		       char *name_out, size_t nsz)
{
	struct ipaddr client;
	struct addrinfo hints, *res = NULL;
	bool hit = false;

	if (tok[0] == '@' && tok[1]) {
#ifdef HAVE_INNETGR
		/* netgroup names are case-sensitive: the token as written */
		return lhost && innetgr(tok + 1, host, NULL, NULL) == 1;
#else
		return false;
#endif
	}
	if (lhost && wildmatch(ltok, lhost))
		return true;
	if (!fwd)
		return false;
	/* only a plain hostname is looked up: not an address, no wildcard */
	if (ltok[strspn(ltok, ".0123456789")] == '\0' || ltok[strcspn(ltok, ":/*?[")] != '\0')
		return false;
	if (!addr || !parse_ip(addr, &client))
		return false;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(tok, NULL, &hints, &res) != 0 || !res) {
		/* rsync 3.5 (CVE-2026-70452): a deny token we cannot resolve
		 * fails closed; an allow token simply does not match. */
		if (res)
			freeaddrinfo(res);
		return deny;
	}
	for (const struct addrinfo *ai = res; ai && !hit; ai = ai->ai_next)
		hit = ai->ai_addr && sockaddr_is(ai->ai_addr, &client);
	freeaddrinfo(res);
	if (hit && is_undetermined(host) && name_out && strlen(tok) < nsz)
		memcpy(name_out, tok, strlen(tok) + 1);
	return hit;
}

/* mirrors rsync access.c:access_match() */
bool access_list_match(const char *list, const char *addr, const char *hostname,
		       bool forward_lookup, bool deny, char *name_out, size_t nsz)
{
	if (!list || !*list)
		return false;
	size_t llen = strlen(list);
	char *copy = strdup(list);
	char *ltok = malloc(llen + 1);
	char *lhost = NULL;
	bool hit = false;

	if (hostname && *hostname && (lhost = malloc(strlen(hostname) + 1)) != NULL)
		lower_copy(lhost, hostname);
	if (!copy || !ltok || (hostname && *hostname && !lhost)) {
		hit = deny; /* out of memory: never let a deny list fail open */
		goto out;
	}
	char *save = NULL;
	for (char *tok = strtok_r(copy, LIST_SEPS, &save); tok && !hit;
	     tok = strtok_r(NULL, LIST_SEPS, &save)) {
		lower_copy(ltok, tok);
		hit = match_name(tok, ltok, hostname, lhost, addr, forward_lookup, deny,
				 name_out, nsz) ||
		      match_address(addr, tok);
	}
out:
	free(copy);
	free(ltok);
	free(lhost);
	return hit;
}

/* mirrors rsync access.c:allow_access() */
bool access_check(const char *allow_list, const char *deny_list, const char *addr,
		  const char *hostname, bool forward_lookup, char *name_out, size_t nsz)
{
	if (allow_list && !*allow_list)
		allow_list = NULL;
	if (deny_list && !*deny_list)
		deny_list = NULL;

	/* An allow match always wins, even over a deny match. */
	if (allow_list) {
		if (access_list_match(allow_list, addr, hostname, forward_lookup, false,
				      name_out, nsz))
			return true;
		if (!deny_list)
			return false;
	}
	if (deny_list && access_list_match(deny_list, addr, hostname, forward_lookup, true,
					   name_out, nsz))
		return false;
	return true;
}

bool access_allowed(const char *allow_list, const char *deny_list, const char *addr,
		    const char *hostname)
{
	return access_check(allow_list, deny_list, addr, hostname, true, NULL, 0);
}

/* ---- the client's address and name --------------------------------------- */

static void set_str(char *dst, size_t dsz, const char *src)
{
	size_t n = strlen(src);

	if (!dst || dsz == 0)
		return;
	if (n >= dsz)
		n = 0; /* does not fit: leave it empty rather than cut it */
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* Is the forward lookup of name one of ss's addresses? Mirrors rsync
 * clientname.c:check_name(), which guards against spoofed PTR records. */
/* A failure goes into note (ACCESS_NOTE_MAX bytes) for the log. */
static bool name_confirms(const char *name, const struct sockaddr_storage *ss,
			  const char *addr, char *note)
{
	struct addrinfo hints, *res = NULL;
	bool ok = false;

	memset(&hints, 0, sizeof hints);
	hints.ai_family = ss->ss_family;
	hints.ai_socktype = SOCK_STREAM;
	int err = getaddrinfo(name, NULL, &hints, &res);
	if (err != 0) {
		snprintf(note, ACCESS_NOTE_MAX, "forward name lookup for %s failed: %s",
			 name, gai_strerror(err));
		return false;
	}
	for (const struct addrinfo *ai = res; ai && !ok; ai = ai->ai_next) {
		if (!ai->ai_addr || ai->ai_family != ss->ss_family)
			continue;
		if (ss->ss_family == AF_INET) {
			const struct sockaddr_in *a = (const void *)ss, *b = (const void *)ai->ai_addr;
			ok = memcmp(&a->sin_addr, &b->sin_addr, sizeof a->sin_addr) == 0;
		} else if (ai->ai_addrlen >= sizeof(struct sockaddr_in6)) {
			const struct sockaddr_in6 *a = (const void *)ss, *b = (const void *)ai->ai_addr;
			ok = memcmp(&a->sin6_addr, &b->sin6_addr, sizeof a->sin6_addr) == 0 &&
			     a->sin6_scope_id == b->sin6_scope_id;
		}
	}
	freeaddrinfo(res);
	if (!ok)
		snprintf(note, ACCESS_NOTE_MAX,
			 "%s is not a known address for \"%s\": spoofed address?", addr, name);
	return ok;
}

/* The confirmed host name of numeric address addr, or UNKNOWN /
 * UNDETERMINED as rsync reports them; why a lookup failed into note
 * (ACCESS_NOTE_MAX bytes; "" when none did). */
static void reverse_name(const struct sockaddr_storage *ss, socklen_t len, const char *addr,
			 char *name, size_t nsz, bool reverse_lookup, char *note)
{
	char buf[NI_MAXHOST];

	note[0] = '\0';
	if (!reverse_lookup) {
		set_str(name, nsz, ACCESS_NAME_UNDETERMINED);
		return;
	}
	if (strcmp(addr, "0.0.0.0") == 0)
		return; /* UNKNOWN, as rsync */
	int err = getnameinfo((const struct sockaddr *)ss, len, buf, sizeof buf, NULL, 0,
			      NI_NAMEREQD);
	if (err != 0) {
		snprintf(note, ACCESS_NOTE_MAX, "name lookup failed for %s: %s", addr,
			 gai_strerror(err));
		return;
	}
	if (name_confirms(buf, ss, addr, note) && name && strlen(buf) < nsz)
		set_str(name, nsz, buf);
}

/* The client address of a remote-shell session from the first of
 * REMOTE_HOST, SSH_CONNECTION ("client-addr client-port server-addr
 * server-port"), SSH_CLIENT and SSH2_CLIENT that is set, as rsync's
 * client_addr() reads it when its stdin is not a socket. Returns false
 * when none is set or its first word is not a numeric address. */
static bool ssh_env_peer(struct sockaddr_storage *ss, socklen_t *len)
{
	const char *env = getenv("REMOTE_HOST");
	struct addrinfo hints, *res = NULL;

	if (!env)
		env = getenv("SSH_CONNECTION");
	if (!env)
		env = getenv("SSH_CLIENT");
	if (!env)
		env = getenv("SSH2_CLIENT");
	char host[NI_MAXHOST];

	if (!env)
		return false;
	size_t n = strcspn(env, " ");
	if (n == 0 || n >= sizeof host)
		return false;
	memcpy(host, env, n);
	host[n] = '\0';
	memset(&hints, 0, sizeof hints);
	hints.ai_flags = AI_NUMERICHOST;
	if (getaddrinfo(host, NULL, &hints, &res) != 0)
		return false;
	bool ok = res && res->ai_addrlen <= sizeof *ss;
	if (ok) {
		memset(ss, 0, sizeof *ss);
		memcpy(ss, res->ai_addr, res->ai_addrlen);
		*len = res->ai_addrlen;
	}
	freeaddrinfo(res);
	return ok;
}

/* mirrors rsync clientname.c:client_addr(), client_name(), client_sockaddr() */
bool client_addr_name(int fd, char *addr, size_t asz, char *name, size_t nsz,
		      bool reverse_lookup, char *note)
{
	char scratch[ACCESS_NOTE_MAX];
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;
	char buf[NI_MAXHOST];

	set_str(addr, asz, "");
	set_str(name, nsz, ACCESS_NAME_UNKNOWN);
	memset(&ss, 0, sizeof ss);
	bool have_peer = getpeername(fd, (struct sockaddr *)&ss, &len) == 0 &&
			 (ss.ss_family == AF_INET || ss.ss_family == AF_INET6);
	/* Not a network socket (a remote shell's pipe, the SSH listener's
	 * socketpair): the SSH client's address, if we run under one. */
	if (!have_peer && !ssh_env_peer(&ss, &len))
		return false;
	if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
			/* "::ffff:10.1.2.3" is the IPv4 host 10.1.2.3 */
			struct sockaddr_in s4;
			memset(&s4, 0, sizeof s4);
			s4.sin_family = AF_INET;
			s4.sin_port = s6->sin6_port;
			memcpy(&s4.sin_addr, &s6->sin6_addr.s6_addr[12], 4);
			memset(&ss, 0, sizeof ss);
			memcpy(&ss, &s4, sizeof s4);
			len = sizeof s4;
		}
	} else if (ss.ss_family != AF_INET) {
		return false;
	}
	if (getnameinfo((struct sockaddr *)&ss, len, buf, sizeof buf, NULL, 0, NI_NUMERICHOST) != 0 ||
	    !addr || strlen(buf) >= asz)
		return false;
	set_str(addr, asz, buf);

	reverse_name(&ss, len, buf, name, nsz, reverse_lookup, note ? note : scratch);
	return true;
}

bool addr_name(const char *addr, char *name, size_t nsz, bool reverse_lookup, char *note)
{
	char scratch[ACCESS_NOTE_MAX];
	struct addrinfo hint = {.ai_flags = AI_NUMERICHOST, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res = NULL;

	set_str(name, nsz, ACCESS_NAME_UNKNOWN);
	if (getaddrinfo(addr, NULL, &hint, &res) != 0 || !res)
		return false;
	struct sockaddr_storage ss;
	socklen_t len = res->ai_addrlen <= sizeof ss ? res->ai_addrlen : sizeof ss;
	memset(&ss, 0, sizeof ss);
	memcpy(&ss, res->ai_addr, len);
	freeaddrinfo(res);
	reverse_name(&ss, len, addr, name, nsz, reverse_lookup, note ? note : scratch);
	return true;
}
