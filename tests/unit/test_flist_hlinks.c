/*
 * proto/flist/flist_recv.c: hard links before protocol 30, where each entry carries
 * its (dev, ino) and the receiver groups equal pairs. The peer chooses
 * both values; the table's hash once multiplied them as signed 64-bit
 * integers, which overflowed (undefined behaviour, found by a fuzzer):
 * build/asan's -fno-sanitize-recover=undefined makes that fail here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "proto/core/flist.h"
#include "proto/base/opts.h"
#include "proto/core/session.h"

struct bytes {
	uint8_t b[60000];   /* under a pipe's 64 KiB: written whole before reading */
	size_t n;
};

static void put_u8(struct bytes *w, uint8_t v)
{
	assert_true(w->n < sizeof w->b);
	w->b[w->n++] = v;
}

static void put_i32(struct bytes *w, int32_t v)
{
	for (int i = 0; i < 4; i++)
		put_u8(w, (uint8_t)((uint32_t)v >> (8 * i)));
}

/* rsync io.c: write_longint */
static void put_longint(struct bytes *w, int64_t v)
{
	if (v >= 0 && v <= 0x7fffffff) {
		put_i32(w, (int32_t)v);
		return;
	}
	put_i32(w, -1);
	put_i32(w, (int32_t)(uint32_t)(uint64_t)v);
	put_i32(w, (int32_t)(uint32_t)((uint64_t)v >> 32));
}

/* A protocol-29 regular file "name" marked hard-linked, with its dev and
 * inode (flist.c: send_file_entry before protocol 30). */
static void put_entry(struct bytes *w, const char *name, int64_t dev, int64_t ino)
{
	uint32_t xflags = XMIT_EXTENDED_FLAGS | XMIT_HLINKED;

	put_u8(w, (uint8_t)xflags);
	put_u8(w, (uint8_t)(xflags >> 8));
	put_u8(w, (uint8_t)strlen(name));
	for (const char *p = name; *p; p++)
		put_u8(w, (uint8_t)*p);
	put_longint(w, 5);              /* size */
	put_i32(w, 1700000000);         /* mtime */
	put_i32(w, S_IFREG | 0644);     /* mode */
	put_longint(w, dev);
	put_longint(w, ino);
}

/* Decode the entries in w at protocol 29 with -H into fl. */
static bool recv_list(struct bytes *w, struct session *s, struct ferry_opts *o, struct flist *fl)
{
	int p[2];

	put_u8(w, 0);                   /* end of the list */
	put_i32(w, 0);                  /* io_error */
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], w->b, w->n), (ssize_t)w->n);
	close(p[1]);
	memset(o, 0, sizeof *o);
	o->hard_links = true;
	session_init(s, o, p[0], -1);
	s->protocol = 29;
	s->in.protocol = 29;
	flist_init(fl);
	bool ok = flist_recv(s, fl);
	close(p[0]);
	return ok;
}

static const struct file_entry *named(const struct flist *fl, const char *name)
{
	for (size_t i = 0; i < fl->count; i++)
		if (strcmp(fl->files[i].basename, name) == 0)
			return &fl->files[i];
	fail_msg("no entry %s", name);
	return NULL;
}

/* Inodes and devices near the ends of int64 group as equal pairs do,
 * with no overflow on the way. */
static void test_extreme_dev_ino(void **state)
{
	struct bytes w = {.n = 0};
	struct ferry_opts o;
	struct session s;
	struct flist fl;

	(void)state;
	put_entry(&w, "a", INT64_MAX, INT64_MAX);
	put_entry(&w, "b", INT64_MIN, INT64_MAX / 16);
	put_entry(&w, "c", INT64_MAX, INT64_MAX);
	put_entry(&w, "d", INT64_MIN, INT64_MAX / 16);
	put_entry(&w, "e", INT64_MAX, INT64_MIN);
	assert_true(recv_list(&w, &s, &o, &fl));
	assert_int_equal(fl.count, 5);
	const struct file_entry *a = named(&fl, "a"), *b = named(&fl, "b"), *c = named(&fl, "c"),
				*d = named(&fl, "d"), *e = named(&fl, "e");
	assert_int_equal(fe_hlink_group(a), fe_hlink_group(c));
	assert_int_equal(fe_hlink_group(b), fe_hlink_group(d));
	assert_int_not_equal(fe_hlink_group(a), fe_hlink_group(b));
	assert_int_not_equal(fe_hlink_group(e), fe_hlink_group(a));
	assert_int_not_equal(fe_hlink_group(e), fe_hlink_group(b));
	flist_free(&fl);
	session_free(&s);
}

/* More pairs than the first table holds: it grows and rehashes, and
 * every pair still finds its group. */
static void test_table_grows(void **state)
{
	enum { PAIRS = 600 };  /* the first table takes 512 */
	static struct bytes w;
	struct ferry_opts o;
	struct session s;
	struct flist fl;
	char name[16];

	(void)state;
	w.n = 0;
	for (int i = 0; i < 2 * PAIRS; i++) {
		snprintf(name, sizeof name, "f%04d", i);
		put_entry(&w, name, 7, (int64_t)(i % PAIRS) << 40);
	}
	assert_true(recv_list(&w, &s, &o, &fl));
	assert_int_equal(fl.count, 2 * PAIRS);
	for (int i = 0; i < PAIRS; i++) {
		char n2[16];
		snprintf(name, sizeof name, "f%04d", i);
		snprintf(n2, sizeof n2, "f%04d", i + PAIRS);
		assert_int_equal(fe_hlink_group(named(&fl, name)), fe_hlink_group(named(&fl, n2)));
	}
	assert_int_not_equal(fe_hlink_group(named(&fl, "f0000")), fe_hlink_group(named(&fl, "f0001")));
	flist_free(&fl);
	session_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_extreme_dev_ino),
		cmocka_unit_test(test_table_grows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
