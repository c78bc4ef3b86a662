/*
 * --debug=FILTER traces and the filter warnings: sent to the list's
 * report() and warn() once the transfer has set them, kept until then.
 * Split from filter.c (parsing), which makes the notes. The session
 * watches a list with session_watch_filters: its messages take them.
 */
#include "proto/filter/filter.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/filter/filter_priv.h"
#include "proto/base/opts.h"
#include "proto/core/session.h"

/* A trace line (tag 'T', with its newline) to report(), or a warning
 * ('W', or 'X' for a transfer's; without) to warn(); kept, tagged, until
 * they are set. */
void filter_note_emit(struct filter_list *fl, char tag, const char *line)
{
	if (tag == 'T' && fl->report) {
		fl->report(fl->report_ctx, line);
		return;
	}
	if (tag != 'T' && fl->warn) {
		fl->warn(fl->warn_ctx, line, tag == 'X');
		return;
	}
	size_t n = strlen(line);
	if (fl->trace_pending_len + n + 2 > 1024 * 1024)
		return; /* a bound on what waits */
	char *p = realloc(fl->trace_pending, fl->trace_pending_len + n + 3);
	if (!p)
		return;
	p[fl->trace_pending_len] = tag;
	memcpy(p + fl->trace_pending_len + 1, line, n);
	p[fl->trace_pending_len + 1 + n] = '\0';
	p[fl->trace_pending_len + 2 + n] = '\0';
	fl->trace_pending = p;
	fl->trace_pending_len += n + 2; /* tag, text, NUL */
}

void filter_note(struct filter_list *fl, char tag, const char *fmt, ...)
{
	char *line = NULL;
	va_list ap;

	va_start(ap, fmt);
	int n = vasprintf(&line, fmt, ap);
	va_end(ap);
	if (n >= 0)
		filter_note_emit(fl, tag, line);
	free(line);
}

void filter_trace_start(struct filter_list *fl, bool show_parsed, const char *who)
{
	const char *p = fl->trace_pending;

	for (size_t i = 0; p && show_parsed && i < fl->trace_pending_len;) {
		const char *line = p + i + 1;
		if (p[i] == 'T' ? fl->report != NULL : fl->warn != NULL)
			filter_note_emit(fl, p[i], line);
		i += strlen(line) + 2;
	}
	free(fl->trace_pending);
	fl->trace_pending = NULL;
	fl->trace_pending_len = 0;
	fl->trace_who = who;
}

static void report_filter_line(void *ctx, const char *line)
{
	session_info(ctx, "%s", line);
}

static void report_filter_warning(void *ctx, const char *line, bool xfer)
{
	if (xfer)
		session_xfer_err_plain(ctx, "%s", line);
	else
		session_err_plain(ctx, "%s", line);
}

void session_watch_filters(struct session *s, struct filter_list *fl)
{
	fl->warn = report_filter_warning;
	fl->warn_ctx = s;
	if (debug_ge(s->opts, DEBUG_FILTER, 1)) {
		fl->report = report_filter_line;
		fl->report_ctx = s;
	}
	/* a server's rules are not traced, but the receiving half of a
	 * local copy is the client's generator */
	bool shown = !s->am_server || s->local_copy;
	filter_trace_start(fl, !s->am_server, !shown ? NULL : s->am_sender ? "sender" : "generator");
}
