/*
 * What the files of one daemon connection (daemon/serve*.c) share: the
 * connection, and the steps serve.c runs in order.
 */
#ifndef FERRY_DAEMON_SERVE_PRIV_H
#define FERRY_DAEMON_SERVE_PRIV_H

#include <stdbool.h>
#include <stddef.h>

#include "daemon/access.h"
#include "daemon/auth.h"
#include "daemon/config.h"
#include "daemon/module_glob.h"
#include "daemon/xfer_exec.h"
#include "proto/filter/filter.h"
#include "proto/core/logfmt.h"
#include "proto/base/opts.h"
#include "proto/core/session.h"

#define LINE_MAX_LEN 5120   /* BIGPATHBUFLEN */
#define MAX_DAEMON_ARGS 16000
#define MAX_ARGS_BYTES (1024 * 1024)
#define EARLY_INPUT_CMD "#early_input="
#define EARLY_INPUT_MAX 5120
#define HOOK_REQUEST_MAX 1024 /* rsync stops adding to RSYNC_REQUEST here */

struct conn {
	const struct daemon_config *cfg;
	const struct daemon_module *m;
	bool chrooted;
	bool inner_subdir;       /* chrooted to OUTER of "path = OUTER/./SUB" */
	char user[AUTH_USER_MAX + 1];
	const struct ferry_opts *dopts;
	struct session s;
	char addr[80];
	char host[256];
	char lookup_note[ACCESS_NOTE_MAX]; /* why host was not found, or "" */
	int remote_protocol;
	int remote_sub;
	char digests[512];
	int lock_fd;
	int fd_in, fd_out;
	char *early_input;       /* "#early_input=" bytes for early exec */
	size_t early_input_len;
	struct xfer_hook namecvt; /* the module's "name converter", if running */
	struct log_item log_who;  /* %m %P %h %a %u of the transfer log */
};

/* The client's argument list after "@RSYNCD: OK" and the options parsed
 * from it (with -s, from it and the secluded list together). */
struct module_args {
	int argc;
	char **argv;      /* as read; NULL when the list could not be read */
	char **merged;    /* with -s: both lists, else NULL */
	char **secluded;  /* with -s: the second list, else NULL */
	struct ferry_opts o;
	bool parsed;      /* o holds options to free */
	int rc;           /* the parser's result: 0, or its exit code */
	bool lost;        /* the secluded list could not be read */
};

/* ---- daemon/serve_conn.c ---- */

/* Why the client's name could not be found (clientname.c: client_name). */
void log_lookup_note(const struct conn *c);

/* Send the client one formatted line of the daemon protocol (cut at
 * LINE_MAX_LEN) and flush it. False when it could not be written. */
bool send_line(struct conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One absolute bound for the whole handshake (greeting, module, auth,
 * arguments): the "timeout" in force, at most 60 seconds, as rsync 3.5
 * does. Hooks run between reads, so the bound is set again before the
 * arguments are read. */
void set_handshake_deadline(struct conn *c, int timeout_s);

/* How a module's admin paths are opened: never with a hint on stderr, and
 * following any symlink only with "insecure links = yes". */
unsigned module_oppath_how(const struct daemon_module *m);

/* ---- daemon/serve_greet.c ---- */

/* The config's "motd file" after our greeting, and the empty line that
 * ends it (sent even when the file cannot be read). */
void send_motd(struct conn *c);

/* "@RSYNCD: 31.0 md5 md4" from the client (clientserver.c: exchange_protocols). */
bool read_client_greeting(struct conn *c);

/* "#early_input=LEN" and LEN bytes before the module name (rsync 3.2.4+
 * --early-input), kept for the module's early exec; then the next line. */
bool read_early_input(struct conn *c, char *line, size_t size);

/* The "#list" answer: every module not hidden by "list = no", then
 * "@RSYNCD: EXIT" (protocol 25 and later). */
void send_listing(struct conn *c);

/* Claim one of the module's `max connections` slots with a record lock on
 * the lock file (connection.c: claim_connection). */
bool claim_slot(struct conn *c, const struct daemon_module *m);

/* The module's "auth users" challenge, when it has one: on success user
 * holds the name the client logged in as ("" without auth) and *read_only
 * may be changed by the user's ":ro"/":rw" rule. False after the client
 * was told why it was refused. */
bool authenticate_for_module(struct conn *c, const struct daemon_module *m, bool *read_only,
			 char *user, size_t usz);

/* ---- daemon/serve_enter.c ---- */

/* chroot (as `use chroot` says), open the module root, and drop to the
 * module's uid/gid when we are root. A "/./" in the path asks for a chroot
 * even when `use chroot` is unset. Returns the root fd or -1. */
int enter_module(struct conn *c, const struct daemon_module *m);

/* "daemon chroot", "daemon gid", "daemon uid": confine the whole
 * connection before it reads anything from the client (clientserver.c:
 * start_daemon). Names are looked up after the chroot, as rsync does, so
 * they come from the chroot's /etc. */
bool enter_daemon_jail(const struct daemon_config *cfg);

/* ---- daemon/serve_args.c ---- */

/* A path argument "module/some/path" as a path inside the module: the
 * module name stripped, "." and empty components dropped, ".." never
 * climbing above the root (util1.c: sanitize_path). A trailing slash is
 * kept: it decides whether a directory or its contents are sent. With -R
 * the "." components stay (SP_KEEP_DOT_DIRS): "/./" marks where the
 * sent names begin. */
void module_arg_relative(const char *arg, const char *module, bool keep_dots, char *out,
			    size_t size);

/* The path arguments as the module will use them: each made relative to
 * the module, its wildcards expanded (io.c: read_args calls
 * glob_expand_module). Without -s an argument may name several paths,
 * "mod/a mod/b", split at " mod/" as rsync does. */
bool module_path_args(const struct daemon_module *m, const struct ferry_opts *o,
			     int root_fd, const struct filter_list *filters,
			     struct path_list *out);

/* The module's filter, include from, include, exclude from and exclude,
 * in that order, parsed as rsyncd does (clientserver.c: rsync_module):
 * "filter" as filter rules split at whitespace, the others as patterns
 * ("- "/"+ " prefixes allowed), the lists split at whitespace, the files
 * one a line. Returns 1 when there are rules, 0 when none, -1 when a file
 * cannot be read or a rule is bad (err says why). */
int module_filters(const struct daemon_module *m, struct filter_list *fl, char *err,
			  size_t errsz);

/* A push's side directories must stay out of the module's excluded names,
 * as rsync checks them: --temp-dir and --backup-dir while it parses the
 * options (options.c, exit 4), an absolute --partial-dir and the --*-dest
 * dirs when the receiver starts (main.c: do_server_recv, exit 1). Returns
 * 0, or the exit code of the refusal. */
int push_dirs_refused(const struct ferry_opts *o, const struct filter_list *fl);

/* Read the argument list and parse it as the module's refusals allow.
 * False when the list could not be read; else a->rc and a->lost say how
 * the parse went. module_args_free() releases a either way. */
bool module_args_read(struct conn *c, const struct daemon_module *m,
			     struct module_args *a);

/* Release what module_args_read() left in a (also after it failed). */
void module_args_free(struct module_args *a);

/* ---- daemon/serve_hooks.c ---- */

/* Before the module is entered (so the hooks run with the daemon's
 * privileges, outside the chroot): fork off the post-xfer exec waiter, run
 * early exec, and start pre-xfer exec, which then waits for the request. */
bool start_module_hooks(struct conn *c, const struct daemon_module *m,
			       struct xfer_hook *pre);

/* The client's request: its path arguments after ".", space-separated,
 * added while the string is shorter than 1024 bytes (io.c: read_args).
 * NULL when there are none; rsync then logs no "rsync on" line and hooks
 * see "(NONE)". */
char *client_request(char *const *argv, int argc);

/* Give pre-xfer exec the client's request and its whole argument list;
 * NULL when it approves, else the message for the client. */
char *run_pre_xfer_hook(struct xfer_hook *pre, const char *request, char **argv,
			       int argc, const char *module);

/* Give the name converter the request and arguments as pre-xfer exec
 * gets them, keeping its stdin open for the lookups: from now on the
 * session asks it instead of the passwd and group files (idmap.c). */
void start_name_converter(struct conn *c, const char *request, char **argv, int argc);

#endif
