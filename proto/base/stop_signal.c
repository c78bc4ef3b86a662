/*
 * The stop signals (see stop_signal.h).
 */
#include "proto/base/stop_signal.h"

#include <errno.h>
#include <stdatomic.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "proto/base/version.h"
#include "proto/base/json.h"
#include "proto/base/wire.h"

#define STRINGIFY(x) #x
#define LINE_TEXT(x) STRINGIFY(x)

/* A signal handler cannot be handed a context: what it records, and what
 * the forced exit needs, is process-wide. */
static volatile sig_atomic_t stop_signo;
static const char *const *client_role;
static bool client_json; /* --json: the forced exit ends the event stream */
/* What the forced exit runs first (stop_signal_cleanup_on). */
static struct stop_cleanup *_Atomic exit_cleanups[STOP_CLEANUPS_MAX];

/* Append text to buf[0..*len) within size; async-signal-safe. */
static void append(char *buf, size_t size, size_t *len, const char *text)
{
	while (*text && *len + 1 < size)
		buf[(*len)++] = *text++;
}

/* The run did not wind down in time, or a second signal came: remove the
 * temp file, say so as the closing line would (exit_line.h), exit 20.
 * Only async-signal-safe calls: it runs in a handler. */
static void forced_exit(void)
{
	for (int i = 0; i < STOP_CLEANUPS_MAX; i++) {
		struct stop_cleanup *c = atomic_load(&exit_cleanups[i]);
		if (c)
			c->fn(c->ctx);
	}
	if (client_role && *client_role) {
		char line[256];
		size_t n = 0;
		append(line, sizeof line, &n,
		       "ferry error: received SIGINT, SIGTERM, or SIGHUP (code 20) at "
		       "stop_signal.c(" LINE_TEXT(__LINE__) ") [");
		append(line, sizeof line, &n, *client_role);
		append(line, sizeof line, &n, "=" FERRY_VERSION "]\n");
		if (write(STDERR_FILENO, line, n) < 0) {
			/* nothing left to tell it to */
		}
		if (client_json) {
			const char *end = json_signal_end_line(&n);
			if (write(STDOUT_FILENO, end, n) < 0) {
				/* nor here */
			}
		}
	}
	_exit(RERR_SIGNAL);
}

static void on_grace_over(int sig)
{
	(void)sig;
	forced_exit();
}

static void on_stop_signal(int sig)
{
	int saved = errno;

	if (stop_signo)
		forced_exit(); /* the user means it */
	stop_signo = sig;
	alarm(STOP_SIGNAL_GRACE_S);
	errno = saved;
}

bool stop_signal_cleanup_on(struct stop_cleanup *c)
{
	for (int i = 0; i < STOP_CLEANUPS_MAX; i++) {
		if (atomic_load(&exit_cleanups[i]) == c)
			return true; /* once is enough */
	}
	for (int i = 0; i < STOP_CLEANUPS_MAX; i++) {
		struct stop_cleanup *none = NULL;
		if (atomic_compare_exchange_strong(&exit_cleanups[i], &none, c))
			return true;
	}
	return false;
}

void stop_signal_cleanup_off(struct stop_cleanup *c)
{
	for (int i = 0; i < STOP_CLEANUPS_MAX; i++) {
		struct stop_cleanup *mine = c;
		if (atomic_compare_exchange_strong(&exit_cleanups[i], &mine, NULL))
			return;
	}
}

void stop_signal_json_end(bool json)
{
	client_json = json;
}

int stop_signal_pending(void)
{
	return stop_signo;
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

	client_role = role;
	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_grace_over;
	sigaction(SIGALRM, &sa, NULL);
	/* a forked child inherits the flag but not the pending alarm */
	if (stop_signo)
		alarm(STOP_SIGNAL_GRACE_S);
	sa.sa_handler = on_stop_signal;
	/* no SA_RESTART: the main thread's blocking read, write or sleep
	 * returns EINTR, and the loop around it sees the signal */
	sa.sa_flags = 0;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}
