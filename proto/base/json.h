/*
 * --json: the one JSON writer of the client's event stream (docs/json.md).
 * Every event is one object on one line of stdout; schema 1.
 */
#ifndef FERRY_JSON_H
#define FERRY_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_SCHEMA 1

/* A run's totals for the stats and end events: what the transfer's
 * statistics counted (so far, when it was cut short); zeros when no
 * transfer ran. */
struct json_totals {
	bool set; /* a transfer's session filled it */
	int files, files_transferred, files_created, files_deleted;
	int64_t total_size, transferred_size, literal_bytes, matched_bytes;
	int64_t bytes_sent, bytes_received;
};

/* `"files":N,...,"bytes_received":N`: the totals' fields, no braces. */
void json_write_totals(FILE *fp, const struct json_totals *t);

/* Write len bytes of str as a JSON string, quotes included. Bytes that
 * are not valid UTF-8 become U+FFFD; returns false when any did. */
bool json_write_string(FILE *fp, const char *str, size_t len);

/* Write `"key":"..."` for a name; when its bytes are not UTF-8, also
 * `,"key_b64":"..."` with the raw bytes in unpadded base64. */
void json_write_name(FILE *fp, const char *key, const char *name, size_t len);

/* rsync's symbol for an exit code ("RERR_PARTIAL"), or "RERR_OK" for 0,
 * or NULL when rsync has none. */
const char *json_rerr_symbol(int code);

/* {"event":"start","schema":1,...}: the first event of a run. */
void json_event_start(bool dry_run);

/* {"event":"end",...}: the last event of a run, exactly once, with the
 * exit code, rsync's error class and its text (NULL: none), the run's
 * time and its totals (NULL: all zero). */
void json_event_end(int code, const char *text, bool dry_run, int64_t elapsed_ms,
		    const struct json_totals *totals);

/* {"event":EVENT,KEY:NAME}: one line of text the human form prints
 * (a MOTD line, a created directory), len bytes of name. */
void json_event_text(const char *event, const char *key, const char *name, size_t len);

/* The end event of a run stopped by a second signal or the grace timer,
 * for stop_signal.c to write() from a handler; its length in *len. */
const char *json_signal_end_line(size_t *len);

/* What an rsync-form message line tells about a file: "PROG: [ROLE]
 * ... \"PATH\" ...: strerror (ERRNO)". Pointers into the line; a part
 * not there is NULL/0 (errnum -1). */
struct json_msg_fields {
	const char *role;
	size_t role_len;
	const char *path;
	size_t path_len;
	int errnum;
};
void json_msg_parse(const char *line, struct json_msg_fields *out);

#endif
