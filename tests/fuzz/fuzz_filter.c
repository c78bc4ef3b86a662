/*
 * Filter rules: the list a peer sends (filter_wire.c: filter_recv, int
 * length + rule text until 0) or rules as --filter/--exclude-from text
 * (filter_parse_rule, one a line), then filter_check of a few paths and
 * of the input's last line against the rules. The first byte chooses the
 * protocol, the side, the parse flags and which reader runs.
 */
#include <stdlib.h>
#include <string.h>

#include "proto/filter/filter.h"
#include "proto/core/session.h"
#include "tests/fuzz/fuzz_common.h"

static const char *const paths[] = {"a", "a/b.c", "dir", "x/.git/config", "deep/er/file.o",
				    "/abs", "CVS", "core"};

static void check_paths(const struct filter_list *fl, const char *extra)
{
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
		for (int cf = 0; cf < 8; cf++)
			filter_check_flags(fl, paths[i], cf);
	if (extra && *extra) {
		filter_check(fl, extra, false, false);
		filter_check(fl, extra, true, true);
	}
}

/* Rules as text, one a line; the last line is also checked as a path.
 * Merge rules read nothing: FILTER_PARSE_FROM_PEER keeps stdin out, and
 * the names have no file behind them. */
static void parse_text(const uint8_t *p, size_t n, int flags)
{
	struct filter_list fl;
	char err[1024];
	char *text = malloc(n + 1), *line, *next;

	if (!text)
		return;
	memcpy(text, p, n);
	text[n] = '\0';
	filter_list_init(&fl);
	for (line = text; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!next)
			break;
		filter_parse_rule(&fl, line, flags, err, sizeof err);
	}
	check_paths(&fl, line);
	filter_list_free(&fl);
	free(text);
}

static void parse_wire(const uint8_t *p, size_t n, uint8_t b)
{
	struct ferry_opts o;
	struct session s;
	struct filter_list fl;

	memset(&o, 0, sizeof o);
	o.files_from_fd = -1;
	o.delete_excluded = b & 0x04;
	o.delete_mode = b & 0x08 ? DELETE_DEFAULT : DELETE_NONE;
	o.prune_empty_dirs = b & 0x10;
	fuzz_session_init(&s, &o, p, n);
	fuzz_session_protocol(&s, PROTOCOL_OLDEST + (b >> 5) % 6, 0);
	s.am_sender = b & 0x02;
	filter_list_init(&fl);
	if (filter_recv(&s, &fl))
		check_paths(&fl, NULL);
	filter_list_free(&fl);
	fuzz_session_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in = {data, size};
	uint8_t b = fuzz_take_byte(&in);

	if (b & 0x01)
		parse_wire(in.p, in.n, b);
	else
		parse_text(in.p, in.n, FILTER_PARSE_FROM_PEER | ((b >> 1) & 0x37));
	return 0;
}
