/*
 * Session set-up, the handler for the peer's out-of-band messages, and the
 * exit-code rules.
 */
#include "proto/acls.h"
#include "proto/xattrs.h"
#include "proto/session.h"
#include "proto/outfilter.h"
#include "proto/filter.h"
#include "client/exit_line.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* Print the peer's text as it came; it normally ends in a newline. */
/* Before a line of ours: what stdout holds goes first, and a "building
 * file list ... " still waiting for its "done" gets its newline on the
 * stream this line goes to (log.c: rwrite's output_needs_newline). */
static void line_start(struct session *s, FILE *fp)
{
	if (fp != stdout)
		fflush(stdout);
	if (s->output_needs_newline) {
		fputc('\n', fp);
		s->output_needs_newline = false;
	}
}

/* Print the peer's text as rsync's rwrite() does: control characters
 * (a hostile peer's terminal escapes) shown as \#ooo, one newline at the
 * end. */
static void print_peer_text(struct session *s, FILE *fp, const uint8_t *payload, size_t len)
{
	char text[MSG_PAYLOAD_MAX + 1];

	if (len > MSG_PAYLOAD_MAX)
		len = MSG_PAYLOAD_MAX;
	memcpy(text, payload, len);
	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r'))
		len--;
	text[len] = '\0';
	line_start(s, fp);
	if (fp == stderr) {
		/* a closing line, "... (code N) at FILE(LINE) [ROLE=VERSION]" */
		const char *at = strstr(text, " (code ");
		s->peer_exit_line = at && strstr(at, ") at ") && len > 0 && text[len - 1] == ']';
	}
	out_filtered(fp, text, s->opts->eight_bit_output, '\n');
	fflush(fp);
}

static bool on_error_exit(struct session *s, const uint8_t *payload, size_t len)
{
	int32_t code;

	if (len == 0) {
		/* The peer acknowledges our error exit; nothing more to say. */
		return wire_fail(&s->err, s->peer_exit_code ? s->peer_exit_code : RERR_STREAMIO, " ");
	}
	if (len != 4)
		return wire_fail(&s->err, RERR_STREAMIO, "invalid MSG_ERROR_EXIT of %zu bytes", len);
	code = (int32_t)get_le32(payload);
	s->peer_exit_code = code;
	if (s->peer_exit_line && !s->am_server)
		exit_line_peer_said();
	if (s->protocol >= 31)
		wire_send_msg(&s->out, MSG_ERROR_EXIT, payload, 4);
	/* The peer already printed why; exit quietly with its code. */
	return wire_fail(&s->err, code > 0 ? code : RERR_STREAMIO, " ");
}

static uint64_t get_le64(const uint8_t *p)
{
	return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

static bool on_message(void *ctx, struct wire_in *in, int code, const uint8_t *payload, size_t len)
{
	struct session *s = ctx;

	switch (code) {
	case MSG_INFO:
		if (!s->opts->quiet || s->am_server)
			print_peer_text(s, s->info, payload, len);
		return true;
	case MSG_ERROR_XFER:
		s->got_xfer_error = true;
		print_peer_text(s, stderr, payload, len);
		return true;
	case MSG_ERROR:
	case MSG_WARNING:
		print_peer_text(s, stderr, payload, len);
		return true;
	case MSG_IO_ERROR:
		if (len != 4)
			return wire_fail(&s->err, RERR_STREAMIO, "invalid MSG_IO_ERROR");
		if (!s->opts->ignore_errors)
			s->io_error |= (int)(get_le32(payload) & IOERR_VALID_MASK);
		return true;
	case MSG_IO_TIMEOUT:
		if (len != 4)
			return wire_fail(&s->err, RERR_STREAMIO, "invalid MSG_IO_TIMEOUT");
		{
			int32_t t = (int32_t)get_le32(payload);
			if (t > 0 && t <= 86400 &&
			    (in->timeout_ms == 0 || t * 1000 < in->timeout_ms)) {
				in->timeout_ms = t * 1000;
				s->out.timeout_ms = t * 1000;
			}
		}
		return true;
	case MSG_NOOP:
		return true;
	case MSG_NO_SEND:
		if (len != 4)
			return wire_fail(&s->err, RERR_STREAMIO, "invalid message %d", code);
		if (s->on_no_send)
			s->on_no_send(s->on_no_send_ctx, (int32_t)get_le32(payload));
		return true;
	case MSG_SUCCESS:
		/* 4 bytes, or 20 (index, dev, inode) between local processes */
		if (len != 4 && len != 20)
			return wire_fail(&s->err, RERR_STREAMIO, "invalid message %d", code);
		if (s->on_success)
			s->on_success(s->on_success_ctx, (int32_t)get_le32(payload),
				      len == 20 ? (int64_t)get_le64(payload + 4) : 0,
				      len == 20 ? (int64_t)get_le64(payload + 12) : 0);
		return true;
	case MSG_DELETED:
		{
			char name[MSG_PAYLOAD_MAX + 1];
			bool dir = len > 0 && payload[len - 1] == '\0';
			size_t n = dir ? len - 1 : len;
			memcpy(name, payload, n);
			name[n] = '\0';
			session_log_delete(s, name, dir ? S_IFDIR : S_IFREG);
		}
		return true;
	case MSG_ERROR_EXIT:
		return on_error_exit(s, payload, len);
	default:
		return wire_fail(&s->err, RERR_STREAMIO, "unexpected tag %d", code);
	}
}

void session_set_privilege(struct session *s)
{
	/* rsync's am_root: --fake-super (-1) counts as root wherever owners
	 * are decided, but the attributes go to user.rsync.%stat. */
	switch (s->opts->super_mode) {
	case SUPER_ON: s->am_root = true; break;
	case SUPER_OFF: s->am_root = false; break;
	case SUPER_FAKE: s->am_root = true; break;
	default: s->am_root = geteuid() == 0; break;
	}
	s->fake_super = s->opts->super_mode == SUPER_FAKE;
}

void session_init(struct session *s, const struct ferry_opts *opts, int fd_in, int fd_out)
{
	memset(s, 0, sizeof *s);
	s->opts = opts;
	s->protocol = PROTOCOL_NEWEST;
	s->xfer_csum = CSUM_MD5;
	s->flist_csum = CSUM_MD5;
	session_set_privilege(s);
	s->namecvt_req_fd = s->namecvt_ans_fd = -1;
	s->info = stdout;
	wire_error_init(&s->err);
	wire_in_init(&s->in, fd_in, &s->err);
	wire_out_init(&s->out, fd_out, &s->err);
	s->in.on_msg = on_message;
	s->in.msg_ctx = s;
	s->in.timeout_ms = s->out.timeout_ms = opts->timeout * 1000;
	s->out.bwlimit = opts->bwlimit;
	s->err.stop_at = (time_t)opts->stop_at;
	s->munge_symlinks = opts->munge_links; /* a daemon's module decides for itself */
	logfile_open(s);
	s->skip_compress = opts->skip_compress;
	if (opts->chmod) {
		mode_t um = umask(0);
		umask(um);
		chmod_parse(&s->chmod, opts->chmod, um);
	}
}

void session_free(struct session *s)
{
	logfile_close(s);
	wire_in_free(&s->in);
	wire_out_free(&s->out);
	id_map_free(&s->uids);
	id_map_free(&s->gids);
	free(s->fl.hl_pairs);
	chmod_free(&s->chmod);
	acl_state_free(s);
	xattr_state_free(s);
}

/* --stderr=all (rsync's msgs2stderr == 1) on a server: every message goes
 * to our own stderr instead of over the connection (log.c: rwrite). A
 * daemon never has it: its stderr leads nowhere (the daemon clears it). */
static bool server_msgs_to_stderr(const struct session *s)
{
	return s->am_server && s->opts->msgs2stderr;
}

static void err_vfmt(struct session *s, const char *prefix, const char *fmt, va_list ap)
{
	char msg[1100];

	int n = vsnprintf(msg, sizeof msg - 1, fmt, ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof msg - 2)
		n = (int)sizeof msg - 2;
	if (s->am_server && s->out.mux && !server_msgs_to_stderr(s)) {
		/* The client prints what the server has to say. */
		char line[1200];
		int m = snprintf(line, sizeof line, "%s%s\n", prefix, msg);
		wire_send_msg(&s->out, MSG_ERROR, line, (size_t)m);
		return;
	}
	line_start(s, stderr);
	fprintf(stderr, "%s%s\n", prefix, msg);
	logfile_write(s, "%s%s", prefix, msg);
}

void session_err(struct session *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_vfmt(s, "ferry: ", fmt, ap);
	va_end(ap);
}

void session_err_plain(struct session *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_vfmt(s, "", fmt, ap);
	va_end(ap);
}

static void xfer_err(struct session *s, const char *prefix, const char *msg)
{
	s->got_xfer_error = true;
	if (s->am_server && s->out.mux && !server_msgs_to_stderr(s)) {
		/* MSG_ERROR_XFER: the client counts it for its exit code 23
		 * (log.c: rwrite). */
		char line[1200];
		int m = snprintf(line, sizeof line, "%s%s\n", prefix, msg);
		wire_send_msg(&s->out, MSG_ERROR_XFER, line, (size_t)m);
		return;
	}
	line_start(s, stderr);
	fprintf(stderr, "%s%s\n", prefix, msg);
	logfile_write(s, "%s%s", prefix, msg);
}

static void xfer_err_fmt(struct session *s, const char *prefix, const char *fmt, va_list ap)
{
	char msg[1100];

	if (vsnprintf(msg, sizeof msg - 1, fmt, ap) >= 0)
		xfer_err(s, prefix, msg);
}

void session_xfer_err(struct session *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	xfer_err_fmt(s, "ferry: ", fmt, ap);
	va_end(ap);
}

void session_xfer_err_plain(struct session *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	xfer_err_fmt(s, "", fmt, ap);
	va_end(ap);
}

void session_warn(struct session *s, const char *fmt, ...)
{
	char msg[1100];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof msg)
		n = (int)sizeof msg - 1;
	if (s->am_server && !server_msgs_to_stderr(s)) {
		if (s->out.mux)
			wire_send_msg(&s->out, MSG_WARNING, msg, (size_t)n);
		return;
	}
	line_start(s, stderr);
	fwrite(msg, 1, (size_t)n, stderr);
	logfile_write(s, "%.*s", (int)(n && msg[n - 1] == '\n' ? n - 1 : n), msg);
}

static void report_filter_line(void *ctx, const char *line)
{
	session_info(ctx, "%s", line);
}

void session_watch_filters(struct session *s, struct filter_list *fl)
{
	if (!debug_ge(s->opts, DEBUG_FILTER, 1))
		return;
	fl->report = report_filter_line;
	fl->report_ctx = s;
}

void session_info(struct session *s, const char *fmt, ...)
{
	char msg[1100];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof msg)
		n = (int)sizeof msg - 1;
	if (s->am_server && !server_msgs_to_stderr(s)) {
		if (s->out.mux)
			wire_send_msg(&s->out, MSG_INFO, msg, (size_t)n);
		return;
	}
	FILE *fp = server_msgs_to_stderr(s) ? stderr : s->info;
	line_start(s, fp);
	fwrite(msg, 1, (size_t)n, fp);
}

/* mirrors the io_error part of rsync cleanup.c:_exit_cleanup() */
int session_exit_code(struct session *s)
{
	int code = wire_error_code(&s->err);

	if (code)
		return code;
	/* Later checks win, as in rsync. */
	if (s->io_error & IOERR_DEL_LIMIT)
		code = RERR_DEL_LIMIT;
	if (s->io_error & IOERR_VANISHED)
		code = RERR_VANISHED;
	if (s->io_error & IOERR_GENERAL || s->got_xfer_error)
		code = RERR_PARTIAL;
	return code;
}
