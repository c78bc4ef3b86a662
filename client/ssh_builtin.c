/*
 * The built-in SSH transport: when the remote shell is plain ssh with
 * options we understand, ferry opens the SSH connection itself with libssh
 * and runs the remote command on an exec channel — no ssh process. A
 * thread pumps bytes between the channel and one end of a socketpair, so
 * the engine keeps working on a file descriptor.
 */
#include "client/ssh_builtin.h"
#include "proto/base/stop_signal.h"

#include <errno.h>
#include <fcntl.h>
#include <libssh/libssh.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <sha1.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto/base/checksum.h"
#include "proto/base/fdio.h"

#define PUMP_BUF (256 * 1024)
#define SSH_EXIT_FAILURE 255 /* what ssh itself exits with */

struct ssh_builtin {
	ssh_session session;
	ssh_channel channel;
	int ours;        /* our end of the socketpair, pumped */
	pthread_t pump;
	int exit_status;
};

/* ---- understanding the -e command ---- */

static void spec_free(struct ssh_spec *sp)
{
	free(sp->port);
	free(sp->user);
	for (int i = 0; i < sp->nident; i++)
		free(sp->identity[i]);
	free(sp->ciphers);
	free(sp->macs);
	free(sp->config);
	free(sp->strict);
	free(sp->known_hosts);
	ssh_cfg_scan_release(&sp->cfg);
	memset(sp, 0, sizeof *sp);
}

static bool set_dup(char **field, const char *v)
{
	free(*field);
	*field = strdup(v);
	return *field != NULL;
}

/* "-o Key=Value" or "-o Key Value". Only keys we can honour exactly. */
static bool take_o(struct ssh_spec *sp, const char *kv, const char *next, bool *used_next)
{
	char key[64];
	const char *val;
	const char *eq = strchr(kv, '=');

	*used_next = false;
	if (eq) {
		snprintf(key, sizeof key, "%.*s", (int)(eq - kv), kv);
		val = eq + 1;
	} else {
		if (!next)
			return false;
		snprintf(key, sizeof key, "%s", kv);
		val = next;
		*used_next = true;
	}
	if (!strcasecmp(key, "Ciphers"))
		return set_dup(&sp->ciphers, val);
	if (!strcasecmp(key, "MACs"))
		return set_dup(&sp->macs, val);
	if (!strcasecmp(key, "Port"))
		return set_dup(&sp->port, val);
	if (!strcasecmp(key, "User"))
		return set_dup(&sp->user, val);
	if (!strcasecmp(key, "IdentityFile"))
		return sp->nident < SSH_SPEC_MAX_IDENT && (sp->identity[sp->nident++] = strdup(val));
	if (!strcasecmp(key, "StrictHostKeyChecking"))
		return set_dup(&sp->strict, val);
	if (!strcasecmp(key, "UserKnownHostsFile"))
		return set_dup(&sp->known_hosts, val);
	if (!strcasecmp(key, "BatchMode") || !strcasecmp(key, "Compression"))
		return !strcasecmp(val, "yes") || !strcasecmp(val, "no");
	return false;
}

bool ssh_spec_parse(char **words, struct ssh_spec *sp)
{
	memset(sp, 0, sizeof *sp);
	const char *prog = strrchr(words[0], '/');
	prog = prog ? prog + 1 : words[0];
	if (strcmp(prog, "ssh") != 0)
		return false;
	for (int i = 1; words[i]; i++) {
		const char *w = words[i], *next = words[i + 1];
		bool ok = true, used = false;
		if (!strcmp(w, "-p") && next)
			ok = set_dup(&sp->port, next), used = true;
		else if (!strcmp(w, "-l") && next)
			ok = set_dup(&sp->user, next), used = true;
		else if (!strcmp(w, "-i") && next)
			ok = sp->nident < SSH_SPEC_MAX_IDENT && (sp->identity[sp->nident++] = strdup(next)),
			used = true;
		else if (!strcmp(w, "-c") && next)
			ok = set_dup(&sp->ciphers, next), used = true;
		else if (!strcmp(w, "-m") && next)
			ok = set_dup(&sp->macs, next), used = true;
		else if (!strcmp(w, "-F") && next)
			ok = (sp->no_config = !strcasecmp(next, "none")) || set_dup(&sp->config, next),
			used = true;
		else if (!strcmp(w, "-o") && next)
			ok = take_o(sp, next, words[i + 2], &used), i += used, used = true;
		else if (!strcmp(w, "-4") || !strcmp(w, "-6"))
			sp->family = w[1] - '0';
		else if (!strcmp(w, "-q") || !strcmp(w, "-T") || !strcmp(w, "-x") || !strcmp(w, "-a"))
			; /* no effect on an exec channel without a tty */
		else
			ok = false;
		if (!ok) {
			spec_free(sp);
			return false;
		}
		if (used)
			i++;
	}
	return true;
}

/* ---- the config files ---- */

/* The home directory ssh and libssh take ~/.ssh from (not $HOME). */
static bool passwd_home(char *buf, size_t size)
{
	char pwbuf[4096];
	struct passwd pw, *found = NULL;

	if (getpwuid_r(getuid(), &pw, pwbuf, sizeof pwbuf, &found) != 0 || !found)
		return false;
	return (size_t)snprintf(buf, size, "%s", pw.pw_dir) < size;
}

/* The name libssh ends with after the config's HostName, if any. */
static char *config_hostname(const struct ssh_spec *sp, const char *host)
{
	int quiet = SSH_LOG_NOLOG;
	char *name = NULL;
	ssh_session ss = ssh_new();

	if (!ss)
		return NULL;
	ssh_options_set(ss, SSH_OPTIONS_LOG_VERBOSITY, &quiet);
	if (ssh_options_set(ss, SSH_OPTIONS_HOST, host) == 0 &&
	    ssh_options_parse_config(ss, sp->config) == 0)
		ssh_options_get(ss, SSH_OPTIONS_HOST, &name);
	ssh_set_log_level(SSH_LOG_NOLOG);
	ssh_free(ss);
	return name;
}

/* A key the built-in would record in known_hosts (accept-new or no on
 * the command line): whether ssh hashes it may depend on the host. */
static bool records_keys(const struct ssh_spec *sp)
{
	return sp->strict && (!strcasecmp(sp->strict, "no") || !strcasecmp(sp->strict, "off") ||
			      !strcasecmp(sp->strict, "accept-new"));
}

static bool config_paths(const struct ssh_spec *sp, char *home, size_t hsize, char *user_cfg,
			 size_t usize, struct ssh_cfg_paths *paths)
{
	if (!passwd_home(home, hsize))
		return false;
	*paths = (struct ssh_cfg_paths){
		.pw_home = home,
		.env_home = getenv("HOME"),
		.global_dir = "/etc/ssh",
	};
	if (sp->config) {
		paths->user_config = sp->config;
		paths->user_config_required = true;
		return true;
	}
	paths->global_config = SSH_CFG_GLOBAL_PATH;
	paths->user_config = user_cfg;
	return (size_t)snprintf(user_cfg, usize, "%s/.ssh/config", home) < usize;
}

bool ssh_builtin_config_check(struct ssh_spec *sp, const char *host, char *why, size_t size)
{
	char home[2048], user_cfg[4096];
	struct ssh_cfg_paths paths;

	ssh_cfg_scan_release(&sp->cfg);
	sp->cfg.gssapi = sp->cfg.hash_known_hosts = -1;
	if (sp->family) {
		snprintf(why, size, "-%d: the built-in cannot choose the address family", sp->family);
		return false;
	}
	if (sp->no_config)
		return true;
	/* libssh expands % and ~ in the -F name, ssh takes it as it is */
	if (sp->config && strpbrk(sp->config, "%~")) {
		snprintf(why, size, "-F %s: a name libssh would expand", sp->config);
		return false;
	}
	if (!config_paths(sp, home, sizeof home, user_cfg, sizeof user_cfg, &paths)) {
		snprintf(why, size, "no home directory for this user");
		return false;
	}
	if (!ssh_cfg_scan(&paths, &sp->cfg)) {
		snprintf(why, size, "%s", sp->cfg.why);
		return false;
	}
	if (sp->cfg.hash_known_hosts == SSH_CFG_PER_HOST && records_keys(sp)) {
		snprintf(why, size, "HashKnownHosts inside a Host block other than \"Host *\", "
				    "with a new host key to record");
		return false;
	}
	char *name = config_hostname(sp, host);
	bool agree = name && (!strcasecmp(name, host) || ssh_cfg_hosts_agree(&sp->cfg, host, name));
	if (!agree)
		snprintf(why, size, "%s: libssh would match the Host lines after HostName %s "
				    "against that name, ssh against %s", host, name ? name : "?", host);
	ssh_string_free_char(name);
	return agree;
}

/* ---- connecting ---- */

static int fail_msg(const char *fmt, const char *arg)
{
	fflush(stdout);
	fprintf(stderr, "ferry: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	return SSH_EXIT_FAILURE;
}

static int set_options(ssh_session ss, const struct ssh_spec *sp, const char *host,
		       const char *user, const char *extra_ciphers)
{
	int verbosity = SSH_LOG_NOLOG;

	ssh_options_set(ss, SSH_OPTIONS_LOG_VERBOSITY, &verbosity);
	if (ssh_options_set(ss, SSH_OPTIONS_HOST, host) < 0)
		return fail_msg("ssh: bad host name %s", host);
	/* ~/.ssh/config first (or -F), so the command line wins over it;
	 * ssh_builtin_config_check() has made sure libssh reads it as ssh */
	bool read_config = false; /* -F none: nor may ssh_connect read it */
	if (sp->no_config)
		ssh_options_set(ss, SSH_OPTIONS_PROCESS_CONFIG, &read_config);
	else if (ssh_options_parse_config(ss, sp->config) < 0)
		return fail_msg("ssh: cannot read config file %s",
				sp->config ? sp->config : "~/.ssh/config");
	/* a LogLevel in the config must not make libssh chatter on stderr */
	ssh_options_set(ss, SSH_OPTIONS_LOG_VERBOSITY, &verbosity);
	ssh_set_log_level(SSH_LOG_NOLOG);
	if (sp->port && ssh_options_set(ss, SSH_OPTIONS_PORT_STR, sp->port) < 0)
		return fail_msg("ssh: bad port %s", sp->port);
	const char *u = user && *user ? user : sp->user;
	if (u && ssh_options_set(ss, SSH_OPTIONS_USER, u) < 0)
		return fail_msg("ssh: bad user %s", u);
	const char *ciphers = extra_ciphers ? extra_ciphers : sp->ciphers;
	/* libssh silently drops names it does not know from a list; ssh
	 * refuses the whole option, and so do we */
	if (ciphers && !ssh_cfg_known_ciphers(ciphers))
		return fail_msg("Unknown cipher type '%s'", ciphers);
	if (sp->macs && !ssh_cfg_known_macs(sp->macs))
		return fail_msg("Unknown mac type '%s'", sp->macs);
	if (ciphers && (ssh_options_set(ss, SSH_OPTIONS_CIPHERS_C_S, ciphers) < 0 ||
			ssh_options_set(ss, SSH_OPTIONS_CIPHERS_S_C, ciphers) < 0))
		return fail_msg("Unknown cipher type '%s'", ciphers);
	if (sp->macs && (ssh_options_set(ss, SSH_OPTIONS_HMAC_C_S, sp->macs) < 0 ||
			 ssh_options_set(ss, SSH_OPTIONS_HMAC_S_C, sp->macs) < 0))
		return fail_msg("Unknown mac type '%s'", sp->macs);
	if (sp->known_hosts && ssh_options_set(ss, SSH_OPTIONS_KNOWNHOSTS, sp->known_hosts) < 0)
		return fail_msg("ssh: bad known hosts file %s", sp->known_hosts);
	for (int i = 0; i < sp->nident; i++)
		ssh_options_set(ss, SSH_OPTIONS_ADD_IDENTITY, sp->identity[i]);
	return 0;
}

/* HMAC-SHA1 (RFC 2104) of msg under a 20-byte key. */
static void hmac_sha1(const uint8_t key[SHA1_DIGEST_LENGTH], const char *msg,
		      uint8_t out[SHA1_DIGEST_LENGTH])
{
	uint8_t pad[64];
	SHA1_CTX ctx;

	memset(pad, 0x36, sizeof pad);
	for (int i = 0; i < SHA1_DIGEST_LENGTH; i++)
		pad[i] ^= key[i];
	SHA1Init(&ctx);
	SHA1Update(&ctx, pad, sizeof pad);
	SHA1Update(&ctx, (const uint8_t *)msg, strlen(msg));
	SHA1Final(out, &ctx);
	for (size_t i = 0; i < sizeof pad; i++)
		pad[i] ^= 0x36 ^ 0x5c;
	SHA1Init(&ctx);
	SHA1Update(&ctx, pad, sizeof pad);
	SHA1Update(&ctx, out, SHA1_DIGEST_LENGTH);
	SHA1Final(out, &ctx);
}

/* base64 of 20 bytes with its one '=' of padding. */
static void b64_20(const uint8_t in[SHA1_DIGEST_LENGTH], char out[30])
{
	base64_nopad(in, SHA1_DIGEST_LENGTH, out, 30);
	strcat(out, "=");
}

/* The host name field of a known_hosts line, hashed as ssh hashes it
 * under HashKnownHosts: |1|base64(salt)|base64(HMAC-SHA1(salt, name)). */
static bool hashed_entry(const char *entry, char *out, size_t size)
{
	uint8_t salt[SHA1_DIGEST_LENGTH], mac[SHA1_DIGEST_LENGTH];
	char name[1024], s64[30], m64[30];
	size_t nlen = strcspn(entry, " ");

	if (nlen >= sizeof name || !entry[nlen] ||
	    getrandom(salt, sizeof salt, 0) != (ssize_t)sizeof salt)
		return false;
	snprintf(name, sizeof name, "%.*s", (int)nlen, entry);
	hmac_sha1(salt, name, mac);
	b64_20(salt, s64);
	b64_20(mac, m64);
	return (size_t)snprintf(out, size, "|1|%s|%s%s", s64, m64, entry + nlen) < size;
}

/* Add the server's key to the user's known_hosts, hashed when the config
 * says HashKnownHosts yes for every host. ssh only warns when it cannot. */
static void record_host_key(ssh_session ss, bool hashed)
{
	char *entry = NULL, *file = NULL, line[8192];

	if (!hashed) {
		ssh_session_update_known_hosts(ss);
		return;
	}
	if (ssh_session_export_known_hosts_entry(ss, &entry) == SSH_OK &&
	    ssh_options_get(ss, SSH_OPTIONS_KNOWNHOSTS, &file) == SSH_OK &&
	    hashed_entry(entry, line, sizeof line)) {
		FILE *f = fopen(file, "a");
		if (f) {
			fputs(line, f);
			fclose(f);
		}
	}
	ssh_string_free_char(entry);
	ssh_string_free_char(file);
}

/* Known-hosts policy with OpenSSH's words (StrictHostKeyChecking: yes and
 * the default "ask", which we cannot ask, refuse an unknown key;
 * accept-new and no accept it, adding it to known_hosts). */
static int verify_host(ssh_session ss, const struct ssh_spec *sp, const char *host)
{
	const char *strict = sp->strict ? sp->strict : "ask";
	enum ssh_known_hosts_e k = ssh_session_is_known_server(ss);

	switch (k) {
	case SSH_KNOWN_HOSTS_OK:
		return 0;
	case SSH_KNOWN_HOSTS_CHANGED:
	case SSH_KNOWN_HOSTS_OTHER:
		fprintf(stderr, "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n"
				"@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\n"
				"@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n");
		if (strcasecmp(strict, "no") != 0)
			return fail_msg("Host key for %s has changed and you have requested strict "
					"checking.\nHost key verification failed.", host);
		return 0;
	case SSH_KNOWN_HOSTS_NOT_FOUND:
	case SSH_KNOWN_HOSTS_UNKNOWN:
		if (!strcasecmp(strict, "no") || !strcasecmp(strict, "accept-new") ||
		    !strcasecmp(strict, "off")) {
			record_host_key(ss, sp->cfg.hash_known_hosts == 1);
			return 0;
		}
		return fail_msg("No host key is known for %s and you have requested strict "
				"checking.\nHost key verification failed.", host);
	default:
		return fail_msg("ssh: cannot check the host key of %s", host);
	}
}

/* none, then GSSAPI where the config asks for it and the server offers
 * it (ssh's order), then the agent and the keys. */
static int authenticate(ssh_session ss, const struct ssh_spec *sp, const char *host)
{
	if (ssh_userauth_none(ss, NULL) == SSH_AUTH_SUCCESS)
		return 0;
	if (sp->cfg.gssapi == 1 && (ssh_userauth_list(ss, NULL) & SSH_AUTH_METHOD_GSSAPI_MIC) &&
	    ssh_userauth_gssapi(ss) == SSH_AUTH_SUCCESS)
		return 0;
	if (ssh_userauth_publickey_auto(ss, NULL, NULL) == SSH_AUTH_SUCCESS)
		return 0;
	return fail_msg("%s: Permission denied (publickey).", host);
}

/* SendEnv: the variables whose names match a pattern, offered as ssh
 * offers them; the server takes those its AcceptEnv allows and refuses the
 * rest, which is no error for ssh either. */
static void send_env(ssh_channel ch, const struct ssh_spec *sp)
{
	for (char **e = environ; sp->cfg.nsendenv && e && *e; e++) {
		const char *eq = strchr(*e, '=');
		char name[256];
		if (!eq || (size_t)(eq - *e) >= sizeof name)
			continue;
		snprintf(name, sizeof name, "%.*s", (int)(eq - *e), *e);
		for (int i = 0; i < sp->cfg.nsendenv; i++)
			if (ssh_cfg_pattern_match(sp->cfg.sendenv[i], name)) {
				ssh_channel_request_env(ch, name, eq + 1);
				break;
			}
	}
}

/* ---- the pump ---- */

/* Move bytes both ways until the channel closes. libssh is not safe for
 * concurrent use, so one thread does both directions, waiting on the SSH
 * socket and our socketpair end with poll(). */
static void *pump_main(void *arg)
{
	struct ssh_builtin *b = arg;
	char *buf = malloc(PUMP_BUF);
	bool local_eof = false;

	ssh_set_blocking(b->session, 0);
	while (buf) {
		struct pollfd p[2] = {
			{.fd = ssh_get_fd(b->session), .events = POLLIN},
			{.fd = b->ours, .events = local_eof ? 0 : POLLIN},
		};
		/* libssh may already hold channel data read while writing */
		int wait = ssh_channel_poll(b->channel, 0) > 0 ? 0 : 1000;
		if (poll(p, 2, wait) < 0 && errno != EINTR)
			break;
		int n;
		bool moved = false;
		while ((n = ssh_channel_read_nonblocking(b->channel, buf, PUMP_BUF, 0)) > 0) {
			moved = true;
			if (!fd_write_all(b->ours, buf, (size_t)n))
				goto done;
		}
		while ((n = ssh_channel_read_nonblocking(b->channel, buf, PUMP_BUF, 1)) > 0)
			(void)!write(STDERR_FILENO, buf, (size_t)n);
		if (n == SSH_ERROR)
			break;
		if (ssh_channel_is_eof(b->channel) || ssh_channel_is_closed(b->channel))
			break;
		if (!local_eof && (p[1].revents & (POLLIN | POLLHUP))) {
			ssize_t r = read(b->ours, buf, PUMP_BUF);
			if (r > 0) {
				ssh_set_blocking(b->session, 1);
				int w = ssh_channel_write(b->channel, buf, (uint32_t)r);
				ssh_set_blocking(b->session, 0);
				if (w != (int)r)
					break;
				moved = true;
			} else if (r == 0) {
				local_eof = true;
				ssh_channel_send_eof(b->channel);
			}
		}
		(void)moved;
	}
done:
	free(buf);
	/* Tell the engine the stream ended. */
	shutdown(b->ours, SHUT_RDWR);
	return NULL;
}

int ssh_builtin_start(const struct ssh_spec *sp, const char *host, const char *user,
		      const char *cipher_override, const char *command, int *fd,
		      struct ssh_builtin **out)
{
	struct ssh_builtin *b = calloc(1, sizeof *b);
	int sv[2];

	if (!b)
		return 22;
	b->ours = -1;
	b->session = ssh_new();
	if (!b->session) {
		free(b);
		return SSH_EXIT_FAILURE;
	}
	int code = set_options(b->session, sp, host, user, cipher_override);
	if (!code && ssh_connect(b->session) != SSH_OK)
		code = fail_msg("ssh: %s", ssh_get_error(b->session));
	if (!code)
		code = verify_host(b->session, sp, host);
	if (!code)
		code = authenticate(b->session, sp, host);
	if (!code) {
		b->channel = ssh_channel_new(b->session);
		bool opened = b->channel && ssh_channel_open_session(b->channel) == SSH_OK;
		if (opened)
			send_env(b->channel, sp);
		if (!opened || ssh_channel_request_exec(b->channel, command) != SSH_OK)
			code = fail_msg("ssh: cannot run the remote command: %s",
					ssh_get_error(b->session));
	}
	if (!code && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		code = fail_msg("socketpair failed: %s", strerror(errno));
	if (code) {
		ssh_builtin_stop(b);
		return code;
	}
	b->ours = sv[1];
	*fd = sv[0];
	if (stop_signal_thread_create(&b->pump, pump_main, b) != 0) {
		close(sv[0]);
		ssh_builtin_stop(b);
		return fail_msg("cannot start the ssh thread: %s", strerror(errno));
	}
	*out = b;
	return 0;
}

int ssh_builtin_stop(struct ssh_builtin *b)
{
	int status = 0;

	if (!b)
		return 0;
	if (b->ours >= 0) {
		shutdown(b->ours, SHUT_RDWR);
		pthread_join(b->pump, NULL);
		close(b->ours);
	}
	if (b->channel) {
		ssh_set_blocking(b->session, 1);
		if (!ssh_channel_is_closed(b->channel)) {
			ssh_channel_send_eof(b->channel);
			ssh_channel_close(b->channel);
		}
		status = ssh_channel_get_exit_status(b->channel);
		ssh_channel_free(b->channel);
	}
	if (b->session) {
		ssh_disconnect(b->session);
		ssh_free(b->session);
	}
	free(b);
	return status < 0 ? 0 : status;
}

void ssh_spec_release(struct ssh_spec *sp)
{
	spec_free(sp);
}
