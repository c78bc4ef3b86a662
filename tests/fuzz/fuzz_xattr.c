/*
 * The xattr wire decoders (proto/meta/xattrs.c): the sets a file list carries
 * for each entry (xattr_recv_entry: an index of a set seen before, or a
 * new set of abbreviated or full name/value pairs), then the sender's
 * answers to the receiver's requests for abbreviated values
 * (xattr_recv_values). The first byte chooses -X or -XX, root or not,
 * --fake-super and the protocol (30..32).
 */
#include <string.h>
#include <sys/stat.h>

#include "proto/core/flist.h"
#include "proto/core/session.h"
#include "proto/meta/xattrs.h"
#include "tests/fuzz/fuzz_common.h"

#define FUZZ_ENTRIES 32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in = {data, size};
	struct file_entry files[FUZZ_ENTRIES];
	char names[FUZZ_ENTRIES][2 + 32]; /* "f" and the packed indexes */
	struct ferry_opts o;
	struct session s;
	uint8_t b = fuzz_take_byte(&in);
	size_t n = 0;

	memset(&o, 0, sizeof o);
	memset(files, 0, sizeof files);
	o.files_from_fd = -1;
	o.xattrs = 1 + (b & 1);
	o.super_mode = b & 2 ? SUPER_ON : b & 4 ? SUPER_FAKE : SUPER_OFF;
	fuzz_session_init(&s, &o, in.p, in.n);
	fuzz_session_protocol(&s, 30 + (b >> 4) % 3, 0);
	for (; n < FUZZ_ENTRIES; n++) {
		struct fe_extras x = {.has = FE_X_META};
		files[n].mode = (n & 1 ? S_IFDIR : S_IFREG) | 0644;
		bool ok = xattr_recv_entry(&s, &x);
		fe_place(&files[n], names[n], "f", 1, &x);
		if (!ok)
			break;
	}
	for (size_t i = 0; i < n; i++)
		if (fe_xattr_ndx(&files[i]) && !xattr_recv_values(&s, &files[i]))
			break;
	fuzz_session_free(&s);
	return 0;
}
