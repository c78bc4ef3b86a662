/* The zstd token decoder: see fuzz_token.h. */
#define FUZZ_TOKEN_ALG CPRES_ZSTD
#include "tests/fuzz/fuzz_token.h"
