/*
 * --sockopts: rsync's socket option names (socket.c: socket_options[] and
 * set_socket_options()). The value is a list of NAME or NAME=VALUE items
 * separated by blanks or commas, e.g. "SO_KEEPALIVE,SO_SNDBUF=65536".
 */
#include "proto/base/sockopts.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

enum sockopt_kind {
	SOCKOPT_BOOL, /* NAME (1) or NAME=0/1 */
	SOCKOPT_INT,  /* NAME=N */
	SOCKOPT_ON,   /* NAME alone sets a fixed value (IP_TOS bits) */
};

struct sockopt_name {
	const char *name;
	int level, option, fixed;
	enum sockopt_kind kind;
};

/* The names rsync knows, in its order. */
static const struct sockopt_name sockopt_names[] = {
	{ "SO_KEEPALIVE", SOL_SOCKET, SO_KEEPALIVE, 0, SOCKOPT_BOOL },
	{ "SO_REUSEADDR", SOL_SOCKET, SO_REUSEADDR, 0, SOCKOPT_BOOL },
	{ "SO_BROADCAST", SOL_SOCKET, SO_BROADCAST, 0, SOCKOPT_BOOL },
	{ "TCP_NODELAY", IPPROTO_TCP, TCP_NODELAY, 0, SOCKOPT_BOOL },
	{ "IPTOS_LOWDELAY", IPPROTO_IP, IP_TOS, IPTOS_LOWDELAY, SOCKOPT_ON },
	{ "IPTOS_THROUGHPUT", IPPROTO_IP, IP_TOS, IPTOS_THROUGHPUT, SOCKOPT_ON },
	{ "SO_SNDBUF", SOL_SOCKET, SO_SNDBUF, 0, SOCKOPT_INT },
	{ "SO_RCVBUF", SOL_SOCKET, SO_RCVBUF, 0, SOCKOPT_INT },
	{ "SO_SNDLOWAT", SOL_SOCKET, SO_SNDLOWAT, 0, SOCKOPT_INT },
	{ "SO_RCVLOWAT", SOL_SOCKET, SO_RCVLOWAT, 0, SOCKOPT_INT },
	{ "SO_SNDTIMEO", SOL_SOCKET, SO_SNDTIMEO, 0, SOCKOPT_INT },
	{ "SO_RCVTIMEO", SOL_SOCKET, SO_RCVTIMEO, 0, SOCKOPT_INT },
};

static const struct sockopt_name *sockopt_lookup(const char *name)
{
	for (size_t i = 0; i < sizeof sockopt_names / sizeof sockopt_names[0]; i++)
		if (strcmp(sockopt_names[i].name, name) == 0)
			return &sockopt_names[i];
	return NULL;
}

/* One "NAME" or "NAME=VALUE" item; false (after saying why) when it is
 * unknown or malformed. fd < 0 only checks it. */
static bool sockopt_item(int fd, char *item)
{
	char *eq = strchr(item, '=');
	int value = 1;

	if (eq) {
		char *end;
		*eq = '\0';
		errno = 0;
		long v = strtol(eq + 1, &end, 10);
		if (errno || end == eq + 1 || *end || v < -2147483647L || v > 2147483647L) {
			fprintf(stderr, "ferry: --sockopts: %s=%s: the value is not a number\n",
				item, eq + 1);
			return false;
		}
		value = (int)v;
	}
	const struct sockopt_name *sn = sockopt_lookup(item);
	if (!sn) {
		fprintf(stderr, "ferry: Unknown socket option %s\n", item);
		return false;
	}
	if (sn->kind == SOCKOPT_ON) {
		if (eq) {
			fprintf(stderr, "ferry: syntax error -- %s does not take a value\n", item);
			return false;
		}
		value = sn->fixed;
	} else if (sn->kind == SOCKOPT_INT && !eq) {
		fprintf(stderr, "ferry: --sockopts: %s needs a value (%s=N)\n", item, item);
		return false;
	}
	if (fd >= 0 && setsockopt(fd, sn->level, sn->option, &value, sizeof value) != 0) {
		fprintf(stderr, "ferry: failed to set socket option %s: %s (%d)\n", item,
			strerror(errno), errno);
		return false;
	}
	return true;
}

bool sockopts_apply(int fd, const char *spec)
{
	bool ok = true;

	if (!spec || !*spec)
		return true;
	char *copy = strdup(spec), *save = NULL;
	if (!copy)
		return false;
	for (char *tok = strtok_r(copy, " \t,", &save); tok; tok = strtok_r(NULL, " \t,", &save))
		ok &= sockopt_item(fd, tok);
	free(copy);
	return ok;
}
