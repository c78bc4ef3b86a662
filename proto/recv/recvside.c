/*
 * What the generator and receiver threads of the receiving side both use
 * (recvside.h): the block-size rule, the success report of
 * --remove-source-files, the failed-directory list, and the daemon's
 * filters on the destination side. Below both threads and recv.c, which
 * runs them.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "proto/base/byteorder.h"
#include "proto/filter/filter.h"
#include "proto/recv/recvside.h"

void recv_mark_dir_failed(struct recv_ctx *rc, const char *path)
{
	char **t = realloc(rc->failed_dirs, (rc->nfailed_dirs + 1) * sizeof *t);

	if (!t)
		return;
	rc->failed_dirs = t;
	rc->failed_dirs[rc->nfailed_dirs] = strdup(path);
	if (rc->failed_dirs[rc->nfailed_dirs])
		rc->nfailed_dirs++;
}

void recv_report_success(struct recv_ctx *rc, int32_t ndx, const char *path, bool always)
{
	const struct ferry_opts *o = rc->s->opts;
	uint8_t msg[20];
	struct stat st;

	if (!o->remove_source_files || o->dry_run || (o->remove_source_files != 1 && !always))
		return;
	put_le(msg, (uint32_t)ndx, 4);
	if (!rc->cfg.local) {
		wire_send_msg(&rc->s->out, MSG_SUCCESS, msg, 4);
		return;
	}
	/* In a local copy the sender must not remove what is our file. */
	const char *name = rc->cfg.solo_name ? rc->cfg.solo_name : path;
	if (fstatat(rc->cfg.rootfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		memset(&st, 0, sizeof st);
	put_le(msg + 4, (uint64_t)st.st_dev, 8);
	put_le(msg + 12, (uint64_t)st.st_ino, 8);
	wire_send_msg(&rc->s->out, MSG_SUCCESS, msg, 20);
}

bool recv_follows_dest_links(const struct ferry_opts *o)
{
	return o->keep_dirlinks || (o->relative && o->no_implied_dirs);
}

bool recv_daemon_excludes(const struct recv_config *cfg, const char *path, bool is_dir)
{
	char full[MAXPATHLEN_WIRE * 3];

	if (!cfg->daemon_filters || strcmp(path, ".") == 0)
		return false;
	if (cfg->solo_name)
		snprintf(full, sizeof full, "%s", *cfg->daemon_dest ? cfg->daemon_dest : path);
	else if (*cfg->daemon_dest)
		snprintf(full, sizeof full, "%s/%s", cfg->daemon_dest, path);
	else
		snprintf(full, sizeof full, "%s", path);
	return filter_check(cfg->daemon_filters, full, is_dir, false) < 0;
}

/* mirrors rsync generator.c:sum_sizes_sqroot() */
void sum_sizes_sqroot(struct sum_head *h, int64_t len, int protocol, long block_size,
		      size_t digest_len, bool redo)
{
	int32_t max_s2 = digest_len < 16 ? (int32_t)digest_len : 16;
	int32_t blength;

	if (block_size) {
		blength = (int32_t)block_size;
	} else if (len <= 700 * 700) {
		blength = 700;
	} else {
		int32_t max_blength = protocol < 30 ? (1 << 29) : (1 << 17);
		int32_t c = 1;
		for (int64_t l = len; l >>= 2;)
			c <<= 1;
		if (c < 0 || c >= max_blength) {
			blength = max_blength;
		} else {
			blength = 0;
			do {
				blength |= c;
				if (len < (int64_t)blength * blength)
					blength &= ~c;
				c >>= 1;
			} while (c >= 8);
			if (blength < 700)
				blength = 700;
		}
	}
	if (redo) {
		h->s2length = max_s2;
	} else {
		int b = 10;
		for (int64_t l = len; l >>= 1;)
			b += 2;
		for (int32_t c = blength; (c >>= 1) && b;)
			b--;
		int32_t s2 = (b + 1 - 32 + 7) / 8;
		if (s2 < 2)
			s2 = 2;
		h->s2length = s2 < max_s2 ? s2 : max_s2;
	}
	h->blength = blength;
	h->remainder = (int32_t)(len % blength);
	h->count = (int32_t)(len / blength + (h->remainder != 0));
}

/* Is the entry below a directory we failed to create? Entries are sorted
 * so that a directory precedes its contents; we keep the failed ones in
 * the state array and look the parent up by name. */
bool parent_failed(struct recv_ctx *rc, const struct file_entry *f)
{
	if (!f->dirname || !rc->failed_dirs)
		return false;
	for (size_t i = 0; i < rc->nfailed_dirs; i++) {
		size_t n = strlen(rc->failed_dirs[i]);
		if (strncmp(f->dirname, rc->failed_dirs[i], n) == 0 &&
		    (f->dirname[n] == '\0' || f->dirname[n] == '/'))
			return true;
	}
	return false;
}
