#!/bin/bash
# --max-alloc is enforced (issue 22, item 2): a scripted hostile daemon
# (evil_daemon.py, scenario huge_flist) sends a 1,000,000-entry file list.
# With the limit at its 1 MiB minimum, real rsync 3.5.0 and ferry must both
# stop while the list arrives with exit 22 (RERR_MALLOC) and rsync's
# "exceeded --max-alloc=1048576 setting" message, having created nothing.
# The same through RSYNC_MAX_ALLOC, and a limit under the minimum is a
# usage error (exit 1) for both.
#
# A ferry daemon started with RSYNC_MAX_ALLOC=1M keeps that limit for a
# pushing client's whole (non-incremental) list however the client asks:
# without the option, with --max-alloc=0 and with --max-alloc=2G its
# receiver stops with exit 22. That is issue 22's rule and stricter than
# rsync 3.5.0, whose daemon takes a client's 0 or 2G (measured by hand: a
# 140,000-file push to "RSYNC_MAX_ALLOC=1M rsync --daemon" exits 22 without
# the option, 0 with --max-alloc=0 or =2G).

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

# The daemon side: 40,000 entries are over 1 MiB of ferry's 32-byte
# entries (-r: no owner or group kept; rsync's list needs 131,072 to reach
# it, so only ferry is pushed).
mkdir -p "$T/many" "$T/mod"
"$PYTHON" -c '
import sys
for i in range(40000):
    open("%s/f%05d" % (sys.argv[1], i), "w").close()
' "$T/many"
if ! RSYNC_MAX_ALLOC=1M t_ferryd_start ferryd "[mod]
path = $T/mod
read only = no"; then
    t_fail daemon_limit "ferry daemon did not start"
    t_done
fi
for opt in none 0 2G; do
    args=()
    [ "$opt" != none ] && args=(--max-alloc="$opt")
    timeout 120 "$FERRY" -r --no-inc-recursive "${args[@]}" "$T/many/" "rsync://127.0.0.1:$FERRYD_PORT/mod/" \
        >"$T/push.$opt.log" 2>&1 </dev/null
    rc=$?
    sed "s/^/   push $opt: /" "$T/push.$opt.log" >&2
    if [ "$rc" -eq 22 ] &&
        grep -q 'exceeded --max-alloc=1048576 setting' "$T/push.$opt.log"; then
        t_pass "daemon_limit_$opt"
    else
        t_fail "daemon_limit_$opt" "exit $rc: $(head -n 1 "$T/push.$opt.log")"
    fi
done
t_ferryd_stop
# The control: the same push to a daemon with the default limit succeeds.
if t_ferryd_start ferryd2 "[mod]
path = $T/mod
read only = no"; then
    t_check daemon_default_limit timeout 120 "$FERRY" -r "$T/many/" \
        "rsync://127.0.0.1:$FERRYD_PORT/mod/"
    n=$(find "$T/mod" -type f | wc -l)
    [ "$n" -eq 40000 ] || t_fail daemon_default_count "$n files arrived, expected 40000"
    t_ferryd_stop
else
    t_fail daemon_default_limit "ferry daemon did not start"
fi

t_done
