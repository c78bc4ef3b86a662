/*
 * Command-line parsing (proto/args/options.c) and the server argument vector,
 * checked against what rsync 3.5.0 does and sends (its "sending daemon args"
 * debug output and the argv it hands a remote shell). The 'i' (incremental
 * recursion) capability is there as in rsync's, except where ferry keeps
 * to whole lists (-H, -A, -R, --files-from, --list-only, batch files, a
 * receiving --delete-delay; see inc_recurse_allowed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <unistd.h>

#include "proto/args/options.h"

static char errbuf[4096];

/* Parse {"ferry", args..., NULL} with stdout discarded and stderr captured
 * into errbuf. */
static int parse_v(struct ferry_opts *o, unsigned flags, char **args)
{
	int argc = 0, rc, out, err, devnull;
	FILE *tf = tmpfile();
	size_t n;

	while (args[argc])
		argc++;
	assert_non_null(tf);
	fflush(stdout);
	fflush(stderr);
	out = dup(1);
	err = dup(2);
	devnull = open("/dev/null", O_WRONLY);
	dup2(devnull, 1);
	dup2(fileno(tf), 2);
	rc = options_parse_flags(o, argc, args, flags);
	fflush(stdout);
	fflush(stderr);
	dup2(out, 1);
	dup2(err, 2);
	close(out);
	close(err);
	close(devnull);
	rewind(tf);
	n = fread(errbuf, 1, sizeof errbuf - 1, tf);
	errbuf[n] = '\0';
	fclose(tf);
	return rc;
}

#define PARSE(o, ...) parse_v(o, 0, (char *[]){ "ferry", __VA_ARGS__, NULL })
#define PARSE_REMOTE(o, ...) \
	parse_v(o, OPTS_FROM_REMOTE, (char *[]){ "rsyncd", __VA_ARGS__, NULL })

/* The server argv joined with spaces. */
static char *joined(char **v)
{
	static char buf[1024];
	size_t pos = 0;

	buf[0] = '\0';
	for (; v && *v; v++)
		pos += (size_t)snprintf(buf + pos, sizeof buf - pos, "%s%s", pos ? " " : "", *v);
	return buf;
}

static void expect_server_argv(bool pull, int protocol, const char *want, char **args)
{
	struct ferry_opts o;
	int argc = 0;
	char **v;

	while (args[argc])
		argc++;
	assert_int_equal(options_parse(&o, argc, args), 0);
	v = options_server_argv(&o, pull, protocol);
	assert_non_null(v);
	assert_string_equal(joined(v), want);
	options_free_argv(v);
	options_free(&o);
}

#define PULL(want, ...) expect_server_argv(true, 0, want, (char *[]){ "ferry", __VA_ARGS__, NULL })
#define PUSH(want, ...) expect_server_argv(false, 0, want, (char *[]){ "ferry", __VA_ARGS__, NULL })

static void test_defaults(void **state)
{
	struct ferry_opts o;

	(void)state;
	assert_int_equal(PARSE(&o, "src/", "dst/"), 0);
	assert_int_equal(o.whole_file, -1);
	assert_int_equal(o.max_delete, -1);
	assert_int_equal(o.human, 1);
	assert_int_equal(o.verbose, 0);
	assert_false(o.recursive);
	assert_false(o.dirs);
	assert_false(o.list_only);
	assert_int_equal(o.delete_mode, DELETE_NONE);
	assert_int_equal(o.nargs, 2);
	assert_string_equal(o.args[0], "src/");
	assert_string_equal(o.args[1], "dst/");
	assert_null(o.args[2]);
	options_free(&o);
}

static void test_archive_expands(void **state)
{
	struct ferry_opts o;

	(void)state;
	assert_int_equal(PARSE(&o, "-a", "src/", "dst/"), 0);
	assert_true(o.recursive && o.links && o.perms && o.times);
	assert_true(o.group && o.owner && o.devices && o.specials);
	assert_true(o.dirs); /* rsync's xfer_dirs follows -r */
	assert_false(o.hard_links || o.executability || o.checksum || o.relative);
	options_free(&o);

	/* -vv counts, options mix with arguments */
	assert_int_equal(PARSE(&o, "src/", "-vv", "dst/", "-v"), 0);
	assert_int_equal(o.verbose, 3);
	assert_int_equal(o.nargs, 2);
	options_free(&o);
}

static void test_h_alone_is_help(void **state)
{
	struct ferry_opts o;

	(void)state;
	assert_int_equal(PARSE(&o, "-h"), FERRY_OPTS_EXIT_OK);
	options_free(&o);
	/* rsync: any -h count > 1 with no other argument is help, even -avh */
	assert_int_equal(PARSE(&o, "-avh"), FERRY_OPTS_EXIT_OK);
	options_free(&o);
	assert_int_equal(PARSE(&o, "-avh", "src/", "dst/"), 0);
	assert_int_equal(o.human, 2);
	assert_int_equal(o.verbose, 1);
	assert_true(o.recursive);
	options_free(&o);
	assert_int_equal(PARSE(&o, "-hh", "src/"), 0);
	assert_int_equal(o.human, 3);
	assert_true(o.list_only);
	options_free(&o);
	assert_int_equal(PARSE(&o, "--no-h", "a", "b"), 0);
	assert_int_equal(o.human, 0);
	options_free(&o);
	assert_int_equal(PARSE(&o, "--help"), FERRY_OPTS_EXIT_OK);
	options_free(&o);
	assert_int_equal(PARSE(&o, "--version"), FERRY_OPTS_EXIT_OK);
	options_free(&o);
	assert_int_equal(PARSE(&o, "-V"), FERRY_OPTS_EXIT_OK);
	options_free(&o);
}

static void test_negations(void **state)
{
	struct ferry_opts o;

	(void)state;
	assert_int_equal(PARSE(&o, "-a", "--no-p", "--no-o", "--no-g", "--no-D", "--no-t",
			       "--no-l", "a", "b"), 0);
	assert_true(o.recursive);
	assert_false(o.perms || o.owner || o.group || o.devices || o.specials || o.times
		     || o.links);
	options_free(&o);

	assert_int_equal(PARSE(&o, "-a", "--no-recursive", "--no-perms", "--no-owner",
			       "--no-group", "--no-devices", "--no-times", "--no-links",
			       "a", "b"), 0);
	assert_false(o.recursive || o.perms || o.owner || o.group || o.devices || o.times
		     || o.links);
	assert_true(o.specials);
	assert_false(o.dirs);
	options_free(&o);

	assert_int_equal(PARSE(&o, "-r", "--no-r", "-W", "--no-W", "-c", "--no-c", "-v",
			       "--no-v", "-i", "--no-i", "--no-motd", "--no-i-r",
			       "--no-inc-recursive", "a", "b"), 0);
	assert_false(o.recursive || o.checksum);
	assert_int_equal(o.whole_file, 0);
	assert_int_equal(o.verbose, 0);
	assert_int_equal(o.itemize, 0);
	assert_true(o.no_motd);
	options_free(&o);

	assert_int_equal(PARSE(&o, "--whole-file", "--no-whole-file", "--whole-file", "a", "b"), 0);
	assert_int_equal(o.whole_file, 1);
	options_free(&o);

	/* no-ops for features we do not have are accepted */
	assert_int_equal(PARSE(&o, "--no-H", "--no-A", "--no-X", "--no-z", "--no-s", "a", "b"), 0);
	options_free(&o);

	/* --no-implied-dirs is kept (it only matters with -R) */
	assert_int_equal(PARSE(&o, "--no-implied-dirs", "a", "b"), 0);
	assert_true(o.no_implied_dirs);
	assert_false(o.relative);
	options_free(&o);
	assert_int_equal(PARSE(&o, "--no-i-d", "--i-d", "-R", "a", "b"), 0);
	assert_false(o.no_implied_dirs);
	assert_true(o.relative);
	options_free(&o);

	/* --files-from implies -R and -d, and -a's -r gives way; an explicit
	 * -r stays, and --no-R wins wherever it is */
	assert_int_equal(PARSE(&o, "-a", "--files-from=l", "-0", "a", "b"), 0);
	assert_true(o.relative && o.dirs && o.from0);
	assert_false(o.recursive);
	assert_string_equal(o.files_from, "l");
	options_free(&o);
	assert_int_equal(PARSE(&o, "--no-R", "--files-from=l", "-ra", "a", "b"), 0);
	assert_true(o.recursive);
	assert_false(o.relative);
	options_free(&o);
}

static void test_aliases(void **state)
{
	struct ferry_opts o;

	(void)state;
	assert_int_equal(PARSE(&o, "--log-format=%n", "--cc=md5", "--ignore-non-existing",
			       "--del", "-r", "a", "b"), 0);
	assert_string_equal(o.out_format, "%n");
	assert_string_equal(o.checksum_choice, "md5");
	assert_true(o.existing);
	assert_int_equal(o.delete_mode, DELETE_DURING);
	options_free(&o);

	assert_int_equal(PARSE(&o, "--delete", "-r", "a", "b"), 0);
	assert_int_equal(o.delete_mode, DELETE_DEFAULT);
	options_free(&o);
	assert_int_equal(PARSE(&o, "--delete-delay", "-d", "a", "b"), 0);
	assert_int_equal(o.delete_mode, DELETE_DELAY);
	assert_true(o.dirs_explicit);
	options_free(&o);
	assert_int_equal(PARSE(&o, "--delete-excluded", "-r", "a", "b"), 0);
	assert_int_equal(o.delete_mode, DELETE_DEFAULT); /* implies --delete */
	assert_true(o.delete_excluded);
	options_free(&o);
	assert_int_equal(PARSE(&o, "--delete-before", "--delete-after", "-r", "a", "b"),
			 RERR_SYNTAX);
	options_free(&o);
	assert_int_equal(PARSE(&o, "--delete", "a", "b"), RERR_SYNTAX);
	assert_non_null(strstr(errbuf, "--delete does not work without --recursive"));
	options_free(&o);

	assert_int_equal(PARSE(&o, "--cc=auto", "a", "b"), 0);
	assert_null(o.checksum_choice);
	options_free(&o);
	assert_int_equal(PARSE(&o, "--checksum-choice=none", "a", "b"), 0);
	assert_int_equal(o.whole_file, 1);
	options_free(&o);

	assert_int_equal(PARSE(&o, "--partial", "--inplace", "a", "b"), 0);
	assert_true(o.inplace);
	assert_false(o.partial); /* as rsync's keep_partial */
	options_free(&o);

	assert_int_equal(PARSE(&o, "-e", "ssh -p 22", "--rsync-path=/opt/rsync", "-4",
			       "--port=8873", "--address=127.0.0.1", "--timeout=30",
			       "--contimeout=5", "--password-file=/pw", "-B", "1k",
			       "--modify-window=2", "--checksum-seed=7", "-M--foo",
			       "--info=name2", "--info=stats", "--debug=del2",
			       "--chmod=Dg+s", "--chmod=F600", "a", "b"), 0);
	assert_string_equal(o.rsh, "ssh -p 22");
	assert_string_equal(o.rsync_path, "/opt/rsync");
	assert_int_equal(o.ip_family, 4);
	assert_int_equal(o.port, 8873);
	assert_string_equal(o.bind_address, "127.0.0.1");
	assert_int_equal(o.timeout, 30);
	assert_int_equal(o.contimeout, 5);
	assert_string_equal(o.password_file, "/pw");
	assert_int_equal(o.block_size, 1024);
	assert_int_equal(o.modify_window, 2);
	assert_true(o.modify_window_set);
	assert_int_equal(o.checksum_seed, 7);
	assert_true(o.checksum_seed_set);
	assert_int_equal(o.nremote_options, 1);
	assert_string_equal(o.remote_options[0], "--foo");
	assert_string_equal(o.info, "name2,stats");
	assert_string_equal(o.debug, "del2");
	assert_string_equal(o.chmod, "Dg+s,F600");
	options_free(&o);
}

static void test_filters(void **state)
{
	struct ferry_opts o;

	(void)state;
	assert_int_equal(PARSE(&o, "--exclude=*.o", "--include", "*/", "-f", "merge .rules",
			       "--exclude=+ keep", "--include=!", "--filter=- x", "a", "b"), 0);
	assert_int_equal(o.nfilters, 6);
	assert_string_equal(o.filters[0].text, "- *.o");
	assert_string_equal(o.filters[1].text, "+ */");
	assert_string_equal(o.filters[2].text, "merge .rules");
	assert_string_equal(o.filters[3].text, "+ keep");
	assert_string_equal(o.filters[4].text, "!");
	assert_string_equal(o.filters[5].text, "- x");
	options_free(&o);

	assert_int_equal(PARSE(&o, "--exclude-from=/nonexistent/ferry-test", "a", "b"),
			 RERR_FILEIO);
	assert_non_null(strstr(errbuf, "failed to open exclude file"));
	options_free(&o);
}

static void test_unknown_and_unsupported(void **state)
{
	struct ferry_opts o;

	(void)state;
	assert_int_equal(PARSE(&o, "--frobnicate", "a", "b"), RERR_SYNTAX);
	assert_non_null(strstr(errbuf, "ferry: --frobnicate: unknown option\n"));
	/* rsync's client prints no hint to --help after a usage error */
	assert_null(strstr(errbuf, "ferry --help"));
	options_free(&o);

	/* no abbreviations: popt (rsync) has none */
	assert_int_equal(PARSE(&o, "--verb", "a", "b"), RERR_SYNTAX);
	assert_non_null(strstr(errbuf, "--verb: unknown option"));
	options_free(&o);
	assert_int_equal(PARSE(&o, "-rZ", "a", "b"), RERR_SYNTAX);
	assert_non_null(strstr(errbuf, "-rZ: unknown option"));
	options_free(&o);
	assert_int_equal(PARSE(&o, "--verbose=3", "a", "b"), RERR_SYNTAX);
	assert_non_null(strstr(errbuf, "option does not take an argument"));
	options_free(&o);
	assert_int_equal(PARSE(&o, "a", "b", "--exclude"), RERR_SYNTAX);
	assert_non_null(strstr(errbuf, "--exclude: missing argument"));
	options_free(&o);

	assert_int_equal(PARSE(&o, "--fake-super", "a", "b"), 0);
	assert_int_equal(o.super_mode, SUPER_FAKE);
	options_free(&o);
	assert_int_equal(PARSE(&o, "--super", "--no-super", "a", "b"), 0);
	assert_int_equal(o.super_mode, SUPER_OFF);
	options_free(&o);
	assert_int_equal(PARSE(&o, "-aXX", "--fake-super", "a", "b"), RERR_SYNTAX);
	assert_non_null(strstr(errbuf, "ferry: --fake-super conflicts with -XX"));
	options_free(&o);
	assert_int_equal(PARSE(&o, "-avyy", "a", "b"), 0);
	assert_int_equal(o.fuzzy, 2);
	options_free(&o);
	assert_int_equal(PARSE(&o, "-y", "--backup", "--inplace", "a", "b"), 0);
	assert_int_equal(o.fuzzy, 1);
	options_free(&o);
	assert_int_equal(PARSE(&o, "-N", "a", "b"), RERR_SYNTAX);
	assert_non_null(strstr(errbuf, "ferry: This ferry does not support --crtimes (-N)"));
	options_free(&o);
	assert_int_equal(PARSE(&o, "--no-crtimes", "a", "b"), 0);
	options_free(&o);
	assert_int_equal(PARSE(&o, "--sender", "a", "b"), RERR_SYNTAX);
	options_free(&o);
}

static void test_bad_values(void **state)
{
	struct ferry_opts o;

	(void)state;
	assert_int_equal(PARSE(&o, "--protocol=26", "a", "b"), RERR_SYNTAX);
	options_free(&o);
	assert_int_equal(PARSE(&o, "--protocol=33", "a", "b"), RERR_SYNTAX);
	assert_non_null(strstr(errbuf, "between 27 and 32"));
	options_free(&o);
	assert_int_equal(PARSE(&o, "--protocol=27", "a", "b"), 0);
	assert_int_equal(o.protocol, 27);
	options_free(&o);
	assert_int_equal(PARSE(&o, "--protocol=32", "a", "b"), 0);
	options_free(&o);
	assert_int_equal(PARSE(&o, "--sums-cache=.s", "a", "b"), 0);
	assert_string_equal(o.sums_cache, ".s");
	options_free(&o);
	assert_int_equal(PARSE(&o, "--sums-cache=d/x", "a", "b"), RERR_SYNTAX);
	assert_non_null(strstr(errbuf, "plain file name"));
	options_free(&o);
	assert_int_equal(PARSE(&o, "--sums-cache=..", "a", "b"), RERR_SYNTAX);
	options_free(&o);
	/* a batch keeps block-wise whole-file sums no reader could check */
	assert_int_equal(PARSE(&o, "--sums-cache=.s", "--write-batch=bf", "a", "b"), RERR_SYNTAX);
	assert_non_null(strstr(errbuf, "--sums-cache cannot be used with --write-batch"));
	options_free(&o);
	assert_int_equal(PARSE(&o, "--sums-cache=.s", "--read-batch=bf", "b"), RERR_SYNTAX);
	assert_non_null(strstr(errbuf, "--sums-cache cannot be used with --read-batch"));
	options_free(&o);

	assert_int_equal(PARSE(&o, "--timeout=abc", "a", "b"), RERR_SYNTAX);
	assert_non_null(strstr(errbuf, "--timeout=abc: invalid numeric value"));
	options_free(&o);
	assert_int_equal(PARSE(&o, "--timeout=-1", "a", "b"), RERR_SYNTAX);
	options_free(&o);
	assert_int_equal(PARSE(&o, "--max-delete=-1", "-r", "a", "b"), RERR_SYNTAX);
	options_free(&o);
	assert_int_equal(PARSE(&o, "--max-delete=0", "-r", "a", "b"), 0);
	assert_int_equal(o.max_delete, 0);
	options_free(&o);
	assert_int_equal(PARSE(&o, "--port=0", "a", "b"), RERR_SYNTAX);
	options_free(&o);
	assert_int_equal(PARSE(&o, "--port=65536", "a", "b"), RERR_SYNTAX);
	options_free(&o);
	assert_int_equal(PARSE(&o, "--port=65535", "a", "b"), 0);
	options_free(&o);
	/* rsync exits 4 (RERR_UNSUPPORTED) for an unknown checksum name */
	assert_int_equal(PARSE(&o, "--checksum-choice=foo", "a", "b"), RERR_UNSUPPORTED);
	assert_non_null(strstr(errbuf, "unknown checksum name: foo"));
	options_free(&o);
	assert_int_equal(PARSE(&o, "--cc=md5,bar", "a", "b"), RERR_UNSUPPORTED);
	options_free(&o);
	assert_int_equal(PARSE(&o, "--cc=XXH128,md5", "a", "b"), 0);
	options_free(&o);
	assert_int_equal(PARSE(&o, "-B", "200000", "a", "b"), RERR_SYNTAX);
	assert_non_null(strstr(errbuf, "--block-size=200000 is too large"));
	options_free(&o);
	assert_int_equal(PARSE(&o, "--protocol=29", "-B", "200000", "a", "b"), 0);
	assert_int_equal(o.block_size, 200000);
	options_free(&o);
	assert_int_equal(PARSE(&o, "--chmod=zz", "a", "b"), RERR_SYNTAX);
	options_free(&o);
	assert_int_equal(PARSE(&o, "-M", "foo", "a", "b"), RERR_SYNTAX);
	options_free(&o);
	assert_int_equal(PARSE(&o, "--info=bogus", "a", "b"), RERR_SYNTAX);
	assert_non_null(strstr(errbuf, "Unknown --info item: \"bogus\""));
	options_free(&o);
	assert_int_equal(PARSE(&o, "--info=help"), FERRY_OPTS_EXIT_OK);
	options_free(&o);
}

static void test_list_only_and_dirs(void **state)
{
	struct ferry_opts o;

	(void)state;
	assert_int_equal(PARSE(&o, "host::mod/"), 0);
	assert_true(o.list_only);
	assert_false(o.list_only_opt);
	assert_true(o.dirs);
	assert_false(o.dirs_explicit);
	options_free(&o);
	assert_int_equal(PARSE(&o, "--no-d", "host::mod/"), 0);
	assert_false(o.dirs);
	options_free(&o);
	assert_int_equal(PARSE(&o, "-rd", "a", "b"), 0);
	assert_true(o.dirs);
	assert_false(o.dirs_explicit);
	options_free(&o);
}

static void test_daemon_mode(void **state)
{
	struct ferry_opts o;

	(void)state;
	assert_int_equal(PARSE(&o, "--daemon", "--no-detach", "--port=8873",
			       "--address=127.0.0.1", "--config=/etc/ferryd.conf",
			       "-M", "motd file=/m", "--dparam=pid file=/p", "-v", "-4"), 0);
	assert_true(o.daemon);
	assert_true(o.no_detach);
	assert_int_equal(o.port, 8873);
	assert_string_equal(o.bind_address, "127.0.0.1");
	assert_string_equal(o.config_file, "/etc/ferryd.conf");
	assert_int_equal(o.ndparam, 2);
	assert_string_equal(o.dparam[0], "motd file=/m");
	assert_string_equal(o.dparam[1], "pid file=/p");
	assert_int_equal(o.verbose, 1);
	assert_int_equal(o.ip_family, 4);
	options_free(&o);

	/* --config first still switches to daemon parsing */
	assert_int_equal(PARSE(&o, "--config=x", "--daemon"), 0);
	assert_true(o.daemon);
	assert_false(o.check_config);
	options_free(&o);
	/* ferry's --check-config, before or after --daemon, only with it */
	assert_int_equal(PARSE(&o, "--check-config", "--daemon", "--config=x"), 0);
	assert_true(o.daemon);
	assert_true(o.check_config);
	options_free(&o);
	assert_int_equal(PARSE(&o, "--check-config"), RERR_SYNTAX);
	assert_non_null(strstr(errbuf, "Daemon option(s) used without --daemon."));
	options_free(&o);
	assert_int_equal(PARSE(&o, "--daemon", "-a"), RERR_SYNTAX);
	assert_non_null(strstr(errbuf, "-a: unknown option (in daemon mode)"));
	options_free(&o);
	assert_int_equal(PARSE(&o, "--no-detach", "--port=5"), RERR_SYNTAX);
	assert_non_null(strstr(errbuf, "Daemon option(s) used without --daemon."));
	options_free(&o);
	assert_int_equal(PARSE(&o, "--daemon", "--dparam=foo"), RERR_SYNTAX);
	options_free(&o);
	assert_int_equal(PARSE(&o, "--daemon", "-h"), FERRY_OPTS_EXIT_OK);
	options_free(&o);
	assert_int_equal(PARSE(&o, "--daemon", "--log-file=/x", "--log-file-format=%f"), 0);
	assert_string_equal(o.log_file, "/x");
	assert_string_equal(o.log_file_format, "%f");
	options_free(&o);

	/* daemon over a remote shell */
	assert_int_equal(PARSE(&o, "--server", "--daemon", "."), 0);
	assert_true(o.server && o.daemon);
	assert_int_equal(o.nargs, 1);
	options_free(&o);
}

static void test_server_side_parse(void **state)
{
	struct ferry_opts o;

	(void)state;
	/* what rsync sends for a pull of -av --delete --max-delete=0 */
	assert_int_equal(PARSE_REMOTE(&o, "--server", "--sender", "-vlogDtpre.iLsfxCIvu",
				      "--max-delete=-1", "--info=NAME2,FOO", "-B2048", ".",
				      "mod/"), 0);
	assert_true(o.server && o.sender);
	assert_int_equal(o.verbose, 1);
	assert_true(o.links && o.owner && o.group && o.devices && o.times && o.perms
		    && o.recursive);
	assert_string_equal(o.server_caps, ".iLsfxCIvu");
	assert_int_equal(o.max_delete, 0);
	assert_int_equal(o.block_size, 2048);
	assert_false(o.list_only);
	assert_int_equal(o.nargs, 2);
	assert_string_equal(o.args[0], ".");
	assert_string_equal(o.args[1], "mod/");
	options_free(&o);

	/* errors from a peer are not printed, only recorded */
	assert_int_equal(PARSE_REMOTE(&o, "--server", "--bogus-opt", ".", "mod/"), RERR_SYNTAX);
	assert_string_equal(errbuf, "");
	assert_string_equal(options_last_error(&o),
			    "on remote machine: --bogus-opt: unknown option");
	options_free(&o);
	assert_int_equal(PARSE_REMOTE(&o, "--server", "-vy", ".", "mod/"), 0);
	assert_int_equal(o.fuzzy, 1);
	options_free(&o);
	assert_int_equal(PARSE_REMOTE(&o, "--server", "--daemon", "."), RERR_SYNTAX);
	options_free(&o);
}

static void test_server_argv_pull(void **state)
{
	(void)state;
	/* rsync -av --delete --checksum-choice=md5 host::mod/ dst/ sends
	 * "--server --sender -vlogDtpre.iLsfxCIvu --checksum-choice=md5 . mod/" */
	PULL("--server --sender -vlogDtpre.iLsfxCIvu --checksum-choice=md5 .",
	     "-av", "--delete", "--checksum-choice=md5", "host::mod/", "dst/");
	/* a listing: 'd' from the implied --dirs */
	PULL("--server --sender -de.LsfxCIvu .", "host::mod/");
	PULL("--server --sender -de.LsfxCIvu --list-only .", "--list-only", "host::mod/");
	/* a recursive listing receives incremental lists, as rsync's */
	PULL("--server --sender -re.iLsfxCIvu .", "-r", "host::mod/");
	/* --qsort goes by the name rsync's server knows; --drop-D is never
	 * forwarded; --old-dirs is -r (its exclude of the second level travels as a
	 * filter rule) */
	PULL("--server --sender -re.LsfxCIvu --qsort .", "-r", "--qsort", "host::mod/");
	PULL("--server --sender -De.LsfxCIvu .", "-D", "--drop-D", "host::mod/", "d/");
	PULL("--server --sender -re.iLsfxCIvu .", "--old-dirs", "host::mod/", "d/");
	/* the client deletes in a pull: nothing about it is sent */
	PULL("--server --sender -de.LsfxCIvu .", "-d", "--delete", "--max-delete=5", "h::m/",
	     "d/");
	PULL("--server --sender -unrcIe.iLsfxCIvu --ignore-errors --numeric-ids .",
	     "-n", "-u", "-c", "-I", "--stats", "--size-only", "--existing",
	     "--ignore-existing", "--numeric-ids", "--ignore-errors", "--force",
	     "--delete-excluded", "-r", "h::m/", "d/");
	PULL("--server --sender -e.LsfxCIvu -B2048 --timeout=30 --checksum-seed=5 --inplace .",
	     "--timeout=30", "-B", "2048", "--modify-window=2", "--checksum-seed=5",
	     "--partial", "--inplace", "h::m/", "d/");
	PULL("--server --sender -e.LsfxCIvu .", "--sums-cache=.s", "h::m/", "d/");
	PULL("--server --sender -e.LsfxCIvu --info=NAME2,STATS .",
	     "--info=name2,stats,progress2,flist", "h::m/", "d/");
	PULL("--server --sender -e.LsfxCIvu --info=ALL2 .", "--info=ALL2", "h::m/", "d/");
	PULL("--server --sender -vve.LsfxCIvu .", "-vv", "h::m/", "d/");
	/* --files-from (options.c: server_options): a local list goes over
	 * the socket, a remote one is named; --no-implied-dirs with -R */
	PULL("--server --sender -logDtpRe.LsfxCIvu --files-from=- --from0 .",
	     "-a", "--files-from=list", "h:mod/", "d/");
	PULL("--server --sender -logDtpRe.LsfxCIvu --files-from rl --from0 .",
	     "-a", "--files-from=:rl", "-0", "h:mod/", "d/");
	PULL("--server --sender -logDtpe.LsfxCIvu --files-from=- --from0 --no-relative .",
	     "-a", "--files-from=list", "--no-R", "h:mod/", "d/");
	PULL("--server --sender -logDtprRe.LsfxCIvu --no-implied-dirs .",
	     "-aR", "--no-implied-dirs", "h:mod/", "d/");
	/* protocol 29: no capability string */
	expect_server_argv(true, 29, "--server --sender -logDtpr .",
			   (char *[]){ "ferry", "-a", "h::m/", "d/", NULL });
	expect_server_argv(true, 29, "--server --sender .",
			   (char *[]){ "ferry", "--protocol=29", "h::m/", "d/", NULL });
}

/* --copy-devices, --write-devices, --copy-as, --trust-sender: what each
 * sets and what rsync 3.5.0 sends for it (its remote-shell argv). */
static void test_devices_copy_as_trust(void **state)
{
	struct ferry_opts o;
	bool *refused;

	(void)state;
	assert_int_equal(PARSE(&o, "--write-devices", "src/", "dst/"), 0);
	assert_true(o.write_devices);
	assert_true(o.inplace); /* implied, as rsync */
	options_free(&o);
	assert_int_equal(PARSE(&o, "--write-devices", "--no-write-devices", "src/", "dst/"), 0);
	assert_false(o.write_devices);
	options_free(&o);
	assert_int_equal(PARSE(&o, "--copy-devices", "--trust-sender", "--copy-as=nobody:nogroup",
			       "src/", "dst/"), 0);
	assert_true(o.copy_devices);
	assert_true(o.trust_sender);
	assert_string_equal(o.copy_as, "nobody:nogroup");
	options_free(&o);

	/* a daemon refuses both unless accepted by exact name; a refused
	 * --inplace refuses --write-devices too */
	refused = options_refusals("");
	assert_true(options_refused_row(refused, "copy-devices") >= 0);
	assert_true(options_refused_row(refused, "write-devices") >= 0);
	free(refused);
	refused = options_refusals("!copy-devices !write-devices");
	assert_true(options_refused_row(refused, "copy-devices") < 0);
	assert_true(options_refused_row(refused, "write-devices") < 0);
	free(refused);
	refused = options_refusals("!*devices");
	assert_true(options_refused_row(refused, "copy-devices") >= 0);
	free(refused);
	refused = options_refusals("!write-devices inplace");
	assert_int_equal(options_parse_refusing(&o, 4,
						(char *[]){ "rsyncd", "--server", "--write-devices",
							    ".", NULL },
						OPTS_FROM_REMOTE, refused),
			 RERR_UNSUPPORTED);
	options_free(&o);
	free(refused);

	/* rsync -e RSH --copy-devices -a h:src/ d/ and the push forms */
	PULL("--server --sender -logDtpre.iLsfxCIvu --copy-devices .", "--copy-devices", "-a",
	     "h:src/", "d/");
	PULL("--server --sender -logDtpre.iLsfxCIvu --inplace --copy-devices .", "--write-devices",
	     "--copy-devices", "--trust-sender", "--copy-as=nobody", "-a", "h:src/", "d/");
	PULL("--server --sender -logDtpre.iLsfxCIvu --remove-source-files --copy-devices .",
	     "--copy-devices", "--remove-source-files", "-a", "h:src/", "d/");
	PUSH("--server -logDtpre.iLsfxCIvu --inplace --write-devices .", "--write-devices",
	     "--copy-devices", "-a", "src/", "h:d/");
	PUSH("--server -logDtpre.iLsfxCIvu --inplace --write-devices --remove-source-files "
	     "--mkpath .", "--write-devices", "--remove-source-files", "--mkpath", "-a", "src/",
	     "h:d/");
}

static void test_server_argv_push(void **state)
{
	(void)state;
	/* rsync -av --delete src/ host::mod/ */
	PUSH("--server -vlogDtpre.iLsfxCIvu --delete .", "-av", "--delete", "src/", "h::mod/");
	PUSH("--server -logDtpRe.LsfxCIvu .", "-a", "--files-from=list", "src", "h:d/");
	PUSH("--server -logDtpRe.LsfxCIvu --files-from rl .", "-a", "--files-from=h:rl", "src",
	     "h:d/");
	PUSH("--server -logDtprRe.LsfxCIvu --no-implied-dirs .", "-aR", "--no-implied-dirs",
	     "src", "h:d/");
	PUSH("--server -re.iLsfxCIvu --delete-before .", "--delete-before", "-r", "s/", "h::m/");
	PUSH("--server -re.iLsfxCIvu --delete-during .", "--del", "-r", "s/", "h::m/");
	PUSH("--server -re.iLsfxCIvu --delete-delay .", "--delete-delay", "-r", "s/", "h::m/");
	PUSH("--server -re.iLsfxCIvu --delete-after .", "--delete-after", "-r", "s/", "h::m/");
	PUSH("--server -re.iLsfxCIvu --delete-excluded .", "--delete", "--delete-excluded",
	     "-r", "s/", "h::m/");
	PUSH("--server -re.iLsfxCIvu --max-delete=-1 --delete .", "--max-delete=0", "-r",
	     "--delete", "s/", "h::m/");
	PUSH("--server -re.iLsfxCIvu --max-delete=5 --delete .", "--max-delete=5", "-r",
	     "--delete", "s/", "h::m/");
	PUSH("--server -de.LsfxCIvu --no-r --delete .", "-d", "--delete", "s/", "h::m/");
	PUSH("--server -unrcIe.iLsfxCIvu --delete-excluded --force --size-only --stats "
	     "--ignore-errors --numeric-ids --ignore-existing --existing .",
	     "-n", "-u", "-c", "-I", "--stats", "--size-only", "--existing",
	     "--ignore-existing", "--numeric-ids", "--ignore-errors", "--force",
	     "--delete-excluded", "-r", "s/", "h::m/");
	PUSH("--server -e.LsfxCIvu -B2048 --timeout=30 --modify-window=2 --checksum-seed=5 "
	     "--inplace .",
	     "--timeout=30", "-B", "2048", "--modify-window=2", "--checksum-seed=5",
	     "--partial", "--inplace", "s/", "h::m/");
	PUSH("--server -e.LsfxCIvu --partial .", "--partial", "s/", "h::m/");
	/* --sums-cache goes to a receiving server only */
	PUSH("--server -e.LsfxCIvu --checksum-seed=9 --sums-cache=.s .", "--checksum-seed=9",
	     "--sums-cache=.s", "s/", "h::m/");
	PUSH("--server -e.LsfxCIvu -@-1 .", "--modify-window=-1", "s/", "h::m/");
	/* what the server needs of our log format */
	PUSH("--server -e.LsfxCIvu --log-format=%i .", "-i", "s/", "h::m/");
	PUSH("--server -e.LsfxCIvu --log-format=%i%I .", "-ii", "s/", "h::m/");
	PUSH("--server -e.LsfxCIvu --log-format=X .", "--out-format=%n", "s/", "h::m/");
	PUSH("--server -ve.LsfxCIvu .", "-v", "--out-format=%n", "s/", "h::m/");
	PUSH("--server -e.LsfxCIvu --log-format=X --info=NAME2,STATS .", "--info=name2,stats",
	     "s/", "h::m/");
	PUSH("--server -e.LsfxCIvu --log-format=X --info=ALL .", "--info=ALL", "s/", "h::m/");
	/* -q is sent unless messages stay on the client */
	PUSH("--server -qe.LsfxCIvu .", "-q", "s/", "h::m/");
	PUSH("--server -e.LsfxCIvu --no-msgs2stderr .", "-q", "--no-msgs2stderr", "s/",
	     "h::m/");
	PUSH("--server -qe.LsfxCIvu --msgs2stderr .", "-q", "--msgs2stderr", "s/", "h::m/");
	/* flags only a receiving server needs */
	PUSH("--server -OJEe.LsfxCIvu .", "-O", "-J", "-E", "s/", "h::m/");
	PULL("--server --sender -e.LsfxCIvu .", "-O", "-J", "-E", "h::m/", "d/");
	/* devices vs specials */
	PUSH("--server -De.LsfxCIvu --no-specials .", "--devices", "s/", "h::m/");
	PUSH("--server -e.LsfxCIvu --specials .", "--specials", "s/", "h::m/");
	PUSH("--server -logtpre.iLsfxCIvu .", "-a", "--no-D", "s/", "h::m/");
	/* --checksum-choice=none forces whole-file, like rsync */
	PUSH("--server -We.LsfxCIvu --checksum-choice=none .", "--cc=none", "s/", "h::m/");
	PUSH("--server -e.LsfxCIvu --checksum-choice=MD5,xxh64 .", "--cc=MD5,xxh64", "s/",
	     "h::m/");
	PUSH("--server -e.LsfxCIvu .", "--no-W", "s/", "h::m/");
	/* remote options come last, escaped for the remote shell */
	PUSH("--server -e.LsfxCIvu --foo=a\\ b\\* --x=\\\\y .", "-M--foo=a b*", "-M",
	     "--x=\\y", "s/", "h::m/");
	PUSH("--server -vvvvvvvvve.LsfxCIvu .", "-vvvvvvvvvvvv", "s/", "h::m/");
}

/* The server parses what the client sends back into the same options. */
static void test_round_trip(void **state)
{
	struct ferry_opts c, s;
	char **v;
	int n = 0;

	(void)state;
	assert_int_equal(PARSE(&c, "-avc", "--delete-delay", "--max-delete=3", "--size-only",
			       "--timeout=9", "-B", "4096", "--cc=xxh128", "-i", "src/",
			       "h::m/"), 0);
	v = options_server_argv(&c, false, 32);
	assert_non_null(v);
	while (v[n])
		n++;
	v = realloc(v, (size_t)(n + 3) * sizeof *v);
	memmove(v + 1, v, (size_t)(n + 1) * sizeof *v);
	v[0] = strdup("rsyncd");
	v[n + 1] = strdup("m/");
	v[n + 2] = NULL;
	assert_int_equal(options_parse_flags(&s, n + 2, v, OPTS_FROM_REMOTE), 0);
	assert_true(s.server && !s.sender);
	assert_int_equal(s.verbose, 1);
	assert_true(s.recursive && s.links && s.perms && s.times && s.group && s.owner
		    && s.devices && s.specials && s.checksum && s.size_only);
	assert_int_equal(s.delete_mode, DELETE_DELAY);
	assert_int_equal(s.max_delete, 3);
	assert_int_equal(s.timeout, 9);
	assert_int_equal(s.block_size, 4096);
	assert_string_equal(s.checksum_choice, "xxh128");
	assert_string_equal(s.out_format, "%i");
	assert_string_equal(s.server_caps, ".iLsfxCIvu");
	assert_int_equal(s.nargs, 2);
	options_free(&s);
	options_free(&c);
	options_free_argv(v);
}

static void test_safe_arg(void **state)
{
	char *s;

	(void)state;
	s = options_safe_arg(NULL, "d st/*.c", false);
	assert_string_equal(s, "d\\ st/*.c");
	free(s);
	s = options_safe_arg(NULL, "-x", false);
	assert_string_equal(s, "./-x");
	free(s);
	s = options_safe_arg(NULL, "~/x", true);
	assert_string_equal(s, "\\~/x");
	free(s);
	s = options_safe_arg("--suffix", "a*b c", false);
	assert_string_equal(s, "--suffix=a\\*b\\ c");
	free(s);
	s = options_safe_arg(NULL, "a\\*b\\c", false);
	assert_string_equal(s, "a\\*b\\\\c");
	free(s);
}

static time_t utc(int y, int mo, int d, int h, int mi)
{
	struct tm t = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h,
		       .tm_min = mi, .tm_isdst = -1};
	return mktime(&t);
}

/* --stop-at fills in what is left out from now and rolls forward. */
static void test_stop_at(void **state)
{
	(void)state;
	setenv("TZ", "UTC", 1);
	tzset();
	time_t now = utc(2026, 1, 15, 10, 30);

	assert_int_equal(stop_at_parse("2026-01-15T11:00", now), utc(2026, 1, 15, 11, 0));
	assert_int_equal(stop_at_parse("26-01-15T11:00", now), utc(2026, 1, 15, 11, 0));
	assert_int_equal(stop_at_parse("11:00", now), utc(2026, 1, 15, 11, 0));
	assert_int_equal(stop_at_parse("T11:00", now), utc(2026, 1, 15, 11, 0));
	assert_int_equal(stop_at_parse("10:00", now), utc(2026, 1, 16, 10, 0));
	assert_int_equal(stop_at_parse(":45", now), utc(2026, 1, 15, 10, 45));
	assert_int_equal(stop_at_parse(":15", now), utc(2026, 1, 15, 11, 15));
	assert_int_equal(stop_at_parse("01-20", now), utc(2026, 1, 20, 0, 0));
	assert_int_equal(stop_at_parse("1/10", now), utc(2027, 1, 10, 0, 0));
	assert_int_equal(stop_at_parse("20T8:05", now), utc(2026, 1, 20, 8, 5));
	assert_true(stop_at_parse("2026-01-15T09:00", now) <= now);
	assert_int_equal(stop_at_parse("garbage", now), (time_t)-1);
	assert_int_equal(stop_at_parse("25:00", now), (time_t)-1);
	assert_int_equal(stop_at_parse("T", now), (time_t)-1);
	assert_int_equal(stop_at_parse("2026-13-01", now), (time_t)-1);
	unsetenv("TZ");
	tzset();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_archive_expands),
		cmocka_unit_test(test_h_alone_is_help),
		cmocka_unit_test(test_negations),
		cmocka_unit_test(test_aliases),
		cmocka_unit_test(test_filters),
		cmocka_unit_test(test_unknown_and_unsupported),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_list_only_and_dirs),
		cmocka_unit_test(test_daemon_mode),
		cmocka_unit_test(test_server_side_parse),
		cmocka_unit_test(test_server_argv_pull),
		cmocka_unit_test(test_server_argv_push),
		cmocka_unit_test(test_devices_copy_as_trust),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_safe_arg),
		cmocka_unit_test(test_stop_at),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
