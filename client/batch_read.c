/*
 * Replaying a batch on the client (--read-batch; rsync main.c: do_cmd and
 * client_run with read_batch, where the batch file stands in for the
 * sender).
 */
#include "client/batch_client.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/pull.h"
#include "proto/args/remote.h"
#include "proto/delta/batch.h"
#include "proto/flist/filesfrom.h"
#include "proto/filter/filter.h"
#include "proto/run/negotiate.h"
#include "proto/core/session.h"

/* The stream flags win over the command line (batch.c:
 * check_batch_flags); also no block sums: nobody reads them. */
static bool replay_options(struct ferry_opts *ro, const struct ferry_opts *o, int32_t flags)
{
	*ro = *o;
	ro->whole_file = 1;
	return batch_apply_flags(ro, flags);
}

int client_read_batch(const struct ferry_opts *o)
{
	struct ferry_opts ro;
	struct remote_spec where;
	struct filter_list filters;
	struct session s;
	char err[512];
	int32_t flags;

	if (o->nargs < 1) {
		fprintf(stderr, "ferry: --read-batch needs a destination\n");
		return RERR_SYNTAX;
	}
	const char *dest = o->args[o->nargs - 1];
	remote_parse(dest, &where);
	if (where.kind != REMOTE_LOCAL) {
		fprintf(stderr, "ferry: remote destination is not allowed with --read-batch\n");
		return RERR_SYNTAX;
	}
	int fd = batch_open_read(o->batch_name, o->insecure_links, &flags);
	if (fd < 0)
		return RERR_FILEIO;
	if (!replay_options(&ro, o, flags)) {
		if (fd != STDIN_FILENO)
			close(fd);
		return RERR_SYNTAX;
	}
	/* The generator's requests have no sender to go to. */
	int sink = open("/dev/null", O_WRONLY | O_CLOEXEC);
	filter_list_init(&filters);
	if (filter_list_from_opts(&filters, &ro, err, sizeof err) < 0 || sink < 0) {
		fprintf(stderr, "ferry: %s\n", sink < 0 ? strerror(errno) : err);
		filter_list_free(&filters);
		if (fd != STDIN_FILENO)
			close(fd);
		if (sink >= 0)
			close(sink);
		return RERR_SYNTAX;
	}
	session_init(&s, &ro, fd, sink);
	int code;
	if (!negotiate_from_batch(&s)) {
		code = session_exit_code(&s);
		fprintf(stderr, "ferry: %s\n", s.err.msg);
	} else {
		struct names_forwarder none = {0}; /* no --files-from here */
		code = pull_receive(&s, dest, &filters, &none, NULL, (double)time(NULL));
		if (code && wire_error_code(&s.err) && s.err.msg[0] && strcmp(s.err.msg, " ") != 0)
			fprintf(stderr, "ferry: %s\n", s.err.msg);
	}
	session_free(&s);
	filter_list_free(&filters);
	if (fd != STDIN_FILENO)
		close(fd);
	close(sink);
	return code;
}
