/*
 * What an exec request on ferry's SSH listener may run. Exactly two forms:
 *
 *   rsync --server --daemon .        the daemon protocol on the channel
 *                                    (what `rsync -e ssh host::module` runs)
 *   rsync --server [--sender] OPTIONS . PATH...
 *                                    rsync's remote-shell server, only for
 *                                    PATHs inside one module that sets
 *                                    `ssh allow server = yes`
 *
 * The program may be named rsync or ferry, with any directory (it is never
 * run: ferry serves the request itself). The command is split into words as
 * a POSIX shell would for quoting ('...', "...", backslash); any unquoted
 * shell metacharacter, glob or expansion refuses it, and so do
 * --secluded-args (-s) and anything else.
 *
 * A plain server command is turned into a daemon request: the module that
 * holds the paths, and the daemon argument list (the client's options, ".",
 * and each path rewritten as "module/relative/path"), so the daemon applies
 * every module setting (chroot, uid, filters, read only, refuse options,
 * exec hooks, logging) exactly as for a daemon client. An absolute PATH
 * must lie under the module's `path`; a relative one starts with the
 * module's name, as in a daemon path (host:module/dir).
 */
#ifndef FERRY_DAEMON_SSH_COMMAND_H
#define FERRY_DAEMON_SSH_COMMAND_H

#include <stdbool.h>
#include <stddef.h>

#include "daemon/config.h"

#define SSH_CMD_MAX_LEN (256 * 1024) /* bytes in one exec command */
#define SSH_CMD_MAX_WORDS 4096

enum ssh_cmd_kind {
	SSH_CMD_DAEMON, /* rsync --server --daemon . */
	SSH_CMD_SERVER, /* plain rsync --server, turned into a daemon request */
};

struct ssh_cmd {
	enum ssh_cmd_kind kind;
	char *module;   /* SSH_CMD_SERVER: the module holding the paths */
	char **args;    /* SSH_CMD_SERVER: daemon argument list, NULL-terminated */
	int nargs;
};

/* Decide what command may run for a login whose usable modules are those
 * of view. Returns true with *out filled (free with ssh_cmd_free), or false
 * with why set to a one-line reason fit for the log and the client. */
bool ssh_cmd_parse(const char *command, const struct daemon_config *view, struct ssh_cmd *out,
		   char *why, size_t whysz);
void ssh_cmd_free(struct ssh_cmd *c);

/* Split a command into words as sh would for quoting, refusing unquoted
 * metacharacters. Returns a NULL-terminated malloc'd vector (free with
 * ssh_cmd_free_words) and its length in *n, or NULL with why set. */
char **ssh_cmd_split(const char *command, int *n, char *why, size_t whysz);
void ssh_cmd_free_words(char **words);

#endif
