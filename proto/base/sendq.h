/*
 * What the kernel says of an output fd's progress: the bytes written that
 * the peer has not taken yet and, on a TCP socket, how long the peer's
 * receive window held the sender back. The adaptive compression rule
 * (proto/delta/zadapt.h) reads it to tell a slow link (bytes queue up
 * and the peer takes them as fast as they arrive) from a slow receiver
 * (its window closes).
 */
#ifndef FERRY_SENDQ_H
#define FERRY_SENDQ_H

#include <stdbool.h>
#include <stdint.h>

struct sendq_state {
	uint64_t queued;          /* written, not yet taken by the peer: a
				   * socket's unsent and unacknowledged
				   * bytes, or what a pipe holds */
	bool tcp;                 /* rwnd_limited_us is known */
	uint64_t rwnd_limited_us; /* total time the peer's receive window
				   * limited the sender (tcp_info) */
	uint64_t delivery_rate;   /* bytes/s the peer acknowledged lately
				   * (0: unknown, kernel < 4.9) ... */
	bool rate_app_limited;    /* ... while the sender had too little to
				   * send to fill the path: no link rate */
};

/* Fill *st for fd. False if the fd's queue cannot be read (not a socket
 * or a pipe); st->tcp false where the fd is not a TCP socket or the
 * kernel is older than 4.10. */
bool sendq_read(int fd, struct sendq_state *st);

#endif
