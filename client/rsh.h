/*
 * Running the remote shell for host:path transfers.
 */
#ifndef FERRY_CLIENT_RSH_H
#define FERRY_CLIENT_RSH_H

#include <stdbool.h>
#include <sys/types.h>

#include "proto/args/remote.h"
#include "proto/base/opts.h"

/* The command line: the -e / RSYNC_RSH words (default "ssh"), [-l user],
 * [-4|-6], host, the --rsync-path program, then either the server
 * arguments and the shell-escaped paths, or "--server --daemon ." for a
 * daemon reached over the remote shell. NULL on error (printed). */
char **rsh_command(const struct ferry_opts *o, const struct remote_spec *r, char **server_args,
		   char **paths, int npaths, bool daemon);
void rsh_free(char **argv);
/* The -e / RSYNC_RSH command split into words (default "ssh"). */
char **rsh_shell_words(const struct ferry_opts *o);
/* Just the command run on the remote host (--rsync-path and arguments). */
char **rsh_remote_command(const struct ferry_opts *o, char **server_args, char **paths,
			  int npaths, bool daemon);

/* -vv's line for a command: prefix, then each word, quoted when it holds
 * more than letters, digits and ",.-_=+@/", then " (N args)" (rsync
 * util1.c: print_child_argv). n < 0: up to argv's NULL. */
void rsh_print_argv(const char *prefix, char *const *argv, int n);

/* Start it with a socketpair as its stdin and another as its stdout;
 * we read its output from *fd_in and write its input to *fd_out. Returns
 * its pid, or -1 (printed) with both fds -1. */
pid_t rsh_spawn(char **argv, int *fd_in, int *fd_out);

/* Reap the remote shell; our code wins, else its exit status counts. When
 * our code says the connection was lost (RERR_STREAMIO, RERR_SOCKETIO), a
 * higher status of the shell's wins, as it tells why (ssh's 255). */
int rsh_wait(pid_t pid, int code);

#endif
