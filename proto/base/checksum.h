/*
 * Checksums: the rolling "sum1", the negotiable strong checksums used for
 * block sums, whole-file sums and --checksum, and the daemon-auth digests.
 * One table per family (see checksum.c); negotiation, --version and
 * --checksum-choice all read those tables.
 */
#ifndef FERRY_CHECKSUM_H
#define FERRY_CHECKSUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CSUM_MAX_DIGEST 64 /* sha512, the largest digest we know */
#define CSUM_CTX_STATE_SIZE 640 /* >= sizeof(XXH3_state_t), 576 in 0.8.1 */

enum csum_type {
	CSUM_NONE = 0,
	CSUM_MD4_OLD,   /* md4 with protocol 27..29 quirks (default < 30) */
	CSUM_MD4,       /* md4 negotiated by name */
	CSUM_MD5,
	CSUM_SHA1,
	CSUM_XXH64,
	CSUM_XXH3,
	CSUM_XXH128,
	CSUM_SHA256,    /* auth only */
	CSUM_SHA512,    /* auth only */
};

/* Rolling checksum of a block: mirrors rsync checksum.c:get_checksum1(),
 * bytes taken as signed chars. */
uint32_t csum_rolling(const uint8_t *buf, size_t len);

/* State for rolling the weak sum one byte at a time over a window of n bytes. */
struct rolling {
	uint32_t s1, s2;
	size_t n;
};
void rolling_init(struct rolling *r, const uint8_t *buf, size_t n);
/* Slide the window by one byte: drop `out`, append `in`. */
static inline void rolling_roll(struct rolling *r, uint8_t out, uint8_t in)
{
	r->s1 += (uint32_t)(int8_t)in - (uint32_t)(int8_t)out;
	r->s2 += r->s1 - (uint32_t)r->n * (uint32_t)(int8_t)out;
}
static inline uint32_t rolling_value(const struct rolling *r)
{
	return (r->s1 & 0xffff) | (r->s2 << 16);
}

/* Digest length in bytes of a type (1 for CSUM_NONE, as rsync). */
size_t csum_len(enum csum_type t);
/* Wire name of a transfer checksum ("md5", "xxh128", ...). */
const char *csum_name(enum csum_type t);
/* Parse a checksum name as rsync does (case-insensitive, "xxhash" = xxh64,
 * "auto" = 0-return). Returns -1 if unknown. Only transfer checksums are
 * accepted ("sha256"/"sha512" are auth-only and give -1). For "auto" the
 * return is 0 and *out is left untouched: the caller pre-loads *out with
 * csum_implied() (or a negotiated choice) and "auto" keeps it. */
int csum_parse(const char *name, enum csum_type *out);
/* Same for the first len bytes of name (one token of a list, "A" of "A,B"). */
int csum_parse_n(const char *name, size_t len, enum csum_type *out);
/* The checksum used when none is negotiated or chosen: md5 for protocol >= 30,
 * md4 (CSUM_MD4_OLD) below; mirrors rsync checksum.c:parse_csum_name(NULL).
 * Protocols < 27 (rsync's "busted"/"archaic" md4) are not supported. */
enum csum_type csum_implied(int protocol);
/* Our transfer-checksum list in preference order, space separated, for
 * negotiation and --version ("xxh128 xxh3 xxh64 md5 md4 sha1 none"). */
const char *csum_default_list(bool with_none);

/* Strong checksum of one block, as the generator sends and the sender
 * compares: mirrors rsync checksum.c:get_checksum2(). `seed` is the session's
 * checksum seed; `proper_seed_order` is CF_CHKSUM_SEED_FIX (md5 only).
 * Writes csum_len(t) bytes into out (CSUM_MAX_DIGEST room).
 * Layouts, seed as 4 LE bytes and left out when 0:
 *   md4, md4-old   MD4(block ++ seed)   (rsync's built-in md4; an rsync whose
 *                  OpenSSL has MD4 enabled would hash seed first -- Debian's
 *                  OpenSSL 3 does not, so this is what 3.5.0 sends)
 *   md5            proper_seed_order ? MD5(seed ++ block) : MD5(block ++ seed).
 *                  Pass proper_seed_order = CF_CHKSUM_SEED_FIX || md5 was
 *                  negotiated by name (rsync's OpenSSL path always puts the
 *                  seed first; real peers send 'C' whenever they send 'v').
 *   sha1 (sha256, sha512)   H(seed ++ block)
 *   xxh64, xxh3    64-bit hash with seed sign-extended to 64 bits, 8 bytes LE
 *   xxh128         same, low 64 bits LE then high 64 bits LE
 *   none           one 0 byte (rsync never computes it: none forces -W)
 * An unknown type writes nothing (csum_len() is 0). */
void csum_block(enum csum_type t, int32_t seed, bool proper_seed_order,
		const uint8_t *buf, size_t len, uint8_t *out);

/* Streaming whole-file checksum (the sum after the token stream, and the
 * --checksum file-list sum): mirrors rsync sum_init/sum_update/sum_end. */
struct csum_ctx {
	enum csum_type type;
	int32_t seed;
	/* algorithm state; opaque to callers. Held as bytes and copied in and
	 * out of a typed local per call, so the struct may be memcpy'd and
	 * needs no special alignment (XXH3_state_t wants 64). */
	union {
		uint64_t align;
		uint8_t bytes[CSUM_CTX_STATE_SIZE];
	} u;
	uint8_t pending[64]; /* unused: libmd's MD4 is exact for protocol >= 27 */
	size_t npending;
	uint64_t total; /* bytes fed, seed excluded */
};
/* md4-old hashes the seed (4 LE bytes) first, even when it is 0; every other
 * type ignores the seed. xxh* and md* as csum_block() without a seed. */
void csum_file_init(struct csum_ctx *c, enum csum_type t, int32_t seed);
void csum_file_update(struct csum_ctx *c, const uint8_t *buf, size_t len);
/* Writes csum_len(type) bytes into out; re-init before reusing c. */
void csum_file_final(struct csum_ctx *c, uint8_t *out);
/* Type to use for the --checksum file-list sums given the transfer type:
 * rsync's file_checksum() never hashes a seed, so md4-old becomes plain md4
 * there (verified against 3.5.0 at protocol 29). */
enum csum_type csum_flist_type(enum csum_type t);

/* Daemon authentication digests. */
/* Our auth list in preference order: "sha512 sha256 sha1 md5 md4". */
const char *auth_default_list(void);
/* Parse an auth digest name (case-insensitive); -1 if unknown. */
int auth_parse(const char *name, enum csum_type *out);
/* Response to a daemon challenge: base64 without padding of
 * H(password ++ challenge), with rsync's md4 legacy quirk when `legacy_md4`
 * (four zero bytes hashed first). Writes a NUL-terminated string into out
 * (at least 100 bytes). Mirrors rsync authenticate.c:generate_hash().
 * legacy_md4 is set when the digest was defaulted to md4 (the peer sent no
 * digest list and protocol < 30); it only affects CSUM_MD4, and CSUM_MD4_OLD
 * always has the quirk. NULL password/challenge count as "". An unknown
 * type or an out too small for the result yields "" (if outsz > 0). */
void auth_response(enum csum_type t, bool legacy_md4, const char *password,
		   const char *challenge, char *out, size_t outsz);
/* Base64 encode without padding, rsync's alphabet. Returns output length.
 * Writes a NUL; if out cannot hold base64_nopad_len(len) + 1 bytes it writes
 * "" (when outsz > 0) and returns 0. Mirrors rsync authenticate.c:
 * base64_encode() with pad = 0. */
size_t base64_nopad(const uint8_t *in, size_t len, char *out, size_t outsz);
/* Characters base64_nopad() produces for len bytes: ceil(len * 8 / 6). */
size_t base64_nopad_len(size_t len);

#endif
