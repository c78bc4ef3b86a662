#!/usr/bin/env bash
# --timeout and keep-alives (rsync io.c: maybe_send_keepalive). A side that
# is busy, or waiting on a busy peer, sends an empty MSG_DATA frame every
# half --timeout, so a healthy transfer that stays silent longer than the
# timeout goes through; a peer that really stalls (SIGSTOP) still ends the
# transfer with exit 30.
#
# The silent phase is made deterministically, without burning CPU: an
# LD_PRELOAD shim makes every stat of a "slow_*" name sleep, and only the
# receiving side (its generator, scanning unchanged files) gets it. 16
# files x 250 ms keep that side busy for at least 3 s, longer than
# --timeout=2.
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_setup
t_require cc

TIMEOUT=2
MIN_SILENT=3 # seconds the slowed side needs at least (12 x 250 ms)

cat >"$T/slowfs.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* SLOWFS_IN: only names under a directory whose path holds this text */
static int in_scope(int dirfd, const char *path)
{
	const char *want = getenv("SLOWFS_IN");
	char link[64], dir[4096];
	ssize_t n;

	if (!want || strstr(path, want))
		return 1;
	if (path[0] == '/')
		return 0;
	if (dirfd == AT_FDCWD)
		return getcwd(dir, sizeof dir) && strstr(dir, want);
	snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
	n = readlink(link, dir, sizeof dir - 1);
	if (n < 0)
		return 0;
	dir[n] = 0;
	return strstr(dir, want) != NULL;
}

static void slow(int dirfd, const char *path)
{
	const char *base;
	struct timespec ts = {0, 250 * 1000000L};

	if (!path)
		return;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (strncmp(base, "slow_", 5) != 0 || !in_scope(dirfd, path))
		return;
	while (nanosleep(&ts, &ts) != 0)
		;
}

#define REAL(name) static __typeof__(name) *real; if (!real) real = dlsym(RTLD_NEXT, #name)
int fstatat(int d, const char *p, struct stat *st, int f) { REAL(fstatat); slow(d, p); return real(d, p, st, f); }
int fstatat64(int d, const char *p, struct stat64 *st, int f) { REAL(fstatat64); slow(d, p); return real(d, p, st, f); }
int lstat(const char *p, struct stat *st) { REAL(lstat); slow(AT_FDCWD, p); return real(p, st); }
int lstat64(const char *p, struct stat64 *st) { REAL(lstat64); slow(AT_FDCWD, p); return real(p, st); }
int stat(const char *p, struct stat *st) { REAL(stat); slow(AT_FDCWD, p); return real(p, st); }
int stat64(const char *p, struct stat64 *st) { REAL(stat64); slow(AT_FDCWD, p); return real(p, st); }
C
if ! cc -shared -fPIC -O2 -o "$T/slowfs.so" "$T/slowfs.c" -ldl; then
    t_skip "$(basename "$0" .sh)" "cannot build the LD_PRELOAD shim"
    t_done
fi
SLOW=$T/slowfs.so
# an ASan build insists on coming first; the shim does not care
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"

mkdir -p "$T/src"
for i in $(seq -w 1 12); do echo "data $i" >"$T/src/slow_$i"; done

# fresh NAME -- $T/NAME: an up-to-date copy of src (nothing to transfer,
# so the receiver's generator only scans, silently).
fresh() {
    rm -rf "${T:?}/$1"
    cp -a "$T/src" "$T/$1"
}

# timed OUT CMD... -- run CMD; its exit code in OUT.rc, seconds in OUT.secs.
timed() {
    local out=$1 t0 t1
    shift
    t0=$(date +%s%N)
    "$@" >"$out.log" 2>&1 </dev/null
    echo $? >"$out.rc"
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000000000)) >"$out.secs"
}

# quiet_ok OUT -- the run succeeded, and was silent long enough to need
# the keep-alives (else the test proved nothing).
quiet_ok() {
    local rc secs
    rc=$(cat "$1.rc") secs=$(cat "$1.secs")
    if [ "$rc" != 0 ]; then
        echo "exit $rc after ${secs}s:"
        tail -n 5 "$1.log"
        return 1
    fi
    [ "$secs" -ge "$MIN_SILENT" ] || { echo "took only ${secs}s: no silent phase"; return 1; }
}

MODS="[m]
path = $T/dm
read only = no"

# -------------------------------------------------- a healthy silent peer

# rsync's daemon receives, its generator busy: ferry's sender must take
# rsync's keep-alives and keep its own clock going.
fresh dm
LD_PRELOAD=$SLOW t_rsyncd_start slowr "$MODS" || { t_fail rsyncd "did not start"; t_done; }
timed "$T/push_rsyncd" "$FERRY" -a --timeout=$TIMEOUT "$T/src/" "rsync://127.0.0.1:$RSYNCD_PORT/m/"
t_check push_to_rsyncd_busy_generator quiet_ok "$T/push_rsyncd"
t_rsyncd_stop

# ferry's daemon receives, its generator busy: rsync's sender waits.
fresh dm
LD_PRELOAD=$SLOW t_ferryd_start slowf "$MODS" || { t_fail ferryd "did not start"; t_done; }
timed "$T/rsync_push" "$RSYNC" -a --timeout=$TIMEOUT "$T/src/" "rsync://127.0.0.1:$FERRYD_PORT/m/"
t_check rsync_push_to_ferryd_busy_generator quiet_ok "$T/rsync_push"
# and ferry's sender waits on ferry's generator: both keep-alive ends ours
fresh dm
timed "$T/ferry_push" "$FERRY" -a --timeout=$TIMEOUT "$T/src/" "rsync://127.0.0.1:$FERRYD_PORT/m/"
t_check ferry_push_to_ferryd_busy_generator quiet_ok "$T/ferry_push"
t_ferryd_stop

# the client receives and is the busy one; the daemon's sender (which got
# --timeout from the client) waits on it
fresh dm
t_rsyncd_start plainr "$MODS" || { t_fail rsyncd "did not start"; t_done; }
fresh dst
timed "$T/pull_rsyncd" env LD_PRELOAD="$SLOW" "$FERRY" -a --timeout=$TIMEOUT \
    "rsync://127.0.0.1:$RSYNCD_PORT/m/" "$T/dst/"
t_check pull_from_rsyncd_busy_generator quiet_ok "$T/pull_rsyncd"
t_rsyncd_stop

t_ferryd_start plainf "$MODS" || { t_fail ferryd "did not start"; t_done; }
fresh dst
timed "$T/rsync_pull" env LD_PRELOAD="$SLOW" "$RSYNC" -a --timeout=$TIMEOUT \
    "rsync://127.0.0.1:$FERRYD_PORT/m/" "$T/dst/"
t_check rsync_pull_from_ferryd_busy_generator quiet_ok "$T/rsync_pull"
fresh dst
timed "$T/ferry_pull" env LD_PRELOAD="$SLOW" "$FERRY" -a --timeout=$TIMEOUT \
    "rsync://127.0.0.1:$FERRYD_PORT/m/" "$T/dst/"
t_check ferry_pull_from_ferryd_busy_generator quiet_ok "$T/ferry_pull"
t_ferryd_stop

# protocol 29: rsync's sender writes to the daemon unmultiplexed, so it
# cannot keep-alive; our generator's own writes keep our clock (as rsync's)
fresh dm
LD_PRELOAD=$SLOW t_ferryd_start slowf29 "$MODS" || { t_fail ferryd "did not start"; t_done; }
timed "$T/rsync_push29" "$RSYNC" -a --protocol=29 --timeout=$TIMEOUT \
    "$T/src/" "rsync://127.0.0.1:$FERRYD_PORT/m/"
t_check rsync_push_to_ferryd_protocol29 quiet_ok "$T/rsync_push29"
t_ferryd_stop

# a local transfer: only the destination's stats are slow
fresh dst
timed "$T/local" env SLOWFS_IN=/dst LD_PRELOAD="$SLOW" "$FERRY" -a --timeout=$TIMEOUT \
    "$T/src/" "$T/dst/"
t_check local_busy_generator quiet_ok "$T/local"

# --------------------------------------------------------- a stalled peer

# 8 MB sent at 1 MB/s: the transfer is surely under way when the peer is
# stopped, and far from done.
mkdir -p "$T/big"
head -c 8M /dev/urandom >"$T/big/file"
BIGMOD="[big]
path = $T/big
[in]
path = $T/in
read only = no"

# descendants PID -- PID's children and theirs.
descendants() {
    local c
    for c in $(pgrep -P "$1"); do
        echo "$c"
        descendants "$c"
    done
}

# wait_temp DIR -- until a temp file (.NAME.XXXXXX) shows in DIR (the
# receiver is writing), at most 10 s.
wait_temp() {
    local i
    for i in $(seq 100); do
        compgen -G "$1/.file.*" >/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# stalled NAME DAEMON_PID DEST_DIR CMD... -- run CMD in the background,
# SIGSTOP the daemon's connection processes once the transfer writes DEST,
# and expect CMD to exit 30 within 20 s.
stalled() {
    local name=$1 dpid=$2 dest=$3 pid kids i c rc=none
    shift 3
    "$@" >"$T/$name.log" 2>&1 </dev/null &
    pid=$!
    t_track_pid "$pid"
    if ! wait_temp "$dest"; then
        t_fail "$name" "the transfer never started"
        return
    fi
    kids=$(descendants "$dpid")
    # shellcheck disable=SC2086
    [ -n "$kids" ] && kill -STOP $kids 2>/dev/null
    for i in $(seq 200); do
        t_pid_alive "$pid" || break
        sleep 0.1
    done
    if ! t_pid_alive "$pid"; then
        wait "$pid"
        rc=$?
    fi
    # shellcheck disable=SC2086
    [ -n "$kids" ] && kill -CONT $kids 2>/dev/null
    if [ "$rc" = 30 ] && grep -q "timeout" "$T/$name.log"; then
        t_pass "$name"
    else
        t_fail "$name" "exit $rc, expected 30 ($(tail -n 2 "$T/$name.log"))"
    fi
    _t_kill_pid "$pid"
    # the continued processes find their peer gone (or time out) and end
    for c in $kids; do
        _t_kill_pid "$c"
    done
}

mkdir -p "$T/in" "$T/pulled"
t_rsyncd_start stallr "$BIGMOD" || { t_fail rsyncd "did not start"; t_done; }
stalled pull_from_stopped_rsyncd "$RSYNCD_PID" "$T/pulled" \
    "$FERRY" -a --timeout=$TIMEOUT --bwlimit=1000 "rsync://127.0.0.1:$RSYNCD_PORT/big/" "$T/pulled/"
stalled push_to_stopped_rsyncd "$RSYNCD_PID" "$T/in" \
    "$FERRY" -a --timeout=$TIMEOUT --bwlimit=1000 "$T/big/" "rsync://127.0.0.1:$RSYNCD_PORT/in/"
t_rsyncd_stop

rm -rf "$T/in" "$T/pulled"
mkdir -p "$T/in" "$T/pulled"
t_ferryd_start stallf "$BIGMOD" || { t_fail ferryd "did not start"; t_done; }
stalled pull_from_stopped_ferryd "$FERRYD_PID" "$T/pulled" \
    "$FERRY" -a --timeout=$TIMEOUT --bwlimit=1000 "rsync://127.0.0.1:$FERRYD_PORT/big/" "$T/pulled/"
stalled push_to_stopped_ferryd "$FERRYD_PID" "$T/in" \
    "$FERRY" -a --timeout=$TIMEOUT --bwlimit=1000 "$T/big/" "rsync://127.0.0.1:$FERRYD_PORT/in/"
t_ferryd_stop

t_done
