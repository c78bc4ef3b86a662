/*
 * The SSH listener's socket and host keys (see daemon/ssh_listen.h); the
 * per-connection session is daemon/ssh_session.c.
 */
#include "daemon/ssh_listen.h"

#include <libssh/libssh.h>
#include <libssh/server.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/listen_socket.h"
#include "daemon/ssh_priv.h"

/* Load every `ssh host key` file into bind. At most one key per type is
 * kept by libssh, so a second key of a type already loaded is an error. */
static int load_host_keys(ssh_bind bind, const char *list)
{
	char *copy = strdup(list), *save = NULL;
	int nkeys = 0, seen_types[16] = {0};

	if (!copy) {
		fprintf(stderr, "ferry: out of memory\n");
		return -1;
	}
	for (char *path = strtok_r(copy, " \t,", &save); path; path = strtok_r(NULL, " \t,", &save)) {
		ssh_key key = NULL;
		if (ssh_pki_import_privkey_file(path, NULL, NULL, NULL, &key) != SSH_OK) {
			fprintf(stderr, "ferry: ssh host key %s: cannot read a private key from it\n",
				path);
			free(copy);
			return -1;
		}
		int t = ssh_key_type(key);
		if (t >= 0 && t < 16 && seen_types[t]++) {
			fprintf(stderr, "ferry: ssh host key %s: a second %s key (one per type)\n", path,
				ssh_key_type_to_char(ssh_key_type(key)));
			ssh_key_free(key);
			free(copy);
			return -1;
		}
		/* the bind takes the key over */
		if (ssh_bind_options_set(bind, SSH_BIND_OPTIONS_IMPORT_KEY, key) < 0) {
			fprintf(stderr, "ferry: ssh host key %s: %s\n", path, ssh_get_error(bind));
			ssh_key_free(key);
			free(copy);
			return -1;
		}
		nkeys++;
	}
	free(copy);
	if (!nkeys) {
		fprintf(stderr, "ferry: \"ssh port\" is set but \"ssh host key\" names no key file\n");
		return -1;
	}
	return 0;
}

int ssh_listener_open(const struct ferry_opts *o, const struct daemon_config *cfg,
		      struct ssh_listener **out)
{
	*out = NULL;
	if (!cfg->ssh_port)
		return 0;
	if (!cfg->ssh_host_key || !*cfg->ssh_host_key) {
		fprintf(stderr, "ferry: \"ssh port\" is set but \"ssh host key\" is not\n");
		return -1;
	}
	struct ssh_listener *l = calloc(1, sizeof *l);
	if (!l) {
		fprintf(stderr, "ferry: out of memory\n");
		return -1;
	}
	l->fd = -1;
	l->bind = ssh_bind_new();
	bool no = false;
	int quiet = SSH_LOG_NOLOG;
	if (!l->bind ||
	    ssh_bind_options_set(l->bind, SSH_BIND_OPTIONS_PROCESS_CONFIG, &no) < 0 ||
	    ssh_bind_options_set(l->bind, SSH_BIND_OPTIONS_LOG_VERBOSITY, &quiet) < 0 ||
	    load_host_keys(l->bind, cfg->ssh_host_key) < 0) {
		ssh_listener_close(l);
		return -1;
	}
	l->fd = daemon_listen_socket(o, cfg, cfg->ssh_port);
	if (l->fd < 0) {
		ssh_listener_close(l);
		return -1;
	}
	*out = l;
	return 0;
}

int ssh_listener_fd(const struct ssh_listener *l)
{
	return l ? l->fd : -1;
}

void ssh_listener_close(struct ssh_listener *l)
{
	if (!l)
		return;
	if (l->fd >= 0)
		close(l->fd);
	if (l->bind)
		ssh_bind_free(l->bind);
	free(l);
}
