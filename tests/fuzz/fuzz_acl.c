/*
 * The ACL wire decoders (proto/meta/acls.c): each entry's access ACL (and a
 * directory's default ACL), as an index of one seen before or a new list
 * of user/group entries with optional names, then the mapping of the
 * named ids to local ones (acl_map_ids). The first two bytes choose which
 * of 16 entries are directories or symlinks, the protocol (30..32) and
 * --numeric-ids.
 */
#include <string.h>
#include <sys/stat.h>

#include "proto/meta/acls.h"
#include "proto/core/flist.h"
#include "proto/core/session.h"
#include "tests/fuzz/fuzz_common.h"

#define FUZZ_ENTRIES 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in = {data, size};
	struct file_entry f;
	struct ferry_opts o;
	struct session s;
	uint8_t dirs = fuzz_take_byte(&in), b = fuzz_take_byte(&in);

	memset(&o, 0, sizeof o);
	o.files_from_fd = -1;
	o.acls = o.perms = true;
	o.numeric_ids = b & 1;
	fuzz_session_init(&s, &o, in.p, in.n);
	fuzz_session_protocol(&s, 30 + (b >> 4) % 3, 0);
	for (int i = 0; i < FUZZ_ENTRIES; i++) {
		memset(&f, 0, sizeof f);
		f.basename = "f";
		f.mode = (dirs >> (i & 7) & 1 ? S_IFDIR : (b & 2) && i == 15 ? S_IFLNK : S_IFREG) |
			 0750;
		struct fe_extras x = {0};
		if (!acl_recv_entry(&s, f.mode, &x))
			break;
	}
	acl_map_ids(&s);
	fuzz_session_free(&s);
	return 0;
}
