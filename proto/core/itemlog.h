/*
 * Item and deletion lines (itemlog.c): one format-and-route step for the
 * -v/-i/--out-format output, --log-file, --json and a daemon's transfer
 * log (rsync log.c: log_item, maybe_log_item, log_delete).
 */
#ifndef FERRY_ITEMLOG_H
#define FERRY_ITEMLOG_H

#include <stdint.h>
#include <sys/types.h>

struct session;
struct file_entry;

/* Print an item line for -v/-i/--out-format as rsync's client does
 * (log.c: log_item, maybe_log_item); nothing on a server. */
void session_log_item(struct session *s, const struct file_entry *f, int iflags,
		      const char *xname, const char *name_override);
/* What only the end of a file's transfer knows, for %b %c %C. */
struct xfer_facts {
	int64_t bytes;          /* %b: written when sending, read when receiving */
	int64_t checksum_bytes; /* %c: the other way */
	const uint8_t *sum;     /* %C: the whole-file sum, or NULL */
};
/* A transferred file's line, when the output format waits for the end of
 * the transfer (%b, %c, %C); nothing otherwise. */
void session_log_transferred(struct session *s, const struct file_entry *f, int iflags,
			     const char *name_override, const struct xfer_facts *x);

/* Print a deletion as rsync's client does (log.c: log_delete). */
void session_log_delete(struct session *s, const char *path, mode_t mode);

#endif
