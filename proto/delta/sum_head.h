/*
 * The head of a file's block sums (docs/protocol.md 12): what the
 * generator sends before the sums and the sender matches against. Shared
 * by the delta code (match, blockwise) and the receiving side.
 */
#ifndef FERRY_PROTO_SUM_HEAD_H
#define FERRY_PROTO_SUM_HEAD_H

#include <stdint.h>

struct sum_head {
	int32_t count, blength, s2length, remainder;
};

#endif
