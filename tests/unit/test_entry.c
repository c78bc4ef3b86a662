/*
 * rsync's other entry points, unit level: the --secluded-args packing and
 * reading (rsync.c: send_protected_args, io.c: read_args), the argument
 * escaping --old-args and -s change (options.c: safe_arg), the
 * RSYNC_CONNECT_PROG %H expansion and its host check (socket.c), the
 * --sockopts names, --max-alloc and the environment defaults.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/connect.h"
#include "proto/base/sockopts.h"
#include "proto/args/options.h"
#include "client/rsh.h"
#include "proto/args/secluded.h"
#include "proto/base/wire.h"

/* Parse {"ferry", args..., NULL} with stderr silenced. */
static int parse_quiet(struct ferry_opts *o, char **args)
{
	int argc = 0, err = dup(2), devnull = open("/dev/null", O_WRONLY);

	while (args[argc])
		argc++;
	fflush(stderr);
	dup2(devnull, 2);
	int rc = options_parse(o, argc, args);
	fflush(stderr);
	dup2(err, 2);
	close(err);
	close(devnull);
	return rc;
}

#define PARSE(o, ...) parse_quiet(o, (char *[]){ "ferry", __VA_ARGS__, NULL })

struct bytes {
	const char *p;
	size_t len, pos;
};

static bool bytes_getc(void *ctx, char *ch)
{
	struct bytes *b = ctx;

	if (b->pos >= b->len)
		return false;
	*ch = b->p[b->pos++];
	return true;
}

static void test_secluded_pack_matches_rsync(void **state)
{
	char *rest[] = { "--timeout=5", "", ".", NULL };
	char *paths[] = { "dir one/a b", "*" };
	size_t len = 0;
	char *buf = secluded_pack(rest, paths, 2, &len);
	/* rsync sends an empty argument as "." */
	static const char want[] = "rsync\0--timeout=5\0.\0.\0dir one/a b\0*\0";

	(void)state;
	assert_non_null(buf);
	assert_int_equal(len, sizeof want);
	assert_memory_equal(buf, want, sizeof want);
	free(buf);
}

static void test_secluded_read_round_trip(void **state)
{
	static const char wire[] = "rsync\0--delete\0.\0a b\0\0TRAILING";
	struct bytes b = { wire, sizeof wire - 1, 0 };
	const char *why = NULL;
	int n = 0;
	char **v = secluded_read(bytes_getc, &b, &n, &why);

	(void)state;
	assert_non_null(v);
	assert_int_equal(n, 4);
	assert_string_equal(v[0], "rsync");
	assert_string_equal(v[3], "a b");
	assert_null(v[4]);
	/* nothing after the terminating NUL was consumed */
	assert_int_equal(b.pos, sizeof "rsync\0--delete\0.\0a b\0");
	char *first[] = { "rsyncd", "--server", "--sender", "-slogDtpr", "(null)", ".", "x", NULL };
	int m = 0;
	char **merged = secluded_merge(first, options_secluded_split(first), v, n, &m);
	assert_non_null(merged);
	assert_int_equal(m, 7);
	assert_string_equal(merged[3], "-slogDtpr");
	assert_string_equal(merged[4], "--delete");
	assert_string_equal(merged[6], "a b");
	assert_null(merged[7]);
	free(merged);
	secluded_free(v);
}

static void test_secluded_read_bounds(void **state)
{
	const char *why = NULL;
	int n = 0;
	static const char truncated[] = "rsync\0abc";
	struct bytes b = { truncated, sizeof truncated - 1, 0 };

	(void)state;
	assert_null(secluded_read(bytes_getc, &b, &n, &why));
	assert_non_null(strstr(why, "ended"));
	char *big = malloc(SECLUDED_MAX_ARG_LEN + 10);
	memset(big, 'a', SECLUDED_MAX_ARG_LEN + 9);
	big[SECLUDED_MAX_ARG_LEN + 9] = '\0';
	struct bytes b2 = { big, SECLUDED_MAX_ARG_LEN + 10, 0 };
	assert_null(secluded_read(bytes_getc, &b2, &n, &why));
	assert_non_null(strstr(why, "too long"));
	free(big);
	static const char empty[] = "\0";
	struct bytes b3 = { empty, 1, 0 };
	assert_null(secluded_read(bytes_getc, &b3, &n, &why));
}

static void test_server_argv_secluded(void **state)
{
	struct ferry_opts o;

	(void)state;
	assert_int_equal(PARSE(&o, "-s", "-a", "--delete", "h:src/", "dst"), 0);
	assert_true(o.secluded_args);
	char **v = options_server_argv(&o, true, 32);
	assert_non_null(v);
	assert_string_equal(v[2], "-slogDtpre.iLsfxCIvu");
	assert_int_equal(options_secluded_split(v), 3);
	options_free_argv(v);
	options_free(&o);
}

static void test_remote_arg_escaping(void **state)
{
	struct ferry_opts o;
	char *a;

	(void)state;
	assert_int_equal(PARSE(&o, "h:x", "y"), 0);
	a = options_remote_arg(&o, NULL, "a b*", false);
	assert_string_equal(a, "a\\ b*");
	free(a);
	options_free(&o);

	assert_int_equal(PARSE(&o, "--old-args", "h:x", "y"), 0);
	assert_int_equal(o.old_args, 1);
	a = options_remote_arg(&o, NULL, "a b", false);
	assert_string_equal(a, "a b");
	free(a);
	a = options_remote_arg(&o, "--skip-compress", "a b", false);
	assert_string_equal(a, "--skip-compress=a\\ b");
	free(a);
	a = options_remote_arg(&o, "", "--x=a b", true);
	assert_string_equal(a, "--x=a b");
	free(a);
	options_free(&o);

	assert_int_equal(PARSE(&o, "-s", "h:x", "y"), 0);
	a = options_remote_arg(&o, NULL, "-a b", false);
	assert_string_equal(a, "./-a b");
	free(a);
	options_free(&o);

	assert_int_equal(PARSE(&o, "--old-args", "-s", "h:x", "y"), 1);
	options_free(&o);
}

static void test_environment_defaults(void **state)
{
	struct ferry_opts o;

	(void)state;
	setenv("RSYNC_PROTECT_ARGS", "1", 1);
	assert_int_equal(PARSE(&o, "h:x", "y"), 0);
	assert_true(o.secluded_args);
	options_free(&o);
	assert_int_equal(PARSE(&o, "--no-s", "h:x", "y"), 0);
	assert_false(o.secluded_args);
	options_free(&o);
	/* a server never takes it from its environment */
	assert_int_equal(PARSE(&o, "--server", "--sender", "-l", ".", "x"), 0);
	assert_false(o.secluded_args);
	options_free(&o);
	unsetenv("RSYNC_PROTECT_ARGS");

	setenv("RSYNC_OLD_ARGS", "2", 1);
	assert_int_equal(PARSE(&o, "h:x", "y"), 0);
	assert_int_equal(o.old_args, 2);
	assert_false(o.secluded_args);
	options_free(&o);
	unsetenv("RSYNC_OLD_ARGS");

	setenv("RSYNC_MAX_ALLOC", "2G", 1);
	assert_int_equal(PARSE(&o, "h:x", "y"), 0);
	assert_string_equal(o.max_alloc, "2G");
	options_free(&o);
	unsetenv("RSYNC_MAX_ALLOC");
	/* 0 is no limit (rsync's --max-alloc) */
	assert_int_equal(PARSE(&o, "--max-alloc=0", "h:x", "y"), 0);
	options_free(&o);
	assert_int_equal(PARSE(&o, "--max-alloc=100k", "h:x", "y"), 1);
	options_free(&o);
	assert_int_equal(PARSE(&o, "--max-alloc=bogus", "h:x", "y"), 1);
	options_free(&o);
}

static void test_connect_prog_expand(void **state)
{
	char *c;
	int err = dup(2), devnull = open("/dev/null", O_WRONLY);

	(void)state;
	c = connect_prog_expand("nc %H 873 # 100%% %x", "host.example");
	assert_string_equal(c, "nc 'host.example' 873 # 100% %x");
	free(c);
	c = connect_prog_expand("ssh gw nc %H 873", "fe80::1%eth0");
	assert_string_equal(c, "ssh gw nc 'fe80::1%eth0' 873");
	free(c);
	/* without a % the host is never looked at */
	c = connect_prog_expand("plain", "a;b");
	assert_string_equal(c, "plain");
	free(c);
	fflush(stderr);
	dup2(devnull, 2);
	const char *bad[] = { "", "-rf", "+x", "~root", "%self", "a;b", "a b", "a'b", "a$(id)" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_null(connect_prog_expand("x %H", bad[i]));
	fflush(stderr);
	dup2(err, 2);
	close(err);
	close(devnull);
}

static void test_sockopts_names(void **state)
{
	int err = dup(2), devnull = open("/dev/null", O_WRONLY);

	(void)state;
	assert_true(sockopts_apply(-1, "SO_KEEPALIVE,SO_SNDBUF=65536 TCP_NODELAY=0\tIPTOS_LOWDELAY"));
	assert_true(sockopts_apply(-1, ""));
	fflush(stderr);
	dup2(devnull, 2);
	assert_false(sockopts_apply(-1, "SO_BOGUS"));
	assert_false(sockopts_apply(-1, "SO_SNDBUF"));
	assert_false(sockopts_apply(-1, "SO_SNDBUF=12x"));
	assert_false(sockopts_apply(-1, "IPTOS_LOWDELAY=1"));
	fflush(stderr);
	dup2(err, 2);
	close(err);
	close(devnull);
}

/* Run "sh -c script" as the remote shell and reap it with code. */
static int shell_ends(const char *script, int code)
{
	char *argv[] = {"sh", "-c", (char *)script, NULL};
	int in, out;
	pid_t pid = rsh_spawn(argv, &in, &out);

	assert_true(pid > 0);
	assert_true(in >= 0 && out >= 0 && in != out);
	close(in);
	close(out);
	return rsh_wait(pid, code);
}

/* The shell's status: its own on success, and over a lost connection
 * when higher (ssh's 255), never over another error of ours. */
static void test_rsh_wait_codes(void **state)
{
	(void)state;
	assert_int_equal(shell_ends("exit 0", 0), 0);
	assert_int_equal(shell_ends("exit 3", 0), 3);
	assert_int_equal(shell_ends("exit 255", RERR_STREAMIO), 255);
	assert_int_equal(shell_ends("exit 255", RERR_SOCKETIO), 255);
	assert_int_equal(shell_ends("exit 1", RERR_STREAMIO), RERR_STREAMIO);
	assert_int_equal(shell_ends("exit 255", RERR_PARTIAL), RERR_PARTIAL);
	assert_int_equal(shell_ends("kill -9 $$", 0), 125);
}

/* A shell that ends without reading what we sent: our reading end sees
 * the end of the stream, not a reset (ECONNRESET, as one socketpair both
 * ways would give). The shell lives until we have written. */
static void test_rsh_early_end_is_eof(void **state)
{
	char *argv[] = {"sh", "-c", "exec sleep 30", NULL};
	char buf[16];
	int in, out;

	(void)state;
	pid_t pid = rsh_spawn(argv, &in, &out);
	assert_true(pid > 0);
	assert_int_equal(write(out, "abcd", 4), 4);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(read(in, buf, sizeof buf), 0);
	close(in);
	close(out);
	/* killed, not exited: our code stands */
	assert_int_equal(rsh_wait(pid, RERR_STREAMIO), RERR_STREAMIO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_secluded_pack_matches_rsync),
		cmocka_unit_test(test_secluded_read_round_trip),
		cmocka_unit_test(test_secluded_read_bounds),
		cmocka_unit_test(test_server_argv_secluded),
		cmocka_unit_test(test_remote_arg_escaping),
		cmocka_unit_test(test_environment_defaults),
		cmocka_unit_test(test_connect_prog_expand),
		cmocka_unit_test(test_sockopts_names),
		cmocka_unit_test(test_rsh_wait_codes),
		cmocka_unit_test(test_rsh_early_end_is_eof),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
