/*
 * The one message path (rsync's rwrite() in log.c). Every line ferry has
 * to say — errors, warnings, information, log-only lines, and the text a
 * peer sends in MSG_* frames — goes through msg_write, which alone decides
 * where it goes and how it is escaped:
 *
 *  - the log: --log-file (s->log_fp) and a daemon's log (s->hooks.daemon_log_line)
 *    get every class but MC_CLIENT, stamped and with control bytes shown
 *    as \#ooo (C1 controls too), one line per message;
 *  - a server with a multiplexed stream sends it to its client as the
 *    class's MSG_* (MSG_ERROR -> MSG_ERROR_XFER and MSG_WARNING -> MSG_INFO
 *    below protocol 30, as rsync does); --stderr=all on a server, or a
 *    stream not multiplexed yet, prints it on stderr instead;
 *  - otherwise errors and warnings go to stderr (s->errors when set),
 *    information to s->info,
 *    control characters (and, without -8, what the locale cannot print)
 *    shown as \#ooo; a leading '\r' and the trailing newline stay raw;
 *  - with --json a client writes each message as a "message" event on
 *    stdout as well, and information only so.
 *
 * Text is written as given: like rwrite, msg_write adds no newline (the
 * printf-style helpers below that say so do).
 */
#ifndef FERRY_MSG_H
#define FERRY_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct session;

/* rsync's log codes (enum logcode). */
enum msg_class {
	MC_ERROR,      /* FERROR: stderr, MSG_ERROR */
	MC_ERROR_XFER, /* FERROR_XFER: as MC_ERROR, and the run exits 23 */
	MC_WARNING,    /* FWARNING: stderr, MSG_WARNING */
	MC_INFO,       /* FINFO: s->info, MSG_INFO; logged */
	MC_LOG,        /* FLOG: the log only */
	MC_CLIENT,     /* FCLIENT: as MC_INFO, but never logged */
};

/* Where s prints errors and warnings: s->errors, or stderr. */
FILE *msg_err_stream(const struct session *s);

/* Route len bytes of text of class c (see above). Safe from the sender,
 * generator and receiver threads at once. */
void msg_write(struct session *s, enum msg_class c, const char *text, size_t len);

/* The text of a peer's MSG_ERROR / MSG_ERROR_XFER / MSG_WARNING / MSG_INFO
 * frame (its code is msg_code): logged and printed as msg_write does, but
 * never sent back. A closing line ("... (code N) at FILE(LINE) [ROLE=V]")
 * on stderr is remembered in s->peer_exit_line. */
void msg_from_peer(struct session *s, int msg_code, const char *text, size_t len);

/* Text of several lines (what a printer wrote into a memory stream),
 * each line its own message: blank ones as MC_CLIENT, as rsync prints
 * the blank lines of its summary, the others as c. */
void msg_write_lines(struct session *s, enum msg_class c, const char *text, size_t len);

/* printf into msg_write; the text is taken as it comes (no newline
 * added); an over-long message is cut short with "[...]". */
void msg_printf(struct session *s, enum msg_class c, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* rsync's rsyserr(): "ferry: [ROLE] TEXT: STRERROR (ERRNO)\n", role being
 * who_am_i()'s word for the thread that failed ("sender", "receiver",
 * "generator", "Receiver", "client", "server"), or NULL for none. */
void msg_syserr(struct session *s, enum msg_class c, const char *role, int err,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* rsync's full_fname(): name quoted, made absolute from dir (the directory
 * it is relative to: NULL or "" for our working directory), and followed
 * by " (in MODULE)" inside a daemon module (s->module.name). Inside a
 * module the name is shown from the module's root: "/sub/name" from a
 * directory, a name in the root as given ("/name" in a chroot). Returns
 * out. */
const char *msg_full_name(const struct session *s, const char *dir, const char *name,
			  char *out, size_t size);

#endif
