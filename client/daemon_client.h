/*
 * The client side of the rsync daemon dialogue.
 */
#ifndef FERRY_CLIENT_DAEMON_CLIENT_H
#define FERRY_CLIENT_DAEMON_CLIENT_H

#include "proto/args/remote.h"
#include "proto/core/session.h"

struct daemon_peer {
	int version, sub;
	char digests[512]; /* the auth digest list of its greeting, "" if none */
};

/* Greet, ask for r->module (or the listing when it is ""), authenticate,
 * and send args (NULL-terminated). Sets s->protocol to the version both
 * speak. Returns 0 when the protocol proper may start; -1 when the run is
 * over, with *exit_code set (0 after a listing). */
int daemon_handshake(struct session *s, const struct remote_spec *r, char **args,
		     struct daemon_peer *peer, int *exit_code);

#endif
