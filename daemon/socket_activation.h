/*
 * systemd socket activation (sd_listen_fds(3)): a supervisor that opened
 * the listening socket passes it as fd 3 with LISTEN_FDS=1 and
 * LISTEN_PID=<our pid>; the daemon then accepts on it instead of binding.
 */
#ifndef FERRY_DAEMON_SOCKET_ACTIVATION_H
#define FERRY_DAEMON_SOCKET_ACTIVATION_H

#define SOCKET_ACTIVATION_NONE (-1)  /* not activated: bind as usual */
#define SOCKET_ACTIVATION_ERROR (-2) /* activated, but unusable (printed) */

/* The inherited listening socket when LISTEN_FDS is set and LISTEN_PID is
 * our pid; SOCKET_ACTIVATION_NONE when they are absent or meant for
 * another process; SOCKET_ACTIVATION_ERROR (after saying why) when the
 * variables are malformed, more than one socket was passed, or fd 3 is
 * not a listening stream socket. The variables are removed from the
 * environment either way, so the programs the daemon runs do not see
 * them, and the fd is made close-on-exec. */
int socket_activation_listener(void);

#endif
