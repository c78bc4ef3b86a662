/*
 * The stop signals (see stop_signal.h).
 */
#include "proto/stop_signal.h"

#include <errno.h>
#include <semaphore.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/exit_line.h"
#include "proto/tempfile.h"
#include "proto/wire.h"

/* A signal handler cannot be handed a context: what it records, and what
 * the watchdog needs, is process-wide. */
static volatile sig_atomic_t stop_signo;
static sem_t watchdog_wake;          /* posted by the handler, per signal */
static pid_t watchdog_pid;           /* the process whose watchdog runs */
static const char *const *client_role;

static void on_stop_signal(int sig)
{
	int saved = errno;

	if (!stop_signo)
		stop_signo = sig;
	sem_post(&watchdog_wake); /* async-signal-safe, unlike a mutex */
	errno = saved;
}

int stop_signal_pending(void)
{
	return stop_signo;
}

/* Wait for the semaphore until the absolute CLOCK_REALTIME time, or for
 * ever when until is NULL; true if it was posted. */
static bool wait_wake(const struct timespec *until)
{
	int r;

	do {
		r = until ? sem_timedwait(&watchdog_wake, until) : sem_wait(&watchdog_wake);
	} while (r < 0 && errno == EINTR);
	return r == 0;
}

/* Sleeps until the first signal, then gives the run its grace period to
 * unwind; a second signal ends the wait early, as a user pressing Ctrl-C
 * again means it. */
static void *watchdog_main(void *arg)
{
	struct timespec until;

	(void)arg;
	wait_wake(NULL);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += STOP_SIGNAL_GRACE_MS / 1000;
	until.tv_nsec += (long)(STOP_SIGNAL_GRACE_MS % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	wait_wake(&until);
	temp_cleanup_for_exit();
	if (client_role && *client_role) {
		/* straight to fd 2: the main thread may be stuck holding
		 * stdio's lock, in a write to a pipe nobody reads */
		char line[512];
		size_t n = exit_line_format(line, sizeof line, RERR_SIGNAL, *client_role,
					    "stop_signal.c", __LINE__);
		if (write(STDERR_FILENO, line, n) < 0) {
			/* nothing left to tell it to */
		}
	}
	_exit(RERR_SIGNAL);
	return NULL;
}

int stop_signal_thread_create(pthread_t *thread, void *(*fn)(void *), void *arg)
{
	sigset_t stop, old;

	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stop, &old);
	int r = pthread_create(thread, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

void stop_signal_install(const char *const *role)
{
	struct sigaction sa;
	pthread_t t;

	client_role = role;
	if (watchdog_pid != getpid()) {
		/* a forked child inherits the semaphore's memory, not the thread */
		sem_init(&watchdog_wake, 0, stop_signo ? 1 : 0);
		if (stop_signal_thread_create(&t, watchdog_main, NULL) == 0) {
			pthread_detach(t);
			watchdog_pid = getpid();
		}
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	/* no SA_RESTART: the main thread's blocking read, write or sleep
	 * returns EINTR, and the loop around it sees the signal */
	sa.sa_flags = 0;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}
