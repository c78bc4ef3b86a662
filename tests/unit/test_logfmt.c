/*
 * logfmt: %i strings, --out-format escapes, number formatting and the
 * --stats / summary blocks. Every expected string was checked against real
 * rsync 3.5.0 output (rsync -i / --out-format / --stats, -h, -hh, --no-h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "proto/core/logfmt.h"

static struct file_entry mkfile(uint32_t mode, int64_t size, const char *link)
{
	static char names[64][32]; /* an empty name and the packed fields */
	static size_t used;
	struct fe_extras x = {.size = size, .link = link,
			      .has = (uint16_t)(FE_X_IDS | (link ? FE_X_PTR : 0))};
	struct file_entry f;

	memset(&f, 0, sizeof f);
	f.mode = (uint16_t)mode;
	f.mtime = 1577836800; /* 2020-01-01 00:00:00 UTC */
	assert_true(used < 64);
	fe_place(&f, names[used++], "", 0, &x);
	return f;
}

static struct log_item mkitem(const struct file_entry *f, const char *name, int iflags)
{
	struct log_item it;

	memset(&it, 0, sizeof it);
	it.file = f;
	it.name = name;
	it.iflags = iflags;
	it.preserve_times = true;
	return it;
}

static void check_i(const struct log_item *it, const char *want)
{
	char s[12];

	itemize_string(it, s);
	assert_string_equal(s, want);
}

static void check_fmt(const char *fmt, const struct log_item *it, const char *want)
{
	char out[1024];

	log_format(fmt, it, out, sizeof out);
	assert_string_equal(out, want);
}

#define NEW_XFER (ITEM_IS_NEW | ITEM_TRANSFER)
#define NEW_LOCAL (ITEM_IS_NEW | ITEM_LOCAL_CHANGE)

/* ---- %i ---------------------------------------------------------- */

static void test_itemize_new(void **state)
{
	struct file_entry reg = mkfile(S_IFREG | 0644, 12, NULL);
	struct file_entry dir = mkfile(S_IFDIR | 0755, 4096, NULL);
	struct file_entry lnk = mkfile(S_IFLNK | 0777, 1, "a");
	struct file_entry fifo = mkfile(S_IFIFO | 0644, 0, NULL);
	struct file_entry dev = mkfile(S_IFCHR | 0644, 0, NULL);
	struct log_item it = mkitem(&reg, "a", NEW_XFER);

	check_i(&it, ">f+++++++++");
	it.sending = true;
	check_i(&it, "<f+++++++++");
	it = mkitem(&dir, ".", NEW_LOCAL);
	check_i(&it, "cd+++++++++");
	it = mkitem(&lnk, "link", NEW_LOCAL);
	check_i(&it, "cL+++++++++");
	it = mkitem(&fifo, "fifo", NEW_LOCAL);
	check_i(&it, "cS+++++++++");
	it = mkitem(&dev, "dev", NEW_LOCAL);
	check_i(&it, "cD+++++++++");
	it = mkitem(&reg, "a", NEW_LOCAL | ITEM_XNAME_FOLLOWS);
	check_i(&it, "hf+++++++++");
	it = mkitem(&reg, "a", ITEM_MISSING_DATA | ITEM_TRANSFER);
	check_i(&it, ">f?????????");
}

static void test_itemize_changes(void **state)
{
	struct file_entry reg = mkfile(S_IFREG | 0644, 12, NULL);
	struct file_entry dir = mkfile(S_IFDIR | 0755, 4096, NULL);
	struct file_entry lnk = mkfile(S_IFLNK | 0777, 1, "y");
	struct log_item it = mkitem(&reg, "a", ITEM_TRANSFER | ITEM_REPORT_SIZE |
						 ITEM_REPORT_TIME);

	check_i(&it, ">f.st......");
	it.preserve_times = false; /* rsync -r */
	check_i(&it, ">f.sT......");
	it = mkitem(&reg, "x", ITEM_TRANSFER | ITEM_REPORT_SIZE | ITEM_REPORT_PERMS);
	check_i(&it, ">f.s.p.....");
	it = mkitem(&reg, "x", ITEM_REPORT_CHANGE | ITEM_REPORT_OWNER | ITEM_REPORT_GROUP |
				       ITEM_REPORT_ACL | ITEM_REPORT_XATTR);
	check_i(&it, ".fc...og.ax");
	it = mkitem(&reg, "x", ITEM_REPORT_ATIME);
	check_i(&it, ".f......u..");
	it.iflags = ITEM_REPORT_CRTIME;
	check_i(&it, ".f......n..");
	it.iflags = ITEM_REPORT_ATIME | ITEM_REPORT_CRTIME;
	check_i(&it, ".f......b..");
	it = mkitem(&dir, ".", ITEM_REPORT_TIME);
	check_i(&it, ".d..t......");
	it = mkitem(&reg, "b", ITEM_LOCAL_CHANGE | ITEM_XNAME_FOLLOWS | ITEM_REPORT_TIME);
	check_i(&it, "hf..t......");

	/* symlinks: no 's'; 'T' without -t or when the receiver can't set it */
	it = mkitem(&lnk, "l", ITEM_LOCAL_CHANGE | ITEM_REPORT_CHANGE | ITEM_REPORT_TIME);
	check_i(&it, "cLc.t......");
	it.preserve_times = false;
	check_i(&it, "cLc.T......");
	it.preserve_times = true;
	it.no_symlink_times = true;
	check_i(&it, "cLc.T......");
	it = mkitem(&lnk, "l", ITEM_LOCAL_CHANGE | ITEM_REPORT_TIME | ITEM_REPORT_TIMEFAIL);
	check_i(&it, "cL..T......");
	it = mkitem(&lnk, "l", ITEM_REPORT_TIME);
	check_i(&it, ".L..t......");
}

static void test_itemize_unchanged_and_deleted(void **state)
{
	struct file_entry reg = mkfile(S_IFREG | 0644, 12, NULL);
	struct file_entry dir = mkfile(S_IFDIR | 0755, 4096, NULL);
	struct log_item it = mkitem(&reg, "a", 0);

	check_i(&it, ".f         ");
	it = mkitem(&dir, ".", 0);
	check_i(&it, ".d         ");
	it = mkitem(&reg, "b", ITEM_LOCAL_CHANGE | ITEM_XNAME_FOLLOWS);
	check_i(&it, "hf         ");
	/* a transfer with nothing to report keeps its dots */
	it = mkitem(&reg, "a", ITEM_TRANSFER);
	check_i(&it, ">f.........");

	it = mkitem(NULL, "old", ITEM_DELETED);
	it.deleting = true;
	it.mode = S_IFREG;
	check_i(&it, "*deleting  ");
}

/* ---- --out-format ------------------------------------------------ */

static void test_format_itemize_lines(void **state)
{
	struct file_entry reg = mkfile(S_IFREG | 0644, 12, NULL);
	struct file_entry dir = mkfile(S_IFDIR | 0755, 4096, NULL);
	struct file_entry lnk = mkfile(S_IFLNK | 0777, 1, "a");
	struct log_item it = mkitem(&reg, "a", NEW_XFER);

	check_fmt("%i %n%L", &it, ">f+++++++++ a");
	it = mkitem(&dir, "sub", NEW_LOCAL);
	check_fmt("%i %n%L", &it, "cd+++++++++ sub/");
	it = mkitem(&dir, ".", ITEM_REPORT_TIME);
	check_fmt("%i %n%L", &it, ".d..t...... ./");
	it = mkitem(&lnk, "link", NEW_LOCAL);
	check_fmt("%i %n%L", &it, "cL+++++++++ link -> a");
	it = mkitem(&reg, "a", NEW_LOCAL | ITEM_XNAME_FOLLOWS);
	it.xname = "b";
	check_fmt("%i %n%L", &it, "hf+++++++++ a => b");

	it = mkitem(NULL, "old", ITEM_DELETED);
	it.deleting = true;
	it.mode = S_IFDIR;
	check_fmt("%i %n%L", &it, "*deleting   old/");
	it.mode = S_IFLNK; /* no target shown for a deleted symlink */
	it.name = "oldl";
	check_fmt("%i %n%L", &it, "*deleting   oldl");
	check_fmt("[%o|%f|%5L|%l|%B]", &it, "[del.|oldl|         |0|---------]");
}

static void test_format_widths(void **state)
{
	struct file_entry dir = mkfile(S_IFDIR | 0755, 4096, NULL);
	struct file_entry big = mkfile(S_IFREG | 0644, 1234567, NULL);
	struct file_entry lnk = mkfile(S_IFLNK | 0777, 1, "a");
	struct log_item it = mkitem(&dir, ".", NEW_LOCAL);

	check_fmt("[%-12n|%12n|%5L|%-15i|%05n]", &it,
		  "[./          |          ./|         |cd+++++++++    |   ./]");
	check_fmt("[%l|%'l|%''l|%'8l|%05l|%-05l]", &it,
		  "[4096|4,096|4.10K|   4,096| 4096|4096 ]");
	it = mkitem(&big, "big", NEW_XFER);
	check_fmt("[%l|%'l|%''l|%'''l|%8'l|%''''l]", &it,
		  "[1234567|1,234,567|1.23M|1.18M|1,234,567|1.18M]");
	it = mkitem(&lnk, "link", NEW_LOCAL);
	check_fmt("[%L|%5L|%-5L]", &it, "[ -> a| ->     a| -> a    ]");
	it.xname = "b";
	check_fmt("[%L|%5L|%-5L]", &it, "[ => b| =>     b| => b    ]");
}

static void test_format_misc(void **state)
{
	struct file_entry reg = mkfile(S_IFREG | 04755, 55, NULL);
	struct log_item it = mkitem(&reg, "sub/c", NEW_XFER);
	char want[128];

	/* outside a daemon: %h %a %u %P stay verbatim, %m is empty */
	check_fmt("[%h|%a|%u|%P|%m|%z|%%|%%h]", &it, "[%h|%a|%u|%P||%z|%|%h]");
	it.host = "box";
	it.addr = "10.0.0.1";
	it.user = "";
	it.module = "mod";
	it.module_path = "/srv/mod";
	check_fmt("[%h|%a|%u|%P|%m]", &it, "[box|10.0.0.1||/srv/mod|mod]");

	check_fmt("[%o|%U|%G|%B]", &it, "[recv|0|DEFAULT|rwsr-xr-x]");
	assert_true(fe_set_uid(&reg, 1000));
	assert_true(fe_set_gid(&reg, 100));
	reg.mode = S_IFREG | 02644 | 01000;
	it.preserve_uid = it.preserve_gid = true;
	it.sending = true;
	check_fmt("[%o|%U|%G|%05G|%B]", &it, "[send|1000|100|00100|rw-r-Sr-T]");

	snprintf(want, sizeof want, "[%07d|%d]", (int)getpid(), (int)getpid());
	check_fmt("[%07p|%p]", &it, want);

	it.bytes_xferred = 1234;
	it.checksum_bytes = 16;
	check_fmt("[%b|%'b|%c|%5c]", &it, "[1234|1,234|16|   16]");
	it.iflags = ITEM_IS_NEW | ITEM_LOCAL_CHANGE;
	check_fmt("[%b|%c]", &it, "[0|0]");

	/* %M in local time; %t is "now" in the same layout */
	check_fmt("%M", &it, "2020/01/01-00:00:00");
	char now[64];
	log_format("%t", &it, now, sizeof now);
	assert_int_equal(strlen(now), 19);
	assert_true(now[4] == '/' && now[7] == '/' && now[10] == ' ' && now[13] == ':');

	/* a dangling escape stays as it is; output is bounded */
	check_fmt("x%", &it, "x%");
	check_fmt("x%-5", &it, "x%-5");
	char small[6];
	log_format("%n and more", &it, small, sizeof small);
	assert_string_equal(small, "sub/c");
}

static void test_format_names(void **state)
{
	struct file_entry dir = mkfile(S_IFDIR | 0755, 4096, NULL);
	struct file_entry reg = mkfile(S_IFREG | 0644, 7, NULL);
	struct log_item it = mkitem(&dir, ".", NEW_LOCAL);

	check_fmt("%n|%f", &it, "./|.");
	it.dir = "src/"; /* a sender's source dir */
	check_fmt("%n|%f", &it, "./|src/.");
	it = mkitem(&dir, "sub", NEW_LOCAL);
	it.dir = "src";
	check_fmt("%n|%f|%-9f|", &it, "sub/|src/sub|src/sub  |");
	it = mkitem(&reg, "sub/c", NEW_XFER);
	it.dir = "/tmp//src/./";
	check_fmt("%f", &it, "tmp/src/sub/c");

	/* without a name, the entry's own dirname/basename */
	reg.dirname = "d1/d2";
	reg.basename = "f";
	it = mkitem(&reg, NULL, NEW_XFER);
	check_fmt("%n", &it, "d1/d2/f");
}

static void test_format_checksum(void **state)
{
	static const uint8_t md5[16] = { 0xee, 0xfa, 0xc9, 0xd8, 0x71, 0x00, 0xcd, 0x13,
					 0x36, 0xb2, 0xe7, 0x33, 0xa5, 0x48, 0x44, 0x25 };
	static const uint8_t xx[8] = { 1, 2, 3, 4, 5, 6, 7, 0xab };
	struct file_entry reg = mkfile(S_IFREG | 0644, 12, NULL);
	struct file_entry dir = mkfile(S_IFDIR | 0755, 4096, NULL);
	struct log_item it = mkitem(&reg, "b", NEW_XFER);

	it.sum = md5;
	it.sum_len = 16;
	it.sum_type = CSUM_MD5;
	check_fmt("[%C]", &it, "[eefac9d87100cd1336b2e733a5484425]");
	it.sum = xx;
	it.sum_len = 8;
	it.sum_type = CSUM_XXH64;
	check_fmt("[%C|%-18C]", &it, "[ab07060504030201|ab07060504030201  ]");
	it.sum_type = CSUM_MD4_OLD;
	check_fmt("[%C]", &it, "[                ]");
	/* no sum (or not a file): blanks, never padded to the width */
	it = mkitem(&dir, ".", NEW_LOCAL);
	it.sum_len = 16;
	it.sum_type = CSUM_MD5;
	check_fmt("[%40C]", &it, "[                                ]");
}

/* ---- numbers ----------------------------------------------------- */

static const char *num(int64_t n, int human)
{
	static char buf[4][64];
	static int k;

	k = (k + 1) % 4;
	return fmt_num(n, human, buf[k], sizeof buf[k]);
}

static const char *dnum(double d, int human, int dec)
{
	static char buf[4][128];
	static int k;

	k = (k + 1) % 4;
	return fmt_dnum(d, human, dec, buf[k], sizeof buf[k]);
}

static void test_fmt_num(void **state)
{
	assert_string_equal(num(1234567, 0), "1234567");
	assert_string_equal(num(1234567, 1), "1,234,567");
	assert_string_equal(num(1234567, 2), "1.23M");
	assert_string_equal(num(1234567, 3), "1.18M");
	assert_string_equal(num(0, 1), "0");
	assert_string_equal(num(999, 1), "999");
	assert_string_equal(num(1000, 1), "1,000");
	assert_string_equal(num(999, 2), "999");
	assert_string_equal(num(1000, 2), "1.00K");
	assert_string_equal(num(1023, 3), "1,023");
	assert_string_equal(num(1024, 3), "1.00K");
	assert_string_equal(num(4096, 2), "4.10K");
	assert_string_equal(num(4096, 3), "4.00K");
	assert_string_equal(num(1234594, 2), "1.23M");
	assert_string_equal(num(1235249, 3), "1.18M");
	assert_string_equal(num(INT64_C(1000000000000000), 2), "1.00P");
	assert_string_equal(num(INT64_C(5000000000000), 2), "5.00T");
	assert_string_equal(num(-1234567, 1), "-1,234,567");
	assert_string_equal(num(-1234567, 2), "-1.23M");
	assert_string_equal(num(INT64_MIN, 0), "-9223372036854775808");
	assert_string_equal(num(INT64_MIN, 1), "-9,223,372,036,854,775,808");
	assert_string_equal(num(123, 0), "123");

	assert_string_equal(dnum(4936.0, 1, 2), "4,936.00");
	assert_string_equal(dnum(490.0, 1, 2), "490.00");
	assert_string_equal(dnum(2470652.0, 0, 2), "2470652.00");
	assert_string_equal(dnum(2470652.0, 2, 2), "2.47M");
	assert_string_equal(dnum(2470716.0, 3, 2), "2.36M");
	assert_string_equal(dnum(5039.16, 1, 2), "5,039.16");
	assert_string_equal(dnum(0.001, 1, 3), "0.001");
	assert_string_equal(dnum(1.0, 2, 2), "1.00");
	/* rsync keeps the rounded fraction but truncates the integer part */
	assert_string_equal(dnum(1234.996, 1, 2), "1,234.00");
	assert_string_equal(dnum(999.996, 1, 2), "1000.00");
	assert_string_equal(dnum(1000.5, 3, 2), "1,000.50");
}

/* ---- --stats and summary ----------------------------------------- */

static char *capture_stats(const struct stats *st, int protocol, int human)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);

	assert_non_null(fp);
	stats_print(fp, st, protocol, human, false);
	fclose(fp);
	return buf;
}

static char *capture_summary(const struct stats *st, double secs, int human, bool dry)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);

	assert_non_null(fp);
	summary_print(fp, st, secs, human, dry);
	fclose(fp);
	return buf;
}

/* rsync -aiH --delete --stats src/ dst/ (second run, with deletions) */
static struct stats delete_run(void)
{
	struct stats st;

	memset(&st, 0, sizeof st);
	st.num_files = 8;
	st.num_reg = 4;
	st.num_dirs = 2;
	st.num_symlinks = 1;
	st.num_specials = 1;
	st.deleted_files = 4;
	st.deleted_reg = 1;
	st.deleted_dirs = 2;
	st.deleted_symlinks = 1;
	st.xferred_files = 2;
	st.total_size = 1234599;
	st.total_transferred_size = 19;
	st.literal_data = 19;
	st.flist_buildtime_ms = 1;
	st.total_written = 304;
	st.total_read = 112;
	return st;
}

static void test_stats_block(void **state)
{
	struct stats st = delete_run();
	char *s = capture_stats(&st, 32, 1);

	assert_string_equal(s, "\n"
		"Number of files: 8 (reg: 4, dir: 2, link: 1, special: 1)\n"
		"Number of created files: 0\n"
		"Number of deleted files: 4 (reg: 1, dir: 2, link: 1)\n"
		"Number of regular files transferred: 2\n"
		"Total file size: 1,234,599 bytes\n"
		"Total transferred file size: 19 bytes\n"
		"Literal data: 19 bytes\n"
		"Matched data: 0 bytes\n"
		"File list size: 0\n"
		"File list generation time: 0.001 seconds\n"
		"File list transfer time: 0.000 seconds\n"
		"Total bytes sent: 304\n"
		"Total bytes received: 112\n");
	free(s);

	s = capture_summary(&st, 0, 1, false);
	assert_string_equal(s, "\n"
		"sent 304 bytes  received 112 bytes  832.00 bytes/sec\n"
		"total size is 1,234,599  speedup is 2,967.79\n");
	free(s);
}

/* rsync -a --stats with -h, -hh, --no-h, --protocol=28/30 and -n */
static void test_stats_variants(void **state)
{
	struct stats st;
	char *s;

	memset(&st, 0, sizeof st);
	st.num_files = st.created_files = 8;
	st.num_dirs = st.created_dirs = 2;
	st.num_symlinks = st.created_symlinks = 1;
	st.num_specials = st.created_specials = 1;
	st.xferred_files = 4;
	st.total_size = 1234594;
	st.total_transferred_size = st.literal_data = 1234593;
	st.flist_size = 163;
	st.total_written = 1235249;
	st.total_read = 109;

	s = capture_stats(&st, 32, 2);
	assert_string_equal(s, "\n"
		"Number of files: 8 (reg: 4, dir: 2, link: 1, special: 1)\n"
		"Number of created files: 8 (reg: 4, dir: 2, link: 1, special: 1)\n"
		"Number of deleted files: 0\n"
		"Number of regular files transferred: 4\n"
		"Total file size: 1.23M bytes\n"
		"Total transferred file size: 1.23M bytes\n"
		"Literal data: 1.23M bytes\n"
		"Matched data: 0 bytes\n"
		"File list size: 163\n"
		"Total bytes sent: 1.24M\n"
		"Total bytes received: 109\n");
	free(s);

	s = capture_summary(&st, 0, 2, false);
	assert_string_equal(s, "\nsent 1.24M bytes  received 109 bytes  2.47M bytes/sec\n"
			       "total size is 1.23M  speedup is 1.00\n");
	free(s);
	s = capture_summary(&st, 0, 3, false);
	assert_string_equal(s, "\nsent 1.18M bytes  received 109 bytes  2.36M bytes/sec\n"
			       "total size is 1.18M  speedup is 1.00\n");
	free(s);
	s = capture_summary(&st, 0, 0, false);
	assert_string_equal(s, "\nsent 1235249 bytes  received 109 bytes  2470716.00 bytes/sec\n"
			       "total size is 1234594  speedup is 1.00\n");
	free(s);
	s = capture_summary(&st, -1, 1, false);
	assert_non_null(strstr(s, "  UNKNOWN bytes/sec\n"));
	free(s);

	st.flist_buildtime_ms = 1500;
	st.flist_xfertime_ms = 2;
	s = capture_stats(&st, 28, 0);
	assert_string_equal(s, "\n"
		"Number of files: 8 (reg: 4, dir: 2, link: 1, special: 1)\n"
		"Number of regular files transferred: 4\n"
		"Total file size: 1234594 bytes\n"
		"Total transferred file size: 1234593 bytes\n"
		"Literal data: 1234593 bytes\n"
		"Matched data: 0 bytes\n"
		"File list size: 163\n"
		"File list generation time: 1.500 seconds\n"
		"File list transfer time: 0.002 seconds\n"
		"Total bytes sent: 1235249\n"
		"Total bytes received: 109\n");
	free(s);
	s = capture_stats(&st, 30, 1);
	assert_non_null(strstr(s, "Number of created files: 8 (reg: 4"));
	assert_null(strstr(s, "deleted"));
	free(s);

	/* rsync -a --stats -n */
	st.total_written = 204;
	st.total_read = 41;
	s = capture_summary(&st, 0, 1, true);
	assert_string_equal(s, "\nsent 204 bytes  received 41 bytes  490.00 bytes/sec\n"
			       "total size is 1,234,594  speedup is 5,039.16 (DRY RUN)\n");
	free(s);
	s = capture_summary(&st, 2, 1, false);
	assert_string_equal(s, "\nsent 204 bytes  received 41 bytes  98.00 bytes/sec\n"
			       "total size is 1,234,594  speedup is 5,039.16\n");
	free(s);
}

static void test_stats_counts(void **state)
{
	struct stats st;
	char *s;

	memset(&st, 0, sizeof st);
	st.num_files = 1234;
	st.num_dirs = 1000;
	st.num_devices = 3;
	st.total_written = 1;
	s = capture_stats(&st, 31, 3);
	/* counts keep separators even under -hh; "reg" is what is left */
	assert_non_null(strstr(s, "\nNumber of files: 1,234 (reg: 231, dir: 1,000, dev: 3)\n"));
	assert_non_null(strstr(s, "\nNumber of created files: 0\nNumber of deleted files: 0\n"));
	assert_null(strstr(s, "File list generation time"));
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_itemize_new),
		cmocka_unit_test(test_itemize_changes),
		cmocka_unit_test(test_itemize_unchanged_and_deleted),
		cmocka_unit_test(test_format_itemize_lines),
		cmocka_unit_test(test_format_widths),
		cmocka_unit_test(test_format_misc),
		cmocka_unit_test(test_format_names),
		cmocka_unit_test(test_format_checksum),
		cmocka_unit_test(test_fmt_num),
		cmocka_unit_test(test_stats_block),
		cmocka_unit_test(test_stats_variants),
		cmocka_unit_test(test_stats_counts),
	};

	setenv("TZ", "UTC", 1);
	tzset();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
