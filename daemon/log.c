/*
 * The daemon's log (see daemon/log.h).
 */
#include "daemon/log.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "proto/base/outfilter.h"

/* The log file stays open across the privilege drop, as rsync keeps it:
 * a module running as nobody could not open a root-owned log. A connection
 * writes to the daemon's log until it opens its module's (daemon_log_open)
 * and to that one after, so a single cached descriptor does. */
static struct {
	char path[4096];
	int fd;
} log_cache = {.fd = -1};

static int log_fd_for(const char *file)
{
	if (log_cache.fd >= 0 && strcmp(log_cache.path, file) == 0)
		return log_cache.fd;
	int fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -1;
	if (log_cache.fd >= 0)
		close(log_cache.fd);
	log_cache.fd = fd;
	snprintf(log_cache.path, sizeof log_cache.path, "%s", file);
	return fd;
}

void daemon_log_close(void)
{
	if (log_cache.fd >= 0)
		close(log_cache.fd);
	log_cache.fd = -1;
}

static const char *log_file_of(const struct daemon_config *cfg, const struct daemon_module *m)
{
	return m && m->log_file ? m->log_file : cfg->defaults.log_file;
}

void daemon_log_open(const struct daemon_config *cfg, const struct daemon_module *m)
{
	const char *file = log_file_of(cfg, m);

	if (file && *file)
		log_fd_for(file);
}

void daemon_log(const struct daemon_config *cfg, const struct daemon_module *m, const char *fmt,
		...)
{
	const char *file = log_file_of(cfg, m);
	char msg[2048], when[64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (!file || !*file) {
		const char *tag = m && m->syslog_tag ? m->syslog_tag : cfg->defaults.syslog_tag;
		openlog(tag ? tag : "rsyncd", LOG_PID,
			m ? m->syslog_facility : cfg->defaults.syslog_facility);
		syslog(LOG_INFO, "%s", msg);
		return;
	}
	time_t t = time(NULL);
	struct tm tm;
	localtime_r(&t, &tm);
	strftime(when, sizeof when, "%Y/%m/%d %H:%M:%S", &tm);
	int fd = log_fd_for(file);
	if (fd < 0)
		return;
	/* a client's file name must not forge log lines or send escapes to
	 * the terminal an administrator reads the log on (log.c: logit) */
	char shown[5 * sizeof msg];
	out_escape_log(shown, sizeof shown, msg, strlen(msg));
	dprintf(fd, "%s [%d] %s\n", when, (int)getpid(), shown);
}
