/*
 * The item and deletion lines of every side: -v/-i/--out-format on the
 * client, --log-file, --json and a daemon's transfer log (rsync log.c:
 * log_item, maybe_log_item, log_delete). Below the session: it formats
 * and routes, and calls no part of the engine.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "proto/core/itemlog.h"
#include "proto/core/logfmt.h"
#include "proto/base/outfilter.h"
#include "proto/core/progress.h"
#include "proto/core/session.h"

static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;

/* The format of our item lines, as rsync picks it (options.c). */
/* Does the format use one of the escapes in `which` (with any flags or
 * width)? (log.c: log_format_has) */
static bool format_has(const char *fmt, const char *which)
{
	for (; *which; which++)
		if (log_format_has(fmt, *which))
			return true;
	return false;
}

static bool format_has_io(const char *fmt)
{
	return format_has(fmt, "io");
}

/* With %b, %c or %C in the output format a transferred file's line waits
 * for the end of its transfer (options.c: log_before_transfer off). */
static bool logs_after_transfer(const struct ferry_opts *o)
{
	return o->out_format && format_has(o->out_format, "bcC");
}

static const char *item_format(const struct ferry_opts *o)
{
	if (o->out_format)
		return o->out_format;
	if (o->itemize)
		return "%i %n%L";
	/* --progress names each file even without -v (options.c) */
	if (info_ge(o, INFO_NAME, 1) || o->progress)
		return "%n%L";
	return NULL;
}

/* Is an untransferred item worth a line (log.c: maybe_log_item)? */
static bool item_visible(const struct ferry_opts *o, const struct file_entry *f, int iflags,
			 const char *xname, bool has_i, int itemize)
{
	int significant = iflags & SIGNIFICANT_ITEM_FLAGS & 0xffff;

	if (iflags & ITEM_TRANSFER)
		return true;
	bool see = has_i && (significant || (xname && *xname) || itemize > 1 ||
			     (info_ge(o, INFO_NAME, 2) && has_i));
	bool local_change = (iflags & ITEM_LOCAL_CHANGE) && significant;
	return see || local_change || (xname && *xname) || (S_ISDIR(f->mode) && significant);
}

/* A line for the daemon's transfer log, with the connection's escapes. */
static void daemon_log_line(struct session *s, const char *fmt, struct log_item *it)
{
	char line[MAXPATHLEN_WIRE * 3];
	const struct log_item *who = s->module.xfer_log_who;

	it->module = who->module;
	it->module_path = who->module_path;
	it->host = who->host;
	it->addr = who->addr;
	it->user = who->user;
	log_format(fmt, it, line, sizeof line);
	s->hooks.xfer_log_line(s->hooks.xfer_log_ctx, line);
}

/* Does the daemon's transfer log take this item (log.c: log_item for a
 * transfer, once its facts are known; maybe_log_item on a server for the
 * rest: only when the format itemizes and the item changed)? */
static bool daemon_logs_item(const struct session *s, int iflags, const char *xname, bool after)
{
	if (!s->module.xfer_log_format || !s->hooks.xfer_log_line)
		return false;
	if (iflags & ITEM_TRANSFER)
		return after;
	return !after && !s->opts->dry_run && format_has(s->module.xfer_log_format, "i") &&
	       ((iflags & SIGNIFICANT_ITEM_FLAGS & 0xffff) || (xname && *xname));
}

static void log_item_with(struct session *s, const struct file_entry *f, int iflags,
			  const char *xname, const char *name_override,
			  const struct xfer_facts *x)
{
	const struct ferry_opts *o = s->opts;
	const char *fmt = item_format(o);
	const char *log_fmt = o->log_file_format ? o->log_file_format : "%i %n%L";
	char name[MAXPATHLEN_WIRE * 2], line[MAXPATHLEN_WIRE * 3];

	bool to_daemon_log = s->am_server && daemon_logs_item(s, iflags, xname, x != NULL);
	if (s->am_server && !to_daemon_log)
		return;
	bool after = (iflags & ITEM_TRANSFER) && logs_after_transfer(o);
	bool to_json = !s->am_server && !x && o->json && item_visible(o, f, iflags, xname, true, 1);
	bool to_stdout = !o->json && fmt && after == (x != NULL) &&
			 item_visible(o, f, iflags, xname, log_format_has(fmt, 'i'), o->itemize);
	bool to_log = !x && s->log_fp && item_visible(o, f, iflags, xname, true, 1);
	/* a line that waits for the transfer: --progress shows the name
	 * above its meter meanwhile (receiver.c: "%s\n" when
	 * !log_before_transfer and INFO_EQ(PROGRESS, 1)) */
	bool bare_name = after && !x && !o->json && info_ge(o, INFO_NAME, 1) &&
			 o->info_level[INFO_PROGRESS] == 1;
	if (!to_daemon_log && !to_stdout && !to_log && !to_json && !bare_name)
		return;
	if (name_override)
		snprintf(name, sizeof name, "%s", name_override);
	else if (!flist_path(f, name, sizeof name))
		return;
	struct log_item it = {
		.file = f,
		.name = name,
		.iflags = iflags,
		.xname = xname,
		.sending = s->am_sender,
		.dir = s->am_sender ? s->log_dir : NULL,
		.local = s->local_copy,
		.human = o->human,
		.preserve_times = o->times,
		.preserve_uid = o->owner,
		.preserve_gid = o->group,
		.sum_type = s->xfer_csum,
		.sum_len = (int)csum_len(s->xfer_csum),
	};
	/* %C: with -c every file's listed sum, else the sum of a transfer
	 * (log.c: log_formatted) */
	if (o->checksum && S_ISREG(f->mode) && fe_sum(f)) {
		it.sum = fe_sum(f);
		it.sum_type = s->flist_csum;
		it.sum_len = (int)csum_len(s->flist_csum);
	} else if (x && x->sum) {
		it.sum = x->sum;
	}
	if (x) {
		it.bytes_xferred = x->bytes;
		it.checksum_bytes = x->checksum_bytes;
	}
	if (to_daemon_log) {
		daemon_log_line(s, s->module.xfer_log_format, &it);
		return;
	}
	if (to_log) {
		log_format(log_fmt, &it, line, sizeof line);
		logfile_write(s, "%s", line);
	}
	if (to_json) {
		log_format("%i", &it, line, sizeof line);
		pthread_mutex_lock(&print_lock);
		progress_json_item(s, name, line, fe_size(f));
		pthread_mutex_unlock(&print_lock);
	}
	if (!to_stdout) {
		if (bare_name) {
			pthread_mutex_lock(&print_lock);
			out_filtered(s->info, name, o->eight_bit_output, '\n');
			fflush(s->info);
			pthread_mutex_unlock(&print_lock);
		}
		return;
	}
	log_format(fmt, &it, line, sizeof line);
	pthread_mutex_lock(&print_lock);
	out_filtered(s->info, line, o->eight_bit_output, '\n');
	fflush(s->info);
	pthread_mutex_unlock(&print_lock);
}

void session_log_item(struct session *s, const struct file_entry *f, int iflags,
		      const char *xname, const char *name_override)
{
	log_item_with(s, f, iflags, xname, name_override, NULL);
}

void session_log_transferred(struct session *s, const struct file_entry *f, int iflags,
			     const char *name_override, const struct xfer_facts *x)
{
	log_item_with(s, f, iflags, NULL, name_override, x);
}

void session_log_delete(struct session *s, const char *path, mode_t mode)
{
	const struct ferry_opts *o = s->opts;
	const char *fmt = item_format(o);
	char line[MAXPATHLEN_WIRE * 3];

	struct log_item it = {
		.name = path,
		.mode = mode,
		.iflags = ITEM_DELETED,
		.deleting = true,
		.human = o->human,
		.preserve_times = o->times,
		.preserve_uid = o->owner,
		.preserve_gid = o->group,
		.sum_type = s->xfer_csum,
		.sum_len = (int)csum_len(s->xfer_csum),
	};
	/* a daemon's transfer log names them (log.c: log_delete) */
	if (s->am_server && s->module.xfer_log_format && s->hooks.xfer_log_line && !o->dry_run) {
		const char *dfmt = s->module.xfer_log_format;
		daemon_log_line(s, format_has_io(dfmt) ? dfmt : "deleting %n", &it);
	}
	/* the receiver logs deletions to --log-file, in a local copy too */
	if (s->log_fp && (!s->am_server || s->local_copy)) {
		const char *log_fmt = o->log_file_format ? o->log_file_format : "%i %n%L";
		log_format(format_has_io(log_fmt) ? log_fmt : "deleting %n", &it, line, sizeof line);
		logfile_write(s, "%s", line);
	}
	if (o->json && !s->am_server) {
		pthread_mutex_lock(&print_lock);
		progress_json_item(s, path, "*deleting", 0);
		pthread_mutex_unlock(&print_lock);
		return;
	}
	/* log.c: log_delete: at --info=del (-v), or whenever an output
	 * format is set */
	if (s->am_server || (!fmt && !info_ge(o, INFO_DEL, 1)))
		return;
	if (!fmt || !format_has_io(fmt))
		fmt = "deleting %n";
	log_format(fmt, &it, line, sizeof line);
	pthread_mutex_lock(&print_lock);
	out_filtered(s->info, line, o->eight_bit_output, '\n');
	fflush(s->info);
	pthread_mutex_unlock(&print_lock);
}
