/*
 * rusage_run OUTFILE COMMAND [ARG...]
 *
 * Runs COMMAND as a child, forwards SIGTERM/SIGINT/SIGHUP to it, reaps it
 * with wait4() and writes one line to OUTFILE:
 *     <wait status> <user s> <system s> <max rss KiB>
 * then exits with the child's exit code (128 + signal if it was killed).
 *
 * Why not measure from Python directly: Linux keeps the RSS high-water mark
 * of the memory image a process had before exec(), so a tool forked from
 * the 40 MiB Python harness would report at least 40 MiB. This helper is
 * tiny, so the figures it reports are the command's own (plus every
 * descendant the command reaped, as wait4() accumulates them).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t child_pid;

static void forward_signal(int sig)
{
	if (child_pid > 0)
		kill(child_pid, sig);
}

static void install_forwarding(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = forward_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static int exit_code_of(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

int main(int argc, char **argv)
{
	struct rusage ru;
	pid_t pid, got;
	int status = 0;
	FILE *out;

	if (argc < 3) {
		fprintf(stderr, "usage: rusage_run OUTFILE COMMAND [ARG...]\n");
		return 2;
	}
	install_forwarding();
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "rusage_run: fork: %s\n", strerror(errno));
		return 2;
	}
	if (pid == 0) {
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		execvp(argv[2], argv + 2);
		fprintf(stderr, "rusage_run: cannot run %s: %s\n", argv[2], strerror(errno));
		_exit(127);
	}
	child_pid = pid;
	do
		got = wait4(pid, &status, 0, &ru);
	while (got < 0 && errno == EINTR);
	if (got < 0) {
		fprintf(stderr, "rusage_run: wait4: %s\n", strerror(errno));
		return 2;
	}
	out = fopen(argv[1], "w");
	if (!out) {
		fprintf(stderr, "rusage_run: cannot write %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	fprintf(out, "%d %ld.%06ld %ld.%06ld %ld\n", status,
		(long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec,
		(long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec, ru.ru_maxrss);
	fclose(out);
	return exit_code_of(status);
}
