/*
 * The stop signals (proto/base/stop_signal.h): recorded even where inherited as
 * ignored, blocked in worker threads, turned into the stream's code 20
 * once (later writes still go out), and a run that does not unwind is
 * ended when the grace period is over, or at a second signal. Each case
 * runs in a child process, since the handlers are process-wide.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "proto/base/stop_signal.h"
#include "proto/base/wire.h"

/* Run fn in a child; its exit status, or -1 if it did not end within
 * limit_s seconds (then it is killed). */
static int in_child(int (*fn)(void), int limit_s)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(fn());
	assert_true(pid > 0);
	for (int i = 0; i < limit_s * 20; i++) {
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		struct timespec ts = {0, 50 * 1000000L};
		nanosleep(&ts, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

static int ignored_then_caught(void)
{
	signal(SIGINT, SIG_IGN); /* a background job of a non-interactive shell */
	stop_signal_install(NULL);
	if (stop_signal_pending())
		return 1;
	kill(getpid(), SIGINT);
	return stop_signal_pending() == SIGINT ? 0 : 2;
}

static void test_ignored_signal_is_caught(void **state)
{
	(void)state;
	assert_int_equal(in_child(ignored_then_caught, 10), 0);
}

static void *report_mask(void *arg)
{
	sigset_t now;

	pthread_sigmask(SIG_BLOCK, NULL, &now);
	*(int *)arg = sigismember(&now, SIGINT) && sigismember(&now, SIGTERM) &&
		      sigismember(&now, SIGHUP);
	return NULL;
}

static int worker_blocks(void)
{
	pthread_t t;
	int blocked = 0;
	sigset_t main_mask;

	stop_signal_install(NULL);
	if (stop_signal_thread_create(&t, report_mask, &blocked) != 0)
		return 1;
	pthread_join(t, NULL);
	pthread_sigmask(SIG_BLOCK, NULL, &main_mask);
	if (sigismember(&main_mask, SIGINT))
		return 2; /* the creator's mask is restored */
	return blocked ? 0 : 3;
}

static void test_worker_threads_block_the_signals(void **state)
{
	(void)state;
	assert_int_equal(in_child(worker_blocks, 10), 0);
}

static int stream_fails_once(void)
{
	struct wire_error err;
	struct wire_in in;
	struct wire_out out;
	int p_in[2], p_out[2];
	uint8_t b;

	if (pipe(p_in) < 0 || pipe(p_out) < 0)
		return 1;
	stop_signal_install(NULL);
	wire_error_init(&err);
	wire_in_init(&in, p_in[0], &err);
	wire_out_init(&out, p_out[1], &err);
	if (write(p_in[1], "x", 1) != 1 || !wire_write_u8(&out, 7))
		return 2;
	kill(getpid(), SIGTERM);
	if (wire_read_u8(&in, &b)) /* would block on an empty pipe otherwise */
		return 3;
	if (wire_error_code(&err) != RERR_SIGNAL)
		return 4;
	/* the stream already failed; what follows (the error exit) goes out */
	if (!wire_flush(&out) || read(p_out[0], &b, 1) != 1 || b != 7)
		return 5;
	wire_in_free(&in);
	wire_out_free(&out);
	return 0;
}

static void test_signal_fails_the_stream_once(void **state)
{
	(void)state;
	assert_int_equal(in_child(stream_fails_once, 10), 0);
}

static int stuck_after_signal(void)
{
	stop_signal_install(NULL);
	kill(getpid(), SIGHUP);
	for (;;)
		pause(); /* never unwinds: the alarm must end it */
	return 0;
}

static void test_grace_ends_a_stuck_run(void **state)
{
	(void)state;
	assert_int_equal(in_child(stuck_after_signal, STOP_SIGNAL_GRACE_S + 15),
			 RERR_SIGNAL);
}

static int stuck_after_two_signals(void)
{
	stop_signal_install(NULL);
	kill(getpid(), SIGINT);
	kill(getpid(), SIGINT);
	return 0; /* the second one must not return */
}

static void test_second_signal_ends_at_once(void **state)
{
	(void)state;
	/* well inside the grace period */
	assert_int_equal(in_child(stuck_after_two_signals, STOP_SIGNAL_GRACE_S - 2),
			 RERR_SIGNAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ignored_signal_is_caught),
		cmocka_unit_test(test_worker_threads_block_the_signals),
		cmocka_unit_test(test_signal_fails_the_stream_once),
		cmocka_unit_test(test_grace_ends_a_stuck_run),
		cmocka_unit_test(test_second_signal_ends_at_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
