/*
 * Before the module is chosen and after: the greeting, early input, the
 * motd, the module listing, the connection slot and authentication
 * (clientserver.c: start_daemon, exchange_protocols, auth_server).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/log.h"
#include "daemon/serve_priv.h"
#include "proto/base/oppath.h"

void send_motd(struct conn *c)
{
	char buf[4096];

	if (!c->cfg->motd_file || !*c->cfg->motd_file)
		return;
	char *motd = config_expand(c->cfg->motd_file);
	int fd = motd ? oppath_open(AT_FDCWD, motd, O_RDONLY, 0, OPPATH_QUIET) : -1;
	free(motd);
	ssize_t n;
	while (fd >= 0 && (n = read(fd, buf, sizeof buf)) > 0)
		wire_write(&c->s.out, buf, (size_t)n);
	if (fd >= 0)
		close(fd);
	/* rsync sends the extra newline even when the file cannot be read */
	wire_write(&c->s.out, "\n", 1);
	wire_flush(&c->s.out);
}

bool read_client_greeting(struct conn *c)
{
	char line[LINE_MAX_LEN];
	int n = 0;

	if (!wire_read_line(&c->s.in, line, sizeof line))
		return false;
	c->remote_sub = -1;
	if (strncmp(line, "@RSYNCD: ", 9) != 0 ||
	    sscanf(line + 9, "%d%n", &c->remote_protocol, &n) != 1) {
		send_line(c, "@ERROR: protocol startup error\n");
		return false;
	}
	const char *p = line + 9 + n;
	if (*p == '.') {
		int m = 0;
		if (sscanf(p + 1, "%d%n", &c->remote_sub, &m) == 1)
			p += 1 + m;
	}
	if (c->remote_sub < 0 && c->remote_protocol >= 30) {
		send_line(c, "@ERROR: your client omitted the subprotocol value: %s\n", line);
		return false;
	}
	while (*p == ' ')
		p++;
	snprintf(c->digests, sizeof c->digests, "%s", p);
	if (!*c->digests && c->remote_protocol > 31) {
		send_line(c, "@ERROR: your client omitted the digest name list: %s\n", line);
		return false;
	}
	int proto = c->remote_protocol < PROTOCOL_NEWEST ? c->remote_protocol : PROTOCOL_NEWEST;
	if (c->remote_protocol < PROTOCOL_NEWEST && c->remote_sub > 0)
		proto--;
	c->remote_protocol = proto;
	c->s.protocol = c->s.in.protocol = c->s.out.protocol = proto;
	return true;
}

bool read_early_input(struct conn *c, char *line, size_t size)
{
	char *end;
	long len = strtol(line + strlen(EARLY_INPUT_CMD), &end, 10);

	if (*end || len <= 0 || len > EARLY_INPUT_MAX) {
		send_line(c, "@ERROR: invalid early_input length\n");
		return false;
	}
	c->early_input = malloc((size_t)len);
	if (!c->early_input || !wire_read(&c->s.in, c->early_input, (size_t)len))
		return false;
	c->early_input_len = (size_t)len;
	return wire_read_line(&c->s.in, line, size);
}

void send_listing(struct conn *c)
{
	for (size_t i = 0; i < c->cfg->nmodules; i++) {
		const struct daemon_module *m = &c->cfg->modules[i];
		/* rsync lists a module even to a host it would refuse;
		 * only "list = no" hides it (clientserver.c: send_listing). */
		if (!m->list)
			continue;
		send_line(c, "%-15s\t%s\n", m->name, m->comment ? m->comment : "");
	}
	if (c->s.protocol >= 25)
		send_line(c, "@RSYNCD: EXIT\n");
}
bool claim_slot(struct conn *c, const struct daemon_module *m)
{
	const char *lock = m->lock_file ? m->lock_file : "/var/run/rsyncd.lock";

	if (m->max_connections <= 0)
		return m->max_connections == 0;
	c->lock_fd = oppath_open(AT_FDCWD, lock, O_RDWR | O_CREAT, 0600, module_oppath_how(m));
	if (c->lock_fd < 0)
		return false;
	for (int i = 0; i < m->max_connections; i++) {
		struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = i * 4,
				   .l_len = 4};
		if (fcntl(c->lock_fd, F_SETLK, &fl) == 0)
			return true;
	}
	close(c->lock_fd);
	c->lock_fd = -1;
	return false;
}

bool authenticate_for_module(struct conn *c, const struct daemon_module *m, bool *read_only,
			 char *user, size_t usz)
{
	enum csum_type t;
	bool legacy;
	char challenge[AUTH_CHALLENGE_SIZE], line[LINE_MAX_LEN], err[512];

	user[0] = '\0';
	if (!auth_required(m->auth_users))
		return true;
	if (!auth_pick_digest(c->digests, c->s.protocol, &t, &legacy)) {
		send_line(c, "@ERROR: your client does not support one of our daemon-auth "
			     "checksums: %s\n", auth_default_list());
		return false;
	}
	if (!auth_digest_meets(t, m->auth_digest, err, sizeof err)) {
		daemon_log(c->cfg, NULL, "auth digest refused: %s", err);
		send_line(c, "@ERROR: auth failed on module %s\n", m->name);
		return false;
	}
	auth_make_challenge(t, challenge, sizeof challenge);
	if (!*challenge || !send_line(c, "@RSYNCD: AUTHREQD %s\n", challenge) ||
	    !wire_read_line(&c->s.in, line, sizeof line)) {
		send_line(c, "@ERROR: auth failed on module %s\n", m->name);
		return false;
	}
	enum auth_result r = auth_check(m->auth_users, m->secrets_file, m->strict_modes,
					geteuid() == 0, t, legacy, challenge, line, user, usz, err,
					sizeof err);
	if (r == AUTH_DENIED) {
		char *reason = err, *nl;
		while ((nl = strchr(reason, '\n')) != NULL) {
			daemon_log(c->cfg, NULL, "%.*s", (int)(nl - reason), reason);
			reason = nl + 1;
		}
		daemon_log(c->cfg, NULL, "auth failed on module %s from %s (%s) for %s: %s", m->name,
			   c->host, c->addr, *user ? user : "?", reason);
		send_line(c, "@ERROR: auth failed on module %s\n", m->name);
		return false;
	}
	if (r == AUTH_OK_RO)
		*read_only = true;
	else if (r == AUTH_OK_RW)
		*read_only = false;
	return true;
}
