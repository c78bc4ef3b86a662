/*
 * --progress: rsync's per-file progress lines (progress.c).
 */
#ifndef FERRY_PROGRESS_H
#define FERRY_PROGRESS_H

#include <stdint.h>
#include <sys/time.h>

#include "proto/core/session.h"

struct progress {
	struct timeval start, last;
	int64_t start_ofs;
	bool started;
};

/* At most once a second: "\r     1,234,567  42%    1.23MB/s    0:00:05  ". */
void progress_update(struct session *s, struct progress *p, int64_t ofs, int64_t size);
/* The file's last line, with "(xfr#N, to-chk=R/T)" and a newline; ndx is
 * the file's index in the sorted list. */
void progress_end(struct session *s, struct progress *p, int64_t size, int32_t ndx);
/* A dry run's transfer counts in --info=progress2's total as if made. */
void progress_dry_run_item(struct session *s, int64_t size);

/* --info=progress2 / --json: the final whole-transfer line or event. */
void progress_finish(struct session *s);

/* --json events: one changed item ("change" in %i's letters), and the
 * run's statistics at the end. */
void progress_json_item(struct session *s, const char *name, const char *item, int64_t size);
void progress_json_stats(struct session *s, int exit_code);
/* A client's transfer session ends (called before session_free, while
 * its opts are alive): unless the stats event recorded them, its totals
 * so far go to opts->json_totals for the end event. */
void progress_json_note_totals(const struct session *s);
/* A message event: level "error", "warning" or "info", and the line's
 * text without its newline (proto/core/msg.c sends every message here too). */
void progress_json_message(struct session *s, const char *level, const char *text);

#endif
