/*
 * Filter rules: the filter list on the wire (filter_send, filter_recv),
 * per protocol and side.
 */
#include "tests/unit/filter_util.h"

/* ----------------------------------------------------------------- wire */

/* Run filter_send on a session whose output is a pipe; return the bytes. */
static size_t send_bytes(struct ferry_opts *o, int protocol, const struct filter_list *fl,
			 bool sender, uint8_t *buf, size_t cap, bool *ok, char *msg)
{
	struct session s;
	int p[2];
	ssize_t n;
	size_t got = 0;

	assert_int_equal(pipe(p), 0);
	session_init(&s, o, -1, p[1]);
	s.protocol = protocol;
	*ok = filter_send(&s, fl, sender) && wire_flush(&s.out);
	if (msg)
		snprintf(msg, 512, "%s", s.err.msg);
	close(p[1]);
	while ((n = read(p[0], buf + got, cap - got)) > 0)
		got += (size_t)n;
	close(p[0]);
	session_free(&s);
	return got;
}

static size_t put_rule(uint8_t *buf, size_t n, const char *text)
{
	uint32_t len = (uint32_t)strlen(text);

	buf[n] = (uint8_t)len;
	buf[n + 1] = (uint8_t)(len >> 8);
	buf[n + 2] = (uint8_t)(len >> 16);
	buf[n + 3] = (uint8_t)(len >> 24);
	memcpy(buf + n + 4, text, len);
	return n + 4 + len;
}

/* The rules of a list as they would go on the wire: "a|b|..." (or "-"
 * for nothing written). */
static const char *sent(struct ferry_opts *o, int protocol, const struct filter_list *fl,
			bool sender)
{
	static char out[4096];
	uint8_t buf[8192];
	bool ok;
	size_t n = send_bytes(o, protocol, fl, sender, buf, sizeof buf, &ok, NULL), i = 0;

	assert_true(ok);
	if (!n)
		return "-";
	out[0] = '\0';
	while (i + 4 <= n) {
		uint32_t len = buf[i] | buf[i + 1] << 8 | buf[i + 2] << 16 | (uint32_t)buf[i + 3] << 24;
		i += 4;
		if (!len)
			break;
		if (*out)
			strcat(out, "|");
		strncat(out, (const char *)buf + i, len);
		i += len;
	}
	assert_int_equal(i, n);                           /* the terminator was last */
	return out;
}

static void test_wire_doc_example(void **state)
{
	static const uint8_t expect[] =
		"\x07\x00\x00\x00" "- *.bin"
		"\x06\x00\x00\x00" "+ sub/"
		"\x06\x00\x00\x00" "- /foo"
		"\x09\x00\x00\x00" ":- .rules"
		"\x00\x00\x00\x00";
	struct ferry_opts o;
	struct filter_list fl;
	uint8_t buf[256];
	bool ok;
	size_t n;

	(void)state;
	memset(&o, 0, sizeof o);
	build(&fl, "- *.bin", "+ sub/", "- /foo", ":- .rules", NULL);
	n = send_bytes(&o, 31, &fl, false, buf, sizeof buf, &ok, NULL);
	assert_true(ok);
	assert_int_equal(n, sizeof expect - 1);
	assert_memory_equal(buf, expect, sizeof expect - 1);
	/* an empty list is just the terminator */
	filter_list_free(&fl);
	filter_list_init(&fl);
	n = send_bytes(&o, 31, &fl, false, buf, sizeof buf, &ok, NULL);
	assert_int_equal(n, 4);
	assert_memory_equal(buf, "\0\0\0\0", 4);
	n = send_bytes(&o, 31, NULL, false, buf, sizeof buf, &ok, NULL);
	assert_int_equal(n, 4);
	filter_list_free(&fl);
}

static void test_wire_sides(void **state)
{
	struct ferry_opts o;
	struct filter_list fl;

	(void)state;
	memset(&o, 0, sizeof o);
	build(&fl, "H hid", "P prot", "S shown", "R risked", "-sr both", "- plain", "-p per",
	      "-x user.x", ":e .r", NULL);
	/* pulling: the sender gets its rules, protect/risk stay here */
	assert_string_equal(sent(&o, 31, &fl, false),
			    "-s hid|+s shown|-sr both|- plain|-p per|-x user.x|- .r|: .r");
	/* pushing without --delete: nothing at all, not even the terminator */
	assert_string_equal(sent(&o, 31, &fl, true), "-");
	/* pushing with --delete: the receiver's rules */
	o.delete_mode = DELETE_DEFAULT;
	assert_string_equal(sent(&o, 31, &fl, true),
			    "-r prot|+r risked|-sr both|- plain|-p per|-x user.x|- .r|: .r");
	filter_list_free(&fl);

	/* --delete-excluded keeps plain rules on a pushing sender's side */
	o.delete_excluded = true;
	filter_list_init(&fl);
	assert_int_equal(filter_parse_rule(&fl, "- *.o", FILTER_PARSE_DELETE_EXCLUDED, NULL, 0), 0);
	assert_int_equal(filter_parse_rule(&fl, "P keep", FILTER_PARSE_DELETE_EXCLUDED, NULL, 0), 0);
	assert_int_equal(filter_parse_rule(&fl, ":- .ex", FILTER_PARSE_DELETE_EXCLUDED, NULL, 0), 0);
	assert_int_equal(filter_parse_rule(&fl, ": .mixed", FILTER_PARSE_DELETE_EXCLUDED, NULL, 0), 0);
	assert_string_equal(sent(&o, 31, &fl, true), "-r keep|: .mixed");
	assert_string_equal(sent(&o, 31, &fl, false), "-s *.o|:- .ex|: .mixed");
	/* protocol < 29 with --delete-excluded: the receiver wants no list,
	 * but the rules are still checked (a protect rule cannot be said) */
	uint8_t buf[256];
	bool ok;
	send_bytes(&o, 28, &fl, true, buf, sizeof buf, &ok, NULL);
	assert_false(ok);
	filter_list_free(&fl);
	filter_list_init(&fl);
	assert_int_equal(filter_parse_rule(&fl, "- *.o", FILTER_PARSE_DELETE_EXCLUDED, NULL, 0), 0);
	assert_string_equal(sent(&o, 28, &fl, true), "-");
	filter_list_free(&fl);
}

static void test_wire_old_protocols(void **state)
{
	struct ferry_opts o;
	struct filter_list fl;
	uint8_t buf[256];
	char msg[512];
	bool ok;

	(void)state;
	memset(&o, 0, sizeof o);
	/* protocol < 29: bare patterns, "- " only where needed */
	build(&fl, "- foo", "+ bar", "- - dash", "- + plus", "- -x", "H hid", NULL);
	assert_string_equal(sent(&o, 28, &fl, false), "foo|+ bar|- - dash|- + plus|-x|hid");
	filter_list_free(&fl);

	build(&fl, ": .rules", NULL);
	send_bytes(&o, 28, &fl, false, buf, sizeof buf, &ok, msg);
	assert_false(ok);
	assert_non_null(strstr(msg, "filter rules are too modern for remote rsync"));
	filter_list_free(&fl);

	build(&fl, "-/ /abs", NULL);
	send_bytes(&o, 28, &fl, false, buf, sizeof buf, &ok, msg);
	assert_false(ok);
	filter_list_free(&fl);

	/* perishable needs protocol 30 when we send; a receiver just drops it */
	build(&fl, "-p per", NULL);
	assert_string_equal(sent(&o, 30, &fl, false), "-p per");
	assert_string_equal(sent(&o, 29, &fl, false), "- per");
	o.delete_mode = DELETE_DEFAULT;
	send_bytes(&o, 29, &fl, true, buf, sizeof buf, &ok, msg);
	assert_false(ok);
	filter_list_free(&fl);
}

static void test_wire_cvs(void **state)
{
	struct ferry_opts o;
	struct filter_list fl;
	const char *s;

	(void)state;
	memset(&o, 0, sizeof o);
	unsetenv("CVSIGNORE");
	setenv("HOME", "/nonexistent-ferry-home", 1);
	build(&fl, "-C", ":C", NULL);
	/* a new sender gets "-C" itself */
	assert_string_equal(sent(&o, 31, &fl, false), "-C |:C .cvsignore");
	/* a receiver, or an old peer, gets the patterns */
	o.delete_mode = DELETE_DEFAULT;
	s = sent(&o, 31, &fl, true);
	assert_true(strncmp(s, "-p RCS|-p SCCS|", 15) == 0);
	assert_non_null(strstr(s, "|-p .bzr/|:C .cvsignore"));
	filter_list_free(&fl);
}

/* Feed bytes to filter_recv through a pipe. */
static bool recv_bytes(struct ferry_opts *o, int protocol, bool am_sender, const uint8_t *bytes,
		       size_t n, struct filter_list *fl, int *code, char *msg)
{
	struct session s;
	int p[2];
	bool ok;

	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], bytes, n), (ssize_t)n);
	close(p[1]);
	session_init(&s, o, p[0], -1);
	s.protocol = protocol;
	s.am_sender = am_sender;
	ok = filter_recv(&s, fl);
	*code = wire_error_code(&s.err);
	if (msg)
		snprintf(msg, 512, "%s", s.err.msg);
	session_free(&s);
	close(p[0]);
	return ok;
}

static void test_wire_recv(void **state)
{
	struct ferry_opts o;
	struct filter_list fl;
	uint8_t buf[8192];
	char msg[512];
	int code;
	size_t n = 0;

	(void)state;
	memset(&o, 0, sizeof o);
	n = put_rule(buf, n, "- *.bin");
	n = put_rule(buf, n, "+ sub/");
	n = put_rule(buf, n, "- /foo");
	n = put_rule(buf, n, ":- .rules");
	n = put_rule(buf, n, "-s hid");
	memset(buf + n, 0, 4);
	n += 4;
	filter_list_init(&fl);
	assert_true(recv_bytes(&o, 31, true, buf, n, &fl, &code, NULL));
	assert_string_equal(list_str(&fl), "- *.bin|+ sub/|- /foo|:- .rules|-s hid");
	assert_true(fl.from_peer);
	assert_int_equal(F(&fl, "a.bin"), -1);
	assert_int_equal(filter_check(&fl, "hid", false, false), -1);
	filter_list_free(&fl);

	/* a receiving server without --delete reads nothing */
	filter_list_init(&fl);
	assert_true(recv_bytes(&o, 31, false, buf, n, &fl, &code, NULL));
	assert_int_equal(filter_list_count(&fl), 0);
	filter_list_free(&fl);

	/* protocol < 29: the old rules ("- "/"+ " or a bare exclude) */
	n = put_rule(buf, 0, "foo");
	n = put_rule(buf, n, "+ bar");
	n = put_rule(buf, n, "- - dash");
	n = put_rule(buf, n, "H x");
	memset(buf + n, 0, 4);
	n += 4;
	filter_list_init(&fl);
	assert_true(recv_bytes(&o, 28, true, buf, n, &fl, &code, NULL));
	assert_string_equal(list_str(&fl), "- foo|+ bar|- - dash|- H x");
	filter_list_free(&fl);

	/* a bad rule is a syntax error naming it */
	n = put_rule(buf, 0, "bogus rule");
	memset(buf + n, 0, 4);
	filter_list_init(&fl);
	assert_false(recv_bytes(&o, 31, true, buf, n + 4, &fl, &code, msg));
	assert_int_equal(code, RERR_SYNTAX);
	assert_non_null(strstr(msg, "bogus rule"));
	filter_list_free(&fl);

	/* the peer cannot make us read a file */
	n = put_rule(buf, 0, ". /etc/passwd");
	memset(buf + n, 0, 4);
	filter_list_init(&fl);
	assert_false(recv_bytes(&o, 31, true, buf, n + 4, &fl, &code, msg));
	filter_list_free(&fl);
}

static void test_wire_recv_bounds(void **state)
{
	struct ferry_opts o;
	struct filter_list fl;
	static uint8_t buf[6000];
	char msg[512];
	int code;

	(void)state;
	memset(&o, 0, sizeof o);
	/* a length beyond any path: protocol error, nothing read past it */
	memcpy(buf, "\x00\x00\x01\x00", 4);
	filter_list_init(&fl);
	assert_false(recv_bytes(&o, 31, true, buf, 4, &fl, &code, msg));
	assert_int_equal(code, RERR_PROTOCOL);
	assert_non_null(strstr(msg, "recv_rules"));
	filter_list_free(&fl);

	memcpy(buf, "\xff\xff\xff\xff", 4);                /* negative */
	filter_list_init(&fl);
	assert_false(recv_bytes(&o, 31, true, buf, 4, &fl, &code, msg));
	assert_int_equal(code, RERR_PROTOCOL);
	filter_list_free(&fl);

	/* just under the limit is fine (and the long pattern is dropped) */
	uint32_t len = 5119;
	memcpy(buf, &len, 4);
	buf[4] = '-';
	buf[5] = ' ';
	memset(buf + 6, 'x', len - 2);
	memset(buf + 4 + len, 0, 4);
	filter_list_init(&fl);
	assert_true(recv_bytes(&o, 31, true, buf, len + 8, &fl, &code, msg));
	assert_int_equal(filter_list_count(&fl), 0);
	filter_list_free(&fl);
	len = 5120;
	memcpy(buf, &len, 4);
	filter_list_init(&fl);
	assert_false(recv_bytes(&o, 31, true, buf, len + 8, &fl, &code, msg));
	assert_int_equal(code, RERR_PROTOCOL);
	filter_list_free(&fl);

	/* a list cut short is an error, not a hang */
	filter_list_init(&fl);
	assert_false(recv_bytes(&o, 31, true, (const uint8_t *)"\x05\x00\x00\x00- a", 7, &fl,
				&code, msg));
	assert_int_not_equal(code, 0);
	filter_list_free(&fl);
}

/* Whatever we send, a server parses back into the same rules. */
static void test_wire_roundtrip(void **state)
{
	static const char *rules[] = {
		"- *.o", "+ dir/", "-! neg", "-/ /abs", "P prot", "H hid", "-p per", ":n- .a",
		":w+ .b", "-x user.x", "- /anch/**", "+ [a-z]*/", "- spaced name",
	};
	struct ferry_opts o;
	struct filter_list fl, back;
	uint8_t buf[8192];
	char a[1024], b[1024];
	bool ok;
	int code;

	(void)state;
	memset(&o, 0, sizeof o);
	o.delete_mode = DELETE_DURING;
	for (int sender = 0; sender < 2; sender++) {
		filter_list_init(&fl);
		for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
			parse_ok(&fl, rules[i]);
		size_t n = send_bytes(&o, 31, &fl, sender, buf, sizeof buf, &ok, NULL);
		assert_true(ok);
		filter_list_init(&back);
		assert_true(recv_bytes(&o, 31, !sender, buf, n, &back, &code, NULL));
		/* every rule that went is there, in order, with its flags */
		size_t j = 0;
		for (size_t i = 0; i < fl.rules.n; i++) {
			uint32_t f = fl.rules.v[i]->flags;
			if ((sender && (f & FR_SIDES) == FR_SENDER_SIDE) ||
			    (!sender && (f & FR_SIDES) == FR_RECEIVER_SIDE))
				continue;
			assert_true(j < back.rules.n);
			assert_string_equal(rule_str(fl.rules.v[i], a, sizeof a),
					    rule_str(back.rules.v[j], b, sizeof b));
			j++;
		}
		assert_int_equal(j, back.rules.n);
		filter_list_free(&back);
		filter_list_free(&fl);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wire_doc_example),
		cmocka_unit_test(test_wire_sides),
		cmocka_unit_test(test_wire_old_protocols),
		cmocka_unit_test(test_wire_cvs),
		cmocka_unit_test(test_wire_recv),
		cmocka_unit_test(test_wire_recv_bounds),
		cmocka_unit_test(test_wire_roundtrip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
