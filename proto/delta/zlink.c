/*
 * The link's speed from the TCP stack's counters (see zlink.h).
 */
#include "proto/delta/zlink.h"

#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <linux/sockios.h>
#include <linux/tcp.h>

void zlink_mark(int fd, uint64_t now_ns, struct zlink_mark *m)
{
	struct tcp_info ti;
	socklen_t len = sizeof ti;
	int queued = 0;

	*m = (struct zlink_mark){0};
	if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0)
		return;
	/* a kernel older than 4.10 has no byte counts or chronographs */
	if (len < offsetof(struct tcp_info, tcpi_rwnd_limited) + sizeof ti.tcpi_rwnd_limited ||
	    ioctl(fd, SIOCOUTQ, &queued) != 0 || queued < 0)
		return;
	m->ok = true;
	m->acked = ti.tcpi_bytes_acked;
	m->queued = (uint64_t)queued;
	m->rwnd_us = ti.tcpi_rwnd_limited;
	m->ns = now_ns;
}

uint64_t zlink_ns_per_mib(const struct zlink_mark *a, const struct zlink_mark *b)
{
	if (!a->ok || !b->ok || b->acked < a->acked + ZLINK_MIN_ACKED || b->ns <= a->ns)
		return 0;
	uint64_t delivered = b->acked - a->acked;
	if (a->queued < delivered || zlink_receiver_bound(a, b))
		return 0;
	if (b->ns - a->ns > ZLINK_MAX_SPAN_NS) /* a stall, and past overflow */
		return 0;
	return (b->ns - a->ns) * 1048576u / delivered;
}

bool zlink_receiver_bound(const struct zlink_mark *a, const struct zlink_mark *b)
{
	if (!a->ok || !b->ok || b->ns <= a->ns || b->rwnd_us < a->rwnd_us)
		return false;
	return (b->rwnd_us - a->rwnd_us) * 1000u * ZLINK_RECEIVER_SHARE >= b->ns - a->ns;
}

bool zlink_behind(const struct zlink_mark *a, const struct zlink_mark *b)
{
	return a->ok && b->ok && b->queued > b->acked - a->acked && !zlink_receiver_bound(a, b);
}
