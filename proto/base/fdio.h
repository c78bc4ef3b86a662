/*
 * Whole writes and reads on a plain file descriptor (a pipe, a socket
 * before the protocol starts, a small file), retried after EINTR. The
 * multiplexed streams have their own, with timeouts (wire.c).
 */
#ifndef FERRY_PROTO_FDIO_H
#define FERRY_PROTO_FDIO_H

#include <stdbool.h>
#include <stddef.h>

/* Write all len bytes of buf to fd. False when write() fails (errno says
 * why) or writes nothing (errno is then 0). */
bool fd_write_all(int fd, const void *buf, size_t len);

/* Read into buf until len bytes have come, the end of the file, or an
 * error. Returns the number of bytes read; fewer than len means the file
 * ended early or a read failed (errno set, else 0 for the end). */
size_t fd_read_full(int fd, void *buf, size_t len);

#endif
