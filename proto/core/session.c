/*
 * Session set-up, the handler for the peer's out-of-band messages, and the
 * exit-code rules.
 */
#include "proto/base/byteorder.h"
#include "proto/core/itemlog.h"
#include "proto/core/session.h"
#include "proto/core/msg.h"
#include "proto/base/outfilter.h"
#include "proto/core/exit_line.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The umask is the process's, and reading it means setting it for an
 * instant: two sessions starting in two threads must not read the 0 the
 * other one set. A process-wide lock, because what it guards is. */
static pthread_mutex_t umask_lock = PTHREAD_MUTEX_INITIALIZER;

static mode_t process_umask(void)
{
	pthread_mutex_lock(&umask_lock);
	mode_t bits = umask(0);
	umask(bits);
	pthread_mutex_unlock(&umask_lock);
	return bits;
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
		exit_line_peer_said(s->opts->exit_note);
	if (s->protocol >= 31)
		wire_send_msg(&s->out, MSG_ERROR_EXIT, payload, 4);
	/* The peer already printed why; exit quietly with its code. */
	return wire_fail(&s->err, code > 0 ? code : RERR_STREAMIO, " ");
}

/* A daemon's "timeout", told to its client (main.c: start_server). Only
 * a shorter one is taken, and only by a client: a value of 0 or below
 * would switch our --timeout off, one above a day is absurd (mirrors
 * rsync io.c: read_a_msg, MSG_IO_TIMEOUT). */
static bool on_io_timeout(struct session *s, struct wire_in *in, const uint8_t *payload,
			  size_t len)
{
	if (len != 4 || s->am_server)
		return wire_fail(&s->err, RERR_STREAMIO, "invalid multi-message %d:%zu [%s]",
				 MSG_IO_TIMEOUT, len, s->am_server ? "server" : "client");
	int32_t t = (int32_t)get_le32(payload);
	if (t <= 0 || t > 86400 || (in->timeout_ms && in->timeout_ms <= t * 1000))
		return true;
	if (info_ge(s->opts, INFO_MISC, 2))
		session_info(s, "Setting --timeout=%d to match server\n", t);
	in->timeout_ms = t * 1000;
	s->out.timeout_ms = t * 1000;
	return true;
}

static bool on_message(void *ctx, struct wire_in *in, int code, const uint8_t *payload, size_t len)
{
	struct session *s = ctx;

	switch (code) {
	case MSG_INFO:
	case MSG_ERROR_XFER:
	case MSG_ERROR:
	case MSG_WARNING:
		msg_from_peer(s, code, (const char *)payload, len);
		return true;
	case MSG_IO_ERROR:
		if (len != 4)
			return wire_fail(&s->err, RERR_STREAMIO, "invalid MSG_IO_ERROR");
		if (!s->opts->ignore_errors)
			session_io_error_add(s, (int)(get_le32(payload) & IOERR_VALID_MASK));
		return true;
	case MSG_IO_TIMEOUT:
		return on_io_timeout(s, in, payload, len);
	case MSG_NOOP:
		/* an old peer's keep-alive, answered by a sender (io.c) */
		return !s->am_sender || wire_keepalive(&s->out);
	case MSG_NO_SEND:
		if (len != 4)
			return wire_fail(&s->err, RERR_STREAMIO, "invalid message %d", code);
		if (s->hooks.on_no_send)
			s->hooks.on_no_send(s->hooks.on_no_send_ctx, (int32_t)get_le32(payload));
		return true;
	case MSG_SUCCESS:
		/* 4 bytes, or 20 (index, dev, inode) between local processes */
		if (len != 4 && len != 20)
			return wire_fail(&s->err, RERR_STREAMIO, "invalid message %d", code);
		if (s->hooks.on_success)
			s->hooks.on_success(s->hooks.on_success_ctx, (int32_t)get_le32(payload),
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
	s->run_start_ms = wire_now_ms();
	pthread_mutex_init(&s->cleanup_lock, NULL);
	wire_error_init(&s->err);
	wire_in_init(&s->in, fd_in, &s->err);
	wire_out_init(&s->out, fd_out, &s->err);
	s->in.on_msg = on_message;
	s->in.msg_ctx = s;
	s->in.keepalive = &s->out;
	s->in.timeout_ms = s->out.timeout_ms = opts->timeout * 1000;
	s->out.bwlimit = opts->bwlimit;
	s->err.stop_at = (time_t)opts->stop_at;
	s->module.munge_symlinks = opts->munge_links; /* a daemon's module decides for itself */
	logfile_open(s);
	s->skip_compress = opts->skip_compress;
	s->umask_bits = process_umask();
	if (opts->chmod)
		chmod_parse(&s->chmod, opts->chmod, s->umask_bits);
}

bool session_on_free(struct session *s, session_cleanup_fn fn)
{
	bool ok = true;

	pthread_mutex_lock(&s->cleanup_lock);
	unsigned i = 0;
	while (i < s->ncleanups && s->cleanups[i] != fn)
		i++;
	if (i == s->ncleanups) {
		if (i < SESSION_CLEANUPS_MAX)
			s->cleanups[s->ncleanups++] = fn;
		else
			ok = false;
	}
	pthread_mutex_unlock(&s->cleanup_lock);
	return ok;
}

void session_free(struct session *s)
{
	logfile_close(s);
	wire_in_free(&s->in);
	wire_out_free(&s->out);
	while (s->ncleanups > 0)
		s->cleanups[--s->ncleanups](s);
	free(s->fl.hl_pairs);
	chmod_free(&s->chmod); /* chmod.c is a leaf below the session */
	pthread_mutex_destroy(&s->cleanup_lock);
}

/* The five emitters of old, now thin wrappers over the one message path
 * (proto/core/msg.h): the class says where a line goes. */
static void emit_vfmt(struct session *s, enum msg_class c, const char *prefix, bool newline,
		      const char *fmt, va_list ap)
{
	char msg[MSG_PAYLOAD_MAX - 64], line[MSG_PAYLOAD_MAX];

	int n = vsnprintf(msg, sizeof msg, fmt, ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof msg)
		memcpy(msg + sizeof msg - 6, "[...]", 6);
	n = snprintf(line, sizeof line, "%s%s%s", prefix, msg, newline ? "\n" : "");
	if (n > 0)
		msg_write(s, c, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

void session_err(struct session *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit_vfmt(s, MC_ERROR, "ferry: ", true, fmt, ap);
	va_end(ap);
}

void session_err_plain(struct session *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit_vfmt(s, MC_ERROR, "", true, fmt, ap);
	va_end(ap);
}

void session_xfer_err(struct session *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit_vfmt(s, MC_ERROR_XFER, "ferry: ", true, fmt, ap);
	va_end(ap);
}

void session_xfer_err_plain(struct session *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit_vfmt(s, MC_ERROR_XFER, "", true, fmt, ap);
	va_end(ap);
}

void session_warn(struct session *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit_vfmt(s, MC_WARNING, "", false, fmt, ap);
	va_end(ap);
}

void session_info(struct session *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit_vfmt(s, MC_INFO, "", false, fmt, ap);
	va_end(ap);
}

void session_client(struct session *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit_vfmt(s, MC_CLIENT, "", false, fmt, ap);
	va_end(ap);
}

/* mirrors the io_error part of rsync cleanup.c:_exit_cleanup() */
int session_exit_code(struct session *s)
{
	int code = wire_error_code(&s->err);

	if (code)
		return code;
	/* Later checks win, as in rsync. */
	if (session_io_error(s) & IOERR_DEL_LIMIT)
		code = RERR_DEL_LIMIT;
	if (session_io_error(s) & IOERR_VANISHED)
		code = RERR_VANISHED;
	if (session_io_error(s) & IOERR_GENERAL || s->got_xfer_error)
		code = RERR_PARTIAL;
	return code;
}
