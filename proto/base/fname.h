/*
 * The one normaliser of slash-separated names (rsync util1.c:
 * clean_fname). Names from the peer, from --files-from and from the
 * command line pass through it before they are opened or compared, so
 * each caller's flags are part of its security: see the callers.
 */
#ifndef FERRY_PROTO_FNAME_H
#define FERRY_PROTO_FNAME_H

#include <sys/types.h>

/* A ".." component fails the name (a received file name). */
#define CFN_REFUSE_DOT_DOT_DIRS 0x1
/* A ".." component removes the component before it, never the leading
 * "/" (meant for an absolute name; one at the start is dropped). A final
 * "." is dropped. */
#define CFN_COLLAPSE_DOT_DOT_DIRS 0x2
/* A trailing "/" stays. */
#define CFN_KEEP_TRAILING_SLASH 0x4
/* A final "." component is dropped ("a/." -> "a/", or "a" without
 * CFN_KEEP_TRAILING_SLASH). */
#define CFN_DROP_TRAILING_DOT_DIR 0x8

/* Clean name in place: "//" becomes "/", "./" components go, a trailing
 * "/" goes (unless kept), and ".." and a final "." are treated as flags
 * say; a leading "/" always stays and an empty result is ".". Returns the
 * new length, or -1 when CFN_REFUSE_DOT_DOT_DIRS refused the name (name
 * is then partly rewritten). */
ssize_t clean_fname(char *name, unsigned flags);

#endif
