/*
 * The receiver: reads the sender's replies, rebuilds each file from
 * literal data and blocks of the basis into a temporary file beside it,
 * checks the whole-file sum, and renames it into place. Mirrors rsync
 * receiver.c:recv_files() and receive_data().
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/base/fdio.h"
#include "proto/core/item_attrs.h"
#include "proto/core/itemlog.h"
#include "proto/delta/batch.h"
#include "proto/delta/blockwise.h"
#include "proto/recv/hlink.h"
#include "proto/meta/xattrs.h"
#include "proto/base/fileio.h"
#include "proto/filter/filter.h"
#include "proto/recv/recvside.h"
#include "proto/core/progress.h"
#include "proto/delta/sumcache.h"
#include "proto/base/syncer.h"
#include "proto/recv/tempfile.h"
#include "proto/delta/token.h"

#define OUT_BUF (256 * 1024)

struct rcv {
	struct recv_ctx *rc;
	struct session *s;
	const struct ferry_opts *o;
	struct dir_cursor dirs;
	struct token_dec *dec; /* the token stream reader, one per session */
	uint8_t *data;     /* basis block buffer */
	uint8_t *out;      /* pending output */
	size_t out_len;
	int phase_dones;   /* NDX_DONEs read from the sender */
	size_t parts_freed; /* incremental recursion: parts the sender finished */
	struct progress prog;
	int64_t written;   /* bytes of the current file so far */
	int append;        /* --append(-verify) while in the first phase */
	int32_t *delayed;  /* --delay-updates: files waiting in partial dirs */
	size_t ndelayed, delayed_cap;
	int64_t file_size;
	bool discarding;   /* reading a batched file we do not apply */
	bool basis_gone;   /* a -y basis vanished: its blocks read as zeros */
	bool use_clone;    /* FERRY_NO_CLONE unset: kernel copies allowed */
	bool clone_ok;     /* matched blocks of this file go by fs_copy_range() */
	off_t run_off;     /* a run of matched basis data not yet copied */
	int64_t run_len;
	/* data holds basis bytes [data_off, data_off + data_len): matched
	 * blocks are read OUT_BUF at a time, not one pread each */
	int64_t data_off;
	size_t data_len;
	int64_t skip;      /* --inplace: unchanged bytes to seek past before
			    * the next write */
	bool over_basis;   /* --inplace: writing into the basis itself */
	bool one_inplace;  /* this file: written over its --partial-dir basis */
	struct sums_builder *sb; /* --sums-cache: this file's new sums, or NULL */
	struct sums_builder sb_store;
	struct blockwise_sum *tree; /* the file's sum is block-wise, or NULL */
	struct blockwise_sum tree_store;
	/* Early writeback of a temporary file: bytes that reached the file,
	 * and how many of them we asked the kernel to start writing. */
	bool writeback_early;
	int64_t landed;
	int64_t writeback_from;
	bool stopped;      /* a write into the destination failed: the
			    * receiver stops (exit 11, as rsync's does) */
};

/* Start writing back a temporary file's data every this many bytes. */
#define WRITEBACK_STEP (8 * 1024 * 1024)

void recv_note_done(struct recv_ctx *rc)
{
	pthread_mutex_lock(&rc->lock);
	rc->done_count++;
	pthread_cond_broadcast(&rc->cond);
	pthread_mutex_unlock(&rc->lock);
}

/* File ndx has arrived or failed (its state bits are set): wake the
 * generator, which ends a part once all its files have, if it waits for
 * this one. It names the last of a part's files still to settle, so
 * files that arrive in order wake it once a part instead of once a file
 * (a thread switch each: a fifth of a small-file pull's time). */
static void recv_note_settled(struct recv_ctx *rc, int32_t ndx)
{
	pthread_mutex_lock(&rc->lock);
	if (rc->gen_waits_on == RECV_WAKE_ANY || rc->gen_waits_on == ndx)
		pthread_cond_broadcast(&rc->cond);
	pthread_mutex_unlock(&rc->lock);
}

/* Wake the generator whatever it waits for. */
static void recv_wake_generator(struct recv_ctx *rc)
{
	pthread_mutex_lock(&rc->lock);
	pthread_cond_broadcast(&rc->cond);
	pthread_mutex_unlock(&rc->lock);
}

void recv_queue_redo(struct recv_ctx *rc, int32_t ndx)
{
	pthread_mutex_lock(&rc->lock);
	if (rc->nredo == rc->redo_cap) {
		size_t cap = rc->redo_cap ? rc->redo_cap * 2 : 16;
		int32_t *r = realloc(rc->redo, cap * sizeof *r);
		if (r) {
			rc->redo = r;
			rc->redo_cap = cap;
		}
	}
	if (rc->nredo < rc->redo_cap)
		rc->redo[rc->nredo++] = ndx;
	pthread_cond_broadcast(&rc->cond);
	pthread_mutex_unlock(&rc->lock);
}

/* A write into the destination failed (reported): rsync's receiver
 * stops there with RERR_FILEIO (receiver.c: receive_data), since on a
 * full disk no later file would land either. Always false. */
static bool receiver_stop(struct rcv *r)
{
	struct recv_ctx *rc = r->rc;

	r->stopped = true;
	/* before the error code the generator watches for: it then sees a
	 * receiver that has failed, not one to wake (generator_main) */
	pthread_mutex_lock(&rc->lock);
	rc->receiver_failed = true;
	pthread_mutex_unlock(&rc->lock);
	wire_fail(&r->s->err, RERR_FILEIO, " ");
	recv_wake_generator(rc); /* a generator waiting for us stops now */
	return false;
}

static bool write_failed(struct rcv *r, const char *path)
{
	session_xfer_err(r->s, "write failed on \"%s\": %s", path, strerror(errno));
	return receiver_stop(r);
}

static bool apply_skip(struct rcv *r, int fd, const char *path)
{
	if (r->skip == 0 || fd < 0)
		return true;
	if (lseek(fd, (off_t)r->skip, SEEK_CUR) < 0) {
		session_xfer_err(r->s, "lseek of \"%s\" failed: %s", path, strerror(errno));
		return receiver_stop(r);
	}
	r->skip = 0;
	return true;
}

/* Ask the kernel to start writing what has landed in a temporary file.
 * ext4 (auto_da_alloc) flushes a file's whole data when it is renamed
 * over another, in the rename call itself, and waits whenever the disk
 * queue is full: for a big file that was a third of a second after the
 * last byte arrived (rsync pays it too). Started as the data lands, the
 * disk writes overlap the transfer and the rename finds little to do. */
static void writeback_landed(struct rcv *r, int fd, int64_t n)
{
	r->landed += n;
	if (!r->writeback_early || r->landed - r->writeback_from < WRITEBACK_STEP)
		return;
	/* Only a hint: an error here leaves the data to the usual writeback. */
	(void)sync_file_range(fd, r->writeback_from, r->landed - r->writeback_from,
			      SYNC_FILE_RANGE_WRITE);
	r->writeback_from = r->landed;
}

/* Write p[0..n) at the file's current position (after any pending skip). */
static bool write_piece(struct rcv *r, int fd, const char *path, const uint8_t *p, size_t n)
{
	if (!apply_skip(r, fd, path))
		return false;
	if (n == 0)
		return true;
	if (r->over_basis)
		r->data_len = 0; /* the write may change what the window holds */
	/* in place, a zero run is punched out of the old data (rsync 3.5:
	 * do_punch_hole) */
	if (fd >= 0 && !(r->o->sparse ? fs_write_sparse(fd, p, n, r->o->preallocate || r->o->inplace ||
								r->one_inplace)
				      : fd_write_all(fd, p, n)))
		return write_failed(r, path);
	writeback_landed(r, fd, (int64_t)n);
	return true;
}

static bool flush_out(struct rcv *r, int fd, const char *path)
{
	size_t n = r->out_len;

	r->out_len = 0;
	return write_piece(r, fd, path, r->out, n);
}

static bool emit(struct rcv *r, int fd, const char *path, const uint8_t *p, size_t n)
{
	r->written += (int64_t)n;
	progress_update(r->s, &r->prog, r->written, r->file_size);
	/* a piece as big as a bufferful goes out from where it is */
	if (r->out_len == 0 && n >= OUT_BUF / 2)
		return write_piece(r, fd, path, p, n);
	while (n > 0) {
		size_t k = OUT_BUF - r->out_len < n ? OUT_BUF - r->out_len : n;
		memcpy(r->out + r->out_len, p, k);
		r->out_len += k;
		p += k;
		n -= k;
		if (r->out_len == OUT_BUF && !flush_out(r, fd, path))
			return false;
	}
	return true;
}

/* --inplace with the destination as its own basis: is fd that file? */
static bool writing_over_basis(const struct rcv *r, int basis_fd, int fd)
{
	struct stat a, b;

	if (!(r->o->inplace || r->one_inplace) || basis_fd < 0 || fd < 0)
		return false;
	return fstat(basis_fd, &a) == 0 && fstat(fd, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/* A block that matched at the offset where it already lies in the file
 * being rewritten: move past it instead of writing it back (rsync's
 * receiver seeks there too). For a PostgreSQL segment with a few changed
 * pages this spares rewriting, and writing back to disk, the whole file. */
/* -S: a block left in place still has its runs of zeros punched out
 * (rsync: skip_matched through write_sparse). */
static bool sparse_in_place(struct rcv *r, int fd, const char *path, const uint8_t *p,
			    size_t len)
{
	if ((r->out_len && !flush_out(r, fd, path)) || !apply_skip(r, fd, path))
		return false;
	if (fd >= 0 && !fs_sparse_in_place(fd, p, len)) {
		session_err(r->s, "lseek of \"%s\" failed: %s", path, strerror(errno));
		return false;
	}
	r->written += (int64_t)len;
	progress_update(r->s, &r->prog, r->written, r->file_size);
	return true;
}

static bool skip_in_place(struct rcv *r, int fd, const char *path, size_t len)
{
	if (r->out_len && !flush_out(r, fd, path))
		return false;
	r->skip += (int64_t)len; /* one lseek for a run of such blocks */
	r->written += (int64_t)len;
	progress_update(r->s, &r->prog, r->written, r->file_size);
	return true;
}

/* k bytes of the basis at off, from the window in r->data (refilled
 * OUT_BUF at a time). A basis that shrank under us reads as zeros: the
 * sum check fails and the redo pass fetches the whole file. */
static const uint8_t *basis_bytes(struct rcv *r, int basis_fd, int64_t off, size_t k)
{
	if (off >= r->data_off && off + (int64_t)k <= r->data_off + (int64_t)r->data_len)
		return r->data + (off - r->data_off);
	ssize_t got = fs_pread_full(basis_fd, r->data, OUT_BUF, (off_t)off);
	size_t have = got > 0 ? (size_t)got : 0;
	r->data_off = off;
	r->data_len = have;
	if (have < k) {
		memset(r->data + have, 0, k - have);
		r->data_len = 0;
	}
	return r->data;
}

/* Copy the pending run of matched basis data to the output in one call;
 * the kernel clones it where the file system can (reflink). */
static bool flush_run(struct rcv *r, int basis_fd, int fd, const char *path)
{
	if (r->run_len == 0)
		return true;
	off_t off = r->run_off;
	int64_t want = r->run_len;
	r->run_len = 0;
	int64_t got = fs_copy_range(basis_fd, &off, fd, want);
	/* A basis that shrank under us reads as zeros, as in take_block():
	 * the sum check then fails and the redo pass fetches the file. */
	if (got >= 0 && got < want) {
		memset(r->data, 0, OUT_BUF);
		r->data_len = 0; /* the window no longer holds basis bytes */
	}
	while (got >= 0 && got < want) {
		size_t k = want - got < OUT_BUF ? (size_t)(want - got) : OUT_BUF;
		if (!fd_write_all(fd, r->data, k))
			got = -1;
		else
			got += (int64_t)k;
	}
	if (got == want) {
		writeback_landed(r, fd, want);
		return true;
	}
	return write_failed(r, path);
}

/* One block of the basis: its bytes go into the whole-file sum (and a
 * compressed stream's dictionary) in any case; to the output as a write,
 * as part of a run the kernel copies later (cloning), or not at all when
 * it already lies there in the file being updated in place. */
static bool take_block(struct rcv *r, int basis_fd, int fd, const char *path, off_t off,
		       size_t len, struct csum_ctx *sum, bool *write_ok, bool feed_sums,
		       const uint8_t *digest)
{
	bool clone = *write_ok && r->clone_ok && fd >= 0 && basis_fd >= 0;
	bool in_place = !clone && r->over_basis && (int64_t)off == r->written;
	/* A block left where it lies in the file updated in place: a
	 * block-wise sum takes its known digest (blockwise.h) and, unless
	 * compression wants them, nothing reads its bytes. A block that is
	 * copied is hashed as it is read, whatever the sums said of it. */
	bool summed = r->tree && digest && in_place && blockwise_at_boundary(r->tree);

	if (summed)
		blockwise_digest(r->tree, digest);

	if (clone) {
		if (r->run_len && r->run_off + r->run_len != off &&
		    !flush_run(r, basis_fd, fd, path))
			*write_ok = false;
		/* what is buffered comes before this block */
		if (*write_ok && !flush_out(r, fd, path))
			*write_ok = false;
		if (*write_ok) {
			if (r->run_len == 0)
				r->run_off = off;
			r->run_len += (int64_t)len;
			r->written += (int64_t)len;
			progress_update(r->s, &r->prog, r->written, r->file_size);
		}
	}
	/* the point of --sums-cache for a file changed in place: its
	 * unchanged blocks are never read */
	if (summed && !feed_sums && !token_dec_wants_blocks(r->dec)) {
		if (*write_ok && !skip_in_place(r, fd, path, len))
			*write_ok = false;
		return true;
	}
	/* Blocks may be larger than the buffer (up to 512 MiB below
	 * protocol 30): take them in pieces. */
	for (size_t done = 0; done < len;) {
		size_t k = len - done < OUT_BUF ? len - done : OUT_BUF;
		const uint8_t *p = basis_bytes(r, basis_fd, (int64_t)off + (int64_t)done, k);
		if (r->tree && !summed)
			blockwise_bytes(r->tree, p, k);
		else if (!r->tree)
			csum_file_update(sum, p, k);
		if (feed_sums)
			sums_builder_bytes(r->sb, p, k);
		if (!clone && *write_ok &&
		    !(!in_place ? emit(r, fd, path, p, k)
		      : r->o->sparse ? sparse_in_place(r, fd, path, p, k)
				     : skip_in_place(r, fd, path, k)))
			*write_ok = false;
		if (!token_dec_see(r->dec, p, k, done, len))
			return false;
		done += k;
	}
	return true;
}

/* Read the token stream of one file, writing the result to fd (or
 * discarding it when fd < 0). Returns false only on a stream error; a
 * local write error sets *write_ok = false and keeps reading. */
static bool receive_data(struct rcv *r, const struct sum_head *h, int basis_fd, int fd,
			 const char *path, struct csum_ctx *sum, bool *write_ok)
{
	struct session *s = r->s;
	bool over_basis = writing_over_basis(r, basis_fd, fd);

	r->run_len = 0;
	r->over_basis = over_basis;
	r->landed = 0;
	r->writeback_from = 0;
	/* only a temporary file is renamed; sparse writes seek */
	r->writeback_early = fd >= 0 && !r->o->inplace && !r->one_inplace && !r->o->sparse &&
			     !r->append;
	r->data_len = 0;
	r->skip = 0;
	token_dec_begin(r->dec, h->count);
	for (;;) {
		const uint8_t *p = NULL;
		size_t n = 0;
		int32_t token = 0;
		if (r->stopped)
			return false;
		int kind = token_dec_next(r->dec, &s->in, &p, &n, &token);
		if (kind == TOKEN_ERROR)
			return false;
		/* busy writing what came: the generator may be waiting on us
		 * and silent (receiver.c: MSK_ACTIVE_RECEIVER) */
		wire_keepalive(&s->out);
		if (kind == TOKEN_END)
			break;
		if (kind == TOKEN_DATA) {
			s->stats.literal_data += (int64_t)n;
			if (r->tree)
				blockwise_bytes(r->tree, p, n);
			else
				csum_file_update(sum, p, n);
			if (r->sb)
				sums_builder_bytes(r->sb, p, n);
			if (*write_ok && r->run_len && !flush_run(r, basis_fd, fd, path))
				*write_ok = false;
			if (*write_ok && !emit(r, fd, path, p, n))
				*write_ok = false;
			continue;
		}
		int64_t block = token;
		if (block < 0 || block >= h->count)
			return wire_fail(&s->err, RERR_PROTOCOL,
					 "block index %lld out of range (count %d) for \"%s\"",
					 (long long)block, h->count, path);
		if (basis_fd < 0 && r->discarding)
			continue;
		if (basis_fd < 0 && !r->basis_gone)
			return wire_fail(&s->err, RERR_PROTOCOL,
					 "sender referenced a block but no basis exists for \"%s\"", path);
		size_t len = (block == h->count - 1 && h->remainder) ? (size_t)h->remainder
								      : (size_t)h->blength;
		const uint8_t *digest = NULL;
		bool feed = r->sb && !sums_builder_basis_block(r->sb, h->blength, block, len, &digest);
		if (!take_block(r, basis_fd, fd, path, (off_t)block * h->blength, len, sum, write_ok,
				feed, digest))
			return false;
		s->stats.matched_data += (int64_t)len;
	}
	if (*write_ok && r->run_len && !flush_run(r, basis_fd, fd, path))
		*write_ok = false;
	r->run_len = 0;
	if (*write_ok && !flush_out(r, fd, path))
		*write_ok = false;
	return !r->stopped;
}

/* -y: a basis named by the sender's echo must be a level we search and a
 * plain name in the file's own directory (receiver.c: the FNAMECMP_FUZZY
 * case). */
static bool fuzzy_name_ok(const struct rcv *r, int type, const char *xname)
{
	int level = type - FNAMECMP_FUZZY;
	int levels = r->o->fuzzy > 1 ? r->rc->cfg.nalt + 1 : 1;

	return r->o->fuzzy && level < levels && *xname && !strchr(xname, '/') &&
	       strcmp(xname, ".") != 0 && strcmp(xname, "..") != 0;
}

/* Incremental recursion: a part announced between replies (rsync.c:
 * read_ndx_and_attrs), or the end of them, made visible to the
 * generator. */
static bool recv_next_part(struct rcv *r, int32_t ndx)
{
	struct recv_ctx *rc = r->rc;
	struct flist *fl = rc->fl;

	if (fl->eof)
		return wire_fail(&r->s->err, RERR_PROTOCOL,
				 "file list part after the end of the list (index %d)", ndx);
	size_t first = fl->count;
	if (ndx == NDX_FLIST_EOF)
		fl->eof = true;
	else if (!flist_recv_part(r->s, fl, NDX_FLIST_OFFSET - ndx))
		return false;
	if (rc->cfg.check_part && !rc->cfg.check_part(r->s, rc->cfg.check_ctx, fl, first, fl->count))
		return false;
	pthread_mutex_lock(&rc->lock);
	rc->parts_ready = fl->nparts;
	rc->parts_eof = fl->eof;
	pthread_cond_broadcast(&rc->cond);
	pthread_mutex_unlock(&rc->lock);
	return true;
}

static bool read_reply_header(struct rcv *r, int32_t *ndx, int *iflags, int *basis_type,
			      char *xname, size_t xsize)
{
	struct session *s = r->s;

	for (;;) {
		if (!wire_read_ndx(&s->in, ndx))
			return false;
		if (*ndx >= 0 || *ndx == NDX_DONE)
			break;
		if (s->inc_recurse && (*ndx == NDX_FLIST_EOF || *ndx <= NDX_FLIST_OFFSET)) {
			if (!recv_next_part(r, *ndx))
				return false;
			continue;
		}
		if (*ndx == NDX_DEL_STATS) {
			int32_t counts[5]; /* the client's generator counted them */
			if (!del_stats_read(s, counts))
				return false;
			continue;
		}
		return wire_fail(&s->err, RERR_PROTOCOL, "Invalid file index: %d", *ndx);
	}
	if (*ndx == NDX_DONE)
		return true;
	/* an index of a released part: the sender said it was done with it */
	if ((size_t)*ndx >= flist_slots(r->rc->fl) || (size_t)*ndx < r->rc->fl->released_slots ||
	    !(r->rc->fl->sorted[*ndx]->flags & FE_ACTIVE))
		return wire_fail(&s->err, RERR_PROTOCOL, "Invalid file index: %d (count %zu)", *ndx,
				 flist_slots(r->rc->fl));
	uint8_t type;
	if (!item_attrs_read(s, iflags, &type, xname, xsize))
		return false;
	/* The destination itself, the --*-dest dir we asked with, or a -y
	 * basis (the level checked with the xname below). */
	if (type != FNAMECMP_FNAME && type >= r->rc->cfg.nalt &&
	    !(type == FNAMECMP_PARTIAL_DIR && r->o->partial_dir) &&
	    !(type >= FNAMECMP_FUZZY && r->o->fuzzy) &&
	    !(type == FNAMECMP_BACKUP && r->o->backup && r->o->inplace))
		return wire_fail(&s->err, RERR_PROTOCOL,
				 "sender named a basis (type %#x) we did not ask for", type);
	*basis_type = type;
	if (*basis_type >= FNAMECMP_FUZZY && !fuzzy_name_ok(r, *basis_type, xname))
		return wire_fail(&s->err, RERR_PROTOCOL,
				 "refusing malicious fuzzy operation for \"%s\"", xname);
	if (xattr_request_follows(s, *iflags) && !xattr_recv_values(s, r->rc->fl->sorted[*ndx]))
		return false;
	return true;
}

/* -X on an entry that was not transferred: its xattrs changed, and only
 * we have the values the generator asked for (receiver.c: recv_files ->
 * set_file_attrs). */
static void apply_item_xattrs(struct rcv *r, int32_t ndx, int iflags)
{
	const struct file_entry *f = r->rc->fl->sorted[ndx];
	char path[MAXPATHLEN_WIRE * 2];
	const char *leaf = ".";
	int dirfd = r->rc->cfg.rootfd;

	if (!xattr_request_follows(r->s, iflags) ||
	    ((iflags & ITEM_XNAME_FOLLOWS) && (iflags & ITEM_LOCAL_CHANGE)) ||
	    !flist_path(f, path, sizeof path))
		return;
	if (r->rc->cfg.solo_name && !S_ISDIR(f->mode))
		leaf = r->rc->cfg.solo_name;
	else if (strcmp(path, ".") != 0)
		dirfd = dir_cursor_parent(&r->dirs, path, &leaf);
	if (dirfd >= 0)
		xattr_apply(r->s, dirfd, leaf, f, dirfd, leaf);
}

/* -y: the basis xname beside the file, in the destination (level 0) or
 * the same dir under a --*-dest dir; a name the module's rules refuse is
 * not read (receiver.c: check_filter on fnamecmp). */
static int open_fuzzy_basis(struct rcv *r, const struct file_entry *f, int level,
			    const char *xname)
{
	const struct recv_ctx *rc = r->rc;
	char inmod[MAXPATHLEN_WIRE * 3];
	struct dir_cursor c;

	if (rc->cfg.daemon_filters) {
		snprintf(inmod, sizeof inmod, "%s%s%s%s%s", rc->cfg.daemon_dest,
			 *rc->cfg.daemon_dest ? "/" : "", f->dirname ? f->dirname : "",
			 f->dirname ? "/" : "", xname);
		if (filter_check(rc->cfg.daemon_filters, inmod, false, false) < 0)
			return -1;
	}
	if (level > 0 && (level > rc->cfg.nalt || rc->cfg.alt_fd[level - 1] < 0))
		return -1;
	dir_cursor_init(&c, level == 0 ? rc->cfg.rootfd : rc->cfg.alt_fd[level - 1]);
	c.follow = r->dirs.follow;
	c.beneath = r->dirs.beneath;
	int dirfd = dir_cursor_open(&c, f->dirname ? f->dirname : "");
	int fd = dirfd >= 0 ? openat(dirfd, xname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
	dir_cursor_close(&c);
	return fd;
}

/* Open the basis the generator computed sums from: the destination file
 * itself, or its namesake in a --*-dest dir. */
static int open_basis(struct rcv *r, const struct file_entry *f, const char *path, int type,
		      const char *xname)
{
	const char *leaf;
	int dirfd;

	if (type >= FNAMECMP_FUZZY)
		return open_fuzzy_basis(r, f, type - FNAMECMP_FUZZY, xname);

	if (type == FNAMECMP_PARTIAL_DIR) {
		int pfd = partial_dir_open(r->rc, path, false);
		int fd = pfd >= 0 ? openat(pfd, partial_leaf(&r->rc->cfg, path),
					   O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
				  : -1;
		if (pfd >= 0)
			close(pfd);
		return fd;
	}
	if (type != FNAMECMP_FNAME && type != FNAMECMP_BACKUP) {
		struct dir_cursor c;
		dir_cursor_init(&c, r->rc->cfg.alt_fd[type]);
		dirfd = dir_cursor_parent(&c, path, &leaf);
		int fd = dirfd >= 0 ? openat(dirfd, leaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
		dir_cursor_close(&c);
		return fd;
	}
	if (r->rc->cfg.solo_name) {
		dirfd = r->rc->cfg.rootfd;
		leaf = r->rc->cfg.solo_name;
	} else {
		dirfd = dir_cursor_parent(&r->dirs, path, &leaf);
	}
	if (dirfd < 0)
		return -1;
	(void)f;
	if (type == FNAMECMP_BACKUP)
		return backup_open_basis(r->rc, dirfd, leaf, path);
	return openat(dirfd, leaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
}

static void discard_failed(struct rcv *r, int32_t ndx, const char *path, bool redo_allowed)
{
	struct recv_ctx *rc = r->rc;
	/* a file updated in place keeps what was written (receiver.c) */
	const char *kept = r->o->inplace ? "retained" : "discarded";

	if (redo_allowed && !(recv_state(rc, ndx) & FS_REDO)) {
		recv_state_add(rc, ndx, FS_REDO);
		if (info_ge(r->o, INFO_NAME, 1))
			session_info(r->s,
				     "WARNING: %s failed verification -- update %s (will try again).\n",
				     path, kept);
		recv_queue_redo(rc, ndx);
	} else {
		session_xfer_err_plain(r->s, "ERROR: %s failed verification -- update %s.", path,
				       kept);
		recv_state_add(rc, ndx, FS_FAILED);
		r->s->got_xfer_error = true;
	}
}

static int open_basis(struct rcv *r, const struct file_entry *f, const char *path, int type,
		      const char *xname);

/* Read one file's data without applying it (receiver.c:
 * discard_receive_data). basis_type >= 0: the basis our generator sent
 * sums of, read so that a compressed stream's decoder sees the matched
 * data as the sender's encoder did; -1: none (rsync reads none either). */
static bool discard_file(struct rcv *r, const struct file_entry *f, const char *path,
			 int basis_type, const char *xname)
{
	struct session *s = r->s;
	struct sum_head h;
	struct csum_ctx sum;
	uint8_t theirs[CSUM_MAX_DIGEST];
	bool write_ok = false;

	if (!sum_head_read(r->s, &h))
		return false;
	int basis_fd = h.count > 0 && basis_type >= 0 ? open_basis(r, f, path, basis_type, xname) : -1;
	csum_file_init(&sum, s->xfer_csum, s->seed);
	r->discarding = true;
	bool ok = receive_data(r, &h, basis_fd, -1, path, &sum, &write_ok);
	r->discarding = false;
	if (basis_fd >= 0)
		close(basis_fd);
	return ok && wire_read(&s->in, theirs, csum_len(s->xfer_csum));
}

static bool note_delayed(struct rcv *r, int32_t ndx)
{
	if (r->ndelayed == r->delayed_cap) {
		size_t cap = r->delayed_cap ? r->delayed_cap * 2 : 256;
		int32_t *v = realloc(r->delayed, cap * sizeof *v);
		if (!v)
			return wire_fail(&r->s->err, RERR_MALLOC, "out of memory");
		r->delayed = v;
		r->delayed_cap = cap;
	}
	r->delayed[r->ndelayed++] = ndx;
	return true;
}

/* --delay-updates: every file has arrived; now rename them all from their
 * partial dirs into place (receiver.c: handle_delayed_updates). */
static void finish_delayed(struct rcv *r)
{
	struct recv_ctx *rc = r->rc;
	char path[MAXPATHLEN_WIRE * 2];

	for (size_t i = 0; i < r->ndelayed; i++) {
		int32_t ndx = r->delayed[i];
		const struct file_entry *f = rc->fl->sorted[ndx];
		const char *leaf;
		if (!flist_path(f, path, sizeof path))
			continue;
		int dirfd = rc->cfg.solo_name ? rc->cfg.rootfd : dir_cursor_parent(&r->dirs, path, &leaf);
		if (rc->cfg.solo_name)
			leaf = rc->cfg.solo_name;
		int pfd = dirfd >= 0 ? partial_dir_open(rc, path, false) : -1;
		if (pfd < 0) {
			session_xfer_err(r->s, "rename \"%s/%s\" -> \"%s\" failed: %s",
					 r->o->partial_dir, partial_leaf(&rc->cfg, path), path,
					 strerror(errno));
			r->s->got_xfer_error = true;
			continue;
		}
		if (r->o->backup)
			backup_make(rc, dirfd, leaf, path);
		if (renameat(pfd, partial_leaf(&rc->cfg, path), dirfd, leaf) < 0) {
			session_xfer_err(r->s, "rename \"%s/%s\" -> \"%s\" failed: %s",
					 r->o->partial_dir, partial_leaf(&rc->cfg, path), path,
					 strerror(errno));
			r->s->got_xfer_error = true;
		} else {
			recv_report_success(rc, ndx, path, true);
		}
		close(pfd);
		partial_remove(rc, path); /* only the dir is left to go */
	}
	r->ndelayed = 0;
}

/* --append: the data up to what our sum head announced stays as it is;
 * with --append-verify it goes into the checksum (receiver.c:
 * receive_data's append_mode branch). The writes go on from there. */
static bool skip_appended_prefix(struct rcv *r, const struct sum_head *h, int basis_fd, int fd,
				 struct csum_ctx *sum)
{
	int64_t have = (int64_t)h->count * h->blength;

	if (h->remainder)
		have -= h->blength - h->remainder;
	if (have < 0)
		have = 0;
	for (int64_t off = 0; r->append == 2 && basis_fd >= 0 && off < have;) {
		size_t want = have - off < OUT_BUF ? (size_t)(have - off) : OUT_BUF;
		ssize_t n = fs_pread_full(basis_fd, r->data, want, off);
		if (n <= 0)
			break;
		csum_file_update(sum, r->data, (size_t)n);
		off += n;
	}
	r->written = have;
	return lseek(fd, (off_t)have, SEEK_SET) == (off_t)have;
}

/* --sums-cache: start the new sums of file ndx, in blocks as long as the
 * generator will ask for when the file is the basis. Not for an appended
 * file (its start is not read) or a delayed one (its place is not known
 * here). */
static struct sums_builder *sums_start(struct rcv *r, int32_t ndx, const struct file_entry *f,
				       struct temp_file *tf)
{
	struct session *s = r->s;
	struct sum_head nh;

	sums_builder_end(&r->sb_store);
	if (!r->rc->cfg.sums)
		return NULL;
	sum_sizes_sqroot(&nh, fe_size(f), s->protocol, r->o->block_size, csum_len(s->xfer_csum),
			 false);
	/* begun even when unused: it takes the generator's hand-over */
	sums_builder_begin(&r->sb_store, r->rc->cfg.sums, ndx, fe_size(f), nh.blength);
	if (r->append || (r->o->delay_updates && !r->o->inplace) || r->sb_store.failed)
		return NULL;
	tf->want_placed = true;
	return &r->sb_store;
}

/* Receive one file's data into place. Returns false on a stream error. */
static bool recv_one_file(struct rcv *r, int32_t ndx, int iflags, int basis_type,
			  const char *xname)
{
	struct recv_ctx *rc = r->rc;
	struct session *s = r->s;
	struct file_entry *f = rc->fl->sorted[ndx];
	char path[MAXPATHLEN_WIRE * 2];
	struct sum_head h;
	struct csum_ctx sum;
	uint8_t ours[CSUM_MAX_DIGEST], theirs[CSUM_MAX_DIGEST];
	struct temp_file tf;
	bool write_ok = true;

	r->sb = NULL;
	if (!flist_path(f, path, sizeof path))
		return wire_fail(&s->err, RERR_PROTOCOL, "file name too long");
	if (!S_ISREG(f->mode))
		return wire_fail(&s->err, RERR_PROTOCOL,
				 "received request to transfer non-regular file: %d", ndx);
	if (r->o->read_batch && rc->fl->inc && !batch_wait_decided(rc, (size_t)ndx))
		return wire_fail(&s->err, RERR_STREAMIO, "generator stopped");
	if (!(recv_state(rc, ndx) & FS_REQUESTED) && r->o->read_batch &&
	    !(hlink_member(rc, f) && hlink_batch_adopt(rc, ndx, f))) {
		/* Our generator found it up to date: the batch's update is
		 * not for this copy. */
		session_info(s, "(Skipping batched update for \"%s\")\n", path);
		return discard_file(r, f, path, -1, NULL);
	}
	if (!(recv_state(rc, ndx) & FS_REQUESTED))
		return wire_fail(&s->err, RERR_PROTOCOL, "sender sent \"%s\", which we did not request",
				 path);
	recv_log_item(rc, f, iflags, NULL);
	/* A dry run gets no data, except from a batch being read, or for
	 * an --only-write-batch client, which records it (an
	 * --only-write-batch server's sender diverts it away from us). */
	if (r->o->dry_run)
		recv_state_add(rc, ndx, FS_DONE); /* nothing more will come for it */
	if (r->o->dry_run && r->o->read_batch)
		return discard_file(r, f, path, -1, NULL);
	if (r->o->dry_run && r->o->write_batch < 0 && !s->am_server)
		return discard_file(r, f, path, basis_type, xname);
	if (r->o->dry_run)
		return true;
	uint64_t taken = wire_in_taken(&s->in);
	if (!sum_head_read(r->s, &h))
		return false;
	/* with CF_INPLACE_PARTIAL_DIR a --partial-dir basis is written over
	 * in place, whole file or not (receiver.c: one_inplace) */
	bool partial_inplace = (s->compat_flags & CF_INPLACE_PARTIAL_DIR) &&
			       basis_type == FNAMECMP_PARTIAL_DIR && !r->append;
	int basis_fd = h.count > 0 || partial_inplace ? open_basis(r, f, path, basis_type, xname)
						      : -1;
	r->one_inplace = partial_inplace && basis_fd >= 0;
	/* A -y basis that went away meanwhile fails the sum check, and the
	 * redo pass asks for the whole file (rsync: "failed to open"). */
	r->basis_gone = basis_fd < 0 && basis_type >= FNAMECMP_FUZZY;
	/* Matched runs are copied by the kernel, except into a sparse file
	 * (it would write the holes) and from the file being updated in
	 * place (the ranges overlap). */
	r->clone_ok = r->use_clone && !r->o->sparse && !r->one_inplace &&
		      !(r->o->inplace && basis_type == FNAMECMP_FNAME);
	if (!(r->one_inplace ? temp_open_partial(&tf, rc, &r->dirs, path)
			     : temp_open(&tf, rc, &r->dirs, path, f)))
		write_ok = false;
	csum_file_init(&sum, s->xfer_csum, s->seed);
	r->sb = sums_start(r, ndx, f, &tf);
	r->tree = NULL;
	if (blockwise_applies(s, &h, r->append)) {
		r->tree = &r->tree_store;
		blockwise_begin(r->tree, s->xfer_csum, s->seed, s->proper_seed_order, h.blength);
	}
	s->stats.total_transferred_size += fe_size(f);
	r->written = 0;
	r->file_size = fe_size(f);
	if (r->append && write_ok && !skip_appended_prefix(r, &h, basis_fd, tf.fd, &sum)) {
		session_xfer_err(s, "lseek of \"%s\" failed: %s", path, strerror(errno));
		receiver_stop(r);
		write_ok = false;
	}
	progress_update(s, &r->prog, r->written, fe_size(f));
	bool ok = receive_data(r, &h, basis_fd, write_ok ? tf.fd : -1, path, &sum, &write_ok);
	if (basis_fd >= 0)
		close(basis_fd);
	if (r->tree)
		blockwise_end(r->tree, ours);
	else
		csum_file_final(&sum, ours);
	r->tree = NULL;
	if (!ok) {
		temp_abandon(&tf);
		return false;
	}
	size_t n = csum_len(s->xfer_csum);
	if (!wire_read(&s->in, theirs, n)) {
		temp_abandon(&tf);
		return false;
	}
	/* %c stays 0: rsync's receiver process writes nothing (the block
	 * sums are its generator's) */
	struct xfer_facts facts = {.bytes = (int64_t)(wire_in_taken(&s->in) - taken), .sum = ours};
	session_log_transferred(s, f, iflags,
				rc->cfg.solo_name && S_ISREG(f->mode) ? f->basename : NULL, &facts);
	if (!write_ok) {
		temp_discard(&tf);
		recv_state_add(rc, ndx, FS_FAILED);
		s->got_xfer_error = true;
		return true;
	}
	if (memcmp(ours, theirs, n) != 0 && s->xfer_csum != CSUM_NONE) {
		temp_discard(&tf);
		/* A batch holds no second copy to ask for. */
		discard_failed(r, ndx, path, !r->o->read_batch);
		return true;
	}
	xattr_apply(s, tf.tmpdirfd, tf.tmpname, f, tf.dirfd, tf.leaf);
	bool delay = r->o->delay_updates && !r->o->inplace;
	if (!(delay ? temp_commit_delayed(&tf, f) : temp_commit(&tf, f))) {
		recv_state_add(rc, ndx, FS_FAILED);
		s->got_xfer_error = true;
		return true;
	}
	if (delay) {
		if (!note_delayed(r, ndx))
			return false;
	} else {
		if (basis_type == FNAMECMP_PARTIAL_DIR)
			partial_remove(rc, path); /* it served as the basis */
		recv_report_success(rc, ndx, path, true);
		if (r->sb && tf.placed_ok)
			sums_builder_commit(r->sb, path, &tf.placed);
	}
	/* only now: with incremental lists FS_DONE lets the generator end
	 * the part, and the sender frees it; MSG_SUCCESS must come first */
	recv_state_add(rc, ndx, FS_DONE);
	s->stats.xferred_files++;
	s->progress_ir = rc->fl->inc && !rc->fl->eof;
	progress_end(s, &r->prog, r->written, flist_file_index(rc->fl, ndx));
	if (s->hooks.xfer_log)
		s->hooks.xfer_log(s->hooks.xfer_log_ctx, f, iflags);
	if (iflags & ITEM_IS_NEW) {
		stats_bump(&s->stats.created_files);
		stats_bump(&s->stats.created_reg);
	}
	return true;
}

/* The phase's in-place files are on disk before the generator hears the
 * phase is over (syncer.h). */
static void sync_phase(struct rcv *r)
{
	char msg[600];

	if (r->rc->cfg.syncer && !syncer_drain(r->rc->cfg.syncer, msg, sizeof msg)) {
		session_xfer_err(r->s, "%s", msg);
		r->s->got_xfer_error = true;
	}
}

/* The sender's statistics after its last phase (main.c: handle_stats). */
static bool read_stats(struct rcv *r)
{
	struct session *s = r->s;
	int64_t v[5] = {0};
	int n = s->protocol >= 29 ? 5 : 3;

	for (int i = 0; i < n; i++)
		if (!wire_read_varlong30(&s->in, 3, &v[i]))
			return false;
	/* The sender's "read" is what we wrote, and the other way round. */
	s->stats.total_read = v[1];
	s->stats.total_written = v[0];
	s->stats.flist_buildtime_ms = v[3];
	s->stats.flist_xfertime_ms = v[4];
	return true;
}

static bool receive_replies(struct rcv *r)
{
	struct session *s = r->s;
	int max_phase = s->protocol >= 29 ? 2 : 1;
	char xname[MAXPATHLEN_WIRE];
	int32_t ndx;
	int iflags, basis_type;

	for (;;) {
		if (!read_reply_header(r, &ndx, &iflags, &basis_type, xname, sizeof xname))
			return false;
		if (ndx == NDX_DONE && r->parts_freed < r->rc->fl->nparts &&
		    ++r->parts_freed < r->rc->fl->nparts) {
			/* the sender is done with one part: no phase */
			flist_release_parts(s, r->rc->fl, r->parts_freed);
			recv_release_state(r->rc);
			continue;
		}
		if (ndx == NDX_DONE) {
			r->phase_dones++;
			r->append = 0; /* a redo rewrites whole files */
			sync_phase(r);
			if (r->phase_dones == max_phase && r->ndelayed)
				finish_delayed(r); /* before the generator touches up dirs */
			recv_note_done(r->rc);
			if (r->phase_dones > max_phase)
				break;
			continue;
		}
		if (!(iflags & ITEM_TRANSFER)) {
			recv_log_item(r->rc, r->rc->fl->sorted[ndx], iflags, xname[0] ? xname : NULL);
			apply_item_xattrs(r, ndx, iflags);
			continue;
		}
		if (r->phase_dones >= 2)
			return wire_fail(&s->err, RERR_PROTOCOL, "got transfer request in phase 2");
		/* a file we asked for again is a redo: whole, not appended */
		int append = r->append;
		if (recv_state(r->rc, ndx) & FS_REDO)
			r->append = 0;
		bool ok = recv_one_file(r, ndx, iflags, basis_type, xname);
		r->append = append;
		if (!ok)
			return false;
		if (r->rc->fl->inc)
			recv_note_settled(r->rc, ndx); /* the generator ends parts by it */
	}
	if (r->o->read_batch)
		batch_report_missing(r->rc);
	if (!s->am_server && !read_stats(r))
		return false;
	if (s->protocol >= 31) {
		if (!read_reply_header(r, &ndx, &iflags, &basis_type, xname, sizeof xname))
			return false;
		if (ndx != NDX_DONE)
			return wire_fail(&s->err, RERR_PROTOCOL, "Invalid packet at end of run (%d)", ndx);
		recv_note_done(r->rc);
	}
	return true;
}

bool receiver_run(struct recv_ctx *rc)
{
	struct rcv r = {.rc = rc, .s = rc->s, .o = rc->s->opts, .append = rc->s->opts->append};
	bool ok;

	/* FERRY_NO_CLONE=1 turns kernel copies off, for measuring them */
	const char *no_clone = getenv("FERRY_NO_CLONE");
	r.use_clone = !(no_clone && *no_clone == '1');
	dir_cursor_init(&r.dirs, rc->cfg.rootfd);
	r.dirs.follow = recv_follows_dest_links(r.o);
	r.dirs.beneath = true; /* as the generator: -K never leaves the destination */
	r.data = malloc(OUT_BUF);
	r.out = malloc(OUT_BUF);
	/* ... except in a module with "insecure links", as the generator */
	r.dirs.beneath = !(rc->cfg.confined && r.o->insecure_links);
	r.dec = token_dec_new(rc->s->compress, rc->s->protocol, &rc->s->err);
	ok = r.data && r.out && r.dec ? true
				      : wire_fail(&rc->s->err, RERR_MALLOC, "out of memory");
	/* A batch runs ahead of our generator: let it decide first. */
	if (ok && r.o->read_batch && !rc->fl->inc)
		ok = batch_wait_listed(rc);
	ok = ok && receive_replies(&r);
	token_dec_free(r.dec);
	sums_builder_end(&r.sb_store);
	free(r.data);
	free(r.delayed);
	free(r.out);
	dir_cursor_close(&r.dirs);
	pthread_mutex_lock(&rc->lock);
	if (ok)
		rc->receiver_finished = true;
	else
		rc->receiver_failed = true;
	pthread_cond_broadcast(&rc->cond);
	pthread_mutex_unlock(&rc->lock);
	return ok;
}
