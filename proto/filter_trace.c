/*
 * --debug=FILTER traces and the filter warnings: sent to the list's
 * report() and warn() once the transfer has set them, kept until then.
 * Split from filter.c (parsing), which makes the notes.
 */
#include "proto/filter.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/filter_priv.h"

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
