/*
 * Progress as rsync shows it (progress.c: rprint_progress): per file with
 * --progress, or for the whole transfer with --info=progress2; and, for
 * scripts, as JSON lines with --json (ferry only).
 */
#include "proto/core/progress.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "proto/base/json.h"
#include "proto/core/logfmt.h"

static long ms_between(const struct timeval *a, const struct timeval *b)
{
	return (long)(b->tv_sec - a->tv_sec) * 1000 + (long)(b->tv_usec - a->tv_usec) / 1000;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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
	int pct = ofs >= size ? 100 : (int)(100.0 * (double)ofs / (double)size);
	fprintf(s->info, "\r%15s %3d%% %7.2f%s %s%s", fmt_num(ofs, s->opts->human, num, sizeof num),
		pct, rate_kb, units, rem, eol);
	fflush(s->info);
}

/* The whole transfer so far: done files plus the current one's offset.
 * force: a file ended (or the transfer did), shown at once and with the
 * "(xfr#N, to-chk=R/T)" tail; otherwise at most once a second, with none,
 * as rsync's rprint_progress. final: the transfer's end, nothing left. */
static void overall(struct session *s, int64_t ofs, bool force, bool final)
{
	const struct ferry_opts *o = s->opts;
	int64_t now = now_ms();

	if (!s->progress_start_ms)
		s->progress_start_ms = s->progress_last_ms = now;
	else if (!force && now - s->progress_last_ms < 1000)
		return;
	s->progress_last_ms = now;
	int64_t done = s->progress_done + ofs, total = s->stats.total_size;
	int64_t ms = now - s->progress_start_ms;
	/* a first line with no time gone shows no rate; a file's end (or the
	 * transfer's) takes at least a millisecond, as rsync's */
	double rate_kb = ms || force ? (double)done * 1000.0 / (double)(ms ? ms : 1) / 1024.0
				     : 0.0;
	double remain = rate_kb > 0 ? (double)(total - done) / rate_kb / 1024.0 : 0.0;
	int left = final ? 0 : s->stats.num_files - s->progress_checked;
	if (o->json) {
		fprintf(stdout,
			"{\"event\":\"progress\",\"bytes\":%lld,\"total_bytes\":%lld,"
			"\"percent\":%.1f,\"bytes_per_sec\":%.0f,\"files_transferred\":%d,"
			"\"files_total\":%d,\"total_is_final\":%s,\"elapsed_ms\":%lld}\n",
			(long long)done, (long long)total,
			total ? 100.0 * (double)done / (double)total : 100.0, rate_kb * 1024.0,
			s->stats.xferred_files, s->stats.num_files,
			final || !s->progress_ir ? "true" : "false", (long long)ms);
		fflush(stdout);
		return;
	}
	char eol[96] = "  ";
	if (force)
		snprintf(eol, sizeof eol, " (xfr#%d, %s-chk=%d/%d)", s->stats.xferred_files,
			 s->progress_ir ? "ir" : "to", left < 0 ? 0 : left, s->stats.num_files);
	print_line(s, done, total ? total : 1, rate_kb, remain, eol);
}

void progress_dry_run_item(struct session *s, int64_t size)
{
	if (!s->am_server && (s->opts->progress2 || s->opts->json))
		s->progress_done += size;
}

void progress_update(struct session *s, struct progress *p, int64_t ofs, int64_t size)
{
	struct timeval now;

	if (s->am_server)
		return;
	if (s->opts->progress2 || s->opts->json) {
		/* nothing before the first data, as rsync */
		if (s->progress_start_ms || ofs > 0)
			overall(s, ofs, false, false);
		return;
	}
	if (!s->opts->progress)
		return;
	/* A file's first line comes once data moved, as rsync's
	 * show_progress() is called per chunk sent or received, not at the
	 * file's start. */
	if (!p->started && ofs == 0 && size > 0)
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

	if (s->am_server)
		return;
	if (s->opts->progress2 || s->opts->json) {
		s->progress_done += size;
		s->progress_checked = ndx + 1;
		memset(p, 0, sizeof *p);
		/* each file's end is a line, as rsync's end_progress */
		if (s->opts->progress2 && !s->opts->json)
			overall(s, 0, true, false);
		return;
	}
	if (!s->opts->progress)
		return;
	gettimeofday(&now, NULL);
	long diff = p->started ? ms_between(&p->start, &now) : 1;
	if (diff <= 0)
		diff = 1;
	double rate = (double)(size - (p->started ? p->start_ofs : 0)) * 1000.0 / (double)diff /
		      1024.0;
	snprintf(eol, sizeof eol, " (xfr#%d, %s-chk=%d/%d)\n", s->stats.xferred_files,
		 s->progress_ir ? "ir" : "to", s->stats.num_files - ndx - 1, s->stats.num_files);
	print_line(s, size, size, rate, (double)diff / 1000.0, eol);
	memset(p, 0, sizeof *p);
}

void progress_finish(struct session *s)
{
	if (s->am_server || !(s->opts->progress2 || s->opts->json))
		return;
	overall(s, 0, true, true);
	if (!s->opts->json) {
		fputc('\n', s->info);
		fflush(s->info);
	}
}

void progress_json_item(struct session *s, const char *name, const char *item, int64_t size)
{
	flockfile(stdout);
	fputs("{\"event\":\"item\",", stdout);
	json_write_name(stdout, "name", name, strlen(name));
	fputs(",\"change\":", stdout);
	json_write_string(stdout, item, strlen(item));
	fprintf(stdout, ",\"size\":%lld,\"dry_run\":%s}\n", (long long)size,
		s->opts->dry_run ? "true" : "false");
	funlockfile(stdout);
	fflush(stdout);
}

/* The file a message is about: ,"role":..,"path":..,"errno":N, each
 * when the line names it (an error, a warning, a skip). */
static void json_message_fields(const char *text)
{
	struct json_msg_fields f;

	json_msg_parse(text, &f);
	if (f.role) {
		fputs(",\"role\":", stdout);
		json_write_string(stdout, f.role, f.role_len);
	}
	if (f.path) {
		fputc(',', stdout);
		json_write_name(stdout, "path", f.path, f.path_len);
	}
	if (f.errnum >= 0)
		fprintf(stdout, ",\"errno\":%d", f.errnum);
}

void progress_json_message(struct session *s, const char *level, const char *text)
{
	flockfile(stdout);
	fputs("{\"event\":\"message\",\"level\":", stdout);
	json_write_string(stdout, level, strlen(level));
	fputc(',', stdout);
	json_write_name(stdout, "text", text, strlen(text));
	json_message_fields(text);
	fputs("}\n", stdout);
	funlockfile(stdout);
	fflush(stdout);
}

/* The session's statistics as --json's totals. */
static void totals_from_session(const struct session *s, struct json_totals *t)
{
	const struct stats *st = &s->stats;

	*t = (struct json_totals){
		.set = true,
		.files = st->num_files,
		.files_transferred = st->xferred_files,
		.files_created = st->created_files,
		.files_deleted = st->deleted_files,
		.total_size = st->total_size,
		.transferred_size = st->total_transferred_size,
		.literal_bytes = st->literal_data,
		.matched_bytes = st->matched_data,
		.bytes_sent = st->total_written,
		.bytes_received = st->total_read,
	};
}

void progress_json_stats(struct session *s, int exit_code)
{
	struct json_totals t;

	totals_from_session(s, &t);
	if (s->opts->json_totals)
		*s->opts->json_totals = t;
	flockfile(stdout);
	fprintf(stdout, "{\"event\":\"stats\",\"exit_code\":%d,\"elapsed_ms\":%lld,\"dry_run\":%s,",
		exit_code, (long long)(wire_now_ms() - s->run_start_ms),
		s->opts->dry_run ? "true" : "false");
	json_write_totals(stdout, &t);
	fputs("}\n", stdout);
	funlockfile(stdout);
	fflush(stdout);
}

void progress_json_note_totals(const struct session *s)
{
	struct json_totals *t = s->opts->json_totals;

	if (!t || t->set || s->am_server)
		return;
	totals_from_session(s, t);
	/* cut short before the summary took the byte counts: the streams' */
	if (!t->bytes_sent && !t->bytes_received) {
		t->bytes_sent = (int64_t)s->out.total_written;
		t->bytes_received = (int64_t)s->in.total_read;
	}
}
