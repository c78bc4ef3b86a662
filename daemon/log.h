/*
 * The daemon's log: the "log file" of the module or of the global section,
 * or syslog when neither names one (rsync log.c: logit, log_init).
 */
#ifndef FERRY_DAEMON_LOG_H
#define FERRY_DAEMON_LOG_H

#include "daemon/config.h"

/* Append a line to the daemon log ("log file", or syslog). */
void daemon_log(const struct daemon_config *cfg, const struct daemon_module *m, const char *fmt,
		...) __attribute__((format(printf, 3, 4)));

/* Open the log that m's lines go to, before the connection chroots or
 * drops privileges: it stays open for the rest of the connection. */
void daemon_log_open(const struct daemon_config *cfg, const struct daemon_module *m);

/* Close the cached log descriptor. The listening process does not keep
 * the log open: each connection opens it afresh, so a log rotated away is
 * not written to any more. */
void daemon_log_close(void);

#endif
