/*
 * Unit tests for batch mode: the stream-flags word against the values real
 * rsync 3.5 writes (the first 4 bytes of its batch files), applying a
 * batch's flags to the options (batch.c: check_batch_flags), and the
 * option rules of --write-batch/--only-write-batch/--read-batch.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/args/options.h"
#include "proto/delta/batch.h"

/* Parse {"ferry", args..., NULL} with stdout and stderr discarded. */
static int parse_v(struct ferry_opts *o, char **args)
{
	int argc = 0, rc, out, err, devnull;

	while (args[argc])
		argc++;
	fflush(stdout);
	fflush(stderr);
	out = dup(1);
	err = dup(2);
	devnull = open("/dev/null", O_WRONLY);
	dup2(devnull, 1);
	dup2(devnull, 2);
	rc = options_parse(o, argc, args);
	dup2(out, 1);
	dup2(err, 2);
	close(out);
	close(err);
	close(devnull);
	return rc;
}

#define PARSE(o, ...) parse_v(o, (char *[]){ "ferry", __VA_ARGS__, NULL })

static void test_stream_flags_like_rsync(void **state)
{
	struct ferry_opts o;

	(void)state;
	/* rsync -a --write-batch: 0x9f (r, o, g, l, D, d) */
	assert_int_equal(PARSE(&o, "-a", "--write-batch=b", "s/", "d/"), 0);
	assert_int_equal(batch_stream_flags(&o, false), 0x9f);
	options_free(&o);
	/* rsync -aHz --write-batch: 0x1bf (also H and z) */
	assert_int_equal(PARSE(&o, "-aHz", "--write-batch=b", "s/", "d/"), 0);
	assert_int_equal(batch_stream_flags(&o, true), 0x1bf);
	options_free(&o);
	/* rsync -aAX: also bits 10 and 11 */
	assert_int_equal(PARSE(&o, "-aAX", "--write-batch=b", "s/", "d/"), 0);
	assert_int_equal(batch_stream_flags(&o, false), 0xc9f);
	options_free(&o);
	/* rsync -rc --inplace: r, c, d, inplace */
	assert_int_equal(PARSE(&o, "-rc", "--inplace", "--write-batch=b", "s/", "d/"), 0);
	assert_int_equal(batch_stream_flags(&o, false),
			 BATCH_F_RECURSE | BATCH_F_CHECKSUM | BATCH_F_DIRS | BATCH_F_INPLACE);
	options_free(&o);
}

static void test_apply_flags(void **state)
{
	struct ferry_opts o, ro;

	(void)state;
	assert_int_equal(PARSE(&o, "-ptgo", "-d", "--read-batch=b", "d/"), 0);
	ro = o;
	assert_true(batch_apply_flags(&ro, 0x1bf));
	assert_true(ro.recursive && ro.owner && ro.group && ro.links && ro.devices &&
		    ro.hard_links && ro.dirs);
	assert_int_equal(ro.compress, 1);
	assert_false(ro.checksum);
	/* A batch without -z turns compression off, choice and all. */
	ro = o;
	ro.compress = 2;
	assert_true(batch_apply_flags(&ro, BATCH_F_RECURSE | BATCH_F_DIRS));
	assert_int_equal(ro.compress, 0);
	assert_null(ro.compress_choice);
	assert_false(ro.owner);
	/* -zz on the reader's command line is kept (FILE.sh repeats it). */
	ro = o;
	ro.compress = 2;
	assert_true(batch_apply_flags(&ro, BATCH_F_COMPRESS));
	assert_int_equal(ro.compress, 2);
	options_free(&o);
}

static void test_apply_refuses(void **state)
{
	struct ferry_opts o, ro;
	int out = dup(2), devnull = open("/dev/null", O_WRONLY);

	(void)state;
	dup2(devnull, 2);
	assert_int_equal(PARSE(&o, "--read-batch=b", "d/"), 0);
	ro = o;
	assert_false(batch_apply_flags(&ro, BATCH_F_ICONV));
	assert_false(batch_apply_flags(&ro, BATCH_F_APPEND));
	assert_false(batch_apply_flags(&ro, BATCH_F_APPEND_VERIFY));
	/* ACLs and xattrs are taken on, like the other flags */
	assert_true(batch_apply_flags(&ro, BATCH_F_ACLS | BATCH_F_XATTRS));
	assert_true(ro.acls);
	assert_int_equal(ro.xattrs, 1);
	options_free(&o);
	dup2(out, 2);
	close(out);
	close(devnull);
}

static void test_option_rules(void **state)
{
	struct ferry_opts o;

	(void)state;
	assert_int_equal(PARSE(&o, "-a", "--only-write-batch=b", "s/", "d/"), 0);
	assert_int_equal(o.write_batch, -1);
	assert_true(o.dry_run);
	assert_string_equal(o.batch_name, "b");
	options_free(&o);
	/* -n turns batch writing off (options.c: parse_arguments) */
	assert_int_equal(PARSE(&o, "-an", "--write-batch=b", "s/", "d/"), 0);
	assert_int_equal(o.write_batch, 0);
	options_free(&o);
	assert_int_equal(PARSE(&o, "-an", "--only-write-batch=b", "s/", "d/"), 0);
	assert_int_equal(o.write_batch, 0);
	options_free(&o);
	assert_int_equal(PARSE(&o, "--write-batch=b", "--read-batch=c", "d/"), RERR_SYNTAX);
	options_free(&o);
	/* a lone destination is no listing with --read-batch */
	assert_int_equal(PARSE(&o, "-a", "--read-batch=b", "d/"), 0);
	assert_false(o.list_only);
	options_free(&o);
	char name[BATCH_NAME_MAX + 20];
	memset(name, 'x', sizeof name - 1);
	name[sizeof name - 1] = '\0';
	memcpy(name, "--read-batch=", 13);
	assert_int_equal(PARSE(&o, name, "d/"), RERR_SYNTAX);
	options_free(&o);
}

/* The server is told --only-write-batch=X, never -n, so that it sends
 * block sums and changes nothing (options.c: server_options). */
static void test_only_write_server_argv(void **state)
{
	struct ferry_opts o;
	char **v;
	bool seen = false;

	(void)state;
	assert_int_equal(PARSE(&o, "-a", "--only-write-batch=b", "s/", "h:d/"), 0);
	v = options_server_argv(&o, false, 0);
	assert_non_null(v);
	for (char **p = v; *p; p++) {
		if (strcmp(*p, "--only-write-batch=X") == 0)
			seen = true;
		if ((*p)[0] == '-' && (*p)[1] != '-')
			assert_null(strchr(*p, 'n'));
	}
	assert_true(seen);
	options_free_argv(v);
	options_free(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream_flags_like_rsync),
		cmocka_unit_test(test_apply_flags),
		cmocka_unit_test(test_apply_refuses),
		cmocka_unit_test(test_option_rules),
		cmocka_unit_test(test_only_write_server_argv),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
