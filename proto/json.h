/*
 * --json: the one JSON writer of the client's event stream (docs/json.md).
 * Every event is one object on one line of stdout; schema 1.
 */
#ifndef FERRY_JSON_H
#define FERRY_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define JSON_SCHEMA 1

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
 * exit code, rsync's error class and its text (NULL: none). */
void json_event_end(int code, const char *text, bool dry_run);

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
