/*
 * Pulling from an rsync daemon.
 */
#ifndef FERRY_CLIENT_PULL_H
#define FERRY_CLIENT_PULL_H

#include "proto/args/remote.h"
#include "proto/base/opts.h"

/* Pull the sources (all on the same daemon) into dest, or list them when
 * dest is NULL / --list-only. Returns rsync's exit code. */
int client_pull(const struct ferry_opts *o, const struct remote_spec *srcs, int nsrc,
		const char *dest);

/* Receive the file list and the files on a set-up session into dest (NULL:
 * list only); prints the summary. Returns the exit code. Also the body of
 * --read-batch. */
struct session;
struct filter_list;
struct names_forwarder;
struct request_check;
/* rq: the check of the sender's names (client/request_check.h), or NULL */
int pull_receive(struct session *s, const char *dest, struct filter_list *filters,
		 struct names_forwarder *fw, const struct request_check *rq, double start);

struct file_entry;
/* One --list-only line (generator.c: list_file_entry). */
void list_print_entry(const struct ferry_opts *o, const struct file_entry *f);

#endif
