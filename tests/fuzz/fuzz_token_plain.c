/* The plain token decoder: see fuzz_token.h. */
#define FUZZ_TOKEN_ALG CPRES_NONE
#include "tests/fuzz/fuzz_token.h"
