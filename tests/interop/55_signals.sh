#!/bin/bash
# SIGINT, SIGTERM and SIGHUP end a transfer (rsync.c: sig_int): the
# signalled process exits 20, rsync's closing line "... received SIGINT,
# SIGTERM, or SIGHUP (code 20) at FILE(LINE) [ROLE=VERSION]" reaches the
# user (or the daemon's log), and no temp file is left in the destination
# (with --partial the partial file stays). Every mode: a local copy, a
# background job that inherited SIGINT as ignored, a client pulling from
# and pushing to a daemon and over a remote shell (a stand-in, and sshd
# when it can run), --server behind a remote shell and a daemon's
# per-connection child. Each case runs with
# real rsync as well and must pass the same checks there, so the test
# proves itself. A transfer is slowed with --bwlimit, and the signal goes
# out once its temp file exists; every wait is bounded.
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON" setsid
t_setup

if [ ! -x "$FERRY" ]; then
    t_skip "$(_t_script_name)" "ferry binary not found: $FERRY"
    t_done
fi

SIZE=$((24 * 1048576))
BW=--bwlimit=1000 # KiB/s: about 24 s for the whole file
mkdir -p "$T/src" "$T/up"
head -c "$SIZE" /dev/urandom >"$T/src/big"
t_fakessh "$T/fakessh"
LINE_RE='^(rsync|ferry) error: received SIGINT, SIGTERM, or SIGHUP \(code 20\) at [^ ]+\([0-9]+\) \['

t_rsyncd_start rd "[up]
path = $T/up
read only = no
[down]
path = $T/src" || t_fail rsyncd_start "no rsync daemon"
PEER_PORT=$RSYNCD_PORT
PEER_LOG=$T/rd.log

# descendants PID -- every process below PID, one per line
descendants() {
    local c
    for c in $(pgrep -P "$1"); do
        [ "$c" = "$BASHPID" ] && continue # the $(...) asking
        echo "$c"
        descendants "$c"
    done
}

# kill_tree PID -- KILL PID and everything below it, and reap PID
kill_tree() {
    local p
    for p in $(descendants "$1") "$1"; do
        kill -KILL "$p" 2>/dev/null
    done
    wait "$1" 2>/dev/null
}

# wait_gone PID SECS -- until PID is gone; false after SECS seconds
wait_gone() {
    local i
    for i in $(seq $(($2 * 10))); do
        t_pid_alive "$1" || return 0
        sleep 0.1
    done
    return 1
}

# wait_temp DIR -- until a temp file (.NAME.XXXXXX) in DIR has data (so
# that --partial has something to keep), at most 20 s
wait_temp() {
    local i
    for i in $(seq 200); do
        find "$1" -name '.big.*' -size +0 2>/dev/null | grep -q . && return 0
        sleep 0.1
    done
    return 1
}

temps_in() { find "$1" -name '.big.*' 2>/dev/null; }

# server_below PID -- the newest process below PID running " --server"
server_below() {
    local q a found=""
    for q in $(descendants "$1"); do
        a=$(ps -o args= -p "$q" 2>/dev/null)
        case $a in *" --server"*) found=$q ;; esac
    done
    [ -n "$found" ] && echo "$found"
}

# interrupt SIG WHO WATCH CMD... -- start CMD, wait for the temp file in
# WATCH, send SIG to WHO (client: CMD itself; server:PID: the --server
# process below PID; child:PID: the newest child of the daemon PID), and
# wait for CMD and the signalled process to end. Sets RC (CMD's exit
# status), VICTIM_GONE, and leaves CMD's stderr in $T/err.
interrupt() {
    local sig=$1 who=$2 watch=$3 pid victim="" i
    shift 3
    mkdir -p "$watch" || return 1
    "$@" >"$T/out" 2>"$T/err" </dev/null &
    pid=$!
    RC=-1 VICTIM_GONE=no
    if ! wait_temp "$watch"; then
        echo "no temp file with data appeared in $watch:"
        ls -la "$watch"
        cat "$T/err"
        kill_tree "$pid"
        return 1
    fi
    case $who in
    client) victim=$pid ;;
    server:*) for i in $(seq 50); do victim=$(server_below "${who#server:}") && break; sleep 0.1; done ;;
    child:*) victim=$(pgrep -n -P "${who#child:}") ;;
    esac
    if [ -z "$victim" ]; then
        echo "no process to signal ($who)"
        kill_tree "$pid"
        return 1
    fi
    kill "-$sig" "$victim"
    if ! wait_gone "$pid" 30; then
        echo "still running 30 s after SIG$sig"
        kill_tree "$pid"
    fi
    wait "$pid"
    RC=$?
    wait_gone "$victim" 10 && VICTIM_GONE=yes
    echo "rc $RC; stderr:"
    cat "$T/err"
    return 0
}

no_temp_left() { # DIR
    local left
    left=$(temps_in "$1")
    [ -z "$left" ] || { echo "left behind: $left"; return 1; }
}

said_code20() { grep -Eq "$LINE_RE" "$1" || { echo "no code-20 line in $1"; return 1; }; }

# logged_code20 LOG -- a daemon's log gets the line (after its date and
# pid) when its side of the connection ends, at most 10 s from now
logged_code20() {
    local i
    for i in $(seq 100); do
        grep -Eq "\] ${LINE_RE#^}" "$1" && return 0
        sleep 0.1
    done
    echo "no code-20 line in $1:"
    cat "$1"
    return 1
}

# A signalled client: exit 20, its closing line, no temp file. ROLE is
# who_am_i()'s word for the client's part.
client_case() { # NAME BIN SIG ROLE WATCH ARGS...
    local name=$1 bin=$2 sig=$3 role=$4 watch=$5
    shift 5
    t_check "$name" interrupt "$sig" client "$watch" "$bin" "$@" || return
    t_check "$name.exit20" test "$RC" = 20
    t_check "$name.line" grep -Eq "$LINE_RE$role=" "$T/err"
    t_check "$name.no_temp" no_temp_left "$watch"
    t_check "$name.not_placed" test ! -e "$watch/big"
}

# A signalled server or daemon child: it is gone, no temp file is left,
# and the client failed.
server_case() { # NAME BIN SIG WHO WATCH ARGS...
    local name=$1 bin=$2 sig=$3 who=$4 watch=$5
    shift 5
    t_check "$name" interrupt "$sig" "$who" "$watch" "$bin" "$@" || return
    t_check "$name.client_failed" test "$RC" -ne 0
    t_check "$name.server_gone" test "$VICTIM_GONE" = yes
    t_check "$name.no_temp" no_temp_left "$watch"
    t_check "$name.not_placed" test ! -e "$watch/big"
}

# Every case writes to a directory of its own (NAME below $T/dst or
# $T/up), so that nothing a case leaves running can touch the next one.
for bin in "$RSYNC" "$FERRY"; do
    b=$(basename "$bin")
    # ---- a local copy, each signal
    for sig in INT TERM HUP; do
        n=$b.local.$sig
        client_case "$n" "$bin" "$sig" sender "$T/dst/$n" -a $BW "$T/src/" "$T/dst/$n/"
    done
    # ... the whole process group, as Ctrl-C in a terminal signals it
    n=$b.local.group
    t_check "$n" interrupt INT client "$T/dst/$n" setsid "$bin" -a $BW "$T/src/" "$T/dst/$n/"
    t_check "$n.exit20" test "$RC" = 20
    t_check "$n.line" grep -Eq "$LINE_RE" "$T/err"
    t_check "$n.no_temp" no_temp_left "$T/dst/$n"
    # ... --partial keeps what arrived under the file's name
    n=$b.local.partial
    if t_check "$n" interrupt TERM client "$T/dst/$n" "$bin" -a --partial $BW \
        "$T/src/" "$T/dst/$n/"; then
        t_check "$n.exit20" test "$RC" = 20
        t_check "$n.no_temp" no_temp_left "$T/dst/$n"
        t_check "$n.kept" test -s "$T/dst/$n/big"
        t_check "$n.short" test "$(stat -c %s "$T/dst/$n/big" 2>/dev/null)" -lt "$SIZE"
        # ... dated 1970, so that --update never takes it for newer
        t_check "$n.epoch" test "$(stat -c %Y "$T/dst/$n/big" 2>/dev/null)" = 0
    fi
    # ... and --partial-dir keeps it there, the destination untouched
    n=$b.local.partial_dir
    if t_check "$n" interrupt INT client "$T/dst/$n" "$bin" -a --partial-dir=.part $BW \
        "$T/src/" "$T/dst/$n/"; then
        t_check "$n.exit20" test "$RC" = 20
        t_check "$n.no_temp" no_temp_left "$T/dst/$n"
        t_check "$n.kept" test -s "$T/dst/$n/.part/big"
        t_check "$n.not_placed" test ! -e "$T/dst/$n/big"
    fi
    # ---- a background job of a non-interactive shell: SIGINT ignored
    n=$b.bg_sigint_ignored
    client_case "$n" sh "INT" sender "$T/dst/$n" -c \
        "trap '' INT; exec \"\$0\" \"\$@\"" "$bin" -a $BW "$T/src/" "$T/dst/$n/"

    # ---- a client of a daemon (real rsync's): the daemon logs code 20 too
    : >"$PEER_LOG"
    n=$b.pull_daemon
    client_case "$n" "$bin" INT generator "$T/dst/$n" -a $BW \
        "rsync://127.0.0.1:$PEER_PORT/down/" "$T/dst/$n/"
    # real rsync's daemon sometimes hits the reset connection before the
    # client's MSG_ERROR_EXIT (it logs code 10 then); ferry reads on until
    # the daemon hangs up, so its daemon always learns why
    [ "$bin" = "$FERRY" ] && t_check "$n.peer_log" logged_code20 "$PEER_LOG"
    : >"$PEER_LOG"
    n=$b.push_daemon
    client_case "$n" "$bin" TERM sender "$T/up/$n" -a $BW \
        "$T/src/" "rsync://127.0.0.1:$PEER_PORT/up/$n/"
    t_check "$n.peer_log" logged_code20 "$PEER_LOG"

    # ---- a client over a remote shell (the remote end is real rsync)
    n=$b.pull_rsh
    client_case "$n" "$bin" HUP generator "$T/dst/$n" -a $BW -e "$T/fakessh" \
        --rsync-path="$RSYNC" "h:$T/src/" "$T/dst/$n/"
    n=$b.push_rsh
    client_case "$n" "$bin" INT sender "$T/up/$n" -a $BW -e "$T/fakessh" \
        --rsync-path="$RSYNC" "$T/src/" "h:$T/up/$n/"

    # ---- --server behind a remote shell, real rsync the client: the
    # client shows the server's closing line (its exit code is 20 or,
    # when its generator sees the connection close first, 12: real rsync
    # itself races there)
    for dir in push pull; do
        n=$b.server_$dir
        if [ $dir = push ]; then
            args=("$T/src/" "h:$T/up/$n/") watch=$T/up/$n sig=TERM
        else
            args=("h:$T/src/" "$T/dst/$n/") watch=$T/dst/$n sig=HUP
        fi
        server_case "$n" "$RSYNC" "$sig" "server:$$" "$watch" -a $BW \
            -e "$T/fakessh" --rsync-path="$bin" "${args[@]}"
                t_check "$n.line" said_code20 "$T/err"
    done
done

# ---- the same over a real sshd, when one can run: the client, and the
# --server process that sshd started
t_sshd_start
case $? in
0)
    for bin in "$RSYNC" "$FERRY"; do
        b=$(basename "$bin")
        n=$b.ssh_client_push
        client_case "$n" "$bin" INT sender "$T/up/$n" -a $BW -e "$SSH_CMD" \
            --rsync-path="$RSYNC" "$T/src/" "127.0.0.1:$T/up/$n/"
        n=$b.ssh_server_push
        server_case "$n" "$RSYNC" TERM "server:$SSHD_PID" "$T/up/$n" -a $BW \
            -e "$SSH_CMD" --rsync-path="$bin" "$T/src/" "127.0.0.1:$T/up/$n/"
                t_check "$n.line" said_code20 "$T/err"
    done
    ;;
2) t_skip ssh "$T_SKIP_REASON" ;;
*) t_fail ssh "sshd did not start" ;;
esac

# ---- a daemon's child, real rsync the client: the child logs code 20,
# the listener stays up
for bin in "$RSYNC" "$FERRY"; do
    b=$(basename "$bin")
    if [ "$bin" = "$RSYNC" ]; then
        port=$PEER_PORT dpid=$RSYNCD_PID log=$PEER_LOG
    else
        t_ferryd_start fd "[up]
path = $T/up
read only = no
[down]
path = $T/src" || { t_fail ferryd_start "no ferry daemon"; continue; }
        port=$FERRYD_PORT dpid=$FERRYD_PID log=$T/fd.log
    fi
    : >"$log"
    n=$b.daemon_child_push
    server_case "$n" "$RSYNC" TERM "child:$dpid" "$T/up/$n" -a $BW \
        "$T/src/" "rsync://127.0.0.1:$port/up/$n/"
    t_check "$n.log" logged_code20 "$log"
    : >"$log"
    n=$b.daemon_child_pull
    server_case "$n" "$RSYNC" INT "child:$dpid" "$T/dst/$n" -a $BW \
        "rsync://127.0.0.1:$port/down/" "$T/dst/$n/"
    t_check "$n.log" logged_code20 "$log"
        t_check "$n.line" said_code20 "$T/err"
    t_check "$b.daemon_listener_up" t_pid_alive "$dpid"
done

t_no_sanitizer_reports "$T/fd.out"

# Nothing a case started may outlive the test: stop the daemons, then
# wait (at most 10 s) for what they and the clients started to end.
t_rsyncd_stop "$RSYNCD_PID"
[ -n "${FERRYD_PID:-}" ] && t_ferryd_stop "$FERRYD_PID"
[ -n "${SSHD_PID:-}" ] && t_rsyncd_stop "$SSHD_PID"
all_ended() {
    local left
    for _ in $(seq 100); do
        left=$(descendants $$)
        [ -z "$left" ] && return 0
        sleep 0.1
    done
    echo "still running:"
    # shellcheck disable=SC2086
    ps -o pid,ppid,args -p $left
    return 1
}
t_check all_ended all_ended
t_done
