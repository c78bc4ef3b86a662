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
 *
 * Each algorithm is a codec (struct token_codec, token_int.h) in a file
 * of its own: token_zlib.c, token_zstd.c, token_lz4.c. This file holds
 * what all streams share: names and levels, the skip list, runs and
 * chunks, the adaptive rule's windows, and the plain (uncompressed) stream.
 */
#include "proto/delta/token.h"

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lz4.h>

#include "proto/delta/token_int.h"
#include "proto/base/wildmatch.h"

/* ------------------------------------------------------------ names */

static int none_next(struct token_dec *d, struct wire_in *in, const uint8_t **data, size_t *len,
		     int32_t *block);
static size_t none_dec_cap(void);

/* The uncompressed stream: not a compressor, but negotiated like one. */
static const struct token_codec token_codec_none = {
	.alg = CPRES_NONE,
	.name = "none",
	.dec_cap = none_dec_cap,
	.next = none_next,
};

/* In the order rsync offers them. */
static const struct token_codec *const codecs[] = {
	&token_codec_zstd, &token_codec_lz4, &token_codec_zlibx, &token_codec_zlib, &token_codec_none,
};

/* An algorithm this build does not know: every operation missing. */
static const struct token_codec token_codec_unknown = {.alg = -1, .name = "UNKNOWN"};

static const struct token_codec *codec_of(int alg)
{
	for (size_t i = 0; i < sizeof codecs / sizeof codecs[0]; i++)
		if (codecs[i]->alg == alg)
			return codecs[i];
	return &token_codec_unknown;
}

int token_alg_by_name(const char *name)
{
	for (size_t i = 0; i < sizeof codecs / sizeof codecs[0]; i++)
		if (strcasecmp(name, codecs[i]->name) == 0)
			return codecs[i]->alg;
	return -2;
}

const char *token_alg_name(int alg)
{
	return codec_of(alg)->name;
}

int token_resolve_level(int *alg, int level)
{
	const struct token_codec *c = codec_of(*alg);

	if (!c->resolve_level)
		return 0;
	level = c->resolve_level(level);
	if (level == TOKEN_LEVEL_OFF) { /* zlib's level 0: no compression at all */
		*alg = CPRES_NONE;
		return 0;
	}
	return level;
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

/* Is `setting` this algorithm's "no compression effort" one? */
static bool setting_is_store(const struct token_enc *e, int setting)
{
	return e->codec->is_store && e->codec->is_store(setting);
}

struct token_enc *token_enc_new(int alg, int level, bool adaptive, int protocol,
				struct wire_error *err)
{
	struct token_enc *e = calloc(1, sizeof *e);

	if (!e) {
		wire_fail(err, RERR_MALLOC, "out of memory");
		return NULL;
	}
	e->codec = codec_of(alg);
	e->alg = alg;
	e->level = level;
	e->protocol = protocol;
	e->err = err;
	e->left = UINT64_MAX;
	zadapt_init(&e->za, alg, level, adaptive, ZSTD_minCLevel());
	e->setting = zadapt_setting(&e->za);
	e->obuf = malloc(2 + (size_t)LZ4_COMPRESSBOUND(TOKEN_MAX_DATA));
	e->sample = malloc(ZADAPT_SAMPLE);
	e->sample_z = malloc((size_t)LZ4_COMPRESSBOUND(ZADAPT_SAMPLE));
	if (!e->obuf || !e->sample || !e->sample_z) {
		token_enc_free(e);
		wire_fail(err, RERR_MALLOC, "out of memory");
		return NULL;
	}
	if (e->codec->enc_init && !e->codec->enc_init(e, level)) {
		token_enc_free(e);
		return NULL;
	}
	return e;
}

void token_enc_free(struct token_enc *e)
{
	if (!e)
		return;
	if (e->codec->enc_free)
		e->codec->enc_free(e);
	free(e->obuf);
	free(e->sample);
	free(e->sample_z);
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

void token_enc_assume_link(struct token_enc *e, uint64_t ns_per_mib)
{
	zadapt_assume_link(&e->za, ns_per_mib);
}

void token_enc_set_link_floor(struct token_enc *e, uint64_t ns_per_mib)
{
	zadapt_link_floor(&e->za, ns_per_mib);
}

void token_enc_set_left(struct token_enc *e, uint64_t left)
{
	e->left = left;
}

void token_enc_add_idle(struct token_enc *e, uint64_t ns)
{
	e->idle_ns += ns;
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

/* A speed window starts: the link's waiting, the wall clock, the output and
 * what waits to leave (the backlog, where readable) are counted from here. */
static void speed_window_start(struct token_enc *e, struct wire_out *out)
{
	e->win_wait0 = wire_out_wait_ns(out);
	e->win_wall0 = wall_clock_ns(e);
	e->win_idle0 = e->idle_ns;
	e->spd_out0 = e->comp_out;
	e->win_backlog_known = !e->clock &&
			       wire_out_backlog(out, &e->win_q0, &e->win_buffered0);
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
	if (e->codec->set_level && !e->codec->set_level(e, out, setting))
		return false;
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
		if (e->codec->window_start)
			e->codec->window_start(e);
	}
	if (timed) {
		e->win_bytes = 0;
		e->win_comp_ns = 0;
		speed_window_start(e, out);
	}
}

/* The output's queue over the timed window w: how much waited to leave
 * at its start and end and, on TCP, whether the receiver's window (not
 * the link) held the output back for 1/ZADAPT_SATURATED of its time or
 * more. */
static void window_backlog(const struct token_enc *e, struct wire_out *out,
			   struct zadapt_window *w)
{
	struct sendq_state q1;
	uint64_t buffered1;

	if (!e->win_backlog_known || !wire_out_backlog(out, &q1, &buffered1))
		return;
	w->backlog_known = true;
	w->sockq0 = e->win_q0.queued;
	w->sockq1 = q1.queued;
	w->backlog0 = e->win_q0.queued + e->win_buffered0;
	w->backlog1 = q1.queued + buffered1;
	if (q1.tcp && e->win_q0.tcp && q1.rwnd_limited_us >= e->win_q0.rwnd_limited_us) {
		uint64_t limited_ns = (q1.rwnd_limited_us - e->win_q0.rwnd_limited_us) * 1000u;
		w->receiver_limited = limited_ns * ZADAPT_SATURATED >= w->wall_ns;
	}
	if (q1.tcp && q1.delivery_rate > 0 && !q1.rate_app_limited &&
	    q1.queued >= ZADAPT_RATE_QUEUED)
		w->delivery_ns_per_mib = 1048576ull * 1000000000u / q1.delivery_rate;
}

/* This file's data in the window: what went into the compressor and what
 * came out (the codec may say otherwise: zstd counts what it has really
 * compressed, zlib is flushed first; lz4 holds nothing back). *evidence
 * false: too little to judge yet, the window goes on. */
static bool window_data(struct token_enc *e, struct wire_out *out, struct zadapt_window *w,
			bool *evidence)
{
	*evidence = true;
	if (e->codec->window_data)
		return e->codec->window_data(e, out, w, evidence);
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

	if (e->left != UINT64_MAX) {
		w.left_known = true;
		w.left = e->left > (uint64_t)e->file_in ? e->left - (uint64_t)e->file_in : 0;
	}

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
		w.idle_ns = e->idle_ns - e->win_idle0;
		w.sent = (uint64_t)(e->comp_out - e->spd_out0);
		window_backlog(e, out, &w);
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
	if (e->codec->enc_begin && !e->codec->enc_begin(e, out, target))
		return false;
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

	if (!e->codec->compress)
		return tok_enc_fail(e, "unknown algorithm", e->alg);
	bool ok = e->codec->compress(e, out, p, n);
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
			return tok_enc_fail(e, "literal too long", 0);
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
	return !e->codec->flush || e->codec->flush(e, out);
}

bool token_enc_block(struct token_enc *e, struct wire_out *out, int32_t block,
		     const uint8_t *data, size_t len)
{
	if (block < 0)
		return tok_enc_fail(e, "negative block index", block);
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
	return !e->codec->enc_block || e->codec->enc_block(e, data, len);
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

struct token_dec *token_dec_new(int alg, int protocol, struct wire_error *err)
{
	struct token_dec *d = calloc(1, sizeof *d);

	if (!d) {
		wire_fail(err, RERR_MALLOC, "out of memory");
		return NULL;
	}
	d->codec = codec_of(alg);
	d->alg = alg;
	d->protocol = protocol;
	d->err = err;
	d->dcap = d->codec->dec_cap ? d->codec->dec_cap() : INFLATE_OUT;
	d->dbuf = malloc(d->dcap);
	d->cbuf = malloc(TOKEN_MAX_DATA);
	if (!d->dbuf || !d->cbuf) {
		token_dec_free(d);
		wire_fail(err, RERR_MALLOC, "out of memory");
		return NULL;
	}
	if (d->codec->dec_init && !d->codec->dec_init(d)) {
		token_dec_free(d);
		return NULL;
	}
	return d;
}

void token_dec_free(struct token_dec *d)
{
	if (!d)
		return;
	if (d->codec->dec_free)
		d->codec->dec_free(d);
	free(d->cbuf);
	free(d->dbuf);
	free(d);
}

void token_dec_reset(struct token_dec *d, int protocol, struct wire_error *err)
{
	d->protocol = protocol;
	d->err = err;
	d->count = d->rx_token = d->run_left = 0;
	d->residue = 0;
	if (d->codec->dec_reset)
		d->codec->dec_reset(d);
}

void token_dec_begin(struct token_dec *d, int32_t block_count)
{
	d->count = block_count;
	d->rx_token = 0;
	d->run_left = 0;
	d->residue = 0;
	if (d->codec->dec_begin)
		d->codec->dec_begin(d);
}

static size_t none_dec_cap(void)
{
	return LITERAL_PIECE;
}

/* The uncompressed stream (token.c: simple_recv_token). */
static int none_next(struct token_dec *d, struct wire_in *in, const uint8_t **data,
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

int token_dec_next(struct token_dec *d, struct wire_in *in, const uint8_t **data, size_t *len,
		   int32_t *block)
{
	if (d->run_left > 0) {
		d->run_left--;
		*block = ++d->rx_token;
		return TOKEN_BLOCK;
	}
	if (!d->codec->next)
		return tok_dec_fail(d, "unknown compression %ld", d->alg);
	return d->codec->next(d, in, data, len, block);
}

bool token_dec_wants_blocks(const struct token_dec *d)
{
	return d->codec->dec_see != NULL;
}

bool token_dec_see(struct token_dec *d, const uint8_t *p, size_t n, size_t off, size_t blk_len)
{
	if (!d->codec->dec_see || n == 0)
		return true;
	return d->codec->dec_see(d, p, n, off, blk_len);
}
