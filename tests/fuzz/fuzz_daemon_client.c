/*
 * What a daemon sends the ferry client before the transfer
 * (client/daemon_client.c: daemon_handshake): its greeting ("@RSYNCD:
 * 32.0 sha512 ..."), MOTD and module-list lines, "@RSYNCD: AUTHREQD
 * <challenge>" (answered with RSYNC_PASSWORD), "@RSYNCD: OK", "@RSYNCD:
 * EXIT" or "@ERROR ...". The first byte chooses the module asked for (a
 * module or the listing), --no-motd, -s and the protocol we offer.
 */
#include <stdlib.h>
#include <string.h>

#include "client/daemon_client.h"
#include "proto/core/session.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char *args[] = {"--server", "--sender", "-logDtpre.iLsfxCIvu", ".", "mod/", NULL};
	struct fuzz_input in = {data, size};
	struct remote_spec r;
	struct daemon_peer peer;
	struct ferry_opts o;
	struct session s;
	uint8_t b = fuzz_take_byte(&in);
	int code = 0;

	setenv("RSYNC_PASSWORD", "secret", 1);
	memset(&o, 0, sizeof o);
	memset(&r, 0, sizeof r);
	memset(&peer, 0, sizeof peer);
	o.files_from_fd = -1;
	o.no_motd = b & 0x02;
	o.secluded_args = b & 0x04;
	o.protocol = b & 0x08 ? 0 : 29 + (b >> 4) % 4;
	r.kind = REMOTE_DAEMON;
	snprintf(r.user, sizeof r.user, "alice");
	snprintf(r.host, sizeof r.host, "localhost");
	snprintf(r.module, sizeof r.module, "%s", b & 0x01 ? "" : "mod");
	fuzz_session_init(&s, &o, in.p, in.n);
	daemon_handshake(&s, &r, args, &peer, &code);
	fuzz_session_free(&s);
	return 0;
}
