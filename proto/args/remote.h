/*
 * Where a path lives: local, on an rsync daemon (host::module/path or
 * rsync://host[:port]/module/path), or behind a remote shell (host:path).
 */
#ifndef FERRY_REMOTE_H
#define FERRY_REMOTE_H

#include <stdbool.h>

enum remote_kind { REMOTE_LOCAL, REMOTE_DAEMON, REMOTE_SHELL };

struct remote_spec {
	enum remote_kind kind;
	char user[256];     /* "" when not given */
	char host[256];
	int port;           /* 0: the default */
	char module[256];   /* daemon: "" for a listing */
	char path[4096];    /* daemon: path inside the module; shell/local: path */
};

/* Parse one command-line path argument the way rsync does
 * (main.c: check_for_hostspec). Never fails: anything without a host part
 * is local. */
void remote_parse(const char *arg, struct remote_spec *r);

#endif
