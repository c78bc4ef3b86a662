#!/usr/bin/env bash
# 10,000 sequential connections (module listings) to one `ferry --daemon`:
# the listener's open descriptors and resident memory must not grow.
# Figures are read from /proc/PID/fd and /proc/PID/status after a warm-up
# of 500 connections (lazy set-up, allocator arenas), and again at the end.
# Part of `make stress` (tests/stress/run), not of `make check`.

# shellcheck source=tests/interop/lib.sh
. "$(dirname "$0")/../interop/lib.sh"
t_setup
t_require "$PYTHON"

N=${STRESS_CONNECTIONS:-10000}
SEQ=$(dirname "$0")/seq_connect.py
mkdir -p "$T/a" "$T/b"
t_ferryd_start seq "[a]
path = $T/a
comment = first
[b]
path = $T/b" || { t_fail daemon_start "ferry daemon did not start"; t_done; }

fds() { find "/proc/$FERRYD_PID/fd" -mindepth 1 2>/dev/null | wc -l; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$FERRYD_PID/status"; }

# children_gone -- the listener has reaped every connection's child.
children_gone() {
    local _
    for _ in $(seq 100); do
        [ -z "$(pgrep -P "$FERRYD_PID")" ] && return 0
        sleep 0.1
    done
    return 1
}

"$PYTHON" "$SEQ" "$FERRYD_PORT" 500 >"$T/warm.out" || { t_fail warm_up "$(cat "$T/warm.out")"; t_done; }
children_gone
fd0=$(fds) rss0=$(rss_kb)
t0=$(date +%s)
"$PYTHON" "$SEQ" "$FERRYD_PORT" "$N" >"$T/run.out"
rc=$?
secs=$(($(date +%s) - t0))
children_gone || t_fail children_reaped "connection children still around: $(pgrep -P "$FERRYD_PID" | tr '\n' ' ')"
fd1=$(fds) rss1=$(rss_kb)
echo "connections: $(cat "$T/run.out") in ${secs}s; fds $fd0 -> $fd1; VmRSS ${rss0} kB -> ${rss1} kB"

if [ "$rc" = 0 ]; then
    t_pass "all_${N}_answered"
else
    t_fail "all_${N}_answered" "$(cat "$T/run.out")"
fi
if [ "$fd1" -le "$fd0" ]; then
    t_pass fd_count_steady
else
    t_fail fd_count_steady "listener fds $fd0 -> $fd1 after $N connections"
    ls -l "/proc/$FERRYD_PID/fd"
fi
# a page or two of allocator noise is not a leak; one byte a connection
# would be 10 kB, one descriptor-sized struct 40 kB and more
if [ "$rss1" -le $((rss0 + 8)) ]; then
    t_pass rss_steady
else
    t_fail rss_steady "listener VmRSS $rss0 kB -> $rss1 kB after $N connections"
fi
if t_pid_alive "$FERRYD_PID"; then
    t_pass daemon_alive
else
    t_fail daemon_alive "listener gone"
fi
t_done
