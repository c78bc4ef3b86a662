/*
 * The listening daemon's "pid file": written with the listener's pid and
 * kept locked (an fcntl write lock on its first bytes, the lock rsync
 * takes, so a ferry and an rsync daemon sharing the file exclude each
 * other) for as long as the listener runs, then removed.
 */
#ifndef FERRY_DAEMON_PID_FILE_H
#define FERRY_DAEMON_PID_FILE_H

#include <sys/types.h>

struct pid_file {
	char *path;  /* as configured; NULL when there is no pid file */
	int fd;      /* open and locked while held, else -1 */
	dev_t dev;   /* the file we wrote, so that we remove only that one */
	ino_t ino;
};

/* Create or open path (NULL or "": no pid file), lock it, and write our
 * pid into it, as rsync's create_pid_file does: a non-regular file in the
 * way is unlinked first, a symlink is never followed, and a file another
 * process holds locked is left exactly as it is. Returns 0 with *pf
 * holding the lock, or -1 after putting "failed to STEP pid file PATH:
 * ERROR" in msg (rsync's words; the caller prints and logs it and exits
 * with RERR_FILEIO). The descriptor is close-on-exec; a forked child
 * should pid_file_forget() its copy. */
int pid_file_create(struct pid_file *pf, const char *path, char *msg, size_t msgsz);

/* At the listener's exit: remove the file if it is still the one we
 * created (another daemon may have replaced it since), and release it. */
void pid_file_remove(struct pid_file *pf);

/* In a forked child: close the inherited descriptor without touching the
 * file (an fcntl lock belongs to the listener alone, so the child never
 * held it). */
void pid_file_forget(struct pid_file *pf);

#endif
