/*
 * The HAProxy PROXY protocol header (version 1 text or version 2 binary)
 * that a load balancer puts in front of the rsync greeting ("proxy
 * protocol = yes").
 */
#ifndef FERRY_PROXY_HEADER_H
#define FERRY_PROXY_HEADER_H

#include <stdbool.h>
#include <stddef.h>

struct wire_in;

/* Read one header. On success the client's address, as the proxy saw it,
 * is in addr ("" when the header carries none: LOCAL, UNKNOWN or a family
 * other than TCP over IPv4/IPv6, in which case the connection's own peer
 * address stands). False on a malformed or truncated header. */
bool proxy_header_read(struct wire_in *in, char *addr, size_t addr_size);

#endif
