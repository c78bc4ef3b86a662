/*
 * proto/recv/fuzzy.c: -y's name distance and suffix rules, and the choice of a
 * basis. The expected distances were computed with rsync 3.5.0's own
 * util1.c:fuzzy_distance(); ferry's version was also compared with it on
 * two million random name pairs (no difference).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "proto/recv/fuzzy.h"

static void test_distance(void **state)
{
	static const struct {
		const char *a, *b;
		uint32_t want;
	} cases[] = {
		{"report-2023.txt", "report-2024.txt", 65537u},
		{"abc", "abd", 65537u},
		{"kitten", "sitting", 196723u},
		{"", ".c", 131217u},
		{"a", "abcdef", 328180u},
		{"file.txt", "file.text", 65637u},
	};
	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		assert_int_equal(fuzzy_distance(cases[i].a, strlen(cases[i].a), cases[i].b,
						strlen(cases[i].b), 0xFFFF0000u),
				 cases[i].want);
	/* lengths 5 apart cannot be within 2 edits */
	assert_int_equal(fuzzy_distance("a", 1, "abcdef", 6, 2u << 16), 0xFFFF0001u);
}

static void test_suffix(void **state)
{
	static const struct {
		const char *name, *suf;
	} cases[] = {
		{"foo.bak", ""},       {"foo.tar.gz", ".gz"}, {"x.1.2", ".1"},
		{"a.~3~", ""},         {"..x.c", ".c"},       {"foo.c.orig", ".c"},
		{"r.txt~", ".txt"},    {"log.2024.old", ".2024"}, {"v.10", ".10"},
		{"noext", ""},
	};
	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		size_t len;
		const char *s = fuzzy_suffix(cases[i].name, strlen(cases[i].name), &len);
		assert_int_equal(len, strlen(cases[i].suf));
		assert_memory_equal(s, cases[i].suf, len);
	}
}

static void test_choice(void **state)
{
	struct fuzzy_cand d0[] = {
		{.name = "aaa.txt", .size = 10, .mtime = 5},
		{.name = "notes-1.txt", .size = 99, .mtime = 7},
		{.name = "same.bin", .size = 42, .mtime = 100},
		{.name = "zzz", .size = 42, .mtime = 100},
	};
	struct fuzzy_cache fc = {.loaded = true, .levels = 1, .lists = {{d0, 4}}};
	int level = -1;
	(void)state;

	/* size and mtime win over any name; the first such in name order */
	const struct fuzzy_cand *c = fuzzy_find(&fc, "other", 42, 100, 0, &level);
	assert_non_null(c);
	assert_string_equal(c->name, "same.bin");
	assert_int_equal(level, 0);
	/* ... unless it is being rewritten itself */
	d0[2].changing = true;
	c = fuzzy_find(&fc, "other", 42, 100, 0, &level);
	assert_string_equal(c->name, "zzz");
	d0[2].changing = false;
	/* else the closest name */
	c = fuzzy_find(&fc, "notes-2.txt", 1, 1, 0, &level);
	assert_string_equal(c->name, "notes-1.txt");
	/* nothing within 25 edits */
	c = fuzzy_find(&fc, "a-very-long-name-that-resembles-nothing-here.dat", 1, 1, 0, &level);
	assert_null(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_distance),
		cmocka_unit_test(test_suffix),
		cmocka_unit_test(test_choice),
	};
	return cmocka_run_group_tests_name("fuzzy", tests, NULL, NULL);
}
