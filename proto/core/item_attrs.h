/*
 * What follows a file index in the generator's request and in the
 * sender's echo of it (docs/protocol.md; rsync.c: read_ndx_and_attrs):
 * read the same way by both sides, which then check it each for its own
 * role.
 */
#ifndef FERRY_PROTO_ITEM_ATTRS_H
#define FERRY_PROTO_ITEM_ATTRS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct session;

/* The item flags (fixed to a transfer before protocol 29), then the
 * basis type (FNAMECMP_FNAME unless ITEM_BASIS_TYPE_FOLLOWS) and the
 * extra name (empty unless ITEM_XNAME_FOLLOWS, bounded by xsize). False
 * on a read error or an over-long name, with s->err set. */
bool item_attrs_read(struct session *s, int *iflags, uint8_t *basis_type, char *xname,
		     size_t xsize);

/* NDX_DEL_STATS's five deletion counts (regular files, dirs, symlinks,
 * devices, specials; rsync.c: read_del_stats). A negative count is a
 * protocol error. */
bool del_stats_read(struct session *s, int32_t counts[5]);

#endif
