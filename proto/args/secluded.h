/*
 * --secluded-args (-s, --protect-args): the arguments travel over the
 * protocol stream instead of the remote shell's command line (rsync
 * rsync.c: send_protected_args; io.c: read_args; main.c). The command
 * line ends after the flag letters ("rsync --server -s..."); then the
 * client sends "rsync", the remaining options, "." and the paths, each
 * NUL-terminated (an empty one as "."), and one more NUL.
 */
#ifndef FERRY_SECLUDED_H
#define FERRY_SECLUDED_H

#include <stdbool.h>
#include <stddef.h>

#define SECLUDED_MAX_ARGS 8192
#define SECLUDED_MAX_ARG_LEN 5120          /* rsync's BIGPATHBUFLEN */
#define SECLUDED_MAX_BYTES (4 * 1024 * 1024)

/* The bytes to send: "rsync\0", then each of rest[] (NULL-terminated) and
 * of paths[0..npaths), NUL-terminated, then "\0". Returns a malloc'd
 * buffer (*len bytes), NULL when out of memory. */
char *secluded_pack(char **rest, char **paths, int npaths, size_t *len);

/* Read one byte into *ch; false on EOF or error. */
typedef bool (*secluded_getc)(void *ctx, char *ch);

/* Read the list secluded_pack() makes, bounded by the limits above.
 * Returns a NULL-terminated malloc'd vector (*argc entries, the first is
 * the "rsync" placeholder), or NULL with *why set. */
char **secluded_read(secluded_getc getc_fn, void *ctx, int *argc, const char **why);

/* first[0..nfirst) followed by extra[1..nextra) (extra[0], the
 * placeholder, dropped): the argument vector to parse again. The strings
 * are not copied; free only the vector. NULL when out of memory. */
char **secluded_merge(char **first, int nfirst, char **extra, int nextra, int *argc);

void secluded_free(char **argv);

/* --server side (main.c): read the secluded arguments from fd 0, byte by
 * byte so nothing of the protocol after them is consumed, and return
 * argv's options up to the "-s..." letters followed by them (see
 * secluded_merge). The caller owns both:
 * free() the vector, secluded_free(*read_args). NULL after printing why. */
char **secluded_server_argv(int argc, char **argv, int *out_argc, char ***read_args);

#endif
