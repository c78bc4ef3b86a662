/*
 * A --read-batch file (proto/delta/batch.c: batch_open_read, batch_apply_flags;
 * negotiate.c: negotiate_from_batch): the stream flags, protocol, compat
 * flags and checksum seed, then the file list that follows them, as
 * client_read_batch reads it. The input is the whole batch file.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/delta/batch.h"
#include "proto/core/flist.h"
#include "proto/run/negotiate.h"
#include "proto/core/session.h"
#include "tests/fuzz/fuzz_common.h"

static char batch_path[64];

static void remove_batch(void)
{
	unlink(batch_path);
}

/* The batch file holds data[0..size): written in place on a descriptor
 * kept open, not created and truncated again per input. */
static bool write_batch(const uint8_t *data, size_t size)
{
	static int fd = -1;

	if (!batch_path[0]) {
		/* tmpfs when there is one: a file is written per input */
		const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
		snprintf(batch_path, sizeof batch_path, "%s/ferry-fuzz-batch.%d", dir, (int)getpid());
		atexit(remove_batch);
		fd = open(batch_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	}
	if (fd < 0)
		return false;
	return pwrite(fd, data, size, 0) == (ssize_t)size && ftruncate(fd, (off_t)size) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ferry_opts o;
	struct session s;
	struct flist fl;
	int32_t flags;

	if (!write_batch(data, size))
		return 0;
	int fd = batch_open_read(batch_path, false, &flags);
	if (fd < 0)
		return 0;
	memset(&o, 0, sizeof o);
	o.files_from_fd = -1;
	o.whole_file = 1;
	o.read_batch = true;
	if (!batch_apply_flags(&o, flags)) {
		close(fd);
		return 0;
	}
	session_init(&s, &o, fd, fuzz_null_fd());
	s.info = fuzz_null_file();
	flist_init(&fl);
	if (negotiate_from_batch(&s) && flist_recv(&s, &fl) && flist_sort_and_clean(&s, &fl))
		flist_recv_second(&s, &fl);
	flist_free(&fl);
	session_free(&s);
	close(fd);
	return 0;
}
