/*
 * The --json event writer (see json.h).
 */
#include "proto/base/json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/base/version.h"
#include "proto/base/checksum.h"
#include "proto/base/wire.h"

/* Length of the valid UTF-8 sequence at p (at most n bytes), 0 if none:
 * no overlongs, no surrogates, nothing above U+10FFFF. */
static size_t utf8_seq_len(const unsigned char *p, size_t n)
{
	unsigned char c = p[0];
	size_t len;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

bool json_write_string(FILE *fp, const char *str, size_t len)
{
	const unsigned char *p = (const unsigned char *)str;
	bool valid = true;

	fputc('"', fp);
	for (size_t i = 0; i < len;) {
		size_t n = utf8_seq_len(p + i, len - i);
		if (n == 0) {
			fputs("\\ufffd", fp);
			valid = false;
			i++;
		} else if (p[i] == '"' || p[i] == '\\') {
			fprintf(fp, "\\%c", p[i++]);
		} else if (p[i] < 0x20 || p[i] == 0x7f) {
			fprintf(fp, "\\u%04x", p[i++]);
		} else {
			fwrite(p + i, 1, n, fp);
			i += n;
		}
	}
	fputc('"', fp);
	return valid;
}

void json_write_name(FILE *fp, const char *key, const char *name, size_t len)
{
	fprintf(fp, "\"%s\":", key);
	if (json_write_string(fp, name, len))
		return;
	size_t need = base64_nopad_len(len) + 1;
	char *b64 = malloc(need);
	if (!b64)
		return;
	base64_nopad((const uint8_t *)name, len, b64, need);
	fprintf(fp, ",\"%s_b64\":\"%s\"", key, b64);
	free(b64);
}

static const struct {
	int code;
	const char *symbol;
} rerr_symbols[] = {
	{ 0, "RERR_OK" },
	{ RERR_SYNTAX, "RERR_SYNTAX" },
	{ RERR_PROTOCOL, "RERR_PROTOCOL" },
	{ RERR_FILESELECT, "RERR_FILESELECT" },
	{ RERR_UNSUPPORTED, "RERR_UNSUPPORTED" },
	{ RERR_STARTCLIENT, "RERR_STARTCLIENT" },
	{ 6, "RERR_LOG_FAILURE" },
	{ RERR_SOCKETIO, "RERR_SOCKETIO" },
	{ RERR_FILEIO, "RERR_FILEIO" },
	{ RERR_STREAMIO, "RERR_STREAMIO" },
	{ RERR_MESSAGEIO, "RERR_MESSAGEIO" },
	{ RERR_IPC, "RERR_IPC" },
	{ RERR_CRASHED, "RERR_CRASHED" },
	{ RERR_TERMINATED, "RERR_TERMINATED" },
	{ RERR_SIGNAL1, "RERR_SIGNAL1" },
	{ RERR_SIGNAL, "RERR_SIGNAL" },
	{ RERR_WAITCHILD, "RERR_WAITCHILD" },
	{ RERR_MALLOC, "RERR_MALLOC" },
	{ RERR_PARTIAL, "RERR_PARTIAL" },
	{ RERR_VANISHED, "RERR_VANISHED" },
	{ RERR_DEL_LIMIT, "RERR_DEL_LIMIT" },
	{ RERR_TIMEOUT, "RERR_TIMEOUT" },
	{ RERR_CONTIMEOUT, "RERR_CONTIMEOUT" },
};

const char *json_rerr_symbol(int code)
{
	for (size_t i = 0; i < sizeof rerr_symbols / sizeof rerr_symbols[0]; i++)
		if (rerr_symbols[i].code == code)
			return rerr_symbols[i].symbol;
	return NULL;
}

void json_event_start(bool dry_run)
{
	printf("{\"event\":\"start\",\"schema\":%d,\"version\":\"%s\",\"dry_run\":%s}\n",
	       JSON_SCHEMA, FERRY_VERSION, dry_run ? "true" : "false");
	fflush(stdout);
}

void json_write_totals(FILE *fp, const struct json_totals *t)
{
	fprintf(fp,
		"\"files\":%d,\"files_transferred\":%d,\"files_created\":%d,"
		"\"files_deleted\":%d,\"total_size\":%lld,\"transferred_size\":%lld,"
		"\"literal_bytes\":%lld,\"matched_bytes\":%lld,\"bytes_sent\":%lld,"
		"\"bytes_received\":%lld",
		t->files, t->files_transferred, t->files_created, t->files_deleted,
		(long long)t->total_size, (long long)t->transferred_size,
		(long long)t->literal_bytes, (long long)t->matched_bytes,
		(long long)t->bytes_sent, (long long)t->bytes_received);
}

void json_event_end(int code, const char *text, bool dry_run, int64_t elapsed_ms,
		    const struct json_totals *totals)
{
	static const struct json_totals none;
	const char *symbol = json_rerr_symbol(code);

	flockfile(stdout);
	printf("{\"event\":\"end\",\"schema\":%d,\"exit_code\":%d,\"error\":", JSON_SCHEMA, code);
	if (symbol)
		printf("\"%s\"", symbol);
	else
		fputs("null", stdout);
	fputs(",\"error_text\":", stdout);
	if (code && text)
		json_write_string(stdout, text, strlen(text));
	else
		fputs("null", stdout);
	printf(",\"dry_run\":%s,\"elapsed_ms\":%lld,", dry_run ? "true" : "false",
	       (long long)elapsed_ms);
	json_write_totals(stdout, totals ? totals : &none);
	fputs("}\n", stdout);
	funlockfile(stdout);
	fflush(stdout);
}

void json_event_text(const char *event, const char *key, const char *name, size_t len)
{
	flockfile(stdout);
	printf("{\"event\":\"%s\",", event);
	json_write_name(stdout, key, name, len);
	fputs("}\n", stdout);
	funlockfile(stdout);
	fflush(stdout);
}

void json_msg_parse(const char *line, struct json_msg_fields *out)
{
	size_t len = strlen(line);
	const char *colon = strchr(line, ':');

	memset(out, 0, sizeof *out);
	out->errnum = -1;
	/* "ferry: [sender] ...": the role right after the program's name */
	if (colon && colon[1] == ' ' && colon[2] == '[') {
		const char *close = strchr(colon + 3, ']');
		if (close && close > colon + 3 && (size_t)(close - colon - 3) <= 16) {
			out->role = colon + 3;
			out->role_len = (size_t)(close - out->role);
		}
	}
	const char *q1 = strchr(line, '"'), *q2 = strrchr(line, '"');
	if (q1 && q2 > q1) {
		out->path = q1 + 1;
		out->path_len = (size_t)(q2 - q1 - 1);
	}
	/* " (N)" at the end: rsync's rsyserr() form */
	if (len > 3 && line[len - 1] == ')') {
		size_t i = len - 1;
		while (i > 0 && line[i - 1] >= '0' && line[i - 1] <= '9' && len - i < 6)
			i--;
		if (i >= 2 && i < len - 1 && line[i - 1] == '(' && line[i - 2] == ' ')
			out->errnum = atoi(line + i);
	}
}

#define STR_(x) #x
#define STR(x) STR_(x)

const char *json_signal_end_line(size_t *len)
{
	static const char line[] =
		"{\"event\":\"end\",\"schema\":" STR(JSON_SCHEMA) ",\"exit_code\":20,"
		"\"error\":\"RERR_SIGNAL\",\"error_text\":\"received SIGINT, SIGTERM, or "
		"SIGHUP\",\"dry_run\":null,\"elapsed_ms\":null,\"files\":null,"
		"\"files_transferred\":null,\"files_created\":null,\"files_deleted\":null,"
		"\"total_size\":null,\"transferred_size\":null,\"literal_bytes\":null,"
		"\"matched_bytes\":null,\"bytes_sent\":null,\"bytes_received\":null}\n";

	*len = sizeof line - 1;
	return line;
}
