/*
 * Local copies: no host on either side.
 */
#ifndef FERRY_CLIENT_LOCAL_H
#define FERRY_CLIENT_LOCAL_H

#include "proto/base/opts.h"

/* Copy the local sources to dest. Returns rsync's exit code. */
int client_local(const struct ferry_opts *o, char **srcs, int nsrc, const char *dest);

/* The two halves of a local copy, each on one end of a connected socket
 * pair: client_local runs the receiving half in a child process, the
 * in-process engine tests (tests/unit/engine_harness.c) in a thread. */
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include "proto/core/session.h"

struct filter_list;

/* What a half leaves behind when it ends. */
struct local_half_result {
	struct stats stats;
	int protocol;         /* negotiated */
	bool inc_recurse;     /* the list went in incremental parts */
	int compress;         /* CPRES_* in use, 0 = none */
};

/* Where a half's output goes (NULL fields: its usual streams, stdout or
 * stderr), and where its result is copied (NULL: nowhere). */
struct local_half_io {
	FILE *info;           /* information (s->info) */
	FILE *errors;         /* errors and warnings (s->errors) */
	struct local_half_result *result;
};

/* The receiving half: the user's options as rsync's local child takes
 * them (-M options parsed over them, --whole-file by default, ...), then
 * the server's receiving side into dest on fd. io may be NULL. Returns
 * its exit code. */
int local_receiver_half(const struct ferry_opts *o, int fd, const char *dest,
			const struct local_half_io *io);

/* The sending half: negotiates as the client on fd, then sends srcs with
 * filters (the user's rules, filter_list_from_opts) and prints the
 * summary; start is the run's start for it. io may be NULL. Returns its
 * exit code, before local_exit_code. */
int local_sender_half(const struct ferry_opts *o, int fd, char **srcs, int nsrc,
		      struct filter_list *filters, time_t start, const struct local_half_io *io);

/* The local copy's exit code from its two halves' codes. */
int local_exit_code(int sender, int receiver);

/* List local sources (a lone local source argument). */
int client_local_list(const struct ferry_opts *o, char **srcs, int nsrc);

#endif
