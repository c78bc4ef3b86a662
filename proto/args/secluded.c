/*
 * --secluded-args: packing the arguments on the client, reading them on
 * the server (see secluded.h).
 */
#include "proto/args/secluded.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/args/options.h"

static size_t packed_len(const char *s)
{
	return (*s ? strlen(s) : 1) + 1;
}

static char *pack_one(char *p, const char *s)
{
	size_t n = packed_len(s);

	memcpy(p, *s ? s : ".", n);
	return p + n;
}

char *secluded_pack(char **rest, char **paths, int npaths, size_t *len)
{
	size_t total = packed_len("rsync") + 1;

	for (int i = 0; rest[i]; i++)
		total += packed_len(rest[i]);
	for (int i = 0; i < npaths; i++)
		total += packed_len(paths[i]);
	char *buf = malloc(total), *p = buf;
	if (!buf)
		return NULL;
	p = pack_one(p, "rsync");
	for (int i = 0; rest[i]; i++)
		p = pack_one(p, rest[i]);
	for (int i = 0; i < npaths; i++)
		p = pack_one(p, paths[i]);
	*p++ = '\0';
	*len = (size_t)(p - buf);
	return buf;
}

void secluded_free(char **argv)
{
	for (int i = 0; argv && argv[i]; i++)
		free(argv[i]);
	free(argv);
}

char **secluded_read(secluded_getc getc_fn, void *ctx, int *argc, const char **why)
{
	char **argv = calloc(SECLUDED_MAX_ARGS + 1, sizeof *argv);
	char arg[SECLUDED_MAX_ARG_LEN];
	size_t total = 0;
	int n = 0;

	if (!argv) {
		*why = "out of memory";
		return NULL;
	}
	for (;;) {
		size_t len = 0;
		char ch;
		for (;;) {
			if (!getc_fn(ctx, &ch)) {
				*why = "the connection ended inside the argument list";
				goto fail;
			}
			if (!ch)
				break;
			if (len + 1 >= sizeof arg) {
				*why = "an argument is too long";
				goto fail;
			}
			arg[len++] = ch;
		}
		arg[len] = '\0';
		if (!len)
			break;
		total += len;
		if (n >= SECLUDED_MAX_ARGS || total > SECLUDED_MAX_BYTES) {
			*why = "too many arguments";
			goto fail;
		}
		if (!(argv[n++] = strdup(arg))) {
			*why = "out of memory";
			goto fail;
		}
	}
	if (n == 0) {
		*why = "the argument list is empty";
		goto fail;
	}
	*argc = n;
	return argv;
fail:
	secluded_free(argv);
	return NULL;
}

char **secluded_merge(char **first, int nfirst, char **extra, int nextra, int *argc)
{
	int n = nfirst + (nextra > 0 ? nextra - 1 : 0);
	char **v = calloc((size_t)n + 1, sizeof *v);

	if (!v)
		return NULL;
	for (int i = 0; i < nfirst; i++)
		v[i] = first[i];
	for (int i = 1; i < nextra; i++)
		v[nfirst + i - 1] = extra[i];
	*argc = n;
	return v;
}

static bool fd_getc(void *ctx, char *ch)
{
	int fd = *(int *)ctx;
	ssize_t r;

	while ((r = read(fd, ch, 1)) < 0 && errno == EINTR)
		;
	return r == 1;
}

char **secluded_server_argv(int argc, char **argv, int *out_argc, char ***read_args)
{
	int fd = STDIN_FILENO, nread = 0;
	const char *why = NULL;
	char **got = secluded_read(fd_getc, &fd, &nread, &why);

	if (!got) {
		fprintf(stderr, "ferry: reading the secluded arguments: %s\n", why);
		return NULL;
	}
	char **merged = secluded_merge(argv, options_secluded_split(argv), got, nread, out_argc);
	if (!merged) {
		fprintf(stderr, "ferry: reading the secluded arguments: out of memory\n");
		secluded_free(got);
		return NULL;
	}
	*read_args = got;
	return merged;
}
