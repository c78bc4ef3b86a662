/*
 * The built-in SSH transport (libssh).
 */
#ifndef FERRY_CLIENT_SSH_BUILTIN_H
#define FERRY_CLIENT_SSH_BUILTIN_H

#include <stdbool.h>
#include <stddef.h>

#include "client/ssh_config_scan.h"

#define SSH_SPEC_MAX_IDENT 8

/* What an `ssh ...` remote-shell command asks for. */
struct ssh_spec {
	char *port, *user, *ciphers, *macs, *config, *strict, *known_hosts;
	char *identity[SSH_SPEC_MAX_IDENT];
	int nident;
	int family;   /* 0, 4 or 6 */
	bool no_config;          /* -F none */
	struct ssh_cfg_scan cfg; /* what ssh_builtin_config_check() found */
};

/* Parse the words of a -e command. True only when it is ssh with options
 * the built-in transport understands (-p -l -i -c -m -F -4 -6 -q -T -x
 * -a, -o Ciphers/MACs/Port/User/IdentityFile/StrictHostKeyChecking/
 * UserKnownHostsFile/BatchMode/Compression); anything else must be spawned.
 * ssh_builtin_config_check() then decides on -4/-6 and the config files. */
bool ssh_spec_parse(char **words, struct ssh_spec *sp);
void ssh_spec_release(struct ssh_spec *sp);

/* Whether the built-in can honour everything that applies to a
 * connection to host exactly as ssh would: -4/-6, and every line of the
 * config files ssh reads (the -F file, or ~/.ssh/config of the passwd
 * home and /etc/ssh/ssh_config, and their Includes). False with why
 * (size bytes) saying what it cannot honour; ssh must be spawned then.
 * Keeps in sp what ssh_builtin_start() applies itself (SendEnv, GSSAPI). */
bool ssh_builtin_config_check(struct ssh_spec *sp, const char *host, char *why, size_t size);

struct ssh_builtin;

/* Connect, check the host key, authenticate (agent and keys), and run
 * command on an exec channel; *fd is a socket carrying the channel's
 * stdin/stdout. Returns 0, or an exit code after printing why (255 as ssh
 * exits). */
int ssh_builtin_start(const struct ssh_spec *sp, const char *host, const char *user,
		      const char *cipher_override, const char *command, int *fd,
		      struct ssh_builtin **out);
/* Close the channel and the connection; returns the remote exit status. */
int ssh_builtin_stop(struct ssh_builtin *b);

#endif
