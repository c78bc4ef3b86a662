/*
 * Protocol set-up (compat.c: setup_protocol and the string negotiation).
 */
#ifndef FERRY_NEGOTIATE_H
#define FERRY_NEGOTIATE_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/core/session.h"

/* Client side. remote_protocol is the version from the daemon greeting, or
 * 0 over a remote shell (then the 4-byte versions are exchanged first).
 * Sets s->protocol, compat flags, checksum choice and seed. */
bool negotiate_client(struct session *s, int remote_protocol);

/* May incremental recursion be used with these options (rsync's
 * set_allow_inc_recurse, narrowed to what ferry implements)? */
bool inc_recurse_allowed(const struct ferry_opts *o, bool am_sender, int protocol);

/* Server side: remote_protocol as above; client_caps is the client's
 * "-e.xxx" capability letters (NULL when none were sent). Chooses and sends
 * the compat flags, negotiates checksums, sends the seed. */
bool negotiate_server(struct session *s, int remote_protocol, const char *client_caps);

/* --read-batch: take the protocol version, compat flags and seed from the
 * batch file's header on s->in (after its stream flags), and the implied
 * checksum and compression, as rsync does when reading a batch. */
bool negotiate_from_batch(struct session *s);

/* Pick the first name of `ours` that `theirs` also lists; false if none. */
bool negotiate_pick(const char *ours, const char *theirs, char *out, size_t outsz);

#endif
