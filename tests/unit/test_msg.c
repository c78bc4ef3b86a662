/*
 * Unit tests for the one message path (proto/core/msg.c): where each class of
 * message goes, how the log escapes it (rsync log.c: rwrite, logit), and
 * how names are shown (util1.c: full_fname).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/core/msg.h"
#include "proto/base/outfilter.h"
#include "proto/core/session.h"

static void test_log_escaping(void **state)
{
	char out[64];

	(void)state;
	out_escape_log(out, sizeof out, "a\nb", 3);
	assert_string_equal(out, "a\\#012b");
	out_escape_log(out, sizeof out, "c\033d\te", 5);
	assert_string_equal(out, "c\\#033d\te");
	/* C1 controls are escaped in the log, other 8-bit bytes are not */
	out_escape_log(out, sizeof out, "\302\205\303\251", 4);
	assert_string_equal(out, "\302\\#205\303\251");
	/* a literal "\#123" cannot pass for an escape */
	out_escape_log(out, sizeof out, "g\\#123h", 7);
	assert_string_equal(out, "g\\#134#123h");
	/* cut short, never mid-escape */
	assert_int_equal(out_escape_log(out, 8, "ab\n\n", 4), 7);
	assert_string_equal(out, "ab\\#012");
}

struct rig {
	struct ferry_opts o;
	struct session s;
	int pipe[2];
	char logname[64];
};

static void rig_start(struct rig *r, bool server)
{
	memset(r, 0, sizeof *r);
	snprintf(r->logname, sizeof r->logname, "/tmp/test_msg.XXXXXX");
	int lfd = mkstemp(r->logname);
	assert_true(lfd >= 0);
	close(lfd);
	r->o.log_file = r->logname;
	assert_int_equal(pipe(r->pipe), 0);
	session_init(&r->s, &r->o, -1, r->pipe[1]);
	r->s.info = tmpfile();
	r->s.am_server = server;
	r->s.out.mux = server;
}

static void read_stream(FILE *fp, char *buf, size_t size)
{
	fflush(fp);
	rewind(fp);
	size_t n = fread(buf, 1, size - 1, fp);
	buf[n] = '\0';
}

static void rig_log(struct rig *r, char *buf, size_t size)
{
	FILE *fp = fopen(r->logname, "r");

	assert_non_null(fp);
	read_stream(fp, buf, size);
	fclose(fp);
}

static void rig_stop(struct rig *r)
{
	fclose(r->s.info);
	r->s.info = NULL;
	session_free(&r->s);
	close(r->pipe[0]);
	close(r->pipe[1]);
	unlink(r->logname);
}

static void test_client_info_and_log(void **state)
{
	struct rig r;
	char buf[1024];

	(void)state;
	rig_start(&r, false);
	msg_write(&r.s, MC_INFO, "made a\nb\n", 9);
	msg_write(&r.s, MC_CLIENT, "a is uptodate\n", 14);
	msg_write(&r.s, MC_LOG, "only logged\n", 12);
	read_stream(r.s.info, buf, sizeof buf);
	assert_string_equal(buf, "made a\\#012b\na is uptodate\n");
	rig_log(&r, buf, sizeof buf);
	/* "YYYY/MM/DD HH:MM:SS [pid] " before each line */
	char *first = strchr(buf, ']');
	assert_non_null(first);
	assert_true(strncmp(first, "] made a\\#012b\n", 15) == 0);
	assert_non_null(strstr(buf, "] only logged\n"));
	assert_null(strstr(buf, "uptodate"));
	assert_false(r.s.got_xfer_error);
	rig_stop(&r);
}

static void read_frame(struct rig *r, int *code, char *text, size_t size)
{
	uint8_t hdr[4];

	assert_int_equal(read(r->pipe[0], hdr, 4), 4);
	uint32_t v = (uint32_t)hdr[0] | (uint32_t)hdr[1] << 8 | (uint32_t)hdr[2] << 16 |
		     (uint32_t)hdr[3] << 24;
	size_t len = v & 0xFFFFFF;
	*code = (int)(v >> 24) - MPLEX_BASE;
	assert_true(len < size);
	assert_int_equal(read(r->pipe[0], text, len), (ssize_t)len);
	text[len] = '\0';
}

static void test_server_sends_to_peer(void **state)
{
	struct rig r;
	char text[256];
	int code;

	(void)state;
	rig_start(&r, true);
	r.s.protocol = 31;
	msg_printf(&r.s, MC_ERROR_XFER, "ferry: bad %s\n", "file");
	read_frame(&r, &code, text, sizeof text);
	assert_int_equal(code, MSG_ERROR_XFER);
	assert_string_equal(text, "ferry: bad file\n");
	assert_true(r.s.got_xfer_error);
	msg_write(&r.s, MC_WARNING, "careful\n", 8);
	read_frame(&r, &code, text, sizeof text);
	assert_int_equal(code, MSG_WARNING);
	/* before protocol 30 errors and warnings travel as rsync sends them */
	r.s.protocol = 29;
	msg_write(&r.s, MC_ERROR, "e\n", 2);
	read_frame(&r, &code, text, sizeof text);
	assert_int_equal(code, MSG_ERROR_XFER);
	msg_write(&r.s, MC_WARNING, "w\n", 2);
	read_frame(&r, &code, text, sizeof text);
	assert_int_equal(code, MSG_INFO);
	rig_stop(&r);
}

static void test_syserr_shape(void **state)
{
	struct rig r;
	char text[256];
	int code;

	(void)state;
	rig_start(&r, true);
	r.s.protocol = 31;
	msg_syserr(&r.s, MC_ERROR_XFER, "receiver", 13, "mkstemp %s failed", "\"/d/.f.XXXXXX\"");
	read_frame(&r, &code, text, sizeof text);
	assert_string_equal(text,
			    "ferry: [receiver] mkstemp \"/d/.f.XXXXXX\" failed: Permission denied (13)\n");
	rig_stop(&r);
}

static void test_full_name(void **state)
{
	struct session s;
	char out[256];

	(void)state;
	memset(&s, 0, sizeof s);
	assert_string_equal(msg_full_name(&s, "/a/./b/../c", "f", out, sizeof out), "\"/a/c/f\"");
	assert_string_equal(msg_full_name(&s, "/a", ".", out, sizeof out), "\"/a/.\"");
	s.module.name = "mod";
	assert_string_equal(msg_full_name(&s, "ro", ".f.XYZ", out, sizeof out),
			    "\"/ro/.f.XYZ\" (in mod)");
	assert_string_equal(msg_full_name(&s, "ro", ".", out, sizeof out), "\"/ro/.\" (in mod)");
	/* a name in the module's root as given (rsync without chroot) */
	assert_string_equal(msg_full_name(&s, NULL, "ro/sub", out, sizeof out),
			    "\"ro/sub\" (in mod)");
	s.module.chrooted = true;
	assert_string_equal(msg_full_name(&s, NULL, "ro/sub", out, sizeof out),
			    "\"/ro/sub\" (in mod)");
	assert_string_equal(msg_full_name(&s, "ro", "f", out, sizeof out), "\"/ro/f\" (in mod)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_log_escaping),
		cmocka_unit_test(test_client_info_and_log),
		cmocka_unit_test(test_server_sends_to_peer),
		cmocka_unit_test(test_syserr_shape),
		cmocka_unit_test(test_full_name),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
