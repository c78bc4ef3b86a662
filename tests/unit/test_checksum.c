/*
 * Unit tests for proto/base/checksum.c.
 *
 * Known answers come from real rsync 3.5.0 (/usr/bin/rsync, OpenSSL build
 * without MD4 in the default provider, xxhash 0.8), captured on the wire:
 *
 *  - Test data: test_data() below, 4000 bytes, half of them >= 0x80.
 *  - Block sums: `rsync -e RELAY -I --no-W -B 700 --checksum-seed=N
 *    [--checksum-choice=X | --protocol=29 | --protocol=30] src/f host:dst/`
 *    with dst/f = the test data (the basis) and src/f = the test data with
 *    block 0 altered so that its sum1 and 2-byte sum2 collide with the basis
 *    block. RELAY is an rsh stand-in that logs both directions; the
 *    receiver's whole-file check then fails and the redo pass resends the
 *    basis sums at full length (16 bytes, 8 for xxh64/xxh3), read from the
 *    demultiplexed generator stream after the sum head (6, 700, s2len, 500).
 *    md5 "block first" came from --protocol=30 with 'C' and 'v' removed from
 *    the server's -e.<caps> (no CF_CHKSUM_SEED_FIX, no negotiation).
 *    sum1 values also match the `--debug=deltasum4` output.
 *  - Whole-file sums: `rsync -e RELAY -c --checksum-choice=X src/f host:dst/`
 *    (the file-list sum and the post-transfer sum are the same bytes, also
 *    equal to `--out-format=%C`, reversed for xxh*); md4-old with
 *    --protocol=29 --checksum-seed=74565 from the post-transfer sum.
 *  - Auth: a throw-away `rsync --daemon` on 127.0.0.1 (auth users = alice,
 *    password s3cret) behind a TCP relay that rewrote both greetings to pin
 *    the digest (e.g. "@RSYNCD: 32.0 sha1", or "@RSYNCD: 29.0" with no list
 *    for legacy md4); every response shown got "@RSYNCD: OK". The first
 *    sha512 pair is the one in docs/protocol.md section 3.5.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proto/base/checksum.h"

#define DATA_LEN 4000
#define BLEN 700
#define SEED_POS 74565
#define SEED_NEG (-1234567)

static uint8_t data[DATA_LEN];

/* The file given to rsync: fixed bytes, about half with the top bit set. */
static void test_data(void)
{
	for (unsigned i = 0; i < DATA_LEN; i++)
		data[i] = (uint8_t)((i * 131 + 7 + (i >> 8) * 17) ^ (i >> 3));
}

static int setup(void **state)
{
	test_data();
	return 0;
}

static void to_hex(const uint8_t *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
	out[2 * n] = '\0';
}

/* Assert that the first strlen(hex)/2 bytes of p are hex. */
static void assert_hex(const uint8_t *p, const char *hex)
{
	char got[2 * CSUM_MAX_DIGEST + 1];

	assert_true(strlen(hex) <= 2 * CSUM_MAX_DIGEST);
	to_hex(p, strlen(hex) / 2, got);
	assert_string_equal(got, hex);
}

static size_t block_len(int i)
{
	return i == 5 ? DATA_LEN - 5 * BLEN : BLEN;
}

/* ---- rolling checksum ---------------------------------------------------- */

/* sum1 of the six basis blocks, as the generator sent them. */
static const uint32_t wire_sum1[6] = {
	0xef42fefa, 0x7d96fd42, 0xac88fe5a, 0x43d4fe32, 0x635000f6, 0x1e6cff52,
};

static void test_rolling_wire(void **state)
{
	for (int i = 0; i < 6; i++)
		assert_int_equal(csum_rolling(data + i * BLEN, block_len(i)),
				 wire_sum1[i]);
}

/* The unsigned-byte variant of the sum gives other values for this data. */
static void test_rolling_signed(void **state)
{
	static const uint8_t one[1] = { 0x80 };
	static const uint8_t two[2] = { 0xff, 0x01 };

	/* s1 = s2 = -128 */
	assert_int_equal(csum_rolling(one, 1), 0xff80ff80);
	/* s1 = 0, s2 = 2*(-1) + 1 = -1 */
	assert_int_equal(csum_rolling(two, 2), 0xffff0000);
	assert_int_equal(csum_rolling(NULL, 0), 0);
}

static void check_roll(const uint8_t *buf, size_t len, size_t n)
{
	struct rolling r;

	rolling_init(&r, buf, n);
	assert_int_equal(rolling_value(&r), csum_rolling(buf, n));
	for (size_t k = 0; k + n < len; k++) {
		rolling_roll(&r, buf[k], buf[k + n]);
		assert_int_equal(rolling_value(&r), csum_rolling(buf + k + 1, n));
	}
}

/* The vector paths (SSE2, AVX2 when the CPU has it) against the plain
 * definition, for every length around their step sizes and a long one. */
static void test_rolling_vector(void **state)
{
	static uint8_t buf[70000];

	srand(777);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rand();
	for (size_t len = 0; len <= sizeof(buf); len = len < 300 ? len + 1 : len * 3 + 7) {
		for (size_t start = 0; start < 3; start++) {
			uint32_t s1 = 0, s2 = 0;
			size_t n = len - (len > start ? start : len);
			for (size_t i = 0; i < n; i++) {
				s1 += (uint32_t)(int8_t)buf[start + i];
				s2 += s1;
			}
			assert_int_equal(csum_rolling(buf + start, n), (s1 & 0xffff) | (s2 << 16));
		}
	}
}

static void test_rolling_roll(void **state)
{
	static uint8_t buf[6000];
	static const size_t windows[] = { 1, 2, 3, 64, 700, 4099 };

	srand(12345);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rand();
	for (size_t w = 0; w < sizeof(windows) / sizeof(windows[0]); w++)
		check_roll(buf, sizeof(buf), windows[w]);
	check_roll(data, DATA_LEN, BLEN);
}

/* ---- block checksums ----------------------------------------------------- */

struct block_vec {
	const char *what;
	enum csum_type type;
	int32_t seed;
	bool proper;
	const char *block0; /* full-length sum2 of basis block 0 (700 bytes) */
	const char *block5; /* ... of the short last block (500 bytes) */
};

static const struct block_vec block_vecs[] = {
	{ "xxh128", CSUM_XXH128, SEED_POS, true,
	  "37f23937006e13db62cac684c3d859d5", "6feb5c5e3811d63037a8775c2ef1a85f" },
	{ "xxh128 negative seed", CSUM_XXH128, SEED_NEG, true,
	  "11be4b386fa893dfc70e3dcc11744c8d", "7df1101cbf6ba836197c6ec140ae0d02" },
	{ "xxh3 negative seed", CSUM_XXH3, SEED_NEG, true,
	  "11be4b386fa893df", "7df1101cbf6ba836" },
	{ "xxh64", CSUM_XXH64, SEED_POS, true,
	  "64cc0e5524255e84", "b8f11d9d4d905cdb" },
	{ "xxh64 negative seed", CSUM_XXH64, SEED_NEG, true,
	  "09acbc51e5ebd5f9", "4eea2240e60bd9f8" },
	/* --checksum-choice=md5, and protocol 30 with 'C' but no 'v' */
	{ "md5 seed first", CSUM_MD5, SEED_POS, true,
	  "767fd99c724ec96edd1ac89d01c37680", "52fdf61d477e3a3103b39ab86b7776e2" },
	/* negotiated (RSYNC_CHECKSUM_LIST=md5) */
	{ "md5 negotiated, negative seed", CSUM_MD5, SEED_NEG, true,
	  "7cf965981b725759132540cf318704e0", "c607e765fd71ea9e42252e3525143707" },
	/* protocol 30 without CF_CHKSUM_SEED_FIX */
	{ "md5 block first", CSUM_MD5, SEED_POS, false,
	  "db97d0003d0f4593fbf35e78d6b009f4", "50ba8184a595e5fcec99b08321a1c3b6" },
	/* --checksum-choice=md4 and --protocol=29 sent the same bytes */
	{ "md4", CSUM_MD4, SEED_POS, true,
	  "2983e0755accefd098b2af74ab8b2d27", "5d7b32677188f74b1b076272f0343ee1" },
	{ "md4 old", CSUM_MD4_OLD, SEED_POS, false,
	  "2983e0755accefd098b2af74ab8b2d27", "5d7b32677188f74b1b076272f0343ee1" },
	/* rsync caps sum2 at 16 bytes, so only the prefix of sha1 is known */
	{ "sha1", CSUM_SHA1, SEED_POS, true,
	  "ffa19730442c98b23083fa155695502d", "280d78b98e00708cf6c93f6b92a2c93f" },
};

static void test_block_wire(void **state)
{
	for (size_t i = 0; i < sizeof(block_vecs) / sizeof(block_vecs[0]); i++) {
		const struct block_vec *v = &block_vecs[i];
		uint8_t out[CSUM_MAX_DIGEST];

		print_message("  %s\n", v->what);
		csum_block(v->type, v->seed, v->proper, data, BLEN, out);
		assert_hex(out, v->block0);
		csum_block(v->type, v->seed, v->proper, data + 5 * BLEN,
			   block_len(5), out);
		assert_hex(out, v->block5);
	}
}

/* Whole-file sums of the 4000 test bytes (no seed), from rsync -c. */
static const struct {
	enum csum_type type;
	const char *hex;
} file_vecs[] = {
	{ CSUM_XXH128, "0a246f6c0439976e28ef8d0b75dfda10" },
	{ CSUM_XXH3, "0a246f6c0439976e" },
	{ CSUM_XXH64, "887e0324b5b56725" },
	{ CSUM_MD5, "4b09dd773a34e7d9eb4e82c63cd4506a" },
	{ CSUM_MD4, "7263aaba148ef5e01716b6a9efdd8a82" },
	{ CSUM_SHA1, "929df41e7c900f43f160d9cc35edf5fbf1009f7e" },
};
#define NFILE_VECS (sizeof(file_vecs) / sizeof(file_vecs[0]))

/* Seed 0 is hashed as nothing (md*, sha*) or passed as 0 (xxh*): the block
 * sum of the whole data then equals rsync's unseeded whole-file sum. */
static void test_block_seed_zero(void **state)
{
	uint8_t out[CSUM_MAX_DIGEST];

	for (size_t i = 0; i < NFILE_VECS; i++) {
		csum_block(file_vecs[i].type, 0, true, data, DATA_LEN, out);
		assert_hex(out, file_vecs[i].hex);
		csum_block(file_vecs[i].type, 0, false, data, DATA_LEN, out);
		assert_hex(out, file_vecs[i].hex);
	}
	csum_block(CSUM_MD4_OLD, 0, false, data, DATA_LEN, out);
	assert_hex(out, "7263aaba148ef5e01716b6a9efdd8a82");
}

/* The two md5 orders differ for a non-zero seed, and each is the plain
 * md5 of the concatenation (seed as 4 LE bytes). */
static void test_block_md5_orders(void **state)
{
	uint8_t buf[BLEN + 4], a[16], b[16], ref[16];
	const uint8_t seed_le[4] = { 0x45, 0x23, 0x01, 0x00 }; /* 74565 */

	csum_block(CSUM_MD5, SEED_POS, true, data, BLEN, a);
	csum_block(CSUM_MD5, SEED_POS, false, data, BLEN, b);
	assert_memory_not_equal(a, b, 16);

	memcpy(buf, seed_le, 4);
	memcpy(buf + 4, data, BLEN);
	csum_block(CSUM_MD5, 0, true, buf, sizeof(buf), ref);
	assert_memory_equal(a, ref, 16);

	memcpy(buf, data, BLEN);
	memcpy(buf + BLEN, seed_le, 4);
	csum_block(CSUM_MD5, 0, true, buf, sizeof(buf), ref);
	assert_memory_equal(b, ref, 16);
}

static void test_block_none_and_bad(void **state)
{
	uint8_t out[CSUM_MAX_DIGEST];

	memset(out, 0xaa, sizeof(out));
	csum_block(CSUM_NONE, SEED_POS, true, data, BLEN, out);
	assert_int_equal(out[0], 0);
	assert_int_equal(out[1], 0xaa);

	/* an unknown type writes nothing */
	memset(out, 0xaa, sizeof(out));
	csum_block((enum csum_type)99, SEED_POS, true, data, BLEN, out);
	assert_int_equal(out[0], 0xaa);
	csum_block((enum csum_type)-1, SEED_POS, true, data, BLEN, out);
	assert_int_equal(out[0], 0xaa);
}

/* ---- whole-file checksums ------------------------------------------------ */

static void file_sum(enum csum_type t, int32_t seed, size_t chunk,
		     uint8_t *out)
{
	struct csum_ctx c;

	csum_file_init(&c, t, seed);
	for (size_t o = 0; o < DATA_LEN; o += chunk)
		csum_file_update(&c, data + o,
				 DATA_LEN - o < chunk ? DATA_LEN - o : chunk);
	csum_file_final(&c, out);
	assert_int_equal(c.total, DATA_LEN);
}

static void test_file_wire(void **state)
{
	static const size_t chunks[] = { 1, 63, 64, 333, 700, DATA_LEN };
	uint8_t out[CSUM_MAX_DIGEST];

	for (size_t i = 0; i < NFILE_VECS; i++) {
		for (size_t k = 0; k < sizeof(chunks) / sizeof(chunks[0]); k++) {
			/* the seed must not matter for these types */
			file_sum(file_vecs[i].type, SEED_POS, chunks[k], out);
			assert_hex(out, file_vecs[i].hex);
		}
	}
}

/* Protocol 29 md4 puts the seed first (post-transfer sum, seed 74565); the
 * --checksum list sum of the same run was plain md4. */
static void test_file_md4_old(void **state)
{
	uint8_t out[16];

	file_sum(CSUM_MD4_OLD, SEED_POS, 333, out);
	assert_hex(out, "4970504dc94f98ff175d0a8229a7aa7d");
	file_sum(csum_flist_type(CSUM_MD4_OLD), SEED_POS, 333, out);
	assert_hex(out, "7263aaba148ef5e01716b6a9efdd8a82");
	assert_int_equal(csum_flist_type(CSUM_XXH128), CSUM_XXH128);
}

/* A zero seed is still hashed by md4-old: four zero bytes in front. */
static void test_file_md4_old_seed_zero(void **state)
{
	static uint8_t buf[DATA_LEN + 4];
	uint8_t a[16], b[16];

	file_sum(CSUM_MD4_OLD, 0, 700, a);
	memcpy(buf + 4, data, DATA_LEN);
	csum_block(CSUM_MD4, 0, false, buf, sizeof(buf), b);
	assert_memory_equal(a, b, 16);
}

static void test_file_none_and_empty(void **state)
{
	struct csum_ctx c;
	uint8_t out[CSUM_MAX_DIGEST];

	memset(out, 0xaa, sizeof(out));
	csum_file_init(&c, CSUM_NONE, SEED_POS);
	csum_file_update(&c, data, DATA_LEN);
	csum_file_final(&c, out);
	assert_int_equal(out[0], 0);
	assert_int_equal(out[1], 0xaa);

	/* md5 of nothing, the textbook value */
	csum_file_init(&c, CSUM_MD5, 0);
	csum_file_update(&c, NULL, 0);
	csum_file_final(&c, out);
	assert_hex(out, "d41d8cd98f00b204e9800998ecf8427e");
}

/* The ctx may be copied mid-stream to storage that is only 8-aligned. */
static void test_file_ctx_copy(void **state)
{
	for (size_t i = 0; i < NFILE_VECS; i++) {
		struct csum_ctx c;
		uint8_t *raw = malloc(sizeof(c) + 64);
		uint8_t out[CSUM_MAX_DIGEST];
		struct csum_ctx *moved;

		assert_non_null(raw);
		/* 8 past a malloc boundary: not 16-, 32- or 64-aligned */
		moved = (struct csum_ctx *)(void *)(raw + 8);
		csum_file_init(&c, file_vecs[i].type, 0);
		csum_file_update(&c, data, 1234);
		memcpy(moved, &c, sizeof(c));
		memset(&c, 0x55, sizeof(c));
		csum_file_update(moved, data + 1234, DATA_LEN - 1234);
		csum_file_final(moved, out);
		assert_hex(out, file_vecs[i].hex);
		free(raw);
	}
}

/* ---- names and lists ----------------------------------------------------- */

static void test_lengths_and_names(void **state)
{
	assert_int_equal(csum_len(CSUM_NONE), 1);
	assert_int_equal(csum_len(CSUM_MD4_OLD), 16);
	assert_int_equal(csum_len(CSUM_MD4), 16);
	assert_int_equal(csum_len(CSUM_MD5), 16);
	assert_int_equal(csum_len(CSUM_SHA1), 20);
	assert_int_equal(csum_len(CSUM_XXH64), 8);
	assert_int_equal(csum_len(CSUM_XXH3), 8);
	assert_int_equal(csum_len(CSUM_XXH128), 16);
	assert_int_equal(csum_len(CSUM_SHA256), 32);
	assert_int_equal(csum_len(CSUM_SHA512), 64);
	assert_int_equal(csum_len((enum csum_type)42), 0);

	assert_string_equal(csum_name(CSUM_MD4_OLD), "md4");
	assert_string_equal(csum_name(CSUM_XXH128), "xxh128");
	assert_string_equal(csum_name(CSUM_NONE), "none");
	assert_null(csum_name((enum csum_type)42));
}

static void test_parse(void **state)
{
	static const struct {
		const char *name;
		enum csum_type type;
	} ok[] = {
		{ "md4", CSUM_MD4 }, { "MD5", CSUM_MD5 }, { "Sha1", CSUM_SHA1 },
		{ "xxh64", CSUM_XXH64 }, { "XXHASH", CSUM_XXH64 },
		{ "xxh3", CSUM_XXH3 }, { "xxh128", CSUM_XXH128 },
		{ "none", CSUM_NONE },
	};
	static const char *const bad[] = {
		"", "md", "md55", "sha256", "sha512", "xxh", "auto ", " md5",
	};
	enum csum_type t;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		t = CSUM_SHA512;
		assert_int_equal(csum_parse(ok[i].name, &t), 0);
		assert_int_equal(t, ok[i].type);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		t = CSUM_SHA512;
		assert_int_equal(csum_parse(bad[i], &t), -1);
		assert_int_equal(t, CSUM_SHA512);
	}
	/* "auto" succeeds and keeps the caller's default */
	t = CSUM_MD4_OLD;
	assert_int_equal(csum_parse("AUTO", &t), 0);
	assert_int_equal(t, CSUM_MD4_OLD);
	assert_int_equal(csum_parse(NULL, &t), -1);

	/* a token of a longer string: "md5" of "md5,xxh64" */
	assert_int_equal(csum_parse_n("md5,xxh64", 3, &t), 0);
	assert_int_equal(t, CSUM_MD5);
	assert_int_equal(csum_parse_n("md5,xxh64", 4, &t), -1);

	assert_int_equal(csum_implied(32), CSUM_MD5);
	assert_int_equal(csum_implied(30), CSUM_MD5);
	assert_int_equal(csum_implied(29), CSUM_MD4_OLD);
	assert_int_equal(csum_implied(27), CSUM_MD4_OLD);
}

static void test_default_lists(void **state)
{
	char copy[128], *save = NULL;
	enum csum_type t;

	assert_string_equal(csum_default_list(true),
			    "xxh128 xxh3 xxh64 md5 md4 sha1 none");
	assert_string_equal(csum_default_list(false),
			    "xxh128 xxh3 xxh64 md5 md4 sha1");
	assert_string_equal(auth_default_list(), "sha512 sha256 sha1 md5 md4");

	/* every advertised name parses back */
	snprintf(copy, sizeof(copy), "%s", csum_default_list(true));
	for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		assert_int_equal(csum_parse(w, &t), 0);
		assert_string_equal(csum_name(t), w);
	}
	snprintf(copy, sizeof(copy), "%s", auth_default_list());
	for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		assert_int_equal(auth_parse(w, &t), 0);
		assert_string_equal(csum_name(t), w);
	}
}

static void test_auth_parse(void **state)
{
	enum csum_type t = CSUM_NONE;

	assert_int_equal(auth_parse("SHA512", &t), 0);
	assert_int_equal(t, CSUM_SHA512);
	assert_int_equal(auth_parse("md4", &t), 0);
	assert_int_equal(t, CSUM_MD4);
	t = CSUM_NONE;
	assert_int_equal(auth_parse("xxh128", &t), -1);
	assert_int_equal(auth_parse("none", &t), -1);
	assert_int_equal(auth_parse("auto", &t), -1);
	assert_int_equal(auth_parse(NULL, &t), -1);
	assert_int_equal(t, CSUM_NONE);
}

/* ---- daemon auth --------------------------------------------------------- */

static const struct {
	const char *what;
	enum csum_type type;
	bool legacy;
	const char *challenge;
	const char *response;
} auth_vecs[] = {
	{ "sha512 (reference doc)", CSUM_SHA512, false,
	  "8ukYCz67EPav7D41iHbZPwLjQfhKVgauRyFFnP5iCpmp//LTtObjA8jjUEEUl57JlISRwwwojk5tvXFq1xhyhA",
	  "1BDLuaMxr+mrunWTgZGAP7scn1AVrb15OJ1w/364jbPcgSLrBGabbU1AGa1W7la6pXLgGal5B7eVVSOQYBwWFg" },
	{ "sha512", CSUM_SHA512, false,
	  "bcXfDAVt5CSA7oMx6LoBJ9mTXMK7hDHMBoWhYKx81BRKaEQ8ddThtPVH4nsp9SQM/jjQP9dg0IRnoIGGPvSx/Q",
	  "BnBc29gw+q76WyTq951MP77svBSqCP/Vhm68GPhX5meKDARDzPuhOGqFOvefkVFj2WMgNgLJ5aaH3g1w6+RkFQ" },
	{ "sha256", CSUM_SHA256, false,
	  "IzpZMLruAPXzcNoicbH0Kg6iaEv3xP9ywJp/0+HC6T0",
	  "YQHYFOmoNAQiEZH8cm5N9+cuvDlAMSH81l5B6POzR0g" },
	{ "sha1", CSUM_SHA1, false,
	  "Gm9d/ULRIhOxniPG/bpfhYdBGOM", "mFBAX6JHG3lxsJcwr39Hn39aRm8" },
	{ "md5", CSUM_MD5, false,
	  "powxC265Dkq9fAiqnMl+7g", "Ne5h+KWof72pr8JS9zbw0A" },
	/* greetings "@RSYNCD: 30.0" without a list: plain md5 */
	{ "md5, no list, protocol 30", CSUM_MD5, false,
	  "zZaTh57LRi1R4f0ZNtSkzg", "AyoJMN/PC4K/QsRhEMCyRA" },
	/* md4 picked from an explicit list: no prefix */
	{ "md4", CSUM_MD4, false,
	  "EYFcLGNZfudm3BKcng6Pzg", "s9Dq3lNd7XZdkBr1NjvNxA" },
	/* greetings "@RSYNCD: 29.0" without a list: four zero bytes first */
	{ "md4, no list, protocol 29", CSUM_MD4, true,
	  "wsVQCCnfKfYYuMbgOnl/5A", "DK3t7vj4C7cAXzE4h2tK7w" },
	{ "md4-old type", CSUM_MD4_OLD, false,
	  "wsVQCCnfKfYYuMbgOnl/5A", "DK3t7vj4C7cAXzE4h2tK7w" },
};

static void test_auth_wire(void **state)
{
	for (size_t i = 0; i < sizeof(auth_vecs) / sizeof(auth_vecs[0]); i++) {
		char out[100];

		print_message("  %s\n", auth_vecs[i].what);
		auth_response(auth_vecs[i].type, auth_vecs[i].legacy, "s3cret",
			      auth_vecs[i].challenge, out, sizeof(out));
		assert_string_equal(out, auth_vecs[i].response);
	}
}

/* legacy_md4 only changes md4 */
static void test_auth_legacy_only_md4(void **state)
{
	char a[100], b[100];

	auth_response(CSUM_MD5, true, "s3cret", "powxC265Dkq9fAiqnMl+7g", a,
		      sizeof(a));
	assert_string_equal(a, "Ne5h+KWof72pr8JS9zbw0A");
	auth_response(CSUM_MD4, true, "s3cret", "EYFcLGNZfudm3BKcng6Pzg", b,
		      sizeof(b));
	assert_string_not_equal(b, "s9Dq3lNd7XZdkBr1NjvNxA");
}

static void test_auth_bounds(void **state)
{
	char out[100];

	/* 86 characters + NUL do not fit in 86 bytes */
	memset(out, 'x', sizeof(out));
	auth_response(CSUM_SHA512, false, "s3cret", auth_vecs[0].challenge, out,
		      86);
	assert_string_equal(out, "");
	auth_response(CSUM_SHA512, false, "s3cret", auth_vecs[0].challenge, out,
		      87);
	assert_string_equal(out, auth_vecs[0].response);

	/* not auth digests */
	auth_response(CSUM_XXH128, false, "s3cret", "abc", out, sizeof(out));
	assert_string_equal(out, "");
	auth_response(CSUM_NONE, false, "s3cret", "abc", out, sizeof(out));
	assert_string_equal(out, "");
	auth_response((enum csum_type)77, false, "s3cret", "abc", out,
		      sizeof(out));
	assert_string_equal(out, "");

	/* NULL strings count as empty: md5("") */
	auth_response(CSUM_MD5, false, NULL, NULL, out, sizeof(out));
	assert_string_equal(out, "1B2M2Y8AsgTpgAmY7PhCfg");
	auth_response(CSUM_MD5, false, "s3cret", "x", out, 0); /* no crash */
}

/* ---- base64 -------------------------------------------------------------- */

static void check_b64(const char *in, size_t len, const char *want)
{
	char out[64];

	assert_int_equal(base64_nopad((const uint8_t *)in, len, out, sizeof(out)),
			 strlen(want));
	assert_string_equal(out, want);
	assert_int_equal(base64_nopad_len(len), strlen(want));
}

static void test_base64(void **state)
{
	/* RFC 4648 section 10 vectors without the '=' */
	check_b64("", 0, "");
	check_b64("f", 1, "Zg");
	check_b64("fo", 2, "Zm8");
	check_b64("foo", 3, "Zm9v");
	check_b64("foob", 4, "Zm9vYg");
	check_b64("fooba", 5, "Zm9vYmE");
	check_b64("foobar", 6, "Zm9vYmFy");
	/* the last two alphabet characters and high bytes */
	check_b64("\xff", 1, "/w");
	check_b64("\xfb\xff", 2, "+/8");
	check_b64("\xff\xfe\xfd", 3, "//79");
	check_b64("\x00\x00\x00", 3, "AAAA");
}

static void test_base64_bounds(void **state)
{
	const uint8_t in[3] = { 'f', 'o', 'o' };
	char out[8];

	memset(out, 'x', sizeof(out));
	assert_int_equal(base64_nopad(in, 3, out, 4), 0); /* no room for NUL */
	assert_string_equal(out, "");
	assert_int_equal(base64_nopad(in, 3, out, 5), 4);
	assert_string_equal(out, "Zm9v");
	assert_int_equal(base64_nopad(in, 0, out, 1), 0);
	assert_string_equal(out, "");
	assert_int_equal(base64_nopad(in, 3, NULL, 8), 0);
	assert_int_equal(base64_nopad(in, 3, out, 0), 0);
	assert_int_equal(base64_nopad(NULL, 3, out, sizeof(out)), 0);
	assert_string_equal(out, "");
	assert_int_equal(base64_nopad_len(SIZE_MAX), SIZE_MAX);
	assert_int_equal(base64_nopad_len(64), 86);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rolling_wire),
		cmocka_unit_test(test_rolling_signed),
		cmocka_unit_test(test_rolling_roll),
		cmocka_unit_test(test_rolling_vector),
		cmocka_unit_test(test_block_wire),
		cmocka_unit_test(test_block_seed_zero),
		cmocka_unit_test(test_block_md5_orders),
		cmocka_unit_test(test_block_none_and_bad),
		cmocka_unit_test(test_file_wire),
		cmocka_unit_test(test_file_md4_old),
		cmocka_unit_test(test_file_md4_old_seed_zero),
		cmocka_unit_test(test_file_none_and_empty),
		cmocka_unit_test(test_file_ctx_copy),
		cmocka_unit_test(test_lengths_and_names),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_default_lists),
		cmocka_unit_test(test_auth_parse),
		cmocka_unit_test(test_auth_wire),
		cmocka_unit_test(test_auth_legacy_only_md4),
		cmocka_unit_test(test_auth_bounds),
		cmocka_unit_test(test_base64),
		cmocka_unit_test(test_base64_bounds),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
