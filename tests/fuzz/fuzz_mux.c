/*
 * The multiplexed stream reader (wire.c: frame headers) and the session's
 * message handler (session.c: MSG_INFO, MSG_ERROR*, MSG_IO_ERROR,
 * MSG_IO_TIMEOUT, MSG_DELETED, MSG_SUCCESS, MSG_NO_SEND, MSG_ERROR_EXIT,
 * ...). The first byte chooses the side (client or server, -v, -q,
 * --ignore-errors, the protocol); the rest is the multiplexed stream,
 * read to its end in data pieces of varying size.
 */
#include <string.h>

#include "proto/core/session.h"
#include "proto/base/wire.h"
#include "tests/fuzz/fuzz_common.h"

static void on_success(void *ctx, int32_t ndx, int64_t dev, int64_t ino)
{
	(void)ctx, (void)ndx, (void)dev, (void)ino;
}

static void on_no_send(void *ctx, int32_t ndx)
{
	(void)ctx, (void)ndx;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in = {data, size};
	struct ferry_opts o;
	struct session s;
	uint8_t b = fuzz_take_byte(&in);

	memset(&o, 0, sizeof o);
	o.files_from_fd = -1;
	o.quiet = b & 0x01;
	o.ignore_errors = b & 0x02;
	o.verbose = (b >> 2) & 3;
	o.info_level[INFO_DEL] = (short)((b >> 2) & 1);
	fuzz_session_init(&s, &o, in.p, in.n);
	fuzz_session_protocol(&s, PROTOCOL_OLDEST + (b >> 5) % 6, 0);
	s.am_server = b & 0x10;
	s.in.mux = true;
	s.hooks.on_success = on_success;
	s.hooks.on_no_send = on_no_send;
	const uint8_t *p;
	size_t got, want = 1;
	while ((p = wire_read_some(&s.in, want, &got)) != NULL)
		want = (want * 7 + p[0]) % 4096 + 1;
	fuzz_session_free(&s);
	return 0;
}
