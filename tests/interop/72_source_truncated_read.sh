#!/bin/bash
# A regular source truncated between its listing and its first read is
# a per-file failure, compared with rsync 3.5.0 doing the same: the sender
# reports "read errors mapping", the run ends with exit 23, and the files
# listed after it are still transferred. An LD_PRELOAD shim truncates the
# file at the first read() of a descriptor open on it, so the sizes the
# list and fstat saw stay stale with no race (rsync's testsuite:
# source-change-size-continues).
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" cc
t_setup

cat >"$T/shim.c" <<'EOF'
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int done;

static int fd_is(int fd, const char *want)
{
	char proc[64], got[PATH_MAX];
	ssize_t n;

	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	n = readlink(proc, got, sizeof got - 1);
	if (n < 0)
		return 0;
	got[n] = '\0';
	return strcmp(got, want) == 0;
}

ssize_t read(int fd, void *buf, size_t count)
{
	static ssize_t (*real_read)(int, void *, size_t);
	const char *target = getenv("SHRINK_TARGET");

	if (!real_read)
		real_read = (ssize_t (*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
	if (!done && target && fd_is(fd, target)) {
		done = 1;
		if (truncate(target, 0) == 0 && getenv("SHRINK_MARK"))
			close(open(getenv("SHRINK_MARK"), O_WRONLY | O_CREAT, 0600));
	}
	return real_read(fd, buf, count);
}
EOF
cc -shared -fPIC -o "$T/shim.so" "$T/shim.c" -ldl || { t_skip truncated_read "cannot build the shim"; t_done; }
# a sanitizer build insists on its runtime coming first
LD_PRELOAD="$T/shim.so" "$FERRY" --version >/dev/null 2>&1 ||
    { t_skip truncated_read "the binary does not run under LD_PRELOAD"; t_done; }
t_fakessh "$T/fakessh"

# run TAG HOST CMD... -- a fresh src (the file to truncate first in the list),
# an empty destination, CMD under the shim; output in $T/TAG.out, exit
# status in $T/TAG.rc
run() {
    local tag=$1 host=$2
    shift 2
    rm -rf "$T/src" "$T/$tag.dst" "$T/mark"
    mkdir -p "$T/src" "$T/$tag.dst"
    head -c 1048576 /dev/urandom >"$T/src/01-changing.bin"
    echo 'later file must still transfer' >"$T/src/02-later.txt"
    SHRINK_TARGET="$T/src/01-changing.bin" SHRINK_MARK="$T/mark" LD_PRELOAD="$T/shim.so" \
        "$@" "$host$T/src/" "$T/$tag.dst/" >"$T/$tag.out" 2>&1
    echo $? >"$T/$tag.rc"
    cat "$T/$tag.out"
    [ -e "$T/mark" ] || echo "$tag: the shim never saw a read() of the source"
}

# check TAG -- what rsync does: exit 23, the sender's diagnosis, the later
# file in place
check() {
    local tag=$1
    [ -e "$T/mark" ] &&
        [ "$(cat "$T/$tag.rc")" = 23 ] &&
        grep -Eq 'read errors mapping "[^"]*01-changing\.bin": No data available \(61\)' "$T/$tag.out" &&
        cmp -s "$T/src/02-later.txt" "$T/$tag.dst/02-later.txt"
}

run rsync_local "" "$RSYNC" -a --no-whole-file
t_check rsync_reference check rsync_local
run local "" "$FERRY" -a --no-whole-file
t_check local_copy_is_23_and_continues check local
run whole "" "$FERRY" -a --whole-file
t_check whole_file_is_23_and_continues check whole
# ferry as the server's sender, a real rsync receiving
run pull_from_ferry host: "$RSYNC" -a --no-whole-file -e "$T/fakessh" --rsync-path="$FERRY"
t_check ferry_server_sender_is_23_and_continues check pull_from_ferry
t_done
