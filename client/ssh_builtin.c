/*
 * The built-in SSH transport: when the remote shell is plain ssh with
 * options we understand, ferry opens the SSH connection itself with libssh
 * and runs the remote command on an exec channel — no ssh process. A
 * thread pumps bytes between the channel and one end of a socketpair, so
 * the engine keeps working on a file descriptor.
 */
#include "client/ssh_builtin.h"
#include "proto/stop_signal.h"

#include <errno.h>
#include <fnmatch.h>
#include <fcntl.h>
#include <libssh/libssh.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

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
			ok = set_dup(&sp->config, next), used = true;
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

/* ---- connecting ---- */

static int fail_msg(const char *fmt, const char *arg)
{
	fflush(stdout);
	fprintf(stderr, "ferry: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	return SSH_EXIT_FAILURE;
}

/* libssh silently drops names it does not know from a list; ssh refuses
 * the whole option, and so do we. */
static bool known_algorithms(const char *list, const char *const *known)
{
	char copy[1024], *save = NULL;

	snprintf(copy, sizeof copy, "%s", list);
	for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		bool found = false;
		for (int i = 0; known[i]; i++)
			found |= strcmp(w, known[i]) == 0;
		if (!found)
			return false;
	}
	return true;
}

static const char *const known_ciphers[] = {
	"aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "chacha20-poly1305@openssh.com",
	"aes128-ctr", "aes192-ctr", "aes256-ctr", "aes128-cbc", "aes192-cbc", "aes256-cbc",
	"3des-cbc", NULL};
static const char *const known_macs[] = {
	"hmac-sha2-256-etm@openssh.com", "hmac-sha2-512-etm@openssh.com", "hmac-sha1-etm@openssh.com",
	"hmac-sha2-256", "hmac-sha2-512", "hmac-sha1", "none", NULL};

/* StrictHostKeyChecking and UserKnownHostsFile from an ssh config file,
 * for the Host blocks that match (libssh applies the file but keeps the
 * host-key policy to itself). */
static void config_host_policy(const char *file, const char *host, struct ssh_spec *sp)
{
	char line[1024];
	bool applies = true;
	FILE *f = fopen(file, "r");

	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		char key[64], val[900];
		if (sscanf(line, " %63[^ \t=]%*[ \t=]%899[^\n]", key, val) != 2)
			continue;
		if (!strcasecmp(key, "Host")) {
			applies = false;
			char *save = NULL;
			for (char *p = strtok_r(val, " \t", &save); p; p = strtok_r(NULL, " \t", &save))
				applies |= fnmatch(p, host, FNM_CASEFOLD) == 0;
		} else if (applies && !strcasecmp(key, "StrictHostKeyChecking") && !sp->strict) {
			sp->strict = strdup(val);
		} else if (applies && !strcasecmp(key, "UserKnownHostsFile") && !sp->known_hosts) {
			sp->known_hosts = strdup(val);
		}
	}
	fclose(f);
}

static int set_options(ssh_session ss, const struct ssh_spec *sp, const char *host,
		       const char *user, const char *extra_ciphers)
{
	int verbosity = SSH_LOG_NOLOG;

	ssh_options_set(ss, SSH_OPTIONS_LOG_VERBOSITY, &verbosity);
	if (ssh_options_set(ss, SSH_OPTIONS_HOST, host) < 0)
		return fail_msg("ssh: bad host name %s", host);
	/* ~/.ssh/config first (or -F), so the command line wins over it */
	if (ssh_options_parse_config(ss, sp->config) < 0 && sp->config)
		return fail_msg("ssh: cannot read config file %s", sp->config);
	/* a LogLevel in the config must not make libssh chatter on stderr */
	ssh_options_set(ss, SSH_OPTIONS_LOG_VERBOSITY, &verbosity);
	ssh_set_log_level(SSH_LOG_NOLOG);
	if (sp->port && ssh_options_set(ss, SSH_OPTIONS_PORT_STR, sp->port) < 0)
		return fail_msg("ssh: bad port %s", sp->port);
	const char *u = user && *user ? user : sp->user;
	if (u && ssh_options_set(ss, SSH_OPTIONS_USER, u) < 0)
		return fail_msg("ssh: bad user %s", u);
	const char *ciphers = extra_ciphers ? extra_ciphers : sp->ciphers;
	if (ciphers && !known_algorithms(ciphers, known_ciphers))
		return fail_msg("Unknown cipher type '%s'", ciphers);
	if (sp->macs && !known_algorithms(sp->macs, known_macs))
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
			ssh_session_update_known_hosts(ss);
			return 0;
		}
		return fail_msg("No host key is known for %s and you have requested strict "
				"checking.\nHost key verification failed.", host);
	default:
		return fail_msg("ssh: cannot check the host key of %s", host);
	}
}

static int authenticate(ssh_session ss, const char *host)
{
	if (ssh_userauth_none(ss, NULL) == SSH_AUTH_SUCCESS)
		return 0;
	if (ssh_userauth_publickey_auto(ss, NULL, NULL) == SSH_AUTH_SUCCESS)
		return 0;
	return fail_msg("%s: Permission denied (publickey).", host);
}

/* ---- the pump ---- */

static bool write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

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
			if (!write_all(b->ours, buf, (size_t)n))
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
	struct ssh_spec policy = *sp;
	char home_cfg[4096];
	int sv[2];

	if (!b)
		return 22;
	/* The host-key policy may come from the config file, as with ssh. */
	const char *home = getenv("HOME");
	snprintf(home_cfg, sizeof home_cfg, "%s/.ssh/config", home ? home : "/");
	policy.strict = sp->strict ? strdup(sp->strict) : NULL;
	policy.known_hosts = sp->known_hosts ? strdup(sp->known_hosts) : NULL;
	config_host_policy(sp->config ? sp->config : home_cfg, host, &policy);
	sp = &policy;
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
		code = authenticate(b->session, host);
	if (!code) {
		b->channel = ssh_channel_new(b->session);
		if (!b->channel || ssh_channel_open_session(b->channel) != SSH_OK ||
		    ssh_channel_request_exec(b->channel, command) != SSH_OK)
			code = fail_msg("ssh: cannot run the remote command: %s",
					ssh_get_error(b->session));
	}
	if (!code && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		code = fail_msg("socketpair failed: %s", strerror(errno));
	free(policy.strict);
	free(policy.known_hosts);
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
