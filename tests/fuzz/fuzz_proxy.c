/*
 * The PROXY protocol header in front of a daemon connection (v1 text or
 * v2 binary; daemon/proxy_header.c), then the greeting line after it, as
 * the daemon reads on.
 */
#include <string.h>

#include "daemon/proxy_header.h"
#include "proto/base/wire.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wire_error err;
	struct wire_in in;
	char addr[80], line[5120];

	wire_error_init(&err);
	wire_in_init(&in, fuzz_null_fd(), &err);
	if (in.buf && size <= in.cap) {
		memcpy(in.buf, data, size);
		in.end = size;
	}
	in.deadline_ms = 0;
	if (proxy_header_read(&in, addr, sizeof addr))
		wire_read_line(&in, line, sizeof line);
	wire_in_free(&in);
	return 0;
}
