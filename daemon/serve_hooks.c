/*
 * The module's hooks: early exec, pre-xfer and post-xfer exec and the
 * name converter (clientserver.c: rsync_module).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/log.h"
#include "daemon/serve_priv.h"

static bool hook_set(const char *cmd)
{
	return cmd && *cmd;
}

bool start_module_hooks(struct conn *c, const struct daemon_module *m,
			       struct xfer_hook *pre)
{
	if (!hook_set(m->early_exec) && !hook_set(m->pre_xfer_exec) &&
	    !hook_set(m->post_xfer_exec) && !hook_set(m->name_converter))
		return true;
	if (getenv("RSYNC_NO_XFER_EXEC"))
		return true;
	char pid[32];
	snprintf(pid, sizeof pid, "%ld", (long)getpid());
	setenv("RSYNC_PID", pid, 1);
	if (hook_set(m->post_xfer_exec) &&
	    !xfer_post_exec_fork(m->post_xfer_exec, c->fd_in, c->fd_out)) {
		daemon_log(c->cfg, m, "fork failed: %s", strerror(errno));
		send_line(c, "@ERROR: fork failed\n");
		return false;
	}
	/* The name converter, too, runs outside the chroot, where the user
	 * and group databases are (clientserver.c: rsync_module). */
	if (hook_set(m->name_converter) && !xfer_hook_start(m->name_converter, true, &c->namecvt)) {
		daemon_log(c->cfg, m, "name-converter exec preparation failed: %s", strerror(errno));
		send_line(c, "@ERROR: name-converter exec preparation failed\n");
		return false;
	}
	if (hook_set(m->early_exec)) {
		struct xfer_hook early;
		if (!xfer_hook_start(m->early_exec, false, &early)) {
			daemon_log(c->cfg, m, "early exec preparation failed: %s", strerror(errno));
			send_line(c, "@ERROR: early exec preparation failed\n");
			return false;
		}
		xfer_hook_send(&early, NULL, NULL, 0, c->early_input, c->early_input_len);
		char *failure = xfer_hook_finish(&early, "early exec");
		if (failure) {
			daemon_log(c->cfg, m, "%s", failure);
			free(failure);
			send_line(c, "@ERROR: early exec failed\n");
			return false;
		}
	}
	if (hook_set(m->pre_xfer_exec) && !xfer_hook_start(m->pre_xfer_exec, true, pre)) {
		daemon_log(c->cfg, m, "pre-xfer exec preparation failed: %s", strerror(errno));
		send_line(c, "@ERROR: pre-xfer exec preparation failed\n");
		return false;
	}
	return true;
}

char *client_request(char *const *argv, int argc)
{
	char *req = NULL;
	size_t n = 0;
	int dot = 0;

	while (dot < argc && strcmp(argv[dot], ".") != 0)
		dot++;
	for (int i = dot + 1; i < argc && n < HOOK_REQUEST_MAX; i++) {
		size_t len = strlen(argv[i]);
		char *grown = realloc(req, n + len + 2);
		if (!grown)
			break;
		req = grown;
		if (n)
			req[n++] = ' ';
		memcpy(req + n, argv[i], len + 1);
		n += len;
	}
	return req;
}

char *run_pre_xfer_hook(struct xfer_hook *pre, const char *request, char **argv,
			       int argc, const char *module)
{
	int dot = 0;

	while (dot < argc && strcmp(argv[dot], ".") != 0)
		dot++;
	/* The hook sees the path arguments as the module will use them:
	 * relative to the module, without its name (rsync glob-expands them
	 * before the hook runs). */
	char **hook_argv = calloc((size_t)argc + 1, sizeof *hook_argv);
	if (!hook_argv) {
		xfer_hook_cancel(pre);
		return strdup("pre-xfer exec: out of memory\n");
	}
	for (int i = 0; i < argc; i++) {
		char rel[4096];
		if (i <= dot) {
			hook_argv[i] = argv[i];
			continue;
		}
		module_arg_relative(argv[i], module, false, rel, sizeof rel);
		hook_argv[i] = strdup(rel);
		if (!hook_argv[i])
			hook_argv[i] = argv[i];
	}
	xfer_hook_send(pre, request, hook_argv, argc, NULL, 0);
	for (int i = dot + 1; i < argc; i++)
		if (hook_argv[i] != argv[i])
			free(hook_argv[i]);
	free(hook_argv);
	return xfer_hook_finish(pre, "pre-xfer exec");
}

void start_name_converter(struct conn *c, const char *request, char **argv, int argc)
{
	if (c->namecvt.pid <= 0)
		return;
	if (!xfer_hook_send_keep_open(&c->namecvt, request, argv, argc)) {
		daemon_log(c->cfg, c->m, "name converter: could not send it the request");
		return;
	}
	c->s.namecvt_req_fd = c->namecvt.arg_fd;
	c->s.namecvt_ans_fd = c->namecvt.out_fd;
}
