/*
 * The --files-from reader (proto/flist/filesfrom.c): a list from the peer
 * (NUL-terminated names, an empty one ends it) or a local list (lines or
 * NUL-separated with --from0, comments skipped), each name then made safe
 * as a daemon does (names_sanitize, path_sanitize). The first byte
 * chooses the source, --from0, the name buffer size and -R's dots.
 */
#include <string.h>
#include <unistd.h>

#include "proto/flist/filesfrom.h"
#include "proto/base/wire.h"
#include "tests/fuzz/fuzz_common.h"

static const size_t out_sizes[] = {1, 2, 16, 4096};

static void drain(struct names_source *ns, uint8_t b)
{
	char name[4096];
	size_t size = out_sizes[(b >> 2) & 3];
	bool keep_dots = b & 0x10;

	while (names_next(ns, name, size) == 1) {
		char copy[4096];
		memcpy(copy, name, strlen(name) + 1);
		names_sanitize(name, keep_dots);
		path_sanitize(copy, (b >> 5) & 3, keep_dots);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in = {data, size};
	uint8_t b = fuzz_take_byte(&in);
	static struct names_source ns;

	if (b & 0x01) {
		struct wire_error err;
		struct wire_in win;
		wire_error_init(&err);
		wire_in_init(&win, fuzz_null_fd(), &err);
		if (win.buf && in.n <= win.cap) {
			memcpy(win.buf, in.p, in.n);
			win.end = in.n;
		}
		names_from_peer(&ns, &win);
		drain(&ns, b);
		wire_in_free(&win);
	} else {
		int fd = fuzz_memfd(in.p, in.n);
		if (fd < 0)
			return 0;
		names_from_fd(&ns, fd, b & 0x02);
		drain(&ns, b);
		close(fd);
	}
	return 0;
}
