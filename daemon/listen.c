/*
 * The listening daemon: configuration, the socket, detaching, the pid
 * file, and a child process per connection (socket.c: start_accept_loop;
 * clientserver.c: daemon_main).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "proto/core/exit_line.h"
#include "proto/args/options.h"
#include "daemon/auth.h"
#include "daemon/conn_limits.h"
#include "daemon/daemon.h"
#include "daemon/listen_socket.h"
#include "daemon/log.h"
#include "daemon/pid_file.h"
#include "daemon/ssh_listen.h"
#include "daemon/socket_activation.h"
#include "proto/base/outfilter.h"
#include "proto/core/session.h"
#include "proto/base/wire.h"

static const char default_config[] =
	"# ferry's built-in configuration (--config=@default)\n"
	"use chroot = no\n"
	"[files]\n"
	"\tpath = %FERRY_ROOT%\n"
	"\tcomment = files served by ferry\n"
	"\tread only = yes\n";

static int replace_str(char **field, const char *value)
{
	char *copy = strdup(value);

	if (!copy)
		return -1;
	free(*field);
	*field = copy;
	return 0;
}

/* `ferry --daemon --log-file=FILE --log-file-format=FMT` win over the
 * config's "log file" and "log format", in every module (rsync's daemon
 * options of the same names). */
static int override_module_logging(const struct ferry_opts *o, struct daemon_module *m)
{
	if (o->log_file && replace_str(&m->log_file, o->log_file) < 0)
		return -1;
	if (o->log_file_format && replace_str(&m->log_format, o->log_file_format) < 0)
		return -1;
	return 0;
}

static int override_logging(const struct ferry_opts *o, struct daemon_config *cfg)
{
	if (override_module_logging(o, &cfg->defaults) < 0)
		return -1;
	for (size_t i = 0; i < cfg->nmodules; i++)
		if (override_module_logging(o, &cfg->modules[i]) < 0)
			return -1;
	return 0;
}

/* Load the configuration the daemon options name into *cfg (freshly
 * initialised; config_free it either way). Returns 0, or -1 with every
 * error in err, one a line. quiet: no warnings on stderr (a re-read for a
 * connection, or a daemon over a remote shell, whose stderr is the
 * client's). */
static int load_config(const struct ferry_opts *o, struct daemon_config *cfg, bool quiet,
		       char *err, size_t errsz)
{
	char cwd[4096];
	const char *path = o->config_file ? o->config_file : CONFIG_DEFAULT_FILE;
	int r;

	config_init(cfg);
	cfg->quiet_load = quiet;
	for (int i = 0; i < o->ndparam; i++)
		if (config_add_dparam(cfg, o->dparam[i], err, errsz) < 0)
			return -1;
	if (strcmp(path, DAEMON_DEFAULT_CONFIG_NAME) == 0) {
		if (!getenv("FERRY_ROOT") && getcwd(cwd, sizeof cwd))
			setenv("FERRY_ROOT", cwd, 0);
		r = config_load_string(cfg, default_config, DAEMON_DEFAULT_CONFIG_NAME, err, errsz);
	} else {
		r = config_load_file(cfg, path, err, errsz);
	}
	if (r == 0 && override_logging(o, cfg) < 0) {
		snprintf(err, errsz, "out of memory");
		r = -1;
	}
	return r;
}

/* Each line of a load's errors on stderr, as "ferry: LINE". */
static void print_config_errors(const char *err)
{
	for (const char *p = err; *p;) {
		size_t n = strcspn(p, "\n");
		fprintf(stderr, "ferry: %.*s\n", (int)n, p);
		p += n + (p[n] == '\n');
	}
}

/* The same lines in the daemon log that cfg names. */
static void log_config_errors(const struct daemon_config *cfg, const char *err)
{
	for (const char *p = err; *p;) {
		size_t n = strcspn(p, "\n");
		daemon_log(cfg, NULL, "config error: %.*s", (int)n, p);
		p += n + (p[n] == '\n');
	}
}

/* Room for every error of a failed load (config.h: CONFIG_MAX_ERRORS). */
#define CONFIG_ERRS_SIZE 8192

/* Noted by the listener's signal handlers, acted on by its accept loop
 * (the signals are blocked everywhere else in it, so none is missed). */
static volatile sig_atomic_t stop_signal;      /* SIGTERM or SIGINT */
static volatile sig_atomic_t reload_requested; /* SIGHUP */

static void note_stop(int sig)
{
	stop_signal = sig;
}

static void note_reload(int sig)
{
	(void)sig;
	reload_requested = 1;
}

/* Only interrupts the wait for a connection: the accept loop reaps, so
 * that it knows which connections ended (daemon/conn_limits.h). */
static void note_child(int sig)
{
	(void)sig;
}

/* What the listening process holds. */
struct listener {
	const struct ferry_opts *o;
	struct daemon_config cfg;        /* the configuration that last loaded */
	char last_err[CONFIG_ERRS_SIZE]; /* the errors of the failed reload logged last */
	int port;
	int lfd;                         /* the daemon port */
	struct ssh_listener *ssh;        /* the SSH port, or NULL */
	struct pid_file pid;
	struct conn_table conns;         /* the live connections' children */
	struct linger_set refused;       /* refused connections, closing */
	sigset_t wait_mask;              /* while waiting: the stop, reload and child signals let in */
	sigset_t child_mask;             /* the mask the listener started with */
};

/* Wait for a connection on the TCP listener or the SSH one and accept it;
 * *is_ssh says which, addr (CONN_ADDR_MAX) the peer's address. Meanwhile
 * notes the SSH logins that authenticated and tends the refused
 * connections. Fails with EINTR when a signal came in, EAGAIN when
 * something else did. */
static int accept_next(struct listener *L, bool *is_ssh, char *addr)
{
	int sfd = ssh_listener_fd(L->ssh);
	size_t npipes = conn_table_unauthenticated(&L->conns);
	struct pollfd *pf = calloc(2 + LINGER_MAX + npipes, sizeof *pf);
	struct sockaddr_storage ss;
	socklen_t sslen = sizeof ss;

	if (!pf) {
		errno = ENOMEM;
		return -1;
	}
	pf[0] = (struct pollfd){.fd = L->lfd, .events = POLLIN};
	pf[1] = (struct pollfd){.fd = sfd, .events = POLLIN};
	size_t nlinger = linger_pollfds(&L->refused, pf + 2);
	struct pollfd *pipes = pf + 2 + nlinger;
	npipes = conn_table_startup_pollfds(&L->conns, pipes, npipes);
	int wait_ms = linger_timeout_ms(&L->refused);
	struct timespec ts = {.tv_sec = wait_ms / 1000, .tv_nsec = (long)(wait_ms % 1000) * 1000000};
	int r = ppoll(pf, 2 + nlinger + npipes, wait_ms < 0 ? NULL : &ts, &L->wait_mask);
	linger_service(&L->refused, pf + 2, r > 0 ? nlinger : 0);
	for (size_t i = 0; r > 0 && i < npipes; i++)
		if (pipes[i].revents)
			conn_table_startup_done(&L->conns, pipes[i].fd);
	bool tcp = r > 0 && (pf[0].revents & POLLIN);
	*is_ssh = r > 0 && !tcp && sfd >= 0 && (pf[1].revents & POLLIN);
	free(pf);
	if (r < 0)
		return -1;
	if (!tcp && !*is_ssh) {
		errno = EAGAIN;
		return -1;
	}
	int cfd = accept4(*is_ssh ? sfd : L->lfd, (struct sockaddr *)&ss, &sslen, SOCK_CLOEXEC);
	if (cfd >= 0)
		conn_peer_addr((struct sockaddr *)&ss, sslen, addr, CONN_ADDR_MAX);
	return cfd;
}

/* Read the configuration again, as rsync does for every connection. If it
 * no longer loads, the last good one stays in force and the errors go to
 * its log: at once after a SIGHUP (report), else once until they change. */
static void reload_config(struct listener *L, bool report)
{
	struct daemon_config fresh;
	char err[CONFIG_ERRS_SIZE];

	if (load_config(L->o, &fresh, true, err, sizeof err) == 0) {
		config_free(&L->cfg);
		L->cfg = fresh;
		L->last_err[0] = '\0';
		return;
	}
	config_free(&fresh);
	if (!report && strcmp(err, L->last_err) == 0)
		return;
	log_config_errors(&L->cfg, err);
	daemon_log(&L->cfg, NULL,
		   "config not reloaded: still serving the last configuration that loaded");
	daemon_log_close();
	snprintf(L->last_err, sizeof L->last_err, "%s", err);
}

/* SIGTERM and SIGINT stop the listener, SIGHUP reloads the configuration
 * (rsync's listener exits on SIGHUP too; ferry keeps running so that
 * `systemctl reload` works, contrib/ferryd.service), SIGCHLD has the
 * children reaped. All four are blocked but while waiting for a
 * connection. */
static void listener_signals(struct listener *L)
{
	struct sigaction sa = {.sa_handler = note_child, .sa_flags = SA_RESTART | SA_NOCLDSTOP};
	sigset_t ours;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGCHLD, &sa, NULL);
	sa.sa_flags = 0;
	sa.sa_handler = note_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = note_reload;
	sigaction(SIGHUP, &sa, NULL);
	sigemptyset(&ours);
	sigaddset(&ours, SIGTERM);
	sigaddset(&ours, SIGINT);
	sigaddset(&ours, SIGHUP);
	sigaddset(&ours, SIGCHLD);
	sigprocmask(SIG_BLOCK, &ours, &L->child_mask);
	L->wait_mask = L->child_mask;
	sigdelset(&L->wait_mask, SIGTERM);
	sigdelset(&L->wait_mask, SIGINT);
	sigdelset(&L->wait_mask, SIGHUP);
	sigdelset(&L->wait_mask, SIGCHLD);
}

/* A connection's process starts with the signal handling it had before the
 * listener installed its own: the default for SIGTERM and SIGINT, SIGHUP
 * ignored, the listener's original mask. */
static void child_signals(const struct listener *L)
{
	signal(SIGCHLD, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGHUP, SIG_IGN);
	sigprocmask(SIG_SETMASK, &L->child_mask, NULL);
}

static void __attribute__((noreturn)) serve_in_child(struct listener *L, int cfd, bool is_ssh,
							int startup_fd)
{
	close(L->lfd);
	if (!is_ssh)
		ssh_listener_close(L->ssh);
	conn_table_free(&L->conns);
	linger_free(&L->refused);
	pid_file_forget(&L->pid);
	child_signals(L);
	_exit(is_ssh ? ssh_listener_serve(L->ssh, L->o, &L->cfg, cfd, startup_fd)
		     : daemon_serve_client(&L->cfg, L->o, cfd, cfd));
}

/* `max connections per host`: refuse a TCP connection from addr, which
 * already has that many, in the listener itself -- no child is forked for
 * it. The client gets the greeting and rsync's refusal form, as for `max
 * connections`, so it reports the reason and exits 5. */
static bool host_limit_refused(struct listener *L, int cfd, const char *addr)
{
	int max = L->cfg.max_connections_per_host;
	char msg[256];

	if (max <= 0 || conn_table_host_count(&L->conns, addr) < (size_t)max)
		return false;
	daemon_log(&L->cfg, NULL, "max connections per host (%d) reached for %s", max, addr);
	daemon_log_close();
	int len = snprintf(msg, sizeof msg,
			   "@RSYNCD: %d.0 %s\n@ERROR: max connections per host (%d) reached -- "
			   "try again later\n",
			   PROTOCOL_NEWEST, auth_default_list(), max);
	/* The listener must never block on a client: what the socket buffer
	 * does not take is lost. The connection then lingers (conn_limits.h:
	 * linger_set) so that the client reads the refusal, not a reset. */
	fcntl(cfd, F_SETFL, fcntl(cfd, F_GETFL) | O_NONBLOCK);
	if (len > 0 && (size_t)len < sizeof msg)
		(void)send(cfd, msg, (size_t)len, MSG_NOSIGNAL);
	shutdown(cfd, SHUT_WR);
	int kept = dup(cfd);
	if (kept >= 0) {
		fcntl(kept, F_SETFD, FD_CLOEXEC);
		linger_add(&L->refused, kept);
	}
	return true;
}

/* `ssh max startups`: OpenSSH's random early drop of SSH connections while
 * too many have not authenticated yet. */
static bool startups_dropped(struct listener *L, const char *addr)
{
	const struct max_startups *m = &L->cfg.ssh_max_startups;
	size_t pending = conn_table_unauthenticated(&L->conns);

	if (!max_startups_should_drop(m, pending, arc4random_uniform(100)))
		return false;
	daemon_log(&L->cfg, NULL,
		   "ssh: drop connection from %s: %zu not yet authenticated (ssh max startups "
		   "%d:%d:%d)",
		   addr, pending, m->start, m->rate, m->full);
	daemon_log_close();
	return true;
}

/* Fork the child that serves cfd and record it. An SSH child gets the
 * write end of its startup pipe. */
static void spawn_child(struct listener *L, int cfd, bool is_ssh, const char *addr)
{
	int sp[2] = {-1, -1};

	if (is_ssh && pipe2(sp, O_CLOEXEC) < 0) {
		daemon_log(&L->cfg, NULL, "ssh: cannot create a startup pipe: %s", strerror(errno));
		daemon_log_close();
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		if (sp[0] >= 0)
			close(sp[0]);
		serve_in_child(L, cfd, is_ssh, sp[1]);
	}
	if (sp[1] >= 0)
		close(sp[1]);
	if (pid < 0) {
		daemon_log(&L->cfg, NULL, "could not create child server process: %s",
			   strerror(errno));
		daemon_log_close();
	}
	if (pid < 0 || conn_table_add(&L->conns, pid, addr, is_ssh, sp[0]) < 0) {
		if (sp[0] >= 0)
			close(sp[0]);
	}
}

/* The listener's exit code on a stop signal: 0 for SIGTERM, as rsync's
 * listener exits, else 20 with rsync's closing line in the log. */
static int stop_code(const struct listener *L, int sig)
{
	char line[512];

	if (sig == SIGTERM)
		return 0;
	exit_line_format(line, sizeof line, RERR_SIGNAL, "Receiver", "listen.c", __LINE__);
	line[strcspn(line, "\n")] = '\0';
	daemon_log(&L->cfg, NULL, "%s", line);
	daemon_log_close();
	return RERR_SIGNAL;
}

static int accept_loop(struct listener *L)
{
	for (;;) {
		if (stop_signal)
			return stop_code(L, stop_signal);
		if (reload_requested) {
			reload_requested = 0;
			reload_config(L, true);
		}
		conn_table_reap(&L->conns);
		bool is_ssh = false;
		char addr[CONN_ADDR_MAX];
		int cfd = accept_next(L, &is_ssh, addr);
		if (cfd < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EAGAIN)
				continue;
			daemon_log(&L->cfg, NULL, "accept failed: %s", strerror(errno));
			daemon_log_close();
			continue;
		}
		reload_config(L, false);
		if (is_ssh ? !startups_dropped(L, addr) : !host_limit_refused(L, cfd, addr))
			spawn_child(L, cfd, is_ssh, addr);
		close(cfd);
	}
}

/* Go to the background (rsync: become_daemon). The parent stays until the
 * daemon is listening (a byte on the pipe), then exits 0; if the daemon
 * fails first, the parent exits with the daemon's code, so a refused start
 * is not reported as success. Returns, in the daemon, the pipe to signal
 * readiness on; -1 if fork failed. */
static int detach_start(void)
{
	int p[2], st;
	char c;
	ssize_t n;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		close(p[0]);
		setsid();
		return p[1];
	}
	close(p[1]);
	do
		n = read(p[0], &c, 1);
	while (n < 0 && errno == EINTR);
	if (n == 1)
		_exit(0);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : RERR_CRASHED);
}

/* In the daemon, once listening: release the waiting parent and the
 * terminal. */
static void detach_done(int ready_fd)
{
	int null = open("/dev/null", O_RDWR);

	if (write(ready_fd, "", 1) != 1) {
		/* The parent was killed while it waited: nobody to tell, and
		 * the daemon serves on (SIGPIPE is ignored by now). */
	}
	close(ready_fd);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		if (null > 2)
			close(null);
	}
}

/* Bind the daemon port (unless socket activation gave it) and the SSH
 * port. Returns 0 or an exit code, after saying why. */
static int open_listeners(struct listener *L)
{
	const struct ferry_opts *o = L->o;

	L->port = o->port ? o->port : L->cfg.port ? L->cfg.port : CONFIG_DEFAULT_PORT;
	if (L->lfd < 0 && (L->lfd = daemon_listen_socket(o, &L->cfg, L->port)) < 0)
		return RERR_SOCKETIO;
	if (ssh_listener_open(o, &L->cfg, &L->ssh) < 0)
		return RERR_SOCKETIO;
	return 0;
}

/* The pid file is taken before the ports, as rsync takes it: a second
 * daemon on the same pid file says so, whatever its port. */
static int take_pid_file(struct listener *L)
{
	char msg[4200], line[512];

	if (pid_file_create(&L->pid, L->cfg.pid_file, msg, sizeof msg) == 0)
		return 0;
	fprintf(stderr, "ferry: %s\n", msg);
	daemon_log(&L->cfg, NULL, "%s", msg);
	exit_line_format(line, sizeof line, RERR_FILEIO, "Receiver", "listen.c", __LINE__);
	line[strcspn(line, "\n")] = '\0';
	daemon_log(&L->cfg, NULL, "%s", line);
	daemon_log_close();
	return RERR_FILEIO;
}

static int run_listener(struct listener *L)
{
	int ready_fd = -1, code;

	if (!L->o->no_detach && (ready_fd = detach_start()) < 0) {
		fprintf(stderr, "ferry: failed to fork: %s\n", strerror(errno));
		return RERR_FILEIO;
	}
	/* From here a stop signal waits for the accept loop, which removes
	 * the pid file. */
	listener_signals(L);
	if ((code = take_pid_file(L)) != 0)
		return code;
	if ((code = open_listeners(L)) != 0) {
		pid_file_remove(&L->pid);
		return code;
	}
	if (ready_fd >= 0)
		detach_done(ready_fd);
	daemon_log(&L->cfg, NULL, "ferry version %s starting, listening on port %d", FERRY_VERSION,
		   L->port);
	daemon_log_close();
	code = accept_loop(L);
	conn_table_free(&L->conns);
	linger_free(&L->refused);
	close(L->lfd);
	ssh_listener_close(L->ssh);
	pid_file_remove(&L->pid);
	return code;
}

/* Serve the way ferry was started: one client on stdin/stdout (over a
 * remote shell, or from inetd), or as a listener. */
static int serve(struct listener *L)
{
	const struct ferry_opts *o = L->o;
	int sotype;
	socklen_t len = sizeof sotype;

	/* Started over a remote shell (`--server --daemon .`): one client on
	 * stdin/stdout, the dialogue of a TCP daemon (clientserver.c:
	 * start_daemon with am_daemon = -1). */
	if (o->server)
		return daemon_serve_client(&L->cfg, o, STDIN_FILENO, STDOUT_FILENO);
	/* systemd socket activation: the listening socket is inherited
	 * (daemon/socket_activation.c). */
	L->lfd = socket_activation_listener();
	if (L->lfd == SOCKET_ACTIVATION_ERROR)
		return RERR_SOCKETIO;
	/* Started by inetd, or by anyone who hands us a socket on stdin:
	 * that connection is served, and answered on, whatever else was
	 * asked (clientserver.c: daemon_main, is_a_socket). */
	if (L->lfd < 0 && getsockopt(STDIN_FILENO, SOL_SOCKET, SO_TYPE, &sotype, &len) == 0)
		return daemon_serve_client(&L->cfg, o, STDIN_FILENO, STDIN_FILENO);
	return run_listener(L);
}

int daemon_main(const struct ferry_opts *o)
{
	struct listener *L = calloc(1, sizeof *L);
	char err[CONFIG_ERRS_SIZE];
	int code;

	if (!L) {
		fprintf(stderr, "ferry: out of memory\n");
		return RERR_MALLOC;
	}
	L->o = o;
	L->lfd = -1;
	L->pid.fd = -1;
	if (load_config(o, &L->cfg, o->server, err, sizeof err) < 0) {
		print_config_errors(err);
		code = RERR_SYNTAX;
	} else if (o->check_config) {
		code = 0;
	} else {
		code = serve(L);
	}
	config_free(&L->cfg);
	free(L);
	return code;
}
