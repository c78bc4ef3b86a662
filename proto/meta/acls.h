/*
 * -A/--acls: POSIX access and default ACLs in rsync's protocol-30 encoding
 * (rsync acls.c). The sender reads them from disk and sends each entry's
 * ACLs after its other file-list fields; both sides keep the lists of ACLs
 * seen so far, and an ACL already sent is sent again as its index. The
 * receiving side compares them with what is on disk ('a' in the itemize
 * string) and applies them.
 *
 * ACLs are read and written through the kernel's system.posix_acl_access
 * and system.posix_acl_default attributes (<sys/xattr.h>), so no libacl.
 */
#ifndef FERRY_ACLS_H
#define FERRY_ACLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct session;
struct file_entry;
struct fe_extras;

/* Sender: read the entry's ACLs (rootfd/path, not followed) and send them.
 * A read failure is reported and sent as the mode-only ACL, as rsync's
 * get_acl() failing makes it skip the file; here the entry is already
 * committed, so we send what the mode says. */
bool acl_send_entry(struct session *s, int rootfd, const char *path, const struct file_entry *f);

/* Sender: the user (or group) ids named in the ACLs sent, for the id
 * lists after the file list. */
size_t acl_sent_ids(const struct session *s, bool users, const uint32_t **ids);

/* Receiver: read the ACLs sent after an entry (recv_file_entry ->
 * receive_acl) of an entry of the given mode; sets x->acl_ndx and
 * x->defacl_ndx. */
bool acl_recv_entry(struct session *s, uint32_t mode, struct fe_extras *x);

/* Receiver: map the ids in the received ACLs to local ones once the id
 * lists have arrived (acls.c: match_acl_ids). */
void acl_map_ids(struct session *s);

/* Do the ACLs on disk (dirfd/leaf) differ from the entry's? Returns
 * ITEM_REPORT_ACL or 0. */
int acl_item_bits(struct session *s, int dirfd, const char *leaf, const struct file_entry *f);

/* Set the entry's ACLs on dirfd/leaf (before its mode is set; the access
 * ACL carries the permission bits). *cur_mode is the mode on disk, updated
 * if setting the ACL changed it. Returns ITEM_REPORT_ACL when something
 * was changed, 0 when nothing was, -1 on failure (reported). */
int acl_apply(struct session *s, int dirfd, const char *leaf, const struct file_entry *f,
	      uint32_t *cur_mode);

/* The permission bits a new entry in directory dirfd may have without -p:
 * those of the directory's default ACL (user, mask or else group, other)
 * when it has one, else umask_perms (acls.c: default_perms_for_dir). */
uint32_t acl_default_perms(int dirfd, uint32_t umask_perms);

#endif
