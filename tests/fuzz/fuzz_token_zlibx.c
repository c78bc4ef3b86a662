/* The zlibx token decoder: see fuzz_token.h. */
#define FUZZ_TOKEN_ALG CPRES_ZLIBX
#include "tests/fuzz/fuzz_token.h"
