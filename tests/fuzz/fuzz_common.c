/*
 * See fuzz_common.h.
 */
#include "tests/fuzz/fuzz_common.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

uint8_t fuzz_take_byte(struct fuzz_input *in)
{
	if (in->n == 0)
		return 0;
	in->n--;
	return *in->p++;
}

int fuzz_null_fd(void)
{
	static int fd = -1;

	if (fd < 0)
		fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	return fd;
}

FILE *fuzz_null_file(void)
{
	static FILE *f;

	if (!f)
		f = fopen("/dev/null", "w");
	return f;
}

int fuzz_memfd(const uint8_t *data, size_t n)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	size_t done = 0;
	while (done < n) {
		ssize_t w = write(fd, data + done, n - done);
		if (w <= 0) {
			close(fd);
			return -1;
		}
		done += (size_t)w;
	}
	if (lseek(fd, 0, SEEK_SET) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int fuzz_input_fd(const uint8_t *data, size_t n)
{
	static int fd = -1;

	if (fd < 0 && (fd = memfd_create("fuzz-input", MFD_CLOEXEC)) < 0)
		return -1;
	size_t done = 0;
	while (done < n) {
		ssize_t w = pwrite(fd, data + done, n - done, (off_t)done);
		if (w <= 0)
			return -1;
		done += (size_t)w;
	}
	if (ftruncate(fd, (off_t)n) != 0 || lseek(fd, 0, SEEK_SET) != 0)
		return -1;
	return fd;
}

void fuzz_session_init(struct session *s, const struct ferry_opts *opts, const uint8_t *data,
		       size_t n)
{
	session_init(s, opts, fuzz_null_fd(), fuzz_null_fd());
	s->info = fuzz_null_file();
	/* Preload the input buffer: no system call per read, and the stream
	 * ends where the input does (a read of /dev/null is EOF). */
	if (s->in.buf && n <= s->in.cap) {
		memcpy(s->in.buf, data, n);
		s->in.end = n;
		s->in.total_read = n;
	} else {
		int fd = fuzz_memfd(data, n);
		s->in.fd = fd >= 0 ? fd : fuzz_null_fd();
	}
}

void fuzz_session_free(struct session *s)
{
	if (s->in.fd != fuzz_null_fd())
		close(s->in.fd);
	session_free(s);
}

void fuzz_session_protocol(struct session *s, int protocol, uint32_t compat_flags)
{
	s->protocol = s->in.protocol = s->out.protocol = protocol;
	s->compat_flags = compat_flags;
	s->varint_flist_flags = compat_flags & CF_VARINT_FLIST_FLAGS;
	s->proper_seed_order = compat_flags & CF_CHKSUM_SEED_FIX;
	s->id0_names = compat_flags & CF_ID0_NAMES;
	s->safe_flist = (compat_flags & CF_SAFE_FLIST) || protocol >= 31;
	s->inc_recurse = compat_flags & CF_INC_RECURSE;
	s->xfer_csum = csum_implied(protocol);
	s->flist_csum = csum_flist_type(s->xfer_csum);
}

/*
 * The user and group database, for the harnesses' processes only: these
 * definitions take the place of libc's (and the sanitizers' wrappers) in
 * the fuzzers and the corpus replay. A wire name goes through the same
 * id-mapping code (proto/meta/idmap.c, daemon/auth.c) as in real use,
 * answered from the fixed table below instead of NSS, which opened ~38
 * files per name on the machine of the first campaign (files + systemd's
 * userdb: half of fuzz_flist's time). The table is a Debian base system's
 * first entries, so known and unknown names both occur, and a crash
 * replays the same on any machine.
 */
struct fuzz_account {
	const char *name;
	unsigned id, gid; /* gid: a user's primary group */
};

static const struct fuzz_account fuzz_users[] = {
	{"root", 0, 0}, {"daemon", 1, 1}, {"bin", 2, 2}, {"sys", 3, 3},
	{"sync", 4, 65534}, {"man", 6, 12}, {"www-data", 33, 33}, {"nobody", 65534, 65534},
};

static const struct fuzz_account fuzz_groups[] = {
	{"root", 0, 0},	    {"daemon", 1, 0}, {"bin", 2, 0},	{"sys", 3, 0},
	{"adm", 4, 0},	    {"tty", 5, 0},    {"disk", 6, 0},	{"man", 12, 0},
	{"www-data", 33, 0}, {"staff", 50, 0}, {"users", 100, 0}, {"nogroup", 65534, 0},
};

#define FUZZ_NUSERS (sizeof fuzz_users / sizeof fuzz_users[0])
#define FUZZ_NGROUPS (sizeof fuzz_groups / sizeof fuzz_groups[0])

/* The entry named name, or with id when name is NULL. */
static const struct fuzz_account *fuzz_account_find(const struct fuzz_account *t, size_t n,
						    const char *name, unsigned id)
{
	for (size_t i = 0; i < n; i++)
		if (name ? strcmp(t[i].name, name) == 0 : t[i].id == id)
			return &t[i];
	return NULL;
}

/* a's name into buf as libc's record strings go there: ERANGE when it
 * does not fit, with room left at the end for gr_mem's empty list. */
static int fuzz_put_name(const struct fuzz_account *a, char *buf, size_t buflen, size_t tail,
			 char **name)
{
	size_t len = strlen(a->name) + 1;

	if (len + 1 + tail > buflen)
		return ERANGE;
	memcpy(buf, a->name, len);
	buf[len] = '\0'; /* the empty password and the empty strings below */
	*name = buf;
	return 0;
}

static int fuzz_user(const char *name, uid_t id, struct passwd *pw, char *buf, size_t buflen,
		     struct passwd **result)
{
	const struct fuzz_account *a = fuzz_account_find(fuzz_users, FUZZ_NUSERS, name, id);

	*result = NULL;
	if (!a)
		return 0;
	int rc = fuzz_put_name(a, buf, buflen, 0, &pw->pw_name);
	if (rc)
		return rc;
	char *empty = buf + strlen(buf) + 1;
	pw->pw_passwd = pw->pw_gecos = pw->pw_shell = empty;
	pw->pw_dir = (char *)"/nonexistent";
	pw->pw_uid = a->id;
	pw->pw_gid = a->gid;
	*result = pw;
	return 0;
}

static int fuzz_group(const char *name, gid_t id, struct group *gr, char *buf, size_t buflen,
		      struct group **result)
{
	const struct fuzz_account *a = fuzz_account_find(fuzz_groups, FUZZ_NGROUPS, name, id);

	*result = NULL;
	if (!a)
		return 0;
	int rc = fuzz_put_name(a, buf, buflen, 2 * sizeof(char *), &gr->gr_name);
	if (rc)
		return rc;
	gr->gr_passwd = buf + strlen(buf) + 1;
	/* gr_mem: a NULL-terminated (empty) list, aligned, after the strings */
	uintptr_t at = (uintptr_t)(gr->gr_passwd + 1);
	at = (at + sizeof(char *) - 1) & ~(uintptr_t)(sizeof(char *) - 1);
	if (at + sizeof(char *) > (uintptr_t)buf + buflen)
		return ERANGE;
	gr->gr_mem = (char **)at;
	gr->gr_mem[0] = NULL;
	gr->gr_gid = a->id;
	*result = gr;
	return 0;
}

int getpwnam_r(const char *name, struct passwd *pw, char *buf, size_t buflen,
	       struct passwd **result)
{
	return fuzz_user(name, 0, pw, buf, buflen, result);
}

int getpwuid_r(uid_t uid, struct passwd *pw, char *buf, size_t buflen, struct passwd **result)
{
	return fuzz_user(NULL, uid, pw, buf, buflen, result);
}

int getgrnam_r(const char *name, struct group *gr, char *buf, size_t buflen,
	       struct group **result)
{
	return fuzz_group(name, 0, gr, buf, buflen, result);
}

int getgrgid_r(gid_t gid, struct group *gr, char *buf, size_t buflen, struct group **result)
{
	return fuzz_group(NULL, gid, gr, buf, buflen, result);
}

/* No group of the table lists members: a user is in its primary group. */
int getgrouplist(const char *user, gid_t group, gid_t *groups, int *ngroups)
{
	(void)user;
	int room = *ngroups;
	*ngroups = 1;
	if (room < 1)
		return -1;
	groups[0] = group;
	return 1;
}
