/*
 * One daemon connection: greetings, module choice, access checks,
 * authentication, entering the module, the client's arguments, and then
 * the server side of the protocol (clientserver.c: start_daemon,
 * rsync_module). This file runs the steps in order and decides what the
 * module refuses; the steps are in serve_greet.c, serve_enter.c,
 * serve_args.c and serve_hooks.c (daemon/serve_priv.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/core/exit_line.h"
#include "proto/base/alloc.h"
#include "proto/base/stop_signal.h"
#include "proto/args/options.h"
#include "daemon/access.h"
#include "daemon/daemon.h"
#include "daemon/log.h"
#include "daemon/serve_priv.h"
#include "daemon/proxy_header.h"
#include "proto/run/server.h"
#include "proto/delta/token.h"

static int serve_module(struct conn *c, struct daemon_module *m);

/* Expand %VAR% references in the module's strings once the connection's
 * RSYNC_* variables are known (rsync expands parameters when used). */
static int serve_expanded(struct conn *c, const struct daemon_module *raw)
{
	struct daemon_module xm;
	char err[512];

	/* "reverse lookup" off globally but on for this module: look the
	 * name up now (clientserver.c: rsync_module) */
	if (strcmp(c->host, ACCESS_NAME_UNDETERMINED) == 0 && raw->reverse_lookup) {
		addr_name(c->addr, c->host, sizeof c->host, true, c->lookup_note);
		log_lookup_note(c);
	}
	setenv("RSYNC_MODULE_NAME", raw->name, 1);
	setenv("RSYNC_HOST_ADDR", c->addr, 1);
	setenv("RSYNC_HOST_NAME", c->host, 1);
	if (config_module_expand(raw, &xm, err, sizeof err) < 0) {
		daemon_log(c->cfg, raw, "module %s: %s", raw->name, err);
		send_line(c, "@ERROR: module configuration error\n");
		return RERR_STARTCLIENT;
	}
	c->namecvt = (struct xfer_hook){.pid = -1, .arg_fd = -1, .out_fd = -1};
	int code = serve_module(c, &xm);
	xfer_hook_cancel(&c->namecvt); /* it ends when its stdin closes */
	config_module_free(&xm);
	return code;
}

/* "transfer logging": the lines the engine makes in the module's log
 * format (proto/recv/attrs.c), and its messages, go to the module's log. */
static void log_transfer_line(void *ctx, const char *line)
{
	struct conn *c = ctx;

	daemon_log(c->cfg, c->m, "%s", line);
}

/* The module's policies that change how the engine behaves. */
static bool apply_module_policy(struct conn *c, const struct daemon_module *m, bool sending,
				int root_fd)
{
	struct session *s = &c->s;

	/* a chroot confines only what lies below its root; an inner subdir is
	 * guarded as a module without chroot is (clientserver.c: module_dirlen) */
	bool confined = c->chrooted && !c->inner_subdir;
	s->module.munge_symlinks = m->munge_symlinks < 0 ? !confined : m->munge_symlinks == 1;
	s->module.sanitize_links = !confined;
	if (s->module.munge_symlinks) {
		/* Munged links would be followable again through such a dir. */
		struct stat st;
		if (fstatat(root_fd, "rsyncd-munged", &st, AT_SYMLINK_NOFOLLOW) == 0) {
			daemon_log(c->cfg, m, "Symlink munging is unsafe when a /rsyncd-munged "
					      "directory exists.");
			return false;
		}
	}
	s->module.ids_by_number = c->chrooted ? m->numeric_ids != 0 && !m->name_converter
				       : m->numeric_ids == 1;
	s->module.ignore_nonreadable = m->ignore_nonreadable;
	const char *cm = sending ? m->outgoing_chmod : m->incoming_chmod;
	if (cm && *cm) {
		if (!chmod_parse(&s->chmod, cm, s->umask_bits))
			daemon_log(c->cfg, m, "Invalid \"%sing chmod\" directive: %s",
				   sending ? "outgo" : "incom", cm);
	}
	if (m->transfer_logging) {
		c->log_who = (struct log_item){.module = m->name, .module_path = m->path,
					       .host = c->host, .addr = c->addr, .user = c->user};
		s->module.xfer_log_format = m->log_format ? m->log_format : "%o %h [%a] %m (%u) %f %l";
		s->module.xfer_log_who = &c->log_who;
		s->hooks.xfer_log_line = log_transfer_line;
		s->hooks.xfer_log_ctx = c;
	}
	return true;
}

/* "fake super" and "max verbosity" (clientserver.c: rsync_module): the
 * module's fake super makes this side keep privileged attributes in
 * xattrs (and -XX falls back to -X, whose user.rsync.%* names it uses);
 * a client's own --fake-super is taken as --super, as rsyncd does. The
 * client's -v level is capped (limit_output_verbosity). */
static void apply_module_privilege(const struct daemon_module *m, struct ferry_opts *o)
{
	if (m->fake_super) {
		o->super_mode = SUPER_FAKE;
		if (o->xattrs > 1)
			o->xattrs = 1;
	} else if (o->super_mode == SUPER_FAKE) {
		o->super_mode = SUPER_ON;
	}
	options_limit_verbosity(o, m->max_verbosity);
}

/* The log's last lines for a transfer (log.c: log_exit): the byte
 * counts, which only a sender has when the run failed, and the error. */
static void exit_text(char *buf, size_t size, int code, bool sender, int line)
{
	const char *name = exit_code_name(code);

	snprintf(buf, size, "ferry %s: %s (code %d) at serve.c(%d) [%s=%s]",
		 code == RERR_VANISHED ? "warning" : "error", name ? name : "unexplained error", code,
		 line, sender ? "sender" : "Receiver", FERRY_VERSION);
}

static void log_end(struct conn *c, int code, int line)
{
	const struct session *s = &c->s;
	char end[300];

	if (code == 0 || s->am_sender)
		daemon_log(c->cfg, c->m, "sent %llu bytes  received %llu bytes  total size %lld",
			   (unsigned long long)(s->out.total_written + s->out.len),
			   (unsigned long long)s->in.total_read, (long long)s->stats.total_size);
	if (code == 0)
		return;
	exit_text(end, sizeof end, code, s->am_sender, line);
	daemon_log(c->cfg, c->m, "%s", end);
}

/* The path and the hooks see who logged in. A refused hook value ends
 * the connection without a reply, as rsync's exit_cleanup does there. */
static bool expand_after_auth(struct conn *c, struct daemon_module *m)
{
	char err[512], end[300];

	if (config_module_expand_late(m, err, sizeof err) == 0)
		return true;
	daemon_log(c->cfg, m, "%s", err);
	exit_text(end, sizeof end, RERR_UNSUPPORTED, false, __LINE__);
	daemon_log(c->cfg, m, "%s", end);
	return false;
}

/* What serve_module holds until the connection ends, released in one
 * place (module_run_free). */
struct module_run {
	int root_fd;             /* the module's root, or -1 */
	struct xfer_hook pre;    /* pre-xfer exec until it has answered */
	struct module_args args;
	char *hook_refusal;      /* pre-xfer exec's refusal (malloc'd), or NULL */
	struct filter_list dfilters;
	bool have_filters;       /* dfilters was initialised */
	struct path_list paths;  /* the path arguments inside the module */
};

static void module_run_free(struct module_run *r)
{
	path_list_free(&r->paths);
	if (r->have_filters)
		filter_list_free(&r->dfilters);
	free(r->hook_refusal);
	module_args_free(&r->args);
	xfer_hook_cancel(&r->pre); /* a no-op once it has answered */
	if (r->root_fd >= 0)
		close(r->root_fd);
}

/* The steps before the argument list: the access check, a connection
 * slot, authentication, the module's log and hooks, and entering the
 * module. Returns 0, or the exit code of the refusal. */
static int admit_module(struct conn *c, struct daemon_module *m, bool *read_only,
			struct module_run *r)
{
	char *user = c->user;

	/* without a reverse lookup, a hostname pattern that resolves to the
	 * client's address names it from now on (access.c: match_hostname) */
	char named[sizeof c->host] = "";
	bool allowed = access_check(m->hosts_allow, m->hosts_deny, c->addr, c->host,
				    m->forward_lookup, named, sizeof named);
	if (*named)
		snprintf(c->host, sizeof c->host, "%s", named);
	if (!allowed) {
		daemon_log(c->cfg, NULL, "rsync denied on module %s from %s (%s)", m->name,
			   c->host, c->addr);
		if (!m->list)
			send_line(c, "@ERROR: Unknown module '%s'\n", m->name);
		else
			send_line(c, "@ERROR: access denied to %s from %s (%s)\n", m->name, c->host,
				  c->addr);
		return RERR_STARTCLIENT;
	}
	/* Until the module's own log is opened (just before its hooks run),
	 * its lines go to the daemon's log (clientserver.c: log_init(1)):
	 * "the global log will still contain any authorization failures". */
	if (!c->dopts->server) /* not over a remote shell (am_daemon > 0) */
		daemon_log(c->cfg, NULL, "rsync allowed access on module %s from %s (%s)", m->name,
			   c->host, c->addr);
	if (!claim_slot(c, m)) {
		daemon_log(c->cfg, NULL, "max connections (%d) reached", m->max_connections);
		send_line(c, "@ERROR: max connections (%d) reached -- try again later\n",
			  m->max_connections);
		return RERR_STARTCLIENT;
	}
	if (!authenticate_for_module(c, m, read_only, user, sizeof c->user))
		return RERR_STARTCLIENT;
	if (!*user && *c->cfg->login_user) /* an SSH-listener login */
		snprintf(user, sizeof c->user, "%s", c->cfg->login_user);
	setenv("RSYNC_USER_NAME", user, 1);
	daemon_log_open(c->cfg, m); /* while we can: before chroot and setuid */
	if (!expand_after_auth(c, m))
		return RERR_UNSUPPORTED;
	if (!start_module_hooks(c, m, &r->pre))
		return RERR_STARTCLIENT;
	r->root_fd = enter_module(c, m);
	if (r->root_fd < 0)
		return RERR_STARTCLIENT;
	return 0;
}

/* Why the module refuses the parsed request, if it does: into ctx
 * (refusal, its code and form), the text in refusal[size]. */
static void request_refusal(struct conn *c, const struct daemon_module *m, bool read_only,
			    struct module_run *r, struct server_ctx *ctx, char *refusal,
			    size_t size)
{
	const struct ferry_opts *o = &r->args.o;
	int rc = r->args.rc;

	if (r->hook_refusal) {
		daemon_log(c->cfg, m, "%s", r->hook_refusal);
		ctx->refusal_verbatim = true;
		ctx->refusal_code = RERR_UNSUPPORTED;
	} else if (rc != 0) {
		snprintf(refusal, size, "%s", options_last_error(o));
		ctx->refusal_code = RERR_UNSUPPORTED;
	} else if (!o->server) {
		snprintf(refusal, size, "the client did not ask for --server");
		ctx->refusal_code = RERR_PROTOCOL;
	} else if (!o->sender && read_only) {
		/* rsync writes these "ERROR:" lines without its name */
		snprintf(refusal, size, "ERROR: module is read only\n");
		ctx->refusal_verbatim = true;
		ctx->refusal_code = RERR_SYNTAX;
	} else if (o->sender && m->write_only) {
		snprintf(refusal, size, "ERROR: module is write only\n");
		ctx->refusal_verbatim = true;
		ctx->refusal_code = RERR_SYNTAX;
	} else if (o->sender && read_only && o->remove_source_files) {
		snprintf(refusal, size,
			 "ERROR: --remove-%s-files cannot be used with a read-only module\n",
			 o->remove_source_files == 1 ? "source" : "sent");
		ctx->refusal_verbatim = true;
		ctx->refusal_code = RERR_SYNTAX;
	}
	if (!refusal[0] && !apply_module_policy(c, m, o->sender, r->root_fd)) {
		snprintf(refusal, size, "daemon security issue -- contact admin");
		ctx->refusal_code = RERR_UNSUPPORTED;
	}
	ctx->refusal = r->hook_refusal ? r->hook_refusal : refusal[0] ? refusal : NULL;
	char ferr[600];
	int nf = module_filters(m, &r->dfilters, ferr, sizeof ferr);
	r->have_filters = true;
	if (nf > 0)
		ctx->daemon_filters = &r->dfilters;
	int dirs_code = nf > 0 && rc == 0 && !o->sender && !ctx->refusal
				? push_dirs_refused(o, &r->dfilters)
				: 0;
	if (dirs_code) {
		/* rsync's wording; only the options.c one carries its name */
		snprintf(refusal, size, "Your options have been rejected by the server.\n");
		ctx->refusal = refusal;
		ctx->refusal_verbatim = dirs_code == RERR_SYNTAX;
		ctx->refusal_code = dirs_code;
	}
	if (nf < 0 && !ctx->refusal) {
		/* a rule file that cannot be read must not leave the module
		 * unfiltered (exclude.c: XFLG_FATAL_ERRORS) */
		snprintf(refusal, size, "%s", ferr);
		ctx->refusal = refusal;
		ctx->refusal_code = RERR_FILEIO;
	}
	if (rc == 0 && !module_path_args(m, o, r->root_fd, ctx->daemon_filters, &r->paths)) {
		daemon_log(c->cfg, m, "expanding the path arguments failed: %s", strerror(errno));
		if (!ctx->refusal) {
			snprintf(refusal, size, "ERROR: expanding the path arguments failed: %s",
				 strerror(errno));
			ctx->refusal = refusal;
			ctx->refusal_code = errno == E2BIG ? RERR_SYNTAX : RERR_MALLOC;
		}
	}
	ctx->paths = r->paths.v;
	ctx->npaths = (int)r->paths.n;
}

/* The options the engine runs with: the client's, as the module and the
 * daemon's own options bound them; set up the session for them. */
static void module_run_opts(struct conn *c, const struct daemon_module *m,
			    const struct ferry_opts *o, struct ferry_opts *run_opts)
{
	*run_opts = *o;
	if (m->ignore_errors)
		run_opts->ignore_errors = true;
	if (m->temp_dir && *m->temp_dir && !run_opts->temp_dir) {
		run_opts->temp_dir = m->temp_dir;
		run_opts->temp_dir_trusted = true;
	}
	/* the module's "insecure links" (a client's --insecure-links was refused) */
	run_opts->insecure_links = m->insecure_links;
	if (m->open_noatime >= 0) /* the module decides when it says */
		run_opts->open_noatime = m->open_noatime == 1;
	if (m->timeout && (!run_opts->timeout || m->timeout < run_opts->timeout))
		run_opts->timeout = m->timeout;
	apply_module_privilege(m, run_opts);
	c->s.opts = run_opts;
	session_set_privilege(&c->s);
	c->s.skip_compress = run_opts->skip_compress;
	c->s.module.dont_compress = m->dont_compress;
	c->s.in.timeout_ms = c->s.out.timeout_ms = run_opts->timeout * 1000;
	c->s.in.deadline_ms = 0; /* the handshake is over */
	/* the daemon's own --bwlimit caps what a client may ask for */
	if (c->dopts->bwlimit && (!run_opts->bwlimit || run_opts->bwlimit > c->dopts->bwlimit))
		run_opts->bwlimit = c->dopts->bwlimit;
	c->s.out.bwlimit = run_opts->bwlimit;
	/* a client must not make the daemon start hundreds of zstd workers
	 * (rsync 3.5's cap, CVE-2026-70455) */
	if (run_opts->compress_threads > TOKEN_DAEMON_MAX_THREADS)
		run_opts->compress_threads = TOKEN_DAEMON_MAX_THREADS;
}

static int serve_module(struct conn *c, struct daemon_module *m)
{
	struct module_run r = {.root_fd = -1, .pre = {.pid = -1, .arg_fd = -1, .out_fd = -1}};
	bool read_only = m->read_only;
	char *user = c->user;

	c->m = m;
	int code = admit_module(c, m, &read_only, &r);
	if (code)
		goto out;
	c->s.am_root = geteuid() == 0; /* we may have dropped to the module's uid */
	set_handshake_deadline(c, m->timeout);
	send_line(c, "@RSYNCD: OK\n");
	if (!module_args_read(c, m, &r.args)) {
		daemon_log(c->cfg, m, "invalid argument list from %s (%s)", c->host, c->addr);
		code = RERR_STREAMIO;
		goto out;
	}
	if (r.args.lost) {
		code = RERR_STREAMIO;
		goto out;
	}
	struct ferry_opts *o = &r.args.o;
	if (r.args.rc == 0)
		alloc_limit_set(alloc_limit_for(o->max_alloc != NULL, (size_t)o->max_alloc_bytes,
						true, alloc_limit()));
	/* with -s the hooks and the log see the second list (clientserver.c) */
	char **req_argv = r.args.merged ? r.args.merged : r.args.argv;
	int req_argc = 0;
	while (r.args.merged && r.args.merged[req_argc])
		req_argc++;
	if (!r.args.merged)
		req_argc = r.args.argc;
	char *request = client_request(req_argv, req_argc);
	r.hook_refusal = r.pre.pid > 0 ? run_pre_xfer_hook(&r.pre, request, req_argv, req_argc,
							   m->name)
				       : NULL;
	start_name_converter(c, request, req_argv, req_argc);
	struct server_ctx ctx = {.root_fd = r.root_fd, .confined = true,
				 .remote_protocol = c->remote_protocol,
				 .client_caps = r.args.rc == 0 ? o->server_caps : NULL};
	char refusal[600] = "";
	request_refusal(c, m, read_only, &r, &ctx, refusal, sizeof refusal);
	if (request)
		daemon_log(c->cfg, m, "rsync %s %s from %s%s%s (%s)", o->sender ? "on" : "to",
			   request, user, *user ? "@" : "", c->host, c->addr);
	free(request);
	struct ferry_opts run_opts;
	module_run_opts(c, m, o, &run_opts);
	const int exit_at = __LINE__;
	char told[sizeof refusal + 6000]; /* a hook's message is up to 5119 bytes */
	if (ctx.refusal) {
		if (ctx.refusal != r.hook_refusal)
			daemon_log(c->cfg, m, "%s%.*s", ctx.refusal_verbatim ? "" : "ferry: ",
				   (int)strcspn(ctx.refusal, "\n"), ctx.refusal);
		/* the client sees the error line the daemon logs too, as
		 * rsyncd's log_exit sends it */
		char end[300];
		size_t n = strlen(ctx.refusal);
		exit_text(end, sizeof end, ctx.refusal_code, o->sender, exit_at);
		snprintf(told, sizeof told, "%s%s%s%s\n", ctx.refusal_verbatim ? "" : "ferry: ",
			 ctx.refusal, n && ctx.refusal[n - 1] == '\n' ? "" : "\n", end);
		ctx.refusal = told;
		ctx.refusal_verbatim = true;
	} else {
		daemon_log(c->cfg, m, o->sender ? "building file list" : "receiving file list");
	}
	/* from here the engine's messages name the module and go to its log
	 * too (log.c: rwrite with am_daemon; util1.c: full_fname) */
	c->s.module.name = m->name;
	c->s.module.chrooted = c->chrooted;
	c->s.hooks.daemon_log_line = log_transfer_line;
	c->s.hooks.daemon_log_ctx = c;
	code = server_run(&c->s, &ctx);
	log_end(c, code, exit_at);
out:
	module_run_free(&r);
	return code;
}

/* "proxy protocol": the peer must be a trusted proxy, and its header
 * names the real client, whose address then counts for access checks and
 * logging (clientserver.c: start_daemon). */
static bool accept_proxy_header(struct conn *c)
{
	const char *trusted = c->cfg->proxy_protocol_hosts;
	char addr[sizeof c->addr];

	if (!trusted || !*trusted ||
	    !access_list_match(trusted, c->addr, c->host, false, false, NULL, 0)) {
		daemon_log(c->cfg, NULL, "proxy protocol rejected from untrusted peer %s (%s)",
			   c->host, c->addr);
		return false;
	}
	if (!proxy_header_read(&c->s.in, addr, sizeof addr)) {
		daemon_log(c->cfg, NULL, "invalid proxy protocol header from %s (%s)", c->host,
			   c->addr);
		return false;
	}
	if (*addr) {
		snprintf(c->addr, sizeof c->addr, "%s", addr);
		addr_name(c->addr, c->host, sizeof c->host, c->cfg->defaults.reverse_lookup,
			  c->lookup_note);
		log_lookup_note(c);
	}
	return true;
}

/* What a connection holds, released when it ends. */
static void conn_free(struct conn *c)
{
	if (c->lock_fd >= 0)
		close(c->lock_fd);
	free(c->early_input);
	session_free(&c->s);
}

int daemon_serve_client(const struct daemon_config *cfg, const struct ferry_opts *dopts,
			int fd_in, int fd_out)
{
	struct conn c = {.cfg = cfg, .dopts = dopts, .lock_fd = -1, .fd_in = fd_in,
			 .fd_out = fd_out};
	char line[LINE_MAX_LEN];
	int code = 0;

	/* the listener ignores SIGHUP and dies by SIGTERM; one connection
	 * ends as a transfer does, logging code 20 */
	stop_signal_install(NULL);
	session_init(&c.s, dopts, fd_in, fd_out);
	c.s.in.timeout_ms = c.s.out.timeout_ms = 60 * 1000; /* bound the handshake */
	set_handshake_deadline(&c, cfg->defaults.timeout);
	client_addr_name(fd_in, c.addr, sizeof c.addr, c.host, sizeof c.host,
			 cfg->defaults.reverse_lookup, c.lookup_note);
	log_lookup_note(&c);
	/* over a remote shell without a client address rsync says 0.0.0.0
	 * (clientname.c: client_addr) */
	if (!*c.addr)
		snprintf(c.addr, sizeof c.addr, "%s", dopts->server ? "0.0.0.0" : "UNKNOWN");
	if (cfg->proxy_protocol && !accept_proxy_header(&c)) {
		code = RERR_STARTCLIENT;
		goto out;
	}
	if (!enter_daemon_jail(cfg)) {
		code = RERR_STARTCLIENT;
		goto out;
	}
	daemon_log(cfg, NULL, "connect from %s (%s)", c.host, c.addr);
	if (!send_line(&c, "@RSYNCD: %d.0 %s\n", PROTOCOL_NEWEST, auth_default_list()))
		goto out;
	send_motd(&c);
	if (!read_client_greeting(&c) || !wire_read_line(&c.s.in, line, sizeof line))
		goto out;
	if (strncmp(line, EARLY_INPUT_CMD, strlen(EARLY_INPUT_CMD)) == 0 &&
	    !read_early_input(&c, line, sizeof line))
		goto out;
	if (!*line || strcmp(line, "#list") == 0) {
		daemon_log(cfg, NULL, "module-list request from %s (%s)", c.host, c.addr);
		send_listing(&c);
		goto out;
	}
	if (line[0] == '#') {
		send_line(&c, "@ERROR: Unknown command '%s'\n", line);
		goto out;
	}
	const struct daemon_module *m = config_find_module(cfg, line);
	if (!m) {
		daemon_log(cfg, NULL, "unknown module '%s' tried from %s (%s)", line, c.host, c.addr);
		send_line(&c, "@ERROR: Unknown module '%s'\n", line);
		code = RERR_STARTCLIENT;
		goto out;
	}
	code = serve_expanded(&c, m);
out:
	conn_free(&c);
	return code;
}

/* The client-driven steps of serve_module, without its effects. */
static int check_module_request(struct conn *c, const struct daemon_module *m)
{
	bool read_only = m->read_only;
	struct module_args a = {0};

	c->m = m;
	if (!authenticate_for_module(c, m, &read_only, c->user, sizeof c->user))
		return RERR_STARTCLIENT;
	if (!module_args_read(c, m, &a))
		return RERR_STREAMIO;
	int rc = a.rc;
	module_args_free(&a);
	return rc == 0 ? 0 : RERR_SYNTAX;
}

int daemon_handshake_check(const struct daemon_config *cfg, const struct ferry_opts *dopts,
			   int fd_in, int fd_out)
{
	struct conn c = {.cfg = cfg, .dopts = dopts, .lock_fd = -1, .fd_in = fd_in,
			 .fd_out = fd_out};
	char line[LINE_MAX_LEN];
	int code = RERR_STARTCLIENT;

	session_init(&c.s, dopts, fd_in, fd_out);
	snprintf(c.addr, sizeof c.addr, "127.0.0.1");
	snprintf(c.host, sizeof c.host, "localhost");
	if (!read_client_greeting(&c) || !wire_read_line(&c.s.in, line, sizeof line))
		goto out;
	if (strncmp(line, EARLY_INPUT_CMD, strlen(EARLY_INPUT_CMD)) == 0 &&
	    !read_early_input(&c, line, sizeof line))
		goto out;
	if (!*line || strcmp(line, "#list") == 0) {
		send_listing(&c);
		code = 0;
		goto out;
	}
	const struct daemon_module *m = line[0] == '#' ? NULL : config_find_module(cfg, line);
	if (m)
		code = check_module_request(&c, m);
out:
	conn_free(&c);
	return code;
}
