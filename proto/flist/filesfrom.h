/*
 * --files-from: reading the list of names to send, from a local file (or
 * stdin) or from the peer's socket, and forwarding a local list to a
 * sending peer while the file list comes back (rsync io.c: read_line,
 * forward_filesfrom_data, start_filesfrom_forwarding).
 */
#ifndef FERRY_FILESFROM_H
#define FERRY_FILESFROM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct session;
struct wire_in;

/* Where the sender's names come from. */
struct names_source {
	int fd;               /* a local list (file or stdin), or -1 */
	struct wire_in *in;   /* the peer, when fd < 0: NUL-terminated names,
			       * an empty one ends the list */
	bool from0;           /* a local list is NUL-separated (--from0) */
	unsigned char buf[16384];
	size_t pos, end;
	bool eof;
};

/* A local list: fd is owned by the caller. Comments ('#', ';') and blank
 * lines are skipped, as rsync does for a list it opens itself. */
void names_from_fd(struct names_source *ns, int fd, bool from0);
/* The peer sends the list (--files-from=- on a server, or a list on the
 * remote host for a sending client). */
void names_from_peer(struct names_source *ns, struct wire_in *in);

/* The next name into out (cut to size - 1 bytes, as rsync's read_line
 * does). Returns 1 for a name, 0 at the end of the list, -1 on a read
 * error (errno set for a local list; the session error for the peer). */
int names_next(struct names_source *ns, char *out, size_t size);

/* Make a listed name (or a list's own path on a daemon) relative and
 * unable to climb: leading slashes and ".." that would go above the start
 * are dropped, "." dirs too unless keep_dots (-R keeps them).
 * mirrors rsync util1.c:sanitize_path() */
void names_sanitize(char *p, bool keep_dots);
void path_sanitize(char *p, int depth, bool keep_dots);

/* Open the --files-from FILE a server was told to read, or "-" for stdin
 * on a client; FILE is an operator path (oppath.h: insecure is
 * --insecure-links) that must resolve inside confine_fd, --confine-root,
 * unless that is -1. Returns the fd or -1 with errno. */
int names_open_local(const char *path, bool insecure, int confine_fd);

/* Forwarding a local list to the sending peer: a thread reads src_fd and
 * writes the names NUL-terminated to the session's output (in MSG_DATA
 * frames from protocol 31, raw before that) until the end marker. */
struct names_forwarder {
	pthread_t thread;
	bool running;
	struct session *s;
	int src_fd;
	bool from0;
	bool raw;             /* protocol < 31: not framed */
	bool saved_mux;
	atomic_bool stop;
	bool failed;
	char why[256];
	unsigned char frame[4 + 8192]; /* the thread's read buffer: a frame */
};

/* Start forwarding (the output is flushed first). False if the thread
 * could not be started (the session error says why). */
bool names_forward_start(struct names_forwarder *f, struct session *s, int src_fd, bool from0);
/* Wait for the forwarder; with abandon (the file list failed) stop it
 * first. Restores the output's framing. False if forwarding failed. */
bool names_forward_finish(struct names_forwarder *f, bool abandon);

#endif
