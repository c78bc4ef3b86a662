/*
 * The checked allocator behind --max-alloc. See alloc.h for the contracts.
 */
#include "proto/base/alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The one mutable global here, and deliberately so: rsync's limit is a
 * property of the process, every thread of a session must see the same
 * value, and it is written once before any session thread exists (client
 * and server start-up, a daemon's child after it parsed the client's
 * arguments). Threading a session pointer into every allocation of the
 * list, sum and name code would touch hundreds of signatures for no gain. */
static size_t limit = ALLOC_DEFAULT_LIMIT;

void alloc_limit_set(size_t bytes)
{
	limit = bytes ? bytes : SIZE_MAX;
}

size_t alloc_limit(void)
{
	return limit;
}

size_t alloc_limit_for(bool given_set, size_t given, bool daemon, size_t own)
{
	size_t asked = given ? given : SIZE_MAX;

	if (!given_set)
		return own;
	return daemon && asked > own ? own : asked;
}

bool alloc_fits(size_t n, size_t size, size_t lim)
{
	if (size == 0)
		size = 1;
	return n < lim / size;
}

/* rsync names the source file without its directory. */
static const char *base_name(const char *file)
{
	const char *slash = strrchr(file, '/');
	return slash ? slash + 1 : file;
}

static bool check(struct wire_error *err, size_t n, size_t size, const char *file, int line)
{
	if (alloc_fits(n, size, limit))
		return true;
	return wire_fail(err, RERR_MALLOC, "exceeded --max-alloc=%zu setting (file=%s, line=%d)",
			 limit, base_name(file), line);
}

/* malloc(0) may return NULL; ask for one byte instead. */
static size_t bytes_of(size_t n, size_t size)
{
	return n && size ? n * size : 1;
}

static void *checked(struct wire_error *err, void *p, const char *file, int line)
{
	if (!p)
		wire_fail(err, RERR_MALLOC, "out of memory: allocation (file=%s, line=%d)",
			  base_name(file), line);
	return p;
}

void *alloc_array(struct wire_error *err, size_t n, size_t size, const char *file, int line)
{
	if (!check(err, n, size, file, line))
		return NULL;
	return checked(err, malloc(bytes_of(n, size)), file, line);
}

void *alloc_array0(struct wire_error *err, size_t n, size_t size, const char *file, int line)
{
	if (!check(err, n, size, file, line))
		return NULL;
	return checked(err, calloc(n ? n : 1, size ? size : 1), file, line);
}

void *alloc_realloc_array(struct wire_error *err, void *p, size_t n, size_t size,
			  const char *file, int line)
{
	if (!check(err, n, size, file, line))
		return NULL;
	return checked(err, realloc(p, bytes_of(n, size)), file, line);
}
