/*
 * SIGINT, SIGTERM and SIGHUP end a transfer with rsync's exit code 20
 * (rsync.c: sig_int; io.c: handle_kill_signal).
 *
 * The handler only records the signal. The stream loops (wire.c) turn it
 * into the session's error the next time they read, write or sleep, so the
 * run unwinds through its ordinary error paths: the temp file is removed
 * (or kept, with --partial), the peer gets MSG_ERROR_EXIT and the closing
 * line is printed or logged. Worker threads block these signals, so the
 * signal lands on the main thread and interrupts its blocking call. An
 * alarm bounds the unwinding: a run still alive STOP_SIGNAL_GRACE_S
 * seconds after the signal, or that gets a second one, removes its temp
 * file and exits 20 from the handler (SIGALRM is the module's).
 */
#ifndef FERRY_STOP_SIGNAL_H
#define FERRY_STOP_SIGNAL_H

#include <pthread.h>
#include <stdbool.h>

#define STOP_SIGNAL_GRACE_S 5
/* How many clean-ups may be registered at once (one per receiver). */
#define STOP_CLEANUPS_MAX 8

/* Work a forced exit does before it exits (the receiver's temp file):
 * fn(ctx), with only async-signal-safe calls. Owned by the registrant,
 * which keeps it alive while registered. */
struct stop_cleanup {
	void (*fn)(void *ctx);
	void *ctx;
};

/* Install the handler for SIGINT, SIGTERM and SIGHUP, also where the
 * signal was inherited as ignored (a background job of a non-interactive
 * shell), and the one for the grace period's SIGALRM. Call it from the
 * main thread before any worker thread exists, and again in a forked
 * child. *role, when role is not NULL, names the part of a client's run
 * for the closing line of a forced exit (exit_line.h); a server or daemon
 * child passes NULL. */
void stop_signal_install(const char *const *role);

/* --json: a forced exit of the client (role set) also writes the run's
 * end event on stdout (json.h). */
void stop_signal_json_end(bool json);

/* Have a forced exit run c, until stop_signal_cleanup_off(c). The layer
 * that owns the state registers it: this module names no other. False
 * when STOP_CLEANUPS_MAX are registered already (c then never runs).
 * Lock-free: safe from any thread. */
bool stop_signal_cleanup_on(struct stop_cleanup *c);
/* Withdraw c (nothing when it is not registered). */
void stop_signal_cleanup_off(struct stop_cleanup *c);

/* The stop signal received, 0 while none. Async-signal-safe. */
int stop_signal_pending(void);

/* pthread_create with SIGINT, SIGTERM and SIGHUP blocked in the new
 * thread (and in every thread it creates), so that they are delivered to
 * the main thread. Returns pthread_create's result. */
int stop_signal_thread_create(pthread_t *thread, void *(*fn)(void *), void *arg);

#endif
