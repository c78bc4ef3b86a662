/*
 * Token streams, plain and compressed (rsync token.c; the format is in
 * docs/protocol.md sections 9.6 and 10).
 *
 * Compressed streams are a sequence of flag bytes:
 *   0x00                END_FLAG       end of the file's data
 *   0x20 int            TOKEN_LONG     block t
 *   0x21 int, u16       TOKENRUN_LONG  blocks t .. t+count
 *   0x40+hi, lo, data   DEFLATED_DATA  (hi<<8)+lo bytes of compressed data
 *   0x80+r              TOKEN_REL      block last+r
 *   0xC0+r, u16         TOKENRUN_REL   blocks last+r .. last+r+count
 * where `last` is 0 at the start of a file and then the last block of the
 * previous token. The sender holds a run back until something other than
 * the next consecutive block comes, so the stream reads
 * [run] [data ...] [run] ... END_FLAG.
 *
 * zlib/zlibx: raw deflate, reset for every file, flushed with Z_SYNC_FLUSH
 * before every token and at the end; the flush's trailing 00 00 FF FF is
 * not sent and the receiver supplies it. zlib (not zlibx) also puts every
 * matched block into both windows: the sender with deflateSetDictionary
 * (which, for raw deflate after a flush, appends to the window exactly as
 * rsync's Z_INSERT_ONLY does), the receiver by inflating the block as
 * stored blocks. zstd: one context for the whole session, flushed with
 * ZSTD_e_flush before tokens and at the end of every file, its output
 * sent in full chunks (a short one only at those flushes), as rsync does.
 * lz4: every chunk an independent block.
 */
#include "proto/token.h"

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lz4.h>
#include <zlib.h>
/* for ZSTD_getFrameProgression: the adaptive rule reads how much zstd has
 * compressed instead of flushing it (a flush costs bytes) */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include "proto/wildmatch.h"
#include "proto/zadapt.h"

#define END_FLAG 0x00
#define TOKEN_LONG 0x20
#define TOKENRUN_LONG 0x21
#define DEFLATED_DATA 0x40
#define TOKEN_REL 0x80
#define TOKENRUN_REL 0xC0

#define MAX_RUN 65535           /* a run's count is 16 bits */
#define STORED_MAX 0xFFFF       /* largest stored deflate block */
#define LITERAL_PIECE (64 * 1024) /* uncompressed literal read size */
#define INFLATE_OUT (64 * 1024)
/* rsync's lz4 receive buffer: max(LZ4_compressBound(CHUNK_SIZE), 16385). */
#define LZ4_OUT_MAX (32768 + 32768 / 255 + 16)
/* A literal-only lz4 block of this many bytes fits in one chunk. */
#define LZ4_RAW_PIECE 16256
#define ZLIB_PEND_CAP (96 * 1024)
/* A zstd Raw block of ours: the most a frame with a 128 KiB window takes
 * (RFC 8878 Block_Maximum_Size), so per byte no more headers than zstd's
 * own Raw blocks. */
#define ZSTD_RAW_BLOCK_MAX (128 * 1024)

/* ------------------------------------------------------------ names */

static const struct {
	const char *name;
	int alg;
} alg_names[] = {
	{"zstd", CPRES_ZSTD}, {"lz4", CPRES_LZ4}, {"zlibx", CPRES_ZLIBX},
	{"zlib", CPRES_ZLIB}, {"none", CPRES_NONE},
};

int token_alg_by_name(const char *name)
{
	for (size_t i = 0; i < sizeof alg_names / sizeof alg_names[0]; i++)
		if (strcasecmp(name, alg_names[i].name) == 0)
			return alg_names[i].alg;
	return -2;
}

const char *token_alg_name(int alg)
{
	for (size_t i = 0; i < sizeof alg_names / sizeof alg_names[0]; i++)
		if (alg_names[i].alg == alg)
			return alg_names[i].name;
	return "UNKNOWN";
}

int token_resolve_level(int *alg, int level)
{
	int lo, hi, def;

	switch (*alg) {
	case CPRES_ZLIB:
	case CPRES_ZLIBX:
		lo = 1, hi = 9, def = 6;
		if (level == -1) /* Z_DEFAULT_COMPRESSION */
			level = def;
		if (level == 0) { /* zlib's "off" level: no compression at all */
			*alg = CPRES_NONE;
			return 0;
		}
		break;
	case CPRES_ZSTD:
		lo = ZSTD_minCLevel(), hi = ZSTD_maxCLevel(), def = ZSTD_CLEVEL_DEFAULT;
		if (level == 0)
			level = def;
		break;
	case CPRES_LZ4:
		lo = hi = def = 0;
		break;
	default:
		return 0;
	}
	if (level == TOKEN_LEVEL_DEFAULT)
		return def;
	return level < lo ? lo : level > hi ? hi : level;
}

/* ------------------------------------------------------ skip lists */

/* rsync.1.md's --skip-compress default list (rsync's default "dont
 * compress"). */
static const char default_dont_compress[] =
	"*.3g2 *.3gp *.7z *.aac *.ace *.apk *.avi *.bz2 *.deb *.dmg *.ear *.f4v *.flac "
	"*.flv *.gpg *.gz *.iso *.jar *.jpeg *.jpg *.lrz *.lz *.lz4 *.lzma *.lzo *.m1a "
	"*.m1v *.m2a *.m2ts *.m2v *.m4a *.m4b *.m4p *.m4r *.m4v *.mka *.mkv *.mov *.mp1 "
	"*.mp2 *.mp3 *.mp4 *.mpa *.mpeg *.mpg *.mpv *.mts *.odb *.odf *.odg *.odi *.odm "
	"*.odp *.ods *.odt *.oga *.ogg *.ogm *.ogv *.ogx *.opus *.otg *.oth *.otp *.ots "
	"*.ott *.oxt *.png *.qt *.rar *.rpm *.rz *.rzip *.spx *.squashfs *.sxc *.sxd "
	"*.sxg *.sxm *.sxw *.sz *.tbz *.tbz2 *.tgz *.tlz *.ts *.txz *.tzo *.vob *.war "
	"*.webm *.webp *.xz *.z *.zip *.zst";

struct token_skip {
	char **suffixes; /* lower case, may hold [abc] classes */
	size_t nsuf;
	char **patterns; /* lower-case wildmatch patterns */
	size_t npat;
	bool all;        /* "dont compress = *" */
};

static bool push_str(char ***v, size_t *n, const char *s, size_t len)
{
	char **nv = realloc(*v, (*n + 1) * sizeof **v);
	if (!nv)
		return false;
	*v = nv;
	if (len > 32) /* rsync caps absurd suffixes too */
		len = 32;
	char *c = malloc(len + 1);
	if (!c)
		return false;
	for (size_t i = 0; i < len; i++)
		c[i] = (char)tolower((unsigned char)s[i]);
	c[len] = '\0';
	nv[(*n)++] = c;
	return true;
}

/* --skip-compress=gz/jpg/mp[34] */
static bool add_suffix_list(struct token_skip *k, const char *list)
{
	while (*list) {
		if (*list == '/') {
			list++;
			continue;
		}
		size_t len = strcspn(list, "/");
		if (!push_str(&k->suffixes, &k->nsuf, list, len))
			return false;
		list += len;
	}
	return true;
}

/* "dont compress = *.gz *.jpg core.*" */
static bool add_pattern_list(struct token_skip *k, const char *list)
{
	while (*list) {
		if (*list == ' ' || *list == '\t') {
			list++;
			continue;
		}
		size_t len = strcspn(list, " \t");
		if (len == 1 && *list == '*') {
			k->all = true;
		} else if (len > 2 && list[0] == '*' && list[1] == '.' &&
			   !memchr(list + 2, '.', len - 2) && !memchr(list + 2, '?', len - 2) &&
			   !memchr(list + 2, '*', len - 2)) {
			if (!push_str(&k->suffixes, &k->nsuf, list + 2, len - 2))
				return false;
		} else {
			char **nv = realloc(k->patterns, (k->npat + 1) * sizeof *nv);
			char *c = malloc(len + 1);
			if (!nv || !c) {
				free(c);
				if (nv)
					k->patterns = nv;
				return false;
			}
			k->patterns = nv;
			for (size_t i = 0; i < len; i++)
				c[i] = (char)tolower((unsigned char)list[i]);
			c[len] = '\0';
			nv[k->npat++] = c;
		}
		list += len;
	}
	return true;
}

struct token_skip *token_skip_new(const char *skip_compress, const char *dont_compress)
{
	struct token_skip *k = calloc(1, sizeof *k);
	bool ok;

	if (!k)
		return NULL;
	if (dont_compress)
		ok = add_pattern_list(k, dont_compress) &&
		     (!skip_compress || add_suffix_list(k, skip_compress));
	else if (skip_compress)
		ok = add_suffix_list(k, skip_compress);
	else
		ok = add_pattern_list(k, default_dont_compress);
	if (!ok) {
		token_skip_free(k);
		return NULL;
	}
	return k;
}

void token_skip_free(struct token_skip *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->nsuf; i++)
		free(k->suffixes[i]);
	for (size_t i = 0; i < k->npat; i++)
		free(k->patterns[i]);
	free(k->suffixes);
	free(k->patterns);
	free(k);
}

/* A suffix entry against a file's suffix; "[abc]" matches one of a, b, c
 * ("[" without a closing "]", and "[]", are literal). */
static bool suffix_matches(const char *pat, const char *s)
{
	while (*pat) {
		if (!*s)
			return false;
		char c = (char)tolower((unsigned char)*s);
		if (*pat == '[') {
			const char *end = strchr(pat + 1, ']');
			if (end && end != pat + 1) {
				if (!memchr(pat + 1, c, (size_t)(end - pat - 1)))
					return false;
				pat = end + 1;
				s++;
				continue;
			}
		}
		if (*pat != c)
			return false;
		pat++;
		s++;
	}
	return *s == '\0';
}

bool token_skip_match(const struct token_skip *k, const char *name)
{
	if (!k)
		return false;
	if (k->all)
		return true;
	const char *base = strrchr(name, '/');
	base = base ? base + 1 : name;
	if (k->npat) {
		char low[256];
		size_t n = strlen(base);
		if (n < sizeof low) {
			for (size_t i = 0; i <= n; i++)
				low[i] = (char)tolower((unsigned char)base[i]);
			for (size_t i = 0; i < k->npat; i++)
				if (wildmatch(k->patterns[i], low))
					return true;
		}
	}
	const char *dot = strrchr(base, '.');
	if (!dot || dot == base || !dot[1])
		return false;
	for (size_t i = 0; i < k->nsuf; i++)
		if (suffix_matches(k->suffixes[i], dot + 1))
			return true;
	return false;
}

/* ------------------------------------------------------- the encoder */

struct token_enc {
	int alg, protocol;
	int level;          /* the normal level */
	struct wire_error *err;
	struct zadapt za;   /* ferry's adaptive rule (zadapt.h) */
	bool timed;         /* measure compressing and waiting (token_enc_set_timing) */
	token_clock_fn clock; /* a test's clock instead of the real one */
	void *clock_ctx;
	int setting;        /* the setting the compressor runs at now */
	int threads;        /* zstd worker threads (0: none) */

	/* this file */
	bool file_minimal;  /* on the skip list: no compression effort at all */
	bool first_done;    /* the file's first (short) window has ended */
	bool hist_gap;      /* zlib: a matched block skipped the history while
			     * storing, so this file stays stored */
	int64_t file_in;    /* literal bytes of this file */
	int64_t comp_out;   /* compressed bytes sent (all files) */
	bool need_flush;    /* literal data went in since the last flush */
	bool run_pending;
	int32_t run_start, run_last, last_run_end;

	/* the current window (zadapt.h) */
	uint64_t win_in;      /* literal bytes of this file in the window */
	int64_t win_out0;     /* comp_out when the window began */
	uint64_t win_bytes;   /* literal bytes of all files in the window */
	uint64_t win_comp_ns;
	uint64_t win_wait0;   /* the output's wait_ns when the window began */
	uint64_t win_wall0;   /* the wall clock when the window began */
	int64_t spd_out0;     /* comp_out when the speed window began */
	uint8_t *sample;      /* while storing: the window's last bytes */
	size_t sample_len;
	uint8_t *sample_z;    /* the sample, compressed */

	/* zlib, zlibx */
	z_stream z;
	bool z_ready;
	int z_level;        /* the level deflate runs at now */
	uint8_t *pend;      /* compressed bytes not sent yet */
	size_t pend_len;
	bool marker_held;   /* pend ends with a mid-data flush's sync marker */

	/* zstd */
	ZSTD_CCtx *zc;
	int zs_level;
	bool zs_frame_open; /* data went into the current frame */
	bool zs_raw;        /* storing: raw blocks in frames of our own */
	bool zs_raw_open;   /* one of those frames is open */
	uint8_t *zs_block;  /* storing: the Raw block being gathered */
	size_t zs_block_len;
	size_t zs_opos;     /* output gathered in obuf for the next chunk */
	uint64_t zs_in0, zs_out0; /* zstd_progress when the window began */

	uint8_t *obuf;      /* a chunk: 2 header bytes + payload */
};

static bool enc_fail(struct token_enc *e, const char *what, long code)
{
	return wire_fail(e->err, RERR_STREAMIO, "compression failed: %s (%ld)", what, code);
}

/* Is `setting` this algorithm's "no compression effort" one? */
static bool setting_is_store(const struct token_enc *e, int setting)
{
	switch (e->alg) {
	case CPRES_ZLIB:
	case CPRES_ZLIBX: return setting == 0;
	case CPRES_ZSTD: return setting == ZSTD_minCLevel();
	case CPRES_LZ4: return setting <= 0;
	default: return false;
	}
}

struct token_enc *token_enc_new(int alg, int level, bool adaptive, int protocol,
				struct wire_error *err)
{
	struct token_enc *e = calloc(1, sizeof *e);

	if (!e) {
		wire_fail(err, RERR_MALLOC, "out of memory");
		return NULL;
	}
	e->alg = alg;
	e->level = level;
	e->protocol = protocol;
	e->err = err;
	zadapt_init(&e->za, alg, level, adaptive, ZSTD_minCLevel());
	e->setting = zadapt_setting(&e->za);
	e->obuf = malloc(2 + (size_t)LZ4_COMPRESSBOUND(TOKEN_MAX_DATA));
	e->sample = malloc(ZADAPT_SAMPLE);
	e->sample_z = malloc((size_t)LZ4_COMPRESSBOUND(ZADAPT_SAMPLE));
	if (alg == CPRES_ZSTD)
		e->zs_block = malloc(ZSTD_RAW_BLOCK_MAX);
	if (!e->obuf || !e->sample || !e->sample_z || (alg == CPRES_ZSTD && !e->zs_block)) {
		token_enc_free(e);
		wire_fail(err, RERR_MALLOC, "out of memory");
		return NULL;
	}
	if (alg == CPRES_ZLIB || alg == CPRES_ZLIBX) {
		e->pend = malloc(ZLIB_PEND_CAP);
		if (!e->pend || deflateInit2(&e->z, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) !=
					Z_OK) {
			token_enc_free(e);
			wire_fail(err, RERR_STREAMIO, "compression init failed");
			return NULL;
		}
		e->z_ready = true;
		e->z_level = level;
	} else if (alg == CPRES_ZSTD) {
		e->zc = ZSTD_createCCtx();
		if (!e->zc || ZSTD_isError(ZSTD_CCtx_setParameter(e->zc, ZSTD_c_compressionLevel,
								  level))) {
			token_enc_free(e);
			wire_fail(err, RERR_STREAMIO, "compression init failed");
			return NULL;
		}
		e->zs_level = level;
	}
	return e;
}

void token_enc_free(struct token_enc *e)
{
	if (!e)
		return;
	if (e->z_ready)
		deflateEnd(&e->z);
	ZSTD_freeCCtx(e->zc);
	free(e->pend);
	free(e->obuf);
	free(e->sample);
	free(e->sample_z);
	free(e->zs_block);
	free(e);
}

bool token_enc_minimal(const struct token_enc *e)
{
	return e->file_minimal || setting_is_store(e, e->setting);
}

void token_enc_set_timing(struct token_enc *e, bool timed)
{
	e->timed = timed;
}

void token_enc_set_clock(struct token_enc *e, token_clock_fn clock, void *ctx)
{
	e->clock = clock;
	e->clock_ctx = ctx;
}

void token_enc_set_threads(struct token_enc *e, int threads)
{
	/* as rsync: a libzstd without thread support just says no, and the
	 * compression goes on in this thread */
	if (e->zc && threads > 0 &&
	    !ZSTD_isError(ZSTD_CCtx_setParameter(e->zc, ZSTD_c_nbWorkers, threads)))
		e->threads = threads;
}

int token_enc_setting_changes(const struct token_enc *e)
{
	return e->za.changes;
}

/* One DEFLATED_DATA chunk (n <= TOKEN_MAX_DATA). */
static bool put_chunk(struct token_enc *e, struct wire_out *out, const uint8_t *p, size_t n)
{
	uint8_t hdr[2] = {(uint8_t)(DEFLATED_DATA | (n >> 8)), (uint8_t)n};

	e->comp_out += (int64_t)n;
	return wire_write(out, hdr, 2) && wire_write(out, p, n);
}

/* The held-back run of consecutive blocks (token.c: send_deflated_token). */
static bool put_run(struct token_enc *e, struct wire_out *out)
{
	if (!e->run_pending)
		return true;
	int64_t r = (int64_t)e->run_start - e->last_run_end;
	int32_t n = e->run_last - e->run_start;
	bool ok;

	if (r >= 0 && r <= 63) {
		ok = wire_write_u8(out, (uint8_t)((n ? TOKENRUN_REL : TOKEN_REL) + r));
	} else {
		ok = wire_write_u8(out, n ? TOKENRUN_LONG : TOKEN_LONG) &&
		     wire_write_i32(out, e->run_start);
	}
	if (ok && n)
		ok = wire_write_u8(out, (uint8_t)n) && wire_write_u8(out, (uint8_t)(n >> 8));
	e->last_run_end = e->run_last;
	e->run_pending = false;
	return ok;
}

/* -- zlib -- */

/* Send pend as chunks, keeping its last `keep` bytes back; with keep > 0
 * only whole chunks go. */
static bool zlib_send(struct token_enc *e, struct wire_out *out, size_t keep)
{
	size_t off = 0;

	while (e->pend_len - off > keep) {
		size_t n = e->pend_len - off - keep;
		if (n > TOKEN_MAX_DATA)
			n = TOKEN_MAX_DATA;
		else if (keep && n < TOKEN_MAX_DATA)
			break;
		if (!put_chunk(e, out, e->pend + off, n))
			return false;
		off += n;
	}
	if (off) {
		memmove(e->pend, e->pend + off, e->pend_len - off);
		e->pend_len -= off;
	}
	return true;
}

/* Run deflate over what is in z.next_in with `flush`, collecting output
 * in pend and sending whole chunks (the last 4 bytes are always held back:
 * they may be the sync marker). */
static bool zlib_run(struct token_enc *e, struct wire_out *out, int flush)
{
	for (;;) {
		e->z.next_out = e->pend + e->pend_len;
		e->z.avail_out = (uInt)(ZLIB_PEND_CAP - e->pend_len);
		int r = deflate(&e->z, flush);
		e->pend_len = ZLIB_PEND_CAP - e->z.avail_out;
		if (r != Z_OK && r != Z_BUF_ERROR)
			return enc_fail(e, "deflate", r);
		if (!zlib_send(e, out, 4))
			return false;
		if (e->z.avail_in == 0 && e->z.avail_out != 0)
			return true;
		if (r == Z_BUF_ERROR && e->z.avail_out != 0)
			return enc_fail(e, "deflate made no progress", r);
	}
}

/* Flush before a token or the end (`trim`: drop the 00 00 FF FF marker,
 * the receiver adds it), or in the middle of literal data (`trim` false:
 * the marker is held back, to go out in front of more data or to be
 * dropped if a token or the end comes next, since the receiver adds one
 * after every run of data). */
static bool zlib_flush(struct token_enc *e, struct wire_out *out, bool trim)
{
	static const uint8_t marker[4] = {0, 0, 0xFF, 0xFF};

	e->z.next_in = NULL;
	e->z.avail_in = 0;
	if (!zlib_run(e, out, Z_SYNC_FLUSH))
		return false;
	if (e->pend_len < 4 || memcmp(e->pend + e->pend_len - 4, marker, 4) != 0)
		return enc_fail(e, "no sync marker after a flush", (long)e->pend_len);
	e->need_flush = false;
	e->pend_len -= 4;
	if (!zlib_send(e, out, 0))
		return false;
	if (!trim) {
		memcpy(e->pend, marker, 4);
		e->pend_len = 4;
		e->marker_held = true;
		return true;
	}
	e->marker_held = false;
	return true;
}

static bool zlib_set_level(struct token_enc *e, struct wire_out *out, int level)
{
	if (level == e->z_level)
		return true;
	e->z.next_in = NULL;
	e->z.avail_in = 0;
	e->z.next_out = e->pend + e->pend_len;
	e->z.avail_out = (uInt)(ZLIB_PEND_CAP - e->pend_len);
	size_t had = e->pend_len;
	int r = deflateParams(&e->z, level, Z_DEFAULT_STRATEGY);
	e->pend_len = ZLIB_PEND_CAP - e->z.avail_out;
	if (r != Z_OK)
		return enc_fail(e, "deflateParams", r);
	if (e->pend_len != had) /* a held marker is no longer last */
		e->marker_held = false;
	e->z_level = level;
	return zlib_send(e, out, 4);
}

/* -- zstd -- */

/* Send the zstd output gathered in obuf as one chunk. */
static bool zstd_chunk_out(struct token_enc *e, struct wire_out *out)
{
	size_t n = e->zs_opos;

	e->zs_opos = 0;
	return n == 0 || put_chunk(e, out, e->obuf + 2, n);
}

/* Add bytes to the chunk being gathered, sending every one that fills
 * (whole chunks of Raw block data straight from where they are). */
static bool zstd_chunk_add(struct token_enc *e, struct wire_out *out, const uint8_t *p,
			   size_t n)
{
	while (n > 0) {
		if (e->zs_opos == 0 && n >= TOKEN_MAX_DATA) {
			if (!put_chunk(e, out, p, TOKEN_MAX_DATA))
				return false;
			p += TOKEN_MAX_DATA;
			n -= TOKEN_MAX_DATA;
			continue;
		}
		size_t k = TOKEN_MAX_DATA - e->zs_opos;
		if (k > n)
			k = n;
		memcpy(e->obuf + 2 + e->zs_opos, p, k);
		e->zs_opos += k;
		p += k;
		n -= k;
		if (e->zs_opos == TOKEN_MAX_DATA && !zstd_chunk_out(e, out))
			return false;
	}
	return true;
}

/* Compress into the chunk being gathered (mirrors rsync token.c:
 * send_zstd_token(), whose output buffer also goes out only when full or
 * when a flush is complete). */
static bool zstd_run(struct token_enc *e, struct wire_out *out, const uint8_t *p, size_t n,
		     ZSTD_EndDirective mode)
{
	ZSTD_inBuffer in = {p, n, 0};
	size_t r;

	do {
		ZSTD_outBuffer ob = {e->obuf + 2, TOKEN_MAX_DATA, e->zs_opos};
		r = ZSTD_compressStream2(e->zc, &ob, &in, mode);
		if (ZSTD_isError(r))
			return wire_fail(e->err, RERR_STREAMIO, "compression failed: %s",
					 ZSTD_getErrorName(r));
		e->zs_opos = ob.pos;
		if (e->zs_opos == TOKEN_MAX_DATA && !zstd_chunk_out(e, out))
			return false;
	} while (mode == ZSTD_e_continue ? in.pos < in.size : r != 0);
	if (n)
		e->zs_frame_open = true;
	if (mode == ZSTD_e_end)
		e->zs_frame_open = false;
	return true;
}

/* Input zstd has compressed and the output it made so far in this frame,
 * read without a flush (0 before the frame's first data). Windows are
 * measured between calls, and every frame change starts a new window. */
static void zstd_progress(const struct token_enc *e, uint64_t *in, uint64_t *out)
{
	*in = *out = 0;
	if (e->zs_frame_open && !e->zs_raw) {
		ZSTD_frameProgression fp = ZSTD_getFrameProgression(e->zc);
		*in = fp.consumed;
		*out = fp.produced;
	}
}

/*
 * Storing with zstd (the adaptive rule's "no effort", and skipped
 * suffixes) skips the compressor: the data goes out as Raw blocks of a
 * frame written here (RFC 8878: magic, a descriptor with no content size,
 * checksum or dictionary, a 128 KiB window; each block a 3-byte header
 * with its size, up to 128 KiB, spanning chunks). The receiver's stream
 * decoder reads it like any frame.
 */
#define ZSTD_RAW_FRAME_HEADER 6
#define ZSTD_RAW_BLOCK_HEADER 3

/* One Raw block of n bytes (`last`: the frame's last block). */
static bool zstd_raw_block(struct token_enc *e, struct wire_out *out, const uint8_t *p,
			   size_t n, bool last)
{
	uint32_t bh = (uint32_t)n << 3 | (last ? 1u : 0u); /* Block_Type 0: Raw */
	uint8_t hdr[ZSTD_RAW_BLOCK_HEADER] = {(uint8_t)bh, (uint8_t)(bh >> 8), (uint8_t)(bh >> 16)};

	return zstd_chunk_add(e, out, hdr, sizeof hdr) && zstd_chunk_add(e, out, p, n);
}

/* Send the Raw block gathered so far (before a token, the end of the
 * file or of the frame). */
static bool zstd_raw_flush(struct token_enc *e, struct wire_out *out, bool last)
{
	size_t n = e->zs_block_len;

	e->zs_block_len = 0;
	if (n == 0 && !last)
		return true;
	return zstd_raw_block(e, out, e->zs_block, n, last);
}

static bool zstd_raw_literal(struct token_enc *e, struct wire_out *out, const uint8_t *p,
			     size_t n)
{
	static const uint8_t frame_header[ZSTD_RAW_FRAME_HEADER] = {
		0x28, 0xB5, 0x2F, 0xFD, /* ZSTD_MAGICNUMBER, little-endian */
		0x00,                   /* Frame_Header_Descriptor: nothing optional */
		7 << 3,                 /* Window_Descriptor: 2^(10+7) = 128 KiB */
	};

	if (!e->zs_raw_open) {
		if (!zstd_chunk_add(e, out, frame_header, sizeof frame_header))
			return false;
		e->zs_raw_open = true;
	}
	while (n > 0) {
		if (e->zs_block_len == 0 && n >= ZSTD_RAW_BLOCK_MAX) {
			/* a whole block straight from the input: no copy */
			if (!zstd_raw_block(e, out, p, ZSTD_RAW_BLOCK_MAX, false))
				return false;
			p += ZSTD_RAW_BLOCK_MAX;
			n -= ZSTD_RAW_BLOCK_MAX;
			continue;
		}
		size_t k = ZSTD_RAW_BLOCK_MAX - e->zs_block_len;
		if (k > n)
			k = n;
		memcpy(e->zs_block + e->zs_block_len, p, k);
		e->zs_block_len += k;
		p += k;
		n -= k;
		if (e->zs_block_len == ZSTD_RAW_BLOCK_MAX && !zstd_raw_flush(e, out, false))
			return false;
	}
	return true;
}

/* End our own frame: its last block carries the last bit. */
static bool zstd_raw_end(struct token_enc *e, struct wire_out *out)
{
	if (!e->zs_raw_open)
		return true;
	e->zs_raw_open = false;
	return zstd_raw_flush(e, out, true);
}

/* Everything literal so far out on the wire, before a token or the end
 * of the file. */
static bool zstd_flush(struct token_enc *e, struct wire_out *out)
{
	if (e->need_flush) {
		e->need_flush = false;
		if (!zstd_run(e, out, NULL, 0, ZSTD_e_flush))
			return false;
	}
	return zstd_raw_flush(e, out, false) && zstd_chunk_out(e, out);
}

static bool zstd_set_level(struct token_enc *e, struct wire_out *out, int level)
{
	/* raw blocks for "no effort" while adapting or for a skipped file;
	 * an explicit --compress-level runs the compressor at that level */
	bool raw = level == ZSTD_minCLevel() && (e->za.adaptive || e->file_minimal);

	if (level == e->zs_level && raw == e->zs_raw)
		return true;
	/* The level only changes between frames: end the current one (the
	 * receiver's stream decoder goes on with the next frame). */
	if (!zstd_raw_end(e, out))
		return false;
	if (e->zs_frame_open && !zstd_run(e, out, NULL, 0, ZSTD_e_end))
		return false;
	size_t r = ZSTD_CCtx_setParameter(e->zc, ZSTD_c_compressionLevel, level);
	if (ZSTD_isError(r))
		return wire_fail(e->err, RERR_STREAMIO, "compression failed: %s",
				 ZSTD_getErrorName(r));
	e->zs_level = level;
	e->zs_raw = raw;
	e->need_flush = false;
	return true;
}

/* -- lz4 -- */

/* An lz4 block holding n bytes as literals only: no compression work. */
static size_t lz4_raw_block(uint8_t *dst, const uint8_t *src, size_t n)
{
	size_t o = 0;

	if (n < 15) {
		dst[o++] = (uint8_t)(n << 4);
	} else {
		size_t rest = n - 15;
		dst[o++] = 0xF0;
		while (rest >= 255) {
			dst[o++] = 255;
			rest -= 255;
		}
		dst[o++] = (uint8_t)rest;
	}
	memcpy(dst + o, src, n);
	return o + n;
}

static bool lz4_literal(struct token_enc *e, struct wire_out *out, const uint8_t *p, size_t n)
{
	while (n > 0) {
		size_t k = n, c;
		if (e->setting <= 0) {
			if (k > LZ4_RAW_PIECE)
				k = LZ4_RAW_PIECE;
			c = lz4_raw_block(e->obuf + 2, p, k);
		} else {
			if (k > TOKEN_MAX_DATA)
				k = TOKEN_MAX_DATA;
			for (;;) {
				/* acceleration 1 is LZ4_compress_default */
				int r = LZ4_compress_fast((const char *)p, (char *)e->obuf + 2, (int)k,
							  LZ4_COMPRESSBOUND(TOKEN_MAX_DATA), e->setting);
				if (r <= 0)
					return enc_fail(e, "LZ4_compress_fast", r);
				c = (size_t)r;
				if (c <= TOKEN_MAX_DATA)
					break;
				k /= 2; /* as rsync: halve the input until it fits */
			}
		}
		if (!put_chunk(e, out, e->obuf + 2, c))
			return false;
		p += k;
		n -= k;
	}
	return true;
}

/* -- common: ferry's adaptive rule (zadapt.h) -- */

/* The compressor's time: this thread's CPU time, so that being
 * preempted on a busy machine does not count as compressing; wall time
 * when zstd works in threads of its own. */
static uint64_t comp_clock_ns(const struct token_enc *e)
{
	struct timespec t;

	if (e->clock)
		return e->clock(e->clock_ctx);
	clock_gettime(e->threads > 0 ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The wall clock, for the window's wall time (one reading per window). */
static uint64_t wall_clock_ns(const struct token_enc *e)
{
	struct timespec t;

	if (e->clock)
		return e->clock(e->clock_ctx);
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* A speed window starts: the link's waiting, the wall clock and the
 * output are counted from here. */
static void speed_window_start(struct token_enc *e, struct wire_out *out)
{
	e->win_wait0 = wire_out_wait_ns(out);
	e->win_wall0 = wall_clock_ns(e);
	e->spd_out0 = e->comp_out;
}

/* The "no compression effort" setting of this algorithm. */
static int store_setting(const struct token_enc *e)
{
	return e->za.rungs[e->za.nrungs - 1];
}

/* Is the adaptive rule at work on this file? */
static bool adapting(const struct token_enc *e)
{
	return e->za.adaptive && !e->file_minimal && e->alg != CPRES_NONE;
}

/* Run the compressor at `setting` from here on; every change is one the
 * receiver follows without being told:
 *  - zlib/zlibx: deflate is first brought to a sync-flush point (the
 *    marker held back as usual), so deflateParams emits nothing and the
 *    new level starts on a byte boundary inside the same deflate stream;
 *    a file whose history has a gap (hist_gap) stays stored;
 *  - zstd: the frame is ended and the next one starts at the new level;
 *  - lz4: every chunk is an independent block anyway. */
static bool apply_setting(struct token_enc *e, struct wire_out *out, int setting)
{
	if (setting == e->setting)
		return true;
	switch (e->alg) {
	case CPRES_ZLIB:
	case CPRES_ZLIBX:
		if (e->hist_gap && setting != 0)
			return true;
		if (e->need_flush && !zlib_flush(e, out, false))
			return false;
		if (!zlib_set_level(e, out, setting))
			return false;
		break;
	case CPRES_ZSTD:
		if (!zstd_set_level(e, out, setting))
			return false;
		break;
	default:
		break;
	}
	e->setting = setting;
	return true;
}

/* Literal bytes in the current window of this file. */
static uint64_t window_target(const struct token_enc *e)
{
	if (!e->first_done)
		return ZADAPT_FIRST_WINDOW;
	if (e->za.incompressible)
		return ZADAPT_STORE_WINDOW;
	return ZADAPT_WINDOW;
}

/* Start the next window; the data measure only once it was taken (zstd
 * may not have compressed anything of a short window yet), the speed
 * counters only once they were used. */
static void window_reset(struct token_enc *e, struct wire_out *out, bool data, bool timed)
{
	e->win_in = 0;
	e->sample_len = 0;
	if (data) {
		e->win_out0 = e->comp_out;
		zstd_progress(e, &e->zs_in0, &e->zs_out0);
	}
	if (timed) {
		e->win_bytes = 0;
		e->win_comp_ns = 0;
		speed_window_start(e, out);
	}
}

/* This file's data in the window: what went into the compressor and what
 * came out. zstd says how much of it it has compressed (it works in
 * blocks of 128 KiB) without a flush, which would cost bytes; if that is
 * less than a first window, there is no evidence yet (returns false) and
 * the window goes on. zlib is flushed so that its output is all counted;
 * lz4 holds nothing back. */
static bool window_data(struct token_enc *e, struct wire_out *out, struct zadapt_window *w,
			bool *evidence)
{
	*evidence = true;
	if (e->alg == CPRES_ZSTD) {
		uint64_t in, o;
		zstd_progress(e, &in, &o);
		if (in - e->zs_in0 < ZADAPT_FIRST_WINDOW) {
			*evidence = false;
			return true;
		}
		w->in = in - e->zs_in0;
		w->out = o - e->zs_out0;
		return true;
	}
	if (e->need_flush && (e->alg == CPRES_ZLIB || e->alg == CPRES_ZLIBX) &&
	    !zlib_flush(e, out, false))
		return false;
	w->in = e->win_in;
	w->out = (uint64_t)(e->comp_out - e->win_out0);
	return true;
}

/* Close the window: tell zadapt what was seen, and, if `apply`, switch
 * the compressor to what it decides (not between files: nothing may go
 * out after a file's END_FLAG; token_enc_begin applies it then). With
 * `data`, this file's data is judged too. */
static bool window_end(struct token_enc *e, struct wire_out *out, bool data, bool apply)
{
	struct zadapt_window w = {0};
	bool evidence = true;

	if (data && !e->za.incompressible && !window_data(e, out, &w, &evidence))
		return false;
	if (!evidence) /* a first window that zstd has not got to yet */
		e->first_done = false;
	if (data && e->za.incompressible && e->sample_len) {
		/* while storing only the sample counts: no flush needed */
		int c = LZ4_compress_default((const char *)e->sample, (char *)e->sample_z,
					     (int)e->sample_len, LZ4_COMPRESSBOUND(ZADAPT_SAMPLE));
		w.sample_in = e->sample_len;
		w.sample_out = c > 0 ? (uint64_t)c : e->sample_len;
	}
	/* the speed is judged on long enough windows (across files; see
	 * zadapt.h): a file's short first window would be all start-up
	 * cost, and a window that sent less than a few output buffers would
	 * see the link's waiting in lumps */
	if (e->timed && e->win_bytes >= ZADAPT_WINDOW &&
	    (e->comp_out - e->spd_out0 >= ZADAPT_SPEED_OUT || e->win_bytes >= ZADAPT_SPEED_MAX_IN)) {
		w.timed = true;
		w.bytes = e->win_bytes;
		w.comp_ns = e->win_comp_ns;
		w.wait_ns = wire_out_wait_ns(out) - e->win_wait0;
		w.wall_ns = wall_clock_ns(e) - e->win_wall0;
		w.sent = (uint64_t)(e->comp_out - e->spd_out0);
	}
	bool changed = zadapt_window_end(&e->za, &w);
	/* the new window is measured from after the switch (a new frame) */
	if (changed && apply && !apply_setting(e, out, zadapt_setting(&e->za)))
		return false;
	/* while storing, the speed window starts afresh after every window,
	 * so that it measures only data the compressor worked on */
	window_reset(e, out, evidence || changed,
		     w.timed || changed || !e->timed || e->za.incompressible);
	return true;
}

/* While storing, keep the window's last ZADAPT_SAMPLE bytes: the sample
 * that tells when the data compresses again. */
static void keep_sample(struct token_enc *e, const uint8_t *p, size_t k, uint64_t target)
{
	uint64_t from = target > ZADAPT_SAMPLE ? target - ZADAPT_SAMPLE : 0;
	uint64_t end = e->win_in + k;

	if (!e->za.incompressible || end <= from)
		return;
	uint64_t start = e->win_in > from ? e->win_in : from;
	size_t off = (size_t)(start - from), len = (size_t)(end - start);
	if (off + len > ZADAPT_SAMPLE)
		len = ZADAPT_SAMPLE - off;
	memcpy(e->sample + off, p + (start - e->win_in), len);
	e->sample_len = off + len;
}

bool token_enc_begin(struct token_enc *e, struct wire_out *out, bool minimal)
{
	e->file_minimal = minimal;
	e->hist_gap = false;
	e->file_in = 0;
	e->first_done = false;
	e->need_flush = false;
	e->run_pending = false;
	e->last_run_end = 0;
	zadapt_file_begin(&e->za);
	e->win_in = 0;
	e->win_out0 = e->comp_out;
	e->sample_len = 0;
	if (e->win_bytes == 0) /* a speed window starts with its first data */
		speed_window_start(e, out);
	int target = minimal ? store_setting(e) : zadapt_setting(&e->za);
	switch (e->alg) {
	case CPRES_ZLIB:
	case CPRES_ZLIBX:
		e->pend_len = 0;
		e->marker_held = false;
		if (deflateReset(&e->z) != Z_OK)
			return enc_fail(e, "deflateReset", 0);
		if (!zlib_set_level(e, out, target))
			return false;
		break;
	case CPRES_ZSTD:
		if (!zstd_set_level(e, out, target))
			return false;
		zstd_progress(e, &e->zs_in0, &e->zs_out0);
		break;
	default:
		break;
	}
	e->setting = target;
	return true;
}

/* Compress one piece of literal data, timing the compressor (the time the
 * output spent waiting for the link inside the call is not its fault). */
static bool compress_piece(struct token_enc *e, struct wire_out *out, const uint8_t *p,
			   size_t n)
{
	/* Data judged incompressible is stored and its speed is not judged
	 * (zadapt.c): no clock reads, which are system calls on some VMs. */
	bool timed = e->timed && !e->za.incompressible;
	uint64_t t0 = timed ? comp_clock_ns(e) : 0;
	uint64_t wait0 = timed && e->threads > 0 ? wire_out_wait_ns(out) : 0;
	bool ok = true;

	switch (e->alg) {
	case CPRES_ZLIB:
	case CPRES_ZLIBX:
		/* deflate takes uInt lengths; pieces keep it simple */
		while (ok && n > 0) {
			size_t k = n > (1u << 30) ? (1u << 30) : n;
			e->z.next_in = (Bytef *)(uintptr_t)p;
			e->z.avail_in = (uInt)k;
			e->marker_held = false;
			ok = zlib_run(e, out, Z_NO_FLUSH);
			p += k;
			n -= k;
		}
		e->need_flush = true;
		break;
	case CPRES_ZSTD:
		if (e->zs_raw) {
			ok = zstd_raw_literal(e, out, p, n);
			break;
		}
		ok = zstd_run(e, out, p, n, ZSTD_e_continue);
		e->need_flush = true;
		break;
	case CPRES_LZ4:
		ok = lz4_literal(e, out, p, n);
		break;
	default:
		return enc_fail(e, "unknown algorithm", e->alg);
	}
	if (timed) {
		uint64_t spent = comp_clock_ns(e) - t0;
		if (e->threads > 0) { /* wall time: leave the waiting out */
			uint64_t waited = wire_out_wait_ns(out) - wait0;
			spent = spent > waited ? spent - waited : 0;
		}
		e->win_comp_ns += spent;
	}
	return ok;
}

bool token_enc_literal(struct token_enc *e, struct wire_out *out, const uint8_t *p, size_t n)
{
	if (n == 0)
		return true;
	if (e->alg == CPRES_NONE) {
		if (n > INT32_MAX)
			return enc_fail(e, "literal too long", 0);
		return wire_write_i32(out, (int32_t)n) && wire_write(out, p, n);
	}
	if (!put_run(e, out))
		return false;
	e->file_in += (int64_t)n;
	if (!adapting(e))
		return compress_piece(e, out, p, n);
	while (n > 0) {
		uint64_t target = window_target(e);
		size_t k = n;
		if (k > target - e->win_in)
			k = (size_t)(target - e->win_in);
		keep_sample(e, p, k, target);
		if (!compress_piece(e, out, p, k))
			return false;
		e->win_in += k;
		if (!e->za.incompressible)
			e->win_bytes += k;
		if (e->win_in >= target) {
			e->first_done = true;
			if (!window_end(e, out, true, true))
				return false;
		}
		p += k;
		n -= k;
	}
	return true;
}

/* Flush what literal data is pending before a token or the end. */
static bool flush_literals(struct token_enc *e, struct wire_out *out)
{
	if (e->alg == CPRES_ZSTD)
		return zstd_flush(e, out);
	if (e->marker_held && !e->need_flush) {
		/* the receiver supplies the marker itself */
		e->pend_len -= 4;
		e->marker_held = false;
		return zlib_send(e, out, 0);
	}
	if (!e->need_flush)
		return true;
	return zlib_flush(e, out, true);
}

bool token_enc_block(struct token_enc *e, struct wire_out *out, int32_t block,
		     const uint8_t *data, size_t len)
{
	if (block < 0)
		return enc_fail(e, "negative block index", block);
	if (e->alg == CPRES_NONE)
		return wire_write_i32(out, -(block + 1));
	if (!flush_literals(e, out))
		return false;
	if (e->run_pending && block == e->run_last + 1 &&
	    e->run_last - e->run_start < MAX_RUN) {
		e->run_last = block;
	} else {
		if (!put_run(e, out))
			return false;
		e->run_pending = true;
		e->run_start = e->run_last = block;
	}
	if (e->alg == CPRES_ZLIB && e->setting == 0) {
		/* Stored blocks never refer back, so the history may skip the
		 * block; but then this file must stay stored (the receiver's
		 * window has the block, ours would not). */
		e->hist_gap = true;
	} else if (e->alg == CPRES_ZLIB) {
		/* Into the history, in pieces of at most 0xFFFF bytes taken as
		 * see_deflate_token() takes them on the receiver: for protocol
		 * <= 30 every piece starts again at the block's start. */
		size_t off = 0, left = len;
		while (left > 0) {
			size_t n1 = left > STORED_MAX ? STORED_MAX : left;
			const uint8_t *src = data + (e->protocol >= 31 ? off : 0);
			int r = deflateSetDictionary(&e->z, src, (uInt)n1);
			if (r != Z_OK)
				return enc_fail(e, "deflateSetDictionary", r);
			left -= n1;
			off += n1;
		}
	}
	return true;
}

bool token_enc_end(struct token_enc *e, struct wire_out *out)
{
	if (e->alg == CPRES_NONE)
		return wire_write_i32(out, 0);
	if (!flush_literals(e, out) || !put_run(e, out) || !wire_write_u8(out, END_FLAG))
		return false;
	/* small files add up to windows too (for the speed rule); the
	 * decision takes effect with the next file */
	if (e->za.adaptive && e->win_bytes >= ZADAPT_WINDOW)
		return window_end(e, out, false, false);
	return true;
}

/* ------------------------------------------------------- the decoder */

struct token_dec {
	int alg, protocol;
	struct wire_error *err;

	int32_t count;      /* blocks in this file */
	int32_t rx_token;   /* the last block returned */
	int32_t run_left;   /* blocks of a run still to return */
	int64_t residue;    /* uncompressed: literal bytes still to read */

	uint8_t *cbuf;      /* a compressed chunk */
	uint8_t *dbuf;      /* decompressed output */
	size_t dcap;

	/* zlib, zlibx */
	z_stream z;
	bool z_ready;
	bool z_inflating;   /* input or output may be pending in inflate */
	bool z_data;        /* data came since the last sync marker */

	/* zstd */
	ZSTD_DCtx *zd;
	ZSTD_inBuffer zin;
	bool zs_inflating;
};

static int dec_fail(struct token_dec *d, const char *fmt, long v)
{
	wire_fail(d->err, RERR_STREAMIO, fmt, v);
	return TOKEN_ERROR;
}

struct token_dec *token_dec_new(int alg, int protocol, struct wire_error *err)
{
	struct token_dec *d = calloc(1, sizeof *d);

	if (!d) {
		wire_fail(err, RERR_MALLOC, "out of memory");
		return NULL;
	}
	d->alg = alg;
	d->protocol = protocol;
	d->err = err;
	switch (alg) {
	case CPRES_NONE: d->dcap = LITERAL_PIECE; break;
	case CPRES_LZ4: d->dcap = LZ4_OUT_MAX; break;
	case CPRES_ZSTD: d->dcap = ZSTD_DStreamOutSize() * 2; break;
	default: d->dcap = INFLATE_OUT; break;
	}
	d->dbuf = malloc(d->dcap);
	d->cbuf = malloc(TOKEN_MAX_DATA);
	if (!d->dbuf || !d->cbuf) {
		token_dec_free(d);
		wire_fail(err, RERR_MALLOC, "out of memory");
		return NULL;
	}
	if (alg == CPRES_ZLIB || alg == CPRES_ZLIBX) {
		if (inflateInit2(&d->z, -15) != Z_OK) {
			token_dec_free(d);
			wire_fail(err, RERR_STREAMIO, "inflate init failed");
			return NULL;
		}
		d->z_ready = true;
	} else if (alg == CPRES_ZSTD) {
		if (!(d->zd = ZSTD_createDCtx())) {
			token_dec_free(d);
			wire_fail(err, RERR_STREAMIO, "zstd init failed");
			return NULL;
		}
	}
	return d;
}

void token_dec_free(struct token_dec *d)
{
	if (!d)
		return;
	if (d->z_ready)
		inflateEnd(&d->z);
	ZSTD_freeDCtx(d->zd);
	free(d->cbuf);
	free(d->dbuf);
	free(d);
}

void token_dec_begin(struct token_dec *d, int32_t block_count)
{
	d->count = block_count;
	d->rx_token = 0;
	d->run_left = 0;
	d->residue = 0;
	if (d->z_ready) {
		inflateReset(&d->z);
		d->z_inflating = false;
		d->z_data = false;
	}
	/* zstd keeps its context (and any frame in progress) across files;
	 * a chunk is always consumed whole before its file ends. */
	d->zs_inflating = false;
}

/* The uncompressed stream (token.c: simple_recv_token). */
static int next_plain(struct token_dec *d, struct wire_in *in, const uint8_t **data,
		      size_t *len, int32_t *block)
{
	if (d->residue == 0) {
		int32_t t;
		if (!wire_read_i32(in, &t))
			return TOKEN_ERROR;
		if (t == 0)
			return TOKEN_END;
		if (t < 0) {
			*block = -(t + 1);
			return TOKEN_BLOCK;
		}
		d->residue = t;
	}
	/* the literal bytes are handed out where they lie in the input */
	size_t k = d->residue < (int64_t)d->dcap ? (size_t)d->residue : d->dcap;
	const uint8_t *p = wire_read_some(in, k, &k);
	if (!p)
		return TOKEN_ERROR;
	d->residue -= (int64_t)k;
	*data = p;
	*len = k;
	return TOKEN_DATA;
}

/* A token flag (not END_FLAG, not data): the block it names, checked
 * against the file's block count. */
static int token_flag(struct token_dec *d, struct wire_in *in, uint8_t flag, int32_t *block)
{
	int64_t t;

	if (flag & TOKEN_REL) {
		t = (int64_t)d->rx_token + (flag & 0x3F);
	} else if (flag == TOKEN_LONG || flag == TOKENRUN_LONG) {
		int32_t v;
		if (!wire_read_i32(in, &v))
			return TOKEN_ERROR;
		t = v;
	} else {
		return dec_fail(d, "invalid flag byte 0x%02lx in compressed stream", flag);
	}
	if (t < 0 || t >= d->count)
		return dec_fail(d, "invalid token number %ld in compressed stream", (long)t);
	d->rx_token = (int32_t)t;
	if (flag & TOKEN_REL ? flag & 0x40 : flag & 1) { /* TOKENRUN_*: a 16-bit count follows */
		uint8_t lo, hi;
		if (!wire_read_u8(in, &lo) || !wire_read_u8(in, &hi))
			return TOKEN_ERROR;
		int32_t run = lo | (hi << 8);
		if (run == 0 || t + run >= d->count)
			return dec_fail(d, "invalid token run of %ld blocks in compressed stream", run);
		d->run_left = run;
	}
	*block = d->rx_token;
	return TOKEN_BLOCK;
}

/* Read one chunk's payload: in place in the input buffer when it lies
 * whole there (valid until the next read), else copied into cbuf. */
static const uint8_t *read_chunk(struct token_dec *d, struct wire_in *in, uint8_t flag,
				 size_t *n)
{
	uint8_t lo;

	if (!wire_read_u8(in, &lo))
		return NULL;
	*n = ((size_t)(flag & 0x3F) << 8) | lo;
	return wire_read_view(in, d->cbuf, *n);
}

static int next_zlib(struct token_dec *d, struct wire_in *in, const uint8_t **data,
		     size_t *len, int32_t *block)
{
	for (;;) {
		if (d->z_inflating) {
			uInt had = d->z.avail_in;
			d->z.next_out = d->dbuf;
			d->z.avail_out = (uInt)d->dcap;
			int r = inflate(&d->z, Z_NO_FLUSH);
			size_t n = d->dcap - d->z.avail_out;
			if (r == Z_STREAM_END)
				return dec_fail(d, "compressed data ended the deflate stream (%ld)", r);
			if (r != Z_OK && r != Z_BUF_ERROR)
				return dec_fail(d, "inflate returned %ld", r);
			if (n == 0) {
				if (d->z.avail_in != 0 && d->z.avail_in == had)
					return dec_fail(d, "inflate made no progress (%ld)", r);
				if (d->z.avail_in == 0)
					d->z_inflating = false;
				continue;
			}
			*data = d->dbuf;
			*len = n;
			return TOKEN_DATA;
		}
		uint8_t flag;
		if (!wire_read_u8(in, &flag))
			return TOKEN_ERROR;
		if ((flag & 0xC0) == DEFLATED_DATA) {
			size_t n;
			const uint8_t *chunk = read_chunk(d, in, flag, &n);
			if (!chunk)
				return TOKEN_ERROR;
			d->z.next_in = (Bytef *)(uintptr_t)chunk;
			d->z.avail_in = (uInt)n;
			d->z_inflating = n > 0;
			if (n)
				d->z_data = true;
			continue;
		}
		if (d->z_data) {
			/* Everything sent so far is inflated and drained; the
			 * sender left out the sync flush's 00 00 FF FF. */
			static const uint8_t marker[4] = {0, 0, 0xFF, 0xFF};
			if (!inflateSyncPoint(&d->z))
				return dec_fail(d, "decompressor lost sync (%ld)", 0);
			d->z.next_in = (Bytef *)(uintptr_t)marker;
			d->z.avail_in = 4;
			d->z.next_out = d->dbuf;
			d->z.avail_out = (uInt)d->dcap;
			int r = inflate(&d->z, Z_SYNC_FLUSH);
			if (r != Z_OK || d->z.avail_in != 0 || d->z.avail_out != d->dcap)
				return dec_fail(d, "inflate of the sync marker returned %ld", r);
			d->z_data = false;
		}
		if (flag == END_FLAG)
			return TOKEN_END;
		return token_flag(d, in, flag, block);
	}
}

/* Take the chunk that follows when it is already buffered, so that one
 * call fills the output buffer from several chunks (and the receiver
 * writes it in one piece). */
static bool zstd_next_chunk_buffered(struct token_dec *d, struct wire_in *in)
{
	uint8_t flag;

	if (!wire_peek_buffered(in, &flag) || (flag & 0xC0) != DEFLATED_DATA)
		return false;
	if (!wire_read_u8(in, &flag))
		return false;
	size_t n;
	const uint8_t *chunk = read_chunk(d, in, flag, &n);
	if (!chunk)
		return false;
	d->zin = (ZSTD_inBuffer){chunk, n, 0};
	d->zs_inflating = n > 0;
	return true;
}

/* Decompress the chunks in hand into dbuf until it is full or the input
 * runs out. Returns the bytes made, or -1 on error. */
static ssize_t zstd_inflate(struct token_dec *d, struct wire_in *in)
{
	ZSTD_outBuffer ob = {d->dbuf, d->dcap, 0};

	while (d->zs_inflating) {
		size_t had_in = d->zin.pos, had_out = ob.pos;
		size_t r = ZSTD_decompressStream(d->zd, &ob, &d->zin);
		if (ZSTD_isError(r)) {
			wire_fail(d->err, RERR_STREAMIO, "zstd decompression failed: %s",
				  ZSTD_getErrorName(r));
			return -1;
		}
		if (d->zin.pos == d->zin.size && ob.pos < ob.size) {
			d->zs_inflating = false;
			if (!zstd_next_chunk_buffered(d, in) && d->err->code)
				return -1;
			continue;
		}
		if (ob.pos == had_out && d->zin.pos == had_in) {
			dec_fail(d, "zstd decompression made no progress (%ld)", 0);
			return -1;
		}
		if (ob.pos == ob.size)
			break;
	}
	return (ssize_t)ob.pos;
}

static int next_zstd(struct token_dec *d, struct wire_in *in, const uint8_t **data,
		     size_t *len, int32_t *block)
{
	for (;;) {
		if (d->zs_inflating) {
			ssize_t n = zstd_inflate(d, in);
			if (n < 0)
				return TOKEN_ERROR;
			if (n == 0)
				continue;
			*data = d->dbuf;
			*len = (size_t)n;
			return TOKEN_DATA;
		}
		uint8_t flag;
		if (!wire_read_u8(in, &flag))
			return TOKEN_ERROR;
		if ((flag & 0xC0) == DEFLATED_DATA) {
			size_t n;
			const uint8_t *chunk = read_chunk(d, in, flag, &n);
			if (!chunk)
				return TOKEN_ERROR;
			d->zin = (ZSTD_inBuffer){chunk, n, 0};
			d->zs_inflating = n > 0;
			continue;
		}
		if (flag == END_FLAG)
			return TOKEN_END;
		return token_flag(d, in, flag, block);
	}
}

static int next_lz4(struct token_dec *d, struct wire_in *in, const uint8_t **data,
		    size_t *len, int32_t *block)
{
	for (;;) {
		uint8_t flag;
		if (!wire_read_u8(in, &flag))
			return TOKEN_ERROR;
		if ((flag & 0xC0) == DEFLATED_DATA) {
			size_t n;
			const uint8_t *chunk = read_chunk(d, in, flag, &n);
			if (!chunk)
				return TOKEN_ERROR;
			if (n == 0)
				continue;
			int r = LZ4_decompress_safe((const char *)chunk, (char *)d->dbuf, (int)n,
						    (int)d->dcap);
			if (r < 0)
				return dec_fail(d, "lz4 decompression failed (%ld)", r);
			if (r == 0)
				continue;
			*data = d->dbuf;
			*len = (size_t)r;
			return TOKEN_DATA;
		}
		if (flag == END_FLAG)
			return TOKEN_END;
		return token_flag(d, in, flag, block);
	}
}

int token_dec_next(struct token_dec *d, struct wire_in *in, const uint8_t **data, size_t *len,
		   int32_t *block)
{
	if (d->run_left > 0) {
		d->run_left--;
		*block = ++d->rx_token;
		return TOKEN_BLOCK;
	}
	switch (d->alg) {
	case CPRES_NONE: return next_plain(d, in, data, len, block);
	case CPRES_ZLIB:
	case CPRES_ZLIBX: return next_zlib(d, in, data, len, block);
	case CPRES_ZSTD: return next_zstd(d, in, data, len, block);
	case CPRES_LZ4: return next_lz4(d, in, data, len, block);
	default: return dec_fail(d, "unknown compression %ld", d->alg);
	}
}

/* Inflate p[0..n) as stored blocks, throwing the output away. */
static bool see_stored(struct token_dec *d, const uint8_t *p, size_t n)
{
	while (n > 0) {
		size_t k = n > STORED_MAX ? STORED_MAX : n;
		uint8_t hdr[5] = {0, (uint8_t)k, (uint8_t)(k >> 8), (uint8_t)~k, (uint8_t)(~k >> 8)};
		const uint8_t *parts[2] = {hdr, p};
		size_t lens[2] = {5, k};
		for (int i = 0; i < 2; i++) {
			d->z.next_in = (Bytef *)(uintptr_t)parts[i];
			d->z.avail_in = (uInt)lens[i];
			do {
				d->z.next_out = d->dbuf;
				d->z.avail_out = (uInt)d->dcap;
				int r = inflate(&d->z, Z_SYNC_FLUSH);
				if (r != Z_OK && r != Z_BUF_ERROR) {
					dec_fail(d, "inflate (token) returned %ld", r);
					return false;
				}
				if (r == Z_BUF_ERROR && d->z.avail_in != 0) {
					dec_fail(d, "inflate (token) made no progress (%ld)", r);
					return false;
				}
			} while (d->z.avail_in != 0 || d->z.avail_out == 0);
		}
		p += k;
		n -= k;
	}
	return true;
}

bool token_dec_wants_blocks(const struct token_dec *d)
{
	return d->alg == CPRES_ZLIB;
}

bool token_dec_see(struct token_dec *d, const uint8_t *p, size_t n, size_t off, size_t blk_len)
{
	if (d->alg != CPRES_ZLIB || n == 0)
		return true;
	if (d->protocol >= 31)
		return see_stored(d, p, n);
	/* Protocol <= 30 (see_deflate_token's old bug, kept on the wire):
	 * every piece of at most 0xFFFF bytes is taken from the block's start.
	 * Only the last 32 KiB reach the window, so the last full piece and the
	 * final one are enough. */
	if (off != 0)
		return true;
	if (blk_len <= STORED_MAX)
		return see_stored(d, p, n < blk_len ? n : blk_len);
	if (n < STORED_MAX) {
		dec_fail(d, "internal: short first piece of a block (%ld)", (long)n);
		return false;
	}
	size_t rem = blk_len % STORED_MAX;
	return see_stored(d, p, STORED_MAX) && (rem == 0 || see_stored(d, p, rem));
}
