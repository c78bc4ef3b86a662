/*
 * The closing line of a failed run, as rsync's log_exit() prints it:
 * "ferry error: some files/attrs were not transferred (see previous
 * errors) (code 23) at main.c(211) [sender=0.1.0]" (a warning for code 24).
 */
#ifndef FERRY_EXIT_LINE_H
#define FERRY_EXIT_LINE_H

#include <stdbool.h>
#include <stddef.h>

/* What the run learns about its closing line besides the exit code. One
 * per client run, owned by client/main.c, which prints the line after
 * every session has ended; the engine reaches it through
 * ferry_opts.exit_note (NULL in a server or daemon, which print no such
 * line: the functions below then do nothing). */
struct exit_note {
	bool peer_said;     /* exit_line_peer_said was called */
	const char *role;   /* exit_line_set_role's word, or NULL */
};

/* rsync's description of an exit code (rerr_names[] in log.c), or NULL. */
const char *exit_code_name(int code);

/* Print the line on stderr for a non-zero code, and append it to the
 * --log-file log_file (NULL: none), unless note says the peer has
 * printed its own (note may be NULL); role (unless note names another) is who_am_i()'s word for the
 * part of the run that failed ("client", "sender", "Receiver",
 * "generator"); file and line say where ferry decided to exit. */
void exit_line_print(const struct exit_note *note, int code, const char *role, const char *file,
		     int line, const char *log_file);

/* The same line, newline included, into buf (a server sends it to its
 * client as rsync's log_exit() does); returns its length. */
size_t exit_line_format(char *buf, size_t size, int code, const char *role, const char *file,
			int line);

/* The peer ended the run with its own closing line and MSG_ERROR_EXIT:
 * rsync then says nothing more (io.c: _exit_cleanup with a negative
 * line), so exit_line_print stays silent for this note. */
void exit_line_peer_said(struct exit_note *note);

/* The part of the run that ended it, when the caller's guess is wrong: a
 * pull whose file list is empty ends before rsync forks its generator,
 * as "Receiver" (main.c: client_run). */
void exit_line_set_role(struct exit_note *note, const char *role);

#endif
