/*
 * Deciding whether the built-in SSH client may read the ssh_config files.
 *
 * libssh's own parser applies the files (ssh_options_parse_config), but it
 * silently ignores what it does not support and differs from OpenSSH in a
 * few rules. A lexical pass here classifies every line of the files and
 * their Includes, without deciding which block applies to which host: the
 * built-in is used only when every line is one that libssh and ferry
 * together honour exactly as OpenSSH does; otherwise ssh is spawned.
 */
#ifndef FERRY_CLIENT_SSH_CONFIG_SCAN_H
#define FERRY_CLIENT_SSH_CONFIG_SCAN_H

#include <stdbool.h>

#define SSH_CFG_GLOBAL_PATH "/etc/ssh/ssh_config" /* libssh's GLOBAL_CLIENT_CONFIG */
#define SSH_CFG_MAX_FILES 64     /* config files read, Includes counted */
#define SSH_CFG_MAX_DEPTH 16     /* Include nesting, as libssh's limit */
#define SSH_CFG_MAX_EVENTS 512   /* Host/HostName/Include lines kept */
#define SSH_CFG_MAX_SENDENV 32   /* SendEnv patterns */

/* Where the files are. user_config is the -F file or ~/.ssh/config;
 * global_config is NULL with -F (ssh then reads no other file). */
struct ssh_cfg_paths {
	const char *user_config;
	bool user_config_required; /* -F: ssh refuses a file it cannot read */
	const char *global_config;
	const char *global_dir;    /* relative Includes of the global file */
	const char *pw_home;       /* the home directory from the password file */
	const char *env_home;      /* $HOME, or NULL */
};

#define SSH_CFG_PER_HOST 2

/* The lines that decide which HostName applies, in reading order. */
enum ssh_cfg_event_kind {
	SSH_CFG_FILE,      /* a top-level file starts: every line applies again */
	SSH_CFG_HOST,      /* text: the patterns, blank-joined */
	SSH_CFG_HOSTNAME,  /* text: the name */
	SSH_CFG_INC_IN,    /* an Included file starts */
	SSH_CFG_INC_OUT,   /* ... and ends: ssh goes back to the block it was in */
};

struct ssh_cfg_event {
	enum ssh_cfg_event_kind kind;
	char *text;
};

/* What the pass found. */
struct ssh_cfg_scan {
	char why[512];                     /* empty when the built-in may go on */
	struct ssh_cfg_event events[SSH_CFG_MAX_EVENTS];
	int nevents;
	char *sendenv[SSH_CFG_MAX_SENDENV]; /* SendEnv patterns, all for every host */
	int nsendenv;
	int gssapi;                        /* GSSAPIAuthentication for every host: -1 unset */
	int hash_known_hosts;              /* HashKnownHosts for every host: -1 unset,
					    * SSH_CFG_PER_HOST when a Host block decides */
};

/* Classify every line of the files (and the files they Include). Returns
 * true when the built-in honours them all exactly; false with sc->why
 * naming the first file, line and reason otherwise. Release with
 * ssh_cfg_scan_release() either way. */
bool ssh_cfg_scan(const struct ssh_cfg_paths *paths, struct ssh_cfg_scan *sc);
void ssh_cfg_scan_release(struct ssh_cfg_scan *sc);

/* libssh matches the Host lines that follow an applied HostName against
 * the new name, OpenSSH always against the name given. True when the
 * HostName ssh applies for alias (found by ssh's rules over the recorded
 * lines) is hostname, the name libssh ended with, and no later Host line
 * tells the two names apart, so both apply the same blocks. */
bool ssh_cfg_hosts_agree(const struct ssh_cfg_scan *sc, const char *alias, const char *hostname);

/* OpenSSH's pattern match: '*' any run, '?' one character, no classes. */
bool ssh_cfg_pattern_match(const char *pattern, const char *s);

/* A comma-separated cipher or MAC list whose every name the built-in
 * knows (ssh refuses a list holding an unknown name; libssh would drop
 * it silently). */
bool ssh_cfg_known_ciphers(const char *list);
bool ssh_cfg_known_macs(const char *list);

#endif
