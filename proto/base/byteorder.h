/*
 * Little-endian integers in byte buffers: the multiplexed messages'
 * payloads, the checksum streams' state and length fields, the batch
 * header, ACL blobs (rsync byteorder.h: IVAL, SIVAL). Independent of the
 * host's byte order and of alignment.
 */
#ifndef FERRY_PROTO_BYTEORDER_H
#define FERRY_PROTO_BYTEORDER_H

#include <stdint.h>

static inline uint16_t get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t get_le64(const uint8_t *p)
{
	return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

/* The n low bytes of v, lowest first (n at most 8). */
static inline void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void put_le32(uint8_t *p, uint32_t v)
{
	put_le(p, v, 4);
}

static inline void put_le64(uint8_t *p, uint64_t v)
{
	put_le(p, v, 8);
}

#endif
