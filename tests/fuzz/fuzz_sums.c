/*
 * The sum head and block sums a sender reads from the generator (sender.c:
 * read_sums, rsync's read_sum_head/receive_sums), then the index the block
 * search builds over them (match.c). The first byte chooses the protocol
 * and the transfer checksum (its length bounds the strong-sum length).
 */
#include <stdlib.h>
#include <string.h>

#include "proto/delta/match.h"
#include "proto/send/sender.h"
#include "proto/core/session.h"
#include "tests/fuzz/fuzz_common.h"

static const enum csum_type sum_types[] = {CSUM_MD4_OLD, CSUM_MD4, CSUM_MD5, CSUM_SHA1,
					   CSUM_XXH64, CSUM_XXH3, CSUM_XXH128};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in = {data, size};
	struct ferry_opts o;
	struct session s;
	struct sum_head h;
	uint32_t *sum1 = NULL;
	uint8_t *sum2 = NULL;
	uint8_t b = fuzz_take_byte(&in);

	memset(&o, 0, sizeof o);
	o.files_from_fd = -1;
	fuzz_session_init(&s, &o, in.p, in.n);
	fuzz_session_protocol(&s, PROTOCOL_OLDEST + (b & 7) % 6, 0);
	s.xfer_csum = sum_types[(b >> 3) % (sizeof sum_types / sizeof sum_types[0])];
	if (sender_read_sums(&s, &h, &sum1, &sum2) && h.count > 0) {
		struct match_index m;
		if (match_index_build(&m, &h, sum1, sum2))
			match_index_free(&m);
	}
	free(sum1);
	free(sum2);
	fuzz_session_free(&s);
	return 0;
}
