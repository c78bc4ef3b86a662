/*
 * The corpus replay of make check: every harness (tests/fuzz/fuzz_*.c,
 * built with LLVMFuzzerTestOneInput renamed to fuzz_one_<name>) runs over
 * each file of tests/fuzz/corpus/<name>/ with the ordinary compiler, and
 * under ASan+UBSan in the sanitizer pass, so an input that once crashed a
 * decoder keeps being tried. One cmocka test per target. FUZZ_CORPUS
 * names another corpus root (default tests/fuzz/corpus, from the source
 * root, where tests/run starts us).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/fuzz/targets.h"

struct target {
	const char *name;
	int (*one)(const uint8_t *data, size_t size);
};

#define DECLARE(n) int fuzz_one_##n(const uint8_t *data, size_t size);
FUZZ_TARGETS(DECLARE)
#define ENTRY(n) {#n, fuzz_one_##n},
static struct target targets[] = {FUZZ_TARGETS(ENTRY)};
#define NTARGETS (sizeof targets / sizeof targets[0])

static const char *corpus_root(void)
{
	const char *r = getenv("FUZZ_CORPUS");

	return r && *r ? r : "tests/fuzz/corpus";
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The regular files of dir, sorted; NULL if it cannot be read. */
static char **list_dir(const char *dir, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **v = NULL;
	size_t cap = 0;

	*n = 0;
	if (!d)
		return NULL;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			v = realloc(v, cap * sizeof *v);
			assert_non_null(v);
		}
		v[(*n)++] = strdup(e->d_name);
	}
	closedir(d);
	if (*n)
		qsort(v, *n, sizeof *v, cmp_names);
	return v ? v : calloc(1, sizeof *v);
}

static uint8_t *read_whole(const char *path, size_t *len)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	uint8_t *buf = NULL;

	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	ssize_t got = buf ? read(fd, buf, (size_t)st.st_size) : -1;
	close(fd);
	if (got != st.st_size) {
		free(buf);
		return NULL;
	}
	*len = (size_t)got;
	return buf;
}

/* Run one input with stdout on /dev/null, so nothing the harness prints
 * can break cmocka's result lines. stderr stays: a sanitizer's report
 * goes there (gcc's UBSan runtime has its own report fd, which cannot be
 * redirected from here), after the name of the input. */
static void replay_one(const struct target *t, const char *path, const uint8_t *p, size_t n,
		       int quiet_fd)
{
	fprintf(stderr, "\nreplaying %s\n", path);
	fflush(stdout);
	dup2(quiet_fd, 1);
	t->one(p, n);
	fflush(stdout);
	fflush(stderr);
}

static void test_replay(void **state)
{
	const struct target *t = *state;
	char dir[4096], path[8192];
	size_t n;

	snprintf(dir, sizeof dir, "%s/%s", corpus_root(), t->name);
	char **names = list_dir(dir, &n);
	if (!names)
		fail_msg("no corpus directory %s", dir);
	if (n == 0)
		fail_msg("empty corpus %s", dir);
	int out_fd = dup(1), quiet_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	assert_true(out_fd >= 0 && quiet_fd >= 0);
	size_t ran = 0;
	for (size_t i = 0; i < n; i++) {
		size_t len = 0;
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		uint8_t *p = read_whole(path, &len);
		if (p) {
			replay_one(t, path, p, len, quiet_fd);
			ran++;
		}
		free(p);
		free(names[i]);
	}
	free(names);
	dup2(out_fd, 1);
	close(out_fd);
	close(quiet_fd);
	fprintf(stderr, "\n%s: %zu inputs replayed\n", t->name, ran);
	assert_int_equal(ran, n);
}

static bool known(const char *name)
{
	for (size_t i = 0; i < NTARGETS; i++)
		if (strcmp(targets[i].name, name) == 0)
			return true;
	return false;
}

/* Every harness source and every corpus directory has its entry. */
static void test_every_target_listed(void **state)
{
	size_t n;
	char **names;

	(void)state;
	names = list_dir("tests/fuzz", &n);
	assert_non_null(names);
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(names[i]);
		if (strncmp(names[i], "fuzz_", 5) == 0 && len > 7 &&
		    strcmp(names[i] + len - 2, ".c") == 0 && strcmp(names[i], "fuzz_common.c") != 0) {
			names[i][len - 2] = '\0';
			if (!known(names[i] + 5))
				fail_msg("tests/fuzz/%s.c is not in targets.h", names[i]);
		}
		free(names[i]);
	}
	free(names);
	names = list_dir(corpus_root(), &n);
	assert_non_null(names);
	for (size_t i = 0; i < n; i++) {
		if (!known(names[i]))
			fail_msg("corpus %s/%s has no target in targets.h", corpus_root(), names[i]);
		free(names[i]);
	}
	free(names);
}

int main(void)
{
	struct CMUnitTest tests[NTARGETS + 1];

	tests[0] = (struct CMUnitTest)cmocka_unit_test(test_every_target_listed);
	for (size_t i = 0; i < NTARGETS; i++) {
		tests[i + 1] = (struct CMUnitTest){.name = targets[i].name,
						   .test_func = test_replay,
						   .initial_state = &targets[i]};
	}
	return _cmocka_run_group_tests("fuzz_replay", tests, NTARGETS + 1, NULL, NULL);
}
