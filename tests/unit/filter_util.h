/*
 * What the filter unit tests (test_filter.c, test_filter_wire.c) share:
 * building rule lists and showing them as text.
 */
#ifndef FERRY_TESTS_FILTER_UTIL_H
#define FERRY_TESTS_FILTER_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

/* Test paths are short; GCC cannot know that. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#include "proto/filter/filter.h"
#include "proto/base/opts.h"
#include "proto/core/session.h"
#include "proto/base/wildmatch.h"

/* A file's and a directory's filter_check(), not on the receiving side. */
#define F(fl, path) filter_check(fl, path, false, false)
#define D(fl, path) filter_check(fl, path, true, false)

/* A rule back as text, with all its modifiers (for_xfer off). */
static inline const char *rule_str(const struct filter_rule *r, char *buf, size_t sz)
{
	char pre[16];

	assert_true(filter_rule_prefix(r, false, PROTOCOL_NEWEST, false, false, pre) >= 0);
	snprintf(buf, sz, "%s%s%s", pre, r->pattern, r->flags & FR_DIRECTORY ? "/" : "");
	return buf;
}

/* The whole list as "rule|rule|...". */
static inline const char *list_str(const struct filter_list *fl)
{
	static char out[4096];
	char one[1024];

	out[0] = '\0';
	for (size_t i = 0; i < fl->rules.n; i++) {
		if (i)
			strcat(out, "|");
		strcat(out, rule_str(fl->rules.v[i], one, sizeof one));
	}
	return out;
}

static inline void parse_ok(struct filter_list *fl, const char *text)
{
	char err[512];

	if (filter_parse_rule(fl, text, 0, err, sizeof err) < 0)
		fail_msg("'%s' failed: %s", text, err);
}

/* A list from rules given as arguments (NULL-terminated). */
static inline void build(struct filter_list *fl, ...)
{
	va_list ap;
	const char *t;

	filter_list_init(fl);
	va_start(ap, fl);
	while ((t = va_arg(ap, const char *)) != NULL)
		parse_ok(fl, t);
	va_end(ap);
}

#endif
