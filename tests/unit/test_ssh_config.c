/*
 * client/ssh_config_scan.c: which ssh_config files the built-in SSH
 * client may leave to libssh. Each case writes config files into a fresh
 * directory (standing in for the passwd home and /etc/ssh) and checks the
 * verdict and its reason; the rules come from differences between
 * OpenSSH's readconf.c and libssh 0.10's config.c, checked with `ssh -G`
 * and libssh itself.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "client/ssh_config_scan.h"

static char dir[256];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "%s/ssh-cfg-test.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir))
		return -1;
	char p[512];
	snprintf(p, sizeof p, "%s/.ssh", dir);
	mkdir(p, 0700);
	snprintf(p, sizeof p, "%s/etc", dir);
	mkdir(p, 0755);
	return 0;
}

static int teardown(void **state)
{
	char cmd[600];

	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Write dir/name with text. */
static void put(const char *name, const char *text)
{
	char p[512];

	snprintf(p, sizeof p, "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Scan the user file .ssh/config (text) and etc/ssh_config (global,
 * NULL: none), HOME as given (NULL: the same as the passwd home). */
static bool scan_with_home(const char *user, const char *global, const char *home,
			   struct ssh_cfg_scan *sc)
{
	static char ucfg[512], gcfg[512], gdir[512];

	snprintf(ucfg, sizeof ucfg, "%s/.ssh/config", dir);
	snprintf(gcfg, sizeof gcfg, "%s/etc/ssh_config", dir);
	snprintf(gdir, sizeof gdir, "%s/etc", dir);
	put(".ssh/config", user);
	put("etc/ssh_config", global ? global : "");
	struct ssh_cfg_paths paths = {
		.user_config = ucfg,
		.global_config = gcfg,
		.global_dir = gdir,
		.pw_home = dir,
		.env_home = home ? home : dir,
	};
	return ssh_cfg_scan(&paths, sc);
}

static bool scan(const char *user, const char *global, struct ssh_cfg_scan *sc)
{
	return scan_with_home(user, global, NULL, sc);
}

/* The verdict is "no", and the reason holds want. */
static void refused(const char *user, const char *global, const char *want)
{
	struct ssh_cfg_scan sc;

	bool ok = scan(user, global, &sc);
	if (ok || !strstr(sc.why, want))
		fail_msg("config:\n%s\nexpected a refusal with \"%s\", got %s \"%s\"", user, want,
			 ok ? "yes" : "no", sc.why);
	ssh_cfg_scan_release(&sc);
}

static void accepted(const char *user, const char *global)
{
	struct ssh_cfg_scan sc;

	bool ok = scan(user, global, &sc);
	if (!ok)
		fail_msg("config:\n%s\nrefused: %s", user, sc.why);
	ssh_cfg_scan_release(&sc);
}

static void test_patterns(void **state)
{
	(void)state;
	assert_true(ssh_cfg_pattern_match("*", "prod"));
	assert_true(ssh_cfg_pattern_match("pr?d", "prod"));
	assert_true(ssh_cfg_pattern_match("*.example.com", "a.example.com"));
	assert_false(ssh_cfg_pattern_match("*.example.com", "example.com"));
	assert_true(ssh_cfg_pattern_match("a*b*c", "axxbyyc"));
	assert_false(ssh_cfg_pattern_match("a*b*c", "axxbyy"));
	assert_true(ssh_cfg_pattern_match("**", ""));
	/* no character classes in ssh's patterns */
	assert_false(ssh_cfg_pattern_match("[p]rod", "prod"));
	assert_true(ssh_cfg_pattern_match("LC_*", "LC_ALL"));
	assert_false(ssh_cfg_pattern_match("LC_*", "LANG"));
}

static void test_plain_config_accepted(void **state)
{
	(void)state;
	accepted("# a comment\n"
		 "Host prod dev\n"
		 "  HostName 10.0.0.1\n"
		 "  Port 2222\n"
		 "  User=me\n"
		 "  IdentityFile ~/.ssh/id_work\n"
		 "Host *\n"
		 "  StrictHostKeyChecking yes\n"
		 "  UserKnownHostsFile ~/.ssh/kh\n"
		 "  GlobalKnownHostsFile /dev/null\n"
		 "  Ciphers aes128-ctr,aes256-gcm@openssh.com\n"
		 "  MACs hmac-sha2-256\n"
		 "  Compression yes\n"
		 "  ConnectTimeout 10\n"
		 "  BatchMode yes\n"
		 "  LogLevel ERROR\n"
		 "  PubkeyAuthentication yes\n"
		 "  PasswordAuthentication no\n",
		 /* Debian's /etc/ssh/ssh_config */
		 "Include /nonexistent/ssh_config.d/*.conf\n"
		 "Host *\n"
		 "    SendEnv LANG LC_*\n"
		 "    HashKnownHosts yes\n"
		 "    GSSAPIAuthentication yes\n");
	accepted("", NULL);
}

/* The case: libssh applies "Host * !prod" to prod. */
static void test_host_negation(void **state)
{
	(void)state;
	refused("Host * !prod\n  StrictHostKeyChecking yes\n", NULL, "negated pattern after a plain one");
	refused("Host dev !prod\n  Port 1\n", NULL, "line 1: Host with a negated pattern");
	/* negation first: libssh stops at it, as ssh does */
	accepted("Host !prod *\n  Port 1\n", NULL);
	accepted("Host !prod !qa *\n  Port 1\n", NULL);
	/* libssh splits at commas, ssh does not */
	refused("Host a,b\n  Port 1\n", NULL, "comma");
	refused("Host\n", NULL, "Host without a pattern");
}

static void test_lax_host_key_checking_refused(void **state)
{
	(void)state;
	refused("Host *\n  StrictHostKeyChecking no\n", NULL, "StrictHostKeyChecking no");
	refused("StrictHostKeyChecking accept-new\n", NULL, "StrictHostKeyChecking accept-new");
	refused("StrictHostKeyChecking off\n", NULL, "StrictHostKeyChecking off");
	accepted("StrictHostKeyChecking ask\n", NULL);
	refused("UserKnownHostsFile ~/.ssh/a ~/.ssh/b\n", NULL, "several files");
	refused("UserKnownHostsFile ~/.ssh/kh_%h\n", NULL, "UserKnownHostsFile");
}

static void test_unsupported_keywords(void **state)
{
	(void)state;
	refused("Match host prod\n  Port 1\n", NULL, "line 1: Match is not applied");
	refused("Host *\n  ProxyJump bastion\n", NULL, "line 2: ProxyJump is not applied");
	refused("ProxyCommand nc %h %p\n", NULL, "ProxyCommand");
	refused("IdentitiesOnly yes\n", NULL, "IdentitiesOnly");
	refused("CertificateFile ~/.ssh/c\n", NULL, "CertificateFile");
	refused("AddressFamily inet\n", NULL, "AddressFamily");
	refused("ControlMaster auto\n", NULL, "ControlMaster");
	refused("NoSuchKeyword x\n", NULL, "NoSuchKeyword");
	/* unknown and + forms of algorithm lists */
	refused("Ciphers +aes128-cbc\n", NULL, "Ciphers +aes128-cbc");
	refused("Ciphers aes128-ctr,nosuch\n", NULL, "Ciphers");
	refused("KexAlgorithms curve25519-sha256\n", NULL, "KexAlgorithms");
	refused("HostName %h.example.com\n", NULL, "HostName");
	refused("Port ssh\n", NULL, "Port ssh");
	refused("Compression maybe\n", NULL, "Compression maybe");
	/* the global file counts as much as the user's */
	refused("", "Host *\n  ForwardAgent yes\n", "etc/ssh_config line 2: ForwardAgent");
}

static void test_sendenv_and_gssapi(void **state)
{
	struct ssh_cfg_scan sc;

	(void)state;
	assert_true(scan("SendEnv FOO\nHost *\n  SendEnv LANG LC_*\n  GSSAPIAuthentication yes\n"
			 "  GSSAPIAuthentication no\n",
			 NULL, &sc));
	assert_int_equal(sc.nsendenv, 3);
	assert_string_equal(sc.sendenv[2], "LC_*");
	assert_int_equal(sc.gssapi, 1); /* the first value wins */
	ssh_cfg_scan_release(&sc);
	refused("Host prod\n  SendEnv LANG\n", NULL, "SendEnv inside a Host block");
	refused("SendEnv -LANG\n", NULL, "SendEnv removing");
	refused("Host prod\n  GSSAPIAuthentication yes\n", NULL, "GSSAPIAuthentication inside");
}

static void test_hash_known_hosts(void **state)
{
	struct ssh_cfg_scan sc;

	(void)state;
	assert_true(scan("HashKnownHosts yes\n", NULL, &sc));
	assert_int_equal(sc.hash_known_hosts, 1);
	ssh_cfg_scan_release(&sc);
	assert_true(scan("Host prod\n  HashKnownHosts yes\nHost *\n  HashKnownHosts no\n", NULL, &sc));
	assert_int_equal(sc.hash_known_hosts, SSH_CFG_PER_HOST);
	ssh_cfg_scan_release(&sc);
	assert_true(scan("", NULL, &sc));
	assert_int_equal(sc.hash_known_hosts, -1);
	ssh_cfg_scan_release(&sc);
}

static void test_include(void **state)
{
	char text[1024];

	(void)state;
	/* an Included file's lines count */
	put("inc-a.conf", "Host *\n  ProxyJump bastion\n");
	snprintf(text, sizeof text, "Include %s/inc-?.conf\n", dir);
	refused(text, NULL, "inc-a.conf line 2: ProxyJump");
	/* relative: ~/.ssh of the user file, /etc/ssh of the global one */
	put(".ssh/rel.conf", "Match all\n");
	refused("Include rel.conf\n", NULL, ".ssh/rel.conf line 1: Match");
	put("etc/grel.conf", "Match all\n");
	refused("", "Include grel.conf\n", "etc/grel.conf line 1: Match");
	refused("Include ~/.ssh/rel.conf\n", NULL, ".ssh/rel.conf line 1: Match");
	put(".ssh/rel.conf", "Port 22\n");
	accepted("Include rel.conf\n", NULL);
	accepted("Include /nonexistent/*.conf\n", NULL);
	/* libssh reads only the first of several */
	refused("Include a.conf b.conf\n", NULL, "more than one file");
	/* ~ in the global file: a name relative to /etc/ssh for libssh */
	refused("", "Include ~/.ssh/rel.conf\n", "libssh would read another file");
	refused("Include ~other/x.conf\n", NULL, "libssh would read another file");
	refused("Include %d/x.conf\n", NULL, "Include with %");
	/* $HOME elsewhere: ssh globs ~ with it, libssh takes the passwd home */
	struct ssh_cfg_scan sc;
	assert_false(scan_with_home("Include rel.conf\n", NULL, "/elsewhere", &sc));
	assert_non_null(strstr(sc.why, "libssh would read another file"));
	ssh_cfg_scan_release(&sc);
	/* a Host line in an Included file: ssh goes back to the including
	 * block afterwards, libssh does not */
	put("inc-h.conf", "Host prod\n  Port 1\n");
	snprintf(text, sizeof text, "Include %s/inc-h.conf\nPort 2\n", dir);
	refused(text, NULL, "config line 2: a line after an Include");
	snprintf(text, sizeof text, "Include %s/inc-h.conf\nHost *\n  Port 2\n", dir);
	accepted(text, NULL);
	/* Includes that include themselves end at the depth limit */
	snprintf(text, sizeof text, "Include %s/loop.conf\n", dir);
	put("loop.conf", text);
	refused(text, NULL, "more than");
}

static void test_bounds(void **state)
{
	char big[1200];

	(void)state;
	memset(big, 'x', sizeof big);
	memcpy(big, "Port ", 5);
	big[sizeof big - 2] = '\n';
	big[sizeof big - 1] = '\0';
	refused(big, NULL, "line longer than 1023 bytes");
	char words[600] = "SendEnv";
	for (int i = 0; i < 70; i++)
		strcat(words, " V");
	strcat(words, "\n");
	refused(words, NULL, "more than 64 words");
	char many[40 * 12] = "";
	for (int i = 0; i < 40; i++)
		strcat(many, "SendEnv V\n");
	refused(many, NULL, "more than 32 SendEnv patterns");
}

/* libssh matches Host lines after an applied HostName against the new
 * name; the two agree only when no later Host line tells the names apart
 * (and libssh ended with the name ssh's rules pick). */
static void test_hosts_agree(void **state)
{
	struct ssh_cfg_scan sc;
	char text[1024];

	(void)state;
	assert_true(scan("Host a\n  HostName A.example.com\nHost b\n  HostName b.example.com\n"
			 "Host *\n  User u\n",
			 NULL, &sc));
	assert_true(ssh_cfg_hosts_agree(&sc, "a", "a.example.com"));
	assert_true(ssh_cfg_hosts_agree(&sc, "b", "b.example.com"));
	assert_true(ssh_cfg_hosts_agree(&sc, "c", "c"));
	/* libssh ended somewhere else than ssh would */
	assert_false(ssh_cfg_hosts_agree(&sc, "a", "b.example.com"));
	assert_false(ssh_cfg_hosts_agree(&sc, "c", "a.example.com"));
	ssh_cfg_scan_release(&sc);
	/* a later line matches the new name only (libssh applies it) */
	assert_true(scan("Host a\n  HostName b\nHost b\n  Port 3333\n", NULL, &sc));
	assert_false(ssh_cfg_hosts_agree(&sc, "a", "b"));
	ssh_cfg_scan_release(&sc);
	/* ... or the alias only (libssh skips it) */
	assert_true(scan("Host a\n  HostName b\nHost !b *\n  Port 3333\n", NULL, &sc));
	assert_false(ssh_cfg_hosts_agree(&sc, "a", "b"));
	ssh_cfg_scan_release(&sc);
	/* the first HostName of a matching block wins, across files */
	assert_true(scan("Host *\n  HostName first\n", "Host *\n  HostName second\n", &sc));
	assert_true(ssh_cfg_hosts_agree(&sc, "x", "first"));
	assert_false(ssh_cfg_hosts_agree(&sc, "x", "second"));
	ssh_cfg_scan_release(&sc);
	/* an Include in a block that does not match opens no block */
	put("inc-hn.conf", "Host *\n  HostName inner\n");
	snprintf(text, sizeof text, "Host other\n  Include %s/inc-hn.conf\nHost *\n  HostName outer\n",
		 dir);
	assert_true(scan(text, NULL, &sc));
	assert_true(ssh_cfg_hosts_agree(&sc, "x", "outer"));
	assert_true(ssh_cfg_hosts_agree(&sc, "other", "inner"));
	ssh_cfg_scan_release(&sc);
}

/* -F: ssh refuses a file it cannot read; libssh would go on without it. */
static void test_missing_F_file(void **state)
{
	struct ssh_cfg_scan sc;
	char missing[512];

	(void)state;
	snprintf(missing, sizeof missing, "%s/no-such-file", dir);
	struct ssh_cfg_paths paths = {
		.user_config = missing,
		.user_config_required = true,
		.global_dir = "/etc/ssh",
		.pw_home = dir,
	};
	assert_false(ssh_cfg_scan(&paths, &sc));
	assert_non_null(strstr(sc.why, "cannot read the config file"));
	ssh_cfg_scan_release(&sc);
	paths.user_config = SSH_CFG_GLOBAL_PATH;
	assert_false(ssh_cfg_scan(&paths, &sc));
	ssh_cfg_scan_release(&sc);
}

static void test_known_algorithms(void **state)
{
	(void)state;
	assert_true(ssh_cfg_known_ciphers("aes128-ctr"));
	assert_true(ssh_cfg_known_ciphers("aes128-ctr,chacha20-poly1305@openssh.com"));
	assert_false(ssh_cfg_known_ciphers("aes128-ctr,"));
	assert_false(ssh_cfg_known_ciphers(""));
	assert_false(ssh_cfg_known_ciphers("aes128"));
	assert_false(ssh_cfg_known_ciphers("^aes128-ctr"));
	assert_true(ssh_cfg_known_macs("hmac-sha2-256,hmac-sha1"));
	assert_false(ssh_cfg_known_macs("hmac-md5"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_patterns),
		cmocka_unit_test(test_plain_config_accepted),
		cmocka_unit_test(test_host_negation),
		cmocka_unit_test(test_lax_host_key_checking_refused),
		cmocka_unit_test(test_unsupported_keywords),
		cmocka_unit_test(test_sendenv_and_gssapi),
		cmocka_unit_test(test_hash_known_hosts),
		cmocka_unit_test(test_include),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_hosts_agree),
		cmocka_unit_test(test_missing_F_file),
		cmocka_unit_test(test_known_algorithms),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
