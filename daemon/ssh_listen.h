/*
 * ferry's SSH listener: with `ssh port`, `ssh host key` and `ssh authorized
 * keys` in the config, `ferry --daemon` also accepts SSH connections (libssh
 * server) and serves, on one exec channel, the daemon protocol
 * (`rsync --server --daemon .`, what `rsync -e ssh host::module` runs) and,
 * for modules that set `ssh allow server = yes`, plain `rsync --server`
 * commands inside that module (daemon/ssh_command.h). Nothing else: no
 * shell, pty, subsystem, other command, port or agent forwarding, X11;
 * public-key authentication only.
 *
 * Process model, as for TCP: the listening process accepts, a child per
 * connection runs the SSH session (key exchange, authentication, the
 * command), and a grandchild runs daemon_serve_client() on a socketpair
 * whose other end the child pumps to and from the channel. The grandchild
 * chroots and drops privileges as the module says; the SSH child keeps the
 * daemon's identity (it holds the host keys' session).
 *
 * Identity: the SSH user name, after its key was found in the `ssh
 * authorized keys` file of a module (or of the global section, which every
 * module inherits). The login may use exactly the modules whose file lists
 * the key and, for a module with `auth users`, that list the user (as
 * auth_user_rule() reads it, `:ro`/`:rw`/`:deny` included) -- then without
 * the daemon's password challenge. Other modules do not exist for it.
 */
#ifndef FERRY_DAEMON_SSH_LISTEN_H
#define FERRY_DAEMON_SSH_LISTEN_H

#include "daemon/config.h"
#include "proto/base/opts.h"

struct ssh_listener;

/* Open the listener when the config sets `ssh port`: check and load the
 * host keys, bind the port (on `address` / --address, like the TCP port).
 * Returns 0 with *out NULL when no SSH port is configured, 0 with *out set,
 * or -1 after printing why on stderr. */
int ssh_listener_open(const struct ferry_opts *o, const struct daemon_config *cfg,
		      struct ssh_listener **out);

/* The listening socket, for the accept loop's poll(). */
int ssh_listener_fd(const struct ssh_listener *l);

/* In the child forked for a connection accepted on the listener: run the
 * whole SSH session on cfd with the connection's freshly loaded config
 * (changed in place to the login's view of it). startup_fd (or -1) is
 * closed once a key is accepted, telling the listener that the connection
 * no longer counts against `ssh max startups` (daemon/conn_limits.h).
 * Returns the exit code. */
int ssh_listener_serve(struct ssh_listener *l, const struct ferry_opts *o,
		       struct daemon_config *cfg, int cfd, int startup_fd);

/* Close the socket and free the keys (also in a TCP connection's child). */
void ssh_listener_close(struct ssh_listener *l);

#endif
