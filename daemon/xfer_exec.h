/*
 * The module's "early exec", "pre-xfer exec" and "post-xfer exec" hooks:
 * administrator commands run by /bin/sh around a transfer, with rsync's
 * RSYNC_* environment.
 */
#ifndef FERRY_XFER_EXEC_H
#define FERRY_XFER_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A hook started before the connection enters the module (so it runs with
 * the daemon's privileges, outside any chroot) that waits for the client's
 * request on a pipe. */
struct xfer_hook {
	pid_t pid;
	int arg_fd;    /* we write the request and arguments here */
	int out_fd;    /* the hook's stdout (pre-xfer exec), or -1 */
};

/* Fork the hook. It reads the request and the argument list from the pipe,
 * sets RSYNC_REQUEST and RSYNC_ARG0..N, then runs `/bin/sh -c cmd` with the
 * rest of the pipe as its stdin. Returns false (errno set) when it could not
 * be started. */
bool xfer_hook_start(const char *cmd, bool capture_stdout, struct xfer_hook *h);

/* Hand the hook the request ("(NONE)" when NULL), the arguments and, for
 * early exec, the client's early input; then close the pipe. */
void xfer_hook_send(struct xfer_hook *h, const char *request, char *const *argv, int argc,
		    const void *input, size_t input_len);

/* The same for the "name converter", whose stdin stays open for the
 * lookups that follow (clientserver.c: write_pre_exec_args, exec_type 2).
 * False when the converter is gone. */
bool xfer_hook_send_keep_open(struct xfer_hook *h, const char *request, char *const *argv,
			      int argc);

/* Wait for the hook. NULL when it exited 0; otherwise a malloc'd message in
 * rsync's words ("<desc> returned failure (<status>)" and what the hook
 * printed), to be shown to the client. */
char *xfer_hook_finish(struct xfer_hook *h, const char *desc);

/* The client went away before sending its request: end the hook without
 * running its command (it exits when the pipe closes), and reap it. */
void xfer_hook_cancel(struct xfer_hook *h);

/* "post-xfer exec": fork; the child returns (true) and goes on to serve the
 * transfer, while this process closes the connection, waits for the child,
 * sets RSYNC_RAW_STATUS and RSYNC_EXIT_STATUS, runs cmd and exits with the
 * transfer's status. Returns false only when the fork failed. */
bool xfer_post_exec_fork(const char *cmd, int fd_in, int fd_out);

#endif
