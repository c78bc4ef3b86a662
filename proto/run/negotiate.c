/*
 * Protocol set-up after the argument list: version (remote shell only),
 * compat flags, checksum and compression negotiation and the checksum seed.
 */
#include "proto/run/negotiate.h"

#include "proto/delta/token.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define NEGOTIATE_LIST_MAX 1024

/* Does the space-separated list contain the name? */
static bool list_has(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; *p;) {
		while (*p == ' ')
			p++;
		const char *e = p;
		while (*e && *e != ' ')
			e++;
		if ((size_t)(e - p) == n && strncasecmp(p, name, n) == 0)
			return true;
		if ((size_t)(e - p) == 6 && strncasecmp(p, "xxhash", 6) == 0 &&
		    strcasecmp(name, "xxh64") == 0)
			return true;
		p = e;
	}
	return false;
}

bool negotiate_pick(const char *ours, const char *theirs, char *out, size_t outsz)
{
	/* rsync >= 3.5 takes, from the peer's list, the name it ranks highest
	 * in its own list; with both lists in the standard order that is also
	 * what older peers compute (compat.c: parse_negotiate_str). */
	for (const char *p = ours; *p;) {
		while (*p == ' ')
			p++;
		const char *e = p;
		while (*e && *e != ' ')
			e++;
		size_t n = (size_t)(e - p);
		if (n > 0 && n < outsz) {
			memcpy(out, p, n);
			out[n] = '\0';
			if (list_has(theirs, out))
				return true;
		}
		p = e;
	}
	return false;
}

static bool apply_checksum_choice(struct session *s, const char *choice)
{
	char a[32], b[32];
	const char *comma = strchr(choice, ',');
	enum csum_type ta = csum_implied(s->protocol), tb = ta;

	if (comma) {
		snprintf(a, sizeof a, "%.*s", (int)(comma - choice), choice);
		snprintf(b, sizeof b, "%s", comma + 1);
	} else {
		snprintf(a, sizeof a, "%s", choice);
		snprintf(b, sizeof b, "%s", choice);
	}
	if (csum_parse(a, &ta) < 0 || csum_parse(b, &tb) < 0)
		return wire_fail(&s->err, RERR_UNSUPPORTED, "unknown checksum name in \"%s\"", choice);
	/* A named md4 stays plain md4 even below protocol 30: rsync only
	 * switches to the seeded legacy form for the implied default. */
	s->xfer_csum = ta;
	s->flist_csum = csum_flist_type(tb);
	/* rsync hashes the seed first for md5 chosen by name. */
	if (ta == CSUM_MD5)
		s->proper_seed_order = true;
	return true;
}

/* What the options ask of compression (rsync options.c: parse_arguments,
 * compat.c: parse_compress_choice): CPRES_AUTO to negotiate, a forced
 * algorithm, or CPRES_NONE. Both ends compute the same from the same
 * options, since the client forwards them. */
static bool compress_wanted(struct session *s, int *want)
{
	const struct ferry_opts *o = s->opts;
	const char *choice = o->compress_choice;

	if (!choice && o->compress > 1)
		choice = "zlibx";
	if (choice && strcasecmp(choice, "auto") != 0) {
		*want = token_alg_by_name(choice);
		if (*want < CPRES_NONE)
			return wire_fail(&s->err, RERR_UNSUPPORTED, "unknown compress name: %s",
					 choice);
	} else if (o->compress || o->compress_level_set) {
		*want = CPRES_AUTO;
	} else {
		*want = CPRES_NONE;
	}
	return true;
}

/* compat.c: negotiate_the_strings. Each side writes its checksum list
 * (unless --checksum-choice) and then its compression list (only for -z
 * without a forced algorithm), then reads the peer's. A peer that cannot
 * negotiate (no CF_VARINT_FLIST_FLAGS) implies md5/md4 and zlib. */
/* --debug=NSTR on the client (checksum.c: parse_checksum_choice, compat.c:
 * parse_compress_choice): the checksum and compressor in use, and whether
 * the two lists chose them. A server would print these at NSTR3 only;
 * ferry's server does not. */
static void report_choices(struct session *s, bool csum_negotiated, bool cpres_negotiated)
{
	const struct ferry_opts *o = s->opts;

	if (s->am_server || !debug_ge(o, DEBUG_NSTR, 1))
		return;
	session_info(s, "Client%s checksum: %s\n", csum_negotiated ? " negotiated" : "",
		     o->checksum_choice && !csum_negotiated ? o->checksum_choice
							     : csum_name(s->xfer_csum));
	if (s->compress != CPRES_NONE || o->compress_level_set)
		session_info(s, "Client%s compress: %s (level %d)\n",
			     cpres_negotiated ? " negotiated" : "", token_alg_name(s->compress),
			     s->compress_level);
}

static bool negotiate_strings(struct session *s)
{
	const struct ferry_opts *o = s->opts;
	char theirs[NEGOTIATE_LIST_MAX], pick[32];
	const char *ours = csum_default_list(s->am_server);
	const char *cours = s->am_server ? TOKEN_SERVER_LIST : TOKEN_CLIENT_LIST;
	int want;
	enum csum_type t;

	/* A batch file records no choice: its reader assumes the old-style
	 * defaults, so the writer negotiates exactly those (compat.c:
	 * getenv_nstr with write_batch). */
	if (o->write_batch && !s->am_server) {
		ours = s->protocol >= 30 ? "md5" : "md4";
		cours = "zlib";
	}

	if (!compress_wanted(s, &want))
		return false;
	bool csum_list = !o->checksum_choice && s->varint_flist_flags;
	bool cpres_list = want == CPRES_AUTO && s->varint_flist_flags;

	if ((csum_list && !wire_write_vstring(&s->out, ours)) ||
	    (cpres_list && !wire_write_vstring(&s->out, cours)) ||
	    ((csum_list || cpres_list) && !wire_flush(&s->out)))
		return false;

	if (o->checksum_choice) {
		if (!apply_checksum_choice(s, o->checksum_choice))
			return false;
	} else if (!s->varint_flist_flags) {
		s->xfer_csum = csum_implied(s->protocol);
		s->flist_csum = csum_flist_type(s->xfer_csum);
	} else {
		if (!wire_read_vstring(&s->in, theirs, sizeof theirs))
			return false;
		if (!negotiate_pick(ours, theirs, pick, sizeof pick) || csum_parse(pick, &t) < 0)
			return wire_fail(&s->err, RERR_UNSUPPORTED,
					 "Failed to negotiate a checksum choice (peer offers \"%s\")",
					 theirs);
		s->xfer_csum = t;
		s->flist_csum = csum_flist_type(t);
		if (t == CSUM_MD5)
			s->proper_seed_order = true;
	}

	if (cpres_list) {
		if (!wire_read_vstring(&s->in, theirs, sizeof theirs))
			return false;
		if (!negotiate_pick(cours, theirs, pick, sizeof pick) ||
		    (want = token_alg_by_name(pick)) < CPRES_NONE)
			return wire_fail(&s->err, RERR_UNSUPPORTED,
					 "Failed to negotiate a compress choice (peer offers \"%s\")",
					 theirs);
	} else if (want == CPRES_AUTO) {
		want = CPRES_ZLIB;
	}
	s->compress = want;
	s->compress_level = token_resolve_level(
		&s->compress, o->compress_level_set ? o->compress_level : TOKEN_LEVEL_DEFAULT);
	s->compress_adaptive = !o->compress_level_set;
	report_choices(s, csum_list && !o->checksum_choice, cpres_list);
	return true;
}

static void adopt_compat_flags(struct session *s, uint32_t flags)
{
	s->compat_flags = flags;
	s->varint_flist_flags = flags & CF_VARINT_FLIST_FLAGS;
	s->proper_seed_order = flags & CF_CHKSUM_SEED_FIX;
	s->id0_names = flags & CF_ID0_NAMES;
	s->safe_flist = (flags & CF_SAFE_FLIST) || s->protocol >= 31;
	s->inc_recurse = flags & CF_INC_RECURSE;
}

bool inc_recurse_allowed(const struct ferry_opts *o, bool am_sender, int protocol)
{
	/* compat.c: set_allow_inc_recurse */
	if (protocol < 30 || !o->recursive || o->no_inc_recursive || o->qsort)
		return false;
	if (!am_sender && (o->delete_mode == DELETE_BEFORE || o->delete_mode == DELETE_AFTER ||
			   o->delay_updates || o->prune_empty_dirs))
		return false;
	/* ferry keeps to what it has checked against rsync in this mode:
	 * whole lists with -R and --files-from (implied dirs),
	 * --only-write-batch (no data comes back to settle a part) and
	 * --list-only when sending or serving (a listing client receives
	 * in parts: negotiate_server keeps a listing server's whole). */
	return !(o->relative || o->files_from || o->write_batch < 0 || o->read_batch ||
		 (o->list_only && am_sender));
}

static void set_protocol(struct session *s, int protocol)
{
	s->protocol = protocol;
	s->in.protocol = protocol;
	s->out.protocol = protocol;
}

/* rsync's --stats count the transfer's bytes only: its I/O layer starts
 * counting once the protocol is set up (io.c: perform_io after
 * setup_protocol), so the daemon greeting, the arguments and this
 * negotiation are left out. Bytes already read past it still count. */
static bool start_counting(struct session *s)
{
	if (!wire_flush(&s->out))
		return false;
	s->out.total_written = 0;
	s->in.total_read = s->in.end - s->in.pos;
	return true;
}

bool negotiate_client(struct session *s, int remote_protocol)
{
	int ours = s->opts->protocol ? s->opts->protocol : PROTOCOL_NEWEST;
	int32_t v;

	if (remote_protocol == 0) {
		if (!wire_write_i32(&s->out, ours) || !wire_flush(&s->out))
			return false;
		if (!wire_read_i32(&s->in, &v))
			return false;
		if (v < 20 || v > 40)
			return wire_fail(&s->err, RERR_PROTOCOL,
					 "protocol version mismatch -- is your shell clean?");
		remote_protocol = v;
	}
	set_protocol(s, remote_protocol < ours ? remote_protocol : ours);
	if (s->protocol < PROTOCOL_OLDEST)
		return wire_fail(&s->err, RERR_PROTOCOL,
				 "the peer speaks protocol %d; ferry needs at least %d",
				 s->protocol, PROTOCOL_OLDEST);
	if (s->protocol >= 30) {
		if (!wire_read_varint(&s->in, &v))
			return false;
		/* We asked for it (the 'i' of our -e string) only where we can
		 * do it (compat.c: the inc_recurse && !allow_inc_recurse check). */
		if ((v & CF_INC_RECURSE) &&
		    !inc_recurse_allowed(s->opts, s->am_sender, s->protocol))
			return wire_fail(&s->err, RERR_PROTOCOL,
					 "Incompatible options specified for inc-recursive connection");
		adopt_compat_flags(s, (uint32_t)v);
	}
	if (!negotiate_strings(s))
		return false;
	if (!wire_read_i32(&s->in, &s->seed))
		return false;
	return start_counting(s);
}

/* A checksum seed the peer cannot predict (rsync uses time ^ pid << 6,
 * which a peer can guess and so precompute colliding blocks for). Never
 * 0: with MD4 that means "no seed". */
static int32_t random_seed(void)
{
	uint32_t v = 0;

	if (getrandom(&v, sizeof v, GRND_NONBLOCK) != (ssize_t)sizeof v || v == 0)
		v ^= (uint32_t)time(NULL) ^ ((uint32_t)getpid() << 6);
	return (int32_t)(v ? v : 1);
}

bool negotiate_server(struct session *s, int remote_protocol, const char *client_caps)
{
	int32_t v;

	if (remote_protocol == 0) {
		if (!wire_write_i32(&s->out, PROTOCOL_NEWEST) || !wire_flush(&s->out))
			return false;
		if (!wire_read_i32(&s->in, &v))
			return false;
		if (v < 20 || v > 40)
			return wire_fail(&s->err, RERR_PROTOCOL, "protocol version mismatch");
		remote_protocol = v;
	}
	set_protocol(s, remote_protocol < PROTOCOL_NEWEST ? remote_protocol : PROTOCOL_NEWEST);
	if (s->protocol < PROTOCOL_OLDEST)
		return wire_fail(&s->err, RERR_PROTOCOL,
				 "the client speaks protocol %d; ferry needs at least %d", s->protocol,
				 PROTOCOL_OLDEST);
	if (s->protocol >= 30) {
		const char *caps = client_caps ? client_caps : "";
		/* We can set symlink times on Linux; we never offer iconv
		 * (compat.c: setup_protocol). */
		uint32_t flags = CF_SYMLINK_TIMES;
		/* a listing server keeps to whole lists: only a client lists
		 * in parts (pull.c) */
		if (strchr(caps, 'i') && inc_recurse_allowed(s->opts, s->am_sender, s->protocol) &&
		    !s->opts->list_only)
			flags |= CF_INC_RECURSE;
		if (strchr(caps, 'f'))
			flags |= CF_SAFE_FLIST;
		if (strchr(caps, 'x'))
			flags |= CF_AVOID_XATTR_OPTIM;
		if (strchr(caps, 'C'))
			flags |= CF_CHKSUM_SEED_FIX;
		if (strchr(caps, 'I'))
			flags |= CF_INPLACE_PARTIAL_DIR;
		if (strchr(caps, 'u'))
			flags |= CF_ID0_NAMES;
		if (strchr(caps, 'v'))
			flags |= CF_VARINT_FLIST_FLAGS;
		bool ok = strchr(caps, 'V') ? wire_write_u8(&s->out, (uint8_t)(flags | 0x80))
					    : wire_write_varint(&s->out, (int32_t)flags);
		if (!ok)
			return false;
		if (strchr(caps, 'V'))
			flags |= CF_VARINT_FLIST_FLAGS;
		adopt_compat_flags(s, flags);
	}
	if (!negotiate_strings(s))
		return false;
	/* --checksum-seed=0 asks for the default too (compat.c:
	 * setup_protocol) */
	if (!s->opts->checksum_seed_set || s->opts->checksum_seed == 0) {
		s->seed = random_seed();
	} else {
		s->seed = (int32_t)s->opts->checksum_seed;
	}
	return wire_write_i32(&s->out, s->seed) && start_counting(s);
}

bool negotiate_from_batch(struct session *s)
{
	int32_t v;

	/* compat.c: setup_protocol() with read_batch: the version, compat
	 * flags and seed come from the file; nothing is negotiated. */
	if (!wire_read_i32(&s->in, &v))
		return false;
	if (v > PROTOCOL_NEWEST)
		return wire_fail(&s->err, RERR_PROTOCOL,
				 "The protocol version in the batch file is too new (%d > %d).", v,
				 PROTOCOL_NEWEST);
	if (v < PROTOCOL_OLDEST)
		return wire_fail(&s->err, RERR_PROTOCOL,
				 "the batch file uses protocol %d; ferry needs at least %d", v,
				 PROTOCOL_OLDEST);
	set_protocol(s, v);
	if (s->protocol >= 30) {
		if (!wire_read_varint(&s->in, &v))
			return false;
		adopt_compat_flags(s, (uint32_t)v);
	}
	s->xfer_csum = csum_implied(s->protocol);
	s->flist_csum = csum_flist_type(s->xfer_csum);
	/* Compressed data: zlib unless the command line names another
	 * algorithm (as FILE.sh does for -zz or --compress-choice). */
	int want = CPRES_NONE;
	if (s->opts->compress || s->opts->compress_choice) {
		if (!compress_wanted(s, &want))
			return false;
		if (want == CPRES_AUTO || want == CPRES_NONE)
			want = CPRES_ZLIB;
	}
	s->compress = want;
	s->compress_level = token_resolve_level(&s->compress, TOKEN_LEVEL_DEFAULT);
	return wire_read_i32(&s->in, &s->seed);
}
