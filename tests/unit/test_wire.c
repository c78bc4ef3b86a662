/*
 * The integer encodings of the wire layer, against byte vectors observed
 * on real rsync 3.5.0 sessions (docs/protocol.md 2.2-2.5).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "proto/base/wire.h"

static void check_varint(int32_t v, const uint8_t *want, size_t n)
{
	uint8_t buf[9];
	int32_t back;

	assert_int_equal(varint_encode(buf, v), n);
	assert_memory_equal(buf, want, n);
	assert_int_equal(varint_decode(buf, n, &back), (int)n);
	assert_int_equal(back, v);
	/* one byte short must ask for more */
	if (n > 1)
		assert_int_equal(varint_decode(buf, n - 1, &back), 0);
}

static void test_varint_vectors(void **state)
{
	(void)state;
	check_varint(0, (const uint8_t[]){0x00}, 1);
	check_varint(0x7F, (const uint8_t[]){0x7F}, 1);
	check_varint(0x80, (const uint8_t[]){0x80, 0x80}, 2);
	check_varint(0x1FF, (const uint8_t[]){0x81, 0xFF}, 2);
	check_varint(0x2C01, (const uint8_t[]){0xAC, 0x01}, 2); /* observed flist flags */
	check_varint(0x3FFF, (const uint8_t[]){0xBF, 0xFF}, 2);
	check_varint(0x4000, (const uint8_t[]){0xC0, 0x00, 0x40}, 3);
	check_varint(-1, (const uint8_t[]){0xF0, 0xFF, 0xFF, 0xFF, 0xFF}, 5);
}

static void test_varint_rejects_long_prefix(void **state)
{
	int32_t v;
	(void)state;
	assert_int_equal(varint_decode((const uint8_t[]){0xF8, 0, 0, 0, 0, 0}, 6, &v), -1);
}

static void check_varlong(int64_t v, int min, const uint8_t *want, size_t n)
{
	uint8_t buf[9];
	int64_t back;

	assert_int_equal(varlong_encode(buf, v, min), n);
	assert_memory_equal(buf, want, n);
	assert_int_equal(varlong_decode(buf, n, min, &back), (int)n);
	assert_true(back == v);
}

static void test_varlong_vectors(void **state)
{
	(void)state;
	check_varlong(4096, 3, (const uint8_t[]){0x00, 0x00, 0x10}, 3);
	check_varlong(200000, 3, (const uint8_t[]){0x03, 0x40, 0x0D}, 3);
	check_varlong(0x6B0CD135, 4, (const uint8_t[]){0x6B, 0x35, 0xD1, 0x0C}, 4);
	check_varlong(0x5E0D5DA5, 4, (const uint8_t[]){0x5E, 0xA5, 0x5D, 0x0D}, 4);
	/* round trips across the byte-count boundaries */
	for (int shift = 0; shift < 63; shift++) {
		uint8_t buf[9];
		int64_t v = (int64_t)1 << shift, back;
		size_t n = varlong_encode(buf, v, 3);
		assert_int_equal(varlong_decode(buf, n, 3, &back), (int)n);
		assert_true(back == v);
	}
}

static void test_ndx_sequence(void **state)
{
	/* observed: first index 0 -> 01; then 2 -> 02; 3 -> 01; NDX_DONE -> 00;
	 * index 1 after 12 -> FE 80 01 00 00; first negative -2 -> FF 01;
	 * then -3 -> FF 01 */
	int32_t pos = -1, neg = 1, rpos = -1, rneg = 1, back;
	const struct {
		int32_t ndx;
		uint8_t bytes[6];
		size_t n;
	} seq[] = {
		{0, {0x01}, 1},
		{2, {0x02}, 1},
		{3, {0x01}, 1},
		{NDX_DONE, {0x00}, 1},
		{12, {0x09}, 1},
		{1, {0xFE, 0x80, 0x01, 0x00, 0x00}, 5},
		{NDX_FLIST_EOF, {0xFF, 0x01}, 2},
		{NDX_DEL_STATS, {0xFF, 0x01}, 2},
		{1000, {0xFE, 0x03, 0xE7}, 3},
	};
	(void)state;
	for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++) {
		uint8_t buf[6];
		size_t n = ndx_encode(buf, seq[i].ndx, &pos, &neg);
		assert_int_equal(n, seq[i].n);
		assert_memory_equal(buf, seq[i].bytes, n);
		assert_int_equal(ndx_decode(buf, n, &back, &rpos, &rneg), (int)n);
		assert_int_equal(back, seq[i].ndx);
	}
}

/* The multiplexed reader must reassemble data across frames and hand
 * messages to the callback. */
static int msgs_seen;
static bool count_msg(void *ctx, struct wire_in *in, int code, const uint8_t *p, size_t len)
{
	(void)ctx;
	(void)in;
	assert_int_equal(code, MSG_INFO);
	assert_int_equal(len, 3);
	assert_memory_equal(p, "hi\n", 3);
	msgs_seen++;
	return true;
}

static void test_mux_reassembly(void **state)
{
	int p[2];
	struct wire_error err;
	struct wire_in in;
	struct wire_out out;
	uint8_t got[8];
	(void)state;

	assert_int_equal(pipe(p), 0);
	wire_error_init(&err);
	wire_out_init(&out, p[1], &err);
	out.mux = true;
	assert_true(wire_write(&out, "abc", 3));
	assert_true(wire_send_msg(&out, MSG_INFO, "hi\n", 3));
	assert_true(wire_write(&out, "defgh", 5));
	assert_true(wire_flush(&out));
	wire_in_init(&in, p[0], &err);
	in.mux = true;
	in.on_msg = count_msg;
	assert_true(wire_read(&in, got, 8));
	assert_memory_equal(got, "abcdefgh", 8);
	assert_int_equal(msgs_seen, 1);
	wire_in_free(&in);
	wire_out_free(&out);
	close(p[0]);
	close(p[1]);
}

/* A view of bytes inside one data frame points into the input buffer; a
 * view across a frame header (here split by a message) is copied whole
 * into the scratch buffer. */
static void test_read_view(void **state)
{
	int p[2];
	struct wire_error err;
	struct wire_in in;
	struct wire_out out;
	uint8_t scratch[8], next;
	(void)state;

	assert_int_equal(pipe(p), 0);
	wire_error_init(&err);
	wire_out_init(&out, p[1], &err);
	out.mux = true;
	assert_true(wire_write(&out, "abcd", 4));
	assert_true(wire_send_msg(&out, MSG_INFO, "hi\n", 3));
	assert_true(wire_write(&out, "efgh", 4));
	assert_true(wire_flush(&out));
	wire_in_init(&in, p[0], &err);
	in.mux = true;
	in.on_msg = count_msg;
	msgs_seen = 0;
	const uint8_t *v = wire_read_view(&in, scratch, 2);
	assert_non_null(v);
	assert_ptr_not_equal(v, scratch);
	assert_memory_equal(v, "ab", 2);
	assert_true(wire_peek_buffered(&in, &next));
	assert_int_equal(next, 'c');
	v = wire_read_view(&in, scratch, 4);
	assert_ptr_equal(v, scratch);
	assert_memory_equal(v, "cdef", 4);
	assert_int_equal(msgs_seen, 1);
	size_t got = 0;
	v = wire_read_some(&in, 8, &got);
	assert_non_null(v);
	assert_int_equal(got, 2); /* what is left of the frame, no more */
	assert_memory_equal(v, "gh", 2);
	assert_false(wire_peek_buffered(&in, &next));
	wire_in_free(&in);
	wire_out_free(&out);
	close(p[0]);
	close(p[1]);
}

/* The time the link held the writer up (the adaptive compression rule's
 * measure): with --bwlimit, what the rate allots to the bytes; and the
 * bytes a pipe still holds. */
static void test_wait_and_queue(void **state)
{
	int p[2];
	struct wire_error err;
	struct wire_out out;
	static uint8_t data[32768];
	(void)state;

	assert_int_equal(pipe(p), 0);
	wire_error_init(&err);
	wire_out_init(&out, p[1], &err);
	assert_true(wire_write(&out, data, 1000) && wire_flush(&out));
	assert_int_equal(wire_out_queued(&out), 1000);
	assert_true(wire_out_wait_ns(&out) < 100000000u);
	out.bwlimit = 1024; /* KiB/s: every KiB is 0.977 ms of link time */
	uint64_t before = wire_out_wait_ns(&out);
	assert_true(wire_write(&out, data, sizeof data));
	/* counted as soon as it is produced, before any flush */
	assert_true(wire_out_wait_ns(&out) - before >= 31000000u);
	assert_true(wire_flush(&out));
	assert_int_equal(wire_out_queued(&out), 1000 + sizeof data);
	wire_out_free(&out);
	close(p[0]);
	close(p[1]);
}

static void test_oversized_message_fails(void **state)
{
	int p[2];
	struct wire_error err;
	struct wire_in in;
	uint8_t hdr[4] = {0xFF, 0xFF, 0x00, (uint8_t)(MPLEX_BASE + MSG_INFO)};
	uint8_t b;
	(void)state;

	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], hdr, 4), 4);
	wire_error_init(&err);
	wire_in_init(&in, p[0], &err);
	in.mux = true;
	in.on_msg = count_msg;
	assert_false(wire_read(&in, &b, 1));
	assert_int_equal(wire_error_code(&err), RERR_STREAMIO);
	wire_in_free(&in);
	close(p[0]);
	close(p[1]);
}

/* rsync's keep-alive: an empty MSG_DATA frame, only on a multiplexed
 * output with a --timeout that has been silent for half of it. */
static void test_keepalive_frame(void **state)
{
	int p[2];
	struct wire_error err;
	struct wire_out out;
	uint8_t got[8];
	const uint8_t want[4] = {0, 0, 0, MPLEX_BASE + MSG_DATA};
	(void)state;

	assert_int_equal(pipe(p), 0);
	wire_error_init(&err);
	wire_out_init(&out, p[1], &err);
	out.timeout_ms = 60000;
	out.last_write_ms -= 30000; /* silent for half the timeout */
	assert_true(wire_keepalive(&out)); /* not multiplexed: nothing */
	assert_int_equal(wire_out_queued(&out), 0);
	out.mux = true;
	assert_true(wire_keepalive(&out));
	assert_int_equal(read(p[0], got, sizeof got), 4);
	assert_memory_equal(got, want, 4);
	assert_true(wire_keepalive(&out)); /* just written: not again */
	assert_int_equal(wire_out_queued(&out), 0);
	out.timeout_ms = 0; /* no --timeout, no keep-alives */
	out.last_write_ms -= 30000;
	assert_true(wire_keepalive(&out));
	assert_int_equal(wire_out_queued(&out), 0);
	wire_out_free(&out);
	close(p[0]);
	close(p[1]);
}

/* A read that waits sends keep-alives on its paired output meanwhile,
 * and still fails with code 30 once the peer stayed silent too long. */
static void test_wait_keeps_alive_then_times_out(void **state)
{
	int in_p[2], out_p[2];
	struct wire_error err;
	struct wire_in in;
	struct wire_out out;
	uint8_t b, got[64];
	(void)state;

	assert_int_equal(pipe(in_p), 0);
	assert_int_equal(pipe(out_p), 0);
	wire_error_init(&err);
	wire_in_init(&in, in_p[0], &err);
	wire_out_init(&out, out_p[1], &err);
	in.mux = out.mux = true;
	in.keepalive = &out;
	in.timeout_ms = out.timeout_ms = 600;
	assert_false(wire_read(&in, &b, 1));
	assert_int_equal(wire_error_code(&err), RERR_TIMEOUT);
	ssize_t n = read(out_p[0], got, sizeof got);
	assert_true(n >= 4 && n % 4 == 0);
	for (ssize_t i = 0; i < n; i++)
		assert_int_equal(got[i], i % 4 == 3 ? MPLEX_BASE + MSG_DATA : 0);
	wire_in_free(&in);
	wire_out_free(&out);
	close(in_p[0]);
	close(in_p[1]);
	close(out_p[0]);
	close(out_p[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_varint_vectors),
		cmocka_unit_test(test_varint_rejects_long_prefix),
		cmocka_unit_test(test_varlong_vectors),
		cmocka_unit_test(test_ndx_sequence),
		cmocka_unit_test(test_mux_reassembly),
		cmocka_unit_test(test_read_view),
		cmocka_unit_test(test_wait_and_queue),
		cmocka_unit_test(test_oversized_message_fails),
		cmocka_unit_test(test_keepalive_frame),
		cmocka_unit_test(test_wait_keeps_alive_then_times_out),
	};
	return cmocka_run_group_tests_name("wire", tests, NULL, NULL);
}
