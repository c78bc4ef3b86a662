/*
 * Two sessions in one process (engine_harness.h): two whole transfers,
 * each with its own sender, generator and receiver threads, started at
 * the same moment from two threads and run side by side. Each must build
 * exactly its own tree and count exactly its own statistics: a value one
 * session kept in process-wide state (an exit flag, a key, a gap entry,
 * the umask read) would show up in the other's result.
 *
 * The two runs differ on purpose: one is a delta transfer with --delete,
 * the other sends a nested tree whole, compressed, in incremental parts.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "proto/delta/token.h"
#include "tests/unit/engine_harness.h"

#define T_OLD 1400000000
#define T_NEW 1400000500
#define DELTA_BIG (4 * 1024 * 1024)  /* the delta run's changed file */
#define DELTA_NEW 30000              /* ... and its new one */
#define TREE_FILES 24                /* the whole run's files ... */
#define TREE_FILE_LEN 150000         /* ... each this long */

/* One transfer to run on a thread of its own. */
struct job {
	const struct eh_env *e;
	const char *const *opts;
	pthread_barrier_t *start;
	struct eh_run r;
	int ret;
};

static void *run_job(void *arg)
{
	struct job *j = arg;

	/* both transfers leave together, so their threads overlap */
	pthread_barrier_wait(j->start);
	j->ret = eh_sync(&j->r, j->e, j->opts, 0);
	return NULL;
}

/* ROOT/src: a large file whose old version is in ROOT/dst and whose
 * middle has changed, a new file, and in ROOT/dst a file to delete. */
static void make_delta_tree(const struct eh_env *e)
{
	size_t len;

	eh_write_random(e, "src/big", DELTA_BIG, 11, T_OLD);
	eh_mkdir(e, "dst", 0755);
	char *data = eh_read(e, "src/big", &len);
	assert_int_equal(len, DELTA_BIG);
	eh_write(e, "dst/big", data, len, 0644, T_OLD);
	for (size_t i = len / 2; i < len / 2 + 64; i++)
		data[i] = (char)~data[i];
	eh_write(e, "src/big", data, len, 0644, T_NEW);
	free(data);
	eh_write_random(e, "src/new", DELTA_NEW, 12, T_OLD);
	eh_write_random(e, "dst/stale", 1000, 13, T_OLD);
}

/* ROOT/src: TREE_FILES files in three levels of directories. */
static void make_nested_tree(const struct eh_env *e)
{
	char rel[64];

	eh_mkdir(e, "src/a", 0755);
	eh_mkdir(e, "src/a/b", 0755);
	eh_mkdir(e, "src/c", 0755);
	for (int i = 0; i < TREE_FILES; i++) {
		const char *dir = i % 3 == 0 ? "" : i % 3 == 1 ? "a/" : "a/b/";
		snprintf(rel, sizeof rel, "src/%sf%02d", i % 4 == 3 ? "c/" : dir, i);
		eh_write_random(e, rel, TREE_FILE_LEN, 100 + (uint32_t)i, T_OLD + i);
	}
}

static void assert_clean(const struct job *j)
{
	assert_int_equal(j->ret, 0);
	if (j->r.code != 0)
		fail_msg("exit %d; errors:\n%s%s", j->r.code, j->r.send_errors,
			 j->r.recv_errors);
	assert_string_equal(j->r.send_errors, "");
	assert_string_equal(j->r.recv_errors, "");
}

static void check_delta_run(const struct job *j)
{
	const struct eh_env *e = j->e;
	const struct stats *st = &j->r.sender.stats;
	struct stat sb;

	assert_clean(j);
	assert_true(eh_same_content(e, "src/big", "dst/big"));
	assert_true(eh_same_content(e, "src/new", "dst/new"));
	assert_false(eh_lstat(e, "dst/stale", &sb));
	assert_true(eh_lstat(e, "dst/big", &sb));
	assert_int_equal(sb.st_mtime, T_NEW);
	/* its own two files, nothing of the other run's */
	assert_int_equal(st->xferred_files, 2);
	assert_int_equal(st->num_files, 3); /* ".", big, new */
	assert_int_equal(st->num_dirs, 1);
	assert_int_equal(st->deleted_files, 1);
	assert_int_equal(st->total_size, DELTA_BIG + DELTA_NEW);
	assert_int_equal(st->literal_data + st->matched_data, DELTA_BIG + DELTA_NEW);
	/* the changed file went as a delta: all but a few blocks matched */
	assert_true(st->matched_data > DELTA_BIG - 64 * 1024);
	assert_int_equal(j->r.sender.compress, CPRES_NONE);
	assert_true(eh_has_line(j->r.send_info, "deleting stale"));
}

static void check_nested_run(const struct job *j)
{
	const struct eh_env *e = j->e;
	const struct stats *st = &j->r.sender.stats;
	char a[64], b[64];

	assert_clean(j);
	for (int i = 0; i < TREE_FILES; i++) {
		const char *dir = i % 3 == 0 ? "" : i % 3 == 1 ? "a/" : "a/b/";
		snprintf(a, sizeof a, "src/%sf%02d", i % 4 == 3 ? "c/" : dir, i);
		snprintf(b, sizeof b, "dst/%sf%02d", i % 4 == 3 ? "c/" : dir, i);
		assert_true(eh_same_content(e, a, b));
	}
	assert_int_equal(st->xferred_files, TREE_FILES);
	assert_int_equal(st->num_files, TREE_FILES + 4); /* ".", a, a/b, c */
	assert_int_equal(st->num_dirs, 4);
	assert_int_equal(st->deleted_files, 0);
	assert_int_equal(st->total_size, (int64_t)TREE_FILES * TREE_FILE_LEN);
	assert_int_equal(st->literal_data, (int64_t)TREE_FILES * TREE_FILE_LEN);
	assert_int_equal(st->matched_data, 0);
	assert_int_not_equal(j->r.sender.compress, CPRES_NONE);
	assert_true(j->r.sender.inc_recurse);
}

/* The two runs' directories. */
struct envs {
	struct eh_env a, b;
};

static int envs_setup(void **state)
{
	struct envs *v = calloc(1, sizeof *v);

	if (!v || eh_env_init(&v->a) != 0 || eh_env_init(&v->b) != 0) {
		free(v);
		return -1;
	}
	*state = v;
	return 0;
}

static int envs_teardown(void **state)
{
	struct envs *v = *state;

	eh_env_free(&v->a);
	eh_env_free(&v->b);
	free(v);
	return 0;
}

static void test_two_sessions_at_once(void **state)
{
	struct envs *v = *state;
	struct eh_env *ea = &v->a, *eb = &v->b;
	pthread_barrier_t start;
	pthread_t ta, tb;

	make_delta_tree(ea);
	make_nested_tree(eb);
	const char *delta_opts[] = {"-a", "--no-whole-file", "--delete", "-v", NULL};
	const char *nested_opts[] = {"-a", "-z", NULL};
	struct job ja = {.e = ea, .opts = delta_opts, .start = &start, .ret = -1};
	struct job jb = {.e = eb, .opts = nested_opts, .start = &start, .ret = -1};

	assert_int_equal(pthread_barrier_init(&start, NULL, 2), 0);
	assert_int_equal(pthread_create(&ta, NULL, run_job, &ja), 0);
	assert_int_equal(pthread_create(&tb, NULL, run_job, &jb), 0);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	pthread_barrier_destroy(&start);

	check_delta_run(&ja);
	check_nested_run(&jb);
	eh_run_free(&ja.r);
	eh_run_free(&jb.r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_two_sessions_at_once, envs_setup,
						envs_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
