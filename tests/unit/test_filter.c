/*
 * Filter rules: the wildcard matcher (with rsync's own wildtest.txt
 * expectations), rule parsing in every form, matching semantics,
 * per-directory merge files. The filter list on the wire is in
 * test_filter_wire.c.
 */
#include "tests/unit/filter_util.h"

/* ------------------------------------------------------------ wildmatch */

/* From rsync's wildtest.txt: { expected, text, pattern }. */
static const struct {
	int match;
	const char *text, *pattern;
} wildtests[] = {
	{ 1, "foo", "foo" },
	{ 0, "foo", "bar" },
	{ 1, "", "" },
	{ 1, "foo", "???" },
	{ 0, "foo", "??" },
	{ 1, "foo", "*" },
	{ 1, "foo", "f*" },
	{ 0, "foo", "*f" },
	{ 1, "foo", "*foo*" },
	{ 1, "foobar", "*ob*a*r*" },
	{ 1, "aaaaaaabababab", "*ab" },
	{ 1, "foo*", "foo\\*" },
	{ 0, "foobar", "foo\\*bar" },
	{ 1, "f\\oo", "f\\\\oo" },
	{ 1, "ball", "*[al]?" },
	{ 0, "ten", "[ten]" },
	{ 1, "ten", "**[!te]" },
	{ 0, "ten", "**[!ten]" },
	{ 1, "ten", "t[a-g]n" },
	{ 0, "ten", "t[!a-g]n" },
	{ 1, "ton", "t[!a-g]n" },
	{ 1, "ton", "t[^a-g]n" },
	{ 1, "a]b", "a[]]b" },
	{ 1, "a-b", "a[]-]b" },
	{ 1, "a]b", "a[]-]b" },
	{ 0, "aab", "a[]-]b" },
	{ 1, "aab", "a[]a-]b" },
	{ 1, "]", "]" },
	{ 0, "foo/baz/bar", "foo*bar" },
	{ 1, "foo/baz/bar", "foo**bar" },
	{ 0, "foo/bar", "foo?bar" },
	{ 0, "foo/bar", "foo[/]bar" },
	{ 0, "foo/bar", "f[^eiu][^eiu][^eiu][^eiu][^eiu]r" },
	{ 1, "foo-bar", "f[^eiu][^eiu][^eiu][^eiu][^eiu]r" },
	{ 0, "foo", "**/foo" },
	{ 1, "/foo", "**/foo" },
	{ 1, "bar/baz/foo", "**/foo" },
	{ 0, "bar/baz/foo", "*/foo" },
	{ 0, "foo/bar/baz", "**/bar*" },
	{ 1, "deep/foo/bar/baz", "**/bar/*" },
	{ 0, "deep/foo/bar/baz/", "**/bar/*" },
	{ 1, "deep/foo/bar/baz/", "**/bar/**" },
	{ 0, "deep/foo/bar", "**/bar/*" },
	{ 1, "deep/foo/bar/", "**/bar/**" },
	{ 1, "foo/bar/baz", "**/bar**" },
	{ 1, "foo/bar/baz/x", "*/bar/**" },
	{ 0, "deep/foo/bar/baz/x", "*/bar/**" },
	{ 1, "deep/foo/bar/baz/x", "**/bar/*/*" },
	{ 0, "acrt", "a[c-c]st" },
	{ 1, "acrt", "a[c-c]rt" },
	{ 0, "]", "[!]-]" },
	{ 1, "a", "[!]-]" },
	{ 0, "", "\\" },
	{ 0, "\\", "\\" },
	{ 0, "/\\", "*/\\" },
	{ 1, "/\\", "*/\\\\" },
	{ 1, "foo", "foo" },
	{ 1, "@foo", "@foo" },
	{ 0, "foo", "@foo" },
	{ 1, "[ab]", "\\[ab]" },
	{ 1, "[ab]", "[[]ab]" },
	{ 1, "[ab]", "[[:]ab]" },
	{ 0, "[ab]", "[[::]ab]" },
	{ 1, "[ab]", "[[:digit]ab]" },
	{ 1, "[ab]", "[\\[:]ab]" },
	{ 1, "?a?b", "\\??\\?b" },
	{ 1, "abc", "\\a\\b\\c" },
	{ 0, "foo", "" },
	{ 1, "foo/bar/baz/to", "**/t[o]" },
	{ 1, "a1B", "[[:alpha:]][[:digit:]][[:upper:]]" },
	{ 0, "a", "[[:digit:][:upper:][:space:]]" },
	{ 1, "A", "[[:digit:][:upper:][:space:]]" },
	{ 1, "1", "[[:digit:][:upper:][:space:]]" },
	{ 0, "1", "[[:digit:][:upper:][:spaci:]]" },
	{ 1, " ", "[[:digit:][:upper:][:space:]]" },
	{ 0, ".", "[[:digit:][:upper:][:space:]]" },
	{ 1, ".", "[[:digit:][:punct:][:space:]]" },
	{ 1, "5", "[[:xdigit:]]" },
	{ 1, "f", "[[:xdigit:]]" },
	{ 1, "D", "[[:xdigit:]]" },
	{ 1, "_", "[[:alnum:][:alpha:][:blank:][:cntrl:][:digit:][:graph:][:lower:][:print:][:punct:][:space:][:upper:][:xdigit:]]" },
	{ 1, "\177", "[^[:alnum:][:alpha:][:blank:][:digit:][:graph:][:lower:][:print:][:punct:][:space:][:upper:][:xdigit:]]" },
	{ 1, ".", "[^[:alnum:][:alpha:][:blank:][:cntrl:][:digit:][:lower:][:space:][:upper:][:xdigit:]]" },
	{ 1, "5", "[a-c[:digit:]x-z]" },
	{ 1, "b", "[a-c[:digit:]x-z]" },
	{ 1, "y", "[a-c[:digit:]x-z]" },
	{ 0, "q", "[a-c[:digit:]x-z]" },
	{ 1, "]", "[\\\\-^]" },
	{ 0, "[", "[\\\\-^]" },
	{ 1, "-", "[\\-_]" },
	{ 1, "]", "[\\]]" },
	{ 0, "\\]", "[\\]]" },
	{ 0, "\\", "[\\]]" },
	{ 0, "ab", "a[]b" },
	{ 0, "a[]b", "a[]b" },
	{ 0, "ab[", "ab[" },
	{ 0, "ab", "[!" },
	{ 0, "ab", "[-" },
	{ 1, "-", "[-]" },
	{ 0, "-", "[a-" },
	{ 0, "-", "[!a-" },
	{ 1, "-", "[--A]" },
	{ 1, "5", "[--A]" },
	{ 1, " ", "[ --]" },
	{ 1, "$", "[ --]" },
	{ 1, "-", "[ --]" },
	{ 0, "0", "[ --]" },
	{ 1, "-", "[---]" },
	{ 1, "-", "[------]" },
	{ 0, "j", "[a-e-n]" },
	{ 1, "-", "[a-e-n]" },
	{ 1, "a", "[!------]" },
	{ 0, "[", "[]-a]" },
	{ 1, "^", "[]-a]" },
	{ 0, "^", "[!]-a]" },
	{ 1, "[", "[!]-a]" },
	{ 1, "^", "[a^bc]" },
	{ 1, "-b]", "[a-]b]" },
	{ 0, "\\", "[\\]" },
	{ 1, "\\", "[\\\\]" },
	{ 0, "\\", "[!\\\\]" },
	{ 1, "G", "[A-\\\\]" },
	{ 0, "aaabbb", "b*a" },
	{ 0, "aabcaa", "*ba*" },
	{ 1, ",", "[,]" },
	{ 1, ",", "[\\\\,]" },
	{ 1, "\\", "[\\\\,]" },
	{ 1, "-", "[,-.]" },
	{ 0, "+", "[,-.]" },
	{ 0, "-.]", "[,-.]" },
	{ 1, "2", "[\\1-\\3]" },
	{ 1, "3", "[\\1-\\3]" },
	{ 0, "4", "[\\1-\\3]" },
	{ 1, "\\", "[[-\\]]" },
	{ 1, "[", "[[-\\]]" },
	{ 1, "]", "[[-\\]]" },
	{ 0, "-", "[[-\\]]" },
	{ 1, "-adobe-courier-bold-o-normal--12-120-75-75-m-70-iso8859-1", "-*-*-*-*-*-*-12-*-*-*-m-*-*-*" },
	{ 0, "-adobe-courier-bold-o-normal--12-120-75-75-X-70-iso8859-1", "-*-*-*-*-*-*-12-*-*-*-m-*-*-*" },
	{ 0, "-adobe-courier-bold-o-normal--12-120-75-75-/-70-iso8859-1", "-*-*-*-*-*-*-12-*-*-*-m-*-*-*" },
	{ 1, "/adobe/courier/bold/o/normal//12/120/75/75/m/70/iso8859/1", "/*/*/*/*/*/*/12/*/*/*/m/*/*/*" },
	{ 0, "/adobe/courier/bold/o/normal//12/120/75/75/X/70/iso8859/1", "/*/*/*/*/*/*/12/*/*/*/m/*/*/*" },
	{ 1, "abcd/abcdefg/abcdefghijk/abcdefghijklmnop.txt", "**/*a*b*g*n*t" },
	{ 0, "abcd/abcdefg/abcdefghijk/abcdefghijklmnop.txtz", "**/*a*b*g*n*t" },
};

static void test_wildtest_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof wildtests / sizeof wildtests[0]; i++) {
		bool got = wildmatch(wildtests[i].pattern, wildtests[i].text);
		if (got != (bool)wildtests[i].match)
			fail_msg("wildtest %zu: '%s' vs '%s': expected %d", i, wildtests[i].text,
				 wildtests[i].pattern, wildtests[i].match);
	}
}

static void test_wildmatch_basics(void **state)
{
	(void)state;
	assert_true(wildmatch("*.c", "foo.c"));
	assert_false(wildmatch("*.c", "dir/foo.c"));     /* '*' stops at '/' */
	assert_true(wildmatch("**.c", "dir/foo.c"));     /* '**' does not */
	assert_true(wildmatch("a/**/b", "a/x/y/b"));
	assert_false(wildmatch("a/**/b", "a/b"));
	assert_true(wildmatch("a/***", "a/"));
	assert_false(wildmatch("?", "/"));
	assert_false(wildmatch("[!a]", "/"));            /* a class never matches '/' */
	assert_true(wildmatch("[[:alpha:]][[:digit:]]", "x9"));
	assert_false(wildmatch("[[:bogus:]]", "x"));     /* unknown class: no match */
	assert_false(wildmatch("a[bc", "ab"));           /* unterminated class */
	assert_true(wildmatch("[\\]]", "]"));
	assert_true(wildmatch("\\*", "*"));
	assert_false(wildmatch("\\*", "x"));
	assert_false(wildmatch("abc\\", "abc"));         /* lone trailing backslash */
	assert_true(wildmatch("", ""));
	assert_false(wildmatch("", "x"));
}

static void test_wildmatch_where(void **state)
{
	(void)state;
	/* where > 0: the last N elements */
	assert_true(wildmatch_where("b/*", "a/b/c", 2));
	assert_false(wildmatch_where("a/*", "a/b/c", 2));
	assert_false(wildmatch_where("x/*", "c", 2));     /* too few elements */
	assert_true(litmatch_where("b/c", "a/b/c", 2));
	assert_true(litmatch_where("c", "c", 1));
	assert_false(litmatch_where("b/c", "c", 2));
	/* where < 0: at the start or after any '/' */
	assert_true(wildmatch_where("b/**", "a/b/c", -1));
	assert_true(wildmatch_where("a**", "a/b/c", -1));
	assert_false(wildmatch_where("b**", "ab/c", -1));
	assert_true(wildmatch_where("c**", "a/b/c", -1));
	assert_false(wildmatch_where("b/**", "a/b/c", 0));
}

static double now_sec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Patterns that make a naive backtracker take exponential time. */
static void test_wildmatch_no_blowup(void **state)
{
	char text[4001], pat[200] = "";
	double t0 = now_sec();

	(void)state;
	memset(text, 'a', sizeof text - 1);
	text[sizeof text - 1] = '\0';
	for (int i = 0; i < 20; i++)
		strcat(pat, "*a");
	strcat(pat, "*b");
	assert_false(wildmatch(pat, text));
	memset(pat, 0, sizeof pat);
	for (int i = 0; i < 20; i++)
		strcat(pat, "**a");
	strcat(pat, "**b");
	assert_false(wildmatch(pat, text));
	assert_false(wildmatch_where(pat, text, -1));
	for (size_t i = 1; i < sizeof text - 1; i += 2)
		text[i] = '/';
	assert_false(wildmatch_where("*a*a*a*a*a*a*a*a*a*a*b", text, -1));
	assert_true(now_sec() - t0 < 5.0);
}

/* -------------------------------------------------------------- helpers */

/* Parse one rule text into a fresh list and return the list's text. */
static const char *parse1(const char *text, int flags)
{
	static char out[4096];
	struct filter_list fl;
	char err[512];

	filter_list_init(&fl);
	if (filter_parse_rule(&fl, text, flags, err, sizeof err) < 0)
		fail_msg("'%s' failed: %s", text, err);
	snprintf(out, sizeof out, "%s", list_str(&fl));
	filter_list_free(&fl);
	return out;
}

/* Parse text expecting an error; returns the message. */
static const char *parse_err(const char *text, int flags)
{
	static char err[512];
	struct filter_list fl;

	filter_list_init(&fl);
	if (filter_parse_rule(&fl, text, flags, err, sizeof err) == 0)
		fail_msg("'%s' parsed as '%s', expected an error", text, list_str(&fl));
	filter_list_free(&fl);
	return err;
}

static char tmpdir[PATH_MAX];

static void mk_tmpdir(void)
{
	snprintf(tmpdir, sizeof tmpdir, "%s/ferry-filter.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	assert_non_null(mkdtemp(tmpdir));
}

static void rm_tmpdir(void)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	assert_int_equal(system(cmd), 0);
}

/* Write content to tmpdir/rel, creating directories on the way. */
static const char *put_file(const char *rel, const char *content)
{
	static char path[2 * PATH_MAX + 2];
	char *s;
	FILE *fp;

	snprintf(path, sizeof path, "%s/%s", tmpdir, rel);
	for (s = path + strlen(tmpdir) + 1; (s = strchr(s, '/')) != NULL; s++) {
		*s = '\0';
		mkdir(path, 0755);
		*s = '/';
	}
	assert_non_null(fp = fopen(path, "w"));
	fputs(content, fp);
	fclose(fp);
	return path;
}

static const char *tmp_path(const char *rel)
{
	static char path[2 * PATH_MAX + 2];

	snprintf(path, sizeof path, "%s%s%s", tmpdir, *rel ? "/" : "", rel);
	return path;
}

/* ------------------------------------------------------------- parsing */

static void test_parse_short_and_long(void **state)
{
	(void)state;
	assert_string_equal(parse1("- *.o", 0), "- *.o");
	assert_string_equal(parse1("exclude *.o", 0), "- *.o");
	assert_string_equal(parse1("+ foo/", 0), "+ foo/");
	assert_string_equal(parse1("include foo", 0), "+ foo");
	assert_string_equal(parse1("-_foo", 0), "- foo");          /* '_' for the space */
	assert_string_equal(parse1("exclude_foo", 0), "- foo");
	assert_string_equal(parse1("-  foo", 0), "-  foo");        /* more spaces: pattern */
	assert_string_equal(parse1("H foo", 0), "-s foo");
	assert_string_equal(parse1("hide foo", 0), "-s foo");
	assert_string_equal(parse1("S foo", 0), "+s foo");
	assert_string_equal(parse1("show foo", 0), "+s foo");
	assert_string_equal(parse1("P foo", 0), "-r foo");
	assert_string_equal(parse1("protect foo", 0), "-r foo");
	assert_string_equal(parse1("R foo", 0), "+r foo");
	assert_string_equal(parse1("risk foo", 0), "+r foo");
	assert_string_equal(parse1(": .rules", 0), ": .rules");
	assert_string_equal(parse1("dir-merge .rules", 0), ": .rules");
	assert_string_equal(parse1("foo bar", FILTER_PARSE_OLD_PREFIXES), "- foo bar");
}

static void test_parse_modifiers(void **state)
{
	(void)state;
	assert_string_equal(parse1("-/ /abs/x", 0), "-/ /abs/x");
	assert_string_equal(parse1("-! *.c", 0), "-! *.c");
	assert_string_equal(parse1("-p *.o", 0), "-p *.o");
	assert_string_equal(parse1("-x user.*", 0), "-x user.*");
	assert_string_equal(parse1("-s x", 0), "-s x");
	assert_string_equal(parse1("+r x", 0), "+r x");
	assert_string_equal(parse1("-sr x", 0), "-sr x");
	assert_string_equal(parse1("+,/ x", 0), "+/ x");           /* comma form */
	assert_string_equal(parse1("include,/ x", 0), "+/ x");
	assert_string_equal(parse1("exclude,!p x", 0), "-!p x");
	assert_string_equal(parse1("Hp x", 0), "-sp x");
	assert_string_equal(parse1(":n- .rules", 0), ":n- .rules");
	assert_string_equal(parse1("dir-merge,n- .rules", 0), ":n- .rules");
	assert_string_equal(parse1(":w+ .inc", 0), ":w+ .inc");
	assert_string_equal(parse1(":s .filt", 0), ":s .filt");
	assert_string_equal(parse1(":C", 0), ":C .cvsignore");     /* default name */
	assert_string_equal(parse1("dir-merge,C", 0), ":C .cvsignore");
	/* 'e' adds an exclude of the file itself, before the rule */
	assert_string_equal(parse1(":e .rules", 0), "- .rules|: .rules");
	assert_string_equal(parse1("dir-merge,e sub/.rules", 0), "- .rules|: sub/.rules");
	/* dedup: a second dir-merge of the same file name is dropped */
	struct filter_list fl;
	build(&fl, ": .rules", "- x", ":n .rules", NULL);
	assert_string_equal(list_str(&fl), ": .rules|- x");
	filter_list_free(&fl);
}

static void test_parse_old_prefixes(void **state)
{
	(void)state;
	int old = FILTER_PARSE_OLD_PREFIXES;
	assert_string_equal(parse1("foo", old), "- foo");
	assert_string_equal(parse1("foo", old | FILTER_PARSE_INCLUDE), "+ foo");
	assert_string_equal(parse1("- foo", old | FILTER_PARSE_INCLUDE), "- foo");
	assert_string_equal(parse1("+ foo", old), "+ foo");
	assert_string_equal(parse1("-foo", old), "- -foo");
	assert_string_equal(parse1("H foo", old), "- H foo");
	assert_string_equal(parse1("!foo", old), "- !foo");         /* not a clear */
	struct filter_list fl;
	build(&fl, "- a", NULL);
	assert_int_equal(filter_parse_rule(&fl, "!", old, NULL, 0), 0);
	assert_int_equal(filter_list_count(&fl), 0);
	filter_list_free(&fl);
}

static void test_parse_clear(void **state)
{
	struct filter_list fl;

	(void)state;
	build(&fl, "- a", ": .r", "+ b", "!", "- c", NULL);
	assert_string_equal(list_str(&fl), "- c");
	assert_int_equal(fl.ndms, 0);                              /* dir-merge gone too */
	parse_ok(&fl, "clear");
	assert_int_equal(filter_list_count(&fl), 0);
	parse_ok(&fl, "- d");
	parse_ok(&fl, "!,");
	assert_int_equal(filter_list_count(&fl), 0);
	filter_list_free(&fl);
}

static void test_parse_delete_excluded(void **state)
{
	(void)state;
	int de = FILTER_PARSE_DELETE_EXCLUDED;
	assert_string_equal(parse1("- foo", de), "-s foo");
	assert_string_equal(parse1("+ foo", de), "+s foo");
	assert_string_equal(parse1("P foo", de), "-r foo");        /* already one-sided */
	assert_string_equal(parse1(": .r", de), ": .r");
}

static void test_parse_errors(void **state)
{
	const char *e;

	(void)state;
	e = parse_err("x foo", 0);
	assert_non_null(strstr(e, "Unknown filter rule"));
	assert_non_null(strstr(e, "x foo"));
	assert_non_null(strstr(parse_err("exclud foo", 0), "Unknown filter rule: exclud foo"));
	assert_non_null(strstr(parse_err("clearx", 0), "Unknown filter rule"));
	e = parse_err("-z foo", 0);
	assert_non_null(strstr(e, "invalid modifier 'z' at position 1"));
	assert_non_null(strstr(e, "-z foo"));
	assert_non_null(strstr(parse_err("-foo", 0), "invalid modifier 'f'"));
	assert_non_null(strstr(parse_err("-e x", 0), "invalid modifier 'e'"));  /* merge only */
	assert_non_null(strstr(parse_err("-n x", 0), "invalid modifier 'n'"));
	assert_non_null(strstr(parse_err("-w x", 0), "invalid modifier 'w'"));
	assert_non_null(strstr(parse_err("-- x", 0), "invalid modifier '-'"));
	assert_non_null(strstr(parse_err(".! x", 0), "invalid modifier '!'"));
	assert_non_null(strstr(parse_err(":-+ x", 0), "invalid modifier '+'"));
	assert_non_null(strstr(parse_err("Hs x", 0), "invalid modifier 's'"));
	assert_non_null(strstr(parse_err("Pr x", 0), "invalid modifier 'r'"));
	assert_non_null(strstr(parse_err("HC x", 0), "invalid modifier 'C'"));
	assert_non_null(strstr(parse_err("-", 0), "unexpected end of filter rule: -"));
	assert_non_null(strstr(parse_err("- ", 0), "unexpected end of filter rule"));
	assert_non_null(strstr(parse_err("+", 0), "unexpected end of filter rule"));
	assert_non_null(strstr(parse_err(":", 0), "unexpected end of filter rule"));
	assert_non_null(strstr(parse_err("! x", 0), "'!' rule has trailing characters: ! x"));
	assert_non_null(strstr(parse_err("clear x", 0), "'!' rule has trailing characters"));
	e = parse_err(". /nonexistent/ferry-rules", 0);
	assert_non_null(strstr(e, "failed to open exclude file /nonexistent/ferry-rules"));
	e = parse_err("merge,+ /nonexistent/ferry-rules", 0);
	assert_non_null(strstr(e, "failed to open include file"));
	/* a peer may not make us read local files */
	assert_non_null(strstr(parse_err(". /etc/passwd", FILTER_PARSE_FROM_PEER),
			       "not accepted from the remote side"));
}

static void test_parse_merge_file(void **state)
{
	struct filter_list fl;
	char rule[PATH_MAX + 32], err[512];

	(void)state;
	mk_tmpdir();
	put_file("all.rules", "# comment\n; another\n\n- *.o\r\n+ keep/\rinclude x\n"
			      ": .per-dir\n!\n- after-clear\nH hidden\n+ last");
	snprintf(rule, sizeof rule, ". %s", tmp_path("all.rules"));
	build(&fl, "- first", rule, NULL);
	assert_string_equal(list_str(&fl), "- after-clear|-s hidden|+ last");
	filter_list_free(&fl);

	put_file("prefixed.rules", "- a\n+ b\n- c\n");
	snprintf(rule, sizeof rule, "merge %s", tmp_path("prefixed.rules"));
	build(&fl, rule, NULL);
	assert_string_equal(list_str(&fl), "- a|+ b|- c");
	filter_list_free(&fl);

	/* "merge,-": every line an exclude pattern, no prefixes */
	put_file("ex.rules", "# c\n+ b\n*.tmp\n");
	snprintf(rule, sizeof rule, "merge,- %s", tmp_path("ex.rules"));
	build(&fl, rule, NULL);
	assert_string_equal(list_str(&fl), "- + b|- *.tmp");
	filter_list_free(&fl);
	snprintf(rule, sizeof rule, ".+ %s", tmp_path("ex.rules"));
	build(&fl, rule, NULL);
	assert_string_equal(list_str(&fl), "+ + b|+ *.tmp");
	filter_list_free(&fl);

	/* modifiers of the merge rule become the rules' defaults */
	snprintf(rule, sizeof rule, "merge,-/p %s", tmp_path("ex.rules"));
	build(&fl, rule, NULL);
	assert_string_equal(list_str(&fl), "-/p + b|-/p *.tmp");
	filter_list_free(&fl);

	/* word-split: whitespace separates rules, no comments */
	put_file("words", "a b\t c\n#d\n");
	snprintf(rule, sizeof rule, ".w- %s", tmp_path("words"));
	build(&fl, rule, NULL);
	assert_string_equal(list_str(&fl), "- a|- b|- c|- #d");
	filter_list_free(&fl);

	/* a side given by the merge rule excludes sides in the file */
	put_file("sided", "H x\n");
	snprintf(rule, sizeof rule, ".s %s", tmp_path("sided"));
	filter_list_init(&fl);
	assert_int_equal(filter_parse_rule(&fl, rule, 0, err, sizeof err), -1);
	assert_non_null(strstr(err, "specified-side merge file contains specified-side filter"));
	/* errors in a file's contents name the place, not the text */
	assert_non_null(strstr(err, "line 1"));
	filter_list_free(&fl);
	put_file("bad", "- ok\n?bad\n");
	snprintf(rule, sizeof rule, ". %s", tmp_path("bad"));
	filter_list_init(&fl);
	assert_int_equal(filter_parse_rule(&fl, rule, 0, err, sizeof err), -1);
	assert_non_null(strstr(err, "Unknown filter rule"));
	assert_non_null(strstr(err, "bad line 2"));
	assert_null(strstr(err, "?bad"));
	filter_list_free(&fl);

	/* a merge file that merges itself stops at the depth limit */
	put_file("loop", "");
	snprintf(rule, sizeof rule, ". %s\n", tmp_path("loop"));
	put_file("loop", rule);
	snprintf(rule, sizeof rule, ". %s", tmp_path("loop"));
	filter_list_init(&fl);
	assert_int_equal(filter_parse_rule(&fl, rule, 0, err, sizeof err), -1);
	assert_non_null(strstr(err, "depth limit"));
	filter_list_free(&fl);
	rm_tmpdir();
}

static void test_parse_from_opts(void **state)
{
	struct ferry_opts o;
	struct filter_arg args[] = { { .text = "- *.bin" }, { .text = "+ sub/" }, { .text = "- /foo" },
				       { .text = ":- .rules" } };
	struct filter_list fl;
	char err[256];

	(void)state;
	memset(&o, 0, sizeof o);
	o.filters = args;
	o.nfilters = 4;
	filter_list_init(&fl);
	assert_int_equal(filter_list_from_opts(&fl, &o, err, sizeof err), 0);
	assert_string_equal(list_str(&fl), "- *.bin|+ sub/|- /foo|:- .rules");
	filter_list_free(&fl);
	o.delete_excluded = true;
	filter_list_init(&fl);
	assert_int_equal(filter_list_from_opts(&fl, &o, err, sizeof err), 0);
	assert_string_equal(list_str(&fl), "-s *.bin|+s sub/|-s /foo|:- .rules");
	filter_list_free(&fl);
	args[1].text = "bogus rule";
	filter_list_init(&fl);
	assert_int_equal(filter_list_from_opts(&fl, &o, err, sizeof err), -1);
	assert_non_null(strstr(err, "bogus rule"));
	filter_list_free(&fl);
}

/* ------------------------------------------------------------ matching */

static void test_match_forms(void **state)
{
	struct filter_list fl;

	(void)state;
	build(&fl, "- *.o", NULL);
	assert_int_equal(F(&fl, "a.o"), -1);
	assert_int_equal(F(&fl, "dir/sub/a.o"), -1);
	assert_int_equal(D(&fl, "dir.o"), -1);
	assert_int_equal(F(&fl, "a.c"), 0);
	assert_int_equal(F(&fl, "a.o/b"), 0);
	filter_list_free(&fl);

	build(&fl, "- /foo", NULL);                      /* anchored */
	assert_int_equal(F(&fl, "foo"), -1);
	assert_int_equal(F(&fl, "/foo"), -1);            /* a leading slash is ignored */
	assert_int_equal(F(&fl, "x/foo"), 0);
	assert_int_equal(F(&fl, "foo/x"), 0);
	filter_list_free(&fl);

	build(&fl, "- foo/", NULL);                      /* directories only */
	assert_int_equal(D(&fl, "foo"), -1);
	assert_int_equal(D(&fl, "a/foo"), -1);
	assert_int_equal(F(&fl, "foo"), 0);
	filter_list_free(&fl);

	build(&fl, "- foo/bar", NULL);                   /* the last two elements */
	assert_int_equal(F(&fl, "foo/bar"), -1);
	assert_int_equal(F(&fl, "x/foo/bar"), -1);
	assert_int_equal(F(&fl, "xfoo/bar"), 0);
	assert_int_equal(F(&fl, "bar"), 0);
	filter_list_free(&fl);

	build(&fl, "- foo/*/bar", NULL);
	assert_int_equal(F(&fl, "foo/x/bar"), -1);
	assert_int_equal(F(&fl, "a/foo/x/bar"), -1);
	assert_int_equal(F(&fl, "foo/x/y/bar"), 0);
	filter_list_free(&fl);

	build(&fl, "- /foo/**/bar", NULL);               /* man page example */
	assert_int_equal(F(&fl, "foo/x/bar"), -1);
	assert_int_equal(F(&fl, "foo/x/y/bar"), -1);
	assert_int_equal(F(&fl, "foo/bar"), 0);
	assert_int_equal(F(&fl, "z/foo/x/bar"), 0);
	filter_list_free(&fl);

	build(&fl, "- **/bar", NULL);                    /* leading "**" */
	assert_int_equal(F(&fl, "bar"), -1);
	assert_int_equal(F(&fl, "a/b/bar"), -1);
	assert_int_equal(F(&fl, "a/xbar"), 0);
	filter_list_free(&fl);

	build(&fl, "- sub**", NULL);                     /* infix/trailing "**": any level */
	assert_int_equal(F(&fl, "sub"), -1);
	assert_int_equal(F(&fl, "a/sub/x/y"), -1);
	assert_int_equal(F(&fl, "a/xsub"), 0);
	filter_list_free(&fl);

	build(&fl, "- foo/***", NULL);                   /* dir and contents */
	assert_int_equal(D(&fl, "foo"), -1);
	assert_int_equal(F(&fl, "foo/x"), -1);
	assert_int_equal(D(&fl, "foo/x/y"), -1);
	assert_int_equal(F(&fl, "a/foo/x"), -1);
	assert_int_equal(F(&fl, "foo"), 0);              /* a file named foo */
	filter_list_free(&fl);

	build(&fl, "- /foo/***", NULL);
	assert_int_equal(D(&fl, "foo"), -1);
	assert_int_equal(F(&fl, "foo/x"), -1);
	assert_int_equal(F(&fl, "a/foo/x"), 0);
	filter_list_free(&fl);

	build(&fl, "- ?.[ch]", "- [!a]x", "- lit\\*", NULL);
	assert_int_equal(F(&fl, "a.c"), -1);
	assert_int_equal(F(&fl, "ab.c"), 0);
	assert_int_equal(F(&fl, "bx"), -1);
	assert_int_equal(F(&fl, "ax"), 0);
	assert_int_equal(F(&fl, "lit*"), -1);
	assert_int_equal(F(&fl, "litx"), 0);
	filter_list_free(&fl);

	build(&fl, "- back\\slash", NULL);               /* no wildcard: literal */
	assert_int_equal(F(&fl, "back\\slash"), -1);
	assert_int_equal(F(&fl, "backslash"), 0);
	filter_list_free(&fl);

	build(&fl, "- name with spaces", NULL);
	assert_int_equal(F(&fl, "d/name with spaces"), -1);
	filter_list_free(&fl);
}

static void test_match_order(void **state)
{
	struct filter_list fl;

	(void)state;
	build(&fl, "+ keep.o", "- *.o", NULL);           /* first match wins */
	assert_int_equal(F(&fl, "keep.o"), 1);
	assert_int_equal(F(&fl, "x/keep.o"), 1);
	assert_int_equal(F(&fl, "other.o"), -1);
	filter_list_free(&fl);

	build(&fl, "- *.o", "+ keep.o", NULL);
	assert_int_equal(F(&fl, "keep.o"), -1);
	filter_list_free(&fl);

	/* the man page's "all dirs and .c files but nothing else" */
	build(&fl, "+ */", "+ *.c", "- *", NULL);
	assert_int_equal(D(&fl, "sub"), 1);
	assert_int_equal(D(&fl, "sub/deeper"), 1);
	assert_int_equal(F(&fl, "sub/a.c"), 1);
	assert_int_equal(F(&fl, "sub/a.h"), -1);
	assert_int_equal(F(&fl, "README"), -1);
	filter_list_free(&fl);

	/* only foo/ and foo/bar.c */
	build(&fl, "+ foo/", "+ foo/bar.c", "- *", NULL);
	assert_int_equal(D(&fl, "foo"), 1);
	assert_int_equal(F(&fl, "foo/bar.c"), 1);
	assert_int_equal(F(&fl, "foo/baz.c"), -1);
	assert_int_equal(D(&fl, "other"), -1);
	filter_list_free(&fl);

	/* man page: x/y/file.txt only */
	build(&fl, "+ x/", "+ x/y/", "+ x/y/file.txt", "- *", NULL);
	assert_int_equal(D(&fl, "x"), 1);
	assert_int_equal(D(&fl, "x/y"), 1);
	assert_int_equal(F(&fl, "x/y/file.txt"), 1);
	assert_int_equal(F(&fl, "x/y/zzz.txt"), -1);
	assert_int_equal(D(&fl, "x/z"), -1);
	filter_list_free(&fl);
}

static void test_match_negate_and_kinds(void **state)
{
	struct filter_list fl;

	(void)state;
	build(&fl, "-! *.c", NULL);                      /* exclude what does not match */
	assert_int_equal(F(&fl, "a.h"), -1);
	assert_int_equal(F(&fl, "a.c"), 0);
	filter_list_free(&fl);

	build(&fl, "-! */", NULL);                       /* negated dir-only: files match */
	assert_int_equal(F(&fl, "file"), -1);
	assert_int_equal(D(&fl, "dir"), 0);
	filter_list_free(&fl);

	build(&fl, "-x user.*", "- *.x", NULL);          /* xattr rules skip paths */
	assert_int_equal(F(&fl, "user.foo"), 0);
	assert_int_equal(F(&fl, "a.x"), -1);
	filter_list_free(&fl);

	build(&fl, "-p *.o", "- *.tmp", NULL);
	assert_int_equal(filter_check_flags(&fl, "a.o", FILTER_CHECK_RECEIVER), -1);
	assert_int_equal(filter_check_flags(&fl, "a.o", FILTER_CHECK_RECEIVER |
					    FILTER_CHECK_IGNORE_PERISHABLE), 0);
	assert_int_equal(filter_check_flags(&fl, "a.tmp", FILTER_CHECK_IGNORE_PERISHABLE), -1);
	filter_list_free(&fl);

	assert_int_equal(filter_check(NULL, "x", false, false), 0);
	build(&fl, "- *", NULL);
	assert_int_equal(F(&fl, ""), 0);                 /* an empty name never matches */
	filter_list_free(&fl);
}

static void test_match_sides(void **state)
{
	struct filter_list fl;

	(void)state;
	build(&fl, "H hid", "P prot", "S shown", "R risked", "-s sx", "-r rx", "-sr both",
	      "- plain", "- *", NULL);
	/* sender: hide/show and 's' rules count, protect/risk and 'r' do not */
	assert_int_equal(filter_check(&fl, "hid", false, false), -1);
	assert_int_equal(filter_check(&fl, "shown", false, false), 1);
	assert_int_equal(filter_check(&fl, "prot", false, false), -1);   /* by "- *" */
	assert_int_equal(filter_check(&fl, "risked", false, false), -1);
	assert_int_equal(filter_check(&fl, "sx", false, false), -1);
	assert_int_equal(filter_check(&fl, "both", false, false), -1);
	/* receiver: the other way round */
	assert_int_equal(filter_check(&fl, "hid", false, true), -1);     /* by "- *" */
	assert_int_equal(filter_check(&fl, "shown", false, true), -1);
	assert_int_equal(filter_check(&fl, "risked", false, true), 1);
	assert_int_equal(filter_check(&fl, "prot", false, true), -1);
	assert_int_equal(filter_check(&fl, "rx", false, true), -1);
	assert_int_equal(filter_check(&fl, "both", false, true), -1);
	filter_list_free(&fl);

	build(&fl, "H hid", "R *", NULL);
	assert_int_equal(filter_check(&fl, "hid", false, true), 1);
	assert_int_equal(filter_check(&fl, "other", false, false), 0);
	filter_list_free(&fl);

	/* --delete-excluded: plain rules are the sender's only */
	filter_list_init(&fl);
	assert_int_equal(filter_parse_rule(&fl, "- *.o", FILTER_PARSE_DELETE_EXCLUDED, NULL, 0), 0);
	assert_int_equal(filter_parse_rule(&fl, "P keep.o", FILTER_PARSE_DELETE_EXCLUDED, NULL, 0), 0);
	assert_int_equal(filter_check(&fl, "a.o", false, false), -1);
	assert_int_equal(filter_check(&fl, "a.o", false, true), 0);
	assert_int_equal(filter_check(&fl, "keep.o", false, true), -1);
	filter_list_free(&fl);
}

/* A daemon module's "exclude = /d/" covers d's subtree (clientserver.c:
 * XFLG_DIR2WILD3); a bare "/d", and an include "d/", do not change. */
static void test_dir2wild3(void **state)
{
	const int daemon = FILTER_PARSE_OLD_PREFIXES | FILTER_PARSE_DIR2WILD3;
	struct filter_list fl;

	(void)state;
	filter_list_init(&fl);
	assert_int_equal(filter_parse_rule(&fl, "/secret/", daemon, NULL, 0), 0);
	assert_int_equal(filter_check(&fl, "secret", true, false), -1);
	/* "d/" + "***" matches d itself only as a directory, as in rsync */
	assert_int_equal(filter_check(&fl, "secret", false, false), 0);
	assert_int_equal(filter_check(&fl, "secret/x/y", false, false), -1);
	assert_int_equal(filter_check(&fl, "secrets", true, false), 0);
	filter_list_free(&fl);

	filter_list_init(&fl);
	assert_int_equal(filter_parse_rule(&fl, "/secret", daemon, NULL, 0), 0);
	assert_int_equal(filter_check(&fl, "secret", true, false), -1);
	assert_int_equal(filter_check(&fl, "secret/x", false, false), 0);
	filter_list_free(&fl);

	filter_list_init(&fl);
	assert_int_equal(filter_parse_rule(&fl, "+ /open/", daemon, NULL, 0), 0);
	assert_int_equal(filter_check(&fl, "open", true, false), 1);
	assert_int_equal(filter_check(&fl, "open/x", false, false), 0);
	filter_list_free(&fl);

	/* without the flag "/secret/" is a directory rule only */
	filter_list_init(&fl);
	assert_int_equal(filter_parse_rule(&fl, "/secret/", FILTER_PARSE_OLD_PREFIXES, NULL, 0), 0);
	assert_int_equal(filter_check(&fl, "secret", false, false), 0);
	assert_int_equal(filter_check(&fl, "secret/x", false, false), 0);
	filter_list_free(&fl);
}

static void test_match_abs_modifier(void **state)
{
	struct filter_list fl;

	(void)state;
	build(&fl, "-/ /home/me/foo", "-/ /home/me/*.tmp", NULL);
	assert_int_equal(filter_set_abs_root(&fl, "/home/me"), 0);
	assert_int_equal(F(&fl, "foo"), -1);
	assert_int_equal(F(&fl, "a.tmp"), -1);
	assert_int_equal(F(&fl, "x/foo"), 0);
	assert_int_equal(filter_set_abs_root(&fl, "/home"), 0);
	assert_int_equal(F(&fl, "me/foo"), -1);
	assert_int_equal(F(&fl, "foo"), 0);
	filter_list_free(&fl);
}

static void test_match_cvs(void **state)
{
	struct filter_list fl;

	(void)state;
	setenv("CVSIGNORE", "*.extra", 1);
	setenv("HOME", "/nonexistent-ferry-home", 1);
	build(&fl, "+ keep.o", "-C", "- last", NULL);
	assert_string_equal(list_str(&fl), "+ keep.o|-C |- last");
	assert_int_equal(F(&fl, "keep.o"), 1);
	assert_int_equal(F(&fl, "a.o"), -1);
	assert_int_equal(F(&fl, "core"), -1);
	assert_int_equal(D(&fl, "CVS"), -1);
	assert_int_equal(D(&fl, ".git"), -1);
	assert_int_equal(F(&fl, ".git"), 0);             /* ".git/" is dir-only */
	assert_int_equal(F(&fl, "x.extra"), -1);
	assert_int_equal(F(&fl, "main.c"), 0);
	assert_int_equal(F(&fl, "last"), -1);
	filter_list_free(&fl);
	unsetenv("CVSIGNORE");
}

/* --------------------------------------------------- per-directory files */

static void test_dir_merge(void **state)
{
	struct filter_list fl;
	char err[512];

	(void)state;
	mk_tmpdir();
	put_file(".rules", "- *.log\n- /top-only\n");
	put_file("sub/.rules", "+ important.log\n- *.bak\n- /anch\n");
	put_file("sub/deep/keep", "");
	put_file("other/.rules", "!\n- *.txt\n");
	build(&fl, "+ global-keep.log", ": .rules", "- *.o", NULL);

	assert_int_equal(F(&fl, "a.log"), 0);             /* nothing pushed yet */
	assert_int_equal(filter_push_dir(&fl, tmpdir, "", err, sizeof err), 0);
	assert_int_equal(F(&fl, "a.log"), -1);
	assert_int_equal(F(&fl, "global-keep.log"), 1);   /* earlier global rule wins */
	assert_int_equal(F(&fl, "top-only"), -1);
	assert_int_equal(F(&fl, "a.o"), -1);              /* later global rule */

	assert_int_equal(filter_push_dir(&fl, tmp_path("sub"), "sub", err, sizeof err), 0);
	assert_int_equal(F(&fl, "sub/important.log"), 1); /* this dir's rules first */
	assert_int_equal(F(&fl, "sub/x.log"), -1);        /* inherited */
	assert_int_equal(F(&fl, "sub/a.bak"), -1);
	assert_int_equal(F(&fl, "sub/top-only"), 0);      /* anchored at its own dir */
	assert_int_equal(F(&fl, "sub/anch"), -1);
	assert_int_equal(F(&fl, "sub/x/anch"), 0);

	assert_int_equal(filter_push_dir(&fl, tmp_path("sub/deep"), "sub/deep/", err, sizeof err), 0);
	assert_int_equal(F(&fl, "sub/deep/a.bak"), -1);
	assert_int_equal(F(&fl, "sub/deep/important.log"), 1);
	assert_int_equal(F(&fl, "sub/deep/anch"), 0);
	filter_pop_dir(&fl);
	filter_pop_dir(&fl);
	assert_int_equal(F(&fl, "x.bak"), 0);             /* sub's rules are gone */
	assert_int_equal(F(&fl, "important.log"), -1);

	/* '!' in a per-dir file drops the inherited rules */
	assert_int_equal(filter_push_dir(&fl, tmp_path("other"), "other", err, sizeof err), 0);
	assert_int_equal(F(&fl, "other/a.log"), 0);
	assert_int_equal(F(&fl, "other/a.txt"), -1);
	filter_pop_dir(&fl);
	filter_pop_dir(&fl);
	assert_int_equal(fl.depth, 0);
	assert_int_equal(F(&fl, "a.log"), 0);
	filter_pop_dir(&fl);                              /* harmless when unbalanced */
	filter_list_free(&fl);
	rm_tmpdir();
}

static void test_dir_merge_modifiers(void **state)
{
	struct filter_list fl;
	char err[512];

	(void)state;
	mk_tmpdir();
	put_file(".ex", "*.a\n+ b\n");
	put_file("sub/.ex", "*.s\n");
	put_file("sub/sub2/x", "");
	put_file(".more", ": .nested\n- m1\n");
	put_file(".nested", "- n0\n");
	put_file("sub/.nested", "- n1\n");
	put_file(".side", "H x\n");
	build(&fl, ":n- .ex", ": .more", NULL);

	assert_int_equal(filter_push_dir(&fl, tmpdir, ".", err, sizeof err), 0);
	assert_int_equal(F(&fl, "f.a"), -1);
	assert_int_equal(F(&fl, "+ b"), -1);              /* '-': no prefixes in the file */
	assert_int_equal(F(&fl, "m1"), -1);
	assert_int_equal(F(&fl, "n0"), -1);               /* nested dir-merge, read here too */
	assert_int_equal(filter_push_dir(&fl, tmp_path("sub"), "sub", err, sizeof err), 0);
	assert_int_equal(F(&fl, "sub/f.a"), 0);           /* 'n': not inherited */
	assert_int_equal(F(&fl, "sub/f.s"), -1);
	assert_int_equal(F(&fl, "sub/n1"), -1);
	assert_int_equal(F(&fl, "sub/n0"), -1);           /* nested one inherits */
	assert_int_equal(filter_push_dir(&fl, tmp_path("sub/sub2"), "sub/sub2", err, sizeof err), 0);
	assert_int_equal(F(&fl, "sub/sub2/f.s"), 0);
	assert_int_equal(F(&fl, "sub/sub2/n1"), -1);
	filter_pop_dir(&fl);
	filter_pop_dir(&fl);
	filter_pop_dir(&fl);
	assert_int_equal(fl.ndms, 2);                     /* the nested one is gone */
	filter_list_free(&fl);

	/* a sided dir-merge file must not name sides itself */
	build(&fl, ":s .side", NULL);
	assert_int_equal(filter_push_dir(&fl, tmpdir, "", err, sizeof err), -1);
	assert_non_null(strstr(err, "specified-side"));
	assert_non_null(strstr(err, ".side line 1"));
	assert_int_equal(fl.depth, 0);                    /* the failed push is undone */
	filter_list_free(&fl);
	build(&fl, ":e .side", NULL);
	assert_int_equal(filter_push_dir(&fl, tmpdir, "", err, sizeof err), 0);
	assert_int_equal(F(&fl, ".side"), -1);            /* 'e' */
	assert_int_equal(F(&fl, "x"), -1);
	assert_int_equal(filter_check(&fl, "x", false, true), 0);
	filter_pop_dir(&fl);
	filter_list_free(&fl);
	rm_tmpdir();
}

/* A dir-merge name with a parent directory in it (like -F's
 * "/.rsync-filter") is also read in the transfer root's parents. */
static void test_dir_merge_parent_scan(void **state)
{
	struct filter_list fl;
	char err[512], rule[PATH_MAX + 16], root[PATH_MAX];

	(void)state;
	mk_tmpdir();
	put_file(".rf", "- *.top\n");
	put_file("a/.rf", "- *.par\n- /b/anch\n");
	put_file("a/b/.rf", "+ keep.par\n");
	put_file("a/b/c/x", "");
	assert_non_null(realpath(tmpdir, root));
	snprintf(rule, sizeof rule, ": %s/a/.rf", root);
	build(&fl, rule, NULL);
	snprintf(rule, sizeof rule, "%s/a/b", root);
	assert_int_equal(filter_push_dir(&fl, rule, "", err, sizeof err), 0);
	assert_int_equal(F(&fl, "x.par"), -1);            /* from a/.rf */
	assert_int_equal(F(&fl, "keep.par"), 1);          /* a/b/.rf comes first */
	assert_int_equal(F(&fl, "anch"), -1);             /* "/b/anch" relative to a/ */
	assert_int_equal(F(&fl, "c/anch"), 0);
	assert_int_equal(F(&fl, "x.top"), 0);             /* above the named dir */
	filter_pop_dir(&fl);
	filter_list_free(&fl);

	/* a relative name works the same: "../.rf" from a/b */
	build(&fl, ": ../.rf", NULL);
	assert_int_equal(filter_push_dir(&fl, rule, "", err, sizeof err), 0);
	assert_int_equal(F(&fl, "x.par"), -1);
	filter_pop_dir(&fl);
	filter_list_free(&fl);

	/* not on a server: it does not look outside the transfer */
	filter_list_init(&fl);
	snprintf(rule, sizeof rule, ": %s/a/.rf", root);
	assert_int_equal(filter_parse_rule(&fl, rule, FILTER_PARSE_FROM_PEER, err, sizeof err), 0);
	snprintf(rule, sizeof rule, "%s/a/b", root);
	assert_int_equal(filter_push_dir(&fl, rule, "", err, sizeof err), 0);
	assert_int_equal(F(&fl, "x.par"), 0);
	assert_int_equal(F(&fl, "keep.par"), 1);
	filter_pop_dir(&fl);
	filter_list_free(&fl);
	rm_tmpdir();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dir2wild3),
		cmocka_unit_test(test_wildtest_table),
		cmocka_unit_test(test_wildmatch_basics),
		cmocka_unit_test(test_wildmatch_where),
		cmocka_unit_test(test_wildmatch_no_blowup),
		cmocka_unit_test(test_parse_short_and_long),
		cmocka_unit_test(test_parse_modifiers),
		cmocka_unit_test(test_parse_old_prefixes),
		cmocka_unit_test(test_parse_clear),
		cmocka_unit_test(test_parse_delete_excluded),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_parse_merge_file),
		cmocka_unit_test(test_parse_from_opts),
		cmocka_unit_test(test_match_forms),
		cmocka_unit_test(test_match_order),
		cmocka_unit_test(test_match_negate_and_kinds),
		cmocka_unit_test(test_match_sides),
		cmocka_unit_test(test_match_abs_modifier),
		cmocka_unit_test(test_match_cvs),
		cmocka_unit_test(test_dir_merge),
		cmocka_unit_test(test_dir_merge_modifiers),
		cmocka_unit_test(test_dir_merge_parent_scan),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
