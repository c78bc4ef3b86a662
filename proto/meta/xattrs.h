/*
 * -X/--xattrs: extended attributes in rsync's protocol-30 encoding (rsync
 * xattrs.c). Each entry's attributes follow its other file-list fields;
 * values longer than 32 bytes travel as an MD5 digest, and the generator
 * asks for the full value only where the digest does not match what is on
 * disk, in the "xattr request" that follows an item's flags (generator ->
 * sender -> receiver). Without root only the user.* namespace is read and
 * written on the receiving side; user.rsync.%* names need -XX.
 */
#ifndef FERRY_XATTRS_H
#define FERRY_XATTRS_H

#include <stdbool.h>
#include <stdint.h>

struct session;
struct file_entry;
struct fe_extras;

/* -A/-X need protocol 30 (compat.c); false with the error set if not. */
bool meta_check_protocol(struct session *s);

/* Sender: read the entry's xattrs (rootfd/path, not followed) and send
 * them (send_xattr); sets f->xattr_ndx. */
bool xattr_send_entry(struct session *s, int rootfd, const char *path, struct file_entry *f);

/* Receiver: read what follows an entry (receive_xattr). */
bool xattr_recv_entry(struct session *s, struct fe_extras *x);

/* Does an item with these flags carry an xattr request (generator.c,
 * sender.c, receiver.c: ITEM_REPORT_XATTR without the xattr optimisation)? */
bool xattr_request_follows(const struct session *s, int iflags);

/* Generator: ITEM_REPORT_XATTR if the entry's xattrs differ from those of
 * dirfd/leaf (dirfd < 0: the entry is new); marks the abbreviated values
 * it needs (xattr_diff with find_all). */
int xattr_item_bits(struct session *s, int dirfd, const char *leaf, const struct file_entry *f);

/* Generator, after an item's flags: ask for the marked values
 * (send_xattr_request(NULL, ...)). */
bool xattr_gen_request(struct session *s, const struct file_entry *f, int iflags);

/* Sender: read the generator's request (recv_xattr_request) ... */
bool xattr_sender_read_request(struct session *s, struct file_entry *f);
/* ... and, after echoing the item, send the values (send_xattr_request). */
bool xattr_sender_send_values(struct session *s, int rootfd, const char *path,
			      struct file_entry *f);

/* Do the xattrs of dirfd/leaf equal the entry's (digests compared for
 * abbreviated values, nothing flagged)? True without -X. (generator.c:
 * unchanged_attrs, xattr_diff without find_all) */
bool xattr_same(struct session *s, int dirfd, const char *leaf, const struct file_entry *f);

/* Receiver: read the values that follow an echoed item. */
bool xattr_recv_values(struct session *s, const struct file_entry *f);

/* Receiver: give dirfd/leaf the entry's xattrs, taking values we only
 * have a digest of from basis_dirfd/basis_leaf (rsync_xal_set). Returns
 * false after reporting a failure. */
bool xattr_apply(struct session *s, int dirfd, const char *leaf, const struct file_entry *f,
		 int basis_dirfd, const char *basis_leaf);

/* Generator: as xattr_apply, but a value known only by its digest that the
 * basis does not hold is left alone, not an error (rsync_xal_set: "generator
 * items stay abbreviated"). */
bool xattr_apply_gen(struct session *s, int dirfd, const char *leaf, const struct file_entry *f,
		     int basis_dirfd, const char *basis_leaf);


#endif
