/*
 * The sender: answers each request of the generator with the file's delta
 * against the receiver's block sums (sender.c: send_files, receive_sums;
 * main.c: handle_stats, read_final_goodbye).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/base/byteorder.h"
#include "proto/core/itemlog.h"
#include "proto/base/alloc.h"
#include "proto/core/msg.h"
#include "proto/delta/batch.h"
#include "proto/meta/xattrs.h"
#include "proto/base/fileio.h"
#include "proto/core/heap_stats.h"
#include "proto/base/oppath.h"
#include "proto/delta/match.h"
#include "proto/core/progress.h"
#include "proto/send/sender.h"
#include "proto/delta/token.h"
#include "proto/delta/token_pipe.h"
#include "proto/delta/sum_head.h"
#include "proto/core/item_attrs.h"

struct snd {
	struct session *s;
	struct send_list *sl;
	struct csum_ctx sum;
	struct progress prog;
	int64_t sent_ofs, file_size;
	struct dir_cursor *dirs;   /* one per root */
	struct dir_cursor *rm_dirs; /* --remove-source-files: one per root */
	int append;                /* --append(-verify) while in the first phase */
	struct token_enc *enc;     /* the token stream writer, one per session */
	struct token_pipe *pipe;   /* enc on a compressor thread (large files), or NULL */
	bool pipe_tried;           /* the pipe was asked for once (NULL: not to be had) */
	bool piping;               /* this file's tokens go through the pipe */
	struct token_skip *skip;   /* suffixes sent with no compression effort */
	struct match_ahead ahead;  /* the current file's blocks hashed ahead */
	uint8_t digest[CSUM_MAX_DIGEST]; /* the last file's whole-file sum (%C) */
	int matches;               /* blocks matched, for -vv's report */
	int64_t hash_hits, false_alarms; /* the matcher's, ditto */
	uint8_t append_buf[32 * 1024]; /* --append's reads */
};

static bool read_request(struct snd *d, int32_t *ndx, int *iflags, uint8_t *type, char *xname,
			 size_t xsize)
{
	struct session *s = d->s;

	for (;;) {
		if (!wire_read_ndx(&s->in, ndx))
			return false;
		if (*ndx >= 0 || *ndx == NDX_DONE)
			break;
		if (*ndx != NDX_DEL_STATS)
			return wire_fail(&s->err, RERR_PROTOCOL, "Invalid file index: %d", *ndx);
		int32_t st[5];
		if (!del_stats_read(s, st))
			return false;
		/* the receiver's deletions, for our --stats (rsync.c:
		 * read_del_stats): regular files first, then the others */
		int64_t all = (int64_t)st[0] + st[1] + st[2] + st[3] + st[4];
		s->stats.deleted_reg = st[0];
		s->stats.deleted_dirs = st[1];
		s->stats.deleted_symlinks = st[2];
		s->stats.deleted_devices = st[3];
		s->stats.deleted_specials = st[4];
		s->stats.deleted_files = all > INT32_MAX ? INT32_MAX : (int)all;
		if (s->am_server) {
			/* pass the receiver's deletion counts on to the client */
			if (!wire_write_ndx(&s->out, NDX_DEL_STATS))
				return false;
			for (int i = 0; i < 5; i++)
				if (!wire_write_varint(&s->out, st[i]))
					return false;
		}
	}
	if (*ndx == NDX_DONE)
		return true;
	if (!flist_send_entry(d->sl, *ndx))
		return wire_fail(&s->err, RERR_PROTOCOL, "Invalid file index: %d (count %zu)", *ndx,
				 flist_send_slots(d->sl));
	flist_inc_note_request(d->sl, *ndx);
	if (!item_attrs_read(s, iflags, type, xname, xsize))
		return false;
	if (xattr_request_follows(s, *iflags) &&
	    !xattr_sender_read_request(s, flist_send_entry(d->sl, *ndx)))
		return false;
	return true;
}

/* -X: the values the generator asked for follow the echoed item
 * (sender.c: write_ndx_and_attrs -> send_xattr_request). */
static bool send_xattr_values(struct snd *d, int32_t ndx)
{
	struct file_entry *f = flist_send_entry(d->sl, ndx);
	uint32_t root = flist_send_root(d->sl, ndx);
	char path[MAXPATHLEN_WIRE * 2];

	if (!flist_path(f, path, sizeof path))
		return wire_fail(&d->s->err, RERR_PROTOCOL, "file name too long");
	return xattr_sender_send_values(d->s, root < d->sl->roots.count ? d->sl->roots.fds[root] : -1,
					path, f);
}

/* Echo the request header back (sender.c: write_ndx_and_attrs). */
static bool echo_header(struct snd *d, int32_t ndx, int iflags, uint8_t type, const char *xname)
{
	struct session *s = d->s;

	if (!wire_write_ndx(&s->out, ndx))
		return false;
	if (s->protocol < 29)
		return true;
	return wire_write_u16(&s->out, (uint16_t)iflags) &&
	       (!(iflags & ITEM_BASIS_TYPE_FOLLOWS) || wire_write_u8(&s->out, type)) &&
	       (!(iflags & ITEM_XNAME_FOLLOWS) || wire_write_vstring(&s->out, xname)) &&
	       (!xattr_request_follows(s, iflags) || send_xattr_values(d, ndx));
}

static void out_strong(void *ctx, const uint8_t *p, size_t n, uint8_t *out);

/* Once the sum head is in, hash our own blocks on a second thread while
 * the sums arrive (match_ahead.c). An --inplace receiver too: the table
 * holds the source's sums, whichever basis blocks they are matched to. */
static void start_ahead(struct snd *d, int fd, const struct sum_head *h)
{
	struct csum_ctx file_sum;
	/* a block-wise file sum takes the helper's digests, not its sum */
	bool blockwise = blockwise_applies(d->s, h, d->append);

	csum_file_init(&file_sum, d->s->xfer_csum, d->s->seed);
	if (fd >= 0)
		match_ahead_start(&d->ahead, fd, h, out_strong, d, blockwise ? NULL : &file_sum,
				  blockwise ? blockwise_width(d->s->xfer_csum) : 0);
}

/* Room for more of a file's block sums, doubling from 4096 up to the
 * count the head announced: the arrays grow as the sums arrive, so a head
 * announcing more than the peer sends costs no memory up front. sum2 gets
 * a spare byte per block, zeroed, as before. */
static bool sums_grow(struct session *s, const struct sum_head *h, uint32_t **sum1,
		      uint8_t **sum2, size_t *cap)
{
	size_t count = (size_t)h->count, s2 = (size_t)h->s2length + 1;
	size_t n = *cap ? *cap * 2 : 4096;

	if (n > count)
		n = count;
	uint32_t *v1 = xrealloc_array(&s->err, *sum1, n, sizeof **sum1);
	if (!v1)
		return false;
	*sum1 = v1;
	uint8_t *v2 = xrealloc_array(&s->err, *sum2, n, s2);
	if (!v2)
		return false;
	*sum2 = v2;
	memset(v2 + *cap * s2, 0, (n - *cap) * s2);
	*cap = n;
	return true;
}

/* The receiver's sum head and block sums, bounded before any allocation
 * (io.c: read_sum_head; sender.c: receive_sums; CVE-2024-12084). */
static bool read_sums(struct session *s, struct sum_head *h, uint32_t **sum1, uint8_t **sum2,
		      bool head_only, struct snd *d, int fd)
{
	*sum1 = NULL;
	*sum2 = NULL;
	if (!sum_head_read(s, h))
		return false;
	if (h->count == 0 || head_only)
		return true;
	if (d)
		start_ahead(d, fd, h);
	size_t cap = 0;
	for (int32_t i = 0; i < h->count; i++) {
		int32_t v;
		if ((size_t)i == cap && !sums_grow(s, h, sum1, sum2, &cap))
			return false;
		if (!wire_read_i32(&s->in, &v) ||
		    !wire_read(&s->in, *sum2 + (size_t)i * (size_t)h->s2length, (size_t)h->s2length))
			return false;
		(*sum1)[i] = (uint32_t)v;
	}
	return true;
}

bool sender_read_sums(struct session *s, struct sum_head *h, uint32_t **sum1, uint8_t **sum2)
{
	return read_sums(s, h, sum1, sum2, false, NULL, -1);
}

/* rsync's "Number of created files" comes from the items it sees. */
static void count_created(struct stats *st, const struct file_entry *f, int iflags)
{
	if (!(iflags & ITEM_IS_NEW))
		return;
	st->created_files++;
	if (S_ISDIR(f->mode))
		st->created_dirs++;
	else if (S_ISLNK(f->mode))
		st->created_symlinks++;
	else if (S_ISCHR(f->mode) || S_ISBLK(f->mode))
		st->created_devices++;
	else if (!S_ISREG(f->mode))
		st->created_specials++;
}

/* ---- token callbacks ---- */

static bool out_literal(void *ctx, const uint8_t *p, size_t n)
{
	struct snd *d = ctx;

	d->s->stats.literal_data += (int64_t)n;
	if (d->piping)
		return token_pipe_literal(d->pipe, p, n);
	return token_enc_literal(d->enc, &d->s->out, p, n);
}

static bool out_block(void *ctx, int32_t block, const uint8_t *data, size_t n)
{
	struct snd *d = ctx;

	d->s->stats.matched_data += (int64_t)n;
	d->matches++;
	if (d->piping)
		return token_pipe_block(d->pipe, block, data, n);
	return token_enc_block(d->enc, &d->s->out, block, data, n);
}

static bool out_feed(void *ctx, const uint8_t *p, size_t n)
{
	struct snd *d = ctx;

	if (p) /* NULL: summed ahead (match_ahead.c) */
		csum_file_update(&d->sum, p, n);
	d->sent_ofs += (int64_t)n;
	progress_update(d->s, &d->prog, d->sent_ofs, d->file_size);
	return true;
}

static void out_strong(void *ctx, const uint8_t *p, size_t n, uint8_t *out)
{
	struct snd *d = ctx;

	csum_block(d->s->xfer_csum, d->s->seed, d->s->proper_seed_order, p, n, out);
}

/* The source directory entry ndx was listed from, as its argument named
 * it (rsync's F_PATHNAME, which the sender's %f starts with). */
static const char *source_dir(const struct send_list *sl, int32_t ndx)
{
	uint32_t root = flist_send_root(sl, ndx);

	return root < sl->roots.count ? sl->roots.paths[root] : NULL;
}

static int open_source(struct snd *d, int32_t ndx, const struct file_entry *f)
{
	char path[MAXPATHLEN_WIRE * 2];
	const char *leaf;
	uint32_t root = flist_send_root(d->sl, ndx);

	if (!flist_path(f, path, sizeof path) || root >= d->sl->roots.count) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (strcmp(path, ".") == 0)
		return -1;
	const struct ferry_opts *o = d->s->opts;
	bool noatime = o->open_noatime;
	if (d->sl->open_plain)
		return fs_open_source(d->sl->roots.fds[root], path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC,
				      noatime);
	int dirfd = dir_cursor_parent(&d->dirs[root], path, &leaf);
	int fd = dirfd < 0 ? -1
			   : fs_open_source(dirfd, leaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, noatime);
	if (fd >= 0 || (errno != ELOOP && errno != ENOTDIR) ||
	    !(o->copy_links || o->copy_unsafe_links || o->copy_dirlinks))
		return fd;
	/* An entry reached through a link the file list followed: follow it
	 * again (in a daemon module never out of the module). */
	if (!d->sl->confined || o->insecure_links) /* module "insecure links" */
		return fs_open_source(d->sl->roots.fds[root], path, O_RDONLY | O_CLOEXEC, noatime);
	return oppath_open_from(d->sl->module_fd, d->sl->roots.fds[root], path, O_RDONLY,
				OPPATH_QUIET | OPPATH_ANY_OWNER);
}

/* --append: how much the receiver already has, from its sum head
 * (match.c: the append_mode branch), never more than we have. */
static int64_t append_offset(const struct sum_head *h, int64_t size)
{
	int64_t have = (int64_t)h->count * h->blength;

	if (h->remainder)
		have -= h->blength - h->remainder;
	return have < 0 ? 0 : have > size ? size : have;
}

/* --append: send the file from `have` on as literal data; with
 * --append-verify the whole file goes into the checksum. */
static bool send_appended(struct snd *d, int fd, int64_t size, int64_t have, int *read_errno)
{
	uint8_t *buf = d->append_buf;
	int64_t off = 0;

	while (d->append == 2 && off < have) {
		size_t want = have - off < (int64_t)sizeof d->append_buf ? (size_t)(have - off) : sizeof d->append_buf;
		ssize_t n = fs_pread_full(fd, buf, want, off);
		if (n <= 0)
			break;
		csum_file_update(&d->sum, buf, (size_t)n);
		off += n;
	}
	d->sent_ofs = have;
	for (off = have; off < size;) {
		size_t want = size - off < (int64_t)sizeof d->append_buf ? (size_t)(size - off) : sizeof d->append_buf;
		ssize_t n = fs_pread_full(fd, buf, want, off);
		if (n <= 0) {
			/* shrank under us: the spoilt checksum tells the
			 * receiver (send_one) */
			*read_errno = n == 0 ? ENODATA : errno;
			break;
		}
		if (!out_literal(d, buf, (size_t)n) || !out_feed(d, buf, (size_t)n))
			return false;
		off += n;
	}
	return true;
}

/* Will the receiver write this file over its own basis as it goes?
 * mirrors rsync sender.c: send_files(), updating_basis_file. */
static bool updating_basis(const struct session *s, uint8_t type)
{
	if ((s->compat_flags & CF_INPLACE_PARTIAL_DIR) && type == FNAMECMP_PARTIAL_DIR)
		return true;
	if (!s->opts->inplace)
		return false;
	return s->protocol >= 29 ? type == FNAMECMP_FNAME : !s->opts->backup;
}

/* The file could not be read to the length it had when opened: the
 * zeros sent in its place must not be taken for it, so the whole-file
 * sum goes out wrong (all bits off, or the last one on if that is the
 * real sum) and the receiver discards the file (match.c: match_sums). */
static void spoil_digest(uint8_t *digest, size_t len)
{
	size_t first_set = 0;

	while (first_set < len && digest[first_set] == 0)
		first_set++;
	memset(digest, 0, len);
	if (first_set == len && len > 0)
		digest[len - 1] = 1;
}

/* What send_tokens sends of one file. */
struct file_data {
	int fd;
	int64_t size;
	const struct sum_head *h;
	const struct match_index *idx; /* NULL: all literal */
	uint8_t type;                  /* the basis type the generator chose */
	bool minimal;                  /* no compression effort (skip list) */
};

/* The file's data: appended, or matched against the receiver's sums. */
static bool send_data(struct snd *d, const struct file_data *fdata, struct match_out *mo)
{
	if (d->append)
		return send_appended(d, fdata->fd, fdata->size, append_offset(fdata->h, fdata->size),
				     &mo->read_errno);
	return match_send_file(fdata->idx, fdata->fd, fdata->size, updating_basis(d->s, fdata->type),
			       mo);
}

/* Should this file's tokens be encoded on the compressor thread? Only
 * compressed data, and only a file large enough to repay the hand-off
 * (token_pipe.h); the thread starts with the first such file. */
static bool use_pipe(struct snd *d, const struct file_data *fdata)
{
	if (d->s->compress == CPRES_NONE || fdata->minimal || fdata->size < TOKEN_PIPE_MIN_FILE)
		return false;
	if (!d->pipe_tried) {
		d->pipe_tried = true;
		d->pipe = token_pipe_new(d->enc, &d->s->out, &d->s->err);
	}
	return d->pipe != NULL;
}

/* At most how much input is still to come, this file's included: the
 * list's regular files not yet sent, once the whole list is known (with
 * incremental recursion, more may come: not known). Files the receiver
 * does not ask for count too; it is a bound. */
static uint64_t input_left(const struct snd *d, const struct file_data *fdata)
{
	const struct stats *st = &d->s->stats;
	uint64_t own = fdata->size > 0 ? (uint64_t)fdata->size : 0;

	if (!flist_send_complete(d->sl))
		return UINT64_MAX;
	if (st->total_size <= st->total_transferred_size ||
	    (uint64_t)(st->total_size - st->total_transferred_size) < own)
		return own;
	return (uint64_t)(st->total_size - st->total_transferred_size);
}

/* The file's token stream, from its start to its end, after the sum head.
 * The caller holds the output's lock (once); while the compressor thread
 * writes, it is let go, for that thread takes it per batch. */
static bool send_tokens(struct snd *d, const struct file_data *fdata, struct match_out *mo)
{
	struct wire_out *out = &d->s->out;

	token_enc_set_left(d->enc, input_left(d, fdata));
	if (!use_pipe(d, fdata))
		return token_enc_begin(d->enc, out, fdata->minimal) && send_data(d, fdata, mo) &&
		       token_enc_end(d->enc, out);
	wire_out_unlock(out);
	d->piping = true;
	bool ok = token_pipe_begin(d->pipe, fdata->minimal) && send_data(d, fdata, mo);
	ok = token_pipe_end(d->pipe, ok);
	d->piping = false;
	wire_out_lock(out);
	return ok;
}

static bool send_one(struct snd *d, int32_t ndx, int iflags, uint8_t type, const char *xname)
{
	struct session *s = d->s;
	struct file_entry *f = flist_send_entry(d->sl, ndx);
	char path[MAXPATHLEN_WIRE * 2];
	struct sum_head h;
	uint32_t *sum1;
	uint8_t *sum2;
	struct stat st;
	bool ok = false;

	if (!S_ISREG(f->mode))
		return wire_fail(&s->err, RERR_PROTOCOL,
				 "received request to transfer non-regular file: %d", ndx);
	/* opened before the sums are read, so that they can be hashed ahead */
	int fd = open_source(d, ndx, f);
	int open_errno = errno;
	if (!read_sums(s, &h, &sum1, &sum2, d->append > 0, d, fd)) {
		match_ahead_stop(&d->ahead);
		if (fd >= 0)
			close(fd);
		free(sum1);
		free(sum2);
		return false;
	}
	flist_path(f, path, sizeof path);
	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = fd < 0 ? open_errno : errno;
		char full[PATH_MAX + 8];
		msg_full_name(s, source_dir(d->sl, ndx), path, full, sizeof full);
		/* rsync sender.c: send_files -- a file gone since it was
		 * listed is only a warning (exit 24) */
		if (e == ENOENT)
			session_warn(s, "file has vanished: %s\n", full);
		else
			session_xfer_err(s, "[sender] send_files failed to open %s: %s (%d)", full,
				   strerror(e), e);
		session_io_error_add(s, e == ENOENT ? IOERR_VANISHED : IOERR_GENERAL);
		/* counted as rsync does, before it opens the file */
		s->stats.xferred_files++;
		s->stats.total_transferred_size += fe_size(f);
		match_ahead_stop(&d->ahead);
		if (fd >= 0)
			close(fd);
		free(sum1);
		free(sum2);
		if (s->protocol >= 30) {
			uint8_t b[4];
			put_le32(b, (uint32_t)ndx);
			return wire_send_msg(&s->out, MSG_NO_SEND, b, 4);
		}
		return true;
	}
	if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
		/* mirrors rsync sender.c: send_files, the IS_DEVICE check */
		if (!s->opts->copy_devices) {
			match_ahead_stop(&d->ahead);
			close(fd);
			free(sum1);
			free(sum2);
			return wire_fail(&s->err, RERR_PROTOCOL,
					 "attempt to copy device contents without --copy-devices");
		}
		if (st.st_size == 0)
			st.st_size = fs_device_size(fd);
	}
	struct match_index idx;
	bool have_idx = h.count > 0 && !d->append && match_index_build(&idx, &h, sum1, sum2);
	if (h.count > 0 && !d->append && !have_idx) {
		match_ahead_stop(&d->ahead);
		close(fd);
		free(sum1);
		free(sum2);
		return wire_fail(&s->err, RERR_MALLOC, "out of memory indexing block sums");
	}
	struct blockwise_sum tree;
	bool blockwise = have_idx && blockwise_applies(s, &h, d->append);
	struct match_out mo = {.ctx = d, .emit_literal = out_literal, .emit_block = out_block,
			       .feed = out_feed, .strong = out_strong,
			       .ahead = d->ahead.running ? &d->ahead : NULL,
			       .file_sum = blockwise ? NULL : &d->sum,
			       .tree = blockwise ? &tree : NULL,
			       /* only zlib's history takes in matched blocks (token.c) */
			       .no_block_data = s->compress != CPRES_ZLIB};
	csum_file_init(&d->sum, s->xfer_csum, s->seed);
	if (blockwise)
		blockwise_begin(&tree, s->xfer_csum, s->seed, s->proper_seed_order, h.blength);
	d->sent_ofs = 0;
	d->file_size = st.st_size;
	/* named once it is open: a file that cannot be read is not
	 * (sender.c: log_item after the open) */
	session_log_item(s, f, iflags, NULL, NULL);
	progress_update(s, &d->prog, 0, st.st_size);
	struct file_data fdata = {.fd = fd, .size = st.st_size, .h = &h,
				  .idx = have_idx ? &idx : NULL, .type = type,
				  .minimal = s->compress && token_skip_match(d->skip, path)};
	wire_out_lock(&s->out);
	if (echo_header(d, ndx, iflags, type, xname) && sum_head_write(s, &h) && send_tokens(d, &fdata, &mo)) {
		if (blockwise)
			blockwise_end(&tree, d->digest);
		else
			csum_file_final(&d->sum, d->digest);
		blockwise = false;
		if (mo.read_errno)
			spoil_digest(d->digest, csum_len(s->xfer_csum));
		ok = wire_write(&s->out, d->digest, csum_len(s->xfer_csum));
	}
	if (blockwise)
		blockwise_end(&tree, d->digest); /* frees it */
	wire_out_unlock(&s->out);
	if (ok && mo.read_errno) {
		char full[PATH_MAX + 8];
		msg_full_name(s, source_dir(d->sl, ndx), path, full, sizeof full);
		session_xfer_err(s, "[sender] read errors mapping %s: %s (%d)", full,
			   strerror(mo.read_errno), mo.read_errno);
		session_io_error_add(s, IOERR_GENERAL);
	}
	d->hash_hits += mo.hash_hits;
	d->false_alarms += mo.false_alarms;
	s->stats.total_transferred_size += st.st_size;
	s->stats.xferred_files++;
	if (ok) {
		s->progress_ir = !flist_send_complete(d->sl);
		progress_end(s, &d->prog, st.st_size, flist_send_file_index(d->sl, ndx));
	}
	match_ahead_stop(&d->ahead);
	if (have_idx)
		match_index_free(&idx);
	close(fd);
	free(sum1);
	free(sum2);
	return ok;
}

/* --remove-source-files: the receiver has the file (sender.c:
 * successful_send). Remove our copy unless it changed since we listed it
 * or it is the very file the receiver wrote (a local copy onto itself). */
static void remove_at(struct snd *d, const struct file_entry *f, int dirfd, const char *leaf,
		      const char *path, int64_t dev, int64_t ino);

/* Is a component of the relative path dir (modified and restored) a
 * symlink? */
static bool has_link_component(int rootfd, char *dir)
{
	struct stat st;

	for (char *p = dir; *p; p++) {
		char *e = strchrnul(p, '/');
		char was = *e;
		*e = '\0';
		bool link = fstatat(rootfd, dir, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
		*e = was;
		if (link)
			return true;
		p = e;
		if (!*p)
			break;
	}
	return false;
}

/* -R: the directory holding path (under rootfd, or under / when path is
 * absolute), reached without following a symlink in any component: the
 * implied directories of a -R name are the user's tree, where another
 * user may have swapped one for a link since the file was sent (rsync
 * sender.c: secure_sender_parent_fd). *leaf points into path. */
static int open_parent_nofollow(int rootfd, const char *path, const char **leaf)
{
	const char *slash = strrchr(path, '/');
	char dir[MAXPATHLEN_WIRE * 2];
	int top = -1;

	*leaf = slash ? slash + 1 : path;
	size_t n = slash ? (size_t)(slash - path) : 0;
	memcpy(dir, path, n);
	dir[n] = '\0';
	char *rel = dir;
	/* test path, not dir: a child of / has an empty dir, which must
	 * not fall back to rootfd (the sender's cwd) */
	if (*path == '/') {
		top = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (top < 0)
			return -1;
		rootfd = top;
		while (*rel == '/')
			rel++;
	}
	struct dir_cursor c;
	dir_cursor_init(&c, rootfd);
	int fd = dir_cursor_open(&c, rel);
	fd = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
	int saved = errno;
	if (fd < 0 && saved == ENOTDIR && has_link_component(rootfd, rel))
		saved = ELOOP; /* rsync names a link where a directory was a loop */
	dir_cursor_close(&c);
	if (top >= 0)
		close(top);
	errno = saved;
	return fd;
}

static void remove_sent_file(void *ctx, int32_t ndx, int64_t dev, int64_t ino)
{
	struct snd *d = ctx;
	char path[MAXPATHLEN_WIRE * 2];
	const char *leaf;

	const struct file_entry *f = flist_send_entry(d->sl, ndx);
	if (!f) {
		wire_fail(&d->s->err, RERR_PROTOCOL, "Invalid file index %d in MSG_SUCCESS", ndx);
		return;
	}
	uint32_t root = flist_send_root(d->sl, ndx);
	if (S_ISDIR(f->mode) || root >= d->sl->roots.count || !flist_path(f, path, sizeof path))
		return;
	int plainfd = -1;
	int dirfd;
	if (d->sl->open_plain) {
		plainfd = open_parent_nofollow(d->sl->roots.fds[root], path, &leaf);
		if (plainfd < 0 && errno != ENOENT) {
			session_xfer_err(d->s, "sender failed to secure-open-parent %s: %s (%d)", path,
				   strerror(errno), errno);
			return;
		}
		dirfd = plainfd;
	} else {
		dirfd = dir_cursor_parent(&d->rm_dirs[root], path, &leaf);
	}
	remove_at(d, f, dirfd, leaf, path, dev, ino);
	if (plainfd >= 0)
		close(plainfd);
}

/* The checks and the unlink of --remove-source-files, on dirfd/leaf. */
static void remove_at(struct snd *d, const struct file_entry *f, int dirfd, const char *leaf,
		      const char *path, int64_t dev, int64_t ino)
{
	struct stat st;
	int flags = d->s->opts->copy_links ? 0 : AT_SYMLINK_NOFOLLOW;
	if (dirfd < 0 || fstatat(dirfd, leaf, &st, flags) < 0) {
		if (errno == ENOENT)
			session_info(d->s, "sender file already removed: %s\n", path);
		else
			session_xfer_err(d->s, "sender failed to re-lstat %s: %s (%d)", path, strerror(errno),
				   errno);
		return;
	}
	if ((dev || ino) && (int64_t)st.st_dev == dev && (int64_t)st.st_ino == ino) {
		session_xfer_err(d->s, "ERROR: Skipping sender remove of destination file: %s", path);
		return;
	}
	if ((S_ISREG(st.st_mode) && st.st_size != fe_size(f)) || st.st_mtim.tv_sec != f->mtime) {
		session_xfer_err(d->s, "ERROR: Skipping sender remove for changed file: %s", path);
		return;
	}
	if (unlinkat(dirfd, leaf, 0) < 0) {
		session_xfer_err(d->s, "sender failed to remove %s: %s (%d)", path, strerror(errno),
			   errno);
		return;
	}
	if (info_ge(d->s->opts, INFO_REMOVE, 1))
		session_info(d->s, "sender removed %s\n", path);
}

/* Mark ndx sent; false if it was already (a redo). The bits grow with
 * the indexes: the lazy walk's lists are not all known at the start. */
static bool first_send(uint8_t **bits, size_t *nbytes, int32_t ndx)
{
	size_t byte = (size_t)ndx / 8;

	if (byte >= *nbytes) {
		size_t n = byte * 2 + 64;
		uint8_t *t = realloc(*bits, n);
		if (!t)
			return true; /* no memory: taken as a first send */
		memset(t + *nbytes, 0, n - *nbytes);
		*bits = t;
		*nbytes = n;
	}
	bool was = (*bits)[byte] & (1u << (ndx % 8));
	(*bits)[byte] |= (uint8_t)(1u << (ndx % 8));
	return !was;
}

bool sender_run(struct session *s, struct send_list *sl)
{
	struct snd d = {.s = s, .sl = sl};
	int max_phase = s->protocol >= 29 ? 2 : 1, phase = 0;
	char xname[MAXPATHLEN_WIRE];
	int io_error_sent = session_io_error(s);
	bool ok = true;

	d.append = s->opts->append;
	d.dirs = calloc(sl->roots.count ? sl->roots.count : 1, sizeof *d.dirs);
	/* with incremental recursion the indexes run past the entry count:
	 * one gap before each list */
	size_t nsent = (sl->inc ? sl->fl.count * 2 + 2 : sl->fl.count) / 8 + 1;
	uint8_t *sent = calloc(nsent, 1);
	if (!d.dirs || !sent) {
		free(d.dirs);
		free(sent);
		return wire_fail(&s->err, RERR_MALLOC, "out of memory");
	}
	d.enc = token_enc_new(s->compress, s->compress_level, s->compress_adaptive, s->protocol,
			      &s->err);
	if (d.enc) {
		token_enc_set_timing(d.enc, true);
		token_enc_set_threads(d.enc, s->opts->compress_threads);
		/* the rate limit is a link the rule knows from the start */
		if (s->out.bwlimit > 0)
			token_enc_set_link_floor(d.enc, 1024ull * 1000000000u /
							(uint64_t)s->out.bwlimit);
	}
	if (s->compress != CPRES_NONE)
		d.skip = token_skip_new(s->skip_compress, s->module.dont_compress);
	if (!d.enc || (s->compress != CPRES_NONE && !d.skip)) {
		token_enc_free(d.enc);
		token_skip_free(d.skip);
		free(d.dirs);
		free(sent);
		return wire_fail(&s->err, RERR_MALLOC, "out of memory");
	}
	for (size_t i = 0; i < sl->roots.count; i++)
		dir_cursor_init(&d.dirs[i], sl->roots.fds[i]);
	if (s->opts->remove_source_files && !s->opts->dry_run) {
		d.rm_dirs = calloc(sl->roots.count ? sl->roots.count : 1, sizeof *d.rm_dirs);
		if (!d.rm_dirs)
			ok = wire_fail(&s->err, RERR_MALLOC, "out of memory");
		for (size_t i = 0; ok && i < sl->roots.count; i++)
			dir_cursor_init(&d.rm_dirs[i], sl->roots.fds[i]);
		s->hooks.on_success = remove_sent_file;
		s->hooks.on_success_ctx = &d;
	}
	while (ok) {
		int32_t ndx;
		int iflags;
		uint8_t type;
		if (!flist_inc_send_ahead(s, sl) ||
		    !read_request(&d, &ndx, &iflags, &type, xname, sizeof xname)) {
			ok = false;
			break;
		}
		if (ndx == NDX_DONE && flist_inc_list_done(sl)) {
			/* the generator is done with one list: echo, no phase */
			ok = wire_write_ndx(&s->out, NDX_DONE) && wire_flush(&s->out);
			continue;
		}
		if (ndx == NDX_DONE) {
			d.append = 0; /* a redo sends whole files (sender.c) */
			if (++phase > max_phase)
				break;
			ok = wire_write_ndx(&s->out, NDX_DONE) && wire_flush(&s->out);
			continue;
		}
		const struct file_entry *f = flist_send_entry(sl, ndx);
		s->log_dir = source_dir(sl, ndx);
		if (!(iflags & ITEM_TRANSFER) || !batch_do_xfers(s->opts)) {
			if (iflags & ITEM_TRANSFER && !S_ISREG(f->mode)) {
				ok = wire_fail(&s->err, RERR_PROTOCOL,
					       "received request to transfer non-regular file: %d", ndx);
				break;
			}
			/* a transfer's xname names its -y basis, which is not
			 * shown (sender.c: log_item(..., NULL) when !do_xfers) */
			session_log_item(s, f, iflags,
					 xname[0] && !(iflags & ITEM_TRANSFER) ? xname : NULL, NULL);
			count_created(&s->stats, f, iflags);
			/* a dry run's transfers count as made (sender.c:
			 * send_files counts before its !do_xfers) */
			if (iflags & ITEM_TRANSFER) {
				s->stats.xferred_files++;
				s->stats.total_transferred_size += fe_size(f);
				progress_dry_run_item(s, fe_size(f));
			}
			wire_out_lock(&s->out);
			ok = echo_header(&d, ndx, iflags, type, xname);
			wire_out_unlock(&s->out);
			continue;
		}
		if (phase >= 2) {
			ok = wire_fail(&s->err, RERR_PROTOCOL, "got transfer request in phase 2");
			break;
		}
		/* a file asked for again is a redo: whole, not appended
		 * (sender.c: FLAG_FILE_SENT); with incremental lists redos
		 * come before the phase ends */
		bool redo = !first_send(&sent, &nsent, ndx);
		if (!redo && (iflags & ITEM_IS_NEW))
			s->stats.created_files++;
		int append = d.append;
		if (redo)
			d.append = 0;
		/* --only-write-batch: the file goes to the batch alone
		 * (sender.c: f_xfer = batch_fd). */
		s->out.divert = s->out.tee.fn && s->opts->write_batch < 0;
		uint64_t given = wire_out_given(&s->out), taken = wire_in_taken(&s->in);
		ok = send_one(&d, ndx, iflags, type, xname);
		d.append = append;
		s->out.divert = false;
		if (ok) {
			struct xfer_facts facts = {
				.bytes = (int64_t)(wire_out_given(&s->out) - given),
				.checksum_bytes = (int64_t)(wire_in_taken(&s->in) - taken),
				.sum = d.digest};
			session_log_transferred(s, f, iflags, NULL, &facts);
		}
	}
	free(sent);
	/* -vv (match.c: match_report) */
	if (ok && debug_ge(s->opts, DEBUG_DELTASUM, 1))
		session_info(s, "total: matches=%d  hash_hits=%lld  false_alarms=%lld data=%lld\n",
			     d.matches, (long long)d.hash_hits, (long long)d.false_alarms,
			     (long long)s->stats.literal_data);
	if (ok && s->protocol >= 30 && session_io_error(s) != io_error_sent) {
		int e = session_io_error(s) & IOERR_VALID_MASK;
		uint8_t b[4] = {(uint8_t)e, 0, 0, 0};
		ok = wire_send_msg(&s->out, MSG_IO_ERROR, b, 4);
	}
	if (ok)
		ok = wire_write_ndx(&s->out, NDX_DONE) && wire_flush(&s->out);
	for (size_t i = 0; i < sl->roots.count; i++)
		dir_cursor_close(&d.dirs[i]);
	free(d.dirs);
	if (d.rm_dirs) {
		for (size_t i = 0; i < sl->roots.count; i++)
			dir_cursor_close(&d.rm_dirs[i]);
		free(d.rm_dirs);
	}
	s->hooks.on_success = NULL; /* d goes out of scope */
	token_pipe_free(d.pipe);
	token_enc_free(d.enc);
	token_skip_free(d.skip);
	return ok;
}

bool sender_finish(struct session *s)
{
	int32_t ndx;
	int iflags;
	uint8_t type;
	char xname[MAXPATHLEN_WIRE];
	struct send_list none = {0};
	struct snd d = {.s = s, .sl = &none};

	if (s->am_server) {
		heap_stats_report(s, "sender"); /* before the totals, as rsync's report() */
		int64_t written = (int64_t)(s->out.total_written + s->out.len);
		if (!wire_write_varlong30(&s->out, (int64_t)s->in.total_read, 3) ||
		    !wire_write_varlong30(&s->out, written, 3) ||
		    !wire_write_varlong30(&s->out, s->stats.total_size, 3))
			return false;
		if (s->protocol >= 29 &&
		    (!wire_write_varlong30(&s->out, s->stats.flist_buildtime_ms, 3) ||
		     !wire_write_varlong30(&s->out, s->stats.flist_xfertime_ms, 3)))
			return false;
		if (!wire_flush(&s->out))
			return false;
	} else if (!batch_write_stats(s)) {
		return false;
	}
	if (s->protocol < 24)
		return true;
	if (s->protocol < 29)
		return wire_read_i32(&s->in, &ndx);
	if (!read_request(&d, &ndx, &iflags, &type, xname, sizeof xname))
		return false;
	if (s->protocol >= 31 && ndx == NDX_DONE) {
		if (!wire_write_ndx(&s->out, NDX_DONE) || !wire_flush(&s->out))
			return false;
		if (!read_request(&d, &ndx, &iflags, &type, xname, sizeof xname))
			return false;
	}
	if (ndx != NDX_DONE)
		return wire_fail(&s->err, RERR_PROTOCOL, "Invalid packet at end of run (%d)", ndx);
	return true;
}
