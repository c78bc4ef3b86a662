/*
 * The head of a file's block sums (docs/protocol.md 12): what the
 * generator sends before the sums, and the sender echoes before the file's
 * data. One reader checks it for both sides, before anything is
 * allocated from it.
 */
#ifndef FERRY_PROTO_SUM_HEAD_H
#define FERRY_PROTO_SUM_HEAD_H

#include <stdbool.h>
#include <stdint.h>

struct session;

struct sum_head {
	int32_t count, blength, s2length, remainder;
};

/* rsync's default --max-alloc: the block sums a head announces may not
 * need more than this (CVE-2024-12084). */
#define SUM_HEAD_MAX_SUMS_BYTES ((size_t)1 << 30)

/* Read a head from s->in and check it as rsync's io.c: read_sum_head
 * does, with the strong sum no longer than the transfer checksum (nor 16
 * bytes) and the announced sums within SUM_HEAD_MAX_SUMS_BYTES. False,
 * with s->err set (RERR_PROTOCOL for a bad value), otherwise. */
bool sum_head_read(struct session *s, struct sum_head *h);
/* Write a head to s->out (no s2length before protocol 27). */
bool sum_head_write(struct session *s, const struct sum_head *h);

#endif
