/*
 * The client side of the daemon dialogue (rsync clientserver.c:
 * start_inband_exchange, exchange_protocols; authenticate.c: auth_client):
 * greetings, module request, MOTD, authentication, and the argument list.
 */
#include "client/daemon_client.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <readpassphrase.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/args/options.h"
#include "client/rsh.h"
#include "proto/args/secluded.h"
#include "proto/base/checksum.h"
#include "proto/base/fdio.h"
#include "proto/base/json.h"
#include "proto/run/negotiate.h"
#include "proto/base/oppath.h"
#include "proto/core/progress.h"

#define LINE_MAX_LEN 5120

/* "@RSYNCD: 31.0 sha512 ..." -> version, sub-version, digest list. */
static bool parse_greeting(const char *line, int *version, int *sub, char *digests,
			   size_t dsize)
{
	int n = 0;

	if (strncmp(line, "@RSYNCD: ", 9) != 0)
		return false;
	if (sscanf(line + 9, "%d%n", version, &n) != 1)
		return false;
	const char *p = line + 9 + n;
	*sub = 0;
	if (*p == '.') {
		int m = 0;
		if (sscanf(p + 1, "%d%n", sub, &m) != 1)
			return false;
		p += 1 + m;
	}
	while (*p == ' ')
		p++;
	snprintf(digests, dsize, "%s", p);
	return true;
}

/* A password file's password: its first non-empty line, CR and LF
 * stripped; none is an error (rsync authenticate.c: getpassf's strtok). */
static bool password_first_line(const char *name, char *buf, int *exit_code)
{
	size_t skip = strspn(buf, "\r\n");
	size_t len = strcspn(buf + skip, "\r\n");

	memmove(buf, buf + skip, len);
	buf[len] = '\0';
	if (len)
		return true;
	fprintf(stderr, "ERROR: failed to read a password from %s\n", name);
	*exit_code = RERR_SYNTAX;
	return false;
}

/* --password-file NAME ("-": stdin), with rsync's checks of its owner
 * and mode (authenticate.c: getpassf). */
static bool read_password_file(const char *name, bool insecure, char *buf, size_t size,
			       int *exit_code)
{
	struct stat st;
	ssize_t n;

	if (strcmp(name, "-") == 0) {
		if (!fgets(buf, (int)size, stdin))
			buf[0] = '\0';
		return password_first_line(name, buf, exit_code);
	}
	/* A planted symlink could make us send another file's first line to
	 * the daemon: an operator path (oppath.h). */
	int fd = oppath_open(AT_FDCWD, name, O_RDONLY, 0, insecure);
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "ferry: could not open password file %s: %s (%d)\n", name,
			strerror(errno), errno);
		if (fd >= 0)
			close(fd);
		*exit_code = RERR_SYNTAX;
		return false;
	}
	const char *why = NULL;
	if (st.st_mode & 06)
		why = "password file must not be other-accessible";
	else if (geteuid() == 0 && st.st_uid != 0)
		why = "password file must be owned by root when running as root";
	if (why) {
		fprintf(stderr, "ERROR: %s\n", why); /* rsync: rprintf, no prefix */
		close(fd);
		*exit_code = RERR_SYNTAX;
		return false;
	}
	n = read(fd, buf, size - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return password_first_line(name, buf, exit_code);
}

/* The password: --password-file, then RSYNC_PASSWORD, then a prompt
 * (authenticate.c: auth_client, getpassf). */
static bool get_password(const struct ferry_opts *o, char *buf, size_t size, int *exit_code)
{
	if (o->password_file)
		return read_password_file(o->password_file, o->insecure_links, buf, size, exit_code);
	const char *env = getenv("RSYNC_PASSWORD");
	if (env) {
		snprintf(buf, size, "%s", env);
		return true;
	}
	/* on the terminal, echo off; without one, from stdin with the prompt
	 * on stderr -- where glibc's getpass(), rsync's, reads too */
	if (!readpassphrase("Password: ", buf, size, RPP_ECHO_OFF))
		buf[0] = '\0';
	return true;
}

static void default_user(const struct remote_spec *r, char *buf, size_t size)
{
	const char *u = r->user[0] ? r->user : getenv("USER");

	if (!u || !*u)
		u = getenv("LOGNAME");
	if (!u || !*u) {
		struct passwd *pw = getpwuid(getuid());
		u = pw ? pw->pw_name : "nobody";
	}
	snprintf(buf, size, "%s", u);
}

static bool answer_challenge(struct session *s, const struct remote_spec *r,
			     const char *challenge, const struct daemon_peer *peer, int *exit_code)
{
	char user[256], password[1024], response[256], pick[32];
	enum csum_type t;
	bool legacy = false;

	if (peer->digests[0]) {
		if (!negotiate_pick(auth_default_list(), peer->digests, pick, sizeof pick) ||
		    auth_parse(pick, &t) < 0) {
			fprintf(stderr, "ferry: Failed to negotiate a daemon auth choice "
					"(the daemon offers \"%s\")\n", peer->digests);
			*exit_code = RERR_UNSUPPORTED;
			return false;
		}
	} else if (s->protocol >= 30) {
		t = CSUM_MD5;
	} else {
		t = CSUM_MD4;
		legacy = true;
	}
	default_user(r, user, sizeof user);
	if (!get_password(s->opts, password, sizeof password, exit_code))
		return false;
	auth_response(t, legacy, password, challenge, response, sizeof response);
	memset(password, 0, sizeof password);
	char line[600];
	snprintf(line, sizeof line, "%s %s\n", user, response);
	return wire_write(&s->out, line, strlen(line)) && wire_flush(&s->out);
}

/* --early-input=FILE: "#early_input=LEN\n" and LEN bytes, before the
 * module name (clientserver.c: start_inband_exchange); an empty file sends
 * nothing. At most LINE_MAX_LEN bytes, as rsync. */
static bool send_early_input(struct session *s, const char *name, int *exit_code)
{
	char buf[LINE_MAX_LEN + 1], head[64];
	struct stat st;

	*exit_code = RERR_STARTCLIENT;
	/* A planted symlink must not make us send another user's file. */
	int fd = oppath_open(AT_FDCWD, name, O_RDONLY, 0, s->opts->insecure_links);
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "ferry: failed to open %s: %s (%d)\n", name, strerror(errno), errno);
		if (fd >= 0)
			close(fd);
		return false;
	}
	if (st.st_size > LINE_MAX_LEN) {
		fprintf(stderr, "ferry: %s is > %d bytes.\n", name, LINE_MAX_LEN);
		close(fd);
		return false;
	}
	size_t len = fd_read_full(fd, buf, (size_t)st.st_size);
	if (len < (size_t)st.st_size) {
		fprintf(stderr, "ferry: Early EOF in %s\n", name);
		close(fd);
		return false;
	}
	close(fd);
	if (!len)
		return true;
	snprintf(head, sizeof head, "#early_input=%zu\n", len);
	if (!wire_write(&s->out, head, strlen(head)) || !wire_write(&s->out, buf, len))
		return false;
	*exit_code = 0;
	return true;
}

/* Send the server's argument list: NUL-separated for protocol >= 30, else
 * newline-separated; ended by an empty argument. With --secluded-args the
 * list stops after the flag letters and the rest follows as rsync's
 * send_protected_args() sends it. */
static bool send_args(struct session *s, char **args)
{
	char sep = s->protocol >= 30 ? '\0' : '\n';
	bool secluded = s->opts->secluded_args;
	int split = secluded ? options_secluded_split(args) : -1;

	for (int i = 0; args[i] && i != split; i++)
		if (!wire_write(&s->out, args[i], strlen(args[i])) || !wire_write(&s->out, &sep, 1))
			return false;
	if (!wire_write(&s->out, &sep, 1))
		return false;
	if (secluded) {
		size_t len = 0;
		if (debug_ge(s->opts, DEBUG_CMD, 1)) /* rsync.c: send_protected_args */
			rsh_print_argv("protected args:", args + split, -1);
		char *buf = secluded_pack(args + split, NULL, 0, &len);
		bool ok = buf && wire_write(&s->out, buf, len);
		free(buf);
		if (!ok)
			return false;
	}
	return wire_flush(&s->out);
}

int daemon_handshake(struct session *s, const struct remote_spec *r, char **args,
		     struct daemon_peer *peer, int *exit_code)
{
	const struct ferry_opts *o = s->opts;
	int ours = o->protocol ? o->protocol : PROTOCOL_NEWEST;
	char line[LINE_MAX_LEN];

	snprintf(line, sizeof line, "@RSYNCD: %d.0 %s\n", ours, auth_default_list());
	if (!wire_write(&s->out, line, strlen(line)) || !wire_flush(&s->out))
		goto stream_error;
	if (!wire_read_line(&s->in, line, sizeof line)) {
		if (wire_error_code(&s->err) != RERR_STREAMIO)
			goto stream_error;
		/* the end before any greeting (clientserver.c:
		 * start_inband_exchange) */
		fprintf(stderr, "ferry: did not see server greeting\n");
		*exit_code = RERR_STARTCLIENT;
		return -1;
	}
	if (!parse_greeting(line, &peer->version, &peer->sub, peer->digests,
			    sizeof peer->digests)) {
		fprintf(stderr, "ferry: server sent \"%s\" rather than greeting\n", line);
		*exit_code = 5;
		return -1;
	}
	int proto = peer->version < ours ? peer->version : ours;
	if (peer->version < ours && peer->sub)
		proto--;
	s->protocol = s->in.protocol = s->out.protocol = proto;
	if (o->early_input && !send_early_input(s, o->early_input, exit_code)) {
		if (*exit_code)
			return -1;
		goto stream_error;
	}
	/* -vv (clientserver.c: start_inband_exchange) */
	if (*r->module && debug_ge(o, DEBUG_CMD, 1))
		rsh_print_argv("sending daemon args:", args,
			       o->secluded_args ? options_secluded_split(args) : -1);
	snprintf(line, sizeof line, "%s\n", r->module);
	if (!wire_write(&s->out, line, strlen(line)) || !wire_flush(&s->out))
		goto stream_error;
	for (;;) {
		if (!wire_read_line(&s->in, line, sizeof line)) {
			if (wire_error_code(&s->err) != RERR_STREAMIO)
				goto stream_error;
			fprintf(stderr, "ferry: didn't get server startup line\n");
			*exit_code = RERR_STARTCLIENT;
			return -1;
		}
		if (strncmp(line, "@RSYNCD: AUTHREQD ", 18) == 0) {
			if (!answer_challenge(s, r, line + 18, peer, exit_code))
				return -1;
			continue;
		}
		if (strcmp(line, "@RSYNCD: OK") == 0)
			break;
		if (strcmp(line, "@RSYNCD: EXIT") == 0) {
			*exit_code = 0;
			return -1;
		}
		if (strncmp(line, "@ERROR", 6) == 0) {
			fflush(stdout);
			fprintf(stderr, "%s\n", line);
			if (o->json) /* the daemon's refusal: a login, a module */
				progress_json_message(s, "error", line);
			*exit_code = 5;
			return -1;
		}
		/* MOTD or module lines: rsync cannot tell them apart, and
		 * --no-motd hides both (clientserver.c: start_inband_exchange). */
		if (!o->no_motd && o->json)
			json_event_text(*r->module ? "motd" : "listing", "text", line, strlen(line));
		else if (!o->no_motd)
			printf("%s\n", line);
	}
	if (!send_args(s, args))
		goto stream_error;
	return 0;

stream_error:
	fprintf(stderr, "ferry: %s\n", s->err.msg[0] ? s->err.msg : "connection lost");
	*exit_code = wire_error_code(&s->err) == RERR_TIMEOUT ? RERR_TIMEOUT : RERR_STARTCLIENT;
	return -1;
}
