/*
 * One connection to the SSH listener, in the child forked for it: key
 * exchange, public-key authentication against the `ssh authorized keys`
 * files, the login's view of the modules, one session channel with one
 * exec request, and then the serving grandchild (see daemon/ssh_listen.h).
 * Everything not asked for by name is refused by libssh's default replies:
 * with server callbacks set, a request no callback takes (shell, pty,
 * subsystem, env, x11, tcpip-forward, direct-tcpip, agent channels,
 * keyboard-interactive) is answered with a failure.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libssh/callbacks.h>

#include "daemon/auth.h"
#include "daemon/daemon.h"
#include "daemon/log.h"
#include "daemon/ssh_keys.h"
#include "daemon/ssh_listen.h"
#include "daemon/ssh_priv.h"
#include "proto/base/wire.h"

#define LINGER_STEPS 50    /* of 100 ms: wait for the client to hang up */
#define KEYFILE_CACHE 32 /* distinct authorized keys files remembered per lookup */

struct conn {
	struct daemon_config *cfg;   /* becomes the login's view at login */
	const struct ferry_opts *o;
	ssh_session session;
	ssh_channel channel;
	struct ssh_server_callbacks_struct srv_cb;
	struct ssh_channel_callbacks_struct chan_cb;
	char addr[NI_MAXHOST];
	char port[NI_MAXSERV];
	char local_addr[NI_MAXHOST];
	char local_port[NI_MAXSERV];
	char user[AUTH_USER_MAX + 1];
	char fingerprint[160];
	bool authenticated;
	int auth_failures;
	bool give_up;                /* too many failures: disconnect */
	bool have_command;
	struct ssh_cmd cmd;
	int startup_fd;              /* closed at login: the listener stops counting us */
};

/* ---- identity and modules ---- */

/* A user name we log and match against `auth users` (auth.c user_ok()). */
static bool user_name_ok(const char *user)
{
	size_t n = strlen(user);

	if (n == 0 || n > AUTH_USER_MAX || user[0] == '#')
		return false;
	for (const char *p = user; *p; p++)
		if (*p == ':' || (unsigned char)*p < 0x20 || *p == 0x7f)
			return false;
	return true;
}

struct keyfile_result {
	char *path;
	enum ssh_keys_result r;
};

struct key_check {
	struct conn *c;
	ssh_key key;
	struct keyfile_result seen[KEYFILE_CACHE];
	int nseen;
	char why[512]; /* the last problem with a file, for the log */
};

static bool key_listed_in(struct key_check *k, const struct daemon_module *m)
{
	if (!m->ssh_authorized_keys || !*m->ssh_authorized_keys)
		return false;
	char *path = config_expand(m->ssh_authorized_keys);
	if (!path)
		return false;
	for (int i = 0; i < k->nseen; i++) {
		if (strcmp(k->seen[i].path, path) == 0) {
			free(path);
			return k->seen[i].r == SSH_KEYS_LISTED;
		}
	}
	char why[512];
	enum ssh_keys_result r = ssh_keys_lookup(path, k->key, m->strict_modes, why, sizeof why);
	if (*why)
		snprintf(k->why, sizeof k->why, "%s", why);
	if (k->nseen < KEYFILE_CACHE) {
		k->seen[k->nseen].path = path;
		k->seen[k->nseen++].r = r;
	} else {
		free(path);
	}
	return r == SSH_KEYS_LISTED;
}

static void key_check_done(struct key_check *k)
{
	for (int i = 0; i < k->nseen; i++)
		free(k->seen[i].path);
	k->nseen = 0;
}

/* May this key and user use module m? *rule gets the `auth users` verdict
 * (AUTH_OK_DEFAULT when the module has none). */
static bool module_allows(struct key_check *k, const struct daemon_module *m, const char *user,
			  enum auth_result *rule)
{
	*rule = AUTH_OK_DEFAULT;
	if (!key_listed_in(k, m))
		return false;
	if (!auth_required(m->auth_users))
		return true;
	*rule = auth_user_rule(m->auth_users, user);
	return *rule != AUTH_DENIED;
}

static bool any_module_allows(struct key_check *k, const char *user)
{
	enum auth_result rule;

	for (size_t i = 0; i < k->c->cfg->nmodules; i++)
		if (module_allows(k, &k->c->cfg->modules[i], user, &rule))
			return true;
	return false;
}

/* Turn the config into what this login may see: modules it may not use
 * are dropped, and those it may use lose `auth users` (the key was the
 * proof), keeping a `:ro`/`:rw` verdict as their `read only`. Writes the
 * kept names, comma separated, to names for the log. */
static void restrict_to_login(struct key_check *k, const char *user, char *names, size_t nsz)
{
	struct daemon_config *cfg = k->c->cfg;
	size_t kept = 0, used = 0;

	names[0] = '\0';
	for (size_t i = 0; i < cfg->nmodules; i++) {
		struct daemon_module *m = &cfg->modules[i];
		enum auth_result rule;
		if (!module_allows(k, m, user, &rule)) {
			config_module_free(m);
			continue;
		}
		if (rule == AUTH_OK_RO)
			m->read_only = true;
		else if (rule == AUTH_OK_RW)
			m->read_only = false;
		free(m->auth_users);
		m->auth_users = NULL;
		if (used < nsz) {
			int n = snprintf(names + used, nsz - used, "%s%s", kept ? "," : "", m->name);
			used += n > 0 ? (size_t)n : 0;
		}
		if (kept != i)
			cfg->modules[kept] = *m;
		kept++;
	}
	cfg->nmodules = kept;
}

/* ---- libssh callbacks ---- */

static int refuse_auth(struct conn *c)
{
	if (++c->auth_failures >= c->cfg->ssh_max_auth_tries)
		c->give_up = true;
	return SSH_AUTH_DENIED;
}

static int on_auth_pubkey(ssh_session session, const char *user, struct ssh_key_struct *pubkey,
			  char signature_state, void *userdata)
{
	struct conn *c = userdata;
	char fp[160];

	if (c->authenticated || c->give_up)
		return SSH_AUTH_DENIED;
	ssh_keys_fingerprint(pubkey, fp, sizeof fp);
	if (!user || !user_name_ok(user)) {
		daemon_log(c->cfg, NULL, "ssh: refused an invalid user name from %s", c->addr);
		return refuse_auth(c);
	}
	if (signature_state != SSH_PUBLICKEY_STATE_NONE &&
	    signature_state != SSH_PUBLICKEY_STATE_VALID)
		return refuse_auth(c);
	struct key_check k = {.c = c, .key = pubkey};
	if (!any_module_allows(&k, user)) {
		daemon_log(c->cfg, NULL,
			   "ssh: key %s of user %s from %s port %s not accepted: no module lists it "
			   "for this user%s%s",
			   fp, user, c->addr, c->port, *k.why ? "; " : "", k.why);
		key_check_done(&k);
		return refuse_auth(c);
	}
	if (signature_state == SSH_PUBLICKEY_STATE_NONE) {
		key_check_done(&k); /* a probe: "this key would do" */
		return SSH_AUTH_SUCCESS;
	}
	char names[1024];
	restrict_to_login(&k, user, names, sizeof names);
	key_check_done(&k);
	snprintf(c->user, sizeof c->user, "%s", user);
	snprintf(c->cfg->login_user, sizeof c->cfg->login_user, "%s", user);
	snprintf(c->fingerprint, sizeof c->fingerprint, "%s", fp);
	c->authenticated = true;
	if (c->startup_fd >= 0) {
		close(c->startup_fd);
		c->startup_fd = -1;
	}
	daemon_log(c->cfg, NULL, "ssh login: user %s key %s from %s port %s; modules: %s", user, fp,
		   c->addr, c->port, names);
	return SSH_AUTH_SUCCESS;
}

/* Passwords are never accepted; an attempt counts as a failure. */
static int on_auth_password(ssh_session session, const char *user, const char *password,
			    void *userdata)
{
	return refuse_auth(userdata);
}

/* Printable copy of a client string for the log. */
static void log_safe(const char *s, char *out, size_t outsz)
{
	size_t n = 0;

	for (; s && *s && n + 4 < outsz; s++)
		out[n++] = (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s;
	if (s && *s && n + 4 >= outsz) {
		memcpy(out + n, "...", 3);
		n += 3;
	}
	out[n] = '\0';
}

static int on_exec(ssh_session session, ssh_channel channel, const char *command,
		   void *userdata)
{
	struct conn *c = userdata;
	char shown[256], why[512];

	log_safe(command, shown, sizeof shown);
	if (c->have_command || channel != c->channel) {
		daemon_log(c->cfg, NULL, "ssh: refused a second command from %s@%s: \"%s\"", c->user,
			   c->addr, shown);
		return 1;
	}
	if (!ssh_cmd_parse(command, c->cfg, &c->cmd, why, sizeof why)) {
		daemon_log(c->cfg, NULL, "ssh: refused command \"%s\" from %s@%s: %s", shown, c->user,
			   c->addr, why);
		return 1;
	}
	c->have_command = true;
	daemon_log(c->cfg, NULL, "ssh: %s@%s runs \"%s\"%s%s", c->user, c->addr, shown,
		   c->cmd.module ? " in module " : "", c->cmd.module ? c->cmd.module : "");
	return 0;
}

/* Refused requests that say what the client tried, for the log. */
static int on_pty(ssh_session session, ssh_channel channel, const char *term, int width,
		  int height, int pxwidth, int pxheight, void *userdata)
{
	struct conn *c = userdata;

	daemon_log(c->cfg, NULL, "ssh: refused a pty for %s@%s", c->user, c->addr);
	return -1;
}

static int on_shell(ssh_session session, ssh_channel channel, void *userdata)
{
	struct conn *c = userdata;

	daemon_log(c->cfg, NULL, "ssh: refused a shell for %s@%s", c->user, c->addr);
	return 1;
}

static int on_subsystem(ssh_session session, ssh_channel channel, const char *subsystem,
			void *userdata)
{
	struct conn *c = userdata;
	char shown[128];

	log_safe(subsystem, shown, sizeof shown);
	daemon_log(c->cfg, NULL, "ssh: refused subsystem \"%s\" for %s@%s", shown, c->user,
		   c->addr);
	return 1;
}

/* One session channel per connection, after authentication. */
static ssh_channel on_channel_open(ssh_session session, void *userdata)
{
	struct conn *c = userdata;

	if (!c->authenticated || c->channel)
		return NULL;
	c->channel = ssh_channel_new(session);
	if (!c->channel)
		return NULL;
	c->chan_cb = (struct ssh_channel_callbacks_struct){
		.userdata = c,
		.channel_exec_request_function = on_exec,
		.channel_pty_request_function = on_pty,
		.channel_shell_request_function = on_shell,
		.channel_subsystem_request_function = on_subsystem,
	};
	ssh_callbacks_init(&c->chan_cb);
	ssh_set_channel_callbacks(c->channel, &c->chan_cb);
	return c->channel;
}

/* ---- the connection ---- */

static void grace_expired(int sig)
{
	(void)sig;
	_exit(RERR_TIMEOUT);
}

static void peer_names(struct conn *c, int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;

	snprintf(c->addr, sizeof c->addr, "UNKNOWN");
	snprintf(c->port, sizeof c->port, "0");
	snprintf(c->local_addr, sizeof c->local_addr, "UNKNOWN");
	snprintf(c->local_port, sizeof c->local_port, "0");
	if (getpeername(fd, (struct sockaddr *)&ss, &len) == 0)
		getnameinfo((struct sockaddr *)&ss, len, c->addr, sizeof c->addr, c->port,
			    sizeof c->port, NI_NUMERICHOST | NI_NUMERICSERV);
	len = sizeof ss;
	if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
		getnameinfo((struct sockaddr *)&ss, len, c->local_addr, sizeof c->local_addr,
			    c->local_port, sizeof c->local_port, NI_NUMERICHOST | NI_NUMERICSERV);
}

/* Run libssh until an exec request was accepted; false when the client
 * left, failed authentication too often, or the connection broke. */
static bool wait_for_command(struct conn *c)
{
	ssh_event ev = ssh_event_new();

	if (!ev || ssh_event_add_session(ev, c->session) != SSH_OK) {
		if (ev)
			ssh_event_free(ev);
		return false;
	}
	while (!c->have_command && !c->give_up) {
		if (ssh_event_dopoll(ev, 1000) == SSH_ERROR)
			break;
		if (!ssh_is_connected(c->session))
			break;
		if (c->channel && (ssh_channel_is_closed(c->channel) || ssh_channel_is_eof(c->channel)))
			break;
	}
	if (c->give_up)
		daemon_log(c->cfg, NULL, "ssh: too many authentication failures from %s port %s",
			   c->addr, c->port);
	ssh_event_remove_session(ev, c->session);
	ssh_event_free(ev);
	return c->have_command && !c->give_up;
}

/* The serving grandchild: the daemon dialogue on fd, as for a TCP client
 * (the client address comes from SSH_CONNECTION, see client_addr_name). */
static pid_t start_server(struct conn *c, int fd, int other)
{
	char env[sizeof c->addr + sizeof c->local_addr + 64];

	snprintf(env, sizeof env, "%s %s %s %s", c->addr, c->port, c->local_addr, c->local_port);
	setenv("SSH_CONNECTION", env, 1);
	/* for exec hooks: who logged in, with which key */
	setenv("FERRY_SSH_USER", c->user, 1);
	setenv("FERRY_SSH_KEY", c->fingerprint, 1);
	pid_t pid = fork();
	if (pid == 0) {
		close(other);
		close(ssh_get_fd(c->session));
		_exit(daemon_serve_client(c->cfg, c->o, fd, fd));
	}
	return pid;
}

static int wait_exit_code(pid_t pid)
{
	int st = 0;

	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR)
			return RERR_IPC;
	}
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return RERR_IPC;
}

/* After our channel close, give the client a moment to close its side and
 * hang up itself: disconnecting at once makes OpenSSH report "Connection
 * closed by remote host". */
static void linger(struct conn *c)
{
	ssh_event ev = ssh_event_new();

	if (!ev || ssh_event_add_session(ev, c->session) != SSH_OK) {
		if (ev)
			ssh_event_free(ev);
		return;
	}
	for (int i = 0; i < LINGER_STEPS && ssh_is_connected(c->session); i++)
		if (ssh_event_dopoll(ev, 100) == SSH_ERROR)
			break;
	ssh_event_remove_session(ev, c->session);
	ssh_event_free(ev);
}

static int run_command(struct conn *c)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		daemon_log(c->cfg, NULL, "ssh: socketpair failed: %s", strerror(errno));
		return RERR_IPC;
	}
	pid_t pid = start_server(c, sv[1], sv[0]);
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		daemon_log(c->cfg, NULL, "ssh: fork failed: %s", strerror(errno));
		return RERR_IPC;
	}
	int code = 0;
	if (c->cmd.kind == SSH_CMD_SERVER)
		code = ssh_shim_start(c->session, c->channel, sv[0], &c->cmd);
	bool client_gone = false;
	if (code == 0)
		client_gone = ssh_pump_run(c->session, c->channel, sv[0]) < 0;
	close(sv[0]);
	int served = wait_exit_code(pid);
	if (code == 0)
		code = served;
	if (!client_gone) {
		ssh_channel_request_send_exit_status(c->channel, code);
		ssh_channel_send_eof(c->channel);
		ssh_channel_close(c->channel);
		linger(c);
	}
	return code;
}

int ssh_listener_serve(struct ssh_listener *l, const struct ferry_opts *o,
		       struct daemon_config *cfg, int cfd, int startup_fd)
{
	struct conn c = {.cfg = cfg, .o = o, .startup_fd = startup_fd};

	/* The whole way to a running command is bounded, as sshd's
	 * LoginGraceTime bounds authentication. */
	signal(SIGALRM, grace_expired);
	alarm((unsigned)cfg->ssh_login_grace_time);
	peer_names(&c, cfd);
	daemon_log(cfg, NULL, "ssh: connect from %s port %s", c.addr, c.port);
	c.session = ssh_new();
	if (!c.session || ssh_bind_accept_fd(l->bind, c.session, cfd) != SSH_OK) {
		daemon_log(cfg, NULL, "ssh: cannot set up the session for %s: %s", c.addr,
			   c.session ? ssh_get_error(l->bind) : "out of memory");
		if (c.session)
			ssh_free(c.session);
		return RERR_SOCKETIO;
	}
	c.srv_cb = (struct ssh_server_callbacks_struct){
		.userdata = &c,
		.auth_pubkey_function = on_auth_pubkey,
		.auth_password_function = on_auth_password,
		.channel_open_request_session_function = on_channel_open,
	};
	ssh_callbacks_init(&c.srv_cb);
	ssh_set_server_callbacks(c.session, &c.srv_cb);
	ssh_set_auth_methods(c.session, SSH_AUTH_METHOD_PUBLICKEY);
	int code = RERR_STARTCLIENT;
	if (ssh_handle_key_exchange(c.session) != SSH_OK) {
		daemon_log(cfg, NULL, "ssh: key exchange with %s failed: %s", c.addr,
			   ssh_get_error(c.session));
		code = RERR_SOCKETIO;
	} else if (wait_for_command(&c)) {
		alarm(0);
		code = run_command(&c);
	}
	ssh_cmd_free(&c.cmd);
	if (c.channel)
		ssh_channel_free(c.channel);
	ssh_disconnect(c.session);
	ssh_free(c.session);
	return code;
}
