/*
 * Whole writes and reads on a plain file descriptor (see fdio.h).
 */
#include "proto/base/fdio.h"

#include <errno.h>
#include <unistd.h>

bool fd_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = 0;
			return false;
		}
		p += w;
		len -= (size_t)w;
	}
	return true;
}

size_t fd_read_full(int fd, void *buf, size_t len)
{
	char *p = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t r = read(fd, p + got, len - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r == 0)
				errno = 0;
			break;
		}
		got += (size_t)r;
	}
	return got;
}
