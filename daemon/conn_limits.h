/*
 * What the listening process knows of its live connections, so that it can
 * refuse one before forking a child for it: `max connections per host`
 * counts the TCP children of each client address, and `ssh max startups`
 * (OpenSSH's MaxStartups) the SSH children that have not authenticated
 * yet. An SSH child holds the write end of a "startup pipe" until its
 * login is accepted; the listener holds the read end and sees it close.
 */
#ifndef FERRY_DAEMON_CONN_LIMITS_H
#define FERRY_DAEMON_CONN_LIMITS_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "daemon/config.h"

#define CONN_ADDR_MAX 64 /* a numeric IPv4 or IPv6 address, with room */

struct conn_entry {
	pid_t pid;
	char addr[CONN_ADDR_MAX]; /* the peer's numeric address */
	bool is_ssh;
	int startup_fd;           /* SSH, unauthenticated: the pipe's read end; else -1 */
};

struct conn_table {
	struct conn_entry *e;
	size_t n, cap;
};

/* The numeric form of a peer address (IPv4-mapped IPv6 shown as IPv4, so
 * one host counts once whichever way it came), into buf; "" if unknown. */
void conn_peer_addr(const struct sockaddr *sa, socklen_t len, char *buf, size_t size);

/* Record a child. Returns 0, or -1 when out of memory (the child then goes
 * uncounted; startup_fd is left to the caller). */
int conn_table_add(struct conn_table *t, pid_t pid, const char *addr, bool is_ssh,
		   int startup_fd);

/* Reap every child that has ended (waitpid WNOHANG) and forget it. */
void conn_table_reap(struct conn_table *t);

/* Live TCP children of addr. */
size_t conn_table_host_count(const struct conn_table *t, const char *addr);

/* Live SSH children that have not authenticated yet. */
size_t conn_table_unauthenticated(const struct conn_table *t);

/* Fill pf (room for max) with the open startup pipes, for poll(); returns
 * how many were filled. */
size_t conn_table_startup_pollfds(const struct conn_table *t, struct pollfd *pf, size_t max);

/* A startup pipe polled readable or hung up: that child authenticated (or
 * ended); close the pipe and stop counting it. */
void conn_table_startup_done(struct conn_table *t, int fd);

/* Close every startup pipe and free the table (the children live on). */
void conn_table_free(struct conn_table *t);

/* Refused connections the listener keeps open a little longer: the client
 * still sends its greeting and module name after the refusal was written,
 * and closing at once would answer those with a reset, which the client
 * reports instead of the refusal. Their input is read away until they
 * close, for at most LINGER_MS; the set is bounded, the oldest dropped to
 * make room. */
#define LINGER_MAX 64
#define LINGER_MS 5000

struct linger_set {
	int fd[LINGER_MAX];
	long long until_ms[LINGER_MAX]; /* monotonic */
	size_t n;
};

/* Monotonic milliseconds. */
long long conn_now_ms(void);

/* Keep fd (non-blocking) until its peer closes or LINGER_MS pass. */
void linger_add(struct linger_set *s, int fd);

/* Fill pf (room for LINGER_MAX) for poll(); returns how many. */
size_t linger_pollfds(const struct linger_set *s, struct pollfd *pf);

/* After poll(): read away what came in on pf[0..n), close the connections
 * whose peer closed and those past their time. */
void linger_service(struct linger_set *s, const struct pollfd *pf, size_t n);

/* poll()'s timeout until the next one is due: -1 when the set is empty. */
int linger_timeout_ms(const struct linger_set *s);

/* Close them all. */
void linger_free(struct linger_set *s);

/* OpenSSH's drop decision for a new connection when unauthenticated ones
 * are already pending: never below m->start, always at m->full or above,
 * in between with a probability rising linearly from m->rate% to 100%.
 * r100 is a uniform random number in [0, 100). */
bool max_startups_should_drop(const struct max_startups *m, size_t unauthenticated,
			      unsigned r100);

#endif
