#!/bin/bash
# The ferry daemon under load and abuse by real rsync clients: 20 clients
# pulling one module at once all get the whole tree; a pull and a push
# killed with SIGKILL in the middle of a large file leave the daemon
# serving, no connection process behind, and (push) no temp file and no
# truncated file under the final name -- as a real rsync daemon leaves it.
# Then `make run`'s command (the built-in config, FERRY_ROOT/FERRY_PORT) is
# listed and pulled from by real rsync. Last, the config checks 30 does
# not cover, each against a real rsync daemon with the same config: refuse
# options, strict modes on a world-readable secrets file, and the module's
# exclude on a pull by name and on a push.
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON"
t_setup

if [ ! -x "$FERRY" ]; then
    t_skip "$(_t_script_name)" "ferry binary not found: $FERRY"
    t_done
fi

# A root daemon runs [files] of the built-in config as nobody, which must
# be able to reach FERRY_ROOT below $T (mktemp makes $T 0700).
[ "$(id -u)" = 0 ] && chmod 0711 "$T"

SRC=$T/src      # the standard tree
BIG=$T/bigsrc   # one 64 MiB file, for the killed transfers
UP=$T/up        # push target of ferry
UPR=$T/upr      # push target of rsync
PUB=$T/pub      # world-readable tree for the built-in config
t_check mktree t_mktree "$SRC" || t_done
mkdir -p "$BIG" "$UP" "$UPR" "$PUB/d"
head -c $((64 * 1048576)) /dev/urandom >"$BIG/big.bin"
(umask 022 && echo "one" >"$PUB/one.txt" && seq 1 50000 >"$PUB/d/seq.txt" &&
    head -c 300000 /dev/urandom >"$PUB/d/rand.bin")
(umask 077 && printf 'alice:apw\n' >"$T/secrets")
cp "$T/secrets" "$T/secrets.open" && chmod 0644 "$T/secrets.open"

MODULES="
[pub]
    path = $SRC
[big]
    path = $BIG
[up]
    path = @UP@
    read only = no
[refuse]
    path = $SRC
    refuse options = checksum delete compress
[strict]
    path = $SRC
    auth users = alice
    secrets file = $T/secrets.open
[lax]
    path = $SRC
    auth users = alice
    secrets file = $T/secrets.open
    strict modes = no
[excl]
    path = @UP@
    read only = no
    exclude = *.bin secret/
"
if ! t_ferryd_start fd35 "${MODULES//@UP@/$UP}"; then
    t_fail ferryd_start "ferry daemon did not start"
    t_done
fi
if ! t_rsyncd_start rd35 "${MODULES//@UP@/$UPR}"; then
    t_fail rsyncd_start "real rsync daemon did not start"
    t_done
fi
t_pass daemons_started
FURL=rsync://127.0.0.1:$FERRYD_PORT
RURL=rsync://127.0.0.1:$RSYNCD_PORT

CLEAN_ENV=(env -u RSYNC_PASSWORD -u USER -u LOGNAME -u RSYNC_PORT -u RSYNC_CONNECT_PROG)

# children PID -- the daemon's connection processes.
children() { pgrep -P "$1" | tr '\n' ' '; }

# wait_idle PID -- until the daemon has no connection process (10 s).
wait_idle() {
    local _
    for _ in $(seq 100); do
        [ -z "$(children "$1")" ] && return 0
        sleep 0.1
    done
    echo "connection processes still running: $(children "$1")"
    ps -o pid,stat,etime,args -p "$(children "$1" | tr ' ' ',')0" 2>/dev/null
    return 1
}

# ------------------------------------------------------------ 20 at once

check_concurrent() {
    local i pids=() bad=0
    for i in $(seq 1 20); do
        run "$T/conc$i" "$RSYNC" -aH "$FURL/pub/" "$T/conc$i/" &
        pids+=($!)
    done
    wait "${pids[@]}"
    for i in $(seq 1 20); do
        if ! ok "$T/conc$i" || ! t_compare "$SRC" "$T/conc$i" --nsec --max 3; then
            echo "client $i failed"
            bad=1
        fi
    done
    wait_idle "$FERRYD_PID" || bad=1
    return "$bad"
}
t_check concurrent_20_pulls check_concurrent

# ------------------------------------------------------------ killed pulls

# A connect program that relays at 8 MiB/s each way, so a 64 MiB transfer
# is still running when it is killed (RSYNC_CONNECT_PROG runs it with the
# shell). Real rsync's --bwlimit would do for a push, but the client
# forwards it, and ferry's daemon does not take --bwlimit yet.
cat >"$T/slow.py" <<'EOF'
import os, select, socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
rate, start, moved = 8 << 20, time.monotonic(), 0
ins = [0, s]
while True:
    r, _, _ = select.select(ins, [], [])
    d = b""
    if 0 in r:
        d = os.read(0, 65536)
        if d:
            s.sendall(d)
        else:
            s.shutdown(socket.SHUT_WR)
            ins.remove(0)
    if s in r:
        d = s.recv(65536)
        if not d:
            break
        os.write(1, d)
    moved += len(d)
    ahead = moved / rate - (time.monotonic() - start)
    if ahead > 0:
        time.sleep(ahead)
EOF

# start_killable OUT PORT RSYNC-ARGS... -- real rsync through slow.py to
# 127.0.0.1:PORT (so the URLs name no port), in its own process group so
# the kill takes the relay too; sets KPID.
start_killable() {
    local out=$1 port=$2
    shift 2
    "${CLEAN_ENV[@]}" RSYNC_CONNECT_PROG="$PYTHON -S $T/slow.py $port" \
        setsid "$RSYNC" "$@" >"$out.out" 2>"$out.err" </dev/null &
    KPID=$!
    t_track_pid "$KPID"
}

# wait_growing FILE-GLOB -- until a file matching the glob has > 2 MiB.
wait_growing() {
    local _ f
    for _ in $(seq 150); do
        for f in $1; do
            [ -f "$f" ] && [ "$(stat -c %s "$f")" -gt $((2 * 1048576)) ] && return 0
        done
        sleep 0.1
    done
    echo "no transfer in progress matching $1"
    return 1
}

# kill_group PID -- SIGKILL the process group led by PID.
kill_group() {
    kill -KILL -- "-$1" 2>/dev/null
    wait "$1" 2>/dev/null
    _t_untrack_pid "$1"
}

killed_pull() {
    local dst=$T/killed_pull
    mkdir -p "$dst"
    start_killable "$T/killed_pull" "$FERRYD_PORT" -a "rsync://127.0.0.1/big/" "$dst/"
    wait_growing "$dst/.big.bin.*" || { kill_group "$KPID"; return 1; }
    [ -n "$(children "$FERRYD_PID")" ] || { echo "no connection process mid-transfer"; return 1; }
    kill_group "$KPID"
    wait_idle "$FERRYD_PID" || return 1
    run "$T/after_pull" "$RSYNC" -a "$FURL/big/" "$T/after_pull/"
    ok "$T/after_pull" && cmp "$BIG/big.bin" "$T/after_pull/big.bin"
}
t_check killed_pull_daemon_serves killed_pull

# killed_push SIDE -- a real rsync push at 8 MiB/s killed mid-file:
# nothing under the final name, no temp file left.
killed_push() {
    local side=$1 url=$FURL/up/ dir=$UP pid=$FERRYD_PID port=$FERRYD_PORT stray
    [ "$side" = rsync ] && url=$RURL/up/ dir=$UPR pid=$RSYNCD_PID port=$RSYNCD_PORT
    start_killable "$T/killed_push_$side" "$port" -a "$BIG/" "rsync://127.0.0.1/up/"
    wait_growing "$dir/.big.bin.*" || { kill_group "$KPID"; return 1; }
    kill_group "$KPID"
    wait_idle "$pid" || return 1
    stray=$(find "$dir" -mindepth 1)
    if [ -n "$stray" ]; then
        echo "left in the module after the killed push:"
        ls -la "$dir"
        return 1
    fi
    run "$T/after_push_$side" "$RSYNC" -a "$BIG/" "$url"
    ok "$T/after_push_$side" && cmp "$BIG/big.bin" "$dir/big.bin" && rm -f "$dir/big.bin"
}
t_check killed_push_rsync killed_push rsync
t_check killed_push_no_stray_files killed_push ferry

# ---------------------------------------------------------------- make run

# The command of the Makefile's run target, with $FERRY for ./ferry: the
# test runs against whichever build it was given.
check_make_run() {
    local port pid
    if ! grep -q -- '--daemon --no-detach --config=@default' "$FERRY_SRC/Makefile"; then
        echo "the Makefile's run target no longer runs --config=@default; update this test"
        return 1
    fi
    port=$(t_free_port) || return 1
    FERRY_ROOT=$PUB "$FERRY" --daemon --no-detach --config=@default --address=127.0.0.1 \
        --port="$port" >"$T/make_run.out" 2>&1 </dev/null &
    pid=$!
    t_track_pid "$pid"
    t_wait_port "$port" 10 "$pid" || { cat "$T/make_run.out"; return 1; }
    run "$T/mr_list" "$RSYNC" "rsync://127.0.0.1:$port/"
    run "$T/mr_pull" "$RSYNC" -a "rsync://127.0.0.1:$port/files/" "$T/mr_pull/"
    run "$T/mr_push" "$RSYNC" -a "$PUB/" "rsync://127.0.0.1:$port/files/pushed/"
    t_ferryd_stop "$pid" || { echo "the daemon did not stop on SIGTERM"; return 1; }
    echo "--- listing:"
    cat "$T/mr_list.out"
    ok "$T/mr_list" && grep -qE '^files[[:space:]]+files served by ferry$' "$T/mr_list.out" &&
        ok "$T/mr_pull" && t_compare "$PUB" "$T/mr_pull" --nsec --no-owner --no-group &&
        [ "$(cat "$T/mr_push.rc")" != 0 ] && grep -q "module is read only" "$T/mr_push.err"
}
t_check make_run_list_pull check_make_run

# ------------------------------------------------ config, vs real rsyncd

# both NAME CMD-ARGS... -- "@URL@" in the arguments becomes each daemon's
# URL; runs $T/NAME.rsync and $T/NAME.ferry.
both() {
    local name=$1 side url a args
    shift
    for side in rsync ferry; do
        url=$RURL
        [ "$side" = ferry ] && url=$FURL
        args=()
        for a in "$@"; do args+=("${a//@URL@/$url}"); done
        run "$T/$name.$side" "${args[@]}"
    done
}

# refused_alike NAME TEXT -- both runs failed and printed TEXT.
refused_alike() {
    local side rc bad=0
    for side in rsync ferry; do
        rc=$(cat "$T/$1.$side.rc")
        echo "--- $side: exit $rc"
        show_run "$T/$1.$side"
        [ "$rc" != 0 ] || bad=1
        grep -qF -- "$2" "$T/$1.$side.err" || { echo "no \"$2\" from $side"; bad=1; }
    done
    return "$bad"
}

# same_rc NAME -- both runs exited alike.
same_rc() {
    [ "$(cat "$T/$1.rsync.rc")" = "$(cat "$T/$1.ferry.rc")" ] && return 0
    echo "exit codes differ: rsync $(cat "$T/$1.rsync.rc"), ferry $(cat "$T/$1.ferry.rc")"
    return 1
}

both refuse_c "$RSYNC" -ac "@URL@/refuse/" "$T/refuse_dst/"
t_check refuse_options_text refused_alike refuse_c "The server is configured to refuse --checksum (-c)"
# A real rsync daemon exits 4 without the error-exit handshake; its client
# then usually sees a reset connection and exits 10 instead of 4.
if [ "$(cat "$T/refuse_c.rsync.rc")" = 10 ] && [ "$(cat "$T/refuse_c.ferry.rc")" = 4 ]; then
    t_pass refuse_options_exit_code
else
    t_check refuse_options_exit_code same_rc refuse_c
fi
both refuse_z "$RSYNC" -az "@URL@/refuse/" "$T/refuse_dst/"
t_check refuse_options_compress refused_alike refuse_z "The server is configured to refuse --compress (-z)"

# strict modes (the default) with a secrets file others can read.
strict_refuses() {
    local side url rc bad=0
    for side in rsync ferry; do
        url=$RURL
        [ "$side" = ferry ] && url=$FURL
        run "$T/strict.$side" env RSYNC_PASSWORD=apw "$RSYNC" -a \
            "rsync://alice@${url#rsync://}/strict/" "$T/strict_dst_$side/"
        rc=$(cat "$T/strict.$side.rc")
        echo "--- $side: exit $rc"
        show_run "$T/strict.$side"
        [ "$rc" = 5 ] && grep -qF "@ERROR: auth failed on module strict" "$T/strict.$side.err" ||
            bad=1
    done
    grep -q "secrets file must not be other-accessible" "$T/fd35.log" ||
        { echo "ferry's log does not say why"; bad=1; }
    return "$bad"
}
t_check strict_modes_world_readable strict_refuses
lax_accepts() {
    run "$T/lax" env RSYNC_PASSWORD=apw "$RSYNC" -a "rsync://alice@127.0.0.1:$FERRYD_PORT/lax/" \
        "$T/lax_dst/"
    ok "$T/lax" && t_compare "$SRC" "$T/lax_dst" --nsec --no-hardlinks
}
t_check strict_modes_no_accepts lax_accepts

# The module's exclude: an excluded file asked for by name is not there;
# pushed files with excluded names are refused, the rest is written.
prep_excl() {
    local d
    for d in "$UP" "$UPR"; do
        (umask 022 && echo bin >"$d/x.bin" && echo txt >"$d/y.txt") || return 1
    done
}
prep_excl
both excl_pull "$RSYNC" -a "@URL@/excl/x.bin" "$T/excl_pull_dst/"
excl_pull_hidden() {
    refused_alike excl_pull 'link_stat "x.bin"' || return 1
    same_rc excl_pull && [ ! -e "$T/excl_pull_dst/x.bin" ]
}
t_check exclude_hides_by_name excl_pull_hidden
both excl_push "$RSYNC" -a "$SRC/" "@URL@/excl/pushed/"
excl_push_refused() {
    local bad
    refused_alike excl_push 'daemon refused to receive' || return 1
    same_rc excl_push || return 1
    bad=$(find "$UP/pushed" -name '*.bin' -o -name secret)
    [ -z "$bad" ] || { echo "excluded names were written: $bad"; return 1; }
    [ -f "$UP/pushed/small.txt" ] || { echo "the rest was not written"; return 1; }
    # rsync 3.5 still creates the refused directory, empty (mode 0700, time
    # of the run); ferry writes nothing under an excluded name.
    if [ -d "$UPR/pushed/secret" ]; then
        touch -r "$UPR/pushed" "$T/pushed.stamp" && rmdir "$UPR/pushed/secret" &&
            touch -r "$T/pushed.stamp" "$UPR/pushed" || return 1
    fi
    t_compare "$UPR/pushed" "$UP/pushed" --nsec
}
t_check exclude_refuses_push excl_push_refused
both excl_dest "$RSYNC" -a "$SRC/small.txt" "@URL@/excl/dest.bin"
excl_dest_refused() {
    refused_alike excl_dest 'daemon has excluded destination "dest.bin"' || return 1
    same_rc excl_dest && [ ! -e "$UP/dest.bin" ]
}
t_check exclude_refuses_destination excl_dest_refused

# ----------------------------------------------------------- sanitizers

no_reports() {
    local f bad=0
    for f in "$T/fd35.out" "$T"/*.err; do
        [ -f "$f" ] || continue
        if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer' "$f"; then
            echo "sanitizer report in $f:"
            grep -m1 -A12 -E 'ERROR: [A-Za-z]*Sanitizer|runtime error' "$f"
            bad=1
        fi
    done
    t_pid_alive "$FERRYD_PID" || { echo "the daemon died"; bad=1; }
    return "$bad"
}
t_check no_sanitizer_reports no_reports

t_done
