/*
 * PROXY protocol header parsing (haproxy's proxy-protocol.txt, versions 1
 * and 2). Only the source address is used; everything is bounded by the
 * format's own limits (107 bytes for a text line, 216 address bytes for a
 * binary header).
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/proxy_header.h"
#include "proto/base/wire.h"

#define V2_SIGNATURE "\r\n\r\n\0\r\nQUIT\n"
#define V2_SIGNATURE_LEN 12
#define V2_HEADER_LEN 16
#define V2_ADDR_MAX 216      /* two UNIX socket paths: the largest address block */
#define V1_LINE_MAX 107      /* "PROXY TCP6 <39> <39> 65535 65535\r\n" */

enum { V2_CMD_LOCAL = 0, V2_CMD_PROXY = 1 };
enum { V2_FAM_TCP4 = 0x11, V2_FAM_TCP6 = 0x21 };

static bool is_numeric_addr(const char *s, int family)
{
	unsigned char buf[sizeof(struct in6_addr)];

	return inet_pton(family, s, buf) == 1;
}

static bool parse_port(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	return *s && !*end && v > 0 && v <= 65535;
}

/* "PROXY TCP4 SRC DST SPORT DPORT" (without "\r\n") or "PROXY UNKNOWN ...". */
static bool parse_v1_line(char *line, char *addr, size_t addr_size)
{
	char *fields[6], *save = NULL;
	int n = 0;

	if (strncmp(line, "PROXY ", 6) != 0)
		return false;
	if (strncmp(line + 6, "UNKNOWN", 7) == 0)
		return true;
	for (char *tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		if (n == 6)
			return false;
		fields[n++] = tok;
	}
	if (n != 6)
		return false;
	int family = strcmp(fields[1], "TCP4") == 0 ? AF_INET
		     : strcmp(fields[1], "TCP6") == 0 ? AF_INET6 : -1;
	if (family < 0 || !is_numeric_addr(fields[2], family) ||
	    !is_numeric_addr(fields[3], family) || !parse_port(fields[4]) ||
	    !parse_port(fields[5]) || strlen(fields[2]) >= addr_size)
		return false;
	strcpy(addr, fields[2]);
	return true;
}

static bool read_v1(struct wire_in *in, const unsigned char *start, char *addr,
		    size_t addr_size)
{
	char line[V1_LINE_MAX + 1];
	size_t n = V2_SIGNATURE_LEN;

	memcpy(line, start, n);
	while (n < 2 || line[n - 1] != '\n') {
		if (n >= V1_LINE_MAX || !wire_read(in, line + n, 1))
			return false;
		n++;
	}
	if (line[n - 2] != '\r')
		return false;
	line[n - 2] = '\0';
	if (memchr(line, '\0', n - 2))
		return false;
	return parse_v1_line(line, addr, addr_size);
}

static bool read_v2(struct wire_in *in, char *addr, size_t addr_size)
{
	unsigned char head[V2_HEADER_LEN - V2_SIGNATURE_LEN], body[V2_ADDR_MAX];

	if (!wire_read(in, head, sizeof head))
		return false;
	int version = head[0] >> 4, command = head[0] & 0x0f, family = head[1];
	size_t len = (size_t)head[2] << 8 | head[3];
	if (version != 2 || len > sizeof body || !wire_read(in, body, len))
		return false;
	if (command == V2_CMD_LOCAL)
		return true;
	if (command != V2_CMD_PROXY)
		return false;
	if (family == V2_FAM_TCP4 && len >= 12)
		return inet_ntop(AF_INET, body, addr, (socklen_t)addr_size) != NULL;
	if (family == V2_FAM_TCP6 && len >= 36)
		return inet_ntop(AF_INET6, body, addr, (socklen_t)addr_size) != NULL;
	if (family == V2_FAM_TCP4 || family == V2_FAM_TCP6)
		return false;
	return true; /* another family: keep the socket's own address */
}

bool proxy_header_read(struct wire_in *in, char *addr, size_t addr_size)
{
	unsigned char start[V2_SIGNATURE_LEN];

	addr[0] = '\0';
	if (!wire_read(in, start, sizeof start))
		return false;
	if (memcmp(start, V2_SIGNATURE, V2_SIGNATURE_LEN) == 0)
		return read_v2(in, addr, addr_size);
	if (memcmp(start, "PROXY ", 6) == 0)
		return read_v1(in, start, addr, addr_size);
	return false;
}
