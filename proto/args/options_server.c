/*
 * The argument vector a client sends to a server, mirroring rsync
 * options.c:server_options() and safe_arg(); see options.h.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proto/args/options.h"
#include "proto/run/negotiate.h"
#include "proto/args/remote.h"
#include "proto/core/logfmt.h"

#define SHELL_CHARS "!#$&;|<>(){}\"'` \t\n\r\\"
#define WILD_CHARS "*?[]"

char *options_safe_arg(const char *opt, const char *arg, bool escape_tilde)
{
	bool is_filename = opt == NULL;
	const char *escapes = is_filename ? SHELL_CHARS : WILD_CHARS SHELL_CHARS;
	size_t len1 = opt && *opt ? strlen(opt) + 1 : 0, extras = 0, k = 0;
	bool lead_dash = is_filename && *arg == '-';
	bool lead_tilde = is_filename && escape_tilde && *arg == '~';
	const char *f;
	char *ret;

	for (f = arg; *f; f++) {
		if (*f == '\\') {
			if (!is_filename || !(f[1] && strchr(WILD_CHARS, f[1])))
				extras++;
		} else if (strchr(escapes, *f))
			extras++;
	}
	if (!(ret = malloc(len1 + strlen(arg) + extras + 4)))
		return NULL;
	if (len1) {
		memcpy(ret, opt, len1 - 1);
		ret[len1 - 1] = '=';
		k = len1;
	}
	if (lead_dash) {
		ret[k++] = '.';
		ret[k++] = '/';
	}
	if (lead_tilde)
		ret[k++] = '\\';
	for (f = arg; *f; f++) {
		if (*f == '\\') {
			if (!is_filename || !(f[1] && strchr(WILD_CHARS, f[1])))
				ret[k++] = '\\';
		} else if (strchr(escapes, *f))
			ret[k++] = '\\';
		ret[k++] = *f;
	}
	ret[k] = '\0';
	return ret;
}

/* arg unchanged but for rsync's "opt=" prefix and "./" before a file
 * name's leading dash. */
static char *plain_arg(const char *opt, const char *arg)
{
	size_t len = (opt && *opt ? strlen(opt) + 1 : 0) + strlen(arg) + 3;
	char *ret = malloc(len);

	if (!ret)
		return NULL;
	if (opt && *opt)
		snprintf(ret, len, "%s=%s", opt, arg);
	else
		snprintf(ret, len, "%s%s", !opt && *arg == '-' ? "./" : "", arg);
	return ret;
}

/* mirrors rsync options.c:safe_arg() with protect_args/old_style_args */
char *options_remote_arg(const struct ferry_opts *o, const char *opt, const char *arg,
			 bool split_when_old)
{
	bool is_filename = opt == NULL;
	bool escape = !o->secluded_args && o->old_args < 2 &&
		      (!o->old_args || (!is_filename && !split_when_old));

	return escape ? options_safe_arg(opt, arg, false) : plain_arg(opt, arg);
}

/* rsync options.c:make_output_option() for the --info words the user set
 * that matter on the server. Returns malloc'd "--info=..." or NULL. */
static char *info_option(const char *info, unsigned where)
{
	const struct output_word *w = options_info_words;
	short levels[OPTIONS_MAX_WORDS] = { 0 };
	bool set[OPTIONS_MAX_WORDS] = { false };
	int counts[5] = { 0 }, j, skipped = 0, max = 0, lev = 0;
	char bad[8], *buf;
	size_t pos = 0, cap = 16;

	if (!info)
		return NULL;
	options_parse_words(w, info, levels, set, true, bad, sizeof bad);
	for (j = 0; w[j].name; j++) {
		if (!(w[j].where & where))
			continue;
		if (!set[j]) {
			skipped++;
			continue;
		}
		cap += strlen(w[j].name) + 2;
		if (++counts[levels[j]] > max) {
			lev = levels[j];
			max = counts[lev];
		}
	}
	if (!max)
		return NULL;
	if (!(buf = malloc(cap)))
		return NULL;
	pos = (size_t)snprintf(buf, cap, "--info=");
	if (skipped || max < 5)
		lev = -1;
	else if (lev == 0)
		pos += (size_t)snprintf(buf + pos, cap - pos, "NONE");
	else if (lev == 1)
		pos += (size_t)snprintf(buf + pos, cap - pos, "ALL");
	else
		pos += (size_t)snprintf(buf + pos, cap - pos, "ALL%d", lev);
	for (j = 0; w[j].name; j++) {
		if (!set[j] || levels[j] == lev || !(w[j].where & where))
			continue;
		if (buf[pos - 1] != '=')
			buf[pos++] = ',';
		pos += (size_t)snprintf(buf + pos, cap - pos, "%s", w[j].name);
		if (levels[j] != 1)
			buf[pos++] = (char)('0' + levels[j]);
	}
	buf[pos] = '\0';
	return buf;
}

/* Is --info=name at level >= 1 (user-set, else implied by -v/--progress)? */
static bool name_info_on(const struct ferry_opts *o)
{
	const struct output_word *w = options_info_words;
	short levels[OPTIONS_MAX_WORDS] = { 0 };
	bool set[OPTIONS_MAX_WORDS] = { false };
	char bad[8];
	int j;

	if (o->info)
		options_parse_words(w, o->info, levels, set, true, bad, sizeof bad);
	for (j = 0; w[j].name; j++)
		if (!strcmp(w[j].name, "NAME"))
			break;
	if (w[j].name && set[j])
		return levels[j] >= 1;
	return o->verbose >= 1 || o->progress;
}

struct argv_buf {
	char **v;
	int n, cap;
	bool failed;
};

static void push(struct argv_buf *a, char *s)
{
	if (a->failed)
		goto fail;
	if (!s) {
		a->failed = true;
		return;
	}
	if (a->n + 2 > a->cap) {
		int cap = a->cap ? a->cap * 2 : 16;
		char **v = realloc(a->v, (size_t)cap * sizeof *v);
		if (!v) {
			a->failed = true;
			goto fail;
		}
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = s;
	a->v[a->n] = NULL;
	return;
fail:
	free(s);
}

static void pushs(struct argv_buf *a, const char *s)
{
	push(a, strdup(s));
}

static void pushf(struct argv_buf *a, const char *fmt, long val)
{
	char buf[64];

	snprintf(buf, sizeof buf, fmt, val);
	pushs(a, buf);
}

char **options_server_argv(const struct ferry_opts *o, bool server_is_sender, int protocol)
{
	struct argv_buf a = { NULL, 0, 0, false };
	bool am_sender = !server_is_sender; /* we, the client, send */
	char flags[64];
	int x = 0, i, cpres = 0;
	const char *choice = o->compress_choice;

	if (!protocol)
		protocol = FERRY_PROTOCOL_VERSION;

	/* Compression, rsync parse_arguments() + compat.c:parse_compress_choice(). */
	if (!choice && o->compress > 1)
		choice = "zlibx";
	if (choice && strcasecmp(choice, "auto") != 0) {
		if (!strcasecmp(choice, "zlib")) cpres = 1;
		else if (!strcasecmp(choice, "zlibx")) cpres = 2;
		else if (!strcasecmp(choice, "none")) cpres = 0;
		else cpres = 3; /* lz4, zstd: sent by name */
	} else {
		choice = NULL;
		cpres = o->compress ? 1 : (o->compress_level_set ? -1 : 0);
	}

	pushs(&a, "--server");
	if (server_is_sender)
		pushs(&a, "--sender");

	flags[x++] = '-';
	if (o->secluded_args)
		flags[x++] = 's';
	for (i = 0; i < o->verbose && i < 9; i++)
		flags[x++] = 'v';
	if (o->quiet && !o->no_msgs2stderr)
		flags[x++] = 'q';
	if (o->backup)
		flags[x++] = 'b';
	if (o->update)
		flags[x++] = 'u';
	if (o->dry_run && o->write_batch >= 0) /* rsync: !do_xfers */
		flags[x++] = 'n';
	if (o->links)
		flags[x++] = 'l';
	if (o->dirs_explicit
	    || (o->dirs && !o->recursive
		&& (o->list_only || (o->delete_mode != DELETE_NONE && am_sender))))
		flags[x++] = 'd';
	if (!am_sender) {
		/* the sending server follows links for us */
		if (o->copy_links)
			flags[x++] = 'L';
		if (o->copy_dirlinks)
			flags[x++] = 'k';
	}
	if (am_sender) {
		if (o->keep_dirlinks)
			flags[x++] = 'K';
		if (o->prune_empty_dirs)
			flags[x++] = 'm';
		if (o->omit_dir_times_opt)
			flags[x++] = 'O';
		if (o->omit_link_times)
			flags[x++] = 'J';
		/* options.c: server_options sends -y/-yy to a receiving server */
		for (int y = 0; y < o->fuzzy && y < 2; y++)
			flags[x++] = 'y';
	}
	if (o->whole_file > 0)
		flags[x++] = 'W';
	if (o->hard_links)
		flags[x++] = 'H';
	if (o->owner)
		flags[x++] = 'o';
	if (o->group)
		flags[x++] = 'g';
	if (o->devices)
		flags[x++] = 'D';
	if (o->times)
		flags[x++] = 't';
	for (i = 0; i < o->atimes && i < 2; i++)
		flags[x++] = 'U';
	if (o->perms)
		flags[x++] = 'p';
	else if (o->executability && am_sender)
		flags[x++] = 'E';
	if (o->acls)
		flags[x++] = 'A';
	for (i = 0; i < o->xattrs && i < 2; i++)
		flags[x++] = 'X';
	if (o->recursive)
		flags[x++] = 'r';
	if (o->checksum)
		flags[x++] = 'c';
	if (o->cvs_exclude)
		flags[x++] = 'C';
	if (o->ignore_times)
		flags[x++] = 'I';
	if (o->relative)
		flags[x++] = 'R';
	for (i = 0; i < o->one_file_system && i < 2; i++)
		flags[x++] = 'x';
	if (o->sparse)
		flags[x++] = 'S';
	if (cpres == 1)
		flags[x++] = 'z';
	/* rsync options.c:maybe_add_e_option(); 'i' where we can send
	 * incremental lists. */
	if (protocol >= 30)
		x += snprintf(flags + x, sizeof flags - (size_t)x, "e.%sLsfxCIvu",
			      inc_recurse_allowed(o, am_sender, protocol) ? "i" : "");
	flags[x] = '\0';
	if (x > 1)
		pushs(&a, flags);

	if (o->list_only_opt)
		pushs(&a, "--list-only");
	if (o->dirs && !o->recursive && o->delete_mode != DELETE_NONE && am_sender)
		pushs(&a, "--no-r");
	if (cpres && o->compress_level_set)
		pushf(&a, "--compress-level=%ld", o->compress_level);
	if (o->devices) {
		if (!o->specials)
			pushs(&a, "--no-specials");
	} else if (o->specials)
		pushs(&a, "--specials");

	if (am_sender) {
		/* What the server needs to know of our log format. */
		const char *fmt = o->out_format;
		int has_i = 0, has_o_or_i = 0;
		if (fmt) {
			if (log_format_has(fmt, 'i'))
				has_i = o->itemize | 1;
		} else if (o->itemize) {
			fmt = "%i %n%L";
			has_i = o->itemize;
		} else if (name_info_on(o))
			fmt = "%n%L";
		if (has_i || log_format_has(fmt, 'o'))
			has_o_or_i = 1;
		if (fmt) {
			if (has_i > 1)
				pushs(&a, "--log-format=%i%I");
			else if (has_i)
				pushs(&a, "--log-format=%i");
			else if (has_o_or_i)
				pushs(&a, "--log-format=%o");
			else if (!o->verbose)
				pushs(&a, "--log-format=X");
		}
	}

	if (o->msgs2stderr)
		pushs(&a, "--msgs2stderr");
	else if (o->no_msgs2stderr)
		pushs(&a, "--no-msgs2stderr");
	if (o->block_size)
		pushf(&a, "-B%ld", o->block_size);
	if (o->timeout)
		pushf(&a, "--timeout=%ld", o->timeout);
	if (o->bwlimit)
		pushf(&a, "--bwlimit=%ld", o->bwlimit);
	if (o->backup_dir) {
		pushs(&a, "--backup-dir");
		push(&a, options_remote_arg(o, "", o->backup_dir, false));
	}
	if (o->suffix && strcmp(o->suffix, o->backup_dir ? "" : "~") != 0)
		push(&a, options_remote_arg(o, "--suffix", o->suffix, false));
	if (o->checksum_choice)
		push(&a, options_remote_arg(o, "--checksum-choice", o->checksum_choice, false));
	if (cpres == 2)
		pushs(&a, "--new-compress");
	else if (choice && cpres == 1)
		pushs(&a, "--old-compress");
	else if (choice)
		push(&a, options_remote_arg(o, "--compress-choice", choice, false));

	if (am_sender) {
		if (o->max_delete > 0)
			pushf(&a, "--max-delete=%ld", o->max_delete);
		else if (o->max_delete == 0)
			pushs(&a, "--max-delete=-1");
		if (o->min_size >= 0)
			pushf(&a, "--min-size=%ld", (long)o->min_size);
		if (o->max_size >= 0)
			pushf(&a, "--max-size=%ld", (long)o->max_size);
		switch (o->delete_mode) {
		case DELETE_BEFORE: pushs(&a, "--delete-before"); break;
		case DELETE_DELAY: pushs(&a, "--delete-delay"); break;
		case DELETE_DURING: pushs(&a, "--delete-during"); break;
		case DELETE_AFTER: pushs(&a, "--delete-after"); break;
		case DELETE_DEFAULT:
			if (!o->delete_excluded)
				pushs(&a, "--delete");
			break;
		case DELETE_NONE: break;
		}
		if (o->delete_excluded)
			pushs(&a, "--delete-excluded");
		if (o->force)
			pushs(&a, "--force");
		if (o->write_batch < 0)
			pushs(&a, "--only-write-batch=X");
		if (o->super_mode == SUPER_ON) /* --fake-super stays local: -M */
			pushs(&a, "--super");
		if (o->size_only)
			pushs(&a, "--size-only");
		if (o->stats)
			pushs(&a, "--stats");
	} else if (o->skip_compress) {
		/* the sending server chooses per file what to compress */
		push(&a, options_remote_arg(o, "--skip-compress", o->skip_compress, false));
	}
	if (o->max_alloc)
		push(&a, options_remote_arg(o, "--max-alloc", o->max_alloc, false));
	/* --delete-missing-args needs both sides; the sender ignores alone */
	if (o->missing_args == 2)
		pushs(&a, "--delete-missing-args");
	else if (o->missing_args == 1 && !am_sender)
		pushs(&a, "--ignore-missing-args");
	if (o->modify_window_set && am_sender)
		pushf(&a, o->modify_window < 0 ? "-@%ld" : "--modify-window=%ld", o->modify_window);
	if (o->checksum_seed)
		pushf(&a, "--checksum-seed=%ld", (long)(int32_t)o->checksum_seed);
	if (o->sums_cache && am_sender) /* only a ferry receiver knows it */
		push(&a, options_remote_arg(o, "--sums-cache", o->sums_cache, false));
	if (o->partial_dir && am_sender) {
		if (!o->partial_dir_implied) {
			pushs(&a, "--partial-dir");
			push(&a, options_remote_arg(o, "", o->partial_dir, false));
		}
		if (o->delay_updates)
			pushs(&a, "--delay-updates");
	} else if (o->partial && am_sender) {
		pushs(&a, "--partial");
	}
	if (o->ignore_errors)
		pushs(&a, "--ignore-errors");
	if (o->copy_unsafe_links)
		pushs(&a, "--copy-unsafe-links");
	if (o->safe_links)
		pushs(&a, "--safe-links");
	if (o->numeric_ids)
		pushs(&a, "--numeric-ids");
	/* rsync sends "--use-qsort" here, which no rsync server accepts
	 * ("unknown option", exit 1); the server's own name for it works. */
	if (o->qsort)
		pushs(&a, "--qsort");
	if (am_sender) {
		if (o->usermap)
			push(&a, options_remote_arg(o, "--usermap", o->usermap, false));
		if (o->groupmap)
			push(&a, options_remote_arg(o, "--groupmap", o->groupmap, false));
		if (o->ignore_existing)
			pushs(&a, "--ignore-existing");
		if (o->existing)
			pushs(&a, "--existing");
		if (o->temp_dir) {
			pushs(&a, "--temp-dir");
			push(&a, options_remote_arg(o, "", o->temp_dir, false));
		}
		if (o->fsync)
			pushs(&a, "--fsync");
		static const char *const alt_names[] = {"", "--compare-dest", "--copy-dest",
							"--link-dest"};
		for (i = 0; i < o->nalt_dest; i++) {
			pushs(&a, alt_names[o->alt_dest_mode]);
			push(&a, options_remote_arg(o, "", o->alt_dest[i], false));
		}
	}
	{
		char *info = info_option(o->info, W_SRV | (am_sender ? W_REC : W_SND));
		if (info)
			push(&a, info);
	}
	if (o->append) {
		if (o->append > 1)
			pushs(&a, "--append");
		pushs(&a, "--append");
	} else if (o->inplace) {
		pushs(&a, "--inplace");
	}
	/* options.c: server_options. A list we read goes over the socket to
	 * a sending server; one on the remote host is named for it to open. */
	const char *ff_remote = options_files_from_remote(o, NULL, 0);
	if (o->files_from && (!am_sender || ff_remote)) {
		if (ff_remote) {
			pushs(&a, "--files-from");
			push(&a, options_remote_arg(o, "", ff_remote, false));
			if (o->from0)
				pushs(&a, "--from0");
		} else {
			pushs(&a, "--files-from=-");
			pushs(&a, "--from0");
		}
		if (!o->relative)
			pushs(&a, "--no-relative");
	}
	if (o->relative && o->no_implied_dirs && (!am_sender || protocol >= 30))
		pushs(&a, "--no-implied-dirs");
	if (o->write_devices && am_sender)
		pushs(&a, "--write-devices");
	if (o->remove_source_files == 1)
		pushs(&a, "--remove-source-files");
	else if (o->remove_source_files)
		pushs(&a, "--remove-sent-files");
	if (o->copy_devices && !am_sender)
		pushs(&a, "--copy-devices");
	if (o->preallocate && am_sender)
		pushs(&a, "--preallocate");
	if (o->open_noatime && o->atimes <= 1)
		pushs(&a, "--open-noatime");
	if (o->mkpath && am_sender)
		pushs(&a, "--mkpath");
	for (i = 0; i < o->nremote_options; i++)
		push(&a, options_remote_arg(o, "", o->remote_options[i], true));
	pushs(&a, ".");

	if (a.failed) {
		options_free_argv(a.v);
		return NULL;
	}
	return a.v;
}

const char *options_files_from_remote(const struct ferry_opts *o, char *host, size_t hostsize)
{
	const char *ff = o->files_from;
	struct remote_spec r;

	if (!ff)
		return NULL;
	if (*ff == ':') {
		/* ":FILE" is the remote end of the transfer, whichever it is */
		if (host && hostsize)
			*host = '\0';
		return ff + 1 + (ff[1] == ':');
	}
	remote_parse(ff, &r);
	if (r.kind == REMOTE_LOCAL)
		return NULL;
	if (host && hostsize)
		snprintf(host, hostsize, "%s", r.host);
	if (strncasecmp(ff, "rsync://", 8) == 0) {
		const char *slash = strchr(ff + 8, '/');
		return slash ? slash + 1 : ff + strlen(ff);
	}
	const char *p = *ff == '[' && strchr(ff, ']') ? strchr(ff, ']') : ff;
	const char *colon = strchr(p, ':');
	return colon + 1 + (colon[1] == ':');
}

void options_free_argv(char **argv)
{
	char **p;

	if (!argv)
		return;
	for (p = argv; *p; p++)
		free(*p);
	free(argv);
}

int options_secluded_split(char **server_args)
{
	int i;

	/* rsync ends the command line after the flag letters, which start
	 * with 's' when the args are secluded (server_options). */
	for (i = 0; server_args[i]; i++)
		if (server_args[i][0] == '-' && server_args[i][1] == 's')
			return i + 1;
	return i;
}
