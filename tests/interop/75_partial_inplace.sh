#!/bin/bash
# A --partial-dir basis is written over in place and renamed into place
# (protocol 30's CF_INPLACE_PARTIAL_DIR, rsync's one-inplace update),
# compared with rsync 3.5.0: the finished file is the partial file's inode,
# whole-file or delta, locally, pushing to and pulling from a real rsync,
# and under a real rsync client. And the open of that partial file keeps
# the operator-path walk on its retry: an LD_PRELOAD shim answers the
# first O_CREAT open with EACCES (as fs.protected_regular does) after
# swapping the partial dir for another user's symlink; the retry must
# refuse the link, not write through it (rsync testsuite:
# partial-protected-regular-retry-linux).
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC"
t_setup
t_fakessh "$T/fakessh"

# fresh TAG -- $T/TAG/src/victim, and in $T/TAG/dst/pdir its first half
# and then other bytes, as an interrupted transfer leaves it
fresh() {
    rm -rf "$T/$1"
    mkdir -p "$T/$1/src" "$T/$1/dst/pdir"
    head -c 200000 /dev/urandom >"$T/$1/src/victim"
    head -c 100000 "$T/$1/src/victim" >"$T/$1/dst/pdir/victim"
    head -c 50000 /dev/urandom >>"$T/$1/dst/pdir/victim"
    stat -c %i "$T/$1/dst/pdir/victim" >"$T/$1/ino"
}
# in_place TAG -- the copy is right, is the partial file's inode, and the
# partial dir is gone
in_place() {
    cmp "$T/$1/src/victim" "$T/$1/dst/victim" &&
        [ "$(stat -c %i "$T/$1/dst/victim")" = "$(cat "$T/$1/ino")" ] &&
        [ ! -e "$T/$1/dst/pdir" ]
}
run() { # TAG DST-PREFIX CMD...
    local tag=$1 pre=$2
    shift 2
    fresh "$tag"
    "$@" --partial-dir=pdir "$T/$tag/src/" "$pre$T/$tag/dst/"
}

run ref "" "$RSYNC" -rt
t_check rsync_reference_in_place in_place ref
run local "" "$FERRY" -rt
t_check local_whole_file in_place local
run delta "" "$FERRY" -rt -I --no-whole-file
t_check local_delta in_place delta
run delay "" "$FERRY" -rt --delay-updates
t_check local_delay_updates in_place delay
run push host: "$FERRY" -rt -e "$T/fakessh" --rsync-path="$RSYNC"
t_check ferry_push_rsync_receiver in_place push
run srv host: "$RSYNC" -rt -e "$T/fakessh" --rsync-path="$FERRY"
t_check rsync_push_ferry_receiver in_place srv
fresh pull
"$FERRY" -rt -e "$T/fakessh" --rsync-path="$RSYNC" --partial-dir=pdir "host:$T/pull/src/" "$T/pull/dst/"
t_check ferry_pull_from_rsync in_place pull

# --- the retry after EACCES keeps the walk
t_require cc
cat >"$T/shim.c" <<'EOF'
#define _GNU_SOURCE 1
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int swapped;

static void mark(const char *var)
{
	const char *p = getenv(var);
	if (p)
		close(open(p, O_WRONLY | O_CREAT, 0600));
}

static int fd_is(int fd, const char *want)
{
	char proc[64], got[PATH_MAX];
	ssize_t n;

	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	n = readlink(proc, got, sizeof got - 1);
	if (n < 0 || !want)
		return 0;
	got[n] = '\0';
	return strcmp(got, want) == 0;
}

/* the first O_CREAT open of the partial file: swap its dir for a link
 * to "secret" and refuse, as fs.protected_regular would */
static int swap_and_refuse(int dfd, const char *path, int flags)
{
	const char *pdir = getenv("PI_PDIR"), *held = getenv("PI_HELD");

	if (swapped || !pdir || !held || strcmp(path, "victim") != 0 || !(flags & O_CREAT) ||
	    (flags & O_ACCMODE) != O_WRONLY || !fd_is(dfd, pdir))
		return 0;
	if (rename(pdir, held) != 0 || symlink("secret", pdir) != 0)
		return 0;
	swapped = 1;
	mark("PI_EACCES_MARK");
	errno = EACCES;
	return -1;
}

static int do_openat(const char *name, int dfd, const char *path, int flags, mode_t mode)
{
	int (*real)(int, const char *, int, ...) = dlsym(RTLD_NEXT, name);
	if (swap_and_refuse(dfd, path, flags) < 0)
		return -1;
	return real(dfd, path, flags, mode);
}

int openat(int dfd, const char *path, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;
	va_start(ap, flags);
	if (flags & O_CREAT)
		mode = (mode_t)va_arg(ap, int);
	va_end(ap);
	return do_openat("openat", dfd, path, flags, mode);
}

int openat64(int dfd, const char *path, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;
	va_start(ap, flags);
	if (flags & O_CREAT)
		mode = (mode_t)va_arg(ap, int);
	va_end(ap);
	return do_openat("openat64", dfd, path, flags, mode);
}

/* the swapped link belongs to another user */
static void foreign(const char *path, unsigned *uid, mode_t m)
{
	if (swapped && strcmp(path, "pdir") == 0 && S_ISLNK(m)) {
		*uid = geteuid() + 1;
		mark("PI_FOREIGN_MARK");
	}
}

int fstatat(int dfd, const char *path, struct stat *st, int flags)
{
	int (*real)(int, const char *, struct stat *, int) = dlsym(RTLD_NEXT, "fstatat");
	int rc = real(dfd, path, st, flags);
	if (rc == 0)
		foreign(path, &st->st_uid, st->st_mode);
	return rc;
}

int fstatat64(int dfd, const char *path, struct stat64 *st, int flags)
{
	int (*real)(int, const char *, struct stat64 *, int) = dlsym(RTLD_NEXT, "fstatat64");
	int rc = real(dfd, path, st, flags);
	if (rc == 0)
		foreign(path, &st->st_uid, st->st_mode);
	return rc;
}
EOF
cc -shared -fPIC -o "$T/shim.so" "$T/shim.c" -ldl || { t_skip partial_retry "cannot build the shim"; t_done; }
LD_PRELOAD="$T/shim.so" "$FERRY" --version >/dev/null 2>&1 ||
    { t_skip partial_retry "the binary does not run under LD_PRELOAD"; t_done; }

# raced TAG TOOL -- the transfer under the shim; the partial dir restored
raced() {
    local b=$T/$1
    rm -rf "$b"
    mkdir -p "$b/src" "$b/mod/pdir" "$b/mod/secret"
    head -c 65536 /dev/zero | tr '\0' N >"$b/src/victim"
    head -c 65536 /dev/zero | tr '\0' O >"$b/mod/pdir/victim"
    head -c 65536 /dev/zero | tr '\0' S >"$b/mod/secret/victim"
    cp "$b/mod/secret/victim" "$b/secret.want"
    PI_PDIR="$b/mod/pdir" PI_HELD="$b/mod/held" PI_EACCES_MARK="$b/eacces" \
        PI_FOREIGN_MARK="$b/foreign" LD_PRELOAD="$T/shim.so" \
        "$2" -rtI --partial-dir=pdir --no-inc-recursive "$b/src/" "$b/mod/"
    echo "rc=$?"
    if [ -e "$b/mod/held" ]; then
        rm -f "$b/mod/pdir"
        mv "$b/mod/held" "$b/mod/pdir"
    fi
}
# refused TAG -- the race was run, the link was looked at and refused,
# and nothing was written through it
refused() {
    local b=$T/$1
    [ -e "$b/eacces" ] || { echo "$1: no EACCES was injected"; return 1; }
    cmp "$b/secret.want" "$b/mod/secret/victim" || { echo "$1: wrote through the link"; return 1; }
    [ -e "$b/foreign" ] || { echo "$1: the retry never looked at the partial dir"; return 1; }
}
raced race_rsync "$RSYNC"
t_check rsync_reference_refuses refused race_rsync
raced race_ferry "$FERRY"
t_check retry_refuses_swapped_partial_dir refused race_ferry
t_done
