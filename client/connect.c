/*
 * The choice between TCP, a proxy and a connect program for reaching an
 * rsync daemon (socket.c: open_socket_out_wrapped).
 */
#include "client/connect.h"

#include <stdlib.h>

int daemon_connect(const struct connect_req *req, pid_t *prog_pid, int *exit_code)
{
	const char *prog = getenv("RSYNC_CONNECT_PROG");
	const char *proxy = getenv("RSYNC_PROXY");

	*prog_pid = -1;
	if (prog && *prog) {
		char *cmd = connect_prog_expand(prog, req->host);
		int fd = cmd ? connect_prog_spawn(cmd, prog_pid) : -1;
		free(cmd);
		if (fd < 0)
			*exit_code = 10;
		return fd;
	}
	if (proxy && *proxy)
		return proxy_connect(proxy, req, exit_code);
	return tcp_connect(req, exit_code);
}
