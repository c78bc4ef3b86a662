#!/usr/bin/env bash
# --json is a contract (docs/json.md): stdout carries only JSON lines, the
# first a "start" event with "schema": 1, the last the one "end" event
# whose exit_code is the process's exit code, whatever ended the run:
# success, a usage error, a refused connection, a failed login, a missing
# source, a vanished file, --max-alloc (22), a timeout (30), a signal.
# That end event carries the run's totals (the stats event's, when one
# came). Every line goes through python's json.loads (json_check.py);
# names that are not UTF-8 carry their bytes in *_b64.
. "$(dirname "$0")/lib.sh"
t_setup
CHECK=$FERRY_SRC/tests/interop/json_check.py

mkdir -p "$T/src/sub" && echo a >"$T/src/a" && echo b >"$T/src/sub/b" &&
    printf 'x' >"$T/src/bad$(printf '\377')name" || t_fail setup "no source tree"
echo "Welcome to the json test daemon" >"$T/motd"
(umask 077 && echo alice:s3cret >"$T/secrets")
t_rsyncd_start rd "motd file = $T/motd
[src]
    path = $T/src
    comment = json source
    read only = yes
[up]
    path = $T/up
    read only = no
[sec]
    path = $T/src
    auth users = alice
    secrets file = $T/secrets" || t_fail rsyncd_start "no rsync daemon"
mkdir -p "$T/up" "$T/skip" && mkfifo "$T/skip/fifo" && echo f >"$T/skip/f" ||
    t_fail setup "no skip tree"

# run NAME RC_WANTED EVENT... -- CMD: run ferry --json ARGS (after --),
# then check its stdout and that it exited RC_WANTED
run() {
    local name=$1 want=$2 rc
    shift 2
    local events=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do events+=("$1"); shift; done
    shift
    "$FERRY" --json "$@" >"$T/$name.out" 2>"$T/$name.err" </dev/null
    rc=$?
    echo "$name: exit $rc"; cat "$T/$name.err"
    t_check "$name.exit" test "$rc" = "$want"
    t_check "$name.json" "$PYTHON" "$CHECK" "$T/$name.out" "$rc" "${events[@]}"
}

run local 0 item stats item.name_b64=YmFk/25hbWU end.files_transferred=3 end.total_size=5 \
    -- -a "$T/src/" "$T/d1/"
run quiet 0 stats -- -a -q "$T/src/" "$T/d8/"
run dry_run 0 start.dry_run=True end.dry_run=True -- -a -n "$T/src/" "$T/d2/"
touch "$T/d1/extra"
run delete 0 item.change=*deleting stats.files_deleted=1 -- -a --delete "$T/src/" "$T/d1/"
run created_dir 0 created_directory.name="$T/d3" -- -a -i "$T/src/" "$T/d3"
run pull 0 motd item.name=sub/b -- -a "rsync://127.0.0.1:$RSYNCD_PORT/src/" "$T/d4/"
t_check pull.same diff -r "$T/src" "$T/d4"
t_check pull.motd_not_human grep -q '"text":"Welcome to the json test daemon"' "$T/pull.out"
run push 0 item.name=sub/b stats -- -av "$T/src/" "rsync://127.0.0.1:$RSYNCD_PORT/up/"
t_check push.same diff -r "$T/src" "$T/up"
# a skipped file is a message naming it
run skip 0 message.path=fifo item.name=f -- -r "$T/skip/" "$T/d9/"
run listing 0 listing -- "rsync://127.0.0.1:$RSYNCD_PORT/"
run list_only 0 list_entry -- "rsync://127.0.0.1:$RSYNCD_PORT/src/"
t_check list_only.bad_name grep -q '"text_b64":' "$T/list_only.out"
t_check listing.module grep -q '"event":"listing","text":"src .*json source"' "$T/listing.out"
run usage 1 -- --no-such-option "$T/src/" "$T/d5/"
t_check usage.no_human_stdout test "$(grep -vc '^{' "$T/usage.out")" = 0
port=$(t_free_port)
run refused 10 end.files=0 -- -a "rsync://127.0.0.1:$port/src/" "$T/d6/"
RSYNC_PASSWORD=wrong run auth 5 end.error=RERR_STARTCLIENT message \
    -- -a "rsync://alice@127.0.0.1:$RSYNCD_PORT/sec/" "$T/d10/"
RSYNC_PASSWORD=s3cret run auth_ok 0 end.files_transferred=3 \
    -- -a "rsync://alice@127.0.0.1:$RSYNCD_PORT/sec/" "$T/d11/"

# A hostile daemon (evil_daemon.py): a list too big for --max-alloc (22),
# and a daemon that asks for a 2 s timeout, then says nothing (30).
# evil_run NAME SCENARIO RC EVENT... -- ARGS
evil_run() {
    local name=$1 scenario=$2 want=$3 port pid
    shift 3
    port=$(t_free_port) || return 1
    "$PYTHON" "$FERRY_SRC/tests/interop/evil_daemon.py" "$port" "$scenario" \
        >"$T/$name.evil.log" 2>&1 </dev/null &
    pid=$!
    t_track_pid "$pid"
    if t_wait_port "$port" 10 "$pid"; then
        local events=()
        while [ $# -gt 0 ] && [ "$1" != -- ]; do events+=("$1"); shift; done
        shift
        run "$name" "$want" "${events[@]}" -- "$@" --port="$port" 127.0.0.1::mod/ "$T/$name.d/"
    else
        t_fail "$name" "evil daemon did not start"
    fi
    _t_kill_pid "$pid"
    _t_untrack_pid "$pid"
}
evil_run max_alloc huge_flist 22 end.error=RERR_MALLOC -- -rlt --max-alloc=1M
evil_run timeout io_timeout 30 end.error=RERR_TIMEOUT -- -r --timeout=60
run missing 23 message.errno=2 message.role=sender message.path="$T/nosuch" -- -a "$T/nosuch" "$T/d7/"
# a file that cannot be put in place (a non-empty directory is in its
# way, 23) is a message, never an item; the other file is
mkdir -p "$T/mw" "$T/mwd/x/inner" && echo x >"$T/mw/x" && echo y >"$T/mw/y"
run makeway 23 message item.name=y -- -a "$T/mw/" "$T/mwd/"
t_check makeway.not_done test "$(grep -c '"event":"item","name":"x"' "$T/makeway.out")" = 0

# A slow big file first (--bwlimit), then "zz": once the big file's temp
# file has data, zz is still to be sent -- removed now it vanished (24);
# a SIGTERM instead stops the run (20).
slow_src() {
    rm -rf "$T/slow" && mkdir -p "$T/slow" && head -c 3000000 /dev/urandom >"$T/slow/big" &&
        echo z >"$T/slow/zz"
}
wait_temp() {
    local i
    for i in $(seq 200); do
        find "$1" -name '.big.*' -size +0 2>/dev/null | grep -q . && return 0
        sleep 0.1
    done
    return 1
}
# slow_run NAME ACTION: ACTION is "vanish", "signal" or "signal2"
slow_run() {
    local name=$1 pid rc
    slow_src || return 1
    mkdir -p "$T/$name.d"
    "$FERRY" --json -a --bwlimit=1000 "$T/slow/" "$T/$name.d/" \
        >"$T/$name.out" 2>"$T/$name.err" </dev/null &
    pid=$!
    t_track_pid "$pid"
    wait_temp "$T/$name.d" || { kill -KILL "$pid"; echo "no temp file"; return 1; }
    case $2 in
    vanish) rm -f "$T/slow/zz" ;;
    signal) kill -TERM "$pid" ;;
    # a second signal forces the exit at once, or finds the run ended
    signal2) kill -TERM "$pid" && kill -INT "$pid" ;;
    esac
    wait "$pid"
    rc=$?
    echo "$name: exit $rc"; cat "$T/$name.err"
    echo "$rc" >"$T/$name.rc"
}
if t_check vanished.run slow_run vanished vanish; then
    t_check vanished.exit test "$(cat "$T/vanished.rc")" = 24
    t_check vanished.json "$PYTHON" "$CHECK" "$T/vanished.out" 24 message end.error=RERR_VANISHED
    # the file that vanished is never reported as an item
    t_check vanished.not_done test "$(grep -c '"name":"zz"' "$T/vanished.out")" = 0
    t_check vanished.big_done grep -q '"event":"item","name":"big"' "$T/vanished.out"
fi
if t_check signal.run slow_run signal signal; then
    t_check signal.exit test "$(cat "$T/signal.rc")" = 20
    t_check signal.json "$PYTHON" "$CHECK" "$T/signal.out" 20 end.error=RERR_SIGNAL
fi
if t_check signal2.run slow_run signal2 signal2; then
    t_check signal2.exit test "$(cat "$T/signal2.rc")" = 20
    t_check signal2.json "$PYTHON" "$CHECK" "$T/signal2.out" 20 end.error=RERR_SIGNAL
fi
t_done
