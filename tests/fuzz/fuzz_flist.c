/*
 * The file-list entry decoder, as a receiver runs it (client/pull.c): the
 * first list, its sort and clean, and with incremental recursion the
 * parts that follow. The first three input bytes choose the protocol
 * (27..32), the options (-H -A -X -o -g -D -l -c --numeric-ids
 * --ignore-errors) and the compat flags (incremental recursion, varint
 * flags, id0 names, safe flist); the rest is the sender's stream.
 */
#include <string.h>

#include "proto/core/flist.h"
#include "proto/core/session.h"
#include "proto/base/wire.h"
#include "tests/fuzz/fuzz_common.h"

static void choose_options(struct fuzz_input *in, struct ferry_opts *o, int *protocol,
			   uint32_t *compat)
{
	uint8_t p = fuzz_take_byte(in), a = fuzz_take_byte(in), c = fuzz_take_byte(in);

	*protocol = PROTOCOL_OLDEST + (p & 0x1f) % (PROTOCOL_NEWEST - PROTOCOL_OLDEST + 1);
	memset(o, 0, sizeof *o);
	o->files_from_fd = -1;
	o->recursive = o->dirs = true;
	o->hard_links = a & 0x01;
	o->owner = a & 0x02;
	o->group = a & 0x04;
	o->devices = o->specials = a & 0x08;
	o->links = a & 0x10;
	o->checksum = a & 0x20;
	o->numeric_ids = a & 0x40;
	o->ignore_errors = a & 0x80;
	/* negotiate.c refuses -A and -X below protocol 30 */
	o->acls = *protocol >= 30 && (p & 0x40);
	o->xattrs = *protocol >= 30 && (p & 0x80) ? 1 + ((p >> 5) & 1) : 0;
	o->perms = true;
	o->times = true;
	*compat = 0;
	if (*protocol >= 30) {
		if (c & 0x01)
			*compat |= CF_INC_RECURSE;
		if (c & 0x02)
			*compat |= CF_VARINT_FLIST_FLAGS;
		if (c & 0x04)
			*compat |= CF_ID0_NAMES;
		if (c & 0x08)
			*compat |= CF_SAFE_FLIST;
		if (c & 0x10)
			*compat |= CF_SYMLINK_TIMES;
	}
}

/* Incremental recursion: parts announced by NDX_FLIST_OFFSET - dir until
 * NDX_FLIST_EOF, as the receiver reads them between file requests. */
static void recv_parts(struct session *s, struct flist *fl)
{
	int32_t ndx;

	while (!fl->eof && wire_read_ndx(&s->in, &ndx)) {
		if (ndx == NDX_FLIST_EOF)
			break;
		if (ndx > NDX_FLIST_OFFSET || !flist_recv_part(s, fl, NDX_FLIST_OFFSET - ndx))
			break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in = {data, size};
	struct ferry_opts o;
	struct session s;
	struct flist fl;
	int protocol;
	uint32_t compat;

	choose_options(&in, &o, &protocol, &compat);
	fuzz_session_init(&s, &o, in.p, in.n);
	fuzz_session_protocol(&s, protocol, compat);
	flist_init(&fl);
	if (flist_recv(&s, &fl) && flist_sort_and_clean(&s, &fl) && flist_recv_second(&s, &fl) &&
	    s.inc_recurse)
		recv_parts(&s, &fl);
	flist_free(&fl);
	fuzz_session_free(&s);
	return 0;
}
