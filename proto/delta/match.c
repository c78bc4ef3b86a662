/*
 * The sender's block search (match.c: hash_search, matched): slide a
 * rolling checksum over the file, look each weak sum up, confirm with the
 * strong sum, and emit literal runs and block tokens.
 *
 * Two hash tables, keyed with a per-index secret and probed a bounded
 * number of slots, keep every lookup O(1) whatever the receiver sent:
 * one holds the distinct weak sums (the cheap per-byte test), the other the
 * distinct (weak, strong) pairs. Identical blocks collapse into one pair,
 * and the next consecutive block is tried first, so a basis of 40,000
 * identical blocks is matched as fast as any other.
 */
#include "proto/delta/match.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/base/fileio.h"
#include "proto/base/hashkey.h"

#define CHUNK_SIZE 32768        /* rsync's largest literal token */
#define READ_AHEAD (256 * 1024)

static size_t table_size(size_t n)
{
	size_t cap = 16;

	while (cap < n * 2)
		cap *= 2;
	return cap;
}

/* Past this many slots from its home, a sum is not stored (it is then
 * never matched: its data goes as literal bytes) and a lookup gives up.
 * With the keyed hash and a table at most half full, the longest probe
 * measured is 28 slots for 2^18 random sums and about 55 for 2^25; the
 * bound only matters when the key leaks, and keeps every lookup O(1)
 * even then. */
#define PROBE_LIMIT 256

/* Fresh secret multipliers and offsets for one index. The peer chooses
 * the sums: with a fixed hash it could put them all in one slot and make
 * every insert and lookup walk the whole table (hash flooding). */
static void match_key_init(struct match_key *k)
{
	uint64_t r[5];

	hashkey_fill(r, 5, k);
	k->filter_mul = r[0] | 1;
	k->filter_add = r[1];
	k->slot_mul = r[2] | 1;
	k->slot_add = r[3];
	k->pair_mul = r[4] | 1;
}

/* The weak-sum table's hash of s (use the low bits). */
static inline uint64_t weak_hash(const struct match_key *k, uint32_t s)
{
	return fmix64(k->slot_mul * s + k->slot_add);
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

/* The filter bit of a weak sum: the top bits of a keyed multiply-add
 * (Dietzfelbinger's multiply-add-shift, 2-universal for 32-bit sums).
 * One multiply: this runs for every byte of literal data. */
static inline uint32_t weak_tag(const struct match_key *k, unsigned shift, uint32_t s)
{
	return (uint32_t)((k->filter_mul * s + k->filter_add) >> shift);
}

/* The pair table's hash of (weak sum, strong-sum prefix). */
static uint64_t pair_hash(const struct match_key *k, uint32_t sum1, const uint8_t *s2,
			  int32_t len)
{
	uint64_t h = weak_hash(k, sum1);

	for (int32_t i = 0; i < len; i += 8) {
		uint64_t chunk = 0;
		memcpy(&chunk, s2 + i, (size_t)(len - i < 8 ? len - i : 8));
		h = fmix64((h ^ chunk) * k->pair_mul);
	}
	return h;
}

/* Add nonzero weak sum s, once; dropped past PROBE_LIMIT. */
static void weak_insert(struct match_index *m, uint32_t s)
{
	size_t w = weak_hash(&m->key, s) & (m->weak_cap - 1);

	for (int i = 0; i < PROBE_LIMIT; i++) {
		if (m->weak[w] == s)
			return;
		if (!m->weak[w]) {
			m->weak[w] = s;
			return;
		}
		w = (w + 1) & (m->weak_cap - 1);
	}
	m->dropped++;
}

/* Add block b's (weak, strong) pair unless an earlier block has it;
 * dropped past PROBE_LIMIT. */
static void pair_insert(struct match_index *m, int32_t b)
{
	size_t n2 = (size_t)m->h.s2length;
	uint32_t s = m->sum1[b];
	const uint8_t *s2 = m->sum2 + (size_t)b * n2;
	size_t p = pair_hash(&m->key, s, s2, m->h.s2length) & (m->pair_cap - 1);

	for (int i = 0; i < PROBE_LIMIT; i++) {
		int32_t o = m->pairs[p];
		if (o < 0) {
			m->pairs[p] = b;
			return;
		}
		if (m->sum1[o] == s && memcmp(m->sum2 + (size_t)o * n2, s2, n2) == 0)
			return;
		p = (p + 1) & (m->pair_cap - 1);
	}
	m->dropped++;
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
	m->filter_shift = 64 - lg;
	match_key_init(&m->key);
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
		if (s == 0)
			m->weak_has_zero = true;
		else
			weak_insert(m, s);
		uint32_t tag = weak_tag(&m->key, m->filter_shift, s);
		m->weak_bits[tag >> 3] |= (uint8_t)(1u << (tag & 7));
		pair_insert(m, b);
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
	uint32_t tag = weak_tag(&m->key, m->filter_shift, s);
	if (!(m->weak_bits[tag >> 3] & (1u << (tag & 7))))
		return false;
	if (s == 0)
		return m->weak_has_zero;
	/* 0 marks an empty slot: one array, one cache line per probe. */
	size_t w = weak_hash(&m->key, s) & (m->weak_cap - 1);

	for (int i = 0; i < PROBE_LIMIT && m->weak[w]; i++) {
		if (m->weak[w] == s)
			return true;
		w = (w + 1) & (m->weak_cap - 1);
	}
	return false;
}

/* Slide the weak sum of an n-byte window one byte at a time from p (the
 * window's first byte), at most `max` times, stopping at the first
 * position the filter does not rule out; p[0 .. max + n) must be in
 * memory. Returns the slides made. Kept apart from match_send_file so
 * that the sums and the filter stay in registers: this loop runs once
 * per byte of literal data. */
static size_t slide_to_candidate(const struct match_index *m, const uint8_t *p, size_t max,
				 struct rolling *r)
{
	const uint8_t *bits = m->weak_bits;
	const unsigned shift = m->filter_shift;
	const struct match_key key = m->key;
	const uint32_t n = (uint32_t)r->n;
	uint32_t s1 = r->s1, s2 = r->s2;
	size_t i = 0;

	while (i < max) {
		uint32_t out = (uint32_t)(int8_t)p[i], in = (uint32_t)(int8_t)p[i + n];
		s1 += in - out;
		s2 += s1 - n * out;
		i++;
		uint32_t tag = weak_tag(&key, shift, (s1 & 0xffff) | (s2 << 16));
		if (bits[tag >> 3] & (1u << (tag & 7)))
			break;
	}
	r->s1 = s1;
	r->s2 = s2;
	return i;
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
	size_t p = pair_hash(&m->key, weak, strong, h->s2length) & (m->pair_cap - 1);
	for (int i = 0; i < PROBE_LIMIT && m->pairs[p] >= 0; i++) {
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
	int64_t bytes_read;  /* all told */
	int read_errno;      /* the first failed or short read's error */
	int64_t fd_pos;      /* the descriptor's offset, -1 until known */
};

/* len bytes at off by read(2), seeking only when the descriptor's offset
 * is elsewhere: a sequential pass is a stream of plain reads, as rsync's
 * map_ptr makes, and a tool that watches read() (rsync's own testsuite
 * changes a source under it that way) sees ours too. The read-ahead
 * helper only preads, so the offset is the matcher's alone. */
static ssize_t window_read(struct window *w, void *buf, size_t len, int64_t off)
{
	if (w->fd_pos != off) {
		if (lseek(w->fd, off, SEEK_SET) < 0)
			return -1;
		w->fd_pos = off;
	}
	ssize_t r = read(w->fd, buf, len);
	if (r > 0)
		w->fd_pos += r;
	return r;
}

/* Make [keep, to) available; data before `keep` may be dropped. A read
 * that carries on where the last one ended reads ahead; one that jumps
 * (over blocks matched with sums hashed ahead, never read here) reads
 * just what is asked. */
static bool window_need(struct window *w, int64_t keep, int64_t to)
{
	if (to > w->file_len)
		to = w->file_len;
	int64_t end = w->buf_off + (int64_t)w->len;
	if (keep >= to || (keep >= w->buf_off && to <= end))
		return true;
	bool sequential = keep >= w->buf_off && keep <= end;
	if (!sequential) {
		w->buf_off = keep;
		w->len = 0;
	} else if (keep > w->buf_off) {
		size_t drop = (size_t)(keep - w->buf_off);
		memmove(w->buf, w->buf + drop, w->len - drop);
		w->len -= drop;
		w->buf_off = keep;
	}
	size_t need = (size_t)(to - w->buf_off);
	size_t want = need;
	if (sequential) {
		int64_t rest = w->file_len - w->buf_off;
		want = need + READ_AHEAD < (size_t)rest ? need + READ_AHEAD : (size_t)rest;
	}
	if (want > w->cap) {
		uint8_t *b = realloc(w->buf, want);
		if (!b)
			return false;
		w->buf = b;
		w->cap = want;
	}
	while (w->len < need) {
		ssize_t r = window_read(w, w->buf + w->len, want - w->len, w->buf_off + (int64_t)w->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			/* The file shrank: what is missing reads as zeros
			 * (fileio.c: map_ptr), and the caller spoils the
			 * whole-file sum so that the receiver drops them. */
			if (!w->read_errno)
				w->read_errno = r == 0 ? ENODATA : errno;
			memset(w->buf + w->len, 0, need - w->len);
			w->len = need;
			return r == 0 || errno != EIO ? true : false;
		}
		w->bytes_read += r;
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

/* ---- the whole-file sum, shared with the read-ahead hasher ---- */

/* The matcher's side of the file sum: while the helper's sum reaches past
 * a range, the range is counted only; at the first byte it does not, the
 * matcher takes the sum over and feeds every byte from there on. */
struct fsum_share {
	struct match_ahead *ahead;   /* NULL: the matcher sums every byte */
	bool taken;                  /* the matcher has the sum now */
	int64_t covered;             /* [0, covered) is in the sum already */
};

/* The block-wise file sum of [from, to) (blockwise.h): a whole aligned
 * block the helper hashed goes in as its digest, unread; anything else
 * as bytes. */
static bool tree_feed(struct match_out *mo, struct window *w, int64_t from, int64_t to)
{
	struct blockwise_sum *t = mo->tree;
	int64_t blen = (int64_t)t->blength;
	size_t n = (size_t)(to - from);

	while (from < to) {
		uint32_t weak;
		const uint8_t *digest;
		if (blockwise_at_boundary(t) && from % blen == 0 && from + blen <= to &&
		    match_ahead_sums(mo->ahead, from, blen, &weak, &digest)) {
			blockwise_digest(t, digest);
			from += blen;
			continue;
		}
		int64_t end = (from / blen + 1) * blen;
		if (end > to)
			end = to;
		if (!window_need(w, from, end))
			return false;
		blockwise_bytes(t, at(w, from), (size_t)(end - from));
		from = end;
	}
	return mo->feed(mo->ctx, NULL, n);
}

/* Feed the file sum [from, to), reading what the helper did not sum.
 * Data before `from` may leave the window. */
static bool feed_range(struct match_out *mo, struct fsum_share *fs, struct window *w,
		       int64_t from, int64_t to)
{
	if (from >= to)
		return true;
	if (mo->tree)
		return tree_feed(mo, w, from, to);
	if (fs->ahead && !fs->taken) {
		fs->covered = match_ahead_fsum_at(fs->ahead);
		if (to > fs->covered) {
			fs->covered = match_ahead_fsum_take(fs->ahead, mo->file_sum);
			fs->taken = true;
		}
	}
	if (fs->covered > from) {
		int64_t n = (fs->covered < to ? fs->covered : to) - from;
		if (!mo->feed(mo->ctx, NULL, (size_t)n))
			return false;
		from += n;
	}
	return from >= to ||
	       (window_need(w, from, to) && mo->feed(mo->ctx, at(w, from), (size_t)(to - from)));
}

/* Send [from, to) as literal data, and sum it. */
static bool flush_literal(struct match_out *mo, struct fsum_share *fs, struct window *w,
			  int64_t from, int64_t to)
{
	return from >= to || (window_need(w, from, to) && send_literal(mo, at(w, from), to - from) &&
			      feed_range(mo, fs, w, from, to));
}

/* After the last byte: the helper's sum, if it still has it, is the
 * file's (the ranges fed by count only all lie inside it). */
static void fsum_finish(struct match_out *mo, struct fsum_share *fs)
{
	if (fs->ahead && !fs->taken) {
		match_ahead_fsum_take(fs->ahead, mo->file_sum);
		fs->taken = true;
	}
}

/* ---- --inplace: the receiver overwrites its basis as it writes ---- */

/* mirrors rsync match.c: hash_search() with updating_basis_file set.
 * A block that lies before the current offset has already been
 * overwritten at the receiver, unless it was matched at its own offset
 * (then it was left as it was). Such blocks are dropped from their
 * chains for good, as rsync does; a block at the same offset as the data
 * is preferred, so unchanged blocks are not written again. */
struct inplace_state {
	int32_t *head;          /* per pair slot: first block still usable */
	int32_t *next;          /* next block with the same pair, ascending */
	uint8_t *same_offset;   /* matched at its own offset: still intact */
};

/* The pair-table slot holding (weak, strong), or -1. */
static ssize_t pair_slot(const struct match_index *m, uint32_t weak, const uint8_t *strong)
{
	size_t n2 = (size_t)m->h.s2length;
	size_t p = pair_hash(&m->key, weak, strong, m->h.s2length) & (m->pair_cap - 1);

	for (int i = 0; i < PROBE_LIMIT && m->pairs[p] >= 0; i++) {
		int32_t b = m->pairs[p];
		if (m->sum1[b] == weak && memcmp(m->sum2 + (size_t)b * n2, strong, n2) == 0)
			return (ssize_t)p;
		p = (p + 1) & (m->pair_cap - 1);
	}
	return -1;
}

static void inplace_free(struct inplace_state *st)
{
	free(st->head);
	free(st->next);
	free(st->same_offset);
}

/* Chain every block behind the first block of its pair, ascending, like
 * rsync's hash chains. */
static bool inplace_init(struct inplace_state *st, const struct match_index *m)
{
	int32_t count = m->h.count;
	size_t n2 = (size_t)m->h.s2length;

	st->head = malloc(m->pair_cap * sizeof *st->head);
	st->next = malloc((size_t)count * sizeof *st->next);
	st->same_offset = calloc((size_t)count, 1);
	if (!st->head || !st->next || !st->same_offset) {
		inplace_free(st);
		return false;
	}
	for (size_t i = 0; i < m->pair_cap; i++)
		st->head[i] = -1;
	for (int32_t b = count - 1; b >= 0; b--) {
		ssize_t p = pair_slot(m, m->sum1[b], m->sum2 + (size_t)b * n2);
		if (p < 0) {            /* dropped past PROBE_LIMIT: never used */
			st->next[b] = -1;
			continue;
		}
		st->next[b] = st->head[p];
		st->head[p] = b;
	}
	return true;
}

static bool block_usable(const struct match_index *m, const struct inplace_state *st, int32_t b,
			 int64_t off)
{
	return (int64_t)b * m->h.blength >= off || st->same_offset[b];
}

/* Does block b hold (weak, strong) with length len? */
static bool block_is(const struct match_index *m, int32_t b, uint32_t weak, const uint8_t *strong,
		     int32_t len)
{
	size_t n2 = (size_t)m->h.s2length;

	return b >= 0 && b < m->h.count && m->sum1[b] == weak && block_len(&m->h, b) == len &&
	       memcmp(m->sum2 + (size_t)b * n2, strong, n2) == 0;
}

/* The lowest usable block with these sums and length; unusable blocks
 * met on the way can never be used again and are unlinked. */
static int32_t inplace_first(const struct match_index *m, struct inplace_state *st, uint32_t weak,
			     const uint8_t *strong, int32_t len, int64_t off)
{
	ssize_t p = pair_slot(m, weak, strong);
	if (p < 0)
		return -1;
	int32_t *link = &st->head[p];
	while (*link >= 0) {
		int32_t b = *link;
		if (!block_usable(m, st, b, off)) {
			*link = st->next[b];
			continue;
		}
		if (block_len(&m->h, b) == len)
			return b;
		link = &st->next[b];
	}
	return -1;
}

/* A strong match at *off: which block to send, and perhaps a later offset
 * to send it at (a run of zeros re-aligned with the basis; the bytes
 * skipped go out as literal data). Returns -1 for no match. */
static int32_t inplace_choose(const struct match_index *m, struct inplace_state *st,
			      struct window *w, int64_t keep, int64_t *off, uint32_t weak,
			      const uint8_t *strong, int32_t len, int32_t hint,
			      struct match_out *mo)
{
	const struct sum_head *h = &m->h;
	int32_t i = inplace_first(m, st, weak, strong, len, *off);
	if (i < 0)
		return -1;
	/* The generator's blocks all start at multiples of blength. */
	int64_t aligned_i64 = (*off + h->blength - 1) / h->blength;
	int64_t aligned_off = aligned_i64 * h->blength;
	bool zeros = weak == 0 && len == h->blength && aligned_off + len <= w->file_len;
	if ((*off == aligned_off || zeros) && aligned_i64 < h->count) {
		int32_t aligned_i = (int32_t)aligned_i64;
		if (i != aligned_i && !block_is(m, aligned_i, weak, strong, len))
			goto check_hint;
		i = aligned_i;
		if (*off != aligned_off) {
			/* The same zeros lie further on in the basis: if our data
			 * there matches too, jump ahead and seek instead of write. */
			uint8_t strong2[CSUM_MAX_DIGEST];
			if (!window_need(w, keep, aligned_off + len))
				return -2;
			memset(strong2, 0, sizeof strong2);
			mo->strong(mo->ctx, at(w, aligned_off), (size_t)len, strong2);
			if (!block_is(m, aligned_i, csum_rolling(at(w, aligned_off), (size_t)len),
				      strong2, len))
				goto check_hint;
			*off = aligned_off;
		}
		st->same_offset[i] = 1;
		hint = i;
	}
check_hint:
	/* A match right after the previous one codes best (rsync's want_i). */
	if (i != hint && hint < h->count && block_usable(m, st, hint, *off) &&
	    block_is(m, hint, weak, strong, len))
		i = hint;
	return i;
}

/* ---- strong sums long enough to decide alone ---- */

/* Is block b, of length len, the one with this strong sum? Only for sums
 * of MATCH_STRONG_DECIDES bytes or more (the read-ahead hasher then
 * leaves the weak sums out). */
static bool strong_decides(const struct match_index *m, int32_t b, const uint8_t *strong,
			   int32_t len)
{
	size_t n2 = (size_t)m->h.s2length;

	return b >= 0 && b < m->h.count && block_len(&m->h, b) == len &&
	       memcmp(m->sum2 + (size_t)b * n2, strong, n2) == 0;
}

/* A fresh window the helper hashed without its weak sum: is it the block
 * expected there -- with --inplace the basis block at the same offset,
 * else the one after the last match (rsync's want_i)? Those are the
 * blocks the usual search would pick for the same sums. -1: neither; the
 * caller rolls the weak sum and searches as usual. */
static int32_t expected_block(const struct match_index *m, struct inplace_state *st,
			      bool updating_basis, int64_t off, const uint8_t *strong, int32_t len,
			      int32_t hint)
{
	const struct sum_head *h = &m->h;

	if (updating_basis && off % h->blength == 0 && off / h->blength < h->count) {
		int32_t i = (int32_t)(off / h->blength);
		if (strong_decides(m, i, strong, len)) {
			st->same_offset[i] = 1;
			return i;
		}
	}
	if ((!updating_basis || (hint >= 0 && hint < h->count && block_usable(m, st, hint, off))) &&
	    strong_decides(m, hint, strong, len))
		return hint;
	return -1;
}

/* ---- data changed in place: probing the next aligned blocks ---- */

/* How many aligned blocks past a changed one are probed before sliding. */
#define PROBE_BLOCKS 4

/* The window at off was the place of the basis block `hint` and did not
 * match: the data there changed in place (a rewritten database page), or
 * something was inserted or deleted. Sliding byte by byte finds the next
 * match either way, at a few nanoseconds a byte; when the data is where it
 * was, the block one, two, ... lengths on matches the basis block at the
 * same index, and one hash of it finds that. Returns how many blocks to
 * pass as literal data (0: none of the next PROBE_BLOCKS matched, slide).
 * A match found so always is a true match (weak and strong sums); at
 * worst the bytes passed over held another, shifted match, and go out as
 * literal data instead. -1: the read failed. */
static int probe_in_place(const struct match_index *m, struct window *w, int64_t keep,
			  int64_t off, int32_t hint, struct match_ahead *ahead, struct match_out *mo)
{
	const struct sum_head *h = &m->h;
	int64_t blen = h->blength;

	if (hint < 0 || off != (int64_t)hint * blen)
		return 0;
	for (int j = 1; j <= PROBE_BLOCKS; j++) {
		int32_t b = hint + j;
		int64_t at_off = off + j * blen;
		/* whole blocks only: the short last one is left to sliding */
		if (b >= h->count || block_len(h, b) != blen || at_off + blen > w->file_len)
			return 0;
		uint32_t weak = 0;
		const uint8_t *strong_ahead = NULL;
		uint8_t strong[CSUM_MAX_DIGEST];
		if (match_ahead_sums(ahead, at_off, blen, &weak, &strong_ahead) &&
		    !ahead->with_weak) {
			if (!strong_decides(m, b, strong_ahead, (int32_t)blen))
				continue;
			mo->hash_hits++;
			return j;
		}
		if (!strong_ahead) {
			if (!window_need(w, keep, at_off + blen))
				return -1;
			weak = csum_rolling(at(w, at_off), (size_t)blen);
		}
		if (weak != m->sum1[b])
			continue;
		mo->hash_hits++;
		memset(strong, 0, sizeof strong);
		if (strong_ahead)
			memcpy(strong, strong_ahead, (size_t)h->s2length);
		else
			mo->strong(mo->ctx, at(w, at_off), (size_t)blen, strong);
		if (block_is(m, b, weak, strong, (int32_t)blen))
			return j;
		mo->false_alarms++;
	}
	return 0;
}

bool match_send_file(const struct match_index *m, int fd, int64_t file_len, bool updating_basis,
		     struct match_out *mo)
{
	const struct sum_head *h = m ? &m->h : NULL;
	struct window w = {.fd = fd, .file_len = file_len, .fd_pos = -1};
	int64_t lit_start = 0, off = 0;
	bool ok = true;

	mo->bytes_read = 0;
	mo->read_errno = 0;
	if (!h || h->count == 0 || h->blength == 0) {
		/* No basis: everything is literal. */
		while (ok && off < file_len) {
			int64_t to = off + READ_AHEAD < file_len ? off + READ_AHEAD : file_len;
			ok = window_need(&w, off, to);
			/* a token at a time, so that progress moves as rsync's */
			for (int64_t p = off; ok && p < to; p += CHUNK_SIZE) {
				int64_t n = to - p < CHUNK_SIZE ? to - p : CHUNK_SIZE;
				ok = mo->feed(mo->ctx, at(&w, p), (size_t)n) &&
				     send_literal(mo, at(&w, p), n);
			}
			off = to;
		}
		mo->bytes_read = w.bytes_read;
		mo->read_errno = w.read_errno;
		free(w.buf);
		return ok;
	}
	int64_t blen = h->blength;
	uint8_t strong[CSUM_MAX_DIGEST];
	struct rolling r;
	bool have_roll = false;
	int32_t hint = 0;
	struct inplace_state inplace = {0};
	/* the source's own aligned sums: valid whatever the receiver does
	 * with its basis (--inplace too) */
	struct match_ahead *ahead = mo->ahead;
	struct fsum_share fs = {.ahead = mo->file_sum ? ahead : NULL};

	if (fs.ahead && !match_ahead_fsum_limit(fs.ahead, file_len))
		fs.taken = true; /* it summed more than we send: sum it all here */
	if (updating_basis && !inplace_init(&inplace, m)) {
		free(w.buf);
		return false;
	}
	while (ok && off < file_len) {
		int64_t wlen = file_len - off < blen ? file_len - off : blen;
		uint32_t ahead_weak = 0;
		const uint8_t *ahead_strong = NULL;
		bool fresh = !have_roll;
		int32_t b = -1;
		if (!have_roll) {
			/* a fresh window, after a match: hashed ahead if aligned,
			 * and then not read here at all unless sent as literal */
			bool summed = ahead && match_ahead_sums(ahead, off, wlen, &ahead_weak,
								&ahead_strong);
			match_ahead_at(ahead, off);
			if (summed && !ahead->with_weak)
				b = expected_block(m, &inplace, updating_basis, off, ahead_strong,
						   (int32_t)wlen, hint);
			if (b >= 0)
				mo->hash_hits++;
			if (summed && ahead->with_weak) {
				/* the low 16 bits of each sum are all the value keeps,
				 * and all that rolling on needs */
				r.s1 = ahead_weak & 0xffff;
				r.s2 = ahead_weak >> 16;
				r.n = (size_t)wlen;
				have_roll = true;
			} else if (!summed) {
				if (!window_need(&w, lit_start, off + wlen)) {
					ok = false;
					break;
				}
				rolling_init(&r, at(&w, off), (size_t)wlen);
				have_roll = true;
			}
			/* else no weak sum yet: a changed page is probed past
			 * first (it is read only as the literal data it is) */
		}
		uint32_t weak = have_roll ? rolling_value(&r) : 0;
		if (b < 0 && have_roll && weak_present(m, weak)) {
			memset(strong, 0, sizeof strong);
			if (ahead_strong || (ahead && match_ahead_sums(ahead, off, wlen, &ahead_weak,
								       &ahead_strong))) {
				memcpy(strong, ahead_strong, (size_t)h->s2length);
			} else {
				if (!window_need(&w, lit_start, off + wlen)) {
					ok = false;
					break;
				}
				mo->strong(mo->ctx, at(&w, off), (size_t)wlen, strong);
			}
			if (updating_basis)
				b = inplace_choose(m, &inplace, &w, lit_start, &off, weak, strong,
						   (int32_t)wlen, hint, mo);
			else
				b = find_block(m, weak, strong, (int32_t)wlen, hint);
			if (b == -2) {
				ok = false;
				break;
			}
			mo->hash_hits++;
			if (b < 0)
				mo->false_alarms++;
		}
		if (b < 0 && fresh) {
			int skip = probe_in_place(m, &w, lit_start, off, hint, ahead, mo);
			if (skip < 0) {
				ok = false;
				break;
			}
			if (skip > 0) {
				/* literal up to the block that matched; the next round
				 * takes it as a fresh window */
				off += skip * blen;
				hint += skip;
				have_roll = false;
				if (off - lit_start >= CHUNK_SIZE) {
					ok = flush_literal(mo, &fs, &w, lit_start, off);
					lit_start = off;
				}
				continue;
			}
		}
		if (b < 0 && !have_roll) {
			/* neither the expected block nor the next few: roll the
			 * weak sum after all and search on as usual */
			if (!window_need(&w, lit_start, off + wlen)) {
				ok = false;
				break;
			}
			rolling_init(&r, at(&w, off), (size_t)wlen);
			have_roll = true;
			continue;
		}
		if (b >= 0) {
			/* the block's own bytes only if the token coder wants them */
			int64_t upto = mo->no_block_data ? off : off + wlen;
			ok = window_need(&w, lit_start, upto) &&
			     (off == lit_start || send_literal(mo, at(&w, lit_start), off - lit_start)) &&
			     mo->emit_block(mo->ctx, b, mo->no_block_data ? NULL : at(&w, off),
					    (size_t)wlen) &&
			     feed_range(mo, &fs, &w, lit_start, off + wlen);
			off += wlen;
			lit_start = off;
			hint = b + 1;
			have_roll = false;
			continue;
		}
		/* Slide on to the next position worth a look; near the end the
		 * window shrinks, one byte at a time. */
		if (off + wlen < file_len) {
			int64_t max = lit_start + CHUNK_SIZE - off;
			if (max > file_len - wlen - off)
				max = file_len - wlen - off;
			if (!window_need(&w, lit_start, off + wlen + max)) {
				ok = false;
				break;
			}
			off += (int64_t)slide_to_candidate(m, at(&w, off), (size_t)max, &r);
			if (off - lit_start >= CHUNK_SIZE) {
				ok = flush_literal(mo, &fs, &w, lit_start, off);
				lit_start = off;
			}
			continue;
		}
		if (!window_need(&w, lit_start, off + 1)) {
			ok = false;
			break;
		}
		uint8_t out = *at(&w, off);
		r.s1 -= (uint32_t)(int8_t)out;
		r.s2 -= (uint32_t)r.n * (uint32_t)(int8_t)out;
		r.n--;
		off++;
		if (off - lit_start >= CHUNK_SIZE) {
			ok = flush_literal(mo, &fs, &w, lit_start, off);
			lit_start = off;
		}
	}
	if (ok && lit_start < file_len)
		ok = flush_literal(mo, &fs, &w, lit_start, file_len);
	if (ok)
		fsum_finish(mo, &fs);
	if (updating_basis)
		inplace_free(&inplace);
	mo->bytes_read = w.bytes_read;
	mo->read_errno = w.read_errno;
	free(w.buf);
	return ok;
}
