/*
 * authorized_keys lookup for the SSH listener (see daemon/ssh_keys.h).
 */
#include "daemon/ssh_keys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/base/fdio.h"

static void set_why(char *why, size_t whysz, const char *fmt, const char *a, const char *b)
{
	if (why && whysz)
		snprintf(why, whysz, fmt, a, b);
}

/* Read the whole file into a NUL-terminated buffer, refusing what we must
 * not trust. Returns NULL with why set. */
static char *read_keys_file(const char *path, bool strict_modes, char *why, size_t whysz)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0) {
		set_why(why, whysz, "cannot open %s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		set_why(why, whysz, "%s is not a regular file%s", path, "");
		close(fd);
		return NULL;
	}
	if (strict_modes && (st.st_mode & (S_IWGRP | S_IWOTH))) {
		set_why(why, whysz, "%s is writable by group or others (strict modes)%s", path, "");
		close(fd);
		return NULL;
	}
	if (st.st_size > SSH_KEYS_MAX_FILE) {
		set_why(why, whysz, "%s is larger than 1 MiB%s", path, "");
		close(fd);
		return NULL;
	}
	char *buf = malloc((size_t)st.st_size + 1);
	size_t got = buf ? fd_read_full(fd, buf, (size_t)st.st_size) : 0;
	close(fd);
	if (!buf) {
		set_why(why, whysz, "out of memory reading %s%s", path, "");
		return NULL;
	}
	buf[got] = '\0';
	return buf;
}

/* Options that only take rights away, all of which the listener enforces
 * for every key anyway. */
static bool option_is_restrictive(const char *opt, size_t len)
{
	static const char *const ok[] = {"restrict", "no-pty", "no-port-forwarding",
					 "no-agent-forwarding", "no-X11-forwarding", "no-user-rc"};

	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
		if (strlen(ok[i]) == len && strncasecmp(opt, ok[i], len) == 0)
			return true;
	return false;
}

/* Check the options field at *p (comma separated, values may be quoted)
 * and move *p past it. False when an option grants or conditions anything
 * we cannot honour. */
static bool options_acceptable(char **p)
{
	char *s = *p;
	bool ok = true;

	while (*s && *s != ' ' && *s != '\t') {
		char *start = s;
		while (*s && *s != ',' && *s != '=' && *s != ' ' && *s != '\t')
			s++;
		if (!option_is_restrictive(start, (size_t)(s - start)))
			ok = false;
		if (*s == '=') {
			s++;
			if (*s == '"') {
				for (s++; *s && *s != '"'; s++)
					if (*s == '\\' && s[1])
						s++;
				if (*s == '"')
					s++;
			}
			while (*s && *s != ',' && *s != ' ' && *s != '\t')
				s++;
		}
		if (*s == ',')
			s++;
	}
	*p = s;
	return ok;
}

static char *next_word(char **p)
{
	char *s = *p + strspn(*p, " \t");
	if (!*s)
		return NULL;
	char *e = s + strcspn(s, " \t");
	if (*e)
		*e++ = '\0';
	*p = e;
	return s;
}

/* One line: 1 when it lists key, 0 when not, -1 when it was skipped for
 * options we cannot honour. */
static int line_matches(char *line, ssh_key key)
{
	char *p = line + strspn(line, " \t");
	bool skipped = false;

	if (!*p || *p == '#')
		return 0;
	/* No key type first: an options field precedes it. */
	char first[128];
	size_t flen = strcspn(p, " \t");
	snprintf(first, sizeof first, "%.*s", (int)(flen < sizeof first ? flen : 0), p);
	if (ssh_key_type_from_name(first) == SSH_KEYTYPE_UNKNOWN)
		skipped = !options_acceptable(&p);
	char *type = next_word(&p);
	char *b64 = next_word(&p);
	if (!type || !b64)
		return 0;
	enum ssh_keytypes_e t = ssh_key_type_from_name(type);
	ssh_key k = NULL;
	if (t == SSH_KEYTYPE_UNKNOWN || ssh_pki_import_pubkey_base64(b64, t, &k) != SSH_OK)
		return 0;
	int same = ssh_key_cmp(k, key, SSH_KEY_CMP_PUBLIC) == 0;
	ssh_key_free(k);
	if (same && skipped)
		return -1;
	return same;
}

enum ssh_keys_result ssh_keys_lookup(const char *path, ssh_key key, bool strict_modes, char *why,
				     size_t whysz)
{
	if (why && whysz)
		why[0] = '\0';
	if (!path || !*path || !key) {
		set_why(why, whysz, "no authorized keys file%s%s", "", "");
		return SSH_KEYS_ERROR;
	}
	char *buf = read_keys_file(path, strict_modes, why, whysz);
	if (!buf)
		return SSH_KEYS_ERROR;
	enum ssh_keys_result r = SSH_KEYS_NOT_LISTED;
	char *save = NULL;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strlen(line) > SSH_KEYS_MAX_LINE)
			continue;
		line[strcspn(line, "\r")] = '\0';
		int m = line_matches(line, key);
		if (m > 0) {
			r = SSH_KEYS_LISTED;
			break;
		}
		if (m < 0)
			set_why(why, whysz, "%s lists the key with options ferry cannot honour "
					    "(command=, from=, ...); that line is ignored%s", path, "");
	}
	free(buf);
	return r;
}

void ssh_keys_fingerprint(ssh_key key, char *out, size_t outsz)
{
	unsigned char *hash = NULL;
	size_t hlen = 0;

	snprintf(out, outsz, "?");
	if (!key || ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash, &hlen) < 0)
		return;
	char *fp = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, hlen);
	if (fp)
		snprintf(out, outsz, "%s %s", ssh_key_type_to_char(ssh_key_type(key)), fp);
	ssh_string_free_char(fp);
	ssh_clean_pubkey_hash(&hash);
}
