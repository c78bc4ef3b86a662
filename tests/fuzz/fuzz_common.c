/*
 * See fuzz_common.h.
 */
#include "tests/fuzz/fuzz_common.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

uint8_t fuzz_take_byte(struct fuzz_input *in)
{
	if (in->n == 0)
		return 0;
	in->n--;
	return *in->p++;
}

int fuzz_null_fd(void)
{
	static int fd = -1;

	if (fd < 0)
		fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	return fd;
}

FILE *fuzz_null_file(void)
{
	static FILE *f;

	if (!f)
		f = fopen("/dev/null", "w");
	return f;
}

int fuzz_memfd(const uint8_t *data, size_t n)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	size_t done = 0;
	while (done < n) {
		ssize_t w = write(fd, data + done, n - done);
		if (w <= 0) {
			close(fd);
			return -1;
		}
		done += (size_t)w;
	}
	if (lseek(fd, 0, SEEK_SET) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

void fuzz_session_init(struct session *s, const struct ferry_opts *opts, const uint8_t *data,
		       size_t n)
{
	session_init(s, opts, fuzz_null_fd(), fuzz_null_fd());
	s->info = fuzz_null_file();
	/* Preload the input buffer: no system call per read, and the stream
	 * ends where the input does (a read of /dev/null is EOF). */
	if (s->in.buf && n <= s->in.cap) {
		memcpy(s->in.buf, data, n);
		s->in.end = n;
		s->in.total_read = n;
	} else {
		int fd = fuzz_memfd(data, n);
		s->in.fd = fd >= 0 ? fd : fuzz_null_fd();
	}
}

void fuzz_session_free(struct session *s)
{
	if (s->in.fd != fuzz_null_fd())
		close(s->in.fd);
	session_free(s);
}

void fuzz_session_protocol(struct session *s, int protocol, uint32_t compat_flags)
{
	s->protocol = s->in.protocol = s->out.protocol = protocol;
	s->compat_flags = compat_flags;
	s->varint_flist_flags = compat_flags & CF_VARINT_FLIST_FLAGS;
	s->proper_seed_order = compat_flags & CF_CHKSUM_SEED_FIX;
	s->id0_names = compat_flags & CF_ID0_NAMES;
	s->safe_flist = (compat_flags & CF_SAFE_FLIST) || protocol >= 31;
	s->inc_recurse = compat_flags & CF_INC_RECURSE;
	s->xfer_csum = csum_implied(protocol);
	s->flist_csum = csum_flist_type(s->xfer_csum);
}
