/*
 * The SSH listener's authorized keys: is a client's public key listed in an
 * OpenSSH authorized_keys file?
 *
 * Format (sshd(8) AUTHORIZED_KEYS FILE FORMAT): one key a line,
 * "[options] keytype base64 [comment]"; blank lines and '#' lines ignored.
 * ferry cannot honour options such as command=, from= or permitopen=, so a
 * line with any option other than the purely restrictive ones (restrict,
 * no-pty, no-port-forwarding, no-agent-forwarding, no-X11-forwarding,
 * no-user-rc -- all of which ferry enforces anyway) is skipped: a key is
 * never granted more than its line says.
 *
 * Bounds: the file must be a regular file (opened with O_NOFOLLOW) of at most
 * SSH_KEYS_MAX_FILE bytes; with strict modes it must not be writable by group
 * or others. A line longer than SSH_KEYS_MAX_LINE is skipped.
 */
#ifndef FERRY_DAEMON_SSH_KEYS_H
#define FERRY_DAEMON_SSH_KEYS_H

#include <libssh/libssh.h>
#include <stdbool.h>
#include <stddef.h>

#define SSH_KEYS_MAX_FILE (1 << 20)
#define SSH_KEYS_MAX_LINE 16384

enum ssh_keys_result {
	SSH_KEYS_LISTED,
	SSH_KEYS_NOT_LISTED,
	SSH_KEYS_ERROR, /* the file cannot be used; why says what is wrong */
};

/* Look key up in the authorized_keys file at path. why (may be NULL) gets
 * the reason on SSH_KEYS_ERROR, and a note about skipped lines otherwise
 * ("" when there is nothing to say). */
enum ssh_keys_result ssh_keys_lookup(const char *path, ssh_key key, bool strict_modes, char *why,
				     size_t whysz);

/* "SHA256:..." for key, as OpenSSH prints it; "?" when it cannot be made. */
void ssh_keys_fingerprint(ssh_key key, char *out, size_t outsz);

#endif
