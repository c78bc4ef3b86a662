/*
 * daemon/config: &include and &merge of files and directories, and
 * --dparam; checked against rsync 3.5.0 as test_config.c says.
 */
#include "tests/unit/config_util.h"

/* &include: the file starts in the global section with the parent's
 * defaults, its global settings are dropped afterwards, and the parent
 * continues in the global section (rsync's ]push/]pop) -- checked
 * against rsync 3.5.0. */
static void test_include_file(void **state)
{
	struct daemon_config c = { 0 };
	char text[1024];

	write_file("inc1.conf", "comment = from-include-global\n"
				"motd file = /inc/motd\n"
				"[inc]\n"
				"  path = /tmp\n");
	snprintf(text, sizeof text,
		 "read only = no\n"
		 "[a]\n"
		 "  path = /tmp\n"
		 "  comment = A\n"
		 "&include %s\n"
		 "  comment = after-include\n"
		 "[b]\n"
		 "  path = /tmp\n",
		 tpath("inc1.conf"));
	load_ok(&c, text);
	assert_int_equal(c.nmodules, 3);
	assert_string_equal(c.modules[1].name, "inc");
	assert_string_equal(mod(&c, "a")->comment, "A");
	assert_string_equal(mod(&c, "inc")->comment, "from-include-global");
	assert_false(mod(&c, "inc")->read_only); /* inherits the parent's defaults */
	assert_string_equal(mod(&c, "b")->comment, "after-include");
	assert_null(c.motd_file); /* the include's globals were put back */
	{
		char want[600];

		snprintf(want, sizeof want, "%s:3", tpath("inc1.conf"));
		assert_string_equal(mod(&c, "inc")->defined_at, want);
	}
	config_free(&c);

	/* "&include = FILE" and "&INCLUDE FILE" work too */
	snprintf(text, sizeof text, "&INCLUDE = %s\n", tpath("inc1.conf"));
	load_ok(&c, text);
	assert_int_equal(c.nmodules, 1);
	config_free(&c);
}

static void test_include_dir(void **state)
{
	struct daemon_config c = { 0 };
	char text[1024];

	make_dir("conf.d");
	write_file("conf.d/b.conf", "list = no\n[bmod]\npath = /b\n");
	write_file("conf.d/a.conf", "[amod]\npath = /a\n[global]\ntimeout = 9\ncomment = ga\n");
	write_file("conf.d/c.conf", "[cmod]\npath = /c\n");
	write_file("conf.d/skip.inc", "this is not even valid\n");
	write_file("conf.d/README", "nor this\n");
	make_dir("empty.d");
	snprintf(text, sizeof text,
		 "timeout = 5\n"
		 "&include %s\n"
		 "&include %s\n"
		 "[last]\npath = /l\n",
		 tpath("conf.d"), tpath("empty.d"));
	load_ok(&c, text);
	assert_int_equal(c.nmodules, 4);
	assert_string_equal(c.modules[0].name, "amod"); /* sorted by name */
	assert_string_equal(c.modules[1].name, "bmod");
	assert_string_equal(c.modules[2].name, "cmod");
	assert_string_equal(c.modules[3].name, "last");
	/* each file starts from the same saved defaults */
	assert_false(mod(&c, "bmod")->list);
	assert_true(mod(&c, "cmod")->list);
	assert_int_equal(mod(&c, "bmod")->timeout, 5);
	assert_int_equal(mod(&c, "last")->timeout, 5);
	assert_int_equal(c.defaults.timeout, 5);
	/* the late string fallback uses the final defaults, not a.conf's */
	assert_null(mod(&c, "amod")->comment);
	config_free(&c);
}

/* &merge: text inserted in place -- it can continue the current module
 * and change the defaults for what follows. */
static void test_merge(void **state)
{
	struct daemon_config c = { 0 };
	char text[1024];

	write_file("common.inc", "  read only = no\n  comment = merged\n");
	make_dir("inc.d");
	write_file("inc.d/10-globals.inc", "motd file = /etc/motd\n");
	write_file("inc.d/20-more.inc", "max connections = 7\n");
	write_file("inc.d/ignored.conf", "[never]\npath=/n\n");
	snprintf(text, sizeof text,
		 "&merge %s\n"
		 "[a]\n"
		 "  path = /a\n"
		 "&merge %s\n"
		 "  timeout = 3\n"
		 "[b]\n"
		 "  path = /b\n",
		 tpath("inc.d"), tpath("common.inc"));
	load_ok(&c, text);
	assert_string_equal(c.motd_file, "/etc/motd");
	assert_int_equal(c.nmodules, 2);
	assert_int_equal(mod(&c, "a")->max_connections, 7);
	assert_false(mod(&c, "a")->read_only);
	assert_string_equal(mod(&c, "a")->comment, "merged");
	assert_int_equal(mod(&c, "a")->timeout, 3); /* still in [a] after the merge */
	assert_true(mod(&c, "b")->read_only);
	assert_null(config_find_module(&c, "never"));
	config_free(&c);
}

static void test_include_errors(void **state)
{
	struct daemon_config c = { 0 };
	char text[1024];

	snprintf(text, sizeof text, "\n&include %s\n", tpath("nope.conf"));
	load_fails(text, "&include: cannot stat \"");
	load_fails(text, "nope.conf\" (No such file or directory) at test.conf:2");

	/* an error inside an included file names that file and line */
	write_file("bad.conf", "[x]\npath=/x\nbogus = 1\n");
	snprintf(text, sizeof text, "&merge %s\n", tpath("bad.conf"));
	assert_int_equal(config_load_string(&c, text, "top.conf", err, sizeof err), -1);
	{
		char want[800];

		snprintf(want, sizeof want, "unknown parameter \"bogus\" at %s:3 (included from top.conf:1)",
			 tpath("bad.conf"));
		assert_string_equal(err, want);
	}

	/* loops, direct and through a directory */
	snprintf(text, sizeof text, "[a]\npath=/a\n&include %s\n", tpath("self.conf"));
	write_file("self.conf", text);
	assert_int_equal(config_load_file(&c, tpath("self.conf"), err, sizeof err), -1);
	assert_non_null(strstr(err, "&include loop: \""));
	assert_non_null(strstr(err, "self.conf\" is already being read"));
	make_dir("loop.d");
	snprintf(text, sizeof text, "&merge %s\n", tpath("loop.d"));
	write_file("loop.d/x.inc", text);
	assert_int_equal(config_load_file(&c, tpath("loop.d/x.inc"), err, sizeof err), -1);
	assert_non_null(strstr(err, "&include loop"));

	/* nesting: 8 levels are fine, 9 are not */
	for (int i = 0; i <= 9; i++) {
		char name[32];

		snprintf(name, sizeof name, "deep%d.conf", i);
		if (i == 9)
			snprintf(text, sizeof text, "[deep]\npath = /d\n");
		else
			snprintf(text, sizeof text, "&merge %s/deep%d.conf\n", tmpdir, i + 1);
		write_file(name, text);
	}
	assert_int_equal(config_load_file(&c, tpath("deep1.conf"), err, sizeof err), 0);
	assert_non_null(config_find_module(&c, "deep"));
	config_free(&c);
	assert_int_equal(config_load_file(&c, tpath("deep0.conf"), err, sizeof err), -1);
	assert_non_null(strstr(err, "&merge nested more than 8 deep at "));
	config_free(&c);
}

/* --dparam: applied at the end of the initial global section, so modules
 * inherit it and may override it (rsync's set_dparams). */
static void test_dparam(void **state)
{
	struct daemon_config c = { 0 };
	const char *text = "pid file = /run/conf.pid\n"
			   "timeout = 10\n"
			   "[a]\n  path = /a\n"
			   "[b]\n  path = /b\n  comment = own\n"
			   "[global]\n  max verbosity = 2\n"
			   "[c]\n  path = /c\n";

	assert_int_equal(config_set_param(&c, "pidfile", "/run/dp.pid", err, sizeof err), 0);
	assert_int_equal(config_set_param(&c, "Time Out", "  20", err, sizeof err), 0);
	assert_int_equal(config_add_dparam(&c, "comment=from dparam", err, sizeof err), 0);
	assert_int_equal(config_add_dparam(&c, "max verbosity=3", err, sizeof err), 0);
	load_ok(&c, text);
	assert_string_equal(c.pid_file, "/run/dp.pid");
	assert_int_equal(mod(&c, "a")->timeout, 20);
	assert_string_equal(mod(&c, "a")->comment, "from dparam");
	assert_string_equal(mod(&c, "b")->comment, "own");
	assert_int_equal(mod(&c, "a")->max_verbosity, 3);
	assert_int_equal(mod(&c, "c")->max_verbosity, 2); /* a later [global] wins */

	/* kept for a reload; but no new ones once loaded */
	load_ok(&c, "[z]\npath = /z\n");
	assert_int_equal(mod(&c, "z")->timeout, 20);
	assert_int_equal(c.nmodules, 1);
	assert_int_equal(config_set_param(&c, "timeout", "1", err, sizeof err), -1);
	assert_non_null(strstr(err, "must be set before the config is loaded"));
	config_free(&c);

	/* with no module at all they still reach the globals */
	assert_int_equal(config_add_dparam(&c, "port=8730", err, sizeof err), 0);
	load_ok(&c, "port = 873\n");
	assert_int_equal(c.port, 8730);
	config_free(&c);

	assert_int_equal(config_set_param(&c, "nosuch", "1", err, sizeof err), -1);
	assert_string_equal(err, "unknown parameter \"nosuch\" in --dparam");
	assert_int_equal(config_set_param(&c, "read only", "perhaps", err, sizeof err), -1);
	assert_non_null(strstr(err, "bad boolean \"perhaps\" for \"read only\""));
	assert_int_equal(config_add_dparam(&c, "motdfile", err, sizeof err), -1);
	assert_string_equal(err, "--dparam value is missing an '=': motdfile");
	assert_int_equal(c.ndparams, 0);
	config_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_include_file),
		cmocka_unit_test(test_include_dir),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_include_errors),
		cmocka_unit_test(test_dparam),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
