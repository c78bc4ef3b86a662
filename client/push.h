/*
 * Pushing to an rsync daemon.
 */
#ifndef FERRY_CLIENT_PUSH_H
#define FERRY_CLIENT_PUSH_H

#include "client/remote.h"
#include "proto/opts.h"

/* Send the local sources to the daemon destination. Returns rsync's exit
 * code. */
int client_push(const struct ferry_opts *o, char **srcs, int nsrc, const struct remote_spec *dest);

#endif
