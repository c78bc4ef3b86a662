/*
 * What the daemon config unit tests (test_config.c, test_config_include.c)
 * share: a scratch directory, files in it, and loading text that must
 * parse or fail.
 */
#ifndef FERRY_TESTS_CONFIG_UTIL_H
#define FERRY_TESTS_CONFIG_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/config.h"
#include "daemon/conn_limits.h"

static char tmpdir[64];
static char err[2048];

/* ---------------------------------------------------------------- helpers */

static inline const char *tpath(const char *name)
{
	static char buf[4][512];
	static int k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
	return buf[k];
}

static inline void write_file(const char *name, const char *text)
{
	FILE *f = fopen(tpath(name), "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static inline void make_dir(const char *name)
{
	assert_int_equal(mkdir(tpath(name), 0755), 0);
}

/* Load text that must parse. */
static inline void load_ok(struct daemon_config *c, const char *text)
{
	int rc = config_load_string(c, text, "test.conf", err, sizeof err);

	if (rc != 0)
		fail_msg("unexpected error: %s", err);
}

/* Load text that must fail; the message must contain want. */
static inline void load_fails(const char *text, const char *want)
{
	struct daemon_config c = { 0 };
	int rc = config_load_string(&c, text, "test.conf", err, sizeof err);

	if (rc == 0)
		fail_msg("config unexpectedly accepted, wanted: %s", want);
	if (!strstr(err, want))
		fail_msg("error \"%s\" lacks \"%s\"", err, want);
	config_free(&c);
}

static inline const struct daemon_module *mod(const struct daemon_config *c, const char *name)
{
	const struct daemon_module *m = config_find_module(c, name);

	if (!m)
		fail_msg("no module [%s]", name);
	return m;
}

static inline int setup(void **state)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/ferry-test-config.XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	return 0;
}

static inline int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

#endif
