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

#include "client/connect.h"
#include "client/options.h"
#include "daemon/daemon.h"
#include "daemon/ssh_listen.h"
#include "daemon/socket_activation.h"
#include "proto/outfilter.h"
#include "proto/wire.h"

static const char default_config[] =
	"# ferry's built-in configuration (--config=@default)\n"
	"use chroot = no\n"
	"[files]\n"
	"\tpath = %FERRY_ROOT%\n"
	"\tcomment = files served by ferry\n"
	"\tread only = yes\n";

/* The log file stays open across the privilege drop, as rsync keeps it:
 * a module running as nobody could not open a root-owned log. A connection
 * writes to the daemon's log until it opens its module's (daemon_log_open)
 * and to that one after, so a single cached descriptor does. */
static struct {
	char path[4096];
	int fd;
} log_cache = {.fd = -1};

static int log_fd_for(const char *file)
{
	if (log_cache.fd >= 0 && strcmp(log_cache.path, file) == 0)
		return log_cache.fd;
	int fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -1;
	if (log_cache.fd >= 0)
		close(log_cache.fd);
	log_cache.fd = fd;
	snprintf(log_cache.path, sizeof log_cache.path, "%s", file);
	return fd;
}

/* The listening process does not keep the log open: each connection
 * opens it afresh, so a log rotated away is not written to any more. */
static void log_cache_drop(void)
{
	if (log_cache.fd >= 0)
		close(log_cache.fd);
	log_cache.fd = -1;
}

static const char *log_file_of(const struct daemon_config *cfg, const struct daemon_module *m)
{
	return m && m->log_file ? m->log_file : cfg->defaults.log_file;
}

void daemon_log_open(const struct daemon_config *cfg, const struct daemon_module *m)
{
	const char *file = log_file_of(cfg, m);

	if (file && *file)
		log_fd_for(file);
}

void daemon_log(const struct daemon_config *cfg, const struct daemon_module *m, const char *fmt,
		...)
{
	const char *file = log_file_of(cfg, m);
	char msg[2048], when[64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (!file || !*file) {
		const char *tag = m && m->syslog_tag ? m->syslog_tag : cfg->defaults.syslog_tag;
		openlog(tag ? tag : "rsyncd", LOG_PID,
			m ? m->syslog_facility : cfg->defaults.syslog_facility);
		syslog(LOG_INFO, "%s", msg);
		return;
	}
	time_t t = time(NULL);
	struct tm tm;
	localtime_r(&t, &tm);
	strftime(when, sizeof when, "%Y/%m/%d %H:%M:%S", &tm);
	int fd = log_fd_for(file);
	if (fd < 0)
		return;
	/* a client's file name must not forge log lines or send escapes to
	 * the terminal an administrator reads the log on (log.c: logit) */
	char shown[5 * sizeof msg];
	out_escape_log(shown, sizeof shown, msg, strlen(msg));
	dprintf(fd, "%s [%d] %s\n", when, (int)getpid(), shown);
}

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
	if ((o->log_file && replace_str(&m->log_file, o->log_file) < 0) ||
	    (o->log_file_format && replace_str(&m->log_format, o->log_file_format) < 0)) {
		fprintf(stderr, "ferry: out of memory\n");
		return -1;
	}
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

static int load_config(const struct ferry_opts *o, struct daemon_config *cfg)
{
	char err[1024], cwd[4096];
	const char *path = o->config_file ? o->config_file : "/etc/ferryd.conf";
	int r;

	config_init(cfg);
	for (int i = 0; i < o->ndparam; i++) {
		if (config_add_dparam(cfg, o->dparam[i], err, sizeof err) < 0) {
			fprintf(stderr, "ferry: %s\n", err);
			return -1;
		}
	}
	if (strcmp(path, DAEMON_DEFAULT_CONFIG_NAME) == 0) {
		if (!getenv("FERRY_ROOT") && getcwd(cwd, sizeof cwd))
			setenv("FERRY_ROOT", cwd, 0);
		r = config_load_string(cfg, default_config, DAEMON_DEFAULT_CONFIG_NAME, err, sizeof err);
	} else {
		r = config_load_file(cfg, path, err, sizeof err);
	}
	if (r < 0) {
		fprintf(stderr, "ferry: %s\n", err);
		return -1;
	}
	return override_logging(o, cfg);
}

int daemon_listen_socket(const struct ferry_opts *o, const struct daemon_config *cfg, int port)
{
	const char *addr = o->bind_address ? o->bind_address : cfg->address;
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
	struct addrinfo *res;
	char portstr[16];

	hints.ai_family = o->ip_family == 4 ? AF_INET : o->ip_family == 6 ? AF_INET6 : AF_UNSPEC;
	snprintf(portstr, sizeof portstr, "%d", port);
	int gai = getaddrinfo(addr, portstr, &hints, &res);
	if (gai != 0) {
		fprintf(stderr, "ferry: getaddrinfo: bind address %s: %s\n", addr ? addr : "*",
			gai_strerror(gai));
		return -1;
	}
	int fd = -1;
	/* Prefer IPv6 with dual stack for a wildcard address, like rsync. */
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0)
			continue;
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		/* As the client does (connect.c): without it the small messages
		 * that end each phase wait for the peer's delayed ACK, 40 ms each
		 * (a small pull: 0.20 s -> 0.05 s). Inherited by accepted
		 * sockets; "socket options = TCP_NODELAY=0" still turns it off. */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		/* rsync socket.c: open_socket_in; accepted sockets inherit them */
		sockopts_apply(fd, o->sockopts ? o->sockopts : cfg->socket_options);
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
		    listen(fd, cfg->listen_backlog > 0 ? cfg->listen_backlog : 5) == 0)
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		fprintf(stderr, "ferry: unable to bind any inbound sockets on port %d: %s\n", port,
			strerror(errno));
	return fd;
}

/* Wait for a connection on the TCP listener or the SSH one (sfd, -1 when
 * there is none) and accept it; *is_ssh says which. */
static int accept_next(int lfd, int sfd, bool *is_ssh)
{
	struct pollfd pf[2] = {{.fd = lfd, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};

	if (poll(pf, sfd >= 0 ? 2 : 1, -1) < 0)
		return -1;
	*is_ssh = sfd >= 0 && (pf[1].revents & POLLIN) && !(pf[0].revents & POLLIN);
	return accept4(*is_ssh ? sfd : lfd, NULL, NULL, SOCK_CLOEXEC);
}

static void reap_children(int sig)
{
	int saved = errno;
	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	errno = saved;
}

static int write_pid_file(const char *path)
{
	if (!path || !*path)
		return 0;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		fprintf(stderr, "ferry: failed to create pid file %s: %s\n", path, strerror(errno));
		return -1;
	}
	dprintf(fd, "%d\n", (int)getpid());
	close(fd);
	return 0;
}

static void detach(void)
{
	pid_t pid = fork();

	if (pid < 0)
		return;
	if (pid > 0)
		_exit(0);
	setsid();
	int null = open("/dev/null", O_RDWR);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		if (null > 2)
			close(null);
	}
}

int daemon_main(const struct ferry_opts *o)
{
	struct daemon_config cfg;

	if (load_config(o, &cfg) < 0)
		return RERR_SYNTAX;
	/* Started over a remote shell (`--server --daemon .`): one client on
	 * stdin/stdout, the dialogue of a TCP daemon (clientserver.c:
	 * start_daemon with am_daemon = -1). */
	if (o->server) {
		int code = daemon_serve_client(&cfg, o, STDIN_FILENO, STDOUT_FILENO);
		config_free(&cfg);
		return code;
	}
	/* systemd socket activation: the listening socket is inherited
	 * (daemon/socket_activation.c). */
	int lfd = socket_activation_listener();
	if (lfd == SOCKET_ACTIVATION_ERROR) {
		config_free(&cfg);
		return RERR_SOCKETIO;
	}
	/* Started by inetd: the connection is already on stdin. */
	int sotype;
	socklen_t len = sizeof sotype;
	if (lfd < 0 && getsockopt(STDIN_FILENO, SOL_SOCKET, SO_TYPE, &sotype, &len) == 0 &&
	    !o->no_detach && !o->port) {
		int code = daemon_serve_client(&cfg, o, STDIN_FILENO, STDOUT_FILENO);
		config_free(&cfg);
		return code;
	}
	int port = o->port ? o->port : cfg.port ? cfg.port : 873;
	if (lfd < 0)
		lfd = daemon_listen_socket(o, &cfg, port);
	if (lfd < 0) {
		config_free(&cfg);
		return RERR_SOCKETIO;
	}
	struct ssh_listener *ssh = NULL;
	if (ssh_listener_open(o, &cfg, &ssh) < 0) {
		close(lfd);
		config_free(&cfg);
		return RERR_SOCKETIO;
	}
	if (!o->no_detach)
		detach();
	if (write_pid_file(cfg.pid_file) < 0)
		return RERR_FILEIO;
	daemon_log(&cfg, NULL, "ferry version %s starting, listening on port %d", FERRY_VERSION,
		   port);
	log_cache_drop();
	signal(SIGPIPE, SIG_IGN);
	/* Every connection reads the config afresh, so a SIGHUP (rsync's
	 * "re-read the config") has nothing more to do than not kill us. */
	signal(SIGHUP, SIG_IGN);
	struct sigaction sa = {.sa_handler = reap_children, .sa_flags = SA_RESTART | SA_NOCLDSTOP};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGCHLD, &sa, NULL);
	for (;;) {
		bool is_ssh = false;
		int cfd = accept_next(lfd, ssh_listener_fd(ssh), &is_ssh);
		if (cfd < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EAGAIN)
				continue;
			daemon_log(&cfg, NULL, "accept failed: %s", strerror(errno));
			log_cache_drop();
			continue;
		}
		pid_t pid = fork();
		if (pid == 0) {
			close(lfd);
			if (!is_ssh)
				ssh_listener_close(ssh);
			signal(SIGCHLD, SIG_DFL);
			/* The config is re-read for every connection, as rsync does. */
			struct daemon_config fresh;
			int code = RERR_SYNTAX;
			if (load_config(o, &fresh) == 0)
				code = is_ssh ? ssh_listener_serve(ssh, o, &fresh, cfd)
					      : daemon_serve_client(&fresh, o, cfd, cfd);
			_exit(code);
		}
		close(cfd);
	}
}
