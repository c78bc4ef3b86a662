/*
 * The in-process transfer harness (engine_harness.h). The halves are
 * threads of this process: they share its cwd and umask, so every path
 * given to them is absolute, and SIGPIPE is ignored (as client/main.c
 * does) so that a half that hangs up fails the other's writes instead of
 * killing the test.
 */
#include "tests/unit/engine_harness.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "proto/args/options.h"
#include "proto/filter/filter.h"

/* The uid and gid of an EH_RECV_UNPRIVILEGED receiver run by root. */
#define NOBODY_ID 65534
/* Options and paths of one run, at most. */
#define MAX_WORDS 64

/* options_parse uses getopt_long, whose cursor is the process's: runs
 * started from two threads at once parse one after the other. Only the
 * parse; the transfers themselves run side by side. */
static pthread_mutex_t parse_lock = PTHREAD_MUTEX_INITIALIZER;

int eh_env_init(struct eh_env *e)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(e->root, sizeof e->root, "%s/ferry-engine-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(e->root))
		return -1;
	/* an EH_RECV_UNPRIVILEGED receiver must pass through it */
	if (chmod(e->root, 0755) < 0)
		return -1;
	snprintf(e->src, sizeof e->src, "%s/src", e->root);
	snprintf(e->dst, sizeof e->dst, "%s/dst", e->root);
	return mkdir(e->src, 0755);
}

static int open_up(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	if (type == FTW_D)
		chmod(path, 0700);
	return 0;
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	remove(path);
	return 0;
}

void eh_env_free(struct eh_env *e)
{
	if (!e->root[0])
		return;
	/* read-only directories first made writable, then removed bottom up */
	nftw(e->root, open_up, 16, FTW_PHYS);
	nftw(e->root, remove_one, 16, FTW_PHYS | FTW_DEPTH);
	e->root[0] = '\0';
}

const char *eh_path(const struct eh_env *e, const char *rel, char *out, size_t size)
{
	int n = snprintf(out, size, "%s%s%s", e->root, *rel ? "/" : "", rel);

	assert_true(n > 0 && (size_t)n < size);
	return out;
}

/* One half's output: a memory stream and its buffer. */
struct capture {
	FILE *fp;
	char *text;
	size_t len;
};

static bool capture_open(struct capture *c)
{
	c->text = NULL;
	c->len = 0;
	c->fp = open_memstream(&c->text, &c->len);
	return c->fp != NULL;
}

/* Close the stream and hand over its text ("" when it never opened). */
static char *capture_take(struct capture *c)
{
	if (c->fp)
		fclose(c->fp);
	c->fp = NULL;
	if (!c->text)
		c->text = strdup("");
	return c->text;
}

struct half {
	const struct ferry_opts *o;
	int fd;
	struct local_half_io io;
	int code;
	/* the sender's */
	char **srcs;
	int nsrc;
	struct filter_list *filters;
	/* the receiver's */
	const char *dest;
	bool unprivileged;
	bool drop_failed;
};

static void *sender_thread(void *arg)
{
	struct half *h = arg;

	h->code = local_sender_half(h->o, h->fd, h->srcs, h->nsrc, h->filters, time(NULL), &h->io);
	/* the receiver then reads the end of the stream, as after the
	 * client process exits */
	shutdown(h->fd, SHUT_RDWR);
	return NULL;
}

/* Become nobody in this thread alone: the raw system calls change the
 * calling thread's credentials, where glibc's wrappers would change every
 * thread's. The threads it starts (the generator) inherit them, and the
 * engine sees an unprivileged user (geteuid), as when run by one. */
static bool drop_thread_privileges(void)
{
	return syscall(SYS_setgroups, 0, NULL) == 0 &&
	       syscall(SYS_setresgid, NOBODY_ID, NOBODY_ID, NOBODY_ID) == 0 &&
	       syscall(SYS_setresuid, NOBODY_ID, NOBODY_ID, NOBODY_ID) == 0 &&
	       geteuid() == NOBODY_ID;
}

static void *receiver_thread(void *arg)
{
	struct half *h = arg;

	if (h->unprivileged && geteuid() == 0 && !drop_thread_privileges()) {
		h->drop_failed = true;
		shutdown(h->fd, SHUT_RDWR);
		return NULL;
	}
	h->code = local_receiver_half(h->o, h->fd, h->dest, &h->io);
	shutdown(h->fd, SHUT_RDWR);
	return NULL;
}

/* argv for options_parse: "ferry", the options, src, dst. */
static int build_argv(char **argv, const char *const *opts, const char *src, const char *dst)
{
	int argc = 0;

	argv[argc++] = (char *)"ferry";
	for (size_t i = 0; opts && opts[i]; i++) {
		if (argc >= MAX_WORDS - 3)
			return -1;
		argv[argc++] = (char *)opts[i];
	}
	argv[argc++] = (char *)src;
	argv[argc++] = (char *)dst;
	argv[argc] = NULL;
	return argc;
}

/* Both halves over one socket pair; their codes and outputs into r. */
static int run_halves(struct eh_run *r, const struct ferry_opts *o, struct filter_list *filters,
		      const char *dst, unsigned flags)
{
	struct capture out[4];
	int sv[2];
	bool opened = true;

	for (int i = 0; i < 4; i++)
		opened = capture_open(&out[i]) && opened;
	if (!opened || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		for (int i = 0; i < 4; i++)
			free(capture_take(&out[i]));
		return -1;
	}
	struct half snd = {.o = o, .fd = sv[0], .srcs = o->args, .nsrc = o->nargs - 1,
			   .filters = filters,
			   .io = {.info = out[0].fp, .errors = out[1].fp, .result = &r->sender}};
	struct half rcv = {.o = o, .fd = sv[1], .dest = dst,
			   .unprivileged = flags & EH_RECV_UNPRIVILEGED,
			   .io = {.info = out[2].fp, .errors = out[3].fp, .result = &r->receiver}};
	pthread_t ts, tr;
	int rc = -1;
	if (pthread_create(&tr, NULL, receiver_thread, &rcv) == 0) {
		if (pthread_create(&ts, NULL, sender_thread, &snd) == 0) {
			pthread_join(ts, NULL);
			rc = 0;
		} else {
			shutdown(sv[0], SHUT_RDWR);
		}
		pthread_join(tr, NULL);
	}
	close(sv[0]);
	close(sv[1]);
	r->send_code = snd.code;
	r->recv_code = rcv.code;
	r->code = local_exit_code(snd.code, rcv.code);
	r->send_info = capture_take(&out[0]);
	r->send_errors = capture_take(&out[1]);
	r->recv_info = capture_take(&out[2]);
	r->recv_errors = capture_take(&out[3]);
	return rcv.drop_failed ? -1 : rc;
}

int eh_transfer(struct eh_run *r, const char *const *opts, const char *src, const char *dst,
		unsigned flags)
{
	char *argv[MAX_WORDS];
	struct ferry_opts o;
	struct filter_list filters;
	char err[512];

	memset(r, 0, sizeof *r);
	signal(SIGPIPE, SIG_IGN);
	int argc = build_argv(argv, opts, src, dst);
	if (argc < 0)
		return -1;
	pthread_mutex_lock(&parse_lock);
	int parsed = options_parse(&o, argc, argv);
	pthread_mutex_unlock(&parse_lock);
	if (parsed != 0 || o.nargs < 2) {
		options_free(&o);
		return -1;
	}
	filter_list_init(&filters);
	int rc = -1;
	if (filter_list_from_opts(&filters, &o, err, sizeof err) == 0)
		rc = run_halves(r, &o, &filters, o.args[o.nargs - 1], flags);
	else
		fprintf(stderr, "eh_transfer: %s\n", err);
	filter_list_free(&filters);
	options_free(&o);
	return rc;
}

int eh_sync(struct eh_run *r, const struct eh_env *e, const char *const *opts, unsigned flags)
{
	char src[PATH_MAX], dst[PATH_MAX];

	snprintf(src, sizeof src, "%s/", e->src);
	snprintf(dst, sizeof dst, "%s/", e->dst);
	return eh_transfer(r, opts, src, dst, flags);
}

void eh_run_free(struct eh_run *r)
{
	free(r->send_info);
	free(r->send_errors);
	free(r->recv_info);
	free(r->recv_errors);
	memset(r, 0, sizeof *r);
}

void eh_mkdir(const struct eh_env *e, const char *rel, mode_t mode)
{
	char path[PATH_MAX];

	assert_int_equal(mkdir(eh_path(e, rel, path, sizeof path), mode), 0);
	assert_int_equal(chmod(path, mode), 0); /* whatever the umask */
}

void eh_write(const struct eh_env *e, const char *rel, const void *data, size_t len,
	      mode_t mode, time_t mtime)
{
	char path[PATH_MAX];
	int fd = open(eh_path(e, rel, path, sizeof path), O_WRONLY | O_CREAT | O_TRUNC, mode);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	assert_int_equal(fchmod(fd, mode), 0);
	struct timespec t[2] = {{.tv_sec = mtime}, {.tv_sec = mtime}};
	assert_int_equal(futimens(fd, t), 0);
	assert_int_equal(close(fd), 0);
}

void eh_touch(const struct eh_env *e, const char *rel, time_t mtime)
{
	char path[PATH_MAX];
	struct timespec t[2] = {{.tv_sec = mtime}, {.tv_sec = mtime}};

	assert_int_equal(utimensat(AT_FDCWD, eh_path(e, rel, path, sizeof path), t,
				   AT_SYMLINK_NOFOLLOW), 0);
}

void eh_symlink(const struct eh_env *e, const char *target, const char *rel)
{
	char path[PATH_MAX];

	assert_int_equal(symlink(target, eh_path(e, rel, path, sizeof path)), 0);
}

void eh_write_random(const struct eh_env *e, const char *rel, size_t len, uint32_t seed,
		     time_t mtime)
{
	unsigned char *buf = malloc(len ? len : 1);
	uint32_t x = seed ? seed : 1;

	assert_non_null(buf);
	for (size_t i = 0; i < len; i++) {
		/* xorshift32: the same bytes on every run */
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		buf[i] = (unsigned char)x;
	}
	eh_write(e, rel, buf, len, 0644, mtime);
	free(buf);
}

char *eh_read(const struct eh_env *e, const char *rel, size_t *len)
{
	char path[PATH_MAX];
	struct stat st;
	int fd = open(eh_path(e, rel, path, sizeof path), O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	char *buf = malloc((size_t)st.st_size + 1);
	assert_non_null(buf);
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		assert_true(n > 0);
		got += (size_t)n;
	}
	buf[got] = '\0';
	close(fd);
	if (len)
		*len = got;
	return buf;
}

bool eh_same_content(const struct eh_env *e, const char *rel_a, const char *rel_b)
{
	size_t la, lb;
	char *a = eh_read(e, rel_a, &la), *b = eh_read(e, rel_b, &lb);
	bool same = la == lb && memcmp(a, b, la) == 0;

	free(a);
	free(b);
	return same;
}

bool eh_lstat(const struct eh_env *e, const char *rel, struct stat *st)
{
	char path[PATH_MAX];

	return lstat(eh_path(e, rel, path, sizeof path), st) == 0;
}

bool eh_has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, line, n) == 0 && (p[n] == '\n' || p[n] == '\0'))
			return true;
	return false;
}
