/*
 * The name normaliser (proto/base/fname.c: clean_fname): rsync's results for
 * each caller's flags, and, for every name of up to 9 characters from
 * "/", "." and two letters, the same result as the four normalisers it
 * replaced (kept below as oracles, verbatim).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "proto/base/fname.h"

/* ---- the oracles: the copies clean_fname replaced ---- */

/* logfmt.c: clean_name, clean_fname(name, 0) */
static void old_logfmt(char *name)
{
	char *f = name, *t = name;
	bool anchored = *f == '/';

	if (anchored)
		*t++ = *f++;
	while (*f) {
		if (*f == '/') {
			f++;
			continue;
		}
		if (f[0] == '.' && f[1] == '/') {
			f += 2;
			continue;
		}
		while (*f && (*t++ = *f++) != '/')
			;
	}
	if (t > name + (anchored ? 1 : 0) && t[-1] == '/')
		t--;
	if (t == name)
		*t++ = '.';
	*t = '\0';
}

/* flist.c: flist_clean_name, CFN_REFUSE_DOT_DOT_DIRS */
static bool old_flist(char *name)
{
	char *t = name, *f = name;
	bool anchored = *f == '/';

	if (anchored)
		*t++ = *f++;
	while (*f) {
		if (*f == '/') {
			f++;
			continue;
		}
		if (*f == '.') {
			if (f[1] == '/') {
				f += 2;
				continue;
			}
			if (f[1] == '.' && (f[2] == '/' || f[2] == '\0'))
				return false;
		}
		while (*f && (*t++ = *f++) != '/')
			;
	}
	if (t > name + anchored && t[-1] == '/')
		t--;
	if (t == name)
		*t++ = '.';
	*t = '\0';
	return true;
}

/* flist_build.c: clean_relative, KEEP_TRAILING_SLASH | DROP_TRAILING_DOT_DIR */
static size_t old_relative(char *name)
{
	char *t = name, *f = name;
	bool anchored = *f == '/';

	if (anchored)
		*t++ = *f++;
	while (*f) {
		if (*f == '/') {
			f++;
			continue;
		}
		if (*f == '.' && f[1] == '/') {
			f += 2;
			continue;
		}
		if (*f == '.' && f[1] == '\0')
			break;
		while (*f && (*t++ = *f++) != '/')
			;
	}
	if (t == name)
		*t++ = '.';
	*t = '\0';
	return (size_t)(t - name);
}

/* filter.c: clean_path, CFN_COLLAPSE_DOT_DOT_DIRS on an absolute path */
static void old_filter(char *p)
{
	char *out = p + 1;
	const char *in = p + 1;

	while (*in) {
		const char *e = strchr(in, '/');
		size_t n = e ? (size_t)(e - in) : strlen(in);
		if (n == 0 || (n == 1 && in[0] == '.')) {
			/* skip */
		} else if (n == 2 && in[0] == '.' && in[1] == '.') {
			if (out > p + 1) {
				out--;
				while (out > p + 1 && out[-1] != '/')
					out--;
			}
		} else {
			memmove(out, in, n);
			out += n;
			if (e)
				*out++ = '/';
		}
		if (!e)
			break;
		in = e + 1;
	}
	if (out > p + 1 && out[-1] == '/')
		out--;
	*out = '\0';
}

/* ---- rsync's results ---- */

static void expect(const char *in, unsigned flags, const char *out)
{
	char buf[64];

	snprintf(buf, sizeof buf, "%s", in);
	ssize_t n = clean_fname(buf, flags);
	if (!out) {
		assert_int_equal(n, -1);
		return;
	}
	assert_string_equal(buf, out);
	assert_int_equal(n, (ssize_t)strlen(out));
}

static void test_plain(void **state)
{
	(void)state;
	expect("", 0, ".");
	expect("/", 0, "/");
	expect("//a//b//", 0, "/a/b");
	expect("./a/./b/", 0, "a/b");
	expect("a/.", 0, "a/.");
	expect("a/../b", 0, "a/../b");
	expect("./", 0, ".");
	expect("...", 0, "...");
}

static void test_refuse_dot_dot(void **state)
{
	(void)state;
	expect("a/b", CFN_REFUSE_DOT_DOT_DIRS, "a/b");
	expect("..", CFN_REFUSE_DOT_DOT_DIRS, NULL);
	expect("a/..", CFN_REFUSE_DOT_DOT_DIRS, NULL);
	expect("a/../b", CFN_REFUSE_DOT_DOT_DIRS, NULL);
	expect("/../etc", CFN_REFUSE_DOT_DOT_DIRS, NULL);
	expect("a/..b/c..", CFN_REFUSE_DOT_DOT_DIRS, "a/..b/c..");
	expect(".//..", CFN_REFUSE_DOT_DOT_DIRS, NULL);
}

static void test_relative(void **state)
{
	const unsigned f = CFN_KEEP_TRAILING_SLASH | CFN_DROP_TRAILING_DOT_DIR;

	(void)state;
	expect("a/b/", f, "a/b/");
	expect("a/.", f, "a/");
	expect(".", f, ".");
	expect("/.", f, "/");
	expect("./a//", f, "a/");
	expect("a/../", f, "a/../");
}

static void test_collapse(void **state)
{
	const unsigned f = CFN_COLLAPSE_DOT_DOT_DIRS;

	(void)state;
	expect("/a/b/../c", f, "/a/c");
	expect("/a/..", f, "/");
	expect("/../../a", f, "/a");
	expect("/a/./b/.", f, "/a/b");
	expect("//a//b//", f, "/a/b");
	expect("/a/b/c/../../d/", f, "/a/d");
}

/* ---- the oracles agree on every short name ---- */

static void check_one(const char *name)
{
	char a[16], b[16];

	strcpy(a, name);
	strcpy(b, name);
	old_logfmt(a);
	assert_true(clean_fname(b, 0) == (ssize_t)strlen(a));
	assert_string_equal(a, b);

	strcpy(a, name);
	strcpy(b, name);
	bool ok = old_flist(a);
	ssize_t n = clean_fname(b, CFN_REFUSE_DOT_DOT_DIRS);
	assert_true(ok == (n >= 0));
	if (ok)
		assert_string_equal(a, b);

	strcpy(a, name);
	strcpy(b, name);
	size_t len = old_relative(a);
	assert_true(clean_fname(b, CFN_KEEP_TRAILING_SLASH | CFN_DROP_TRAILING_DOT_DIR) ==
		    (ssize_t)len);
	assert_string_equal(a, b);

	if (name[0] == '/') { /* filter.c only cleaned absolute paths */
		strcpy(a, name);
		strcpy(b, name);
		old_filter(a);
		assert_true(clean_fname(b, CFN_COLLAPSE_DOT_DOT_DIRS) == (ssize_t)strlen(a));
		assert_string_equal(a, b);
	}
}

static void test_same_as_before(void **state)
{
	static const char alphabet[] = "/.ab";
	char name[16];

	(void)state;
	for (int len = 0; len <= 9; len++) {
		long total = 1;
		for (int i = 0; i < len; i++)
			total *= 4;
		for (long code = 0; code < total; code++) {
			long c = code;
			for (int i = 0; i < len; i++, c /= 4)
				name[i] = alphabet[c % 4];
			name[len] = '\0';
			check_one(name);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_refuse_dot_dot),
		cmocka_unit_test(test_relative),
		cmocka_unit_test(test_collapse),
		cmocka_unit_test(test_same_as_before),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
