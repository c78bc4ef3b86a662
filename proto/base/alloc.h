/*
 * The --max-alloc limit (rsync util2.c: my_alloc): every allocation whose
 * size grows with a count the peer chose goes through these, so a hostile
 * file list, sum head or name list ends the run with RERR_MALLOC instead of
 * eating the machine.
 */
#ifndef FERRY_ALLOC_H
#define FERRY_ALLOC_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/base/wire.h"

/* rsync's default: no single allocation of 1 GiB or more. */
#define ALLOC_DEFAULT_LIMIT ((size_t)1 << 30)

/* Set the per-allocation limit in bytes; 0 means no limit. Called once at
 * startup (client, server) or in a daemon's forked child before its
 * session starts, never while other threads allocate. */
void alloc_limit_set(size_t limit);

/* The limit in force (SIZE_MAX when there is none). */
size_t alloc_limit(void);

/* The limit a process applies for --max-alloc given as `given` bytes
 * (given_set false: the option was absent; 0: no limit) when its own limit
 * is `own` (ALLOC_DEFAULT_LIMIT for a client or server; for a daemon's
 * child, the daemon's own from its start-up options). A daemon takes a
 * client's value only when it is lower than its own: a client cannot lift
 * the daemon's cap, with 0 or with a huge value (rsync 3.5.0 lets it). */
size_t alloc_limit_for(bool given_set, size_t given, bool daemon, size_t own);

/* True when an array of n items of size bytes can be asked for under
 * `limit`: n * size does not overflow and stays below limit (rsync refuses
 * num >= limit / size). size 0 is taken as 1. Pure. */
bool alloc_fits(size_t n, size_t size, size_t limit);

/* malloc / calloc / realloc of n items of size bytes, checked against the
 * limit. On refusal or when the system is out of memory they record
 * RERR_MALLOC with rsync's message in err (the first failure wins) and
 * return NULL; p is then left allocated for its owner to free. file and
 * line name the call site in the message, as rsync's do. */
void *alloc_array(struct wire_error *err, size_t n, size_t size, const char *file, int line);
void *alloc_array0(struct wire_error *err, size_t n, size_t size, const char *file, int line);
void *alloc_realloc_array(struct wire_error *err, void *p, size_t n, size_t size,
			  const char *file, int line);

#define xmalloc_array(err, n, size) alloc_array((err), (n), (size), __FILE__, __LINE__)
#define xcalloc_array(err, n, size) alloc_array0((err), (n), (size), __FILE__, __LINE__)
#define xrealloc_array(err, p, n, size) \
	alloc_realloc_array((err), (p), (n), (size), __FILE__, __LINE__)

#endif
