/*
 * The daemon's listening TCP sockets (rsync socket.c: open_socket_in), for
 * the daemon port and the SSH listener's port.
 */
#ifndef FERRY_DAEMON_LISTEN_SOCKET_H
#define FERRY_DAEMON_LISTEN_SOCKET_H

#include "daemon/config.h"
#include "proto/base/opts.h"

/* A listening TCP socket on port, at --address or the config's `address`
 * (any address when neither is set), for the daemon port and the SSH
 * listener's port. Returns the socket, or -1 after printing why. */
int daemon_listen_socket(const struct ferry_opts *o, const struct daemon_config *cfg, int port);

#endif
