/*
 * wildmatch (proto/base/wildmatch.c): the input is "pattern\0text"; the first
 * byte chooses the anchoring (`where`) for wildmatch_where and
 * litmatch_where.
 */
#include <stdlib.h>
#include <string.h>

#include "proto/base/wildmatch.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in = {data, size};
	int where = (int)(int8_t)fuzz_take_byte(&in) % 5;
	char *buf = malloc(in.n + 2);

	if (!buf)
		return 0;
	memcpy(buf, in.p, in.n);
	buf[in.n] = buf[in.n + 1] = '\0';
	const char *pattern = buf, *text = buf + strlen(buf) + 1;
	wildmatch(pattern, text);
	wildmatch_where(pattern, text, where);
	litmatch_where(pattern, text, where);
	free(buf);
	return 0;
}
