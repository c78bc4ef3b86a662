/*
 * Parsing host specs (rsync main.c: check_for_hostspec, parse_hostspec).
 */
#include "proto/args/remote.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void copy_bounded(char *dst, size_t size, const char *src, size_t len)
{
	if (len >= size)
		len = size - 1;
	memcpy(dst, src, len);
	dst[len] = '\0';
}

/* Split "[user@]host" (host may be "[v6addr]") into the spec. */
static void set_user_host(struct remote_spec *r, const char *s, size_t len)
{
	const char *at = memchr(s, '@', len);

	if (at) {
		copy_bounded(r->user, sizeof r->user, s, (size_t)(at - s));
		len -= (size_t)(at - s) + 1;
		s = at + 1;
	}
	if (len >= 2 && s[0] == '[' && s[len - 1] == ']') {
		s++;
		len -= 2;
	}
	copy_bounded(r->host, sizeof r->host, s, len);
}

/* "module/path" after the daemon host part. */
static void set_module_path(struct remote_spec *r, const char *s)
{
	const char *slash = strchr(s, '/');

	if (!slash) {
		copy_bounded(r->module, sizeof r->module, s, strlen(s));
		r->path[0] = '\0';
		return;
	}
	copy_bounded(r->module, sizeof r->module, s, (size_t)(slash - s));
	copy_bounded(r->path, sizeof r->path, slash + 1, strlen(slash + 1));
}

static bool parse_url(const char *arg, struct remote_spec *r)
{
	const char *p = arg + 8; /* after "rsync://" */
	const char *slash = strchr(p, '/');
	size_t hostlen = slash ? (size_t)(slash - p) : strlen(p);
	char hostpart[600];

	copy_bounded(hostpart, sizeof hostpart, p, hostlen);
	/* A port follows the last ':' unless it is inside [v6]. */
	char *colon = strrchr(hostpart, ':');
	char *bracket = strrchr(hostpart, ']');
	if (colon && (!bracket || colon > bracket)) {
		r->port = atoi(colon + 1);
		*colon = '\0';
	}
	set_user_host(r, hostpart, strlen(hostpart));
	r->kind = REMOTE_DAEMON;
	if (slash)
		set_module_path(r, slash + 1);
	return true;
}

void remote_parse(const char *arg, struct remote_spec *r)
{
	memset(r, 0, sizeof *r);
	r->kind = REMOTE_LOCAL;
	if (strncasecmp(arg, "rsync://", 8) == 0 && parse_url(arg, r))
		return;
	/* A ':' before any '/' marks a host (a '[' may protect an IPv6 address). */
	const char *p = arg;
	if (*p == '[') {
		const char *close = strchr(p, ']');
		if (close)
			p = close;
	}
	const char *colon = strchr(p, ':');
	const char *slash = strchr(arg, '/');
	if (!colon || (slash && slash < colon) || colon == arg) {
		copy_bounded(r->path, sizeof r->path, arg, strlen(arg));
		return;
	}
	set_user_host(r, arg, (size_t)(colon - arg));
	if (colon[1] == ':') {
		r->kind = REMOTE_DAEMON;
		set_module_path(r, colon + 2);
	} else {
		r->kind = REMOTE_SHELL;
		copy_bounded(r->path, sizeof r->path, colon + 1, strlen(colon + 1));
	}
}
