/*
 * Batch mode (rsync batch.c, io.c: start_write_batch): --write-batch FILE
 * records the sender-to-receiver half of a transfer so that --read-batch
 * FILE can replay it on other copies of the same destination.
 *
 * The file is rsync's format, byte for byte:
 *   int32  stream flags: the options that change the stream (BATCH_F_*)
 *   int32  protocol version
 *   varint compat flags (protocol >= 30)
 *   int32  checksum seed
 *   then every data byte the receiver read (or the sender wrote), without
 *   the multiplex framing: the file list, the sender's per-file replies
 *   (index, item flags, sum head, tokens, file sum), the phase ends, the
 *   sender's statistics and the final NDX_DONE.
 * Beside it FILE.sh: a shell command that replays it (write_batch_shell_file).
 */
#ifndef FERRY_BATCH_H
#define FERRY_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/base/opts.h"
#include "proto/base/wire.h"

/* Bits of the stream-flags word (batch.c: flag_ptr[]). */
#define BATCH_F_RECURSE (1 << 0)
#define BATCH_F_OWNER (1 << 1)
#define BATCH_F_GROUP (1 << 2)
#define BATCH_F_LINKS (1 << 3)
#define BATCH_F_DEVICES (1 << 4)
#define BATCH_F_HARD_LINKS (1 << 5)
#define BATCH_F_CHECKSUM (1 << 6)
#define BATCH_F_DIRS (1 << 7)          /* protocol >= 29 */
#define BATCH_F_COMPRESS (1 << 8)      /* protocol >= 29 */
#define BATCH_F_ICONV (1 << 9)         /* protocol >= 30 */
#define BATCH_F_ACLS (1 << 10)
#define BATCH_F_XATTRS (1 << 11)
#define BATCH_F_INPLACE (1 << 12)
#define BATCH_F_APPEND (1 << 13)
#define BATCH_F_APPEND_VERIFY (1 << 14)

/* rsync options.c: MAX_BATCH_NAME_LEN */
#define BATCH_NAME_MAX 256

/* A buffered copy of a stream into the batch file. */
struct batch_tee {
	int fd;
	struct wire_error *err;  /* the session's: a write failure ends it */
	const char *name;
	uint8_t buf[64 * 1024];
	size_t len;
};

struct session;

/* Are files transferred? Not in a dry run, but --only-write-batch (which
 * implies one) still moves the data (rsync's do_xfers). */
static inline bool batch_do_xfers(const struct ferry_opts *o)
{
	return !o->dry_run || o->write_batch < 0;
}

/* The stream flags for these options, `compressed` telling whether the
 * file data is compressed (batch.c: write_stream_flags). */
int32_t batch_stream_flags(const struct ferry_opts *o, bool compressed);

/* Client, --write-batch/--only-write-batch, after the protocol set-up and
 * the filter list: create FILE and FILE.sh, write the header, and from now
 * on copy the input (we receive) or the output (we send) into FILE.
 * False (with the session's error set) when FILE cannot be written. */
bool batch_start(struct session *s, bool we_send);

/* The sending client's statistics, which a receiver would have read from
 * the wire (main.c: handle_stats with write_batch). */
bool batch_write_stats(struct session *s);

/* Flush and close FILE (also after a failure). False if the last writes
 * failed; the session's error says why. */
bool batch_finish(struct session *s);

/* Write raw bytes to the batch file, bypassing the stream (the data an
 * --only-write-batch sender diverts from the receiver). */
bool batch_tee_data(struct batch_tee *t, const void *p, size_t n);

/* --read-batch: open FILE ("-" is stdin; else an operator path, oppath.h,
 * insecure being --insecure-links), which must be a regular file, and read
 * its stream flags. Returns the fd, or -1 after printing why. */
int batch_open_read(const char *name, bool insecure, int32_t *flags);

/* Apply the batch's stream flags to a copy of the options, as rsync's
 * check_batch_flags() does. False (message printed) when the batch needs
 * something ferry lacks (--iconv, ACLs, xattrs, --append). */
bool batch_apply_flags(struct ferry_opts *o, int32_t flags);

/* --read-batch on the receiving side (batch_recv.c). The batch holds
 * what the writer's generator asked for; ours decides again against this
 * destination, and the receiver applies only what ours asked for. */
struct recv_ctx;
/* Generator: it has been through the list once (every request made). */
void batch_note_listed(struct recv_ctx *rc);
/* Receiver: wait for that before the first file of the batch. False when
 * the generator stopped first. */
bool batch_wait_listed(struct recv_ctx *rc);
/* Receiver, at the end: report every file the generator asked for that
 * the batch did not hold (receiver.c: no_batched_update). */
void batch_report_missing(struct recv_ctx *rc);

/* The same with incremental lists, part by part: the generator has
 * decided on every index below `upto`; the receiver waits until `ndx` is
 * decided (false: the generator stopped first). */
void batch_note_decided(struct recv_ctx *rc, size_t upto);
bool batch_wait_decided(struct recv_ctx *rc, size_t ndx);

#endif
