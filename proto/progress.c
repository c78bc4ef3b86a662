/*
 * --progress lines in rsync's layout (progress.c: rprint_progress).
 */
#include "proto/progress.h"

#include <stdio.h>
#include <string.h>

#include "proto/logfmt.h"

static long ms_between(const struct timeval *a, const struct timeval *b)
{
	return (long)(b->tv_sec - a->tv_sec) * 1000 + (long)(b->tv_usec - a->tv_usec) / 1000;
}

static void print_line(struct session *s, int64_t ofs, int64_t size, double rate_kb,
		       double remain, const char *eol)
{
	const char *units = "kB/s";
	char num[32], rem[32];

	if (rate_kb > 1024 * 1024) {
		rate_kb /= 1024.0 * 1024.0;
		units = "GB/s";
	} else if (rate_kb > 1024) {
		rate_kb /= 1024.0;
		units = "MB/s";
	}
	if (remain < 0 || remain > 9999.0 * 3600.0)
		snprintf(rem, sizeof rem, "  ??:??:??");
	else
		snprintf(rem, sizeof rem, "%4u:%02u:%02u", (unsigned)(remain / 3600.0),
			 (unsigned)(remain / 60.0) % 60, (unsigned)remain % 60);
	int pct = ofs == size ? 100 : (int)(100.0 * (double)ofs / (double)size);
	fprintf(s->info, "\r%15s %3d%% %7.2f%s %s%s", fmt_num(ofs, s->opts->human, num, sizeof num),
		pct, rate_kb, units, rem, eol);
	fflush(s->info);
}

void progress_update(struct session *s, struct progress *p, int64_t ofs, int64_t size)
{
	struct timeval now;

	if (s->am_server || !s->opts->progress)
		return;
	gettimeofday(&now, NULL);
	if (!p->started) {
		p->start = p->last = now;
		p->start_ofs = ofs;
		p->started = true;
		print_line(s, ofs, size, 0.0, 0.0, "  ");
		return;
	}
	if (ms_between(&p->last, &now) < 1000)
		return;
	p->last = now;
	long diff = ms_between(&p->start, &now);
	double rate = (double)(ofs - p->start_ofs) * 1000.0 / (double)(diff ? diff : 1) / 1024.0;
	double remain = rate ? (double)(size - ofs) / rate / 1000.0 : 0.0;
	print_line(s, ofs, size, rate, remain, "  ");
}

void progress_end(struct session *s, struct progress *p, int64_t size, int32_t ndx)
{
	struct timeval now;
	char eol[128];

	if (s->am_server || !s->opts->progress)
		return;
	gettimeofday(&now, NULL);
	long diff = p->started ? ms_between(&p->start, &now) : 1;
	if (diff <= 0)
		diff = 1;
	double rate = (double)(size - (p->started ? p->start_ofs : 0)) * 1000.0 / (double)diff /
		      1024.0;
	snprintf(eol, sizeof eol, " (xfr#%d, to-chk=%d/%d)\n", s->stats.xferred_files,
		 s->stats.num_files - ndx - 1, s->stats.num_files);
	print_line(s, size, size, rate, (double)diff / 1000.0, eol);
	memset(p, 0, sizeof *p);
}
