/* The lz4 token decoder: see fuzz_token.h. */
#define FUZZ_TOKEN_ALG CPRES_LZ4
#include "tests/fuzz/fuzz_token.h"
