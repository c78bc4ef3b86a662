/*
 * Whole writes and reads on a plain descriptor (proto/base/fdio.c), the
 * little-endian helpers (proto/base/byteorder.h) and the /proc path of a name
 * under a directory fd (proto/base/fileio.c: fs_proc_path).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "proto/base/byteorder.h"
#include "proto/base/fdio.h"
#include "proto/base/fileio.h"

static void test_write_then_read(void **state)
{
	int p[2];
	char out[64];

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_true(fd_write_all(p[1], "hello, world", 12));
	close(p[1]);
	/* the whole message, then the end of the pipe: 12 of 64, errno 0 */
	errno = EINVAL;
	assert_int_equal(fd_read_full(p[0], out, sizeof out), 12);
	assert_int_equal(errno, 0);
	assert_memory_equal(out, "hello, world", 12);
	close(p[0]);
}

static void test_read_stops_at_len(void **state)
{
	int p[2];
	char out[5];

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_true(fd_write_all(p[1], "abcdefgh", 8));
	assert_int_equal(fd_read_full(p[0], out, sizeof out), sizeof out);
	assert_memory_equal(out, "abcde", 5);
	assert_int_equal(fd_read_full(p[0], out, 3), 3);
	assert_memory_equal(out, "fgh", 3);
	close(p[0]);
	close(p[1]);
}

static void test_write_to_closed_pipe_fails(void **state)
{
	int p[2];

	(void)state;
	signal(SIGPIPE, SIG_IGN);
	assert_int_equal(pipe(p), 0);
	close(p[0]);
	assert_false(fd_write_all(p[1], "x", 1));
	assert_int_equal(errno, EPIPE);
	close(p[1]);
}

static void test_read_bad_fd(void **state)
{
	char c;

	(void)state;
	assert_int_equal(fd_read_full(-1, &c, 1), 0);
	assert_int_equal(errno, EBADF);
}

static void test_le(void **state)
{
	uint8_t b[8];

	(void)state;
	put_le32(b, 0x11223344u);
	assert_memory_equal(b, "\x44\x33\x22\x11", 4);
	assert_int_equal(get_le32(b), 0x11223344u);
	assert_int_equal(get_le16(b), 0x3344);
	put_le64(b, 0x0102030405060708ull);
	assert_memory_equal(b, "\x08\x07\x06\x05\x04\x03\x02\x01", 8);
	assert_true(get_le64(b) == 0x0102030405060708ull);
	memset(b, 0xee, sizeof b);
	put_le(b, 0xabcdef, 3);
	assert_memory_equal(b, "\xef\xcd\xab\xee", 4);
	put_le32(b, (uint32_t)-2);
	assert_int_equal((int32_t)get_le32(b), -2);
}

static void test_proc_path(void **state)
{
	char buf[64], dir[] = "/tmp/ferry-test-fdio-XXXXXX";
	struct stat st;

	(void)state;
	assert_true(fs_proc_path(buf, sizeof buf, 7, "name"));
	assert_string_equal(buf, "/proc/self/fd/7/name");
	assert_true(fs_proc_path(buf, sizeof buf, -1, "name"));
	assert_string_equal(buf, "name");
	assert_false(fs_proc_path(buf, 20, 7, "name"));  /* needs 21 bytes */
	assert_true(fs_proc_path(buf, 21, 7, "name"));
	/* no leaf: the directory itself */
	assert_true(fs_proc_path(buf, sizeof buf, 7, NULL));
	assert_string_equal(buf, "/proc/self/fd/7");
	assert_false(fs_proc_path(buf, 15, 7, NULL)); /* needs 16 bytes */
	/* the path reaches the name through the fd, wherever the dir is */
	assert_non_null(mkdtemp(dir));
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	int fd = openat(dfd, "f", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_true(fs_proc_path(buf, sizeof buf, dfd, "f"));
	assert_int_equal(lstat(buf, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(unlinkat(dfd, "f", 0), 0);
	close(dfd);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_then_read),
		cmocka_unit_test(test_read_stops_at_len),
		cmocka_unit_test(test_write_to_closed_pipe_fails),
		cmocka_unit_test(test_read_bad_fd),
		cmocka_unit_test(test_le),
		cmocka_unit_test(test_proc_path),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
