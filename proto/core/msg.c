/*
 * The one message path (see msg.h): routing and escaping of every line,
 * decided here and nowhere else.
 */
#include "proto/core/msg.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "proto/base/json.h"
#include "proto/base/outfilter.h"
#include "proto/core/progress.h"
#include "proto/core/session.h"

/* The MSG_* frame a server sends for a class (rsync's log codes are the
 * message codes), downgraded for protocols before 30 as rsync does. */
static int peer_code(const struct session *s, enum msg_class c)
{
	switch (c) {
	case MC_ERROR:
		return s->protocol < 30 ? MSG_ERROR_XFER : MSG_ERROR;
	case MC_ERROR_XFER:
		return MSG_ERROR_XFER;
	case MC_WARNING:
		return s->protocol < 30 ? MSG_INFO : MSG_WARNING;
	default:
		return MSG_INFO;
	}
}

/* text without its trailing newlines, cut to MSG_PAYLOAD_MAX, into line
 * (MSG_PAYLOAD_MAX + 1 bytes); returns its length. */
static size_t trimmed_copy(char *line, const char *text, size_t len)
{
	if (len > MSG_PAYLOAD_MAX)
		len = MSG_PAYLOAD_MAX;
	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r'))
		len--;
	memcpy(line, text, len);
	line[len] = '\0';
	return len;
}

static bool is_error_class(enum msg_class c)
{
	return c == MC_ERROR || c == MC_ERROR_XFER || c == MC_WARNING;
}

/* The log line: the text without its trailing newline, escaped by
 * logfile_write (--log-file) and by the daemon's log writer. */
static void log_text(struct session *s, const char *text, size_t len, bool to_log_file)
{
	char line[MSG_PAYLOAD_MAX + 1];

	trimmed_copy(line, text, len);
	if (to_log_file)
		logfile_write(s, "%s", line);
	if (s->hooks.daemon_log_line)
		s->hooks.daemon_log_line(s->hooks.daemon_log_ctx, line);
}

/* The text on our own terminal, as rwrite prints it: first what stdout
 * holds when this goes elsewhere, the newline a "building file list ... "
 * still waits for, a leading '\r' raw, the body escaped, the trailing
 * newline raw. */
static void print_local(struct session *s, FILE *fp, const char *text, size_t len,
			bool from_peer)
{
	char body[MSG_PAYLOAD_MAX + 1];
	char end = '\0';

	if (len > MSG_PAYLOAD_MAX)
		len = MSG_PAYLOAD_MAX;
	if (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r'))
		end = text[--len];
	if (from_peer) {
		/* a peer's line gets one newline, whatever it sent */
		len = trimmed_copy(body, text, len);
		end = '\n';
	} else {
		memcpy(body, text, len);
		body[len] = '\0';
	}
	if (fp != stdout)
		fflush(stdout);
	flockfile(fp);
	if (s->output_needs_newline) {
		fputc('\n', fp);
		s->output_needs_newline = false;
	}
	const char *p = body;
	if (*p == '\r')
		fputc(*p++, fp);
	out_filtered(fp, p, s->opts->eight_bit_output, end);
	funlockfile(fp);
	if (end)
		fflush(fp);
}

/* --json on the client: each message is an event on stdout as well, and
 * information goes there only as events, so stdout stays JSON lines. */
static bool json_event(struct session *s, enum msg_class c, const char *text, size_t len)
{
	char line[MSG_PAYLOAD_MAX + 1];

	if (s->am_server || !s->opts->json)
		return false;
	static const char created[] = "created directory ";
	size_t n = trimmed_copy(line, text, len);
	/* the receiver's (server.c) line, as its own event */
	if (c == MC_INFO && n > sizeof created - 1 && memcmp(line, created, sizeof created - 1) == 0)
		json_event_text("created_directory", "name", line + sizeof created - 1,
				n - (sizeof created - 1));
	else if (n > 0)
		progress_json_message(s, c == MC_WARNING ? "warning"
				      : is_error_class(c) ? "error"
							  : "info", line);
	return !is_error_class(c);
}

/* A peer's closing line, "... (code N) at FILE(LINE) [ROLE=VERSION]":
 * rsync then prints none of its own. */
static bool is_exit_line(const char *text, size_t len)
{
	char line[MSG_PAYLOAD_MAX + 1];

	len = trimmed_copy(line, text, len);
	const char *at = strstr(line, " (code ");
	return at && strstr(at, ") at ") && len > 0 && line[len - 1] == ']';
}

FILE *msg_err_stream(const struct session *s)
{
	return s->errors ? s->errors : stderr;
}

static FILE *local_stream(const struct session *s, enum msg_class c)
{
	if (is_error_class(c) || (s->am_server && s->opts->msgs2stderr))
		return msg_err_stream(s);
	return s->info;
}

void msg_write(struct session *s, enum msg_class c, const char *text, size_t len)
{
	bool to_peer = s->am_server && !s->opts->msgs2stderr && s->out.mux;

	if (c == MC_ERROR_XFER)
		s->got_xfer_error = true;
	/* the receiving half of a local copy leaves its --log-file lines to
	 * the client half, which logs what it hears (pipe.c: local_child) */
	if (c != MC_CLIENT)
		log_text(s, text, len, !(to_peer && s->local_copy));
	if (c == MC_LOG)
		return;
	if (to_peer) {
		/* the client prints what its server has to say, ahead of the
		 * data still buffered, as rsync's msg buffer goes out before
		 * its data: a -vv "X is uptodate" precedes the name of an
		 * earlier file whose request waits in the buffer */
		wire_send_msg_ahead(&s->out, peer_code(s, c), text, len);
		return;
	}
	if (json_event(s, c, text, len))
		return;
	print_local(s, s->am_server ? msg_err_stream(s) : local_stream(s, c), text, len, false);
}

void msg_write_lines(struct session *s, enum msg_class c, const char *text, size_t len)
{
	while (len > 0) {
		const char *nl = memchr(text, '\n', len);
		size_t n = nl ? (size_t)(nl - text) + 1 : len;
		msg_write(s, n == 1 && nl ? MC_CLIENT : c, text, n);
		text += n;
		len -= n;
	}
}

void msg_from_peer(struct session *s, int msg_code, const char *text, size_t len)
{
	enum msg_class c = msg_code == MSG_ERROR_XFER ? MC_ERROR_XFER
			   : msg_code == MSG_ERROR    ? MC_ERROR
			   : msg_code == MSG_WARNING  ? MC_WARNING
						      : MC_INFO;

	if (c == MC_ERROR_XFER)
		s->got_xfer_error = true;
	log_text(s, text, len, true);
	if (c == MC_INFO && s->opts->quiet && !s->am_server)
		return;
	if (is_error_class(c))
		s->peer_exit_line = is_exit_line(text, len);
	if (json_event(s, c, text, len))
		return;
	print_local(s, is_error_class(c) ? msg_err_stream(s) : s->info, text, len, true);
}

/* vsnprintf, an over-long text cut short with "[...]" (and its newline
 * kept) as rsync's rprintf does. Returns the length. */
static size_t format_text(char *buf, size_t size, const char *fmt, va_list ap)
{
	static const char ellipsis[] = "[...]";
	int n = vsnprintf(buf, size, fmt, ap);

	if (n < 0)
		return 0;
	if ((size_t)n < size)
		return (size_t)n;
	size_t len = size - 1;
	memcpy(buf + len - sizeof ellipsis, ellipsis, sizeof ellipsis);
	if (fmt[0] && fmt[strlen(fmt) - 1] == '\n')
		buf[len - 1] = '\n';
	return strlen(buf);
}

void msg_printf(struct session *s, enum msg_class c, const char *fmt, ...)
{
	char buf[MSG_PAYLOAD_MAX];
	va_list ap;

	va_start(ap, fmt);
	size_t len = format_text(buf, sizeof buf, fmt, ap);
	va_end(ap);
	msg_write(s, c, buf, len);
}

void msg_syserr(struct session *s, enum msg_class c, const char *role, int err,
		const char *fmt, ...)
{
	char buf[MSG_PAYLOAD_MAX], what[MSG_PAYLOAD_MAX - 200];
	va_list ap;

	va_start(ap, fmt);
	format_text(what, sizeof what, fmt, ap);
	va_end(ap);
	int n = snprintf(buf, sizeof buf, "ferry: %s%s%s%s: %s (%d)\n", role ? "[" : "",
			 role ? role : "", role ? "] " : "", what, strerror(err), err);
	if (n < 0)
		return;
	msg_write(s, c, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* Resolve "." and ".." in the path a/b/c into out as change_dir() leaves
 * rsync's curr_dir: "/" for nothing left. */
static void clean_join(const char *head, const char *dir, const char *name, char *out,
		       size_t size)
{
	char buf[3 * PATH_MAX + 3], full[PATH_MAX];
	size_t n = 0;

	snprintf(buf, sizeof buf, "%s/%s/%s", head, dir, name);
	for (char *save = NULL, *tok = strtok_r(buf, "/", &save); tok;
	     tok = strtok_r(NULL, "/", &save)) {
		if (strcmp(tok, ".") == 0)
			continue;
		if (strcmp(tok, "..") == 0) {
			while (n > 0 && full[--n] != '/')
				;
			continue;
		}
		size_t len = strlen(tok);
		if (n + 1 + len >= sizeof full)
			break;
		full[n++] = '/';
		memcpy(full + n, tok, len);
		n += len;
	}
	full[n] = '\0';
	snprintf(out, size, "%s", n ? full : "/");
}

/* rsync names a directory it works on through its "." as such: keep it. */
static void keep_dot(const char *name, char *path, size_t size)
{
	size_t n = strlen(name), p = strlen(path);

	if (!(n == 1 && name[0] == '.') && !(n >= 2 && strcmp(name + n - 2, "/.") == 0))
		return;
	snprintf(path + p, size - p, "%s", p && path[p - 1] == '/' ? "." : "/.");
}

const char *msg_full_name(const struct session *s, const char *dir, const char *name,
			  char *out, size_t size)
{
	char cwd[PATH_MAX], path[PATH_MAX];
	const char *d = dir ? dir : "";

	if (s->module.name) {
		/* a module's names start at its root (rsync: curr_dir past
		 * module_dirlen); a name in the root itself as given, after
		 * the "/" that is the root of a chroot */
		if (*d && strcmp(d, ".") != 0) {
			clean_join("", d, name, path, sizeof path);
			keep_dot(name, path, sizeof path);
		} else {
			snprintf(path, sizeof path, "%s%s",
				 s->module.chrooted && *name != '/' ? "/" : "", name);
		}
		snprintf(out, size, "\"%s\" (in %s)", path, s->module.name);
		return out;
	}
	if (*d == '/' || (!*d && *name == '/'))
		*cwd = '\0';
	else if (!getcwd(cwd, sizeof cwd))
		snprintf(cwd, sizeof cwd, ".");
	clean_join(cwd, d, name, path, sizeof path);
	keep_dot(name, path, sizeof path);
	snprintf(out, size, "\"%s\"", path);
	return out;
}
