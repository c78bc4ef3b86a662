#!/bin/bash
# --max-alloc is enforced (issue 22, item 2): a scripted hostile daemon
# (evil_daemon.py, scenario huge_flist) sends a 1,000,000-entry file list.
# With the limit at its 1 MiB minimum, real rsync 3.5.0 and ferry must both
# stop while the list arrives with exit 22 (RERR_MALLOC) and rsync's
# "exceeded --max-alloc=1048576 setting" message, having created nothing.
# The same through RSYNC_MAX_ALLOC, and a limit under the minimum is a
# usage error (exit 1) for both.

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON"
t_setup

if [ ! -x "$FERRY" ]; then
    t_skip "$(_t_script_name)" "ferry binary not found: $FERRY"
    t_done
fi

EVIL=$_T_LIB_DIR/evil_daemon.py

start_evil() {
    local _
    for _ in 1 2 3; do
        EVIL_PORT=$(t_free_port) || return 1
        "$PYTHON" "$EVIL" "$EVIL_PORT" huge_flist >>"$T/evil.log" 2>&1 </dev/null &
        EVIL_PID=$!
        t_track_pid "$EVIL_PID"
        t_wait_port "$EVIL_PORT" 10 "$EVIL_PID" && return 0
        _t_kill_pid "$EVIL_PID"
        _t_untrack_pid "$EVIL_PID"
    done
    cat "$T/evil.log" >&2
    return 1
}

# check_pull TAG PROG ENV=VAL [OPTION...] -- pull the hostile list into
# $T/dest.TAG with ENV=VAL in the environment; print why the run is wrong
# (or nothing).
check_pull() {
    local tag=$1 prog=$2 envv=$3 dest=$T/dest.$1 log=$T/$1.log rc n
    shift 3
    mkdir -p "$dest"
    timeout 120 env "$envv" "$prog" "$@" -rlt --port="$EVIL_PORT" 127.0.0.1::mod/ "$dest/" \
        >"$log" 2>&1 </dev/null
    rc=$?
    sed "s/^/   $tag: /" "$log" >&2
    n=$(find "$dest" -mindepth 1 | wc -l)
    if [ "$rc" -ne 22 ]; then
        echo "exit $rc, expected 22: $(tail -n 1 "$log")"
    elif ! grep -q 'exceeded --max-alloc=1048576 setting (file=' "$log"; then
        echo "no 'exceeded --max-alloc=1048576 setting' message: $(head -n 1 "$log")"
    elif ! grep -q 'error allocating core memory buffers (code 22)' "$log"; then
        echo "no RERR_MALLOC exit line: $(tail -n 1 "$log")"
    elif [ "$n" -ne 0 ]; then
        echo "$n entries created in the destination"
    fi
}

if ! start_evil; then
    t_fail huge_flist "evil daemon did not start"
    t_done
fi

for prog in rsync ferry; do
    bin=$RSYNC
    [ "$prog" = ferry ] && bin=$FERRY
    why=$(check_pull "$prog.opt" "$bin" T_UNUSED=1 --max-alloc=1M)
    if [ -z "$why" ]; then t_pass "huge_flist_opt_$prog"; else t_fail "huge_flist_opt_$prog" "$why"; fi
    # RSYNC_MAX_ALLOC when the option is absent (options.c)
    why=$(check_pull "$prog.env" "$bin" RSYNC_MAX_ALLOC=1048576)
    if [ -z "$why" ]; then t_pass "huge_flist_env_$prog"; else t_fail "huge_flist_env_$prog" "$why"; fi
done
_t_kill_pid "$EVIL_PID"
_t_untrack_pid "$EVIL_PID"
sed 's/^/   evil: /' "$T/evil.log" | tail -n 20 >&2

# Under the 1 MiB minimum: a usage error before any connection.
mkdir -p "$T/src" "$T/small"
for prog in rsync ferry; do
    bin=$RSYNC
    [ "$prog" = ferry ] && bin=$FERRY
    "$bin" -r --max-alloc=500k "$T/src/" "$T/small/" >"$T/small.$prog.log" 2>&1
    rc=$?
    cat "$T/small.$prog.log" >&2
    if [ "$rc" -eq 1 ] && grep -q 'max-alloc=500k is too small (min: 1.00M or 0 for unlimited)' \
        "$T/small.$prog.log"; then
        t_pass "too_small_$prog"
    else
        t_fail "too_small_$prog" "exit $rc: $(head -n 1 "$T/small.$prog.log")"
    fi
done

t_done
