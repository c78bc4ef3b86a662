/*
 * The packed file-list entry (flist.h): a name and the optional fields
 * after it, read back through the fe_* accessors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "proto/core/flist.h"

/* Owner and group are optional fields (-o / -g): a list without them
 * (a listing, -r) pays 32 bytes an entry (issue 22). */
static void test_entry_is_32_bytes(void **state)
{
	(void)state;
	assert_int_equal(sizeof(struct file_entry), 32);
}

static void test_all_fields_round_trip(void **state)
{
	static const char target[] = "../t";
	struct fe_extras x = {
		.has = FE_X_NSEC | FE_X_PTR | FE_X_ATIME | FE_X_RDEV | FE_X_HLINK | FE_X_META |
		       FE_X_IDS,
		.size = (int64_t)5 << 32, /* past 32 bits: packed first */
		.mtime_nsec = 999999999,
		.link = target,
		.atime = -7,
		.rdev_major = 8,
		.rdev_minor = 65537,
		.hlink_group = 12,
		.hl_next = 34,
		.acl_ndx = 1,
		.defacl_ndx = 2,
		.xattr_ndx = 3,
		.uid = 4000000000u,
		.gid = 77,
	};
	char buf[128];
	struct file_entry f = {.mode = S_IFLNK | 0777, .flags = FE_ACTIVE};
	size_t need = fe_packed_len(4, &x);

	memset(buf, 0x5a, sizeof buf);
	fe_place(&f, buf, "name", 4, &x);
	assert_int_equal(need, 5 + 8 + 4 + 8 + 8 + 8 + 8 + 12 + 8);
	assert_int_equal((unsigned char)buf[need], 0x5a); /* nothing past it */
	assert_string_equal(f.basename, "name");
	assert_int_equal(f.flags & FE_ACTIVE, FE_ACTIVE);
	assert_true(fe_size(&f) == (int64_t)5 << 32);
	assert_int_equal(fe_mtime_nsec(&f), 999999999);
	assert_ptr_equal(fe_link(&f), target);
	assert_null(fe_sum(&f)); /* a symlink has no sum */
	assert_true(fe_atime(&f) == -7);
	assert_int_equal(fe_rdev_major(&f), 8);
	assert_int_equal(fe_rdev_minor(&f), 65537);
	assert_int_equal(fe_hlink_group(&f), 12);
	assert_int_equal(fe_hl_next(&f), 34);
	assert_int_equal(fe_acl_ndx(&f), 1);
	assert_int_equal(fe_defacl_ndx(&f), 2);
	assert_int_equal(fe_xattr_ndx(&f), 3);
	assert_true(fe_uid(&f) == 4000000000u);
	assert_int_equal(fe_gid(&f), 77);

	/* setters change their field only */
	assert_true(fe_set_hl_next(&f, -1));
	assert_true(fe_set_xattr_ndx(&f, 9));
	assert_int_equal(fe_hl_next(&f), -1);
	assert_int_equal(fe_hlink_group(&f), 12);
	assert_int_equal(fe_xattr_ndx(&f), 9);
	assert_int_equal(fe_defacl_ndx(&f), 2);
	assert_true(fe_set_gid(&f, 5));
	assert_int_equal(fe_gid(&f), 5);
	assert_true(fe_uid(&f) == 4000000000u);

	struct fe_extras back;
	fe_extras_get(&f, &back);
	assert_int_equal(back.has, x.has);
	assert_true(back.size == x.size);
	assert_int_equal(back.atime, -7);
	assert_true(back.uid == 4000000000u);
	assert_int_equal(back.gid, 5);
}

static void test_absent_fields_read_as_defaults(void **state)
{
	struct fe_extras x = {.size = 4294967294LL}; /* the largest kept in place */
	char buf[16];
	struct file_entry f = {.mode = S_IFREG | 0644};

	(void)state;
	assert_int_equal(fe_packed_len(1, &x), 2);
	fe_place(&f, buf, "a", 1, &x);
	assert_true(fe_size(&f) == 4294967294LL);
	assert_int_equal(fe_mtime_nsec(&f), 0);
	assert_null(fe_sum(&f));
	assert_null(fe_link(&f));
	assert_int_equal(fe_atime(&f), 0);
	assert_int_equal(fe_hlink_group(&f), -1);
	assert_int_equal(fe_xattr_ndx(&f), 0);
	assert_false(fe_set_hl_next(&f, 3)); /* not placed with one */
	assert_false(fe_set_xattr_ndx(&f, 3));
	assert_int_equal(fe_uid(&f), 0);
	assert_int_equal(fe_gid(&f), 0);
	assert_false(fe_set_uid(&f, 3));
	assert_int_equal(fe_uid(&f), 0);
}

static void test_kept_dir_copies_its_fields(void **state)
{
	struct flist_arena a = {0};
	struct fe_extras x = {.has = FE_X_NSEC | FE_X_META | FE_X_IDS, .size = 4096,
			      .mtime_nsec = 5, .xattr_ndx = 4, .uid = 10, .gid = 20};
	char buf[64];
	struct file_entry d = {.mode = S_IFDIR | 0755, .flags = FE_ACTIVE | FE_CONTENT_DIR};

	(void)state;
	fe_place(&d, buf, "sub", 3, &x);
	/* an odd-length name first: the entry after it is still aligned */
	assert_non_null(flist_arena_strdup(&a, "abc", 3));
	struct file_entry *c = flist_keep_dir(&a, &d, "top");
	assert_non_null(c);
	assert_int_equal((uintptr_t)c % 8, 0);
	assert_string_equal(c->basename, "sub");
	assert_string_equal(c->dirname, "top");
	assert_ptr_not_equal(c->basename, d.basename);
	assert_int_equal(fe_size(c), 4096);
	assert_int_equal(fe_mtime_nsec(c), 5);
	assert_int_equal(fe_xattr_ndx(c), 4);
	assert_int_equal(fe_uid(c), 10);
	assert_int_equal(fe_gid(c), 20);
	assert_int_equal(c->flags, d.flags);
	flist_arena_free_below(&a, a.nblocks);
	free(a.blocks);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_entry_is_32_bytes),
		cmocka_unit_test(test_all_fields_round_trip),
		cmocka_unit_test(test_absent_fields_read_as_defaults),
		cmocka_unit_test(test_kept_dir_copies_its_fields),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
