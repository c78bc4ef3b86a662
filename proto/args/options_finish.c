/*
 * After the last option: what the options imply for each other, and the
 * checks rsync makes once parsing is done (options.c: parse_arguments'
 * tail, server_options' checks).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "proto/args/options.h"
#include "proto/args/options_priv.h"
#include "proto/core/logfmt.h"
#include "proto/base/oppath.h"
#include "proto/delta/batch.h"
#include "proto/delta/token.h"

/* --partial-dir and --delay-updates (options.c, after parsing): the
 * directory is cleaned, "." means none, RSYNC_PARTIAL_DIR stands in for a
 * plain --partial, and a relative one is excluded (perishably) so it is
 * neither sent nor deleted (compat.c). */
/* What each -v level adds to the info levels (options.c: info_verbosity):
 * "NONREG" / "COPY,DEL,FLIST,MISC,NAME,STATS,SYMSAFE" /
 * "BACKUP,MISC2,MOUNT,NAME2,REMOVE,SKIP". */
static void verbosity_levels(int verbose, short *levels)
{
	static const struct {
		enum info_word w;
		short level;
	} by_verbosity[3][8] = {
		{{INFO_NONREG, 1}, {INFO_COUNT, 0}},
		{{INFO_COPY, 1}, {INFO_DEL, 1}, {INFO_FLIST, 1}, {INFO_MISC, 1}, {INFO_NAME, 1},
		 {INFO_STATS, 1}, {INFO_SYMSAFE, 1}, {INFO_COUNT, 0}},
		{{INFO_BACKUP, 1}, {INFO_MISC, 2}, {INFO_MOUNT, 1}, {INFO_NAME, 2}, {INFO_REMOVE, 1},
		 {INFO_SKIP, 1}, {INFO_COUNT, 0}},
	};

	memset(levels, 0, INFO_COUNT * sizeof *levels);
	for (int v = 0; v <= verbose && v < 3; v++)
		for (int j = 0; by_verbosity[v][j].w != INFO_COUNT; j++)
			levels[by_verbosity[v][j].w] = by_verbosity[v][j].level;
}

/* rsync's info levels: -v's, then --stats and --progress, then the --info
 * words given, which win. */
static void settle_info_levels(struct pstate *ps)
{
	struct ferry_opts *o = ps->o;

	verbosity_levels(o->verbose, o->info_level);
	if (o->stats)
		o->info_level[INFO_STATS] = o->verbose > 1 ? 3 : 2;
	if (o->progress || o->progress2)
		o->info_level[INFO_PROGRESS] = o->progress2 ? 2 : 1;
	/* --progress names the files when nothing else does (options.c:
	 * "name" when !log_before_transfer && INFO_EQ(NAME, 0)) */
	bool logs_before = o->itemize ||
			   (o->out_format && !log_format_has(o->out_format, 'b') &&
			    !log_format_has(o->out_format, 'c') && !log_format_has(o->out_format, 'C'));
	if (o->progress && !o->server && !o->info_level[INFO_NAME] && !logs_before)
		o->info_level[INFO_NAME] = 1;
	for (int i = 0; i < INFO_COUNT; i++)
		if (ps->info_user_set[i])
			o->info_level[i] = ps->info_user[i];
	/* -vv: each at 1 but NSTR and FUZZY; -vvv: DELTASUM2, FILTER2,
	 * FLIST2, CONNECT2, FUZZY; -vvvv: DELTASUM3, FLIST3, CMD2;
	 * -vvvvv: DELTASUM4, FLIST4, FUZZY2; NSTR only by name
	 * (options.c: debug_verbosity) */
	static const short by_verbosity[6][DEBUG_COUNT] = {
		{0, 0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0, 0}, {1, 1, 1, 1, 1, 0, 0},
		{2, 2, 2, 1, 2, 0, 1}, {3, 2, 3, 2, 2, 0, 1}, {4, 2, 4, 2, 2, 0, 2},
	};
	int v = o->verbose < 0 ? 0 : o->verbose > 5 ? 5 : o->verbose;
	for (int i = 0; i < DEBUG_COUNT; i++)
		o->debug_level[i] = ps->debug_user_set[i] ? ps->debug_user[i] : by_verbosity[v][i];
}

void options_limit_verbosity(struct ferry_opts *o, int max)
{
	short limit[INFO_COUNT];

	if (max < 0)
		max = 0;
	if (o->verbose > max)
		o->verbose = max;
	if (max < 2) /* -v and below allow no debugging output */
		memset(o->debug_level, 0, sizeof o->debug_level);
	if (max >= 2)
		return; /* rsync's MAX_VERBOSITY: nothing to limit */
	verbosity_levels(max, limit);
	for (int i = 0; i < INFO_COUNT; i++)
		if (o->info_level[i] > limit[i])
			o->info_level[i] = limit[i];
}

static int settle_partial_dir(struct pstate *ps)
{
	struct ferry_opts *o = ps->o;
	const char *env = getenv("RSYNC_PARTIAL_DIR");

	if (o->delay_updates && !o->partial_dir) {
		if (opt_set_str(ps, &o->partial_dir, ".~tmp~") != 0)
			return RERR_MALLOC;
		o->partial_dir_implied = true;
	}
	if (o->inplace && o->partial_dir)
		return opt_usage_err(ps, "--%s cannot be used with --%s",
				 o->append ? "append" : "inplace",
				 o->delay_updates ? "delay-updates" : "partial-dir");
	if (o->inplace)
		return 0;
	if (o->partial && !o->partial_dir && !o->server && env && *env &&
	    opt_set_str(ps, &o->partial_dir, env) != 0)
		return RERR_MALLOC;
	if (!o->partial_dir)
		return 0;
	size_t n = strlen(o->partial_dir);
	while (n > 1 && o->partial_dir[n - 1] == '/')
		o->partial_dir[--n] = '\0';
	while (strncmp(o->partial_dir, "./", 2) == 0)
		memmove(o->partial_dir, o->partial_dir + 2, strlen(o->partial_dir + 2) + 1);
	if (!*o->partial_dir || strcmp(o->partial_dir, ".") == 0) {
		free(o->partial_dir);
		o->partial_dir = NULL;
		return 0;
	}
	o->partial = true;
	if (*o->partial_dir != '/' && !o->server) {
		char rule[4200];
		bool old = o->protocol && o->protocol < 30;
		snprintf(rule, sizeof rule, "%s %s/", old ? "-" : "-p", o->partial_dir);
		return opt_add_rule(ps, "", rule);
	}
	return 0;
}
/* Check --checksum-choice (rsync checksum.c:parse_checksum_choice()):
 * "auto" (or "auto,auto") means no choice; "none" for the transfer sum
 * forces --whole-file. */
static int check_checksum_choice(struct pstate *ps)
{
	struct ferry_opts *o = ps->o;
	const char *cc = o->checksum_choice, *comma;
	size_t len1;
	enum csum_type t1 = CSUM_MD5, t2 = CSUM_MD5;

	if (!cc)
		return 0;
	if (!strcasecmp(cc, "auto") || !strcasecmp(cc, "auto,auto")) {
		free(o->checksum_choice);
		o->checksum_choice = NULL;
		return 0;
	}
	comma = strchr(cc, ',');
	len1 = comma ? (size_t)(comma - cc) : strlen(cc);
	if (csum_parse_n(cc, len1, &t1) < 0)
		return opt_other_err(ps, RERR_UNSUPPORTED, "unknown checksum name: %.*s", (int)len1, cc);
	if (comma && csum_parse(comma + 1, &t2) < 0)
		return opt_other_err(ps, RERR_UNSUPPORTED, "unknown checksum name: %s", comma + 1);
	if (t1 == CSUM_NONE && !(len1 == 4 && !strncasecmp(cc, "auto", 4)))
		o->whole_file = 1;
	return 0;
}

/* --old-args / --secluded-args and their environment variables, as rsync
 * parse_arguments() settles old_style_args and protect_args. */
static int settle_arg_protection(struct pstate *ps)
{
	struct ferry_opts *o = ps->o;
	const char *env;

	if (ps->old_args < 0) {
		env = getenv("RSYNC_OLD_ARGS");
		if (!o->server && ps->secluded <= 0 && env && *env) {
			ps->secluded = 0;
			ps->old_args = atoi(env);
		} else {
			ps->old_args = 0;
		}
	} else if (ps->old_args) {
		if (ps->secluded > 0)
			return opt_usage_err(ps, "--secluded-args conflicts with --old-args.");
		ps->secluded = 0;
	}
	if (ps->secluded < 0) {
		env = getenv("RSYNC_PROTECT_ARGS");
		ps->secluded = !o->server && env && *env ? atoi(env) != 0 : 0;
	}
	o->old_args = ps->old_args < 0 ? 0 : ps->old_args;
	o->secluded_args = ps->secluded > 0;
	return 0;
}

/* The batch options together (rsync options.c: parse_arguments). */
static int check_batch(struct pstate *ps)
{
	struct ferry_opts *o = ps->o;

	if (o->write_batch && o->read_batch)
		return opt_usage_err(ps, "--write-batch and --read-batch can not be used together");
	if (o->batch_name && strlen(o->batch_name) > BATCH_NAME_MAX)
		return opt_usage_err(ps, "the batch-file name must be %d characters or less.",
				 BATCH_NAME_MAX);
	if (o->write_batch > 0 || o->read_batch) {
		if (o->server) {
			/* Older clients send them; rsync carries on without. */
			fprintf(stderr, "ignoring --%s-batch option sent to server\n",
				o->write_batch ? "write" : "read");
			o->write_batch = 0;
			o->read_batch = false;
		} else if (o->dry_run) {
			o->write_batch = 0;
		}
	} else if (o->write_batch < 0 && o->dry_run) {
		o->write_batch = 0;
	}
	if (o->read_batch && o->files_from)
		return opt_usage_err(ps, "--read-batch cannot be used with --files-from");
	if (o->read_batch && o->remove_source_files)
		return opt_usage_err(ps, "--read-batch cannot be used with --remove-%s-files",
				 o->remove_source_files == 1 ? "source" : "sent");
	/* A batch holds the transfer's whole-file sums, which --sums-cache
	 * makes block-wise (blockwise.h): no receiver without the option
	 * could check them when the batch is read. */
	if ((o->write_batch || o->read_batch) && o->sums_cache && !o->server)
		return opt_usage_err(ps, "--sums-cache cannot be used with --%s-batch",
				 o->read_batch ? "read" : o->write_batch < 0 ? "only-write" : "write");
	/* Nothing changes on the receiving side (main.c). */
	if (o->write_batch < 0)
		o->dry_run = true;
	return 0;
}

/* rsync parse_arguments() after the option loop. */
/* --confine-root (rsync options.c): a daemon drops it, its module being
 * the boundary already (a client's DIR could only widen it); elsewhere DIR
 * must be absolute and is opened once, for oppath_*_under. */
static int settle_confine_root(struct pstate *ps)
{
	struct ferry_opts *o = ps->o;

	if (!o->confine_root)
		return 0;
	if (ps->flags & OPTS_FROM_REMOTE) {
		free(o->confine_root);
		o->confine_root = NULL;
		return 0;
	}
	if (o->confine_root[0] != '/')
		return opt_usage_err(ps, "--confine-root must be an absolute path");
	if (o->insecure_links)
		return opt_usage_err(ps, "--insecure-links cannot be combined with --confine-root");
	if (o->confine_fd >= 0)
		close(o->confine_fd);
	/* a DIR that is not there holds nothing: every confined path is
	 * outside it, as in rsync, which compares names */
	o->confine_fd = open(o->confine_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (o->confine_fd < 0)
		o->confine_fd = OPPATH_ROOT_MISSING;
	return 0;
}

int opt_finish(struct pstate *ps)
{
	struct ferry_opts *o = ps->o;
	int rc;

	if (ps->mode == OM_DAEMON) {
		if (!ps->daemon_opt)
			return opt_usage_err(ps, "Daemon option(s) used without --daemon.");
		o->daemon = true;
		/* the daemon's own allocation limit, which its clients can
		 * lower but not lift (proto/base/alloc.h) */
		const char *env = getenv("RSYNC_MAX_ALLOC");
		return env && *env ? opt_set_max_alloc(ps, env) : 0;
	}
	if (ps->version_cnt) {
		if (ps->flags & OPTS_FROM_REMOTE)
			return opt_usage_err(ps, "%s--version: unknown option", opt_where_prefix(ps));
		/* rsync: -VV asks for JSON, except from a server. */
		o->print_request = ps->version_cnt > 1 && !o->server ? OPTS_PRINT_VERSION_JSON
								     : OPTS_PRINT_VERSION;
		return FERRY_OPTS_EXIT_OK;
	}
	/* clientserver.c: a daemon's stderr leads nowhere, so its messages
	 * always go over the connection, whatever --stderr the client sent. */
	if (ps->flags & OPTS_FROM_REMOTE) {
		o->msgs2stderr = false;
		o->no_msgs2stderr = true;
	}
	if ((rc = check_checksum_choice(ps)) != 0)
		return rc;
	/* compat.c: parse_compress_choice refuses an unknown name at once */
	if (o->compress_choice && strcasecmp(o->compress_choice, "auto") != 0 &&
	    token_alg_by_name(o->compress_choice) < 0)
		return opt_other_err(ps, RERR_UNSUPPORTED, "unknown compress name: %s", o->compress_choice);
	/* Compression however asked for (--zc, --compress-level) is refused
	 * as -z is (options.c: do_compression && refused_compress). */
	int z_row = options_refused_row(ps->refused, "compress");
	bool z_on = o->compress_choice && strcasecmp(o->compress_choice, "auto") != 0
			    ? token_alg_by_name(o->compress_choice) != CPRES_NONE ||
				      o->compress_level_set
			    : o->compress || o->compress_level_set;
	if (z_on && z_row >= 0)
		return opt_refuse_err(ps, &options_table[z_row]);
	/* The old meaning of 'h' (--help) on its own. */
	if (o->human > 1 && ps->argc == 2 && !o->server) {
		o->print_request = OPTS_PRINT_HELP;
		return FERRY_OPTS_EXIT_OK;
	}
	if ((rc = settle_arg_protection(ps)) != 0)
		return rc;
	const char *env_alloc = getenv("RSYNC_MAX_ALLOC");
	if (!o->max_alloc && env_alloc && *env_alloc && (rc = opt_set_max_alloc(ps, env_alloc)) != 0)
		return rc;
	if (o->server && o->rsh && (rc = opt_set_str(ps, &o->server_caps, o->rsh)) != 0)
		return rc;
	/* --files-from: -a no longer implies -r, -d is implied, and so is -R
	 * unless given either way (options.c: the files_from block). */
	if (o->files_from) {
		if (ps->recurse == 1)
			o->recursive = false;
		if (ps->dirs < 0)
			ps->dirs = 1;
	}
	o->relative = ps->relative < 0 ? o->files_from != NULL : ps->relative != 0;
	if (o->nargs < 2 && !o->server && !o->read_batch)
		o->list_only = true;

	if (ps->dirs >= 4) {
		if ((rc = opt_add_rule(ps, "", "- /*/*")) != 0)
			return rc;
		o->recursive = o->dirs = true;
	} else if (o->recursive)
		o->dirs = true;
	else if (ps->dirs < 0)
		o->dirs = o->list_only;
	else
		o->dirs = ps->dirs != 0;
	o->dirs_explicit = ps->dirs == 2 && !o->recursive;

	if (ps->del_before + !!ps->del_during + ps->del_after > 1)
		return opt_usage_err(ps, "You may not combine multiple --delete-WHEN options.");
	if (ps->del_before)
		o->delete_mode = DELETE_BEFORE;
	else if (ps->del_during == 2)
		o->delete_mode = DELETE_DELAY;
	else if (ps->del_during)
		o->delete_mode = DELETE_DURING;
	else if (ps->del_after)
		o->delete_mode = DELETE_AFTER;
	else if (ps->del_plain || o->delete_excluded)
		o->delete_mode = DELETE_DEFAULT;
	if (!o->dirs && o->delete_mode != DELETE_NONE)
		return opt_usage_err(ps, "--delete does not work without --recursive (-r) or --dirs (-d).");
	/* Every --delete-WHEN implies --delete, and implied options are
	 * refused like explicit ones. */
	int del_row = options_refused_row(ps->refused, "delete");
	if ((o->delete_mode != DELETE_NONE || o->missing_args == 2) && del_row >= 0)
		return opt_refuse_err(ps, &options_table[del_row]);
	/* a sender removing what it sent deletes too (only "delete" itself
	 * implies this refusal) */
	if (o->remove_source_files && o->sender && del_row >= 0)
		return opt_refuse_err(ps, &options_table[del_row]);

	if (o->append) {
		if (o->whole_file > 0)
			return opt_usage_err(ps, "--append cannot be used with --whole-file");
		int inplace_row = options_refused_row(ps->refused, "inplace");
		if (inplace_row >= 0)
			return opt_refuse_err(ps, &options_table[inplace_row]);
		o->inplace = true; /* options.c: append implies inplace */
		o->whole_file = 0;
	}
	if (o->write_devices) {
		/* options.c: write_devices implies inplace, refused or not */
		int inplace_row = options_refused_row(ps->refused, "inplace");
		if (inplace_row >= 0)
			return opt_refuse_err(ps, &options_table[inplace_row]);
		o->inplace = true;
	}
	if ((rc = settle_partial_dir(ps)) != 0)
		return rc;
	settle_info_levels(ps);
	/* --inplace keeps partial data by nature; rsync clears keep_partial,
	 * but refuses it as it would --partial. */
	int partial_row = options_refused_row(ps->refused, "partial");
	if (o->inplace && partial_row >= 0)
		return opt_refuse_err(ps, &options_table[partial_row]);
	if (o->inplace)
		o->partial = false;
	/* Backups beside their files change their directory's time after it
	 * was set: rsync then leaves directory times alone (options.c:
	 * omit_dir_times = -1, "implied, so avoid -O to sender"). */
	if (o->backup && !o->backup_dir) {
		o->omit_dir_times = true;
		o->omit_dir_times_opt = false;
	}
	/* Backups beside their files must survive --delete (options.c). */
	if (o->backup && !o->backup_dir && o->delete_mode != DELETE_NONE && !o->delete_excluded &&
	    !o->server) {
		char rule[4096];
		snprintf(rule, sizeof rule, "P *%s", o->suffix ? o->suffix : "~");
		if ((rc = opt_add_rule(ps, "", rule)) != 0)
			return rc;
	}
	if (o->super_mode == SUPER_FAKE && o->xattrs > 1)
		return opt_other_err(ps, RERR_SYNTAX, "--fake-super conflicts with -XX");
	if (o->suffix && strchr(o->suffix, '/'))
		return opt_usage_err(ps, "--suffix cannot contain slashes: %s", o->suffix);
	if ((rc = settle_confine_root(ps)) != 0)
		return rc;
	return check_batch(ps);
}
