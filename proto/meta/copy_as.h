/*
 * --copy-as=USER[:GROUP]: the process that reads or writes the files
 * becomes USER (and GROUP, else USER's groups) once the connection is set
 * up, so files are created and read with that user's rights.
 */
#ifndef FERRY_COPY_AS_H
#define FERRY_COPY_AS_H

#include <stdbool.h>

struct session;

/*
 * Switch this process to spec ("USER", "USER:GROUP", names or numbers):
 * setgid, setgroups (initgroups without a GROUP), then setuid, and
 * s->am_root follows. Call before any thread starts. Returns true (also
 * when spec is NULL); false after wire_fail(RERR_SYNTAX) naming the step
 * that failed, as rsync does (main.c: become_copy_as_user). Only root can
 * switch; anyone else fails at setgroups/setuid with EPERM.
 */
bool copy_as_become(struct session *s, const char *spec);

#endif
