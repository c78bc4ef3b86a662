/*
 * The block-sum cache (see sumcache.h).
 *
 * The file, all integers little-endian:
 *   "FERRYSUMS1\n"  u8 checksum type, u8 seed order, u8 strong bytes a block,
 *   u8 0, i32 seed, u32 entries; then each entry:
 *   u16 path length, the path (relative, no NUL), u64 dev, u64 ino,
 *   i64 size, i64 mtime, u32 mtime ns, i64 ctime, u32 ctime ns,
 *   i32 block length, i32 blocks, the weak sums (u32 each), the strong sums.
 * Everything in it is checked before use, as if it came from the network:
 * a module's users may write the file.
 */
#include "proto/base/byteorder.h"
#include "proto/delta/sumcache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/base/fileio.h"

#define SUMCACHE_MAGIC "FERRYSUMS1\n"
#define SUMCACHE_MAGIC_LEN 11
#define SUMCACHE_MAX_FILE ((int64_t)1 << 31)
#define SUMCACHE_MAX_PATH 4095
/* A file's sums are kept only up to this many blocks (64 MiB of sums). */
#define SUMCACHE_MAX_BLOCKS (64 * 1024 * 1024 / (4 + SUMCACHE_S2_MAX))
/* The generator's hand-overs the receiver has not taken yet, at most. */
#define SUMCACHE_MAX_HANDOFF ((size_t)256 * 1024 * 1024)

struct sums_handoff {
	int32_t ndx;
	struct block_sums sums;
	struct sums_handoff *next;
};

/* ---- little-endian reading with bounds ---- */

struct reader {
	const uint8_t *p;
	size_t left;
};

static bool take(struct reader *r, void *out, size_t n)
{
	if (r->left < n)
		return false;
	memcpy(out, r->p, n);
	r->p += n;
	r->left -= n;
	return true;
}

static bool take_u64(struct reader *r, uint64_t *v)
{
	uint8_t b[8];
	if (!take(r, b, 8))
		return false;
	*v = get_le64(b);
	return true;
}

static bool take_u32(struct reader *r, uint32_t *v)
{
	uint8_t b[4];
	if (!take(r, b, 4))
		return false;
	*v = get_le32(b);
	return true;
}

static bool take_u16(struct reader *r, uint16_t *v)
{
	uint8_t b[2];
	if (!take(r, b, 2))
		return false;
	*v = get_le16(b);
	return true;
}

/* ---- the table, by path ---- */

static uint64_t path_digest(const char *path)
{
	return ixtable_digest_bytes(path, strlen(path));
}

static uint64_t entry_digest(const void *ctx, int32_t ndx)
{
	const struct sumcache *sc = ctx;

	return path_digest(sc->entries[ndx]->path);
}

static struct sumcache_entry *table_find(const struct sumcache *sc, const char *path)
{
	struct ixprobe p;

	for (int32_t i = ixtable_first(&sc->by_path, path_digest(path), &p); i >= 0;
	     i = ixtable_next(&sc->by_path, &p))
		if (!strcmp(sc->entries[i]->path, path))
			return sc->entries[i];
	return NULL;
}

/* Add e (not taken: the caller frees it when this fails); false for a
 * path already there (the file is not ours) or short memory. */
static bool table_add(struct sumcache *sc, struct sumcache_entry *e)
{
	if (table_find(sc, e->path) || sc->count >= INT32_MAX)
		return false;
	if (sc->count == sc->entries_cap) {
		size_t cap = sc->entries_cap ? sc->entries_cap * 2 : 64;
		struct sumcache_entry **t = realloc(sc->entries, cap * sizeof *t);
		if (!t)
			return false;
		sc->entries = t;
		sc->entries_cap = cap;
	}
	sc->entries[sc->count] = e;
	if (!ixtable_add(&sc->by_path, path_digest(e->path), (int32_t)sc->count, entry_digest, sc))
		return false;
	sc->count++;
	return true;
}

/* Empty the table; the entries stay (a table that only borrows them). */
static void table_release(struct sumcache *sc)
{
	free(sc->entries);
	sc->entries = NULL;
	sc->count = sc->entries_cap = 0;
	ixtable_free(&sc->by_path);
}

static void entry_free(struct sumcache_entry *e)
{
	if (!e)
		return;
	free(e->path);
	free(e->sums.sum1);
	free(e->sums.sum2);
	free(e);
}

/* A path as the transfer names it: relative, no "." or ".." parts. */
static bool path_ok(const char *p, size_t len)
{
	if (len == 0 || len > SUMCACHE_MAX_PATH || memchr(p, '\0', len) || p[0] == '/')
		return false;
	for (size_t i = 0; i < len;) {
		size_t j = i;
		while (j < len && p[j] != '/')
			j++;
		size_t n = j - i;
		if (n == 0 || (n == 1 && p[i] == '.') || (n == 2 && p[i] == '.' && p[i + 1] == '.'))
			return false;
		i = j + 1;
	}
	return p[len - 1] != '/';
}

static int32_t blocks_for(int64_t size, int32_t blength)
{
	return (int32_t)(size / blength + (size % blength != 0));
}

static struct sumcache_entry *parse_entry(struct sumcache *sc, struct reader *r)
{
	uint16_t plen;
	uint64_t dev, ino, size, mtime, ctime;
	uint32_t mtime_ns, ctime_ns, blength, count;

	if (!take_u16(r, &plen) || plen == 0 || plen > r->left ||
	    !path_ok((const char *)r->p, plen))
		return NULL;
	const char *path = (const char *)r->p;
	r->p += plen;
	r->left -= plen;
	if (!take_u64(r, &dev) || !take_u64(r, &ino) || !take_u64(r, &size) ||
	    !take_u64(r, &mtime) || !take_u32(r, &mtime_ns) || !take_u64(r, &ctime) ||
	    !take_u32(r, &ctime_ns) || !take_u32(r, &blength) || !take_u32(r, &count))
		return NULL;
	if ((int64_t)size <= 0 || (int64_t)size > INT64_MAX / 2 || blength == 0 ||
	    blength > (1u << 29) || count > SUMCACHE_MAX_BLOCKS ||
	    (int64_t)count != blocks_for((int64_t)size, (int32_t)blength) ||
	    mtime_ns >= 1000000000u || ctime_ns >= 1000000000u ||
	    r->left / (4 + sc->s2len) < count)
		return NULL;
	struct sumcache_entry *e = calloc(1, sizeof *e);
	if (!e)
		return NULL;
	e->path = strndup(path, plen);
	e->sums.blength = (int32_t)blength;
	e->sums.count = (int32_t)count;
	e->sums.sum1 = malloc((size_t)count * 4 + 1);
	e->sums.sum2 = malloc((size_t)count * sc->s2len + 1);
	if (!e->path || !e->sums.sum1 || !e->sums.sum2) {
		entry_free(e);
		return NULL;
	}
	for (uint32_t i = 0; i < count; i++)
		take_u32(r, &e->sums.sum1[i]);
	take(r, e->sums.sum2, (size_t)count * sc->s2len);
	e->dev = dev;
	e->ino = ino;
	e->size = (int64_t)size;
	e->mtime_s = (int64_t)mtime;
	e->mtime_ns = mtime_ns;
	e->ctime_s = (int64_t)ctime;
	e->ctime_ns = ctime_ns;
	return e;
}

static void table_clear(struct sumcache *sc)
{
	for (size_t i = 0; i < sc->count; i++)
		entry_free(sc->entries[i]);
	table_release(sc);
}

static bool parse_file(struct sumcache *sc, const uint8_t *data, size_t len)
{
	struct reader r = {data, len};
	uint8_t magic[SUMCACHE_MAGIC_LEN], type, order, s2len, zero;
	uint32_t seed, n;

	if (!take(&r, magic, sizeof magic) || memcmp(magic, SUMCACHE_MAGIC, sizeof magic) ||
	    !take(&r, &type, 1) || !take(&r, &order, 1) || !take(&r, &s2len, 1) ||
	    !take(&r, &zero, 1) || !take_u32(&r, &seed) || !take_u32(&r, &n))
		return false;
	/* another checksum or seed: of no use to this session */
	if (type != (uint8_t)sc->type || order != (uint8_t)sc->seed_order ||
	    s2len != (uint8_t)sc->s2len || (int32_t)seed != sc->seed || zero)
		return false;
	for (uint32_t i = 0; i < n; i++) {
		struct sumcache_entry *e = parse_entry(sc, &r);
		if (!e || !table_add(sc, e)) {
			entry_free(e);
			return false;
		}
	}
	return r.left == 0;
}

static uint8_t *read_whole(int rootfd, const char *name, size_t *len)
{
	int fd = openat(rootfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	uint8_t *buf = NULL;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
	    st.st_size < SUMCACHE_MAX_FILE) {
		buf = malloc((size_t)st.st_size);
		if (buf && fs_pread_full(fd, buf, (size_t)st.st_size, 0) != st.st_size) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)st.st_size;
	}
	close(fd);
	return buf;
}

void sumcache_open(struct sumcache *sc, int rootfd, const char *name, enum csum_type type,
		   int32_t seed, bool seed_order)
{
	size_t len = 0;

	memset(sc, 0, sizeof *sc);
	ixtable_init(&sc->by_path);
	pthread_mutex_init(&sc->lock, NULL);
	sc->name = name;
	sc->type = type;
	sc->seed = seed;
	sc->seed_order = seed_order;
	sc->s2len = csum_len(type) < SUMCACHE_S2_MAX ? csum_len(type) : SUMCACHE_S2_MAX;
	uint8_t *data = read_whole(rootfd, name, &len);
	if (data && !parse_file(sc, data, len))
		table_clear(sc); /* damaged or foreign: start afresh */
	free(data);
}

static bool same_file(const struct sumcache_entry *e, const struct stat *st)
{
	return e->dev == (uint64_t)st->st_dev && e->ino == (uint64_t)st->st_ino &&
	       e->size == (int64_t)st->st_size && e->mtime_s == (int64_t)st->st_mtim.tv_sec &&
	       e->mtime_ns == (uint32_t)st->st_mtim.tv_nsec &&
	       e->ctime_s == (int64_t)st->st_ctim.tv_sec &&
	       e->ctime_ns == (uint32_t)st->st_ctim.tv_nsec;
}

const struct block_sums *sumcache_lookup(struct sumcache *sc, const char *path,
					 const struct stat *st, int32_t blength)
{
	/* the table does not change after sumcache_open: no lock */
	struct sumcache_entry *e = table_find(sc, path);

	if (!e || !same_file(e, st) || e->sums.blength != blength)
		return NULL;
	return &e->sums;
}

/* ---- the generator's hand-over ---- */

static size_t sums_bytes(const struct block_sums *b, size_t s2len)
{
	return (size_t)b->count * (4 + s2len);
}

void block_sums_free(struct block_sums *b)
{
	if (!b)
		return;
	free(b->sum1);
	free(b->sum2);
	free(b);
}

void sumcache_hand_over(struct sumcache *sc, int32_t ndx, const struct block_sums *b)
{
	size_t bytes = sums_bytes(b, sc->s2len);

	pthread_mutex_lock(&sc->lock);
	bool room = sc->handoff_bytes + bytes <= SUMCACHE_MAX_HANDOFF;
	if (room)
		sc->handoff_bytes += bytes;
	pthread_mutex_unlock(&sc->lock);
	if (!room)
		return; /* the receiver hashes that file itself */
	struct sums_handoff *h = calloc(1, sizeof *h);
	if (h) {
		h->ndx = ndx;
		h->sums = *b;
		h->sums.sum1 = malloc((size_t)b->count * 4 + 1);
		h->sums.sum2 = malloc((size_t)b->count * sc->s2len + 1);
	}
	if (!h || !h->sums.sum1 || !h->sums.sum2) {
		if (h) {
			free(h->sums.sum1);
			free(h->sums.sum2);
			free(h);
		}
		pthread_mutex_lock(&sc->lock);
		sc->handoff_bytes -= bytes;
		pthread_mutex_unlock(&sc->lock);
		return;
	}
	memcpy(h->sums.sum1, b->sum1, (size_t)b->count * 4);
	memcpy(h->sums.sum2, b->sum2, (size_t)b->count * sc->s2len);
	pthread_mutex_lock(&sc->lock);
	h->next = sc->handoffs;
	sc->handoffs = h;
	pthread_mutex_unlock(&sc->lock);
}

struct block_sums *sumcache_take(struct sumcache *sc, int32_t ndx)
{
	struct block_sums *out = NULL;

	pthread_mutex_lock(&sc->lock);
	for (struct sums_handoff **pp = &sc->handoffs; *pp; pp = &(*pp)->next) {
		struct sums_handoff *h = *pp;
		if (h->ndx != ndx)
			continue;
		*pp = h->next;
		sc->handoff_bytes -= sums_bytes(&h->sums, sc->s2len);
		out = malloc(sizeof *out);
		if (out)
			*out = h->sums;
		else {
			free(h->sums.sum1);
			free(h->sums.sum2);
		}
		free(h);
		break;
	}
	pthread_mutex_unlock(&sc->lock);
	return out;
}

/* ---- the receiver's builder ---- */

void sums_builder_begin(struct sums_builder *b, struct sumcache *sc, int32_t ndx, int64_t size,
			int32_t blength)
{
	memset(b, 0, sizeof *b);
	b->sc = sc;
	b->size = size;
	b->basis = sumcache_take(sc, ndx);
	if (size <= 0 || blength <= 0) {
		b->failed = true;
		return;
	}
	int64_t count = size / blength + (size % blength != 0);
	if (count > SUMCACHE_MAX_BLOCKS) {
		b->failed = true;
		return;
	}
	b->out.blength = blength;
	b->out.count = (int32_t)count;
	b->out.sum1 = malloc((size_t)count * 4);
	b->out.sum2 = malloc((size_t)count * sc->s2len);
	b->acc = malloc((size_t)blength);
	if (!b->out.sum1 || !b->out.sum2 || !b->acc)
		b->failed = true;
}

static void hash_block(struct sums_builder *b, const uint8_t *p, size_t n)
{
	int64_t k = b->pos / b->out.blength;
	uint8_t strong[CSUM_MAX_DIGEST];

	if (k >= b->out.count) {
		b->failed = true; /* longer than the list said */
		return;
	}
	b->out.sum1[k] = csum_rolling(p, n);
	csum_block(b->sc->type, b->sc->seed, b->sc->seed_order, p, n, strong);
	memcpy(b->out.sum2 + (size_t)k * b->sc->s2len, strong, b->sc->s2len);
}

void sums_builder_bytes(struct sums_builder *b, const uint8_t *p, size_t n)
{
	size_t bl = (size_t)b->out.blength;

	while (!b->failed && n > 0) {
		if (b->acc_len == 0 && n >= bl) {
			hash_block(b, p, bl); /* whole blocks straight from the data */
			b->pos += (int64_t)bl;
			p += bl;
			n -= bl;
			continue;
		}
		size_t k = bl - b->acc_len < n ? bl - b->acc_len : n;
		memcpy(b->acc + b->acc_len, p, k);
		b->acc_len += k;
		p += k;
		n -= k;
		if (b->acc_len == bl) {
			hash_block(b, b->acc, bl);
			b->pos += (int64_t)bl;
			b->acc_len = 0;
		}
	}
}

bool sums_builder_basis_block(struct sums_builder *b, int32_t basis_blength, int64_t block,
			      size_t len, const uint8_t **digest)
{
	const struct block_sums *s = b->basis;

	if (b->failed || !s || b->acc_len || basis_blength != b->out.blength ||
	    block < 0 || block >= s->count || b->pos % b->out.blength)
		return false;
	/* a whole block, or the file's last one */
	if (len != (size_t)b->out.blength && b->pos + (int64_t)len != b->size)
		return false;
	int64_t k = b->pos / b->out.blength;
	if (k >= b->out.count)
		return false;
	size_t s2 = b->sc->s2len;
	b->out.sum1[k] = s->sum1[block];
	memcpy(b->out.sum2 + (size_t)k * s2, s->sum2 + (size_t)block * s2, s2);
	*digest = b->out.sum2 + (size_t)k * s2;
	b->pos += (int64_t)len;
	return true;
}

void sums_builder_commit(struct sums_builder *b, const char *path, const struct stat *st)
{
	if (!b->failed && b->acc_len) {
		hash_block(b, b->acc, b->acc_len);
		b->pos += (int64_t)b->acc_len;
		b->acc_len = 0;
	}
	if (b->failed || b->pos != b->size || st->st_size != b->size ||
	    !path_ok(path, strlen(path)))
		return;
	struct sumcache_entry *e = calloc(1, sizeof *e);
	if (!e || !(e->path = strdup(path))) {
		free(e);
		return;
	}
	e->sums = b->out;
	b->out.sum1 = NULL;
	b->out.sum2 = NULL;
	e->dev = (uint64_t)st->st_dev;
	e->ino = (uint64_t)st->st_ino;
	e->size = (int64_t)st->st_size;
	e->mtime_s = (int64_t)st->st_mtim.tv_sec;
	e->mtime_ns = (uint32_t)st->st_mtim.tv_nsec;
	e->ctime_s = (int64_t)st->st_ctim.tv_sec;
	e->ctime_ns = (uint32_t)st->st_ctim.tv_nsec;
	pthread_mutex_lock(&b->sc->lock);
	e->next_fresh = b->sc->fresh;
	b->sc->fresh = e;
	pthread_mutex_unlock(&b->sc->lock);
}

void sums_builder_end(struct sums_builder *b)
{
	free(b->out.sum1);
	free(b->out.sum2);
	free(b->acc);
	block_sums_free(b->basis);
	memset(b, 0, sizeof *b);
}

/* ---- writing it back ---- */

struct writer {
	FILE *f;
	bool ok;
};

static void put(struct writer *w, const void *p, size_t n)
{
	if (w->ok && n && fwrite(p, 1, n, w->f) != n)
		w->ok = false;
}

static void put_u64(struct writer *w, uint64_t v)
{
	uint8_t b[8];

	put_le64(b, v);
	put(w, b, 8);
}

static void put_u32(struct writer *w, uint32_t v)
{
	uint8_t b[4];

	put_le32(b, v);
	put(w, b, 4);
}

static void put_entry(struct writer *w, const struct sumcache_entry *e, size_t s2len)
{
	size_t plen = strlen(e->path);
	uint8_t l[2] = {(uint8_t)plen, (uint8_t)(plen >> 8)};

	put(w, l, 2);
	put(w, e->path, plen);
	put_u64(w, e->dev);
	put_u64(w, e->ino);
	put_u64(w, (uint64_t)e->size);
	put_u64(w, (uint64_t)e->mtime_s);
	put_u32(w, e->mtime_ns);
	put_u64(w, (uint64_t)e->ctime_s);
	put_u32(w, e->ctime_ns);
	put_u32(w, (uint32_t)e->sums.blength);
	put_u32(w, (uint32_t)e->sums.count);
	for (int32_t i = 0; i < e->sums.count; i++)
		put_u32(w, e->sums.sum1[i]);
	put(w, e->sums.sum2, (size_t)e->sums.count * s2len);
}

/* An old entry still worth keeping: not rewritten by this run (written
 * holds this run's, by path), and its file unchanged since. */
static bool keep_old(int rootfd, const struct sumcache_entry *e, const struct sumcache *written)
{
	struct stat st;

	if (table_find(written, e->path))
		return false;
	/* the path comes from the file: resolved beneath the destination */
	int fd = fs_open_beneath(rootfd, e->path, O_PATH | O_NOFOLLOW);
	if (fd < 0)
		return false;
	bool same = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && same_file(e, &st);
	close(fd);
	return same;
}

/* This run's entries by path, the newest of each (a redo writes a file
 * twice); the table only borrows them. */
static bool index_written(const struct sumcache *sc, struct sumcache *written)
{
	memset(written, 0, sizeof *written);
	ixtable_init(&written->by_path);
	for (struct sumcache_entry *f = sc->fresh; f; f = f->next_fresh) {
		if (table_find(written, f->path))
			continue;
		if (!table_add(written, f))
			return false;
		f->keep = true;
	}
	return true;
}

static bool write_entries(struct sumcache *sc, int fd, uint32_t n)
{
	struct writer w = {fdopen(fd, "w"), true};

	if (!w.f) {
		close(fd);
		return false;
	}
	uint8_t head[4] = {(uint8_t)sc->type, (uint8_t)sc->seed_order, (uint8_t)sc->s2len, 0};
	put(&w, SUMCACHE_MAGIC, SUMCACHE_MAGIC_LEN);
	put(&w, head, 4);
	put_u32(&w, (uint32_t)sc->seed);
	put_u32(&w, n);
	for (size_t i = 0; i < sc->count; i++)
		if (sc->entries[i]->keep)
			put_entry(&w, sc->entries[i], sc->s2len);
	for (struct sumcache_entry *f = sc->fresh; f; f = f->next_fresh)
		if (f->keep)
			put_entry(&w, f, sc->s2len);
	if (fclose(w.f) != 0)
		w.ok = false;
	return w.ok;
}

/* Only a cache of ours is replaced: a file of that name that is not one
 * (a user's data, a symlink) stays as it is. A damaged cache still starts
 * with the magic, a cut one at least with its start. */
bool sumcache_may_replace(int rootfd, const char *name)
{
	struct stat st;
	char head[SUMCACHE_MAGIC_LEN];

	if (fstatat(rootfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT;
	if (!S_ISREG(st.st_mode) || st.st_size < 5)
		return false;
	int fd = openat(rootfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return false;
	ssize_t got = fs_pread_full(fd, head, sizeof head, 0);
	close(fd);
	return got >= 5 && memcmp(head, SUMCACHE_MAGIC, (size_t)got) == 0;
}

bool sumcache_save(struct sumcache *sc, int rootfd, char *err, size_t errlen)
{
	char tmp[SUMCACHE_MAX_PATH + 32];
	struct sumcache written;
	uint32_t n = 0;

	if (!sumcache_may_replace(rootfd, sc->name)) {
		snprintf(err, errlen, "%s exists and is not a sums cache; left as it is", sc->name);
		return false;
	}

	if (!index_written(sc, &written)) {
		table_release(&written);
		snprintf(err, errlen, "cannot write %s: out of memory", sc->name);
		return false;
	}
	n = (uint32_t)written.count;
	for (size_t i = 0; i < sc->count; i++) {
		struct sumcache_entry *e = sc->entries[i];
		if ((e->keep = keep_old(rootfd, e, &written)))
			n++;
	}
	table_release(&written);
	snprintf(tmp, sizeof tmp, ".%s.%ld.tmp", sc->name, (long)getpid());
	int fd = openat(rootfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
		return false;
	}
	if (!write_entries(sc, fd, n) || renameat(rootfd, tmp, rootfd, sc->name) != 0) {
		int saved = errno;
		unlinkat(rootfd, tmp, 0);
		snprintf(err, errlen, "cannot write %s: %s", sc->name, strerror(saved));
		return false;
	}
	return true;
}

void sumcache_close(struct sumcache *sc)
{
	table_clear(sc);
	while (sc->fresh) {
		struct sumcache_entry *e = sc->fresh;
		sc->fresh = e->next_fresh;
		entry_free(e);
	}
	while (sc->handoffs) {
		struct sums_handoff *h = sc->handoffs;
		sc->handoffs = h->next;
		free(h->sums.sum1);
		free(h->sums.sum2);
		free(h);
	}
	pthread_mutex_destroy(&sc->lock);
}
