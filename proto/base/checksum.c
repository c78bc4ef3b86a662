/*
 * Checksums: the rolling weak sum, the strong block and whole-file sums of
 * every transfer checksum rsync negotiates, and the daemon-auth digests.
 *
 * The hashes themselves come from libmd (md4, md5, sha1, sha2) and libxxhash;
 * this file only reproduces how rsync feeds them: where the seed goes, when it
 * is left out, and the byte order of the xxhash results.
 */
#include "proto/base/checksum.h"
#include "proto/base/byteorder.h"

#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_AVX2_PATH 1
#endif
#include <strings.h>

#include <md4.h>
#include <md5.h>
#include <sha1.h>
#include <sha2.h>
#define XXH_STATIC_LINKING_ONLY /* for the XXH64/XXH3 state types */
#include <xxhash.h>
/* libxxhash's dispatching XXH3 picks AVX2/AVX-512 at run time, about 4x
 * the baseline SSE2 code on such CPUs; same results, same state. */
#if defined(__x86_64__) && defined(__has_include)
#if __has_include(<xxh_x86dispatch.h>)
#include <xxh_x86dispatch.h>
#endif
#endif

/* Every streaming state must fit the opaque bytes of struct csum_ctx. */
_Static_assert(sizeof(MD4_CTX) <= CSUM_CTX_STATE_SIZE, "md4 state");
_Static_assert(sizeof(MD5_CTX) <= CSUM_CTX_STATE_SIZE, "md5 state");
_Static_assert(sizeof(SHA1_CTX) <= CSUM_CTX_STATE_SIZE, "sha1 state");
_Static_assert(sizeof(SHA2_CTX) <= CSUM_CTX_STATE_SIZE, "sha2 state");
_Static_assert(sizeof(XXH64_state_t) <= CSUM_CTX_STATE_SIZE, "xxh64 state");
_Static_assert(sizeof(XXH3_state_t) <= CSUM_CTX_STATE_SIZE, "xxh3 state");
_Static_assert(SHA512_DIGEST_LENGTH <= CSUM_MAX_DIGEST, "digest room");

/* ---- the tables ---------------------------------------------------------- */

/*
 * Transfer checksums in our preference order (strongest first, as rsync 3.5.0
 * lists them); X is applied to the negotiable names, N to "none", which only
 * a server offers. The list strings below are spelled from the same macro.
 */
#define XFER_CSUMS(X, N) \
	X(CSUM_XXH128, "xxh128") \
	X(CSUM_XXH3, "xxh3") \
	X(CSUM_XXH64, "xxh64") \
	X(CSUM_MD5, "md5") \
	X(CSUM_MD4, "md4") \
	X(CSUM_SHA1, "sha1") \
	N(CSUM_NONE, "none")

/* Daemon-auth digests, strongest first (rsync valid_auth_checksums_items). */
#define AUTH_DIGESTS(X) \
	X(CSUM_SHA512, "sha512") \
	X(CSUM_SHA256, "sha256") \
	X(CSUM_SHA1, "sha1") \
	X(CSUM_MD5, "md5") \
	X(CSUM_MD4, "md4")

struct csum_name {
	enum csum_type type;
	const char *name;
};

#define NAME_ENTRY(t, n) { t, n },
#define NAME_SPACED(t, n) " " n
#define NAME_SKIP(t, n)

static const struct csum_name xfer_names[] = {
	XFER_CSUMS(NAME_ENTRY, NAME_ENTRY)
	{ CSUM_XXH64, "xxhash" }, /* rsync's alias, accepted but never sent */
};

static const struct csum_name auth_names[] = {
	AUTH_DIGESTS(NAME_ENTRY)
};

/* Each literal starts with a space; the +1 below skips it. */
static const char xfer_list_server[] = XFER_CSUMS(NAME_SPACED, NAME_SPACED);
static const char xfer_list_client[] = XFER_CSUMS(NAME_SPACED, NAME_SKIP);
static const char auth_list[] = AUTH_DIGESTS(NAME_SPACED);

/* Digest length and wire name per type; mirrors rsync csum_len_for_type(). */
static const struct {
	const char *name;
	uint8_t len;
} csum_info[] = {
	[CSUM_NONE] = { "none", 1 },
	[CSUM_MD4_OLD] = { "md4", MD4_DIGEST_LENGTH },
	[CSUM_MD4] = { "md4", MD4_DIGEST_LENGTH },
	[CSUM_MD5] = { "md5", MD5_DIGEST_LENGTH },
	[CSUM_SHA1] = { "sha1", SHA1_DIGEST_LENGTH },
	[CSUM_XXH64] = { "xxh64", 8 },
	[CSUM_XXH3] = { "xxh3", 8 },
	[CSUM_XXH128] = { "xxh128", 16 },
	[CSUM_SHA256] = { "sha256", SHA256_DIGEST_LENGTH },
	[CSUM_SHA512] = { "sha512", SHA512_DIGEST_LENGTH },
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static bool csum_valid(enum csum_type t)
{
	return (unsigned)t < NELEM(csum_info) && csum_info[t].name != NULL;
}

size_t csum_len(enum csum_type t)
{
	return csum_valid(t) ? csum_info[t].len : 0;
}

const char *csum_name(enum csum_type t)
{
	return csum_valid(t) ? csum_info[t].name : NULL;
}

const char *csum_default_list(bool with_none)
{
	/* A client leaves "none" out: mirrors rsync compat.c:get_default_nno_list() */
	return (with_none ? xfer_list_server : xfer_list_client) + 1;
}

const char *auth_default_list(void)
{
	return auth_list + 1;
}

/* Find a name (first len bytes of name, case-insensitive) in a table. */
static int lookup_name(const struct csum_name *tab, size_t n, const char *name,
		       size_t len, enum csum_type *out)
{
	for (size_t i = 0; i < n; i++) {
		if (strlen(tab[i].name) == len &&
		    strncasecmp(tab[i].name, name, len) == 0) {
			*out = tab[i].type;
			return 0;
		}
	}
	return -1;
}

/* mirrors rsync checksum.c:parse_csum_name() (minus its protocol lookup) */
int csum_parse_n(const char *name, size_t len, enum csum_type *out)
{
	if (name == NULL || out == NULL)
		return -1;
	/* "auto" means "whatever the protocol implies": the caller's default. */
	if (len == 4 && strncasecmp(name, "auto", 4) == 0)
		return 0;
	return lookup_name(xfer_names, NELEM(xfer_names), name, len, out);
}

int csum_parse(const char *name, enum csum_type *out)
{
	if (name == NULL)
		return -1;
	return csum_parse_n(name, strlen(name), out);
}

enum csum_type csum_implied(int protocol)
{
	return protocol >= 30 ? CSUM_MD5 : CSUM_MD4_OLD;
}

int auth_parse(const char *name, enum csum_type *out)
{
	if (name == NULL || out == NULL)
		return -1;
	return lookup_name(auth_names, NELEM(auth_names), name, strlen(name),
			   out);
}

/* ---- rolling checksum ---------------------------------------------------- */

/*
 * s1 is the plain sum and s2 the sum of the running s1 values, which equals
 * sum (n - i) * x[i]. Bytes are signed (CHAR_OFFSET 0): rsync reads them as
 * schar, and a peer computing unsigned sums would never match a block.
 */
/* rsync's weak sum over signed bytes: s1 = sum of b[i], s2 = sum of the
 * running s1. Sixteen bytes at a time the update is linear, s2 += 16 * s1
 * + sum of (16 - k) * b[k] and s1 += sum of b[k], so each SIMD lane can
 * keep its own share and the shares add up at the end. */
#ifdef HAVE_AVX2_PATH
/* The same, 32 bytes a step, on CPUs with AVX2 (chosen at run time: the
 * build targets plain x86-64). The sums of the whole 32-byte steps are
 * returned; the caller adds the tail. Twice the SSE2 speed, which matters
 * because every byte of the basis (generator) and of every matched block
 * (sender, re-seeding after a match) goes through here. */
__attribute__((target("avx2")))
static size_t rolling_sums_avx2(const uint8_t *buf, size_t len, uint32_t *s1p, uint32_t *s2p)
{
	const __m256i ones = _mm256_set1_epi16(1);
	const __m256i w_lo = _mm256_setr_epi16(32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20,
					       19, 18, 17);
	const __m256i w_hi = _mm256_setr_epi16(16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3,
					       2, 1);
	__m256i v1 = _mm256_setzero_si256(), v2 = _mm256_setzero_si256();
	size_t i = 0;

	for (; i + 32 <= len; i += 32) {
		__m128i a = _mm_loadu_si128((const __m128i *)(const void *)(buf + i));
		__m128i b = _mm_loadu_si128((const __m128i *)(const void *)(buf + i + 16));
		__m256i lo = _mm256_cvtepi8_epi16(a), hi = _mm256_cvtepi8_epi16(b);
		v2 = _mm256_add_epi32(v2, _mm256_slli_epi32(v1, 5));
		v2 = _mm256_add_epi32(v2, _mm256_add_epi32(_mm256_madd_epi16(lo, w_lo),
							   _mm256_madd_epi16(hi, w_hi)));
		v1 = _mm256_add_epi32(v1, _mm256_add_epi32(_mm256_madd_epi16(lo, ones),
							   _mm256_madd_epi16(hi, ones)));
	}
	uint32_t l1[8], l2[8], s1 = 0, s2 = 0;
	_mm256_storeu_si256((__m256i *)(void *)l1, v1);
	_mm256_storeu_si256((__m256i *)(void *)l2, v2);
	for (int k = 0; k < 8; k++) {
		s1 += l1[k];
		s2 += l2[k];
	}
	*s1p = s1;
	*s2p = s2;
	return i;
}
#endif

static void rolling_sums(const uint8_t *buf, size_t len, uint32_t *s1p, uint32_t *s2p)
{
	uint32_t s1 = 0, s2 = 0;
	size_t i = 0;
#ifdef HAVE_AVX2_PATH
	if (len >= 64 && __builtin_cpu_supports("avx2")) {
		i = rolling_sums_avx2(buf, len, &s1, &s2);
		for (; i < len; i++) {
			s1 += (uint32_t)(int8_t)buf[i];
			s2 += s1;
		}
		*s1p = s1;
		*s2p = s2;
		return;
	}
#endif
#ifdef __SSE2__
	const __m128i zero = _mm_setzero_si128(), ones = _mm_set1_epi16(1);
	const __m128i w_lo = _mm_setr_epi16(16, 15, 14, 13, 12, 11, 10, 9);
	const __m128i w_hi = _mm_setr_epi16(8, 7, 6, 5, 4, 3, 2, 1);
	__m128i v1 = zero, v2 = zero;

	for (; i + 16 <= len; i += 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)(buf + i));
		__m128i sign = _mm_cmpgt_epi8(zero, v);
		__m128i lo = _mm_unpacklo_epi8(v, sign), hi = _mm_unpackhi_epi8(v, sign);
		v2 = _mm_add_epi32(v2, _mm_slli_epi32(v1, 4));
		v2 = _mm_add_epi32(v2, _mm_add_epi32(_mm_madd_epi16(lo, w_lo),
						     _mm_madd_epi16(hi, w_hi)));
		v1 = _mm_add_epi32(v1, _mm_add_epi32(_mm_madd_epi16(lo, ones),
						     _mm_madd_epi16(hi, ones)));
	}
	uint32_t l1[4], l2[4];
	_mm_storeu_si128((__m128i *)(void *)l1, v1);
	_mm_storeu_si128((__m128i *)(void *)l2, v2);
	s1 = l1[0] + l1[1] + l1[2] + l1[3];
	s2 = l2[0] + l2[1] + l2[2] + l2[3];
#endif
	for (; i < len; i++) {
		s1 += (uint32_t)(int8_t)buf[i];
		s2 += s1;
	}
	*s1p = s1;
	*s2p = s2;
}

/* mirrors rsync checksum.c:get_checksum1() */
uint32_t csum_rolling(const uint8_t *buf, size_t len)
{
	struct rolling r;

	rolling_init(&r, buf, len);
	return rolling_value(&r);
}

void rolling_init(struct rolling *r, const uint8_t *buf, size_t n)
{
	rolling_sums(buf, n, &r->s1, &r->s2);
	r->n = n;
}

/* ---- streaming state, kept as bytes in the ctx --------------------------- */

/*
 * Each step copies the typed state out of c->u.bytes into an aligned local,
 * works on it and copies it back. That costs a few hundred bytes of memcpy
 * per call but keeps struct csum_ctx free of alignment demands and of
 * pointers into itself, so callers may embed, copy or heap-allocate it.
 */
#define STATE_LOAD(c, st) memcpy(&(st), (c)->u.bytes, sizeof(st))
#define STATE_SAVE(c, st) memcpy((c)->u.bytes, &(st), sizeof(st))

static void state_reset(struct csum_ctx *c)
{
	switch (c->type) {
	case CSUM_MD4_OLD:
	case CSUM_MD4: { MD4_CTX s; MD4Init(&s); STATE_SAVE(c, s); break; }
	case CSUM_MD5: { MD5_CTX s; MD5Init(&s); STATE_SAVE(c, s); break; }
	case CSUM_SHA1: { SHA1_CTX s; SHA1Init(&s); STATE_SAVE(c, s); break; }
	case CSUM_SHA256: { SHA2_CTX s; SHA256Init(&s); STATE_SAVE(c, s); break; }
	case CSUM_SHA512: { SHA2_CTX s; SHA512Init(&s); STATE_SAVE(c, s); break; }
	case CSUM_XXH64: {
		XXH64_state_t s;
		XXH64_reset(&s, 0);
		STATE_SAVE(c, s);
		break;
	}
	case CSUM_XXH3: {
		XXH3_state_t s;
		XXH3_64bits_reset(&s);
		STATE_SAVE(c, s);
		break;
	}
	case CSUM_XXH128: {
		XXH3_state_t s;
		XXH3_128bits_reset(&s);
		STATE_SAVE(c, s);
		break;
	}
	default: /* none or unknown: no state */
		break;
	}
}

static void state_update(struct csum_ctx *c, const uint8_t *p, size_t n)
{
	switch (c->type) {
	case CSUM_MD4_OLD:
	case CSUM_MD4: {
		MD4_CTX s;
		STATE_LOAD(c, s);
		MD4Update(&s, p, n);
		STATE_SAVE(c, s);
		break;
	}
	case CSUM_MD5: {
		MD5_CTX s;
		STATE_LOAD(c, s);
		MD5Update(&s, p, n);
		STATE_SAVE(c, s);
		break;
	}
	case CSUM_SHA1: {
		SHA1_CTX s;
		STATE_LOAD(c, s);
		SHA1Update(&s, p, n);
		STATE_SAVE(c, s);
		break;
	}
	case CSUM_SHA256: {
		SHA2_CTX s;
		STATE_LOAD(c, s);
		SHA256Update(&s, p, n);
		STATE_SAVE(c, s);
		break;
	}
	case CSUM_SHA512: {
		SHA2_CTX s;
		STATE_LOAD(c, s);
		SHA512Update(&s, p, n);
		STATE_SAVE(c, s);
		break;
	}
	case CSUM_XXH64: {
		XXH64_state_t s;
		STATE_LOAD(c, s);
		XXH64_update(&s, p, n);
		STATE_SAVE(c, s);
		break;
	}
	case CSUM_XXH3: {
		XXH3_state_t s;
		STATE_LOAD(c, s);
		XXH3_64bits_update(&s, p, n);
		STATE_SAVE(c, s);
		break;
	}
	case CSUM_XXH128: {
		XXH3_state_t s;
		STATE_LOAD(c, s);
		XXH3_128bits_update(&s, p, n);
		STATE_SAVE(c, s);
		break;
	}
	default:
		break;
	}
}

/* The 64-bit xxhash family is sent as the little-endian bytes of the value;
 * xxh128 as low half then high half, each little-endian (rsync SIVAL64). */
static void put_xxh128(uint8_t *out, XXH128_hash_t h)
{
	put_le64(out, h.low64);
	put_le64(out + 8, h.high64);
}

static void state_final(struct csum_ctx *c, uint8_t *out)
{
	switch (c->type) {
	case CSUM_MD4_OLD:
	case CSUM_MD4: { MD4_CTX s; STATE_LOAD(c, s); MD4Final(out, &s); break; }
	case CSUM_MD5: { MD5_CTX s; STATE_LOAD(c, s); MD5Final(out, &s); break; }
	case CSUM_SHA1: { SHA1_CTX s; STATE_LOAD(c, s); SHA1Final(out, &s); break; }
	case CSUM_SHA256: {
		SHA2_CTX s;
		STATE_LOAD(c, s);
		SHA256Final(out, &s);
		break;
	}
	case CSUM_SHA512: {
		SHA2_CTX s;
		STATE_LOAD(c, s);
		SHA512Final(out, &s);
		break;
	}
	case CSUM_XXH64: {
		XXH64_state_t s;
		STATE_LOAD(c, s);
		put_le64(out, XXH64_digest(&s));
		break;
	}
	case CSUM_XXH3: {
		XXH3_state_t s;
		STATE_LOAD(c, s);
		put_le64(out, XXH3_64bits_digest(&s));
		break;
	}
	case CSUM_XXH128: {
		XXH3_state_t s;
		STATE_LOAD(c, s);
		put_xxh128(out, XXH3_128bits_digest(&s));
		break;
	}
	case CSUM_NONE:
		out[0] = 0; /* rsync sum_end() writes one NUL */
		break;
	default:
		break;
	}
}

/* ---- block checksum ------------------------------------------------------ */

/* Whether the seed precedes the block: rsync's built-in md4 appends it, its
 * built-in md5 follows CF_CHKSUM_SEED_FIX, its OpenSSL path (sha*) prepends. */
static bool seed_goes_first(enum csum_type t, bool proper_seed_order)
{
	switch (t) {
	case CSUM_MD4_OLD:
	case CSUM_MD4:
		return false;
	case CSUM_MD5:
		return proper_seed_order;
	default:
		return true;
	}
}

/* mirrors rsync checksum.c:get_checksum2() */
void csum_block(enum csum_type t, int32_t seed, bool proper_seed_order,
		const uint8_t *buf, size_t len, uint8_t *out)
{
	/* rsync passes the int seed to a 64-bit parameter: sign-extended. */
	uint64_t xseed = (uint64_t)(int64_t)seed;
	uint8_t seedbuf[4];

	switch (t) {
	case CSUM_XXH64:
		put_le64(out, XXH64(buf, len, xseed));
		return;
	case CSUM_XXH3:
		put_le64(out, XXH3_64bits_withSeed(buf, len, xseed));
		return;
	case CSUM_XXH128:
		put_xxh128(out, XXH3_128bits_withSeed(buf, len, xseed));
		return;
	case CSUM_NONE:
		out[0] = 0;
		return;
	default:
		break;
	}
	if (!csum_valid(t))
		return;

	/* The seed is hashed as data only when non-zero (rsync: if (checksum_seed)),
	 * before or after the block depending on the algorithm. */
	bool first = seed_goes_first(t, proper_seed_order);
	struct csum_ctx c;

	put_le32(seedbuf, (uint32_t)seed);
	c.type = t;
	state_reset(&c);
	if (seed && first)
		state_update(&c, seedbuf, sizeof(seedbuf));
	if (len)
		state_update(&c, buf, len);
	if (seed && !first)
		state_update(&c, seedbuf, sizeof(seedbuf));
	state_final(&c, out);
}

/* ---- whole-file checksum ------------------------------------------------- */

/* mirrors rsync checksum.c:sum_init() */
void csum_file_init(struct csum_ctx *c, enum csum_type t, int32_t seed)
{
	memset(c, 0, sizeof(*c));
	c->type = t;
	c->seed = seed;
	state_reset(c);
	/* Protocol 27-29 md4 starts with the seed, even a zero one. */
	if (t == CSUM_MD4_OLD) {
		uint8_t s[4];

		put_le32(s, (uint32_t)seed);
		state_update(c, s, sizeof(s));
	}
}

/* mirrors rsync checksum.c:sum_update() */
void csum_file_update(struct csum_ctx *c, const uint8_t *buf, size_t len)
{
	if (len == 0)
		return;
	state_update(c, buf, len);
	c->total += len;
}

/* mirrors rsync checksum.c:sum_end() */
void csum_file_final(struct csum_ctx *c, uint8_t *out)
{
	state_final(c, out);
}

/* mirrors rsync checksum.c:file_checksum(), which has no seed step */
enum csum_type csum_flist_type(enum csum_type t)
{
	return t == CSUM_MD4_OLD ? CSUM_MD4 : t;
}

/* ---- daemon authentication ----------------------------------------------- */

static const char b64_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t base64_nopad_len(size_t len)
{
	static const uint8_t tail[3] = { 0, 2, 3 };

	if (len / 3 > (SIZE_MAX - 3) / 4)
		return SIZE_MAX; /* cannot be represented: no buffer is that big */
	return len / 3 * 4 + tail[len % 3];
}

/* Encode one group of 1..3 bytes as 2..4 characters. */
static void b64_group(const uint8_t *in, size_t n, char *out)
{
	uint32_t v = (uint32_t)in[0] << 16;

	if (n > 1)
		v |= (uint32_t)in[1] << 8;
	if (n > 2)
		v |= in[2];
	for (size_t i = 0; i <= n; i++)
		out[i] = b64_alphabet[(v >> (18 - 6 * i)) & 0x3f];
}

size_t base64_nopad(const uint8_t *in, size_t len, char *out, size_t outsz)
{
	size_t need = base64_nopad_len(len), o = 0;

	if (out == NULL || outsz == 0)
		return 0;
	if (need == SIZE_MAX || need >= outsz || (len && in == NULL)) {
		out[0] = '\0';
		return 0;
	}
	for (size_t i = 0; i < len; i += 3) {
		size_t n = len - i < 3 ? len - i : 3;

		b64_group(in + i, n, out + o);
		o += n + 1;
	}
	out[o] = '\0';
	return o;
}

/* mirrors rsync authenticate.c:generate_hash() */
void auth_response(enum csum_type t, bool legacy_md4, const char *password,
		   const char *challenge, char *out, size_t outsz)
{
	uint8_t digest[CSUM_MAX_DIGEST];
	struct csum_ctx c;

	if (out == NULL || outsz == 0)
		return;
	out[0] = '\0';
	if (t == CSUM_MD4 && legacy_md4)
		t = CSUM_MD4_OLD; /* as rsync compat.c:negotiate_daemon_auth() */
	if (t == CSUM_NONE || t == CSUM_XXH64 || t == CSUM_XXH3 ||
	    t == CSUM_XXH128 || !csum_valid(t))
		return; /* not an auth digest */
	password = password ? password : "";
	challenge = challenge ? challenge : "";

	/* seed 0: md4-old then hashes four zero bytes first, as rsync does */
	csum_file_init(&c, t, 0);
	csum_file_update(&c, (const uint8_t *)password, strlen(password));
	csum_file_update(&c, (const uint8_t *)challenge, strlen(challenge));
	csum_file_final(&c, digest);
	base64_nopad(digest, csum_len(t), out, outsz);
}
