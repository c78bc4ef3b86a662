/*
 * The built-in SSH transport (libssh).
 */
#ifndef FERRY_CLIENT_SSH_BUILTIN_H
#define FERRY_CLIENT_SSH_BUILTIN_H

#include <stdbool.h>

#define SSH_SPEC_MAX_IDENT 8

/* What an `ssh ...` remote-shell command asks for. */
struct ssh_spec {
	char *port, *user, *ciphers, *macs, *config, *strict, *known_hosts;
	char *identity[SSH_SPEC_MAX_IDENT];
	int nident;
	int family;   /* 0, 4 or 6 */
};

/* Parse the words of a -e command. True only when it is ssh with options
 * the built-in transport honours exactly (-p -l -i -c -m -F -4 -6 -q -T -x
 * -a, -o Ciphers/MACs/Port/User/IdentityFile/StrictHostKeyChecking/
 * UserKnownHostsFile/BatchMode/Compression); anything else must be spawned. */
bool ssh_spec_parse(char **words, struct ssh_spec *sp);
void ssh_spec_release(struct ssh_spec *sp);

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
