/*
 * The --json string writer (proto/base/json.h): valid UTF-8 passes through,
 * quotes, backslashes and control bytes are escaped, anything else becomes
 * U+FFFD with the raw bytes in a *_b64 field; rsync's error symbols; the
 * end event's totals.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proto/base/json.h"

/* What fn wrote for (str, len), and whether json_write_string said valid. */
static char *written(const char *str, size_t len, bool *valid)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *fp = open_memstream(&buf, &size);

	assert_non_null(fp);
	*valid = json_write_string(fp, str, len);
	fclose(fp);
	return buf;
}

static void check(const char *in, size_t len, const char *want, bool want_valid)
{
	bool valid;
	char *got = written(in, len, &valid);

	assert_string_equal(got, want);
	assert_int_equal(valid, want_valid);
	free(got);
}

static void test_utf8_passes(void **state)
{
	(void)state;
	check("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14, "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"",
	      true);
}

static void test_escapes(void **state)
{
	(void)state;
	check("a\"b\\c\nd\x7f", 8, "\"a\\\"b\\\\c\\u000ad\\u007f\"", true);
	/* a NUL inside the given length is a byte like any other */
	check("a\0b", 3, "\"a\\u0000b\"", true);
}

static void test_invalid_replaced(void **state)
{
	(void)state;
	check("bad\xffname", 8, "\"bad\\ufffdname\"", false);
	/* overlong, surrogate, above U+10FFFF, cut short */
	check("\xc0\xaf", 2, "\"\\ufffd\\ufffd\"", false);
	check("\xed\xa0\x80", 3, "\"\\ufffd\\ufffd\\ufffd\"", false);
	check("\xf4\x90\x80\x80", 4, "\"\\ufffd\\ufffd\\ufffd\\ufffd\"", false);
	check("x\xe2\x82", 3, "\"x\\ufffd\\ufffd\"", false);
}

static void test_name_b64(void **state)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *fp = open_memstream(&buf, &size);

	(void)state;
	json_write_name(fp, "name", "bad\xffname", 8);
	fputc('|', fp);
	json_write_name(fp, "name", "ok", 2);
	fclose(fp);
	assert_string_equal(buf, "\"name\":\"bad\\ufffdname\",\"name_b64\":\"YmFk/25hbWU\"|\"name\":\"ok\"");
	free(buf);
}

static void test_rerr_symbols(void **state)
{
	(void)state;
	assert_string_equal(json_rerr_symbol(0), "RERR_OK");
	assert_string_equal(json_rerr_symbol(1), "RERR_SYNTAX");
	assert_string_equal(json_rerr_symbol(10), "RERR_SOCKETIO");
	assert_string_equal(json_rerr_symbol(20), "RERR_SIGNAL");
	assert_string_equal(json_rerr_symbol(23), "RERR_PARTIAL");
	assert_string_equal(json_rerr_symbol(24), "RERR_VANISHED");
	assert_null(json_rerr_symbol(99));
}

static void test_msg_parse(void **state)
{
	struct json_msg_fields f;

	(void)state;
	json_msg_parse("ferry: [sender] link_stat \"/tmp/no \"such\" failed: No such file or directory (2)",
		       &f);
	assert_int_equal(f.role_len, 6);
	assert_memory_equal(f.role, "sender", 6);
	assert_int_equal(f.path_len, 13);
	assert_memory_equal(f.path, "/tmp/no \"such", 13);
	assert_int_equal(f.errnum, 2);
	json_msg_parse("file has vanished: \"/a/b\"", &f);
	assert_null(f.role);
	assert_int_equal(f.path_len, 4);
	assert_int_equal(f.errnum, -1);
	json_msg_parse("ferry: connection closed (12345678)", &f);
	assert_null(f.role);
	assert_null(f.path);
	assert_int_equal(f.errnum, -1);
}

static void test_totals(void **state)
{
	struct json_totals t = {.files = 3, .files_transferred = 2, .total_size = 1LL << 40,
				.bytes_received = 7};
	char *buf = NULL;
	size_t size = 0;
	FILE *fp = open_memstream(&buf, &size);

	(void)state;
	json_write_totals(fp, &t);
	fclose(fp);
	assert_string_equal(buf, "\"files\":3,\"files_transferred\":2,\"files_created\":0,"
				 "\"files_deleted\":0,\"total_size\":1099511627776,"
				 "\"transferred_size\":0,\"literal_bytes\":0,\"matched_bytes\":0,"
				 "\"bytes_sent\":0,\"bytes_received\":7");
	free(buf);
}

/* The forced exit's end line has every key the ordinary end event has,
 * the totals among them (null). */
static void test_signal_end_keys(void **state)
{
	struct json_totals t = {0};
	char *buf = NULL;
	size_t size = 0, n;
	FILE *fp = open_memstream(&buf, &size);
	const char *line = json_signal_end_line(&n);

	(void)state;
	json_write_totals(fp, &t);
	fclose(fp);
	assert_int_equal(line[n - 1], '\n');
	assert_non_null(strstr(line, "\"elapsed_ms\":null"));
	/* each "key": of the totals is in the line, as "key":null */
	for (char *k = strtok(buf, ","); k; k = strtok(NULL, ",")) {
		char want[64];
		snprintf(want, sizeof want, "%.*snull", (int)(strchr(k, ':') - k + 1), k);
		assert_non_null(strstr(line, want));
	}
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8_passes),     cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_invalid_replaced), cmocka_unit_test(test_name_b64),
		cmocka_unit_test(test_rerr_symbols),     cmocka_unit_test(test_msg_parse),
		cmocka_unit_test(test_totals),           cmocka_unit_test(test_signal_end_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
