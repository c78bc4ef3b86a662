/*
 * The connection's basics: lines to the client, the handshake bound, the
 * name lookup note and how a module's admin paths are opened.
 */
#include <stdarg.h>
#include <stdio.h>

#include "daemon/access.h"
#include "daemon/log.h"
#include "daemon/serve_priv.h"
#include "proto/base/oppath.h"

void log_lookup_note(const struct conn *c)
{
	if (*c->lookup_note)
		daemon_log(c->cfg, NULL, "%s", c->lookup_note);
}

bool send_line(struct conn *c, const char *fmt, ...)
{
	char buf[LINE_MAX_LEN];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n < 0)
		return false;
	if ((size_t)n >= sizeof buf)
		n = (int)sizeof buf - 1;
	return wire_write(&c->s.out, buf, (size_t)n) && wire_flush(&c->s.out);
}

void set_handshake_deadline(struct conn *c, int timeout_s)
{
	int limit = timeout_s > 0 && timeout_s < 60 ? timeout_s : 60;

	c->s.in.deadline_ms = wire_now_ms() + (int64_t)limit * 1000;
}
unsigned module_oppath_how(const struct daemon_module *m)
{
	return OPPATH_QUIET | (m->insecure_links ? OPPATH_INSECURE : 0);
}
