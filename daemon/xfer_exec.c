/*
 * Module hooks around a transfer (rsync's early exec / pre-xfer exec /
 * post-xfer exec). The hook process is forked before the connection
 * chroots or drops privileges, so the administrator's command runs as the
 * daemon does; it learns the client's request later, through a pipe.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/close_range.h>

#include "daemon/xfer_exec.h"
#include "proto/base/fdio.h"

#define HOOK_ARG_MAX 5120     /* one request or argument, as rsync's BIGPATHBUFLEN */
#define HOOK_ARGS_MAX 20000   /* more than the daemon accepts from a client */
#define HOOK_OUTPUT_MAX 5119  /* what we keep of the hook's stdout */

/* One NUL-terminated string from the pipe: its length, 0 for the empty
 * string that ends the list, -1 on EOF, error or an oversized string. */
static int read_pipe_string(int fd, char *buf, size_t size)
{
	size_t n = 0;

	for (;;) {
		char ch;
		ssize_t r = read(fd, &ch, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		if (ch == '\0')
			break;
		if (n + 1 >= size)
			return -1;
		buf[n++] = ch;
	}
	buf[n] = '\0';
	return (int)n;
}

static void set_env_number(const char *name, long value)
{
	char num[32];

	snprintf(num, sizeof num, "%ld", value);
	setenv(name, num, 1);
}

/* A hook must not hold the client's connection (or the daemon's other
 * descriptors) open: a command it leaves running would keep the client
 * from seeing the end of the transfer. */
static void close_inherited_fds(void)
{
	signal(SIGPIPE, SIG_DFL);
	close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
}

/* The hook's side of the pipe: the environment, then the shell. */
static void __attribute__((noreturn)) hook_child(const char *cmd, int arg_fd, int out_fd)
{
	char buf[HOOK_ARG_MAX];

	if (read_pipe_string(arg_fd, buf, sizeof buf) < 0)
		_exit(1);
	setenv("RSYNC_REQUEST", buf, 1);
	for (int i = 0;; i++) {
		int len = read_pipe_string(arg_fd, buf, sizeof buf);
		if (len == 0)
			break;
		if (len < 0 || i >= HOOK_ARGS_MAX)
			_exit(1);
		char name[32];
		snprintf(name, sizeof name, "RSYNC_ARG%d", i);
		setenv(name, buf, 1);
	}
	/* What follows the list (early exec's input) is the command's stdin.
	 * Its stdout is the pipe back to the daemon, or nowhere: on an
	 * inetd-style daemon fd 1 is the client's socket. */
	if (out_fd < 0)
		out_fd = open("/dev/null", O_WRONLY);
	if (dup2(arg_fd, STDIN_FILENO) < 0 || out_fd < 0 || dup2(out_fd, STDOUT_FILENO) < 0)
		_exit(1);
	close_inherited_fds();
	execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
	_exit(127);
}

bool xfer_hook_start(const char *cmd, bool capture_stdout, struct xfer_hook *h)
{
	int arg_pipe[2], out_pipe[2] = {-1, -1};

	h->pid = -1;
	h->arg_fd = h->out_fd = -1;
	if (pipe2(arg_pipe, O_CLOEXEC) < 0)
		return false;
	if (capture_stdout && pipe2(out_pipe, O_CLOEXEC) < 0) {
		close(arg_pipe[0]);
		close(arg_pipe[1]);
		return false;
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(arg_pipe[1]);
		if (out_pipe[0] >= 0)
			close(out_pipe[0]);
		hook_child(cmd, arg_pipe[0], out_pipe[1]);
	}
	int saved = errno;
	close(arg_pipe[0]);
	if (out_pipe[1] >= 0)
		close(out_pipe[1]);
	if (pid < 0) {
		close(arg_pipe[1]);
		if (out_pipe[0] >= 0)
			close(out_pipe[0]);
		errno = saved;
		return false;
	}
	h->pid = pid;
	h->arg_fd = arg_pipe[1];
	h->out_fd = out_pipe[0];
	return true;
}

/* The request, the arguments and the empty string that ends them. */
static bool send_list(struct xfer_hook *h, const char *request, char *const *argv, int argc,
		      const void *input, size_t input_len)
{
	if (!request)
		request = "(NONE)";
	/* A hook that exits without reading must not kill the daemon. */
	void (*old)(int) = signal(SIGPIPE, SIG_IGN);
	bool ok = fd_write_all(h->arg_fd, request, strlen(request) + 1);
	for (int i = 0; ok && i < argc; i++)
		ok = fd_write_all(h->arg_fd, argv[i], strlen(argv[i]) + 1);
	ok = ok && fd_write_all(h->arg_fd, "", 1);
	if (ok && input_len)
		ok = fd_write_all(h->arg_fd, input, input_len);
	signal(SIGPIPE, old);
	return ok;
}

void xfer_hook_send(struct xfer_hook *h, const char *request, char *const *argv, int argc,
		    const void *input, size_t input_len)
{
	if (h->arg_fd < 0)
		return;
	send_list(h, request, argv, argc, input, input_len);
	close(h->arg_fd);
	h->arg_fd = -1;
}

bool xfer_hook_send_keep_open(struct xfer_hook *h, const char *request, char *const *argv,
			      int argc)
{
	return h->arg_fd >= 0 && send_list(h, request, argv, argc, NULL, 0);
}

/* The hook's stdout, with "\r\n" turned into "\n" as rsync shows it. */
static void read_hook_output(int fd, char *buf, size_t size)
{
	size_t n = 0;

	while (n + 1 < size) {
		ssize_t r = read(fd, buf + n, size - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	char *w = buf;
	for (const char *r = buf; *r; r++) {
		if (r[0] == '\r' && r[1] == '\n')
			continue;
		*w++ = *r;
	}
	*w = '\0';
}

char *xfer_hook_finish(struct xfer_hook *h, const char *desc)
{
	char output[HOOK_OUTPUT_MAX + 1] = "";
	int status = -1, wait_errno = 0;

	if (h->arg_fd >= 0)
		xfer_hook_send(h, NULL, NULL, 0, NULL, 0);
	if (h->out_fd >= 0) {
		read_hook_output(h->out_fd, output, sizeof output);
		close(h->out_fd);
		h->out_fd = -1;
	}
	while (waitpid(h->pid, &status, 0) < 0) {
		if (errno != EINTR) {
			status = -1;
			wait_errno = errno;
			break;
		}
	}
	h->pid = -1;
	if (status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return NULL;
	char *msg = NULL;
	if (asprintf(&msg, "%s returned failure (%d)%s%s%s\n%s", desc, status,
		     status < 0 ? ": " : "", status < 0 ? strerror(wait_errno) : "",
		     *output ? ":" : "", output) < 0)
		return strdup("out of memory in a transfer hook\n");
	return msg;
}

void xfer_hook_cancel(struct xfer_hook *h)
{
	if (h->pid <= 0)
		return;
	if (h->arg_fd >= 0)
		close(h->arg_fd);
	if (h->out_fd >= 0)
		close(h->out_fd);
	h->arg_fd = h->out_fd = -1;
	while (waitpid(h->pid, NULL, 0) < 0 && errno == EINTR)
		;
	h->pid = -1;
}

static int run_shell(const char *cmd)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		close_inherited_fds();
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return status;
}

bool xfer_post_exec_fork(const char *cmd, int fd_in, int fd_out)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return false;
	if (pid == 0)
		return true;
	/* Only the transfer process talks to the client. */
	close(fd_in);
	if (fd_out != fd_in)
		close(fd_out);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			status = -1;
			break;
		}
	}
	set_env_number("RSYNC_RAW_STATUS", status);
	status = status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	set_env_number("RSYNC_EXIT_STATUS", status);
	if (run_shell(cmd) < 0)
		status = -1;
	_exit(status & 0xff);
}
