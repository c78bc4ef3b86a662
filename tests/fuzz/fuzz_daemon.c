/*
 * What a client sends a daemon before the transfer: the greeting
 * ("@RSYNCD: 31.0 md5 md4"), #early_input, the module name or #list, the
 * auth response to the challenge, and the argument list (NUL- or
 * newline-separated, -s's second list), parsed as the module's `refuse
 * options` allow (daemon/serve.c: daemon_handshake_check). The modules:
 * "mod" asks for authentication, "open" does not.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/config.h"
#include "daemon/daemon.h"
#include "tests/fuzz/fuzz_common.h"

static char secrets[] = "/tmp/ferry-fuzz-secrets.XXXXXX";

static void remove_secrets(void)
{
	unlink(secrets);
}

static const struct daemon_config *fuzz_config(void)
{
	static struct daemon_config cfg;
	static bool loaded;
	char text[1024], err[512];

	if (loaded)
		return &cfg;
	int fd = mkstemp(secrets);
	atexit(remove_secrets);
	if (fd < 0 || write(fd, "alice:secret\n@staff:grp\n", 24) != 24)
		abort();
	fchmod(fd, 0600);
	close(fd);
	snprintf(text, sizeof text,
		 "log file = /dev/null\n"
		 "[mod]\n path = /nonexistent\n auth users = alice, @staff:ro, bob:deny\n"
		 " secrets file = %s\n strict modes = no\n read only = yes\n"
		 " refuse options = delete* remove-source-files\n"
		 "[open]\n path = /nonexistent\n read only = no\n",
		 secrets);
	config_init(&cfg);
	if (config_load_string(&cfg, text, "fuzz.conf", err, sizeof err) != 0) {
		fprintf(stderr, "fuzz_daemon: %s\n", err);
		abort();
	}
	loaded = true;
	return &cfg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct daemon_config *cfg = fuzz_config();
	struct ferry_opts dopts;
	int fd = fuzz_input_fd(data, size);

	if (fd < 0)
		return 0;
	memset(&dopts, 0, sizeof dopts);
	dopts.daemon = true;
	dopts.files_from_fd = -1;
	daemon_handshake_check(cfg, &dopts, fd, fuzz_null_fd());
	return 0;
}
