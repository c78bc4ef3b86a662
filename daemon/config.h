/*
 * rsyncd.conf for `ferry --daemon`: the parser (daemon/config.c), the one
 * parameter table (daemon/config_params.c) and the %VAR% expansion.
 *
 * The file format is rsync's own (params.c, loadparm.c), byte for byte:
 * `name = value` lines, [module] sections, [global], &include/&merge,
 * trailing-backslash continuations, # and ; comment lines. Where rsync
 * warns and carries on (an unknown parameter, a bad boolean, a global
 * parameter inside a module, a line with no '='), ferry refuses the file:
 * config_load_* returns -1 and err says what is wrong and where, one error
 * a line (the parser reads past the lines rsync would skip, so every such
 * mistake is listed, up to CONFIG_MAX_ERRORS), e.g.
 *   unknown parameter "foo" at /etc/ferryd.conf:12
 *   badly formed line "hosts allow 10.0.0.0/8" (no '=') at /etc/ferryd.conf:15
 * The caller prints each line as "ferry: %s\n" and exits with RERR_SYNTAX
 * (1); a running daemon logs them and keeps its last good configuration.
 *
 * Strings are stored exactly as written (after rsync's trimming) and are NOT
 * %VAR%-expanded at load time: rsync expands them lazily, at first use, so
 * that `path = /home/%RSYNC_USER_NAME%` sees the variables the daemon sets
 * for the connection. Call config_module_expand() (or config_expand() for a
 * single value) once the connection's environment is in place. Booleans,
 * integers and the syslog facility are expanded when read, as rsync does.
 */
#ifndef FERRY_DAEMON_CONFIG_H
#define FERRY_DAEMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#define CONFIG_DEFAULT_FILE "/etc/ferryd.conf" /* --config overrides */
#define CONFIG_DEFAULT_PORT 873          /* used when port is 0 and no --port */
#define CONFIG_DEFAULT_LOCK_FILE "/var/run/rsyncd.lock"
#define CONFIG_DEFAULT_LOG_FORMAT "%o %h [%a] %m (%u) %f %l"
/* rsync's is 5: a burst of clients then overflows the queue and the
 * excess get TCP resets instead of the "max connections" refusal. The
 * kernel caps it at net.core.somaxconn. */
#define CONFIG_DEFAULT_LISTEN_BACKLOG 1024

/* Bounds. A config that exceeds one is refused with a message naming it. */
#define CONFIG_MAX_LINE 8192             /* one logical line, continuations included */
#define CONFIG_MAX_INCLUDE_DEPTH 8       /* nested &include/&merge */
#define CONFIG_MAX_FILE_SIZE (4 << 20)   /* bytes in one config file */
#define CONFIG_MAX_FILES 1024            /* files read by one load */
#define CONFIG_MAX_MODULES 10000
#define CONFIG_MAX_DPARAMS 256
#define CONFIG_MAX_ERRORS 50             /* errors listed before the parser gives up */

#define CONFIG_UNSET (-1)                /* a three-state ("BOOL3") parameter left unset */

/*
 * One [module] section, or (as daemon_config.defaults) the module parameters
 * of the global section, which every module starts from. Every rsync 3.5
 * module parameter has a field; each field's comment gives its rsyncd.conf
 * name and rsync's default. A string is NULL when neither the module nor the
 * global section set it.
 */
struct daemon_module {
	char *name;               /* the [name] (rsync also accepts "name = x") */
	char *path;               /* "path", required; trailing '/' removed */
	char *comment;            /* "comment" */
	char *uid;                /* "uid"; NULL: nobody when root, else unchanged */
	char *gid;                /* "gid"; NULL: nobody/nogroup when root */
	char *lock_file;          /* "lock file", /var/run/rsyncd.lock */
	char *auth_users;         /* "auth users" */
	char *secrets_file;       /* "secrets file" */
	char *auth_digest;        /* "auth digest" (3.5): weakest digest accepted */
	char *hosts_allow;        /* "hosts allow" */
	char *hosts_deny;         /* "hosts deny" */
	char *exclude;            /* "exclude" */
	char *include;            /* "include" */
	char *filter;             /* "filter" */
	char *exclude_from;       /* "exclude from" */
	char *include_from;       /* "include from" */
	char *refuse_options;     /* "refuse options" */
	char *dont_compress;      /* "dont compress", rsync's media-suffix list */
	char *log_file;           /* "log file"; NULL: syslog */
	char *syslog_tag;         /* "syslog tag", rsyncd */
	char *log_format;         /* "log format", "%o %h [%a] %m (%u) %f %l" */
	char *incoming_chmod;     /* "incoming chmod" */
	char *outgoing_chmod;     /* "outgoing chmod" */
	char *early_exec;         /* "early exec" */
	char *pre_xfer_exec;      /* "pre-xfer exec" */
	char *post_xfer_exec;     /* "post-xfer exec" */
	char *name_converter;     /* "name converter" */
	char *charset;            /* "charset" */
	char *temp_dir;           /* "temp dir"; trailing '/' removed */
	char *ssh_authorized_keys; /* "ssh authorized keys" (ferry): keys that may use it over SSH */

	int max_connections;      /* "max connections", 0 = unlimited, < 0 disables */
	int max_verbosity;        /* "max verbosity", 1 */
	int timeout;              /* "timeout", 0 = none */
	int syslog_facility;      /* "syslog facility" as a LOG_* value, LOG_DAEMON */

	bool list;                /* "list", yes */
	bool read_only;           /* "read only", yes */
	bool write_only;          /* "write only", no */
	bool strict_modes;        /* "strict modes", yes */
	bool ignore_errors;       /* "ignore errors", no */
	bool ignore_nonreadable;  /* "ignore nonreadable", no */
	bool transfer_logging;    /* "transfer logging", no */
	bool reverse_lookup;      /* "reverse lookup", yes */
	bool forward_lookup;      /* "forward lookup", yes */
	bool fake_super;          /* "fake super", no */
	bool insecure_links;      /* "insecure links" (3.5), no */
	bool ssh_allow_server;    /* "ssh allow server" (ferry), no: plain `rsync --server` over SSH */

	/* Three-state: CONFIG_UNSET (-1, the default), 0 or 1. */
	int use_chroot;           /* "use chroot" */
	int numeric_ids;          /* "numeric ids" */
	int munge_symlinks;       /* "munge symlinks" */
	int open_noatime;         /* "open noatime" */

	char *defined_at;         /* "file:line" of the [section] header; NULL in defaults */
};

/* OpenSSH's MaxStartups: connections that have not authenticated yet are
 * refused at random from start on, with probability rate% rising linearly
 * to 100% at full. */
struct max_startups {
	int start, rate, full;
};

/* The bound on "ssh max startups"' full: the listener polls each
 * unauthenticated connection's startup pipe. */
#define CONFIG_MAX_STARTUPS_FULL 10000

/* Parse "start:rate:full" (or "full" alone: start = full, as sshd reads a
 * single number) into *out. Requires 1 <= start <= full <=
 * CONFIG_MAX_STARTUPS_FULL and 0 <= rate <= 100 (rate must be below 100
 * only when start < full, as sshd). Returns 0, or -1 leaving *out as it
 * was. */
int config_parse_max_startups(const char *s, struct max_startups *out);

/* A --dparam NAME=VALUE override, kept across reloads. */
struct config_dparam {
	char *name;
	char *value;
};

struct daemon_config {
	/* Global-only parameters. */
	char *motd_file;            /* "motd file" */
	char *pid_file;             /* "pid file" */
	char *socket_options;       /* "socket options" */
	char *daemon_chroot;        /* "daemon chroot" */
	char *daemon_uid;           /* "daemon uid" */
	char *daemon_gid;           /* "daemon gid" */
	char *address;              /* "address" (rsync's bind_address) */
	char *proxy_protocol_hosts; /* "proxy protocol hosts" (3.5) */
	int port;                   /* "port"; 0 (rsync's default): 873 unless --port */
	int listen_backlog;         /* "listen backlog", CONFIG_DEFAULT_LISTEN_BACKLOG (rsync: 5) */
	bool proxy_protocol;        /* "proxy protocol", no */

	/* ferry's SSH listener (daemon/ssh_listen.c); no rsync equivalent. */
	int ssh_port;               /* "ssh port"; 0: no SSH listener */
	char *ssh_host_key;         /* "ssh host key": private key files, blank separated */
	int ssh_login_grace_time;   /* "ssh login grace time", seconds to get to a command, 30 */
	int ssh_max_auth_tries;     /* "ssh max auth tries", 6 */
	struct max_startups ssh_max_startups; /* "ssh max startups", 10:30:100 */
	int max_connections_per_host; /* "max connections per host", 0 = unlimited */
	/* Set by the SSH listener in the copy it serves one login with: the
	 * SSH user, who stands as the module's authenticated user (%u,
	 * RSYNC_USER_NAME) since the key replaced "auth users". */
	char login_user[256];

	struct daemon_module defaults;  /* module parameters of the global section */
	struct daemon_module *modules;  /* in the order first defined */
	size_t nmodules;

	struct config_dparam *dparams;  /* config_set_param(), applied at each load */
	size_t ndparams;
	bool loaded;                    /* a config_load_* succeeded */
	bool quiet_load;                /* set before a load: no warnings on
					 * stderr (a per-connection re-read) */
};

/* ---------------------------------------------------------------- loading */

/* Zero *c and give every parameter rsync's default. A zeroed struct is also
 * a valid starting point for config_set_param() and config_load_*(). */
void config_init(struct daemon_config *c);

/* Parse the config file at path (rsync's lp_load). *c must be zeroed, from
 * config_init(), or from an earlier load (a reload replaces it). Returns 0,
 * or -1 with the errors in err, one a line; on failure *c is left as it was, so a failed
 * reload keeps the running configuration. --dparam overrides recorded with
 * config_set_param() are applied where rsync applies them: at the end of
 * the initial global section, just before the first [module] header (or at
 * the end when there is none), so modules inherit them and a later [global]
 * section may still override them. */
int config_load_file(struct daemon_config *c, const char *path, char *err, size_t errsz);

/* The same for an in-memory config (the embedded default, tests). name is
 * used in messages in place of a file name. &include/&merge paths are taken
 * as given (relative ones from the current directory, as rsync does). */
int config_load_string(struct daemon_config *c, const char *text, const char *name,
		       char *err, size_t errsz);

/* Free everything *c owns, dparams included, and zero it. */
void config_free(struct daemon_config *c);

/* The module a client asked for: exact, case-sensitive name match, the last
 * definition winning (rsync's lp_number). NULL if there is none. */
const struct daemon_module *config_find_module(const struct daemon_config *c,
					       const char *name);

/* Record a --dparam / -M override of a global-section parameter (rsync's
 * set_dparams). The name must be a known parameter and the value valid for
 * it (checked now, as rsync does at option time); leading blanks of value
 * are dropped. Must come before config_load_*; the overrides then persist
 * across reloads. Returns 0, or -1 with a message in err. */
int config_set_param(struct daemon_config *c, const char *name, const char *value,
		     char *err, size_t errsz);
/* The same for one "NAME=VALUE" argument as given on the command line. */
int config_add_dparam(struct daemon_config *c, const char *arg, char *err, size_t errsz);

/* ------------------------------------------------------------- values */

/* yes/no, true/false, 1/0, case-insensitive, blanks ignored (loadparm.c:
 * set_boolean). Returns false (and leaves *out) for anything else. */
bool config_parse_bool(const char *s, bool *out);

/* Expand %VAR% environment references as rsync does (loadparm.c:
 * expand_vars): a '%' followed by an upper-case letter starts a reference
 * that runs to the next '%'; a reference to an unset variable, and every
 * other '%', is copied unchanged (so "%%" stays "%%", as in rsync).
 * Returns a malloc'd string (NULL for NULL or out of memory). */
char *config_expand(const char *s);

/* The variant for strings run by /bin/sh (early/pre-xfer/post-xfer exec,
 * name converter): a %RSYNC_*% value is quoted for the shell quoting
 * context it lands in, and refused outright (NULL, message in err) if it
 * holds a shell metacharacter, whitespace or a control character
 * (loadparm.c: expand_vars with shell_escape). Other variables are copied
 * verbatim. */
char *config_expand_shell(const char *s, char *err, size_t errsz);

/* Deep copy of m with every string %VAR%-expanded in the current
 * environment, except path and the four shell hooks, which are copied as
 * written for config_module_expand_late(). Returns 0, or -1 with err set
 * (*out is then empty). Free with config_module_free(). */
int config_module_expand(const struct daemon_module *m, struct daemon_module *out,
			 char *err, size_t errsz);

/* Once the connection is authenticated (RSYNC_USER_NAME set): expand m's
 * path in place, export it as RSYNC_MODULE_PATH, then expand the early,
 * pre-xfer and post-xfer exec and name converter with config_expand_shell,
 * so they see both (clientserver.c: rsync_module reads them in that order).
 * m must come from config_module_expand() and be expanded late only once.
 * Returns 0, or -1 with err set (the refusal of a %RSYNC_*% value holding
 * a shell metacharacter, or out of memory); m stays freeable either way. */
int config_module_expand_late(struct daemon_module *m, char *err, size_t errsz);
void config_module_free(struct daemon_module *m);

/* ------------------------------------------------------ the parameter table */

enum config_type {
	CT_STRING,   /* stored as written */
	CT_PATH,     /* a string with trailing slashes removed */
	CT_INT,      /* decimal, within [min, max] */
	CT_BOOL,     /* config_parse_bool */
	CT_BOOL3,    /* a boolean, or "unset" / -1 */
	CT_FACILITY, /* a syslog facility name, or a positive number */
	CT_STARTUPS, /* OpenSSH's MaxStartups "start:rate:full" (struct max_startups) */
};

struct config_param {
	const char *label;     /* as written in rsyncd.conf(5) */
	enum config_type type;
	bool global_only;      /* struct daemon_config, else struct daemon_module */
	size_t offset;         /* of the field in that struct */
	const char *def;       /* rsync's default in config syntax; NULL: unset */
	int min, max;          /* CT_INT bounds */
};

/* All parameters (daemon-parm.txt), global ones first. */
const struct config_param *config_params(size_t *count);
/* Look a name up as rsync does: case-insensitive, blanks ignored
 * ("read only" = "readonly" = "Read Only"). NULL if unknown. */
const struct config_param *config_param_find(const char *name);

#endif
