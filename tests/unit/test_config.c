/*
 * daemon/config: the rsyncd.conf parser. The syntax cases (continuations,
 * comments, section names, [global], &include/&merge, the header-time
 * snapshot of defaults and the late fallback of strings, %VAR%) were checked
 * against real rsync 3.5.0 by listing the modules of an `rsync --daemon`
 * run on the same text; where ferry is stricter (errors instead of rsync's
 * warnings) the test says so.
 */
#include "tests/unit/config_util.h"

/* ------------------------------------------------------------------ tests */

/* rsync's defaults (daemon-parm.txt), through config_init and an empty file. */
static void test_defaults(void **state)
{
	struct daemon_config c;

	config_init(&c);
	for (int pass = 0; pass < 2; pass++) {
		const struct daemon_module *d = &c.defaults;

		assert_null(c.motd_file);
		assert_null(c.pid_file);
		assert_null(c.address);
		assert_null(c.socket_options);
		assert_null(c.daemon_chroot);
		assert_null(c.proxy_protocol_hosts);
		assert_int_equal(c.port, 0); /* 873 unless --port */
		assert_int_equal(c.listen_backlog, 1024); /* rsync: 5 */
		assert_false(c.proxy_protocol);
		assert_int_equal(c.max_connections_per_host, 0); /* off */
		assert_int_equal(c.ssh_max_startups.start, 10); /* sshd's 10:30:100 */
		assert_int_equal(c.ssh_max_startups.rate, 30);
		assert_int_equal(c.ssh_max_startups.full, 100);

		assert_null(d->path);
		assert_null(d->comment);
		assert_true(d->list);
		assert_true(d->read_only);
		assert_false(d->write_only);
		assert_null(d->uid);
		assert_null(d->gid);
		assert_int_equal(d->use_chroot, CONFIG_UNSET);
		assert_int_equal(d->numeric_ids, CONFIG_UNSET);
		assert_int_equal(d->munge_symlinks, CONFIG_UNSET);
		assert_int_equal(d->open_noatime, CONFIG_UNSET);
		assert_int_equal(d->max_connections, 0);
		assert_string_equal(d->lock_file, "/var/run/rsyncd.lock");
		assert_null(d->auth_users);
		assert_null(d->secrets_file);
		assert_null(d->auth_digest);
		assert_true(d->strict_modes);
		assert_null(d->hosts_allow);
		assert_null(d->hosts_deny);
		assert_false(d->ignore_errors);
		assert_false(d->ignore_nonreadable);
		assert_null(d->refuse_options);
		assert_non_null(d->dont_compress);
		assert_true(strncmp(d->dont_compress, "*.3g2 *.3gp *.7z ", 17) == 0);
		assert_non_null(strstr(d->dont_compress, " *.zip *.zst"));
		assert_int_equal(d->timeout, 0);
		assert_null(d->log_file);
		assert_int_equal(d->syslog_facility, LOG_DAEMON);
		assert_string_equal(d->syslog_tag, "rsyncd");
		assert_string_equal(d->log_format, "%o %h [%a] %m (%u) %f %l");
		assert_false(d->transfer_logging);
		assert_int_equal(d->max_verbosity, 1);
		assert_true(d->reverse_lookup);
		assert_true(d->forward_lookup);
		assert_false(d->fake_super);
		assert_false(d->insecure_links);
		assert_null(d->charset);
		assert_null(d->temp_dir);
		assert_null(d->name_converter);
		assert_int_equal(c.nmodules, 0);

		if (pass == 0)
			load_ok(&c, "");
	}
	config_free(&c);
}

/* The table holds exactly daemon-parm.txt's parameters, plus ferry's SSH
 * listener parameters. */
static void test_table_complete(void **state)
{
	static const char *globals[] = {
		"address", "daemon chroot", "daemon gid", "daemon uid", "motd file", "pid file",
		"proxy protocol hosts", "socket options", "listen backlog", "port",
		"proxy protocol", "ssh host key", "ssh port", "ssh login grace time",
		"ssh max auth tries", "ssh max startups", "max connections per host",
	};
	static const char *locals[] = {
		"auth digest", "auth users", "charset", "comment", "dont compress", "early exec",
		"exclude", "exclude from", "filter", "gid", "hosts allow", "hosts deny",
		"include", "include from", "incoming chmod", "lock file", "log file",
		"log format", "name", "name converter", "outgoing chmod", "post-xfer exec",
		"pre-xfer exec", "refuse options", "secrets file", "syslog tag", "uid", "path",
		"temp dir", "max connections", "max verbosity", "timeout", "syslog facility",
		"fake super", "forward lookup", "ignore errors", "ignore nonreadable",
		"insecure links", "list", "read only", "reverse lookup", "strict modes",
		"transfer logging", "write only", "munge symlinks", "numeric ids", "open noatime",
		"use chroot", "ssh authorized keys", "ssh allow server",
	};
	size_t n;

	config_params(&n);
	assert_int_equal(n, sizeof globals / sizeof *globals + sizeof locals / sizeof *locals);
	for (size_t i = 0; i < sizeof globals / sizeof *globals; i++) {
		const struct config_param *p = config_param_find(globals[i]);

		assert_non_null(p);
		assert_true(p->global_only);
	}
	for (size_t i = 0; i < sizeof locals / sizeof *locals; i++) {
		const struct config_param *p = config_param_find(locals[i]);

		if (!p)
			fail_msg("missing parameter \"%s\"", locals[i]);
		assert_false(p->global_only);
	}
}

/* Names: case-insensitive, blanks ignored; '-' first is never a name. */
static void test_param_names(void **state)
{
	const struct config_param *p = config_param_find("read only");

	assert_non_null(p);
	assert_ptr_equal(config_param_find("readonly"), p);
	assert_ptr_equal(config_param_find("Read Only"), p);
	assert_ptr_equal(config_param_find("  READ\t ON LY "), p);
	assert_ptr_equal(config_param_find("pre-xfer exec"), config_param_find("PRE-XFEREXEC"));
	assert_null(config_param_find("prexfer exec")); /* '-' is not a blank */
	assert_null(config_param_find("read_only"));
	assert_null(config_param_find("-port"));
	assert_null(config_param_find(""));
}

static void test_basic_syntax(void **state)
{
	struct daemon_config c = { 0 };
	const struct daemon_module *m;

	load_ok(&c, "  # comment\n"
		    "\t; another comment\n"
		    "\n"
		    "   motd file   =   /etc/motd   \n"
		    "Pid File=/run/x.pid\n"
		    "[ftp]\n"
		    "  path = /srv/ftp\n"
		    "  comment = a = b; c # d [e]\n"
		    "  readonly = no\n"
		    "  Write  Only = 0\n"
		    "  refuse options =\n");
	assert_string_equal(c.motd_file, "/etc/motd");
	assert_string_equal(c.pid_file, "/run/x.pid");
	assert_int_equal(c.nmodules, 1);
	m = mod(&c, "ftp");
	assert_string_equal(m->path, "/srv/ftp");
	/* only the first '=' counts; '#' and ';' inside a value are text */
	assert_string_equal(m->comment, "a = b; c # d [e]");
	assert_false(m->read_only);
	assert_false(m->write_only);
	assert_string_equal(m->refuse_options, ""); /* set, to empty */
	assert_string_equal(m->defined_at, "test.conf:6");
	config_free(&c);
}

/* A trailing '\' joins lines: verbatim in values (blanks of the next line
 * kept, trailing ones trimmed), compressed in names and section names. */
static void test_continuation(void **state)
{
	struct daemon_config c = { 0 };
	const struct daemon_module *m;

	load_ok(&c, "[ M   two ]\n"
		    "  path=/tmp\n"
		    "  comment = two = three \\\n"
		    "     continued   \n"
		    "  read \\\n"
		    "     only = \\\n"
		    "  no\n"
		    "[long \\\n"
		    "   name]\n"
		    "  path = /x \\   \n"
		    "/y\n"
		    "  exclude = a\\\n"
		    "# not a comment\n");
	m = mod(&c, "M two");
	assert_string_equal(m->comment, "two = three      continued");
	assert_false(m->read_only);
	m = mod(&c, "long name");
	assert_string_equal(m->path, "/x /y");
	assert_string_equal(m->exclude, "a# not a comment");
	config_free(&c);
}

/* CR is dropped from values and is a blank elsewhere (CRLF files work);
 * text after "]" is ignored; a line starting with '\' loses it. */
static void test_crlf_and_oddities(void **state)
{
	struct daemon_config c = { 0 };
	const struct daemon_module *m;

	load_ok(&c, "timeout = 30\r\n"
		    "[m1] trailing junk\r\n"
		    "  path = /srv/m1\r\n"
		    "  comment = a\rb\r\n"
		    "\\ max verbosity = 3\r\n");
	assert_int_equal(c.defaults.timeout, 30);
	m = mod(&c, "m1");
	assert_string_equal(m->path, "/srv/m1");
	assert_string_equal(m->comment, "ab");
	assert_int_equal(m->max_verbosity, 3);
	config_free(&c);
}

/* Globals before the first section and after [global]; module parameters
 * there are defaults that each module copies at its header (booleans and
 * numbers), while a string a module never set falls back to the final
 * default (rsync's accessors) -- both checked against rsync 3.5.0. */
static void test_inheritance(void **state)
{
	struct daemon_config c = { 0 };

	load_ok(&c, "uid = nobody\n"
		    "max connections = 4\n"
		    "read only = no\n"
		    "[a]\n"
		    "  path = /a\n"
		    "[global]\n"
		    "  comment = shared\n"
		    "  list = no\n"
		    "  motd file = /etc/motd\n"
		    "[b]\n"
		    "  path = /b\n"
		    "  uid = alice\n"
		    "[c]\n"
		    "  path = /c\n"
		    "  list = yes\n"
		    "  read only = yes\n"
		    "[ GLO bal ]\n"
		    "  timeout = 60\n");
	assert_string_equal(c.motd_file, "/etc/motd");
	assert_string_equal(mod(&c, "a")->uid, "nobody");
	assert_string_equal(mod(&c, "b")->uid, "alice");
	assert_int_equal(mod(&c, "c")->max_connections, 4);
	assert_false(mod(&c, "a")->read_only);
	assert_true(mod(&c, "c")->read_only);
	/* list: snapshot at the header */
	assert_true(mod(&c, "a")->list);
	assert_false(mod(&c, "b")->list);
	assert_true(mod(&c, "c")->list);
	/* comment: [a] never set it, so it gets the final default */
	assert_string_equal(mod(&c, "a")->comment, "shared");
	assert_int_equal(mod(&c, "c")->timeout, 0);
	assert_int_equal(c.defaults.timeout, 60);
	assert_false(c.defaults.list);
	assert_int_equal(c.nmodules, 3);
	config_free(&c);
}

/* A repeated header reopens the module, matched ignoring case and blanks;
 * lookups by clients are exact. */
static void test_sections(void **state)
{
	struct daemon_config c = { 0 };

	load_ok(&c, "[Data]\n"
		    "  path = /data/\n"
		    "[other]\n"
		    "  path = /\n"
		    "[da ta]\n"
		    "  comment = reopened\n"
		    "  temp dir = /tmp//\n");
	assert_int_equal(c.nmodules, 2);
	assert_string_equal(mod(&c, "Data")->comment, "reopened");
	assert_null(config_find_module(&c, "data"));
	assert_null(config_find_module(&c, "Dat"));
	assert_string_equal(mod(&c, "Data")->path, "/data"); /* trailing '/' dropped */
	assert_string_equal(mod(&c, "Data")->temp_dir, "/tmp");
	assert_string_equal(mod(&c, "other")->path, "/");
	assert_string_equal(c.modules[0].name, "Data");
	assert_string_equal(c.modules[1].name, "other");
	config_free(&c);

	load_fails("[a/b]\npath=/x\n", "invalid module name \"a/b\" (it may not contain '/') at test.conf:1");
	load_fails("\n[]\n", "empty section name at test.conf:2");
	load_fails("[  ]\n", "empty section name at test.conf:1");
	load_fails("[mod\npath = /x\n", "section header \"[mod\" has no closing ']' at test.conf:1");
	load_fails("[mod", "unexpected end of file in section header \"[mod\" at test.conf:1");
}

static void test_booleans(void **state)
{
	static const char *yes[] = { "yes", "YES", "Yes", "true", "TRUE", "True", "1", " y e s " };
	static const char *no[] = { "no", "NO", "false", "False", "0" };
	static const char *bad[] = { "", "y", "on", "off", "2", "yess", "-1", "unset", "nope" };
	struct daemon_config c = { 0 };
	bool b;

	for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
		b = false;
		assert_true(config_parse_bool(yes[i], &b));
		assert_true(b);
	}
	for (size_t i = 0; i < sizeof no / sizeof *no; i++) {
		b = true;
		assert_true(config_parse_bool(no[i], &b));
		assert_false(b);
	}
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		b = true;
		if (config_parse_bool(bad[i], &b))
			fail_msg("\"%s\" taken as a boolean", bad[i]);
		assert_true(b);
	}
	assert_false(config_parse_bool(NULL, &b));

	/* three-state parameters also take unset / -1 */
	load_ok(&c, "[m]\npath=/m\nuse chroot = TRUE\nnumeric ids = no\n"
		    "munge symlinks = unset\nopen noatime = -1\n"
		    "[n]\npath=/n\nuse chroot = false\nmunge symlinks = 1\n");
	assert_int_equal(mod(&c, "m")->use_chroot, 1);
	assert_int_equal(mod(&c, "m")->numeric_ids, 0);
	assert_int_equal(mod(&c, "m")->munge_symlinks, CONFIG_UNSET);
	assert_int_equal(mod(&c, "m")->open_noatime, CONFIG_UNSET);
	assert_int_equal(mod(&c, "n")->use_chroot, 0);
	assert_int_equal(mod(&c, "n")->munge_symlinks, 1);
	config_free(&c);

	/* rsync only warns here; ferry refuses */
	load_fails("[m]\npath = /m\nread only = maybe\n",
		   "bad boolean \"maybe\" for \"read only\" (use yes/no, true/false or 1/0) at test.conf:3");
	load_fails("list =\n", "bad boolean \"\" for \"list\"");
	load_fails("use chroot = sometimes\n", "bad boolean \"sometimes\" for \"use chroot\" "
						"(use yes/no, true/false, 1/0 or unset) at test.conf:1");
	load_fails("proxy protocol = unset\n", "bad boolean \"unset\" for \"proxy protocol\"");
}

static void test_integers(void **state)
{
	struct daemon_config c = { 0 };

	load_ok(&c, "port = 8873\nlisten backlog = 64\nmax verbosity = 4\n"
		    "[m]\npath=/m\nmax connections = -1\ntimeout = +600\n");
	assert_int_equal(c.port, 8873);
	assert_int_equal(c.listen_backlog, 64);
	assert_int_equal(c.defaults.max_verbosity, 4);
	assert_int_equal(mod(&c, "m")->max_connections, -1); /* disables the module */
	assert_int_equal(mod(&c, "m")->timeout, 600);
	config_free(&c);

	load_fails("timeout = 12x\n", "bad number \"12x\" for \"timeout\" at test.conf:1");
	load_fails("timeout = ten\n", "bad number \"ten\" for \"timeout\"");
	load_fails("timeout =\n", "bad number \"\" for \"timeout\"");
	load_fails("timeout = -5\n", "value \"-5\" for \"timeout\" is out of range (0 to");
	load_fails("port = 70000\n", "value \"70000\" for \"port\" is out of range (0 to 65535)");
	load_fails("max connections = 99999999999\n", "value \"99999999999\" for \"max connections\" is out of range");
	load_fails("max connections = 999999999999999999999\n", "bad number \"999999999999999999999\"");
}

static void test_connection_limits(void **state)
{
	struct daemon_config c = { 0 };
	struct max_startups m = {1, 2, 3};

	load_ok(&c, "max connections per host = 4\nssh max startups = 5:50:20\n[m]\npath=/m\n");
	assert_int_equal(c.max_connections_per_host, 4);
	assert_int_equal(c.ssh_max_startups.start, 5);
	assert_int_equal(c.ssh_max_startups.rate, 50);
	assert_int_equal(c.ssh_max_startups.full, 20);
	config_free(&c);
	memset(&c, 0, sizeof c);
	load_ok(&c, "ssh max startups = 7\n"); /* sshd: start = full */
	assert_int_equal(c.ssh_max_startups.start, 7);
	assert_int_equal(c.ssh_max_startups.rate, 100);
	assert_int_equal(c.ssh_max_startups.full, 7);
	config_free(&c);

	load_fails("[m]\npath=/m\nmax connections per host = 2\n",
		   "global parameter \"max connections per host\" in module [m]");
	load_fails("max connections per host = -1\n", "is out of range (0 to");
	load_fails("ssh max startups = 10:30\n", "bad value \"10:30\" for \"ssh max startups\"");
	for (const char *bad = "20:30:10\0" "0:30:10\0" "1:101:10\0" "1:30:10001\0" ":30:10\0"
			       "1:30:10:4\0" "a\0" "-1\0" "1::10\0" "10:30:100 \0" "99999999999\0";
	     *bad; bad += strlen(bad) + 1)
		assert_int_equal(config_parse_max_startups(bad, &m), -1);
	assert_int_equal(m.start, 1); /* untouched on failure */
	assert_int_equal(config_parse_max_startups("1:0:10000", &m), 0);
	assert_int_equal(m.full, 10000);
}

/* sshd's should_drop_startup: none below start, all at full, in between
 * rate% rising to 100%. */
static void test_max_startups_drop(void **state)
{
	const struct max_startups m = {10, 30, 100};
	unsigned drops = 0;

	for (unsigned r = 0; r < 100; r++) {
		assert_false(max_startups_should_drop(&m, 9, r));
		assert_true(max_startups_should_drop(&m, 100, r));
		assert_true(max_startups_should_drop(&m, 5000, r));
		drops += max_startups_should_drop(&m, 10, r);
	}
	assert_int_equal(drops, 30);
	drops = 0;
	for (unsigned r = 0; r < 100; r++)
		drops += max_startups_should_drop(&m, 55, r); /* 30 + 70 * 45 / 90 */
	assert_int_equal(drops, 65);
	const struct max_startups one = {1, 100, 1};
	assert_false(max_startups_should_drop(&one, 0, 0));
	assert_true(max_startups_should_drop(&one, 1, 99));
}

static void test_syslog_facility(void **state)
{
	struct daemon_config c = { 0 };

	load_ok(&c, "syslog facility = local5\n"
		    "[a]\npath=/a\nsyslog facility = AUTHPRIV\n"
		    "[b]\npath=/b\nsyslog facility = security\n"
		    "[c]\npath=/c\nsyslog facility = 24\n");
	assert_int_equal(c.defaults.syslog_facility, LOG_LOCAL5);
	assert_int_equal(mod(&c, "a")->syslog_facility, LOG_AUTHPRIV);
	assert_int_equal(mod(&c, "b")->syslog_facility, LOG_AUTH);
	assert_int_equal(mod(&c, "c")->syslog_facility, 24);
	config_free(&c);
	load_fails("syslog facility = local9\n",
		   "unknown syslog facility \"local9\" for \"syslog facility\"");
}

/* loadparm.c: expand_vars, checked against rsync 3.5.0 (a comment with
 * these references, listed by the daemon). */
static void test_expand(void **state)
{
	struct {
		const char *in, *out;
	} cases[] = {
		{ "A 100%% b %FERRY_T_HOME% c", "A 100%% b /home/x c" },
		{ "%nope% %NOPE_FERRY_X%", "%nope% %NOPE_FERRY_X%" },
		{ "e %%FERRY_T_HOME%%", "e %/home/x%" },
		{ "%NOPE_FERRY_X%FERRY_T_HOME%", "%NOPE_FERRY_X/home/x" },
		{ "g %FERRY_T_HOME", "g %FERRY_T_HOME" },
		{ "%FERRY_T_EMPTY%|", "|" },
		{ "%%", "%%" },
		{ "", "" },
	};
	char *x;

	setenv("FERRY_T_HOME", "/home/x", 1);
	setenv("FERRY_T_EMPTY", "", 1);
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		x = config_expand(cases[i].in);
		assert_non_null(x);
		assert_string_equal(x, cases[i].out);
		free(x);
	}
	assert_null(config_expand(NULL));
}

/* Strings keep their references until use; other types expand at load. */
static void test_expand_in_config(void **state)
{
	struct daemon_config c = { 0 };
	struct daemon_module x;

	setenv("FERRY_T_TIMEOUT", "45", 1);
	setenv("FERRY_T_RO", "no", 1);
	setenv("RSYNC_USER_NAME", "alice", 1);
	load_ok(&c, "[home]\n"
		    "  path = /home/%RSYNC_USER_NAME%/\n"
		    "  timeout = %FERRY_T_TIMEOUT%\n"
		    "  read only = %FERRY_T_RO%\n"
		    "  comment = 100%% for %RSYNC_USER_NAME%\n"
		    "  pre-xfer exec = /bin/check %RSYNC_USER_NAME% '%RSYNC_USER_NAME%'\n");
	assert_string_equal(mod(&c, "home")->path, "/home/%RSYNC_USER_NAME%");
	assert_int_equal(mod(&c, "home")->timeout, 45);
	assert_false(mod(&c, "home")->read_only);

	assert_int_equal(config_module_expand(mod(&c, "home"), &x, err, sizeof err), 0);
	assert_string_equal(x.comment, "100%% for alice");
	/* path and hooks wait until the user is known */
	assert_string_equal(x.path, "/home/%RSYNC_USER_NAME%");
	assert_string_equal(x.pre_xfer_exec, "/bin/check %RSYNC_USER_NAME% '%RSYNC_USER_NAME%'");
	assert_int_equal(x.timeout, 45);
	assert_string_equal(x.defined_at, "test.conf:1");
	setenv("RSYNC_MODULE_PATH", "/inherited", 1);
	assert_int_equal(config_module_expand_late(&x, err, sizeof err), 0);
	assert_string_equal(x.path, "/home/alice");
	assert_string_equal(getenv("RSYNC_MODULE_PATH"), "/home/alice");
	/* %RSYNC_*% in a shell hook is quoted for where it lands */
	assert_string_equal(x.pre_xfer_exec, "/bin/check 'alice' 'alice'");
	config_module_free(&x);

	/* a peer-supplied value with a shell metacharacter is refused */
	setenv("RSYNC_USER_NAME", "a;rm -rf /", 1);
	assert_int_equal(config_module_expand(mod(&c, "home"), &x, err, sizeof err), 0);
	assert_int_equal(config_module_expand_late(&x, err, sizeof err), -1);
	assert_non_null(strstr(err, "refusing to run shell hook: %RSYNC_USER_NAME% holds a shell metacharacter"));
	config_module_free(&x);
	unsetenv("RSYNC_USER_NAME");
	unsetenv("RSYNC_MODULE_PATH");
	config_free(&c);

	load_fails("timeout = %FERRY_T_RO%\n", "bad number \"no\" (from \"%FERRY_T_RO%\") for \"timeout\"");
}

static void test_expand_shell(void **state)
{
	char *x;

	setenv("RSYNC_MODULE_NAME", "it's", 1);
	setenv("FERRY_T_PLAIN", "a b;c", 1);
	/* non-RSYNC variables are copied verbatim, even in hooks */
	x = config_expand_shell("echo %FERRY_T_PLAIN%", err, sizeof err);
	assert_non_null(x);
	assert_string_equal(x, "echo a b;c");
	free(x);
	assert_null(config_expand_shell("echo %RSYNC_MODULE_NAME%", err, sizeof err));
	setenv("RSYNC_MODULE_NAME", "files", 1);
	x = config_expand_shell("a %RSYNC_MODULE_NAME% \"%RSYNC_MODULE_NAME%\" '%RSYNC_MODULE_NAME%'",
				err, sizeof err);
	assert_non_null(x);
	assert_string_equal(x, "a 'files' \"'files'\" 'files'");
	free(x);
	unsetenv("RSYNC_MODULE_NAME");
}

static void test_errors_name_file_line(void **state)
{
	struct daemon_config c = { 0 };
	const char *path = tpath("ferryd.conf");

	write_file("ferryd.conf", "# test\n"
				  "port = 873\n"
				  "[m]\n"
				  "  path = /m\n"
				  "  comment = one \\\n"
				  "    two\n"
				  "  foo = bar\n");
	assert_int_equal(config_load_file(&c, path, err, sizeof err), -1);
	{
		char want[600];

		snprintf(want, sizeof want, "unknown parameter \"foo\" at %s:7", path);
		assert_string_equal(err, want);
	}
	assert_int_equal(c.nmodules, 0);
	assert_false(c.loaded);
	config_free(&c);

	/* an error in a continued line names the line where it starts */
	load_fails("\n\nwibble \\\n = 1\n", "unknown parameter \"wibble\" at test.conf:3");
	load_fails("[m]\npath=/m\nport = 1\n",
		   "global parameter \"port\" in module [m] (set it before the first module or "
		   "in a [global] section) at test.conf:3");
	load_fails("path = /x\njust some words\n", "badly formed line \"just some words\" (no '=') at test.conf:2");
	load_fails("path = /x\nnoequals", "badly formed line \"noequals\" (no '=') at test.conf:2");
	load_fails("\n = value\n", "missing parameter name before '=' at test.conf:2");
	load_fails("-port = 1\n", "unknown parameter \"-port\"");
	load_fails("[m]\ncomment = x\n", "module [m] has no \"path\" at test.conf:1");
	load_fails("[m]\npath =\n", "module [m] has no \"path\" at test.conf:1");
	load_fails("&includ /x\n", "unknown directive \"&includ\" (use &include or &merge) at test.conf:1");
	load_fails("&include\n", "badly formed line \"&include\" (no '=') at test.conf:1");
	load_fails("&merge =\n", "&merge needs a file or directory name at test.conf:1");

	/* a module path may come from the global section */
	load_ok(&c, "path = /srv\n[a]\n[b]\npath = /b\n");
	assert_string_equal(mod(&c, "a")->path, "/srv");
	config_free(&c);

	assert_int_equal(config_load_file(&c, tpath("missing.conf"), err, sizeof err), -1);
	assert_non_null(strstr(err, "unable to open config file \""));
	assert_non_null(strstr(err, "missing.conf\": No such file or directory"));
}

/* Every error rsync would warn about and skip is listed, one a line, in
 * file order; an error rsync stops at ends the list. */
static void test_errors_all_listed(void **state)
{
	struct daemon_config c = { 0 };
	char big[8192], text[1024];
	int lines = 0;

	assert_int_equal(config_load_string(&c,
					    "no equals\n"
					    "bogus = 1\n"
					    "[m]\n"
					    "path = /m\n"
					    "port = 1\n"
					    "read only = maybe\n",
					    "t.conf", err, sizeof err),
			 -1);
	assert_string_equal(err,
			    "badly formed line \"no equals\" (no '=') at t.conf:1\n"
			    "unknown parameter \"bogus\" at t.conf:2\n"
			    "global parameter \"port\" in module [m] (set it before the first module "
			    "or in a [global] section) at t.conf:5\n"
			    "bad boolean \"maybe\" for \"read only\" (use yes/no, true/false or 1/0) "
			    "at t.conf:6");
	assert_false(c.loaded);

	load_fails("bogus = 1\n[x\nalso bad\n",
		   "unknown parameter \"bogus\" at test.conf:1\n"
		   "section header \"[x\" has no closing ']' at test.conf:2");
	assert_null(strstr(err, "also bad"));
	load_fails("[a]\n[b]\n", "module [a] has no \"path\" at test.conf:1\n"
				   "module [b] has no \"path\" at test.conf:2");

	/* errors in an included file say where it was included, each one */
	write_file("two.conf", "x\ny = 1\n");
	snprintf(text, sizeof text, "&merge %s\n", tpath("two.conf"));
	assert_int_equal(config_load_string(&c, text, "top.conf", err, sizeof err), -1);
	{
		char want[1200];

		snprintf(want, sizeof want,
			 "badly formed line \"x\" (no '=') at %s:1 (included from top.conf:1)\n"
			 "unknown parameter \"y\" at %s:2 (included from top.conf:1)",
			 tpath("two.conf"), tpath("two.conf"));
		assert_string_equal(err, want);
	}

	/* the list is bounded */
	{
		char many[4 * (CONFIG_MAX_ERRORS + 10) + 1] = "";

		for (int i = 0; i < CONFIG_MAX_ERRORS + 10; i++)
			strcat(many, "xy\n");
		assert_int_equal(config_load_string(&c, many, "m.conf", big, sizeof big), -1);
	}
	for (const char *p = big; (p = strchr(p, '\n')) != NULL; p++)
		lines++;
	assert_int_equal(lines + 1, CONFIG_MAX_ERRORS + 1);
	assert_non_null(strstr(big, "\ntoo many errors, giving up"));
	config_free(&c);
}

static void test_nul_byte(void **state)
{
	struct daemon_config c = { 0 };
	static const char text[] = "port = 1\n[m]\npath=/m\0\ncomment = x\n";

	write_file("nul.conf", "");
	{
		FILE *f = fopen(tpath("nul.conf"), "w");

		assert_non_null(f);
		fwrite(text, 1, sizeof text - 1, f);
		fclose(f);
	}
	assert_int_equal(config_load_file(&c, tpath("nul.conf"), err, sizeof err), -1);
	assert_non_null(strstr(err, "NUL byte in config file at "));
	assert_non_null(strstr(err, "nul.conf:3"));
	config_free(&c);
}

static void test_line_length(void **state)
{
	struct daemon_config c = { 0 };
	size_t max = CONFIG_MAX_LINE;
	char *text = malloc(max * 2 + 64);
	char *p;

	/* exactly CONFIG_MAX_LINE bytes: fine */
	strcpy(text, "comment = ");
	p = text + 10;
	memset(p, 'x', max - 10);
	strcpy(text + max, "\n");
	load_ok(&c, text);
	assert_int_equal(strlen(c.defaults.comment), max - 10);
	config_free(&c);

	/* one more byte: refused */
	text[max] = 'x';
	strcpy(text + max + 1, "\n");
	load_fails(text, "line longer than 8192 bytes (continuations included) at test.conf:1");

	/* the limit counts continuation lines too */
	strcpy(text, "\ncomment = ");
	for (int i = 0; i < 100; i++)
		strcat(text, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\\\n");
	strcat(text, "end\n");
	load_fails(text, "line longer than 8192 bytes (continuations included) at test.conf:2");

	/* and section headers */
	text[0] = '[';
	memset(text + 1, 'm', max + 1);
	strcpy(text + max + 2, "]\n");
	load_fails(text, "line longer than 8192 bytes");
	free(text);
}

/* A failed (re)load leaves the running config untouched. */
static void test_failed_reload_keeps_config(void **state)
{
	struct daemon_config c = { 0 };

	load_ok(&c, "[a]\npath = /a\n");
	assert_int_equal(config_load_string(&c, "[b]\npath = /b\nnonsense = 1\n", "new.conf", err,
					    sizeof err),
			 -1);
	assert_string_equal(err, "unknown parameter \"nonsense\" at new.conf:3");
	assert_true(c.loaded);
	assert_int_equal(c.nmodules, 1);
	assert_non_null(config_find_module(&c, "a"));
	config_free(&c);
	assert_null(config_find_module(&c, "a"));
	config_free(&c); /* twice is fine */
}

/* The "more sophisticated example" of rsyncd.conf(5), plus every other
 * parameter spelled as the manual spells it. */
static void test_man_page_example(void **state)
{
	struct daemon_config c = { 0 };
	const struct daemon_module *m;

	write_file("rsyncd.conf",
		   "uid = nobody\n"
		   "gid = nobody\n"
		   "use chroot = yes\n"
		   "max connections = 4\n"
		   "syslog facility = local5\n"
		   "pid file = /var/run/rsyncd.pid\n"
		   "\n"
		   "[ftp]\n"
		   "        path = /var/ftp/./pub\n"
		   "        comment = whole ftp area (approx 6.1 GB)\n"
		   "\n"
		   "[sambaftp]\n"
		   "        path = /var/ftp/./pub/samba\n"
		   "        comment = Samba ftp area (approx 300 MB)\n"
		   "\n"
		   "[rsyncftp]\n"
		   "        path = /var/ftp/./pub/rsync\n"
		   "        comment = rsync ftp area (approx 6 MB)\n"
		   "\n"
		   "[sambawww]\n"
		   "        path = /public_html/samba\n"
		   "        comment = Samba WWW pages (approx 240 MB)\n"
		   "\n"
		   "[cvs]\n"
		   "        path = /data/cvs\n"
		   "        comment = CVS repository (requires authentication)\n"
		   "        auth users = tridge, susan\n"
		   "        secrets file = /etc/rsyncd.secrets\n"
		   "\n"
		   "[everything]\n"
		   "        path = /srv/all\n"
		   "        list = no\n"
		   "        read only = false\n"
		   "        write only = no\n"
		   "        numeric ids = yes\n"
		   "        munge symlinks = no\n"
		   "        insecure links = no\n"
		   "        charset = utf-8\n"
		   "        log file = /var/log/rsyncd-all.log\n"
		   "        syslog tag = rsyncd.%RSYNC_USER_NAME%\n"
		   "        max verbosity = 2\n"
		   "        lock file = /run/all.lock\n"
		   "        open noatime = yes\n"
		   "        fake super = yes\n"
		   "        filter = - /secret/*** + *.txt\n"
		   "        exclude = *.tmp /private\n"
		   "        include = *.keep\n"
		   "        exclude from = /etc/rsyncd.excl\n"
		   "        include from = /etc/rsyncd.incl\n"
		   "        incoming chmod = Dg+s,ug+w,Fo-w,+X\n"
		   "        outgoing chmod = o-rwx\n"
		   "        auth users = joe:deny @guest:deny admin:rw @rsync:ro susan joe sam\n"
		   "        auth digest = sha256\n"
		   "        strict modes = no\n"
		   "        hosts allow = 192.168.1.0/24, 10.0.0.0/255.0.0.0 *.example.com\n"
		   "        hosts deny = *\n"
		   "        reverse lookup = no\n"
		   "        forward lookup = no\n"
		   "        ignore errors = yes\n"
		   "        ignore nonreadable = yes\n"
		   "        transfer logging = yes\n"
		   "        log format = %t %o %f %'l\n"
		   "        timeout = 600\n"
		   "        refuse options = * !a !v !compress*\n"
		   "        dont compress = *\n"
		   "        early exec = /usr/local/bin/mount-it\n"
		   "        pre-xfer exec = /usr/local/bin/check\n"
		   "        post-xfer exec = /usr/local/bin/report\n"
		   "        name converter = /usr/local/bin/nameconvert\n"
		   "        temp dir = /srv/tmp/\n"
		   "[global]\n"
		   "        motd file = /etc/rsyncd.motd\n"
		   "        port = 873\n"
		   "        address = 192.0.2.1\n"
		   "        socket options = SO_KEEPALIVE\n"
		   "        listen backlog = 10\n"
		   "        daemon chroot = /srv/chroot\n"
		   "        daemon uid = rsyncd\n"
		   "        daemon gid = rsyncd\n"
		   "        proxy protocol = yes\n"
		   "        proxy protocol hosts = 127.0.0.1\n");
	assert_int_equal(config_load_file(&c, tpath("rsyncd.conf"), err, sizeof err), 0);
	assert_int_equal(c.nmodules, 6);
	assert_string_equal(c.pid_file, "/var/run/rsyncd.pid");
	assert_string_equal(c.motd_file, "/etc/rsyncd.motd");
	assert_int_equal(c.port, 873);
	assert_string_equal(c.address, "192.0.2.1");
	assert_string_equal(c.socket_options, "SO_KEEPALIVE");
	assert_int_equal(c.listen_backlog, 10);
	assert_string_equal(c.daemon_chroot, "/srv/chroot");
	assert_string_equal(c.daemon_uid, "rsyncd");
	assert_string_equal(c.daemon_gid, "rsyncd");
	assert_true(c.proxy_protocol);
	assert_string_equal(c.proxy_protocol_hosts, "127.0.0.1");

	m = mod(&c, "ftp");
	assert_string_equal(m->path, "/var/ftp/./pub");
	assert_string_equal(m->comment, "whole ftp area (approx 6.1 GB)");
	assert_string_equal(m->uid, "nobody");
	assert_string_equal(m->gid, "nobody");
	assert_int_equal(m->use_chroot, 1);
	assert_int_equal(m->max_connections, 4);
	assert_int_equal(m->syslog_facility, LOG_LOCAL5);
	assert_true(m->read_only);
	assert_true(m->list);
	assert_null(m->auth_users);
	m = mod(&c, "cvs");
	assert_string_equal(m->auth_users, "tridge, susan");
	assert_string_equal(m->secrets_file, "/etc/rsyncd.secrets");
	assert_string_equal(m->comment, "CVS repository (requires authentication)");

	m = mod(&c, "everything");
	assert_false(m->list);
	assert_false(m->read_only);
	assert_false(m->write_only);
	assert_int_equal(m->numeric_ids, 1);
	assert_int_equal(m->munge_symlinks, 0);
	assert_false(m->insecure_links);
	assert_string_equal(m->charset, "utf-8");
	assert_string_equal(m->log_file, "/var/log/rsyncd-all.log");
	assert_string_equal(m->syslog_tag, "rsyncd.%RSYNC_USER_NAME%");
	assert_int_equal(m->max_verbosity, 2);
	assert_string_equal(m->lock_file, "/run/all.lock");
	assert_int_equal(m->open_noatime, 1);
	assert_true(m->fake_super);
	assert_string_equal(m->filter, "- /secret/*** + *.txt");
	assert_string_equal(m->exclude, "*.tmp /private");
	assert_string_equal(m->include, "*.keep");
	assert_string_equal(m->exclude_from, "/etc/rsyncd.excl");
	assert_string_equal(m->include_from, "/etc/rsyncd.incl");
	assert_string_equal(m->incoming_chmod, "Dg+s,ug+w,Fo-w,+X");
	assert_string_equal(m->outgoing_chmod, "o-rwx");
	assert_string_equal(m->auth_users, "joe:deny @guest:deny admin:rw @rsync:ro susan joe sam");
	assert_string_equal(m->auth_digest, "sha256");
	assert_false(m->strict_modes);
	assert_string_equal(m->hosts_allow, "192.168.1.0/24, 10.0.0.0/255.0.0.0 *.example.com");
	assert_string_equal(m->hosts_deny, "*");
	assert_false(m->reverse_lookup);
	assert_false(m->forward_lookup);
	assert_true(m->ignore_errors);
	assert_true(m->ignore_nonreadable);
	assert_true(m->transfer_logging);
	assert_string_equal(m->log_format, "%t %o %f %'l");
	assert_int_equal(m->timeout, 600);
	assert_string_equal(m->refuse_options, "* !a !v !compress*");
	assert_string_equal(m->dont_compress, "*");
	assert_string_equal(m->early_exec, "/usr/local/bin/mount-it");
	assert_string_equal(m->pre_xfer_exec, "/usr/local/bin/check");
	assert_string_equal(m->post_xfer_exec, "/usr/local/bin/report");
	assert_string_equal(m->name_converter, "/usr/local/bin/nameconvert");
	assert_string_equal(m->temp_dir, "/srv/tmp");
	config_free(&c);
}

/* rsync's table also has "name": inside a module it renames it. */
static void test_name_parameter(void **state)
{
	struct daemon_config c = { 0 };

	load_ok(&c, "[old]\npath = /o\nname = new\n");
	assert_null(config_find_module(&c, "old"));
	assert_string_equal(mod(&c, "new")->path, "/o");
	config_free(&c);
	load_fails("[old]\npath = /o\nname = a/b\n", "has an invalid name \"a/b\"");
}

/* Many modules, in order; the module count is bounded. */
static void test_many_modules(void **state)
{
	struct daemon_config c = { 0 };
	size_t cap = (CONFIG_MAX_MODULES + 1) * 32;
	char *text = malloc(cap), *p = text;
	char name[32];

	for (int i = 0; i < 1000; i++)
		p += sprintf(p, "[m%d]\npath = /srv/%d\n", i, i);
	load_ok(&c, text);
	assert_int_equal(c.nmodules, 1000);
	for (int i = 0; i < 1000; i += 37) {
		snprintf(name, sizeof name, "m%d", i);
		assert_ptr_equal(mod(&c, name), &c.modules[i]);
	}
	assert_string_equal(c.modules[999].path, "/srv/999");
	config_free(&c);

	p = text;
	for (int i = 0; i <= CONFIG_MAX_MODULES; i++)
		p += sprintf(p, "[m%d]\npath=/\n", i);
	load_fails(text, "too many modules (more than 10000) at test.conf:20001");
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_table_complete),
		cmocka_unit_test(test_param_names),
		cmocka_unit_test(test_basic_syntax),
		cmocka_unit_test(test_continuation),
		cmocka_unit_test(test_crlf_and_oddities),
		cmocka_unit_test(test_inheritance),
		cmocka_unit_test(test_sections),
		cmocka_unit_test(test_booleans),
		cmocka_unit_test(test_integers),
		cmocka_unit_test(test_syslog_facility),
		cmocka_unit_test(test_connection_limits),
		cmocka_unit_test(test_max_startups_drop),
		cmocka_unit_test(test_expand),
		cmocka_unit_test(test_expand_in_config),
		cmocka_unit_test(test_expand_shell),
		cmocka_unit_test(test_errors_name_file_line),
		cmocka_unit_test(test_errors_all_listed),
		cmocka_unit_test(test_nul_byte),
		cmocka_unit_test(test_line_length),
		cmocka_unit_test(test_failed_reload_keeps_config),
		cmocka_unit_test(test_man_page_example),
		cmocka_unit_test(test_name_parameter),
		cmocka_unit_test(test_many_modules),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
