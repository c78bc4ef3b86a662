/*
 * The client's side of batch mode: starting and ending the recording of a
 * transfer (--write-batch, --only-write-batch), the FILE.sh script, and
 * replaying a batch into a destination (--read-batch).
 */
#ifndef FERRY_CLIENT_BATCH_H
#define FERRY_CLIENT_BATCH_H

#include <stdbool.h>

#include "proto/base/opts.h"

struct session;

/* After the filter list, before the file list: when a batch is being
 * written, create FILE and FILE.sh and start copying the stream (the
 * output when we send, the input when we receive). True when there is no
 * batch or it started; false with the session's error set. */
bool batch_client_start(struct session *s, bool we_send);

/* At the end of the run: flush and close FILE. Returns the exit code,
 * which a failed batch write turns into rsync's file I/O error. */
int batch_client_finish(struct session *s, int code);

/* ---- batch_read.c ---- */

/* --read-batch=FILE DEST: replay FILE into DEST. Returns the exit code. */
int client_read_batch(const struct ferry_opts *o);

#endif
