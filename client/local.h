/*
 * Local copies: no host on either side.
 */
#ifndef FERRY_CLIENT_LOCAL_H
#define FERRY_CLIENT_LOCAL_H

#include "proto/opts.h"

/* Copy the local sources to dest. Returns rsync's exit code. */
int client_local(const struct ferry_opts *o, char **srcs, int nsrc, const char *dest);

/* List local sources (a lone local source argument). */
int client_local_list(const struct ferry_opts *o, char **srcs, int nsrc);

#endif
