/*
 * Shared by the SSH listener's files (daemon/ssh_*.c). Not for other users.
 */
#ifndef FERRY_DAEMON_SSH_PRIV_H
#define FERRY_DAEMON_SSH_PRIV_H

#include <libssh/libssh.h>
#include <libssh/server.h>

#include "daemon/ssh_command.h"

struct ssh_listener {
	ssh_bind bind; /* holds the host keys */
	int fd;        /* the listening socket */
};

/* Move bytes both ways between the channel and fd (the serving process)
 * until fd reaches end of file and everything it sent is on the channel:
 * returns 0. Returns -1 when the client or the connection went away first.
 * End of file from the client is passed on as shutdown(fd, SHUT_WR). */
int ssh_pump_run(ssh_session session, ssh_channel channel, int fd);

/* Plain server mode: be an rsync server over a remote shell towards the SSH
 * client (the binary protocol-version exchange) and a daemon client towards
 * the daemon on fd (greeting, module, argument list), up to the point where
 * both streams are the same and ssh_pump_run() can take over. Returns 0, or
 * an rsync exit code after writing the reason to the client's stderr. */
int ssh_shim_start(ssh_session session, ssh_channel channel, int fd, const struct ssh_cmd *cmd);

/* Write a "ferry: ..." line to the client's stderr on the channel. */
void ssh_channel_error(ssh_channel channel, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
