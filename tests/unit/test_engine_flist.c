/*
 * The file list, end to end in one process (engine_harness.h): what the
 * sender lists — nested directories, symlinks, hard links, excluded
 * names, in incremental parts or whole — is what the receiver sees. The
 * receiver's view is its generator's itemized line for every entry
 * (-ii, as rsync 3.5 prints them for the same trees) and the tree it
 * builds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/engine_harness.h"

/* Fixed times, so nothing depends on the clock. */
#define T_DIR 1500000000
#define T_FILE 1400000000

static int env_setup(void **state)
{
	struct eh_env *e = calloc(1, sizeof *e);

	if (!e || eh_env_init(e) != 0) {
		free(e);
		return -1;
	}
	*state = e;
	return 0;
}

static int env_teardown(void **state)
{
	eh_env_free(*state);
	free(*state);
	return 0;
}

static void assert_mode_time(const struct eh_env *e, const char *rel, mode_t type, mode_t perms,
			     time_t mtime)
{
	struct stat st;

	assert_true(eh_lstat(e, rel, &st));
	assert_int_equal(st.st_mode & S_IFMT, type);
	assert_int_equal(st.st_mode & 07777, perms);
	assert_int_equal(st.st_mtime, mtime);
}

/* The number of itemized lines (11 change letters and a space). */
static int item_count(const char *text)
{
	int n = 0;

	for (const char *p = text; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p))
		if (strlen(p) > 12 && strchr("<>ch.*", p[0]) && p[11] == ' ')
			n++;
	return n;
}

static void test_nested_dirs_and_symlinks(void **state)
{
	struct eh_env *e = *state;
	struct eh_run r;

	eh_mkdir(e, "src/a", 0755);
	eh_mkdir(e, "src/a/b", 0750);
	eh_mkdir(e, "src/a/b/c", 0700);
	eh_write(e, "src/a/b/f", "hello\n", 6, 0640, T_FILE);
	eh_write(e, "src/a/b/c/g", "deep\n", 5, 0600, T_FILE + 1);
	eh_symlink(e, "b/f", "src/a/l");
	eh_symlink(e, "nowhere", "src/a/dangling");
	eh_touch(e, "src/a/b/c", T_DIR + 2);
	eh_touch(e, "src/a/b", T_DIR + 1);
	eh_touch(e, "src/a", T_DIR);

	const char *opts[] = {"-aii", NULL};
	assert_int_equal(eh_sync(&r, e, opts, 0), 0);
	assert_int_equal(r.code, 0);
	assert_string_equal(r.send_errors, "");
	assert_string_equal(r.recv_errors, "");
	/* every entry of the list, as the receiver's generator saw it */
	const char *items[] = {"cd+++++++++ ./", "cd+++++++++ a/", "cd+++++++++ a/b/",
			       "cd+++++++++ a/b/c/", ">f+++++++++ a/b/f", ">f+++++++++ a/b/c/g",
			       "cL+++++++++ a/l -> b/f", "cL+++++++++ a/dangling -> nowhere"};
	for (size_t i = 0; i < sizeof items / sizeof *items; i++)
		if (!eh_has_line(r.send_info, items[i]))
			fail_msg("no line \"%s\" in:\n%s", items[i], r.send_info);
	assert_int_equal(item_count(r.send_info), 8);
	/* the sender's count of what it listed */
	assert_int_equal(r.sender.stats.num_files, 8);
	assert_int_equal(r.sender.stats.num_dirs, 4);
	assert_int_equal(r.sender.stats.num_symlinks, 2);
	/* --stats prints "reg: 2" as what is left */
	assert_int_equal(r.sender.stats.num_files - r.sender.stats.num_dirs -
			 r.sender.stats.num_symlinks, 2);

	assert_mode_time(e, "dst/a", S_IFDIR, 0755, T_DIR);
	assert_mode_time(e, "dst/a/b", S_IFDIR, 0750, T_DIR + 1);
	assert_mode_time(e, "dst/a/b/c", S_IFDIR, 0700, T_DIR + 2);
	assert_mode_time(e, "dst/a/b/f", S_IFREG, 0640, T_FILE);
	assert_mode_time(e, "dst/a/b/c/g", S_IFREG, 0600, T_FILE + 1);
	assert_true(eh_same_content(e, "src/a/b/f", "dst/a/b/f"));
	assert_true(eh_same_content(e, "src/a/b/c/g", "dst/a/b/c/g"));
	char path[PATH_MAX], target[64];
	ssize_t n = readlink(eh_path(e, "dst/a/l", path, sizeof path), target, sizeof target);
	assert_int_equal(n, 3);
	assert_memory_equal(target, "b/f", 3);
	n = readlink(eh_path(e, "dst/a/dangling", path, sizeof path), target, sizeof target);
	assert_int_equal(n, 7);
	assert_memory_equal(target, "nowhere", 7);
	eh_run_free(&r);
}

static void make_linked_tree(struct eh_env *e)
{
	char a[PATH_MAX], b[PATH_MAX];

	eh_mkdir(e, "src/d", 0755);
	eh_write(e, "src/f1", "one\n", 4, 0644, T_FILE);
	assert_int_equal(link(eh_path(e, "src/f1", a, sizeof a),
			      eh_path(e, "src/d/f2", b, sizeof b)), 0);
	eh_write(e, "src/f3", "three\n", 6, 0644, T_FILE);
}

static void test_hard_links_kept_with_H(void **state)
{
	struct eh_env *e = *state;
	struct eh_run r;
	struct stat s1, s2, s3;

	make_linked_tree(e);
	const char *opts[] = {"-aiiH", NULL};
	assert_int_equal(eh_sync(&r, e, opts, 0), 0);
	assert_int_equal(r.code, 0);
	assert_true(eh_lstat(e, "dst/f1", &s1) && eh_lstat(e, "dst/d/f2", &s2) &&
		    eh_lstat(e, "dst/f3", &s3));
	assert_int_equal(s1.st_ino, s2.st_ino);
	assert_int_equal(s1.st_nlink, 2);
	assert_int_not_equal(s1.st_ino, s3.st_ino);
	assert_true(eh_same_content(e, "src/f1", "dst/d/f2"));
	/* one of the pair is sent, the other linked to it, as rsync says */
	if (!eh_has_line(r.send_info, ">f+++++++++ d/f2") ||
	    !eh_has_line(r.send_info, "hf+++++++++ f1 => d/f2"))
		fail_msg("hard link lines missing in:\n%s", r.send_info);
	assert_int_equal(r.sender.stats.xferred_files, 2);
	eh_run_free(&r);
}

static void test_hard_links_split_without_H(void **state)
{
	struct eh_env *e = *state;
	struct eh_run r;
	struct stat s1, s2;

	make_linked_tree(e);
	const char *opts[] = {"-aii", NULL};
	assert_int_equal(eh_sync(&r, e, opts, 0), 0);
	assert_int_equal(r.code, 0);
	assert_true(eh_lstat(e, "dst/f1", &s1) && eh_lstat(e, "dst/d/f2", &s2));
	assert_int_not_equal(s1.st_ino, s2.st_ino);
	assert_int_equal(s1.st_nlink, 1);
	assert_true(eh_has_line(r.send_info, ">f+++++++++ f1"));
	assert_true(eh_has_line(r.send_info, ">f+++++++++ d/f2"));
	assert_int_equal(r.sender.stats.xferred_files, 3);
	eh_run_free(&r);
}

static void test_excludes_leave_names_out_of_the_list(void **state)
{
	struct eh_env *e = *state;
	struct eh_run r;
	struct stat st;

	eh_mkdir(e, "src/sub", 0755);
	eh_mkdir(e, "src/skip", 0755);
	eh_mkdir(e, "src/sub/skip", 0755);
	eh_write(e, "src/a.c", "c\n", 2, 0644, T_FILE);
	eh_write(e, "src/a.o", "o\n", 2, 0644, T_FILE);
	eh_write(e, "src/sub/b.o", "o\n", 2, 0644, T_FILE);
	eh_write(e, "src/sub/b.c", "c\n", 2, 0644, T_FILE);
	eh_write(e, "src/skip/x", "x\n", 2, 0644, T_FILE);
	eh_write(e, "src/sub/skip/y", "y\n", 2, 0644, T_FILE);

	/* "/skip/" is anchored at the transfer root: sub/skip stays */
	const char *opts[] = {"-aii", "--exclude=*.o", "--exclude=/skip/", NULL};
	assert_int_equal(eh_sync(&r, e, opts, 0), 0);
	assert_int_equal(r.code, 0);
	assert_true(eh_lstat(e, "dst/a.c", &st));
	assert_true(eh_lstat(e, "dst/sub/b.c", &st));
	assert_true(eh_lstat(e, "dst/sub/skip/y", &st));
	assert_false(eh_lstat(e, "dst/a.o", &st));
	assert_false(eh_lstat(e, "dst/sub/b.o", &st));
	assert_false(eh_lstat(e, "dst/skip", &st));
	assert_null(strstr(r.send_info, ".o\n"));
	assert_false(eh_has_line(r.send_info, "cd+++++++++ skip/"));
	/* ./ a.c sub/ sub/b.c sub/skip/ sub/skip/y */
	assert_int_equal(item_count(r.send_info), 6);
	assert_int_equal(r.sender.stats.num_files, 6);
	eh_run_free(&r);
}

/* A tree wide and deep enough for several incremental parts. */
static void make_wide_tree(struct eh_env *e)
{
	char rel[64];

	for (int i = 0; i < 6; i++) {
		snprintf(rel, sizeof rel, "src/d%d", i);
		eh_mkdir(e, rel, 0755);
		for (int j = 0; j < 3; j++) {
			snprintf(rel, sizeof rel, "src/d%d/e%d", i, j);
			eh_mkdir(e, rel, 0755);
			snprintf(rel, sizeof rel, "src/d%d/e%d/file", i, j);
			eh_write(e, rel, rel, strlen(rel), 0644, T_FILE + i * 10 + j);
		}
	}
}

static int cmp_lines(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The itemized lines of text, sorted, one string. */
static char *sorted_items(const char *text)
{
	char *copy = strdup(text), *lines[512], *save = NULL;
	size_t n = 0, len = 0;

	assert_non_null(copy);
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		if (strlen(l) > 12 && l[11] == ' ' && n < 512)
			lines[n++] = l;
	qsort(lines, n, sizeof *lines, cmp_lines);
	for (size_t i = 0; i < n; i++)
		len += strlen(lines[i]) + 1;
	char *out = calloc(1, len + 1);
	assert_non_null(out);
	for (size_t i = 0; i < n; i++)
		strcat(strcat(out, lines[i]), "\n");
	free(copy);
	return out;
}

static void test_incremental_recursion_on_and_off(void **state)
{
	struct eh_env *e = *state;
	struct eh_run inc, whole;

	make_wide_tree(e);
	const char *on[] = {"-aii", NULL};
	assert_int_equal(eh_sync(&inc, e, on, 0), 0);
	assert_int_equal(inc.code, 0);
	assert_true(inc.sender.inc_recurse);
	assert_true(inc.receiver.inc_recurse);

	eh_env_free(e);
	assert_int_equal(eh_env_init(e), 0);
	make_wide_tree(e);
	const char *off[] = {"-aii", "--no-inc-recursive", NULL};
	assert_int_equal(eh_sync(&whole, e, off, 0), 0);
	assert_int_equal(whole.code, 0);
	assert_false(whole.sender.inc_recurse);
	assert_false(whole.receiver.inc_recurse);

	/* the same entries reach the receiver either way: ./, 6 + 18 dirs,
	 * 18 files */
	char *a = sorted_items(inc.send_info), *b = sorted_items(whole.send_info);
	assert_string_equal(a, b);
	assert_int_equal(item_count(a), 43);
	assert_int_equal(inc.sender.stats.num_files, 43);
	assert_int_equal(whole.sender.stats.num_files, 43);
	assert_int_equal(inc.sender.stats.xferred_files, 18);
	assert_true(eh_same_content(e, "src/d5/e2/file", "dst/d5/e2/file"));
	free(a);
	free(b);
	eh_run_free(&inc);
	eh_run_free(&whole);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_nested_dirs_and_symlinks, env_setup,
						env_teardown),
		cmocka_unit_test_setup_teardown(test_hard_links_kept_with_H, env_setup,
						env_teardown),
		cmocka_unit_test_setup_teardown(test_hard_links_split_without_H, env_setup,
						env_teardown),
		cmocka_unit_test_setup_teardown(test_excludes_leave_names_out_of_the_list,
						env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(test_incremental_recursion_on_and_off, env_setup,
						env_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
