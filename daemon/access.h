/*
 * Daemon host access control: `hosts allow` / `hosts deny` (rsync access.c)
 * and finding the connecting client's address and name (rsync clientname.c).
 *
 * A list is a comma/space/tab separated set of patterns:
 *   1.2.3.4, 2001:db8::1, fe80::1%eth0   the client address, exactly
 *   10.0.0.0/8, 2001:db8::/32             address with a prefix length
 *   10.0.0.0/255.0.0.0, 2001:db8::/ffff:ffff::   address with a mask
 *   *.example.com, host?.lan, [a-c]x.org  wildcard on the client's name,
 *                                         case-insensitive (rsync iwildmatch)
 *   gw.example.com                        a plain name: matched as a wildcard
 *                                         on the client's name and, with
 *                                         forward lookup, by resolving it and
 *                                         comparing with the client address
 *   @netgroup                             innetgr(netgroup, client name)
 *
 * Addresses are read as rsync reads them (getaddrinfo AI_NUMERICHOST, so
 * "127.1" is 127.0.0.1) and a prefix length as strtol does ("+8" is 8), so
 * a deny list matches at least what rsync's would.
 *
 * IPv4-mapped IPv6 (::ffff:a.b.c.d) is the same host as a.b.c.d: an IPv4
 * pattern matches a mapped client address, and a pattern inside
 * ::ffff:0:0/96 matches the plain IPv4 client. (rsync compares families
 * only, so there "::ffff:127.0.0.0/104" never admits 127.0.0.1.)
 *
 * Nothing here fails open: a pattern that cannot be parsed (bad address,
 * mask out of range, "10.0.0.0/", "1.2.3.4/x") matches nothing, and an
 * unresolvable plain hostname in a *deny* list counts as a match (rsync 3.5,
 * CVE-2026-70452): we cannot prove the client is not that host.
 */
#ifndef FERRY_DAEMON_ACCESS_H
#define FERRY_DAEMON_ACCESS_H

#include <netdb.h>
#include <stdbool.h>
#include <stddef.h>

/* The size of a name lookup's note: two host names and rsync's words. */
#define ACCESS_NOTE_MAX (NI_MAXHOST * 2 + 100)

/* Client names rsync uses when it has no real one (clientname.c). */
#define ACCESS_NAME_UNKNOWN "UNKNOWN"           /* lookup failed or was spoofed */
#define ACCESS_NAME_UNDETERMINED "UNDETERMINED" /* `reverse lookup = no` */

/* The allow/deny decision with forward lookup on (the rsyncd.conf default).
 * Mirrors rsync access.c:allow_access():
 *   allow list set and a pattern matches  -> allowed (even if deny matches)
 *   allow list set, no deny list          -> denied
 *   deny list set and a pattern matches   -> denied
 *   otherwise                             -> allowed
 * NULL or "" lists are unset. addr is the numeric client address
 * ("192.0.2.7", "2001:db8::7", "fe80::1%eth0"); hostname is its verified
 * name, ACCESS_NAME_UNKNOWN / ACCESS_NAME_UNDETERMINED, or NULL/"" (then
 * name patterns, netgroups and forward lookups match nothing). */
bool access_allowed(const char *allow_list, const char *deny_list, const char *addr,
		    const char *hostname);

/* The same with `forward lookup` explicit. When forward lookup is on and a
 * plain-hostname pattern resolves to the client address while hostname is
 * ACCESS_NAME_UNDETERMINED, that pattern is copied to name_out (if name_out
 * is non-NULL and it fits) so the caller can log it in place of
 * "UNDETERMINED", as rsync does; otherwise name_out is left untouched. */
bool access_check(const char *allow_list, const char *deny_list, const char *addr,
		  const char *hostname, bool forward_lookup, char *name_out, size_t nsz);

/* Does one list match? (rsync access.c:access_match). `deny` selects the
 * fail-closed treatment of unresolvable hostnames. Exposed for `proxy
 * protocol hosts` (forward lookup off, deny false there). */
bool access_list_match(const char *list, const char *addr, const char *hostname,
		       bool forward_lookup, bool deny, char *name_out, size_t nsz);

/* Check a list when it is loaded: call warn(ctx, why) for each address
 * pattern that can never match (a bad address, a mask out of range such
 * as 127.0.0.1/33), why in rsync's words ("malformed mask in TOKEN").
 * rsync logs these at every match; they match nothing in either. Returns
 * how many there were. */
size_t access_list_problems(const char *list, void (*warn)(void *ctx, const char *why),
			    void *ctx);

/* The peer of socket fd: its numeric address into addr (an IPv4-mapped IPv6
 * peer is reported as plain IPv4, as rsync clientname.c:client_sockaddr),
 * and into name either ACCESS_NAME_UNDETERMINED (reverse_lookup false) or
 * the reverse-DNS name, confirmed by a forward lookup that must give the
 * address back; any failure, a spoofed or over-long name gives
 * ACCESS_NAME_UNKNOWN. Returns false (addr "", name ACCESS_NAME_UNKNOWN)
 * when fd has no IP peer (getpeername failed, or not AF_INET/AF_INET6)
 * and SSH_CONNECTION names none either (rsync reads it for a daemon over a
 * remote shell; ferry's SSH listener sets it for the session it serves);
 * the caller should then refuse the connection. asz >= 64 (INET6_ADDRSTRLEN
 * plus a scope) and nsz >= 16 are needed for useful results. note (NULL:
 * not wanted; else ACCESS_NOTE_MAX bytes) gets why no name was found
 * ("name lookup failed for ADDR: ERR", as rsync logs it), or "" once a
 * lookup was tried without failing. */
bool client_addr_name(int fd, char *addr, size_t asz, char *name, size_t nsz,
		      bool reverse_lookup, char *note);

/* As client_addr_name, for an address learnt otherwise (a PROXY header). */
bool addr_name(const char *addr, char *name, size_t nsz, bool reverse_lookup, char *note);

#endif
