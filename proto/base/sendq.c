/*
 * The output fd's queue as the kernel reports it (sendq.h).
 */
#include "proto/base/sendq.h"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

/* tcp_info grew over the kernel's versions; the field is there if the
 * kernel filled the struct that far. */
static void read_tcp_info(int fd, struct sendq_state *st)
{
	struct tcp_info ti;
	socklen_t len = sizeof ti;
	size_t need = offsetof(struct tcp_info, tcpi_rwnd_limited) + sizeof ti.tcpi_rwnd_limited;

	memset(&ti, 0, sizeof ti);
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 || len < need)
		return;
	st->tcp = true;
	st->rwnd_limited_us = ti.tcpi_rwnd_limited;
	st->delivery_rate = ti.tcpi_delivery_rate;
	st->rate_app_limited = ti.tcpi_delivery_rate_app_limited;
}

bool sendq_read(int fd, struct sendq_state *st)
{
	int n = 0;

	memset(st, 0, sizeof *st);
	/* TIOCOUTQ is SIOCOUTQ on a socket; a pipe answers FIONREAD */
	if (ioctl(fd, TIOCOUTQ, &n) != 0 && ioctl(fd, FIONREAD, &n) != 0)
		return false;
	st->queued = n > 0 ? (uint64_t)n : 0;
	read_tcp_info(fd, st);
	return true;
}
