/*
 * ferry --daemon: the rsync daemon protocol on TCP (or on an inherited
 * socket), serving the modules of an rsyncd.conf-style file.
 */
#ifndef FERRY_DAEMON_H
#define FERRY_DAEMON_H

#include "daemon/config.h"
#include "proto/base/opts.h"

/* The config used by `--config=@default` (make run): one read-only module
 * "files" serving $FERRY_ROOT (default: the current directory). */
#define DAEMON_DEFAULT_CONFIG_NAME "@default"

/* Run the daemon: listen and serve until killed. Returns an exit code. */
int daemon_main(const struct ferry_opts *o);

/* Serve one client on fd (the child of the listener, or inetd-style).
 * Returns the exit code of the session. */
int daemon_serve_client(const struct daemon_config *cfg, const struct ferry_opts *daemon_opts,
			int fd_in, int fd_out);
/* The steps of daemon_serve_client that the client's bytes drive, for the
 * fuzzers (tests/fuzz): its greeting, early input, the module name or
 * #list, the auth response when the module asks for one, the argument
 * list (and -s's second list) parsed as the module's refusals allow. No
 * proxy header, access check, connection slot, hook, chroot or transfer.
 * Returns 0 when the arguments were accepted (or a listing was sent),
 * else an exit code. */
int daemon_handshake_check(const struct daemon_config *cfg, const struct ferry_opts *daemon_opts,
			   int fd_in, int fd_out);

#endif
