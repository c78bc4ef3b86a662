/*
 * Secret keys for hash tables (see hashkey.h).
 */
#include "proto/base/hashkey.h"

#include <sys/random.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

void hashkey_fill(uint64_t *r, size_t n, const void *salt)
{
	size_t len = n * sizeof *r;

	if (getrandom(r, len, GRND_NONBLOCK) == (ssize_t)len)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t seed = (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30 ^
			(uint64_t)getpid() << 17 ^ (uint64_t)(uintptr_t)salt;
	for (size_t i = 0; i < n; i++)
		r[i] = seed = fmix64(seed + 0x9e3779b97f4a7c15ull);
}
