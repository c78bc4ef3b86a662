/*
 * Command-line parsing into struct ferry_opts, mirroring rsync options.c:
 * parse_arguments(). getopt_long does the tokenising; the table in
 * options_table.c says what each option is and whether we support it.
 * The argument vector sent to a server is built in options_server.c.
 */
#include <ctype.h>
#include <getopt.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/base/sockopts.h"
#include "proto/args/options.h"
#include "proto/args/options_priv.h"

#define MAX_BLOCK_SIZE (1L << 17)     /* rsync.h, protocol >= 30 */
#define OLD_MAX_BLOCK_SIZE (1L << 29) /* protocol < 30 */
#define MAX_DPARAMS ((int)(sizeof ((struct ferry_opts *)0)->dparam / sizeof (char *)))
#define RESTART_DAEMON (-2)           /* internal: re-parse with the daemon rows */
#define LONG_BASE 1000                /* getopt val of table row i is LONG_BASE + i */

/* ---- the plain options: bound to their field ---- */

/* How a plain option stores into its field of struct ferry_opts. */
enum bind_kind {
	BK_NONE,  /* not bound: handle() decides */
	BK_V,     /* field = the row's value (0 for a --no-X row) */
	BK_TRUE,  /* field = true */
	BK_NOT,   /* field = !value (a "no_X" field) */
	BK_COUNT, /* field + 1 per use, 0 for the --no-X row */
	BK_STR,   /* field = a copy of the argument */
};
enum bind_type { BT_BOOL, BT_INT, BT_STR };

struct opt_binding {
	unsigned char kind; /* enum bind_kind */
	unsigned char type; /* enum bind_type, from the field's C type */
	size_t off;         /* offsetof(struct ferry_opts, field) */
};

/* The field's type picks the store, so a binding cannot write the wrong
 * width; a field of another type does not compile. */
#define FIELD_TYPE(f) _Generic(((struct ferry_opts *)0)->f, bool: BT_BOOL, int: BT_INT, \
			       char *: BT_STR)
#define BIND(k, f) { k, FIELD_TYPE(f), offsetof(struct ferry_opts, f) }
#define BIND_V(f) BIND(BK_V, f)
#define BIND_TRUE(f) BIND(BK_TRUE, f)
#define BIND_NOT(f) BIND(BK_NOT, f)
#define BIND_COUNT(f) BIND(BK_COUNT, f)
#define BIND_STR(f) BIND(BK_STR, f)

/* Indexed by enum opt_id; the ids not listed are BK_NONE. */
static const struct opt_binding opt_bindings[OPT_ID_COUNT] = {
	[OPT_CHECKSUM] = BIND_V(checksum),
	[OPT_INPLACE] = BIND_V(inplace),
	[OPT_DROP_D] = BIND_V(drop_devices),
	[OPT_LINKS] = BIND_V(links),
	[OPT_HARD_LINKS] = BIND_V(hard_links),
	[OPT_PERMS] = BIND_V(perms),
	[OPT_OWNER] = BIND_V(owner),
	[OPT_GROUP] = BIND_V(group),
	[OPT_DEVICES] = BIND_V(devices),
	[OPT_SPECIALS] = BIND_V(specials),
	[OPT_COPY_DEVICES] = BIND_V(copy_devices),
	[OPT_WRITE_DEVICES] = BIND_V(write_devices),
	[OPT_TRUST_SENDER] = BIND_V(trust_sender),
	[OPT_TIMES] = BIND_V(times),
	[OPT_OMIT_LINK_TIMES] = BIND_V(omit_link_times),
	[OPT_WHOLE_FILE] = BIND_V(whole_file),
	[OPT_IGNORE_ERRORS] = BIND_V(ignore_errors),
	[OPT_FORCE] = BIND_V(force),
	[OPT_PARTIAL] = BIND_V(partial),
	[OPT_FSYNC] = BIND_V(fsync),
	[OPT_SPARSE] = BIND_V(sparse),
	[OPT_OPEN_NOATIME] = BIND_V(open_noatime),
	[OPT_PRUNE_EMPTY_DIRS] = BIND_V(prune_empty_dirs),
	[OPT_CVS_EXCLUDE] = BIND_V(cvs_exclude),
	[OPT_MISSING_ARGS] = BIND_V(missing_args),
	[OPT_DELAY_UPDATES] = BIND_V(delay_updates),
	[OPT_REMOVE_SOURCE_FILES] = BIND_V(remove_source_files),
	[OPT_PREALLOCATE] = BIND_V(preallocate),
	[OPT_COPY_LINKS] = BIND_V(copy_links),
	[OPT_COPY_UNSAFE_LINKS] = BIND_V(copy_unsafe_links),
	[OPT_COPY_DIRLINKS] = BIND_V(copy_dirlinks),
	[OPT_KEEP_DIRLINKS] = BIND_V(keep_dirlinks),
	[OPT_SAFE_LINKS] = BIND_V(safe_links),
	[OPT_MUNGE_LINKS] = BIND_V(munge_links),
	[OPT_INSECURE_LINKS] = BIND_V(insecure_links),
	[OPT_MKPATH] = BIND_V(mkpath),
	[OPT_BACKUP] = BIND_V(backup),
	[OPT_NUMERIC_IDS] = BIND_V(numeric_ids),
	[OPT_BLOCKING_IO] = BIND_V(blocking_io),
	[OPT_8BIT] = BIND_V(eight_bit_output),
	[OPT_PROGRESS] = BIND_V(progress),
	[OPT_JSON] = BIND_V(json),
	[OPT_IPV4] = BIND_V(ip_family),
	[OPT_IPV6] = BIND_V(ip_family),
	[OPT_QUIET] = BIND_TRUE(quiet),
	[OPT_UPDATE] = BIND_TRUE(update),
	[OPT_QSORT] = BIND_TRUE(qsort),
	[OPT_EXECUTABILITY] = BIND_TRUE(executability),
	[OPT_DRY_RUN] = BIND_TRUE(dry_run),
	[OPT_EXISTING] = BIND_TRUE(existing),
	[OPT_IGNORE_EXISTING] = BIND_TRUE(ignore_existing),
	[OPT_DELETE_EXCLUDED] = BIND_TRUE(delete_excluded),
	[OPT_IGNORE_TIMES] = BIND_TRUE(ignore_times),
	[OPT_SIZE_ONLY] = BIND_TRUE(size_only),
	[OPT_STATS] = BIND_TRUE(stats),
	[OPT_SERVER] = BIND_TRUE(server),
	[OPT_MOTD] = BIND_NOT(no_motd),
	[OPT_INC_RECURSIVE] = BIND_NOT(no_inc_recursive),
	[OPT_IMPLIED_DIRS] = BIND_NOT(no_implied_dirs),
	[OPT_VERBOSE] = BIND_COUNT(verbose),
	[OPT_XATTRS] = BIND_COUNT(xattrs),
	[OPT_ONE_FILE_SYSTEM] = BIND_COUNT(one_file_system),
	[OPT_FUZZY] = BIND_COUNT(fuzzy),
	[OPT_HUMAN] = BIND_COUNT(human),
	[OPT_ITEMIZE] = BIND_COUNT(itemize),
	[OPT_FILES_FROM] = BIND_STR(files_from),
	[OPT_COPY_AS] = BIND_STR(copy_as),
	[OPT_CHECKSUM_CHOICE] = BIND_STR(checksum_choice),
	[OPT_RSH] = BIND_STR(rsh),
	[OPT_RSYNC_PATH] = BIND_STR(rsync_path),
	[OPT_SSH_CIPHER] = BIND_STR(ssh_cipher),
	[OPT_PARTIAL_DIR] = BIND_STR(partial_dir),
	[OPT_SUFFIX] = BIND_STR(suffix),
	[OPT_TEMP_DIR] = BIND_STR(temp_dir),
	[OPT_CONFINE_ROOT] = BIND_STR(confine_root),
	[OPT_COMPRESS_CHOICE] = BIND_STR(compress_choice),
	[OPT_SKIP_COMPRESS] = BIND_STR(skip_compress),
	[OPT_ADDRESS] = BIND_STR(bind_address),
	[OPT_EARLY_INPUT] = BIND_STR(early_input),
	[OPT_OUT_FORMAT] = BIND_STR(out_format),
	[OPT_LOG_FILE] = BIND_STR(log_file),
	[OPT_LOG_FILE_FORMAT] = BIND_STR(log_file_format),
	[OPT_PASSWORD_FILE] = BIND_STR(password_file),
};

/* Store a bound option's value v (or its argument) into its field. */
static int store_bound(struct pstate *ps, const struct opt_binding *b, int v, const char *arg)
{
	char *field = (char *)ps->o + b->off;

	if (b->type == BT_STR)
		return opt_set_str(ps, (char **)field, arg);
	int cur = b->type == BT_BOOL ? *(bool *)field : *(int *)field;
	int val;
	switch (b->kind) {
	case BK_V: val = v; break;
	case BK_TRUE: val = 1; break;
	case BK_NOT: val = !v; break;
	default: val = v ? cur + 1 : 0; break; /* BK_COUNT */
	}
	if (b->type == BT_BOOL)
		*(bool *)field = val != 0;
	else
		*(int *)field = val;
	return 0;
}

static int handle(struct pstate *ps, const struct opt_spec *sp, const char *arg)
{
	struct ferry_opts *o = ps->o;
	int v = sp->val;
	long n;
	int rc;

	if (!sp->supported) {
		char label[64];
		opt_label(sp, ps->elem, label, sizeof label);
		return opt_usage_err(ps, "%s%s is not supported yet", opt_where_prefix(ps), label);
	}
	if (ps->refused && ps->refused[sp - options_table])
		return opt_refuse_err(ps, sp);
	if (opt_bindings[sp->id].kind != BK_NONE)
		return store_bound(ps, &opt_bindings[sp->id], v, arg);

	switch ((enum opt_id)sp->id) {
	case OPT_HELP:
		if (ps->flags & OPTS_FROM_REMOTE)
			return opt_usage_err(ps, "%s--help: unknown option", opt_where_prefix(ps));
		o->print_request = ps->mode == OM_DAEMON ? OPTS_PRINT_DAEMON_HELP : OPTS_PRINT_HELP;
		return FERRY_OPTS_EXIT_OK;
	case OPT_VERSION: ps->version_cnt++; break;
	case OPT_INFO: return opt_handle_words(ps, false, arg);
	case OPT_DEBUG: return opt_handle_words(ps, true, arg);
	case OPT_STDERR: {
		size_t len = strlen(arg);
		if (len && !strncmp("errors", arg, len))
			o->msgs2stderr = o->no_msgs2stderr = false;
		else if (len && !strncmp("all", arg, len))
			o->msgs2stderr = true, o->no_msgs2stderr = false;
		else if (len && !strncmp("client", arg, len))
			o->msgs2stderr = false, o->no_msgs2stderr = true;
		else
			return opt_usage_err(ps, "--stderr mode \"%s\" is not one of errors, all, or client",
					 arg);
		break;
	}
	case OPT_MSGS2STDERR: o->msgs2stderr = v; o->no_msgs2stderr = !v; break;
	case OPT_ARCHIVE:
		o->recursive = o->links = o->perms = o->times = true;
		o->group = o->owner = o->devices = o->specials = true;
		if (!ps->recurse)
			ps->recurse = 1; /* -a's -r gives way to --files-from */
		break;
	case OPT_RECURSIVE: o->recursive = v; ps->recurse = v ? 2 : 0; break;
	case OPT_RELATIVE: ps->relative = v; break;
	case OPT_DIRS: case OPT_OLD_DIRS: ps->dirs = v; break;
	case OPT_ACLS: o->acls = v; o->perms = o->perms || v; break;
	case OPT_CHMOD:
		if (!opt_chmod_valid(arg))
			return opt_usage_err(ps, "Invalid argument passed to --chmod (%s)", arg);
		return opt_join_str(ps, &o->chmod, arg);
	case OPT_D: o->devices = o->specials = v; break;
	case OPT_OMIT_DIR_TIMES: o->omit_dir_times = o->omit_dir_times_opt = v; break;
	case OPT_BLOCK_SIZE: {
		/* Checked against the --protocol seen so far, as rsync does. */
		long max = o->protocol && o->protocol < 30 ? OLD_MAX_BLOCK_SIZE : MAX_BLOCK_SIZE;
		const char *err;
		long size = opt_parse_size(arg, 'b', max, &err);
		if (size < 0) {
			char lim[32];
			opt_big_num(max, lim, sizeof lim);
			if (!strcmp(err, "too large"))
				return opt_usage_err(ps, "--block-size=%s is too large (max: %s)", arg, lim);
			return opt_usage_err(ps, "--block-size=%s is invalid", arg);
		}
		o->block_size = size;
		break;
	}
	case OPT_SSH_MODE:
		if (strcmp(arg, "auto") && strcmp(arg, "builtin") && strcmp(arg, "spawn"))
			return opt_usage_err(ps, "--ssh=%s: expected auto, builtin or spawn", arg);
		return opt_set_str(ps, &o->ssh_mode, arg);
	case OPT_DELETE_DURING: case OPT_DELETE_DELAY: ps->del_during = v; break;
	case OPT_DELETE: ps->del_plain = 1; break;
	case OPT_DELETE_BEFORE: ps->del_before = 1; break;
	case OPT_DELETE_AFTER: ps->del_after = 1; break;
	case OPT_MAX_DELETE:
		if ((rc = opt_parse_int(ps, arg, INT_MIN, INT_MAX, &n)) != 0)
			return rc;
		if (n < 0) {
			/* rsync treats a negative value as "no deletions"; its
			 * client sends --max-delete=-1 for --max-delete=0. */
			if (!o->server)
				return opt_usage_err(ps, "%s: the value must not be negative "
						 "(use --max-delete=0 to allow no deletions)", ps->elem);
			n = 0;
		}
		o->max_delete = n;
		break;
	case OPT_MAX_SIZE: return opt_parse_size_opt(ps, "max-size", arg, 'b', 0, false, &o->max_size);
	case OPT_MIN_SIZE: return opt_parse_size_opt(ps, "min-size", arg, 'b', 0, false, &o->min_size);
	case OPT_BWLIMIT: {
		int64_t bytes = 0;
		if (v && (rc = opt_parse_size_opt(ps, "bwlimit", arg, 'k', 512, true, &bytes)) != 0)
			return rc;
		o->bwlimit = (long)((bytes + 512) / 1024);
		break;
	}
	case OPT_SUPER: o->super_mode = v ? SUPER_ON : SUPER_OFF; break;
	case OPT_FAKE_SUPER: o->super_mode = v ? SUPER_FAKE : SUPER_OFF; break;
	case OPT_CRTIMES:
		/* Linux has no settable creation time, so rsync built there
		 * refuses -N outright (options.c: create_refuse_error). */
		if (v)
			return opt_other_err(ps, RERR_SYNTAX, "%s does not support --crtimes (-N)",
					 o->server ? "The server" : "This ferry");
		break;
	case OPT_ATIMES:
		o->atimes = v ? o->atimes + 1 : 0;
		if (o->atimes > 1)
			o->open_noatime = true; /* -UU: reading must not change them */
		break;
	case OPT_APPEND:
		/* a server counts its --append words; a client takes the value */
		o->append = !v ? 0 : o->server ? o->append + 1 : v;
		break;
	case OPT_APPEND_VERIFY: o->append = v ? 2 : 0; break;
	case OPT_USERMAP:
		if (o->usermap)
			return opt_usage_err(ps, ps->chown_user ? "--usermap conflicts with prior --chown."
							    : "You can only specify --usermap once.");
		return opt_set_str(ps, &o->usermap, arg);
	case OPT_GROUPMAP:
		if (o->groupmap)
			return opt_usage_err(ps, ps->chown_group ? "--groupmap conflicts with prior --chown."
							     : "You can only specify --groupmap once.");
		return opt_set_str(ps, &o->groupmap, arg);
	case OPT_CHOWN: {
		/* rsync implements --chown as the map "*:USER" / "*:GROUP" */
		const char *colon = strchr(arg, ':');
		size_t ulen = colon ? (size_t)(colon - arg) : strlen(arg);
		char map[4096];
		if (ulen) {
			if (o->usermap)
				return opt_usage_err(ps, ps->chown_user
							     ? "You can only specify a user-affecting --chown once."
							     : "--chown conflicts with prior --usermap.");
			snprintf(map, sizeof map, "*:%.*s", (int)ulen, arg);
			if ((rc = opt_set_str(ps, &o->usermap, map)) != 0)
				return rc;
			ps->chown_user = true;
			o->owner = true;
		}
		if (colon && colon[1]) {
			if (o->groupmap)
				return opt_usage_err(ps, ps->chown_group
							     ? "You can only specify a group-affecting --chown once."
							     : "--chown conflicts with prior --groupmap.");
			snprintf(map, sizeof map, "*:%s", colon + 1);
			if ((rc = opt_set_str(ps, &o->groupmap, map)) != 0)
				return rc;
			ps->chown_group = true;
			o->group = true;
		}
		break;
	}
	case OPT_OUTBUF:
		if (!strchr("NnLlBbUu", *arg) || !*arg)
			return opt_usage_err(ps, "Invalid --outbuf setting -- specify N, L, or B.");
		o->outbuf = (char)toupper((unsigned char)*arg);
		if (o->outbuf == 'U')
			o->outbuf = 'N';
		break;
	case OPT_STOP_AFTER: {
		char *end;
		long mins = strtol(arg, &end, 10);
		time_t now = time(NULL);
		if (mins <= 0 || mins > INT_MAX / 60)
			return opt_usage_err(ps, "invalid --stop-after value: %s", arg);
		o->stop_at = (int64_t)now + mins * 60;
		break;
	}
	case OPT_STOP_AT: {
		time_t t = stop_at_parse(arg, time(NULL));
		if (t == (time_t)-1)
			return opt_usage_err(ps, "invalid --stop-at format: %s", arg);
		if (t <= time(NULL))
			return opt_usage_err(ps, "--stop-at time is not in the future: %s", arg);
		o->stop_at = (int64_t)t;
		break;
	}
	case OPT_BACKUP_DIR: o->backup = true; return opt_set_str(ps, &o->backup_dir, arg);
	case OPT_ALT_DEST:
		if (o->alt_dest_mode && o->alt_dest_mode != v)
			return opt_usage_err(ps, "ERROR: the --%s option conflicts with the --%s option",
					 v == ALT_DEST_COMPARE ? "compare-dest"
					 : v == ALT_DEST_COPY ? "copy-dest" : "link-dest",
					 o->alt_dest_mode == ALT_DEST_COMPARE ? "compare-dest"
					 : o->alt_dest_mode == ALT_DEST_COPY ? "copy-dest"
									     : "link-dest");
		if (o->nalt_dest >= ALT_DEST_MAX)
			return opt_usage_err(ps, "ERROR: at most %d --%s args may be specified",
					 ALT_DEST_MAX, sp->name);
		o->alt_dest_mode = v;
		if (!(o->alt_dest[o->nalt_dest] = strdup(arg)))
			return opt_oom(ps);
		o->nalt_dest++;
		break;
	case OPT_TIMEOUT: case OPT_CONTIMEOUT:
		n = 0;
		if (v && (rc = opt_parse_int(ps, arg, 0, INT_MAX, &n)) != 0)
			return rc;
		*(sp->id == OPT_TIMEOUT ? &o->timeout : &o->contimeout) = (int)n;
		break;
	case OPT_MODIFY_WINDOW:
		if ((rc = opt_parse_int(ps, arg, INT_MIN, INT_MAX, &n)) != 0)
			return rc;
		o->modify_window = (int)n;
		o->modify_window_set = true;
		break;
	case OPT_COMPRESS:
		if (v)
			o->compress++;
		else {
			o->compress = 0;
			free(o->compress_choice);
	free(o->skip_compress);
			o->compress_choice = NULL;
		}
		break;
	case OPT_OLD_COMPRESS: return opt_set_str(ps, &o->compress_choice, "zlib");
	case OPT_NEW_COMPRESS: return opt_set_str(ps, &o->compress_choice, "zlibx");
	case OPT_COMPRESS_LEVEL:
		if ((rc = opt_parse_int(ps, arg, INT_MIN, INT_MAX, &n)) != 0)
			return rc;
		o->compress_level = (int)n;
		o->compress_level_set = true;
		break;
	case OPT_COMPRESS_THREADS:
		if ((rc = opt_parse_int(ps, arg, INT_MIN, INT_MAX, &n)) != 0)
			return rc;
		/* as rsync (options.c): a negative count means none; the daemon
		 * caps what a client asks for (daemon/serve.c) */
		o->compress_threads = n < 0 ? 0 : (int)n;
		break;
	case OPT_FILTER: return *arg ? opt_add_rule(ps, "", arg) : 0;
	case OPT_F:
		if (++ps->f_cnt == 1)
			return opt_add_rule(ps, "", ": /.rsync-filter");
		if (ps->f_cnt == 2)
			return opt_add_rule(ps, "", "- .rsync-filter");
		break;
	case OPT_EXCLUDE: return opt_add_old_rule(ps, arg, false);
	case OPT_INCLUDE: return opt_add_old_rule(ps, arg, true);
	case OPT_EXCLUDE_FROM: return opt_read_rule_file(ps, arg, false);
	case OPT_INCLUDE_FROM: return opt_read_rule_file(ps, arg, true);
	case OPT_FROM0: ps->from0 = o->from0 = v; break;
	case OPT_PORT:
		if ((rc = opt_parse_int(ps, arg, 1, 65535, &n)) != 0)
			return rc;
		o->port = (int)n;
		break;
	case OPT_SOCKOPTS:
		/* Unknown names are an error here; rsync only reports them
		 * when it sets the options, and carries on. */
		if (!sockopts_apply(-1, arg))
			return opt_usage_err(ps, "--sockopts=%s: see the socket option names in ferry(1)",
					 arg);
		return opt_set_str(ps, &o->sockopts, arg);
	case OPT_OLD_ARGS: ps->old_args = v ? (ps->old_args > 0 ? ps->old_args + 1 : 1) : 0; break;
	case OPT_SECLUDED_ARGS: ps->secluded = v; break;
	case OPT_MAX_ALLOC: return opt_set_max_alloc(ps, arg);
	case OPT_WRITE_BATCH:
		o->write_batch = v;
		return opt_set_str(ps, &o->batch_name, arg);
	case OPT_READ_BATCH:
		o->read_batch = true;
		return opt_set_str(ps, &o->batch_name, arg);
	case OPT_P: o->progress = o->partial = true; break;
	case OPT_REMOTE_OPTION: {
		char **ro;
		if (*arg != '-')
			return opt_usage_err(ps, "Remote option must start with a dash: %s", arg);
		ro = realloc(o->remote_options, (size_t)(o->nremote_options + 2) * sizeof *ro);
		if (!ro)
			return opt_oom(ps);
		o->remote_options = ro;
		if (!(ro[o->nremote_options] = strdup(arg)))
			return opt_oom(ps);
		ro[++o->nremote_options] = NULL;
		break;
	}
	case OPT_LIST_ONLY: o->list_only = o->list_only_opt = true; break;
	case OPT_PROTOCOL:
		if ((rc = opt_parse_int(ps, arg, INT_MIN, INT_MAX, &n)) != 0)
			return rc;
		if (n < FERRY_PROTOCOL_OLDEST || n > FERRY_PROTOCOL_VERSION)
			return opt_usage_err(ps, "%s%s: protocol version must be between %d and %d",
					 opt_where_prefix(ps), ps->elem, FERRY_PROTOCOL_OLDEST,
					 FERRY_PROTOCOL_VERSION);
		o->protocol = (int)n;
		break;
	case OPT_CHECKSUM_SEED:
		if ((rc = opt_parse_int(ps, arg, INT_MIN, INT_MAX, &n)) != 0)
			return rc;
		o->checksum_seed = (uint32_t)(int32_t)n;
		o->checksum_seed_set = true;
		break;
	case OPT_SUMS_CACHE:
		/* one plain name in the destination directory: nothing to
		 * follow or climb out of */
		if (!*arg || strchr(arg, '/') || !strcmp(arg, ".") || !strcmp(arg, "..") ||
		    strlen(arg) > 200)
			return opt_usage_err(ps, "--sums-cache=%s: expected a plain file name", arg);
		return opt_set_str(ps, &o->sums_cache, arg);
	case OPT_SENDER:
		if (!o->server)
			return opt_usage_err(ps, "--sender may only be used with --server");
		o->sender = true;
		break;
	case OPT_DAEMON: case OPT_CONFIG: case OPT_DPARAM: case OPT_DETACH:
	case OPT_CHECK_CONFIG:
		if (ps->mode == OM_CLIENT)
			return RESTART_DAEMON;
		if (sp->id == OPT_DAEMON)
			ps->daemon_opt = true;
		else if (sp->id == OPT_CONFIG)
			return opt_set_str(ps, &o->config_file, arg);
		else if (sp->id == OPT_DETACH)
			o->no_detach = !v;
		else if (sp->id == OPT_CHECK_CONFIG)
			o->check_config = true;
		else {
			if (!strchr(arg, '='))
				return opt_usage_err(ps, "--dparam value is missing an '=': %s", arg);
			if (o->ndparam >= MAX_DPARAMS)
				return opt_usage_err(ps, "too many --dparam values (at most %d)", MAX_DPARAMS);
			if (!(o->dparam[o->ndparam] = strdup(arg)))
				return opt_oom(ps);
			o->ndparam++;
		}
		break;
	default:
		/* Recognised, supported, nothing to store. */
		break;
	}
	return 0;
}

/* ---- the getopt loop ---- */

static int run_getopt(struct pstate *ps)
{
	struct option *lo;
	char so[3 + 3 * 128];
	short shortidx[256];
	int i, nlo = 0, nso = 0, rc = 0;

	if (!(lo = calloc((size_t)options_table_len + 1, sizeof *lo)))
		return opt_oom(ps);
	memset(shortidx, -1, sizeof shortidx);
	so[nso++] = '-'; /* non-options come back in order as 1 */
	so[nso++] = ':'; /* a missing argument is ':' */
	for (i = 0; i < options_table_len; i++) {
		const struct opt_spec *sp = &options_table[i];
		if (!(sp->modes & ps->mode) || sp->id == OPT_NONE)
			continue;
		if (sp->name) {
			lo[nlo].name = sp->name;
			lo[nlo].has_arg = sp->arg == OA_REQ ? required_argument : no_argument;
			lo[nlo].val = LONG_BASE + i;
			nlo++;
		}
		if (sp->shortopt && shortidx[(unsigned char)sp->shortopt] < 0) {
			shortidx[(unsigned char)sp->shortopt] = (short)i;
			so[nso++] = sp->shortopt;
			if (sp->arg == OA_REQ)
				so[nso++] = ':';
		}
	}
	so[nso] = '\0';

	optind = 0; /* full re-initialisation of glibc's getopt */
	opterr = 0;
	for (;;) {
		int prev = optind < 1 ? 1 : optind, c, idx;
		const struct opt_spec *sp;

		c = getopt_long(ps->argc, ps->argv, so, lo, NULL);
		if (c == -1)
			break;
		ps->elem = ps->argv[prev];
		if (c == 1) {
			if ((rc = opt_add_arg(ps, optarg)) != 0)
				break;
			continue;
		}
		if (c == '?') {
			if (optopt >= LONG_BASE)
				rc = opt_usage_err(ps, "%s%s: option does not take an argument",
					       opt_where_prefix(ps), ps->elem);
			else
				rc = opt_usage_err(ps, "%s%s: unknown option%s", opt_where_prefix(ps),
					       ps->elem, ps->mode == OM_DAEMON ? " (in daemon mode)" : "");
			break;
		}
		if (c == ':') {
			rc = opt_usage_err(ps, "%s%s: missing argument", opt_where_prefix(ps), ps->elem);
			break;
		}
		idx = c >= LONG_BASE ? c - LONG_BASE : shortidx[(unsigned char)c];
		if (idx < 0 || idx >= options_table_len) {
			rc = opt_usage_err(ps, "%s%s: unknown option", opt_where_prefix(ps), ps->elem);
			break;
		}
		sp = &options_table[idx];
		if (c >= LONG_BASE) {
			/* getopt_long takes unique abbreviations; rsync (popt) does not. */
			size_t nl = strlen(sp->name);
			const char *e = ps->elem;
			if (strncmp(e, "--", 2) || strncmp(e + 2, sp->name, nl)
			    || (e[2 + nl] && e[2 + nl] != '=')) {
				rc = opt_usage_err(ps, "%s%s: unknown option%s", opt_where_prefix(ps), e,
					       ps->mode == OM_DAEMON ? " (in daemon mode)" : "");
				break;
			}
		}
		if ((rc = handle(ps, sp, optarg)) != 0)
			break;
	}
	if (!rc)
		for (i = optind; i < ps->argc; i++)
			if ((rc = opt_add_arg(ps, ps->argv[i])) != 0)
				break;
	free(lo);
	return rc;
}

static void opts_init(struct ferry_opts *o)
{
	memset(o, 0, sizeof *o);
	o->whole_file = -1;
	o->max_delete = -1;
	o->max_size = o->min_size = -1;
	o->human = 1;
	o->files_from_fd = -1;
	o->confine_fd = -1;
}

int options_parse_flags(struct ferry_opts *o, int argc, char **argv, unsigned flags)
{
	return options_parse_refusing(o, argc, argv, flags, NULL);
}

int options_parse_refusing(struct ferry_opts *o, int argc, char **argv, unsigned flags,
			   const bool *refused)
{
	struct pstate ps;
	int rc;

	opts_init(o); /* also empties options_last_error(o) */
	memset(&ps, 0, sizeof ps);
	ps.o = o;
	ps.flags = flags;
	ps.argc = argc;
	ps.argv = argv;
	ps.mode = OM_CLIENT;
	ps.dirs = -1;
	ps.secluded = ps.old_args = -1;
	ps.relative = -1;
	ps.elem = "";
	ps.refused = refused;
	if (argc < 1)
		return 0;
	rc = run_getopt(&ps);
	if (rc == RESTART_DAEMON) {
		/* rsync re-parses the whole command line with its daemon table. */
		if (flags & OPTS_FROM_REMOTE)
			return opt_other_err(&ps, RERR_SYNTAX, "Attempt to hack rsync thwarted!");
		options_free(o);
		opts_init(o);
		memset(&ps, 0, sizeof ps);
		ps.o = o;
		ps.flags = flags;
		ps.argc = argc;
		ps.argv = argv;
		ps.mode = OM_DAEMON;
		ps.dirs = -1;
		ps.secluded = ps.old_args = -1;
		ps.relative = -1;
		ps.elem = "";
		rc = run_getopt(&ps);
	}
	if (rc)
		return rc;
	return opt_finish(&ps);
}

int options_parse(struct ferry_opts *o, int argc, char **argv)
{
	return options_parse_flags(o, argc, argv, 0);
}

void options_free(struct ferry_opts *o)
{
	int i;
	size_t j;

	if (!o)
		return;
	free(o->config_file);
	free(o->log_file);
	free(o->log_file_format);
	free(o->partial_dir);
	free(o->usermap);
	free(o->groupmap);
	free(o->backup_dir);
	free(o->suffix);
	free(o->temp_dir);
	free(o->files_from);
	for (i = 0; i < o->nalt_dest; i++)
		free(o->alt_dest[i]);
	for (i = 0; i < o->ndparam; i++)
		free(o->dparam[i]);
	free(o->out_format);
	free(o->info);
	free(o->debug);
	free(o->chmod);
	free(o->checksum_choice);
	free(o->sums_cache);
	for (j = 0; j < o->nfilters; j++)
		free(o->filters[j].text);
	free(o->filters);
	free(o->bind_address);
	free(o->password_file);
	free(o->rsh);
	free(o->rsync_path);
	free(o->ssh_mode);
	free(o->ssh_cipher);
	free(o->sockopts);
	free(o->early_input);
	free(o->max_alloc);
	free(o->copy_as);
	free(o->batch_name);
	free(o->compress_choice);
	free(o->skip_compress);
	for (i = 0; i < o->nremote_options; i++)
		free(o->remote_options[i]);
	free(o->remote_options);
	free(o->server_caps);
	for (i = 0; i < o->nargs; i++)
		free(o->args[i]);
	free(o->args);
	opts_init(o);
}
