/*
 * Opening a TCP connection to a daemon (rsync socket.c: open_socket_out).
 */
#ifndef FERRY_CLIENT_CONNECT_H
#define FERRY_CLIENT_CONNECT_H

/* Connect to host:port. family is 0, 4 or 6; bind_addr may be NULL;
 * timeout_sec 0 waits as long as the system does. Returns the socket, or
 * -1 after printing why, with *exit_code set to rsync's code (10 for a
 * socket error, 35 for a connect timeout). */
int tcp_connect(const char *host, int port, int family, const char *bind_addr,
		int timeout_sec, int *exit_code);

#endif
