/*
 * Sender, generator and receiver, end to end in one process
 * (engine_harness.h): new files, files the quick check skips, deltas of
 * changed files (in a temp file or --inplace), --delete, --checksum,
 * each compressor, and a receiver that may not write. The assertions are
 * on the tree built, the statistics the sender kept (the counters
 * rsync's --stats prints) and the messages captured.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "proto/delta/token.h"
#include "tests/unit/engine_harness.h"

/* Fixed times, so nothing depends on the clock. */
#define T_OLD 1400000000
#define T_NEW 1400000500
#define BIG (1024 * 1024)

static int env_setup(void **state)
{
	struct eh_env *e = calloc(1, sizeof *e);

	if (!e || eh_env_init(e) != 0) {
		free(e);
		return -1;
	}
	*state = e;
	return 0;
}

static int env_teardown(void **state)
{
	eh_env_free(*state);
	free(*state);
	return 0;
}

/* Run opts over ROOT/src/ to ROOT/dst/, expecting exit code 0. */
static void sync_ok(struct eh_run *r, const struct eh_env *e, const char *const *opts)
{
	assert_int_equal(eh_sync(r, e, opts, 0), 0);
	if (r->code != 0)
		fail_msg("exit %d; errors:\n%s%s", r->code, r->send_errors, r->recv_errors);
	assert_string_equal(r->send_errors, "");
	assert_string_equal(r->recv_errors, "");
}

static ino_t inode_of(const struct eh_env *e, const char *rel)
{
	struct stat st;

	assert_true(eh_lstat(e, rel, &st));
	return st.st_ino;
}

/* Change 64 bytes in the middle of ROOT/rel, size kept, mtime T_NEW. */
static void poke_middle(const struct eh_env *e, const char *rel)
{
	size_t len;
	char *data = eh_read(e, rel, &len);

	assert_true(len > 1000);
	for (size_t i = len / 2; i < len / 2 + 64; i++)
		data[i] = (char)~data[i];
	eh_write(e, rel, data, len, 0644, T_NEW);
	free(data);
}

static void test_new_files_are_sent_whole(void **state)
{
	struct eh_env *e = *state;
	struct eh_run r;
	struct stat st;

	eh_write(e, "src/empty", "", 0, 0600, T_OLD);
	eh_write_random(e, "src/small", 1000, 1, T_OLD);
	eh_write_random(e, "src/big", 100000, 2, T_OLD + 1);
	const char *opts[] = {"-a", NULL};
	sync_ok(&r, e, opts);
	assert_true(eh_same_content(e, "src/small", "dst/small"));
	assert_true(eh_same_content(e, "src/big", "dst/big"));
	assert_true(eh_lstat(e, "dst/empty", &st));
	assert_int_equal(st.st_size, 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_true(eh_lstat(e, "dst/big", &st));
	assert_int_equal(st.st_mtime, T_OLD + 1);
	assert_int_equal(r.sender.stats.xferred_files, 3);
	assert_int_equal(r.sender.stats.literal_data, 101000);
	assert_int_equal(r.sender.stats.matched_data, 0);
	assert_int_equal(r.sender.stats.total_size, 101000);
	assert_int_equal(r.sender.stats.total_transferred_size, 101000);
	eh_run_free(&r);
}

static void test_unchanged_files_are_skipped(void **state)
{
	struct eh_env *e = *state;
	struct eh_run r;

	eh_write_random(e, "src/a", 5000, 3, T_OLD);
	eh_write_random(e, "src/b", 7000, 4, T_OLD);
	const char *opts[] = {"-aii", NULL};
	sync_ok(&r, e, opts);
	eh_run_free(&r);
	ino_t before = inode_of(e, "dst/a");

	sync_ok(&r, e, opts);
	/* the quick check (size and mtime) finds nothing to send */
	assert_int_equal(r.sender.stats.xferred_files, 0);
	assert_int_equal(r.sender.stats.literal_data, 0);
	assert_int_equal(r.sender.stats.matched_data, 0);
	assert_int_equal(r.sender.stats.total_transferred_size, 0);
	assert_true(eh_has_line(r.send_info, ".f          a"));
	assert_true(eh_has_line(r.send_info, ".f          b"));
	assert_int_equal(inode_of(e, "dst/a"), before);
	eh_run_free(&r);
}

/* A changed 1 MiB file with --no-whole-file: rebuilt from the old copy
 * and a little literal data. Returns the inodes before and after. */
static void delta_of_changed_file(struct eh_env *e, const char *extra, ino_t *before,
				  ino_t *after)
{
	struct eh_run r;
	const char *first[] = {"-a", NULL};
	const char *second[] = {"-a", "--no-whole-file", "--stats", extra, NULL};

	eh_write_random(e, "src/big", BIG, 5, T_OLD);
	sync_ok(&r, e, first);
	eh_run_free(&r);
	*before = inode_of(e, "dst/big");
	poke_middle(e, "src/big");

	sync_ok(&r, e, second);
	assert_true(eh_same_content(e, "src/big", "dst/big"));
	assert_int_equal(r.sender.stats.xferred_files, 1);
	/* the 64 bytes changed cost at most a block or two of literal data */
	assert_true(r.sender.stats.literal_data > 0);
	assert_true(r.sender.stats.literal_data < BIG / 64);
	assert_int_equal(r.sender.stats.literal_data + r.sender.stats.matched_data, BIG);
	assert_true(strstr(r.send_info, "Matched data: ") != NULL);
	struct stat st;
	assert_true(eh_lstat(e, "dst/big", &st));
	assert_int_equal(st.st_mtime, T_NEW);
	*after = st.st_ino;
	eh_run_free(&r);
}

static void test_changed_file_goes_as_delta(void **state)
{
	ino_t before, after;

	delta_of_changed_file(*state, NULL, &before, &after);
	/* rebuilt in a temp file and renamed over the old one */
	assert_int_not_equal(before, after);
}

static void test_inplace_updates_the_file_itself(void **state)
{
	ino_t before, after;

	delta_of_changed_file(*state, "--inplace", &before, &after);
	assert_int_equal(before, after);
}

static void test_delete_removes_extraneous_files(void **state)
{
	struct eh_env *e = *state;
	struct eh_run r;
	struct stat st;

	eh_write(e, "src/keep", "k\n", 2, 0644, T_OLD);
	eh_mkdir(e, "dst", 0755);
	eh_mkdir(e, "dst/extra", 0755);
	eh_write(e, "dst/extra/e", "e\n", 2, 0644, T_OLD);
	eh_write(e, "dst/zz", "z\n", 2, 0644, T_OLD);
	const char *opts[] = {"-aii", "--delete", NULL};
	sync_ok(&r, e, opts);
	assert_true(eh_lstat(e, "dst/keep", &st));
	assert_false(eh_lstat(e, "dst/zz", &st));
	assert_false(eh_lstat(e, "dst/extra", &st));
	assert_true(eh_has_line(r.send_info, "*deleting   extra/e"));
	assert_true(eh_has_line(r.send_info, "*deleting   extra/"));
	assert_true(eh_has_line(r.send_info, "*deleting   zz"));
	/* the receiver's count, which the sender hears at the end */
	assert_int_equal(r.sender.stats.deleted_files, 3);
	assert_int_equal(r.sender.stats.deleted_dirs, 1);
	eh_run_free(&r);

	/* without --delete, nothing goes */
	eh_write(e, "dst/zz", "z\n", 2, 0644, T_OLD);
	const char *plain[] = {"-a", NULL};
	sync_ok(&r, e, plain);
	assert_true(eh_lstat(e, "dst/zz", &st));
	eh_run_free(&r);
}

static void test_checksum_finds_what_the_quick_check_misses(void **state)
{
	struct eh_env *e = *state;
	struct eh_run r;
	size_t len;

	/* same size, same mtime, other bytes */
	eh_write(e, "src/f", "new content\n", 12, 0644, T_OLD);
	eh_mkdir(e, "dst", 0755);
	eh_write(e, "dst/f", "old content\n", 12, 0644, T_OLD);

	const char *quick[] = {"-a", NULL};
	sync_ok(&r, e, quick);
	assert_int_equal(r.sender.stats.xferred_files, 0);
	char *got = eh_read(e, "dst/f", &len);
	assert_string_equal(got, "old content\n");
	free(got);
	eh_run_free(&r);

	const char *sums[] = {"-a", "--checksum", NULL};
	sync_ok(&r, e, sums);
	assert_int_equal(r.sender.stats.xferred_files, 1);
	got = eh_read(e, "dst/f", &len);
	assert_string_equal(got, "new content\n");
	free(got);
	eh_run_free(&r);

	/* and with equal bytes, --checksum sends nothing */
	sync_ok(&r, e, sums);
	assert_int_equal(r.sender.stats.xferred_files, 0);
	assert_int_equal(r.sender.stats.literal_data, 0);
	eh_run_free(&r);
}

/* Text that compresses, so the compressed token streams carry real
 * deflate/lz4/zstd blocks, not stored ones. */
static void write_text(struct eh_env *e, const char *rel, size_t len, time_t mtime)
{
	char *buf = malloc(len);

	assert_non_null(buf);
	for (size_t i = 0; i < len; i++)
		buf[i] = "the quick brown fox jumps over the lazy dog\n"[(i * 7 + i / 45) % 44];
	eh_write(e, rel, buf, len, 0644, mtime);
	free(buf);
}

static void compressed_transfer(struct eh_env *e, const char *choice, int cpres)
{
	struct eh_run r;
	char opt[64];
	ino_t before, after;

	snprintf(opt, sizeof opt, "--compress-choice=%s", choice);
	const char *opts[] = {"-a", "-z", opt, "--no-whole-file", NULL};
	write_text(e, "src/text", 300000, T_OLD);
	eh_write_random(e, "src/big", BIG, 6, T_OLD);
	sync_ok(&r, e, opts);
	assert_int_equal(r.sender.compress, cpres);
	assert_int_equal(r.receiver.compress, cpres);
	assert_true(eh_same_content(e, "src/text", "dst/text"));
	assert_true(eh_same_content(e, "src/big", "dst/big"));
	/* the text went in far fewer bytes than it has */
	assert_true(r.sender.stats.total_written < BIG + 300000 / 2);
	eh_run_free(&r);

	/* and a delta through the compressor */
	before = inode_of(e, "dst/big");
	poke_middle(e, "src/big");
	sync_ok(&r, e, opts);
	after = inode_of(e, "dst/big");
	assert_int_not_equal(before, after);
	assert_true(eh_same_content(e, "src/big", "dst/big"));
	assert_true(r.sender.stats.literal_data < BIG / 64);
	eh_run_free(&r);
}

static void test_compress_zlib(void **state)
{
	compressed_transfer(*state, "zlib", CPRES_ZLIB);
}

static void test_compress_zlibx(void **state)
{
	compressed_transfer(*state, "zlibx", CPRES_ZLIBX);
}

static void test_compress_lz4(void **state)
{
	compressed_transfer(*state, "lz4", CPRES_LZ4);
}

static void test_compress_zstd(void **state)
{
	compressed_transfer(*state, "zstd", CPRES_ZSTD);
}

/* A destination directory the receiver may not write to: each file
 * fails, the run says why, and ends with exit code 23, never 0. */
static void test_receiver_write_failure_is_code_23(void **state)
{
	struct eh_env *e = *state;
	struct eh_run r;
	struct stat st;

	/* only root has another user to be: the owner of a read-only dir
	 * may make it writable, and rsync's generator does */
	if (geteuid() != 0)
		skip();
	eh_write(e, "src/f", "data\n", 5, 0644, T_OLD);
	eh_write(e, "src/g", "more\n", 5, 0644, T_OLD);
	eh_mkdir(e, "dst", 0555);
	/* -r -t only: the receiver checks access as nobody and cannot chown */
	const char *opts[] = {"-rt", NULL};
	assert_int_equal(eh_sync(&r, e, opts, EH_RECV_UNPRIVILEGED), 0);
	assert_int_equal(r.code, 23);
	assert_false(eh_lstat(e, "dst/f", &st));
	assert_false(eh_lstat(e, "dst/g", &st));
	/* the receiver's errors reach the sending client, as a terminal
	 * shows them; rsync 3.5 run by nobody says the same three things */
	const char *errs = r.send_errors;
	char dst[PATH_MAX], want[PATH_MAX + 128];
	eh_path(e, "dst", dst, sizeof dst);
	snprintf(want, sizeof want,
		 "ferry: [generator] failed to modify permissions on \"%s/.\": "
		 "Operation not permitted (1)", dst);
	if (!eh_has_line(errs, want))
		fail_msg("no \"%s\" in:\n%s", want, errs);
	for (const char *name = "f"; name; name = *name == 'f' ? "g" : NULL) {
		snprintf(want, sizeof want, "ferry: [receiver] mkstemp \"%s/.%s.", dst, name);
		const char *at = strstr(errs, want);
		if (!at || !strstr(at, "\" failed: Permission denied (13)\n"))
			fail_msg("no \"%s...\" in:\n%s", want, errs);
	}
	/* sent, though not kept: rsync's --stats counts them too */
	assert_int_equal(r.sender.stats.xferred_files, 2);
	eh_run_free(&r);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, env_setup, env_teardown)
	const struct CMUnitTest tests[] = {
		T(test_new_files_are_sent_whole),
		T(test_unchanged_files_are_skipped),
		T(test_changed_file_goes_as_delta),
		T(test_inplace_updates_the_file_itself),
		T(test_delete_removes_extraneous_files),
		T(test_checksum_finds_what_the_quick_check_misses),
		T(test_compress_zlib),
		T(test_compress_zlibx),
		T(test_compress_lz4),
		T(test_compress_zstd),
		T(test_receiver_write_failure_is_code_23),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
