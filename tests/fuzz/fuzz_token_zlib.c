/* The zlib token decoder: see fuzz_token.h. */
#define FUZZ_TOKEN_ALG CPRES_ZLIB
#include "tests/fuzz/fuzz_token.h"
