/*
 * The filter list on the wire (docs/protocol.md section 7; exclude.c:
 * send_rules, send_filter_list, recv_filter_list). The
 * client sends, the server receives; see filter.h.
 */
#include "proto/filter/filter.h"

#include <stdlib.h>
#include <string.h>

#include "proto/core/flist.h"
#include "proto/base/opts.h"
#include "proto/core/session.h"

/* A rule on the wire, NUL included, must fit rsync's BIGPATHBUFLEN. */
#define MAX_WIRE_RULE (MAXPATHLEN_WIRE + 1024)
/* A peer sending more rules than this is not a real client. */
#define MAX_PEER_RULES (1 << 20)

bool filter_receiver_wants_list(const struct session *s)
{
	const struct ferry_opts *o = s->opts;

	return o && (o->prune_empty_dirs ||
		     (o->delete_mode != DELETE_NONE && (!o->delete_excluded || s->protocol >= 29)));
}

enum { ELIDE_NONE, ELIDE_LOCAL, ELIDE_REMOTE };

/* Is r only of use on our side (exclude.c: send_rules' elide logic)? */
static int rule_elide(uint32_t f, bool am_sender, bool delete_excluded)
{
	int elide = ELIDE_NONE;

	if (f & FR_SENDER_SIDE)
		elide = am_sender ? ELIDE_LOCAL : ELIDE_REMOTE;
	if (f & FR_RECEIVER_SIDE)
		elide = elide ? ELIDE_NONE : am_sender ? ELIDE_REMOTE : ELIDE_LOCAL;
	else if (delete_excluded && !elide &&
		 (!(f & FR_PERDIR_MERGE) || f & FR_NO_PREFIXES))
		elide = am_sender ? ELIDE_LOCAL : ELIDE_REMOTE;
	return elide;
}

/* exclude.c: send_rules. With !write only check that every rule can be
 * expressed (rsync does that even when it sends nothing). */
static bool send_rules(struct session *s, const struct filter_list *fl,
		       const struct filter_rules *rs, bool am_sender, bool write)
{
	bool de = s->opts && s->opts->delete_excluded;

	for (size_t i = 0; i < rs->n; i++) {
		const struct filter_rule *r = rs->v[i];
		char pre[16];
		int plen;
		if (rule_elide(r->flags, am_sender, de) == ELIDE_LOCAL)
			continue;
		if (r->flags & FR_CVS_IGNORE && !(r->flags & FR_MERGE_FILE)) {
			/* "-C": a sender or an old peer gets the patterns
			 * themselves, a new receiver the rule */
			bool expand = am_sender || s->protocol < 29;
			if (!send_rules(s, fl, &fl->cvs, am_sender, write && expand))
				return false;
			if (expand)
				continue;
		}
		plen = filter_rule_prefix(r, true, s->protocol, am_sender, de, pre);
		if (plen < 0)
			return wire_fail(&s->err, RERR_PROTOCOL,
					 "filter rules are too modern for remote rsync.");
		size_t len = strlen(r->pattern), dlen = r->flags & FR_DIRECTORY ? 1 : 0;
		if (!write || !(plen + len + dlen))
			continue;
		if (!wire_write_i32(&s->out, (int32_t)(plen + len + dlen)) ||
		    !wire_write(&s->out, pre, (size_t)plen) ||
		    !wire_write(&s->out, r->pattern, len) ||
		    (dlen && !wire_write(&s->out, "/", 1)))
			return false;
	}
	return true;
}

bool filter_send(struct session *s, const struct filter_list *fl, bool we_are_sender)
{
	bool write = !we_are_sender || filter_receiver_wants_list(s), ok = true;

	wire_out_lock(&s->out);
	if (fl)
		ok = send_rules(s, fl, &fl->rules, we_are_sender, write);
	if (ok && write)
		ok = wire_write_i32(&s->out, 0);
	wire_out_unlock(&s->out);
	return ok;
}

bool filter_recv(struct session *s, struct filter_list *fl)
{
	int flags = FILTER_PARSE_FROM_PEER;
	char *line, err[MAX_WIRE_RULE + 128];
	bool ok = true;
	size_t count = 0;
	int32_t len;

	if (s->protocol < 29)
		flags |= FILTER_PARSE_OLD_PREFIXES;
	if (s->opts && s->opts->delete_excluded)
		flags |= FILTER_PARSE_DELETE_EXCLUDED;
	fl->from_peer = true;
	if (!s->am_sender && !filter_receiver_wants_list(s))
		return true;
	if (!(line = malloc(MAX_WIRE_RULE)))
		return wire_fail(&s->err, RERR_MALLOC, "out of memory in recv_rules");
	while (ok && (ok = wire_read_i32(&s->in, &len)) && len != 0) {
		if (len < 0 || len >= MAX_WIRE_RULE) {
			ok = wire_fail(&s->err, RERR_PROTOCOL,
				       "buffer overflow in recv_rules (rule of %ld bytes)", (long)len);
			break;
		}
		if (++count > MAX_PEER_RULES) {
			ok = wire_fail(&s->err, RERR_PROTOCOL, "too many filter rules from the peer");
			break;
		}
		if (!(ok = wire_read(&s->in, line, (size_t)len)))
			break;
		line[len] = '\0';
		if (filter_parse_rule(fl, line, flags, err, sizeof err) < 0)
			ok = wire_fail(&s->err, RERR_SYNTAX, "%s", err);
	}
	free(line);
	return ok;
}
