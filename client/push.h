/*
 * Pushing to an rsync daemon.
 */
#ifndef FERRY_CLIENT_PUSH_H
#define FERRY_CLIENT_PUSH_H

#include "proto/args/remote.h"
#include "proto/base/opts.h"

/* Send the local sources to the daemon destination. Returns rsync's exit
 * code. */
int client_push(const struct ferry_opts *o, char **srcs, int nsrc, const struct remote_spec *dest);

/* The sending half of a push on a session that is set up (multiplexing
 * on): filter list, file list, data, summary. Returns the exit code. */
struct session;
struct filter_list;
#include <time.h>
int push_run(struct session *s, char **srcs, int nsrc, struct filter_list *filters, time_t start);

#endif
