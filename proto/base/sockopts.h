/*
 * --sockopts and a daemon's "socket options": rsync's socket option names
 * applied to a socket someone else made (rsync socket.c:
 * set_socket_options). Used by the client's TCP connect and the daemon's
 * listener alike; the parser checks the list when it reads it.
 */
#ifndef FERRY_SOCKOPTS_H
#define FERRY_SOCKOPTS_H

#include <stdbool.h>

/* Apply a --sockopts list to fd (fd < 0: only check it). Unknown names,
 * malformed values and failed setsockopt() calls are reported; returns
 * false when any was. */
bool sockopts_apply(int fd, const char *spec);

#endif
