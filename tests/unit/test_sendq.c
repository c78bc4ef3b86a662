/*
 * sendq_read: what the kernel says of an output fd's queue, on a pipe and
 * on a real TCP connection over loopback.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto/base/sendq.h"

/* A pipe holds what was written until it is read; it has no TCP facts. */
static void test_pipe_queue(void **state)
{
	int p[2];
	char buf[1000];
	struct sendq_state st;
	(void)state;

	assert_int_equal(pipe(p), 0);
	memset(buf, 'x', sizeof buf);
	assert_int_equal(write(p[1], buf, sizeof buf), (ssize_t)sizeof buf);
	assert_true(sendq_read(p[1], &st));
	assert_int_equal(st.queued, sizeof buf);
	assert_false(st.tcp);
	assert_int_equal(read(p[0], buf, 600), 600);
	assert_true(sendq_read(p[1], &st));
	assert_int_equal(st.queued, 400);
	close(p[0]);
	close(p[1]);
}

/* A connected TCP socket reports its send queue and the receive-window
 * time (kernel 4.10 and later; Debian 12 has 6.1). */
static void test_tcp_queue(void **state)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof a;
	struct sendq_state st;
	char buf[1000];
	(void)state;

	int lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(listen(lfd, 1), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &alen), 0);
	int cfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(cfd, (struct sockaddr *)&a, sizeof a), 0);
	int sfd = accept(lfd, NULL, NULL);
	assert_true(sfd >= 0);
	memset(buf, 'y', sizeof buf);
	assert_int_equal(write(cfd, buf, sizeof buf), (ssize_t)sizeof buf);
	assert_true(sendq_read(cfd, &st));
	assert_true(st.tcp);
	assert_true(st.queued <= sizeof buf); /* loopback acks at once */
	close(sfd);
	close(cfd);
	close(lfd);
}

/* A closed or invalid fd: no queue, nothing filled in. */
static void test_not_a_socket(void **state)
{
	struct sendq_state st;
	(void)state;

	assert_false(sendq_read(-1, &st));
	assert_int_equal(st.queued, 0);
	assert_false(st.tcp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pipe_queue),
		cmocka_unit_test(test_tcp_queue),
		cmocka_unit_test(test_not_a_socket),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
