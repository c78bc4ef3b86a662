/*
 * Batch mode on the client: recording (--write-batch, --only-write-batch)
 * and the replay script FILE.sh (rsync batch.c: write_batch_shell_file).
 * Replaying is client/batch_read.c.
 */
#include "client/batch_client.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/pull.h"
#include "proto/args/remote.h"
#include "proto/delta/batch.h"
#include "proto/flist/filesfrom.h"
#include "proto/filter/filter.h"
#include "proto/run/negotiate.h"
#include "proto/base/oppath.h"
#include "proto/core/progress.h"
#include "proto/core/session.h"

/* One argument, single-quoted so that nothing in it reaches the shell;
 * a plain "--opt=" prefix stays outside the quotes (batch.c: write_arg). */
static void script_arg(FILE *f, const char *arg)
{
	const char *eq = arg[0] == '-' ? strchr(arg, '=') : NULL;

	if (eq) {
		const char *p = arg;
		while (p < eq && (*p == '-' || *p == '_' || (*p >= '0' && *p <= '9') ||
				  (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z')))
			p++;
		if (p == eq) {
			fwrite(arg, 1, (size_t)(eq - arg + 1), f);
			arg = eq + 1;
		}
	}
	fputc('\'', f);
	for (const char *p = arg; *p; p++) {
		if (*p == '\'')
			fputs("'\\''", f);
		else
			fputc(*p, f);
	}
	fputc('\'', f);
}

static void script_opt(FILE *f, const char *opt, const char *arg)
{
	fprintf(f, " %s", opt);
	if (arg) {
		fputc('=', f);
		script_arg(f, arg);
	}
}

static bool starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The options of the command line, minus the file names and the filter
 * options (the rules follow as a here-document), with --write-batch turned
 * into --read-batch. */
static void script_options(FILE *f, const struct ferry_opts *o)
{
	int n = o->raw_argc;
	bool *is_name = calloc((size_t)n + 1, sizeof *is_name);

	/* The file names are the last raw arguments equal to the parsed
	 * ones, found scanning backwards (as rsync does). */
	for (int i = n - 1, j = o->nargs - 1; is_name && i > 0 && j >= 0; i--) {
		if (strcmp(o->raw_argv[i], o->args[j]) == 0) {
			is_name[i] = true;
			j--;
		}
	}
	for (int i = 1; i < n; i++) {
		const char *p = o->raw_argv[i];
		if (!is_name || is_name[i])
			continue;
		if (starts(p, "--files-from") || starts(p, "--filter") || starts(p, "--include") ||
		    starts(p, "--exclude")) {
			if (!strchr(p, '='))
				i++;
			continue;
		}
		if (strcmp(p, "-f") == 0) {
			i++;
			continue;
		}
		if (starts(p, "--write-batch") || starts(p, "--only-write-batch")) {
			size_t len = starts(p, "--write-batch") ? 13 : 18;
			script_opt(f, "--read-batch", p[len] == '=' ? p + len + 1 : NULL);
		} else {
			fputc(' ', f);
			script_arg(f, p);
		}
	}
	free(is_name);
}

/* FILE.sh: `ferry OPTIONS --read-batch=FILE ${1:-DEST}`, plus the filter
 * rules as a here-document read by --filter=._- (batch.c:
 * write_batch_shell_file). */
static bool write_script(struct session *s)
{
	const struct ferry_opts *o = s->opts;
	char name[BATCH_NAME_MAX + 8];
	struct remote_spec dest;

	for (size_t i = 0; i < o->nfilters; i++) {
		/* A newline would end the here-document early: refuse rather
		 * than write a script that runs part of a pattern. */
		if (strchr(o->filters[i].text, '\n'))
			return wire_fail(&s->err, RERR_SYNTAX,
					 "cannot write a filter rule containing a newline to the batch replay script");
	}
	snprintf(name, sizeof name, "%s.sh", o->batch_name);
	int fd = oppath_open(AT_FDCWD, name, O_WRONLY | O_CREAT | O_TRUNC, 0700, o->insecure_links);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return wire_fail(&s->err, RERR_FILEIO, "Batch file %s open error: %s", name,
				 strerror(e));
	}
	script_arg(f, o->raw_argc > 0 ? o->raw_argv[0] : "ferry");
	if (o->nfilters)
		script_opt(f, s->protocol >= 29 ? "--filter" : "--exclude-from",
			   s->protocol >= 29 ? "._-" : "-");
	script_options(f, o);
	remote_parse(o->args[o->nargs - 1], &dest);
	char where[sizeof dest.module + sizeof dest.path + 2];
	if (dest.kind == REMOTE_DAEMON)
		snprintf(where, sizeof where, "%s/%s", dest.module, dest.path);
	else
		snprintf(where, sizeof where, "%s", dest.path);
	script_opt(f, "${1:-", NULL);
	script_arg(f, where);
	fputc('}', f);
	if (o->nfilters) {
		fputs(" <<'#E#'\n", f);
		for (size_t i = 0; i < o->nfilters; i++)
			fprintf(f, "%s\n", o->filters[i].text);
		fputs("#E#", f);
	}
	fputc('\n', f);
	bool ok = !ferror(f);
	if (fclose(f) != 0)
		ok = false;
	if (!ok)
		return wire_fail(&s->err, RERR_FILEIO, "Batch file %s write error: %s", name,
				 strerror(errno));
	return true;
}

bool batch_client_start(struct session *s, bool we_send)
{
	if (!s->opts->write_batch)
		return true;
	return batch_start(s, we_send) && write_script(s);
}

int batch_client_finish(struct session *s, int code)
{
	if (!s->opts->write_batch)
		return code;
	if (!batch_finish(s) && code == 0) {
		fprintf(stderr, "ferry: %s\n", s->err.msg);
		code = RERR_FILEIO;
	}
	return code;
}
