/*
 * Batch files: the header, the copy of the stream, the sender's stats,
 * and the reading side's flags (rsync batch.c and io.c: start_write_batch).
 */
#include "proto/delta/batch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/base/byteorder.h"
#include "proto/base/fdio.h"
#include "proto/base/oppath.h"
#include "proto/core/session.h"
#include "proto/delta/token.h"

int32_t batch_stream_flags(const struct ferry_opts *o, bool compressed)
{
	int32_t f = 0;

	/* mirrors rsync batch.c: write_stream_flags(), flag_ptr[] order */
	if (o->recursive)
		f |= BATCH_F_RECURSE;
	if (o->owner)
		f |= BATCH_F_OWNER;
	if (o->group)
		f |= BATCH_F_GROUP;
	if (o->links)
		f |= BATCH_F_LINKS;
	if (o->devices)
		f |= BATCH_F_DEVICES;
	if (o->hard_links)
		f |= BATCH_F_HARD_LINKS;
	if (o->checksum)
		f |= BATCH_F_CHECKSUM;
	if (o->dirs)
		f |= BATCH_F_DIRS;
	if (compressed)
		f |= BATCH_F_COMPRESS;
	if (o->acls)
		f |= BATCH_F_ACLS;
	if (o->xattrs)
		f |= BATCH_F_XATTRS;
	if (o->inplace)
		f |= BATCH_F_INPLACE;
	return f;
}

static bool tee_flush(struct batch_tee *t)
{
	bool ok = fd_write_all(t->fd, t->buf, t->len);

	t->len = 0;
	if (!ok)
		return wire_fail(t->err, RERR_FILEIO, "write error on batch file \"%s\": %s",
				 t->name, errno ? strerror(errno) : "short write");
	return true;
}

bool batch_tee_data(struct batch_tee *t, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n > 0) {
		size_t k = sizeof t->buf - t->len;
		if (k > n)
			k = n;
		memcpy(t->buf + t->len, b, k);
		t->len += k;
		b += k;
		n -= k;
		if (t->len == sizeof t->buf && !tee_flush(t))
			return false;
	}
	return true;
}

/* The header (batch.c: write_stream_flags; io.c: start_write_batch). */
static bool write_header(struct batch_tee *t, struct session *s)
{
	uint8_t b[4 + 4 + 9 + 4];
	size_t n = 0;

	put_le32(b + n, batch_stream_flags(s->opts, s->compress != CPRES_NONE));
	n += 4;
	put_le32(b + n, s->protocol);
	n += 4;
	if (s->protocol >= 30)
		n += varint_encode(b + n, (int32_t)s->compat_flags);
	put_le32(b + n, s->seed);
	n += 4;
	return batch_tee_data(t, b, n);
}

/* The stream's tee (wire.h): the batch file's copy of its data. */
static bool tee_hook(void *ctx, const void *p, size_t n)
{
	return batch_tee_data(ctx, p, n);
}

bool batch_start(struct session *s, bool we_send)
{
	const char *name = s->opts->batch_name;
	struct batch_tee *t = calloc(1, sizeof *t);

	if (!t)
		return wire_fail(&s->err, RERR_MALLOC, "out of memory");
	/* An operator path (oppath.h): a planted symlink would make us
	 * truncate whatever it points to (rsync batch.c: open_batch_files). */
	t->fd = oppath_open(AT_FDCWD, name, O_WRONLY | O_CREAT | O_TRUNC, 0600,
			    s->opts->insecure_links);
	if (t->fd < 0) {
		int e = errno;
		free(t);
		return wire_fail(&s->err, RERR_FILEIO, "Batch file %s open error: %s", name,
				 strerror(e));
	}
	t->err = &s->err;
	t->name = name;
	if (!write_header(t, s)) {
		close(t->fd);
		free(t);
		return false;
	}
	struct wire_tee hook = {.fn = tee_hook, .ctx = t};
	if (we_send)
		s->out.tee = hook;
	else
		s->in.tee = hook;
	return true;
}

/* io.c: write_varlong30() into a buffer (room: 12 bytes). */
static size_t put_varlong30(uint8_t *b, int64_t v, int protocol)
{
	if (protocol >= 30)
		return varlong_encode(b, v, 3);
	if (v >= 0 && v <= 0x7fffffff) {
		put_le32(b, (int32_t)v);
		return 4;
	}
	put_le32(b, -1);
	put_le32(b + 4, (int32_t)(uint32_t)((uint64_t)v & 0xffffffffu));
	put_le32(b + 8, (int32_t)(uint32_t)((uint64_t)v >> 32));
	return 12;
}

bool batch_write_stats(struct session *s)
{
	struct batch_tee *t = s->out.tee.ctx; /* ours, from batch_start */
	uint8_t b[5 * 12];
	size_t n = 0;
	int64_t v[5] = {(int64_t)s->in.total_read, (int64_t)(s->out.total_written + s->out.len),
			s->stats.total_size, s->stats.flist_buildtime_ms,
			s->stats.flist_xfertime_ms};
	int count = s->protocol >= 29 ? 5 : 3;

	if (!t)
		return true;
	/* mirrors rsync main.c: handle_stats() for a sending client */
	for (int i = 0; i < count; i++)
		n += put_varlong30(b + n, v[i], s->protocol);
	return batch_tee_data(t, b, n);
}

static bool finish_one(struct wire_tee *tee)
{
	struct batch_tee *t = tee->ctx;
	bool ok;

	if (!tee->fn)
		return true;
	*tee = (struct wire_tee){0};
	ok = tee_flush(t);
	if (close(t->fd) < 0 && ok)
		ok = wire_fail(t->err, RERR_FILEIO, "write error on batch file \"%s\": %s",
			       t->name, strerror(errno));
	free(t);
	return ok;
}

bool batch_finish(struct session *s)
{
	bool a = finish_one(&s->in.tee);
	bool b = finish_one(&s->out.tee);
	return a && b;
}

int batch_open_read(const char *name, bool insecure, int32_t *flags)
{
	struct stat st;
	uint8_t b[4];
	int fd;

	if (strcmp(name, "-") == 0) {
		fd = STDIN_FILENO;
	} else {
		fd = oppath_open(AT_FDCWD, name, O_RDONLY, 0, insecure);
		if (fd < 0) {
			fprintf(stderr, "ferry: Batch file %s open error: %s\n", name,
				strerror(errno));
			return -1;
		}
		/* The file's bytes drive the protocol parser: no FIFOs or
		 * devices at the batch path. */
		if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
			fprintf(stderr, "ferry: Batch file %s is not a regular file\n", name);
			close(fd);
			return -1;
		}
	}
	if (fd_read_full(fd, b, sizeof b) < sizeof b) {
		fprintf(stderr, "ferry: Batch file %s is too short to be a batch file\n", name);
		if (fd != STDIN_FILENO)
			close(fd);
		return -1;
	}
	*flags = (int32_t)get_le32(b);
	return fd;
}

/* Set one option as the batch says; with -v say so (check_batch_flags). */
static void match_flag(const struct ferry_opts *o, bool *field, bool set, const char *name)
{
	if (*field == set)
		return;
	if (info_ge(o, INFO_MISC, 1))
		printf("%sing the %s option to match the batchfile.\n", set ? "Sett" : "Clear",
		       name);
	*field = set;
}

bool batch_apply_flags(struct ferry_opts *o, int32_t flags)
{
	/* mirrors rsync batch.c: check_batch_flags() */
	if (flags & BATCH_F_ICONV) {
		fprintf(stderr, "ferry: this batch file needs --iconv, which ferry does not support\n");
		return false;
	}
	if (flags & (BATCH_F_APPEND | BATCH_F_APPEND_VERIFY)) {
		fprintf(stderr, "ferry: this batch file was written with %s, which ferry does not support\n",
			flags & BATCH_F_APPEND ? "--append" : "--append-verify");
		return false;
	}
	bool compress = o->compress != 0 || o->compress_choice;
	match_flag(o, &o->recursive, flags & BATCH_F_RECURSE, "--recurse (-r)");
	match_flag(o, &o->owner, flags & BATCH_F_OWNER, "--owner (-o)");
	match_flag(o, &o->group, flags & BATCH_F_GROUP, "--group (-g)");
	match_flag(o, &o->links, flags & BATCH_F_LINKS, "--links (-l)");
	match_flag(o, &o->devices, flags & BATCH_F_DEVICES, "--devices (-D)");
	match_flag(o, &o->hard_links, flags & BATCH_F_HARD_LINKS, "--hard-links (-H)");
	match_flag(o, &o->checksum, flags & BATCH_F_CHECKSUM, "--checksum (-c)");
	/* rsync keeps an explicit -d as 2, which never equals the batch's
	 * 0/1: it always reports it. */
	if (o->dirs_explicit)
		o->dirs = !(flags & BATCH_F_DIRS);
	match_flag(o, &o->dirs, flags & (BATCH_F_DIRS | BATCH_F_RECURSE), "--dirs (-d)");
	match_flag(o, &compress, flags & BATCH_F_COMPRESS, "--compress (-z)");
	match_flag(o, &o->acls, flags & BATCH_F_ACLS, "--acls (-A)");
	bool xattrs = o->xattrs != 0;
	match_flag(o, &xattrs, flags & BATCH_F_XATTRS, "--xattrs (-X)");
	if (!xattrs)
		o->xattrs = 0;
	else if (!o->xattrs)
		o->xattrs = 1;
	match_flag(o, &o->inplace, flags & BATCH_F_INPLACE, "--inplace");
	/* Keep -zz / --compress-choice: the algorithm comes from the
	 * command line (FILE.sh repeats it), the flag only says "on". */
	if (!compress) {
		o->compress = 0;
		o->compress_choice = NULL; /* a copy: the caller frees the original */
	} else if (!o->compress && !o->compress_choice)
		o->compress = 1;
	return true;
}
