/*
 * --log-file on the client: what rsync's log.c writes there, each line
 * stamped "YYYY/MM/DD HH:MM:SS [pid] ": the start ("building file list" /
 * "receiving file list"), one line per changed item in --log-file-format
 * (default "%i %n%L"), deletions, errors, and the byte counts at the end.
 * Control characters in a line are written as \#ooo.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proto/base/oppath.h"
#include "proto/base/outfilter.h"
#include "proto/core/session.h"

static pthread_mutex_t logfile_lock = PTHREAD_MUTEX_INITIALIZER;

void logfile_open(struct session *s)
{
	const char *file = s->opts ? s->opts->log_file : NULL;

	if (!file || s->log_fp)
		return;
	/* an operator path: no symlink of another user's on the way */
	/* not bounded by --confine-root (as in rsync), but an rrsync fd pin
	 * is walked as under it */
	unsigned how = s->opts->insecure_links ? OPPATH_INSECURE : 0;
	if (opts_confine_fd(s->opts) != -1)
		how |= OPPATH_FD_PINS;
	int fd = oppath_open(AT_FDCWD, file, O_WRONLY | O_APPEND | O_CREAT, 0666, how);
	s->log_fp = fd >= 0 ? fdopen(fd, "a") : NULL;
	if (!s->log_fp) {
		if (fd >= 0)
			close(fd);
		fprintf(stderr, "ferry: failed to open log-file %s: %s\n", file, strerror(errno));
		fprintf(stderr, "Ignoring \"--log-file=%s\"\n", file);
		return;
	}
	setvbuf(s->log_fp, NULL, _IOLBF, 0);
}

/* One stamped line, "YYYY/MM/DD HH:MM:SS [pid] TEXT", text without its
 * trailing newlines and escaped: a hostile file name must not inject
 * lines or terminal escapes into a log an administrator reads (log.c:
 * logit). */
static void write_stamped(FILE *fp, const char *msg, size_t n)
{
	char when[64], shown[5 * 8192];
	struct tm tm;

	time_t t = time(NULL);
	localtime_r(&t, &tm);
	strftime(when, sizeof when, "%Y/%m/%d %H:%M:%S", &tm);
	while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		n--;
	out_escape_log(shown, sizeof shown, msg, n);
	pthread_mutex_lock(&logfile_lock);
	fprintf(fp, "%s [%d] %s\n", when, (int)getpid(), shown);
	pthread_mutex_unlock(&logfile_lock);
}

void logfile_write(struct session *s, const char *fmt, ...)
{
	char msg[8192];
	va_list ap;

	if (!s->log_fp)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	write_stamped(s->log_fp, msg, strlen(msg));
}

void logfile_append(const char *file, const char *text)
{
	if (!file || !*file)
		return;
	FILE *fp = fopen(file, "a");
	if (!fp)
		return;
	write_stamped(fp, text, strlen(text));
	fclose(fp);
}

void logfile_close(struct session *s)
{
	if (s->log_fp)
		fclose(s->log_fp);
	s->log_fp = NULL;
}
