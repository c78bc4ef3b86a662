/*
 * The sender's block search (match.c: hash_search, matched): slide a
 * rolling checksum over the file, look each weak sum up, confirm with the
 * strong sum, and emit literal runs and block tokens.
 *
 * Two exact hash tables keep every lookup O(1) whatever the receiver sent:
 * one holds the distinct weak sums (the cheap per-byte test), the other the
 * distinct (weak, strong) pairs. Identical blocks collapse into one pair,
 * and the next consecutive block is tried first, so a basis of 40,000
 * identical blocks is matched as fast as any other.
 */
#include "proto/match.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/fileio.h"

#define CHUNK_SIZE 32768        /* rsync's largest literal token */
#define READ_AHEAD (256 * 1024)

static size_t table_size(size_t n)
{
	size_t cap = 16;

	while (cap < n * 2)
		cap *= 2;
	return cap;
}

static uint32_t mix32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352d;
	x ^= x >> 15;
	x *= 0x846ca68b;
	x ^= x >> 16;
	return x;
}

/* The filter before the weak-sum table has about WEAK_FILTER_PER_BLOCK
 * bits per block (one bit set per distinct sum: ~6% false positives), at
 * least 64 Ki bits and at most 16 Mi bits (2 MiB). A fixed 64 Ki bits was
 * nearly all ones for a 1 GiB PostgreSQL segment in 8 KiB blocks (131,072
 * blocks), and then every byte slid over a changed page cost two cache
 * misses in the table. */
#define WEAK_FILTER_PER_BLOCK 16
#define WEAK_FILTER_MIN_LOG2 16
#define WEAK_FILTER_MAX_LOG2 24

static unsigned filter_log2(size_t blocks)
{
	unsigned lg = WEAK_FILTER_MIN_LOG2;

	while (lg < WEAK_FILTER_MAX_LOG2 && ((size_t)1 << lg) < blocks * WEAK_FILTER_PER_BLOCK)
		lg++;
	return lg;
}

/* The filter bit of a weak sum: the high bits of its mix (the table uses
 * the low ones). */
static inline uint32_t weak_tag(const struct match_index *m, uint32_t mixed)
{
	return mixed >> m->filter_shift;
}

static uint32_t pair_hash(uint32_t sum1, const uint8_t *s2, int32_t len)
{
	uint32_t h = mix32(sum1);

	for (int32_t i = 0; i < len; i++)
		h = (h ^ s2[i]) * 16777619u;
	return h;
}

bool match_index_build(struct match_index *m, const struct sum_head *h, uint32_t *sum1,
		       uint8_t *sum2)
{
	memset(m, 0, sizeof *m);
	m->h = *h;
	m->sum1 = sum1;
	m->sum2 = sum2;
	m->weak_cap = table_size((size_t)h->count);
	m->pair_cap = m->weak_cap;
	unsigned lg = filter_log2((size_t)h->count);
	m->filter_shift = 32 - lg;
	m->weak = calloc(m->weak_cap, sizeof *m->weak);
	m->weak_bits = calloc(((size_t)1 << lg) / 8, 1);
	m->pairs = malloc(m->pair_cap * sizeof *m->pairs);
	if (!m->weak || !m->weak_bits || !m->pairs) {
		match_index_free(m);
		return false;
	}
	for (size_t i = 0; i < m->pair_cap; i++)
		m->pairs[i] = -1;
	for (int32_t b = 0; b < h->count; b++) {
		uint32_t s = sum1[b];
		uint32_t mixed = mix32(s);
		if (s == 0) {
			m->weak_has_zero = true;
		} else {
			size_t w = mixed & (m->weak_cap - 1);
			while (m->weak[w] && m->weak[w] != s)
				w = (w + 1) & (m->weak_cap - 1);
			m->weak[w] = s;
		}
		uint32_t tag = weak_tag(m, mixed);
		m->weak_bits[tag >> 3] |= (uint8_t)(1u << (tag & 7));
		const uint8_t *s2 = sum2 + (size_t)b * (size_t)h->s2length;
		size_t p = pair_hash(s, s2, h->s2length) & (m->pair_cap - 1);
		bool dup = false;
		while (m->pairs[p] >= 0) {
			int32_t o = m->pairs[p];
			if (sum1[o] == s && memcmp(sum2 + (size_t)o * (size_t)h->s2length, s2,
						   (size_t)h->s2length) == 0) {
				dup = true;
				break;
			}
			p = (p + 1) & (m->pair_cap - 1);
		}
		if (!dup)
			m->pairs[p] = b;
	}
	return true;
}

void match_index_free(struct match_index *m)
{
	free(m->weak);
	free(m->weak_bits);
	free(m->pairs);
	m->weak_bits = NULL;
	m->weak = NULL;
	m->pairs = NULL;
}

static bool weak_present(const struct match_index *m, uint32_t s)
{
	uint32_t mixed = mix32(s);
	uint32_t tag = weak_tag(m, mixed);
	if (!(m->weak_bits[tag >> 3] & (1u << (tag & 7))))
		return false;
	if (s == 0)
		return m->weak_has_zero;
	/* 0 marks an empty slot: one array, one cache line per probe. */
	size_t w = mixed & (m->weak_cap - 1);

	while (m->weak[w]) {
		if (m->weak[w] == s)
			return true;
		w = (w + 1) & (m->weak_cap - 1);
	}
	return false;
}

static int32_t block_len(const struct sum_head *h, int32_t b)
{
	return b == h->count - 1 && h->remainder ? h->remainder : h->blength;
}

/* A block matching (weak, strong) of the given length; prefer `hint`. */
static int32_t find_block(const struct match_index *m, uint32_t weak, const uint8_t *strong,
			  int32_t len, int32_t hint)
{
	const struct sum_head *h = &m->h;
	size_t n2 = (size_t)h->s2length;

	if (hint >= 0 && hint < h->count && m->sum1[hint] == weak && block_len(h, hint) == len &&
	    memcmp(m->sum2 + (size_t)hint * n2, strong, n2) == 0)
		return hint;
	size_t p = pair_hash(weak, strong, h->s2length) & (m->pair_cap - 1);
	while (m->pairs[p] >= 0) {
		int32_t b = m->pairs[p];
		if (m->sum1[b] == weak && memcmp(m->sum2 + (size_t)b * n2, strong, n2) == 0) {
			/* The pair table keeps one block per distinct pair; a block of
			 * another length with the same sums (the short last block) is
			 * checked directly. */
			if (block_len(h, b) == len)
				return b;
			int32_t last = h->count - 1;
			if (block_len(h, last) == len && m->sum1[last] == weak &&
			    memcmp(m->sum2 + (size_t)last * n2, strong, n2) == 0)
				return last;
		}
		p = (p + 1) & (m->pair_cap - 1);
	}
	return -1;
}

/* ---- the sliding window over the file ---- */

struct window {
	int fd;
	uint8_t *buf;
	size_t cap;
	int64_t buf_off;     /* file offset of buf[0] */
	size_t len;          /* valid bytes in buf */
	int64_t file_len;
	bool eof;
};

/* Make [from, to) available; data before `keep` may be dropped. */
static bool window_need(struct window *w, int64_t keep, int64_t to)
{
	if (to > w->file_len)
		to = w->file_len;
	if (to <= w->buf_off + (int64_t)w->len)
		return true;
	if (keep > w->buf_off) {
		size_t drop = (size_t)(keep - w->buf_off);
		if (drop > w->len)
			drop = w->len;
		memmove(w->buf, w->buf + drop, w->len - drop);
		w->len -= drop;
		w->buf_off += (int64_t)drop;
	}
	size_t need = (size_t)(to - w->buf_off);
	if (need + READ_AHEAD > w->cap) {
		size_t cap = need + READ_AHEAD;
		uint8_t *b = realloc(w->buf, cap);
		if (!b)
			return false;
		w->buf = b;
		w->cap = cap;
	}
	while (w->len < need || (w->len < w->cap && !w->eof && w->len < need + READ_AHEAD / 2)) {
		ssize_t r = pread(w->fd, w->buf + w->len, w->cap - w->len, w->buf_off + (int64_t)w->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			w->eof = true;
			if (w->len < need) {
				/* The file shrank: what is missing reads as zeros, and
				 * the whole-file sum the receiver checks will differ. */
				memset(w->buf + w->len, 0, need - w->len);
				w->len = need;
				return r == 0 || errno != EIO ? true : false;
			}
			break;
		}
		w->len += (size_t)r;
	}
	return true;
}

static const uint8_t *at(const struct window *w, int64_t off)
{
	return w->buf + (off - w->buf_off);
}

/* ---- token output ---- */

static bool send_literal(struct match_out *mo, const uint8_t *p, int64_t n)
{
	while (n > 0) {
		int32_t k = n > CHUNK_SIZE ? CHUNK_SIZE : (int32_t)n;
		if (!mo->emit_literal(mo->ctx, p, (size_t)k))
			return false;
		p += k;
		n -= k;
	}
	return true;
}

bool match_send_file(const struct match_index *m, int fd, int64_t file_len, int32_t seed_unused,
		     struct match_out *mo)
{
	const struct sum_head *h = m ? &m->h : NULL;
	struct window w = {.fd = fd, .file_len = file_len};
	int64_t lit_start = 0, off = 0;
	bool ok = true;
	(void)seed_unused;

	if (!h || h->count == 0 || h->blength == 0) {
		/* No basis: everything is literal. */
		while (ok && off < file_len) {
			int64_t to = off + READ_AHEAD < file_len ? off + READ_AHEAD : file_len;
			ok = window_need(&w, off, to) && mo->feed(mo->ctx, at(&w, off), (size_t)(to - off)) &&
			     send_literal(mo, at(&w, off), to - off);
			off = to;
		}
		free(w.buf);
		return ok;
	}
	int64_t blen = h->blength;
	uint8_t strong[CSUM_MAX_DIGEST];
	struct rolling r;
	bool have_roll = false;
	int32_t hint = 0;

	while (ok && off < file_len) {
		int64_t wlen = file_len - off < blen ? file_len - off : blen;
		if (!window_need(&w, lit_start, off + wlen + 1)) {
			ok = false;
			break;
		}
		if (!have_roll) {
			rolling_init(&r, at(&w, off), (size_t)wlen);
			have_roll = true;
		}
		uint32_t weak = rolling_value(&r);
		int32_t b = -1;
		if (weak_present(m, weak)) {
			memset(strong, 0, sizeof strong);
			mo->strong(mo->ctx, at(&w, off), (size_t)wlen, strong);
			b = find_block(m, weak, strong, (int32_t)wlen, hint);
		}
		if (b >= 0) {
			ok = send_literal(mo, at(&w, lit_start), off - lit_start) &&
			     mo->feed(mo->ctx, at(&w, lit_start), (size_t)(off + wlen - lit_start)) &&
			     mo->emit_block(mo->ctx, b, at(&w, off), (size_t)wlen);
			off += wlen;
			lit_start = off;
			hint = b + 1;
			have_roll = false;
			continue;
		}
		/* Slide by one byte; near the end the window shrinks. */
		uint8_t out = *at(&w, off);
		if (off + wlen < file_len) {
			rolling_roll(&r, out, *at(&w, off + wlen));
		} else {
			r.s1 -= (uint32_t)(int8_t)out;
			r.s2 -= (uint32_t)r.n * (uint32_t)(int8_t)out;
			r.n--;
		}
		off++;
		if (off - lit_start >= CHUNK_SIZE) {
			ok = mo->feed(mo->ctx, at(&w, lit_start), (size_t)(off - lit_start)) &&
			     send_literal(mo, at(&w, lit_start), off - lit_start);
			lit_start = off;
		}
	}
	if (ok && lit_start < file_len) {
		ok = window_need(&w, lit_start, file_len) &&
		     mo->feed(mo->ctx, at(&w, lit_start), (size_t)(file_len - lit_start)) &&
		     send_literal(mo, at(&w, lit_start), file_len - lit_start);
	}
	free(w.buf);
	return ok;
}
