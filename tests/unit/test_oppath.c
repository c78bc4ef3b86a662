/*
 * Unit tests for the operator-path walk (proto/base/oppath.c): a symlink on the
 * way is followed only when root or the euid owns it; another user's link,
 * at the leaf or in a parent, fails with ELOOP, and OPPATH_INSECURE turns
 * the check off. The "other user" is uid 65534, which only root can give a
 * link to; those checks are skipped otherwise. Confined to a daemon
 * module (oppath_open_in, oppath_open_from), a link is followed only
 * while it stays inside the module; under --confine-root
 * (oppath_*_under) a walk from anywhere must end inside the root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/base/oppath.h"

#define OTHER_UID 65534

static char base[256];

/* base/name as an absolute path, in one of a few rotating buffers. */
static const char *at(const char *name)
{
	static char bufs[4][512];
	static int next;
	char *b = bufs[next++ % 4];

	snprintf(b, sizeof bufs[0], "%s/%s", base, name);
	return b;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* A link at name to target, owned by uid (-1: ours). False when uid could
 * not be set (not root). */
static bool plant(const char *name, const char *target, int uid)
{
	assert_int_equal(symlink(target, at(name)), 0);
	return uid < 0 || lchown(at(name), (uid_t)uid, (gid_t)uid) == 0;
}

static int setup(void **state)
{
	(void)state;
	snprintf(base, sizeof base, "/tmp/ferry-oppath.XXXXXX");
	if (!mkdtemp(base))
		return -1;
	mkdir(at("real"), 0755);
	write_file(at("real/file"), "content\n");
	return 0;
}

static int teardown(void **state)
{
	char cmd[600];
	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_own_links_followed(void **state)
{
	(void)state;
	plant("own_dir", "real", -1);
	plant("own_file", "real/file", -1);
	plant("own_abs", at("real"), -1);
	int fd = oppath_open(AT_FDCWD, at("own_dir/file"), O_RDONLY, 0, 0);
	assert_true(fd >= 0);
	close(fd);
	fd = oppath_open(AT_FDCWD, at("own_file"), O_RDONLY, 0, 0);
	assert_true(fd >= 0);
	close(fd);
	/* an absolute target restarts the walk at "/" */
	fd = oppath_open(AT_FDCWD, at("own_abs/file"), O_RDONLY, 0, 0);
	assert_true(fd >= 0);
	close(fd);
	/* relative to a directory fd, and with a trailing slash */
	int dir = open(base, O_RDONLY | O_DIRECTORY);
	fd = oppath_open(dir, "own_dir/", O_RDONLY | O_DIRECTORY, 0, 0);
	assert_true(fd >= 0);
	close(fd);
	close(dir);
}

static void test_other_users_links_refused(void **state)
{
	(void)state;
	if (!plant("their_dir", at("real"), OTHER_UID) ||
	    !plant("their_file", at("real/file"), OTHER_UID))
		skip();
	/* parent and leaf; quietly: the hint would only clutter the log */
	errno = 0;
	assert_int_equal(oppath_open(AT_FDCWD, at("their_dir/file"), O_RDONLY, 0, OPPATH_QUIET), -1);
	assert_int_equal(errno, ELOOP);
	assert_int_equal(oppath_open(AT_FDCWD, at("their_file"), O_RDONLY, 0, OPPATH_QUIET), -1);
	assert_int_equal(errno, ELOOP);
	/* creating through it makes nothing */
	assert_int_equal(oppath_open(AT_FDCWD, at("their_dir/new"), O_WRONLY | O_CREAT, 0600,
				     OPPATH_QUIET),
			 -1);
	assert_int_equal(errno, ELOOP);
	assert_int_equal(access(at("real/new"), F_OK), -1);
	/* behind one of our own links it is still refused */
	plant("own_to_their", "their_dir", -1);
	assert_int_equal(oppath_open(AT_FDCWD, at("own_to_their/file"), O_RDONLY, 0, OPPATH_QUIET),
			 -1);
	assert_int_equal(errno, ELOOP);
	const char *leaf;
	assert_int_equal(oppath_open_parent(AT_FDCWD, at("their_dir/x"), &leaf, OPPATH_QUIET), -1);
	bool made;
	assert_int_equal(oppath_mkdirs(AT_FDCWD, at("their_dir/a/b"), 0755, OPPATH_QUIET, &made),
			 -1);
	assert_int_equal(access(at("real/a"), F_OK), -1);
	/* --insecure-links */
	int fd = oppath_open(AT_FDCWD, at("their_dir/file"), O_RDONLY, 0, OPPATH_INSECURE);
	assert_true(fd >= 0);
	close(fd);
}

static void test_loops_and_dangling(void **state)
{
	(void)state;
	plant("loop_a", "loop_b", -1);
	plant("loop_b", "loop_a", -1);
	assert_int_equal(oppath_open(AT_FDCWD, at("loop_a"), O_RDONLY, 0, 0), -1);
	assert_int_equal(errno, ELOOP);
	assert_int_equal(oppath_open(AT_FDCWD, at("real/missing"), O_RDONLY, 0, 0), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(oppath_open(AT_FDCWD, at("real/file/x"), O_RDONLY, 0, 0), -1);
	assert_int_equal(errno, ENOTDIR);
}

static void test_parent_and_mkdirs(void **state)
{
	const char *leaf;
	bool made;
	(void)state;
	int fd = oppath_open_parent(AT_FDCWD, at("real/newdir/"), &leaf, 0);
	assert_true(fd >= 0);
	assert_string_equal(leaf, "newdir/");
	assert_int_equal(mkdirat(fd, leaf, 0755), 0);
	close(fd);
	fd = oppath_open_parent(AT_FDCWD, "/", &leaf, 0);
	assert_true(fd >= 0);
	assert_string_equal(leaf, ".");
	close(fd);
	fd = oppath_open_parent(AT_FDCWD, "plain", &leaf, 0);
	assert_true(fd >= 0);
	assert_string_equal(leaf, "plain");
	close(fd);
	plant("own_real", "real", -1);
	fd = oppath_mkdirs(AT_FDCWD, at("own_real/m1/m2"), 0755, 0, &made);
	assert_true(fd >= 0);
	assert_true(made);
	close(fd);
	assert_int_equal(access(at("real/m1/m2"), F_OK), 0);
	fd = oppath_mkdirs(AT_FDCWD, at("real/m1/m2"), 0755, 0, &made);
	assert_true(fd >= 0);
	assert_false(made);
	close(fd);
}

/* open_in(modfd, path): 0 when it opens for reading, else errno. */
static int open_in(int modfd, const char *path, unsigned how)
{
	int fd = oppath_open_in(modfd, path, O_RDONLY, 0, how | OPPATH_QUIET);
	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

static int open_from(int modfd, int dirfd, const char *path, unsigned how)
{
	int fd = oppath_open_from(modfd, dirfd, path, O_RDONLY, how | OPPATH_QUIET);
	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

static void test_confined_to_module(void **state)
{
	const char *leaf;
	bool made;
	(void)state;
	mkdir(at("mod"), 0755);
	mkdir(at("mod/t"), 0755);
	mkdir(at("mod/sub"), 0755);
	write_file(at("mod/t/file"), "in\n");
	plant("mod/l_in", "t", -1);
	plant("mod/sub/up", "../t", -1);
	plant("mod/l_abs_in", at("mod/t"), -1);
	plant("mod/l_out", "../real", -1);
	plant("mod/l_abs_out", at("real"), -1);
	plant("mod/sub/esc", "../../real", -1);
	int modfd = open(at("mod"), O_RDONLY | O_DIRECTORY);
	int subfd = open(at("mod/sub"), O_RDONLY | O_DIRECTORY);
	assert_true(modfd >= 0 && subfd >= 0);
	/* links that stay inside, relative or absolute; "/" is the module */
	assert_int_equal(open_in(modfd, "/l_in/file", 0), 0);
	assert_int_equal(open_in(modfd, "sub/up/file", 0), 0);
	assert_int_equal(open_in(modfd, "l_abs_in/file", 0), 0);
	assert_int_equal(open_in(modfd, "sub/../t/file", 0), 0);
	/* out of it: through a link, ".." at the root, or to a missing name */
	assert_int_equal(open_in(modfd, "l_out/file", 0), ELOOP);
	assert_int_equal(open_in(modfd, "l_abs_out/file", 0), ELOOP);
	assert_int_equal(open_in(modfd, "sub/esc/file", 0), ELOOP);
	assert_int_equal(open_in(modfd, "../real/file", 0), ELOOP);
	assert_int_equal(open_in(modfd, "l_out/missing", 0), ELOOP);
	assert_int_equal(open_in(modfd, "t/missing", 0), ENOENT);
	/* the module's "insecure links" follows them all */
	assert_int_equal(open_in(modfd, "l_out/file", OPPATH_INSECURE), 0);
	/* nothing is made outside; inside, through a link, it is */
	assert_int_equal(oppath_mkdirs_in(modfd, "l_out/newd", 0755, OPPATH_QUIET, &made), -1);
	assert_int_equal(errno, ELOOP);
	assert_int_equal(access(at("real/newd"), F_OK), -1);
	int fd = oppath_mkdirs_in(modfd, "/l_in/newd", 0755, OPPATH_QUIET, &made);
	assert_true(fd >= 0 && made);
	close(fd);
	assert_int_equal(access(at("mod/t/newd"), F_OK), 0);
	fd = oppath_open_parent_in(modfd, "l_in/x", &leaf, OPPATH_QUIET);
	assert_true(fd >= 0);
	assert_string_equal(leaf, "x");
	close(fd);
	assert_int_equal(oppath_open_parent_in(modfd, "l_abs_out/x", &leaf, OPPATH_QUIET), -1);
	/* from a directory below the root: ".." may climb back to the root */
	assert_int_equal(open_from(modfd, subfd, "up/file", 0), 0);
	assert_int_equal(open_from(modfd, subfd, "../t/file", 0), 0);
	assert_int_equal(open_from(modfd, subfd, "esc/file", 0), ELOOP);
	assert_int_equal(open_from(modfd, subfd, "../../real/file", 0), ELOOP);
	/* another user's link inside the module: only a sender follows it */
	if (plant("mod/their", "t", OTHER_UID)) {
		assert_int_equal(open_in(modfd, "their/file", 0), ELOOP);
		assert_int_equal(open_from(modfd, modfd, "their/file", OPPATH_ANY_OWNER), 0);
	}
	close(subfd);
	close(modfd);
}

/* Open base/path under --confine-root=base/jail from atfd: 0 when it
 * opened, else errno. */
static int open_under(int rootfd, int atfd, const char *path)
{
	int fd = oppath_open_under(rootfd, atfd, path, O_RDONLY, 0, OPPATH_QUIET);
	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

static void test_confine_root(void **state)
{
	const char *leaf;
	bool made;
	(void)state;
	mkdir(at("jail"), 0755);
	mkdir(at("jail/d"), 0755);
	write_file(at("jail/d/file"), "in\n");
	write_file(at("secret"), "out\n");
	plant("jail/self", ".", -1);
	plant("jail/up", "../secret", -1);
	plant("jail/abs_in", at("jail/d"), -1);
	int fd, root = open(at("jail"), O_PATH | O_DIRECTORY);
	int basefd = open(base, O_RDONLY | O_DIRECTORY);
	int dfd = open(at("jail/d"), O_RDONLY | O_DIRECTORY);
	assert_true(root >= 0 && basefd >= 0 && dfd >= 0);
	/* absolute names come in through the root's ancestors */
	assert_int_equal(open_under(root, AT_FDCWD, at("jail/d/file")), 0);
	assert_int_equal(open_under(root, AT_FDCWD, at("jail/self/self/d/file")), 0);
	assert_int_equal(open_under(root, AT_FDCWD, at("jail/abs_in/file")), 0);
	assert_int_equal(open_under(root, AT_FDCWD, at("secret")), ELOOP);
	assert_int_equal(open_under(root, AT_FDCWD, at("jail/up")), ELOOP);
	assert_int_equal(open_under(root, AT_FDCWD, at("jail/self/up")), ELOOP);
	assert_int_equal(open_under(root, AT_FDCWD, at("jail/../secret")), ELOOP);
	/* the root itself, named from outside it */
	fd = oppath_open_under(root, AT_FDCWD, at("jail"), O_RDONLY | O_DIRECTORY, 0, OPPATH_QUIET);
	assert_true(fd >= 0);
	close(fd);
	fd = oppath_open_under(root, AT_FDCWD, at("jail/.."), O_RDONLY | O_DIRECTORY, 0, OPPATH_QUIET);
	assert_int_equal(fd, -1);
	/* relative: from outside the root, and from below it */
	assert_int_equal(open_under(root, basefd, "jail/d/file"), 0);
	assert_int_equal(open_under(root, basefd, "secret"), ELOOP);
	assert_int_equal(open_under(root, dfd, "../d/file"), 0);
	assert_int_equal(open_under(root, dfd, "../../secret"), ELOOP);
	/* an fd pin (rrsync's /proc/self/fd/N/...) is judged by where it leads */
	char pin[64];
	int jailfd = open(at("jail"), O_RDONLY | O_DIRECTORY);
	assert_true(jailfd >= 0);
	snprintf(pin, sizeof pin, "/proc/self/fd/%d/d/file", jailfd);
	assert_int_equal(open_under(root, AT_FDCWD, pin), 0);
	snprintf(pin, sizeof pin, "/dev/fd/%d/d/file", jailfd);
	assert_int_equal(open_under(root, AT_FDCWD, pin), 0);
	snprintf(pin, sizeof pin, "/proc/self/fd/%d/secret", basefd);
	assert_int_equal(open_under(root, AT_FDCWD, pin), ELOOP);
	/* OPPATH_FD_PINS alone (--log-file): the pin spelling, no bound */
	fd = oppath_open(AT_FDCWD, pin, O_RDONLY, 0, OPPATH_FD_PINS | OPPATH_QUIET);
	assert_true(fd >= 0);
	close(fd);
	snprintf(pin, sizeof pin, "/dev/fd/%d/x", jailfd);
	fd = oppath_open_parent_under(root, AT_FDCWD, pin, &leaf, OPPATH_QUIET);
	assert_true(fd >= 0);
	assert_string_equal(leaf, "x");
	assert_ptr_equal(leaf, pin + strlen(pin) - 1);
	close(fd);
	close(jailfd);
	/* no root: the plain walk */
	assert_int_equal(open_under(-1, AT_FDCWD, at("jail/up")), 0);
	/* a directory is made inside only */
	fd = oppath_mkdirs_under(root, AT_FDCWD, at("jail/new/deeper"), 0755, OPPATH_QUIET,
				     &made);
	assert_true(fd >= 0 && made);
	close(fd);
	assert_int_equal(oppath_mkdirs_under(root, basefd, "outside-new", 0755, OPPATH_QUIET, &made),
			 -1);
	assert_int_equal(errno, ELOOP);
	assert_int_equal(access(at("outside-new"), F_OK), -1);
	fd = oppath_open_parent_under(root, dfd, "x", &leaf, OPPATH_QUIET);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(oppath_open_parent_under(root, dfd, "../../x", &leaf, OPPATH_QUIET), -1);
	close(dfd);
	close(basefd);
	close(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_own_links_followed),
		cmocka_unit_test(test_other_users_links_refused),
		cmocka_unit_test(test_loops_and_dangling),
		cmocka_unit_test(test_parent_and_mkdirs),
		cmocka_unit_test(test_confined_to_module),
		cmocka_unit_test(test_confine_root),
	};
	return cmocka_run_group_tests_name("oppath", tests, setup, teardown);
}
