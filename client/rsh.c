/*
 * Remote-shell transport (main.c: do_cmd): run `ssh [-l user] host
 * rsync --server ...` (or whatever -e / RSYNC_RSH names) and talk to it over
 * a socketpair.
 */
#include "client/rsh.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto/args/options.h"
#include "proto/base/wire.h"

#define MAX_RSH_ARGS 4096

struct argv_builder {
	char **v;
	int n, cap;
	bool failed;
};

static void add(struct argv_builder *a, const char *s)
{
	if (a->failed)
		return;
	if (a->n + 2 > a->cap) {
		int cap = a->cap ? a->cap * 2 : 32;
		char **v = cap <= MAX_RSH_ARGS ? realloc(a->v, (size_t)cap * sizeof *v) : NULL;
		if (!v) {
			a->failed = true;
			return;
		}
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n] = strdup(s);
	if (!a->v[a->n]) {
		a->failed = true;
		return;
	}
	a->v[++a->n] = NULL;
}

/* Split the -e command into words as rsync does: blanks separate words,
 * single and double quotes group, a backslash inside double quotes
 * escapes the next character. */
static bool split_command(const char *cmd, struct argv_builder *a)
{
	char word[4096];
	size_t n = 0;
	bool in_word = false;

	for (const char *p = cmd;; p++) {
		if (*p == '\0' || *p == ' ' || *p == '\t') {
			if (in_word) {
				word[n] = '\0';
				add(a, word);
				n = 0;
				in_word = false;
			}
			if (!*p)
				break;
			continue;
		}
		in_word = true;
		if (*p == '\'' || *p == '"') {
			char q = *p++;
			while (*p && *p != q) {
				if (q == '"' && *p == '\\' && p[1])
					p++;
				if (n + 1 >= sizeof word)
					return false;
				word[n++] = *p++;
			}
			if (!*p)
				return false;
			continue;
		}
		if (n + 1 >= sizeof word)
			return false;
		word[n++] = *p;
	}
	return !a->failed && a->n > 0;
}

static bool is_ssh(const char *prog)
{
	const char *base = strrchr(prog, '/');

	base = base ? base + 1 : prog;
	return strcmp(base, "ssh") == 0;
}

char **rsh_shell_words(const struct ferry_opts *o)
{
	struct argv_builder a = {0};
	const char *rsh = o->rsh ? o->rsh : getenv("RSYNC_RSH");

	if (!rsh || !*rsh)
		rsh = "ssh";
	if (!split_command(rsh, &a)) {
		fprintf(stderr, "ferry: cannot parse the remote shell command \"%s\"\n", rsh);
		rsh_free(a.v);
		return NULL;
	}
	return a.v;
}

static void add_remote_words(struct argv_builder *a, const struct ferry_opts *o,
			     char **server_args, char **paths, int npaths, bool daemon);

char **rsh_remote_command(const struct ferry_opts *o, char **server_args, char **paths,
			  int npaths, bool daemon)
{
	struct argv_builder a = {0};

	add_remote_words(&a, o, server_args, paths, npaths, daemon);
	if (a.failed) {
		rsh_free(a.v);
		return NULL;
	}
	return a.v;
}

char **rsh_command(const struct ferry_opts *o, const struct remote_spec *r, char **server_args,
		   char **paths, int npaths, bool daemon)
{
	struct argv_builder a = {0};
	char **words = rsh_shell_words(o);

	if (!words)
		return NULL;
	for (int i = 0; words[i]; i++)
		add(&a, words[i]);
	rsh_free(words);
	if (r->user[0]) {
		add(&a, "-l");
		add(&a, r->user);
	}
	if (o->ip_family && is_ssh(a.v[0]))
		add(&a, o->ip_family == 4 ? "-4" : "-6");
	add(&a, r->host);
	add_remote_words(&a, o, server_args, paths, npaths, daemon);
	if (a.failed) {
		rsh_free(a.v);
		return NULL;
	}
	return a.v;
}

/* The command the remote shell runs: the --rsync-path program and its
 * arguments (main.c: do_cmd). */
static void add_remote_words(struct argv_builder *a, const struct ferry_opts *o,
			     char **server_args, char **paths, int npaths, bool daemon)
{
	add(a, o->rsync_path ? o->rsync_path : "rsync");
	if (daemon) {
		add(a, "--server");
		add(a, "--daemon");
		add(a, ".");
		return;
	}
	for (int i = 0; server_args[i]; i++)
		add(a, server_args[i]);
	for (int i = 0; i < npaths; i++) {
		char *esc = options_remote_arg(o, NULL, paths[i], false);
		add(a, esc ? esc : paths[i]);
		free(esc);
	}
}

void rsh_free(char **argv)
{
	for (int i = 0; argv && argv[i]; i++)
		free(argv[i]);
	free(argv);
}

void rsh_print_argv(const char *prefix, char *const *argv, int n)
{
	static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				    "0123456789,.-_=+@/";
	int cnt = 0;

	printf("%s ", prefix);
	for (; argv[cnt] && (n < 0 || cnt < n); cnt++) {
		const char *w = argv[cnt];
		printf(strspn(w, plain) == strlen(w) ? "%s " : "\"%s\" ", w);
	}
	printf(" (%d args)\n", cnt);
	fflush(stdout);
}

/* Two socketpairs, one each way, as rsync's piped_child has: over one
 * pair, a shell that dies before reading what we sent would turn its end
 * into a reset (ECONNRESET) where rsync sees the end of the stream. */
static bool spawn_pairs(int to_child[2], int from_child[2])
{
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, to_child) < 0)
		return false;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, from_child) == 0)
		return true;
	close(to_child[0]);
	close(to_child[1]);
	return false;
}

static void close_pairs(int to_child[2], int from_child[2])
{
	close(to_child[0]);
	close(to_child[1]);
	close(from_child[0]);
	close(from_child[1]);
}

pid_t rsh_spawn(char **argv, int *fd_in, int *fd_out)
{
	int to_child[2], from_child[2];

	*fd_in = *fd_out = -1;
	if (!spawn_pairs(to_child, from_child)) {
		fprintf(stderr, "ferry: socketpair failed: %s\n", strerror(errno));
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "ferry: fork failed: %s\n", strerror(errno));
		close_pairs(to_child, from_child);
		return -1;
	}
	if (pid == 0) {
		dup2(to_child[1], STDIN_FILENO);
		dup2(from_child[1], STDOUT_FILENO);
		signal(SIGPIPE, SIG_DFL);
		execvp(argv[0], argv);
		fprintf(stderr, "ferry: Failed to exec %s: %s (%d)\n", argv[0], strerror(errno),
			errno);
		_exit(RERR_IPC); /* as rsync's child (pipe.c: piped_child) */
	}
	close(to_child[1]);
	close(from_child[1]);
	*fd_in = from_child[0];
	*fd_out = to_child[0];
	return pid;
}

int rsh_wait(pid_t pid, int code)
{
	int status;

	if (pid <= 0)
		return code;
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return code ? code : RERR_WAITCHILD;
	}
	/* The connection ended under us: the shell's own status tells why
	 * when it is higher, e.g. ssh's 255 for a host it cannot reach
	 * (cleanup.c: _exit_cleanup takes the child's status over a lower
	 * code). */
	bool lost = code == RERR_STREAMIO || code == RERR_SOCKETIO;
	if (code && !(lost && WIFEXITED(status) && WEXITSTATUS(status) > code))
		return code;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 125; /* RERR_CMD_KILLED */
}
