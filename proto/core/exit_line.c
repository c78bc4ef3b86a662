/*
 * The closing line of a failed run (see exit_line.h).
 */
#include "proto/core/exit_line.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "proto/base/version.h"
#include "proto/core/session.h"
#include "proto/base/wire.h"

static const struct {
	int code;
	const char *name;
} exit_names[] = {
	{ RERR_SYNTAX, "syntax or usage error" },
	{ RERR_PROTOCOL, "protocol incompatibility" },
	{ RERR_FILESELECT, "errors selecting input/output files, dirs" },
	{ RERR_UNSUPPORTED, "requested action not supported" },
	{ RERR_STARTCLIENT, "error starting client-server protocol" },
	{ 6, "daemon unable to append to log-file" },
	{ RERR_SOCKETIO, "error in socket IO" },
	{ RERR_FILEIO, "error in file IO" },
	{ RERR_STREAMIO, "error in rsync protocol data stream" },
	{ RERR_MESSAGEIO, "errors with program diagnostics" },
	{ RERR_IPC, "error in IPC code" },
	{ RERR_CRASHED, "sibling process crashed" },
	{ RERR_TERMINATED, "sibling process terminated abnormally" },
	{ RERR_SIGNAL1, "received SIGUSR1" },
	{ RERR_SIGNAL, "received SIGINT, SIGTERM, or SIGHUP" },
	{ RERR_WAITCHILD, "waitpid() failed" },
	{ RERR_MALLOC, "error allocating core memory buffers" },
	{ RERR_PARTIAL, "some files/attrs were not transferred (see previous errors)" },
	{ RERR_VANISHED, "some files vanished before they could be transferred" },
	{ RERR_DEL_LIMIT, "the --max-delete limit stopped deletions" },
	{ RERR_TIMEOUT, "timeout in data send/receive" },
	{ RERR_CONTIMEOUT, "timeout waiting for daemon connection" },
};

const char *exit_code_name(int code)
{
	for (size_t i = 0; i < sizeof exit_names / sizeof exit_names[0]; i++)
		if (exit_names[i].code == code)
			return exit_names[i].name;
	return NULL;
}

void exit_line_peer_said(struct exit_note *note)
{
	if (note)
		note->peer_said = true;
}

void exit_line_set_role(struct exit_note *note, const char *role)
{
	if (note)
		note->role = role;
}

size_t exit_line_format(char *buf, size_t size, int code, const char *role, const char *file,
			int line)
{
	const char *name = exit_code_name(code);
	const char *base = strrchr(file, '/');

	/* a vanished file is a warning, not an error (log.c: log_exit) */
	int n = snprintf(buf, size, "ferry %s: %s (code %d) at %s(%d) [%s=%s]\n",
			 code == RERR_VANISHED ? "warning" : "error",
			 name ? name : "unexplained error", code, base ? base + 1 : file, line, role,
			 FERRY_VERSION);
	return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}

void exit_line_print(const struct exit_note *note, int code, const char *role, const char *file,
		     int line, const char *log_file)
{
	char buf[512];

	if (code == 0 || (note && note->peer_said))
		return;
	size_t n = exit_line_format(buf, sizeof buf, code,
				    note && note->role ? note->role : role, file, line);
	fflush(stdout);
	fwrite(buf, 1, n, stderr);
	/* the log gets every error the terminal gets (log.c: rwrite) */
	logfile_append(log_file, buf);
}
