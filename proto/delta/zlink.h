/*
 * The link's speed as the TCP stack saw it, for the adaptive compression
 * rule (zadapt.h). The sender's own clock cannot tell the link from the
 * socket's buffers: megabytes go into them at memory speed, so a window's
 * output per wall second says little about a slow link, even when the
 * sender blocked. The kernel counts what the peer acknowledged, and what
 * is still unacknowledged: when that backlog at a span's start covers all
 * the span delivered, the link never ran dry in it, and what it delivered
 * per second is its rate.
 */
#ifndef FERRY_ZLINK_H
#define FERRY_ZLINK_H

#include <stdbool.h>
#include <stdint.h>

/* The connection's counters at one moment. */
struct zlink_mark {
	bool ok;          /* false: not a TCP socket (a pipe, ssh): no counters */
	uint64_t acked;   /* bytes the peer acknowledged so far */
	uint64_t queued;  /* bytes written and not yet acknowledged */
	uint64_t rwnd_us; /* time the peer's receive window held sending back */
	uint64_t ns;      /* the caller's wall clock */
};

/* Reads the counters of socket fd into *m, with the time now_ns
 * (m->ok false when fd has none). */
void zlink_mark(int fd, uint64_t now_ns, struct zlink_mark *m);

/* The link's time per MiB between marks a and b (a earlier), or 0 when
 * that span does not time it: no counters, fewer than ZLINK_MIN_ACKED
 * bytes delivered, or the backlog at a did not cover what was delivered
 * (the link may have waited for the sender). */
uint64_t zlink_ns_per_mib(const struct zlink_mark *a, const struct zlink_mark *b);

/* Is the link behind at b: more unacknowledged than was delivered in
 * the span (a backlog that takes longer to clear than the span took)? */
bool zlink_behind(const struct zlink_mark *a, const struct zlink_mark *b);

/* Did the receiver, not the link, hold the span back: its receive window
 * closed for 1/ZLINK_RECEIVER_SHARE of the span or more? (The kernel
 * counts that in jiffies: a short span says no.) */
bool zlink_receiver_bound(const struct zlink_mark *a, const struct zlink_mark *b);

#define ZLINK_RECEIVER_SHARE 4
/* A longer span times no link (and would overflow the arithmetic). */
#define ZLINK_MAX_SPAN_NS (1000ull * 1000000000ull)

#define ZLINK_MIN_ACKED (64 * 1024)

#endif
