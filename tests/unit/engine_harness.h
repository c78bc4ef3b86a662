/*
 * The transfer engine in one test process: a local copy (`ferry OPTS SRC
 * DST`) whose two halves run as threads over a socket pair, each set up by
 * the entry points ferry itself uses (options_parse, then
 * client/local.c: local_sender_half — negotiation as the client, file
 * list, sender — and local_receiver_half — server_run's receiving side,
 * generator and receiver). Each half's information and error output is
 * captured in memory; its statistics and negotiated facts are kept.
 *
 * The files live in a mkdtemp directory: ROOT/src and ROOT/dst.
 *
 * Not captured: what the client writes to stdout itself rather than
 * through the message path ("sending incremental file list" with -v,
 * --progress, --json), and the closing "ferry error: ... (code N)" line,
 * which client/main.c prints after the run (r->code says which). The
 * halves share the process's cwd and umask; paths are best absolute.
 */
#ifndef FERRY_TESTS_ENGINE_HARNESS_H
#define FERRY_TESTS_ENGINE_HARNESS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "client/local.h"

struct eh_env {
	char root[PATH_MAX / 2]; /* the mkdtemp directory */
	char src[PATH_MAX / 2 + 8]; /* ROOT/src, made empty */
	char dst[PATH_MAX / 2 + 8]; /* ROOT/dst, not made */
};

/* What one transfer did. The texts are NUL-terminated, never NULL. */
struct eh_run {
	int code;             /* the local copy's exit code (local_exit_code) */
	int send_code, recv_code; /* each half's own */
	struct local_half_result sender, receiver;
	char *send_info, *send_errors; /* the sending (client) half's output:
				* where the receiver's itemize lines and
				* messages arrive, as on a terminal */
	char *recv_info, *recv_errors; /* the receiving half's own output */
};

/* Flags of eh_transfer. */
/* The receiving half's threads run as "nobody" (uid and gid 65534) when
 * the tests run as root, so that a read-only directory refuses their
 * writes as it would an unprivileged user's. Without root: no change. */
#define EH_RECV_UNPRIVILEGED 0x1

/* Make the directories (ROOT/src empty, ROOT/dst absent). 0 or -1. */
int eh_env_init(struct eh_env *e);
/* Remove ROOT and everything under it, read-only directories too. */
void eh_env_free(struct eh_env *e);

/* ROOT/rel, or ROOT itself for "". Returns out. */
const char *eh_path(const struct eh_env *e, const char *rel, char *out, size_t size);

/* Run `ferry opts... src dst` (opts NULL-terminated; src and dst as the
 * user would write them, e.g. with a trailing slash) as two threads.
 * Several runs may go at once from several threads (no -M options: the
 * receiving half would parse them again, unlocked); it uses no cmocka
 * assertion, which only the test's own thread may make. 0
 * when the run was carried out (whatever its exit code, in r->code); -1
 * when the harness itself failed (options refused, no threads). */
int eh_transfer(struct eh_run *r, const char *const *opts, const char *src, const char *dst,
		unsigned flags);
/* eh_transfer of "ROOT/src/" to "ROOT/dst/". */
int eh_sync(struct eh_run *r, const struct eh_env *e, const char *const *opts, unsigned flags);
void eh_run_free(struct eh_run *r);

/* Files, by path under ROOT. Each fails the test on an error. */
void eh_mkdir(const struct eh_env *e, const char *rel, mode_t mode);
/* Write len bytes (mode, then mtime in seconds, set after). */
void eh_write(const struct eh_env *e, const char *rel, const void *data, size_t len,
	      mode_t mode, time_t mtime);
/* Set the mtime of ROOT/rel (a symlink's own). */
void eh_touch(const struct eh_env *e, const char *rel, time_t mtime);
/* ROOT/rel as a symlink to target. */
void eh_symlink(const struct eh_env *e, const char *target, const char *rel);
/* A file of len pseudo-random bytes from seed. */
void eh_write_random(const struct eh_env *e, const char *rel, size_t len, uint32_t seed,
		     time_t mtime);
/* The file's bytes (malloc'd, NUL added, *len its length). */
char *eh_read(const struct eh_env *e, const char *rel, size_t *len);
/* Do the two files hold the same bytes? */
bool eh_same_content(const struct eh_env *e, const char *rel_a, const char *rel_b);
/* lstat of ROOT/rel; false when it does not exist. */
bool eh_lstat(const struct eh_env *e, const char *rel, struct stat *st);

/* Is line one whole line of text? */
bool eh_has_line(const char *text, const char *line);

#endif
