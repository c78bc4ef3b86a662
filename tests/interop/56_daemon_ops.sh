#!/bin/bash
# Running a daemon, against a real rsync daemon where the behaviour is
# shared:
# - a config that breaks while the daemon runs: rsync warns in its log and
#   skips a line without '='; ferry logs each error with its file and line
#   and keeps serving the last configuration that loaded (it never drops a
#   client without a greeting), also after SIGHUP, and takes the file again
#   once it is fixed; `ferry --daemon --check-config` lists every error;
# - the pid file: locked while the daemon runs, so a second daemon on it
#   (ferry or rsync, either way round) exits 11 with "failed to lock pid
#   file" and leaves it alone; removed when the listener ends on SIGTERM
#   (exit 0) or SIGINT (exit 20), as rsync does; a detached start that
#   cannot lock it exits 11 too, not 0;
# - the listen backlog: a burst of clients beyond "max connections" all get
#   the "@ERROR: max connections" refusal, none a TCP reset or a stall,
#   with the default backlog; "listen backlog" still sets it.
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

SRC=$T/src
mkdir -p "$SRC/d"
echo one >"$SRC/a"
echo two >"$SRC/d/b"

# conf NAME [EXTRA] -- a config for daemon NAME: pid, lock and log file in
# $T, module [m] serving $SRC, EXTRA lines in the global section.
conf() {
    printf 'pid file = %s\nlock file = %s\nlog file = %s\nuse chroot = no\n' \
        "$T/$1.pid" "$T/$1.lock" "$T/$1.log"
    [ "$(id -u)" = 0 ] && printf 'uid = root\ngid = root\n'
    [ -n "${2:-}" ] && printf '%s\n' "$2"
    printf '[m]\n    path = %s\n' "$SRC"
}

# start BIN NAME -- BIN --daemon --no-detach with $T/NAME.conf on a free
# port; sets PORT and PID. Its output goes to $T/NAME.out.
start() {
    local bin=$1 name=$2 port pid _
    for _ in 1 2 3; do
        port=$(t_free_port) || return 1
        "$bin" --daemon --no-detach --address=127.0.0.1 --port="$port" \
            --config="$T/$name.conf" >>"$T/$name.out" 2>&1 </dev/null &
        pid=$!
        t_track_pid "$pid"
        if t_wait_port "$port" 10 "$pid"; then
            PORT=$port PID=$pid
            return 0
        fi
        _t_kill_pid "$pid"
        _t_untrack_pid "$pid"
    done
    echo "start $name: daemon did not come up:" >&2
    cat "$T/$name.out" >&2
    return 1
}

# modules PORT -- the module names a real rsync client lists, one a line.
modules() {
    "$RSYNC" "rsync://127.0.0.1:$1/" 2>&1 | awk '{ print $1 }'
}

# wait_for SECONDS CMD... -- poll CMD every 0.1 s until it succeeds.
wait_for() {
    local n=$(($1 * 10))
    shift
    while [ "$n" -gt 0 ]; do
        "$@" && return 0
        sleep 0.1
        n=$((n - 1))
    done
    "$@"
}

# ------------------------------------------- a config that breaks while running

conf rbad >"$T/rbad.conf"
conf fbad >"$T/fbad.conf"
start "$RSYNC" rbad || { t_fail bad_line_setup "rsync daemon did not start"; t_done; }
RPORT=$PORT
start "$FERRY" fbad || { t_fail bad_line_setup "ferry daemon did not start"; t_done; }
FPORT=$PORT FPID=$PID
BADLINE=$(($(wc -l <"$T/fbad.conf") + 1))
for d in rbad fbad; do
    printf 'this line has no equals\n[added]\n    path = %s\n' "$SRC" >>"$T/$d.conf"
done

# rsync skips the line and serves the new module; ferry keeps the last
# good configuration. Both keep serving [m].
check_bad_line_rsync() {
    local got
    got=$(modules "$RPORT" | tr '\n' ' ')
    [ "$got" = "m added " ] || { echo "rsync lists: $got"; return 1; }
    grep -q 'Ignoring badly formed line in config file: this line has no equals' "$T/rbad.log"
}
t_check bad_line_rsync_warns_and_skips check_bad_line_rsync

check_bad_line_ferry() {
    local got
    got=$(modules "$FPORT" | tr '\n' ' ')
    [ "$got" = "m " ] || { echo "ferry lists: $got"; return 1; }
    rm -rf "$T/pull.f" "$T/pull.r"
    "$FERRY" -r "rsync://127.0.0.1:$FPORT/m/" "$T/pull.f/" || return 1
    "$RSYNC" -r "rsync://127.0.0.1:$FPORT/m/" "$T/pull.r/" || return 1
    diff -r "$SRC" "$T/pull.f" && diff -r "$SRC" "$T/pull.r"
}
t_check bad_line_ferry_keeps_serving check_bad_line_ferry

WANT_ERR="config error: badly formed line \"this line has no equals\" (no '=') at $T/fbad.conf:$BADLINE"
bad_line_logged() { # COUNT
    [ "$(grep -cF "$WANT_ERR" "$T/fbad.log")" = "$1" ]
}
check_bad_line_logged() {
    bad_line_logged 1 && grep -q 'config not reloaded: still serving the last configuration' \
        "$T/fbad.log" || { cat "$T/fbad.log"; return 1; }
}
# Three connections above, one entry: an unchanged error is not repeated.
t_check bad_line_logged_once_with_file_and_line check_bad_line_logged

# SIGHUP reloads at once and reports the error again.
check_hup() {
    kill -HUP "$FPID" || return 1
    wait_for 10 bad_line_logged 2 || { cat "$T/fbad.log"; return 1; }
    t_pid_alive "$FPID"
}
t_check bad_line_reported_on_sighup check_hup

# Fixed, the file is taken at the next connection.
check_fixed() {
    local got
    sed -i '/^this line has no equals$/d' "$T/fbad.conf"
    got=$(modules "$FPORT" | tr '\n' ' ')
    [ "$got" = "m added " ] || { echo "ferry lists: $got"; return 1; }
}
t_check fixed_config_is_reloaded check_fixed

# An error rsync cannot read past (it then drops every client without a
# greeting): ferry still serves its last good configuration.
check_fatal() {
    local got
    for d in rbad fbad; do printf '[bad/name]\n' >>"$T/$d.conf"; done
    "$RSYNC" "rsync://127.0.0.1:$RPORT/" >"$T/fatal.r.out" 2>&1
    echo "rsync daemon with [bad/name]: exit $?, $(tr '\n' ' ' <"$T/fatal.r.out")"
    got=$(modules "$FPORT" | tr '\n' ' ')
    [ "$got" = "m added " ] || { echo "ferry lists: $got"; return 1; }
    grep -qF "invalid module name \"bad/name\" (it may not contain '/') at $T/fbad.conf:" \
        "$T/fbad.log"
}
t_check fatal_error_keeps_last_good_config check_fatal
t_check bad_config_daemon_alive t_pid_alive "$FPID"

# ---------------------------------------------------------- --check-config

check_config_valid() {
    conf good >"$T/good.conf"
    "$FERRY" --daemon --check-config --config="$T/good.conf" >"$T/cc.out" 2>&1 || return 1
    [ ! -s "$T/cc.out" ] || { cat "$T/cc.out"; return 1; }
}
t_check check_config_valid_silent_exit_0 check_config_valid

check_config_errors() {
    local c=$T/cc.conf rc
    { conf cc; printf 'no equals here\nbogus param = 1\n[n]\n    read only = maybe\n'; } >"$c"
    local n
    n=$(grep -n '^no equals here$' "$c" | cut -d: -f1)
    "$FERRY" --daemon --check-config --config="$c" >"$T/cc.out" 2>"$T/cc.err"
    rc=$?
    cat "$T/cc.err"
    [ "$rc" = 1 ] || { echo "exit $rc"; return 1; }
    [ ! -s "$T/cc.out" ] &&
        grep -qxF "ferry: badly formed line \"no equals here\" (no '=') at $c:$n" "$T/cc.err" &&
        grep -qxF "ferry: unknown parameter \"bogus param\" at $c:$((n + 1))" "$T/cc.err" &&
        grep -qF "for \"read only\" (use yes/no, true/false or 1/0) at $c:$((n + 3))" \
            "$T/cc.err" &&
        grep -qxF "ferry: module [n] has no \"path\" at $c:$((n + 2))" "$T/cc.err" &&
        [ "$(wc -l <"$T/cc.err")" = 4 ]
}
t_check check_config_lists_every_error check_config_errors

check_config_missing() {
    "$FERRY" --daemon --check-config --config="$T/nonexistent.conf" 2>"$T/cc.err"
    [ $? = 1 ] && grep -q "unable to open config file \"$T/nonexistent.conf\"" "$T/cc.err"
}
t_check check_config_missing_file check_config_missing

# --------------------------------------------------------------- pid file

# second BIN NAME -- another daemon on NAME's config (so NAME's pid file)
# on a new port; prints its exit code. Bounded: a daemon that wrongly
# starts is stopped by the timeout.
second() {
    local port
    port=$(t_free_port) || return 1
    timeout 20 "$1" --daemon --no-detach --address=127.0.0.1 --port="$port" \
        --config="$T/$2.conf" >"$T/$2.second.out" 2>&1 </dev/null
    echo $?
}

conf fpid >"$T/fpid.conf"
conf rpid >"$T/rpid.conf"
start "$FERRY" fpid || { t_fail pid_setup "ferry daemon did not start"; t_done; }
FPID=$PID
start "$RSYNC" rpid || { t_fail pid_setup "rsync daemon did not start"; t_done; }
RPID=$PID

t_check pid_file_holds_ferry_pid [ "$(cat "$T/fpid.pid")" = "$FPID" ]

check_second() { # BIN NAME OWNER_PID
    local rc
    rc=$(second "$1" "$2")
    cat "$T/$2.second.out"
    [ "$rc" = 11 ] || { echo "exit $rc"; return 1; }
    grep -q "failed to lock pid file $T/$2.pid" "$T/$2.second.out" &&
        [ "$(cat "$T/$2.pid")" = "$3" ]
}
t_check second_ferry_refused_like_rsync check_second "$FERRY" fpid "$FPID"
t_check second_rsync_refused_like_rsync check_second "$RSYNC" rpid "$RPID"
t_check rsync_refused_by_ferry_lock check_second "$RSYNC" fpid "$FPID"
t_check ferry_refused_by_rsync_lock check_second "$FERRY" rpid "$RPID"
t_check pid_lock_failure_logged grep -q "failed to lock pid file $T/fpid.pid" "$T/fpid.log"

# stop SIG PID -- signal a daemon we started; STOP_RC gets its exit code.
stop() {
    kill -"$1" "$2"
    wait "$2"
    STOP_RC=$?
    _t_untrack_pid "$2"
}
check_stop() { # SIG WANT_RC
    local rr fr
    stop "$1" "$RPID" && rr=$STOP_RC
    stop "$1" "$FPID" && fr=$STOP_RC
    [ "$rr" = "$2" ] && [ "$fr" = "$2" ] || { echo "rsync exit $rr, ferry exit $fr"; return 1; }
    [ ! -e "$T/rpid.pid" ] && [ ! -e "$T/fpid.pid" ]
}
t_check sigterm_exits_0_removes_pid_file check_stop TERM 0
start "$FERRY" fpid && FPID=$PID && start "$RSYNC" rpid && RPID=$PID &&
    t_check sigint_exits_20_removes_pid_file check_stop INT 20
t_check sigint_logged grep -q 'received SIGINT, SIGTERM, or SIGHUP (code 20)' "$T/fpid.log"

# A symlink where the pid file goes is replaced, never followed.
check_symlink() { # BIN NAME
    local pid
    echo keep >"$T/$2.target"
    ln -sf "$T/$2.target" "$T/$2.pid"
    start "$1" "$2" || return 1
    pid=$PID
    stop TERM "$pid"
    [ "$(cat "$T/$2.target")" = keep ] && [ ! -e "$T/$2.pid" ] && [ ! -L "$T/$2.pid" ]
}
conf fsym >"$T/fsym.conf"
conf rsym >"$T/rsym.conf"
t_check pid_file_symlink_not_followed_rsync check_symlink "$RSYNC" rsym
t_check pid_file_symlink_not_followed_ferry check_symlink "$FERRY" fsym

# Detached: the start reports the daemon's fate, and the daemon it leaves
# holds the pid file.
check_detached() {
    local port rc pid
    port=$(t_free_port) || return 1
    "$FERRY" --daemon --address=127.0.0.1 --port="$port" --config="$T/fpid.conf" \
        >"$T/det.out" 2>&1 </dev/null || return 1
    pid=$(cat "$T/fpid.pid") && t_track_pid "$pid"
    t_pid_alive "$pid" && t_port_open "$port" || return 1
    port=$(t_free_port) || return 1
    timeout 20 "$FERRY" --daemon --address=127.0.0.1 --port="$port" \
        --config="$T/fpid.conf" >"$T/det2.out" 2>&1 </dev/null
    rc=$?
    cat "$T/det2.out"
    [ "$rc" = 11 ] && [ "$(cat "$T/fpid.pid")" = "$pid" ] || { echo "exit $rc"; return 1; }
    kill -TERM "$pid"
    wait_for 10 eval '! t_pid_alive '"$pid" && [ ! -e "$T/fpid.pid" ]
}
t_check detached_start_and_refusal check_detached

# ---------------------------------------------------------- listen backlog

BURST=120 MAXC=20
printf '    max connections = %s\n' "$MAXC" >"$T/maxc"
{ conf fburst; cat "$T/maxc"; } >"$T/fburst.conf"
{ conf rburst "listen backlog = 1024"; cat "$T/maxc"; } >"$T/rburst.conf"

# burst NAME PORT -- BURST clients at once; the outcome counts.
burst() {
    "$PYTHON" "$_T_LIB_DIR/burst_connect.py" 127.0.0.1 "$2" m "$BURST" 30 >"$T/$1.burst"
    cat "$T/$1.burst"
}
WANT="ok=$MAXC refused=$((BURST - MAXC)) reset=0 eof=0 timeout=0"
check_burst() { # BIN NAME
    start "$1" "$2" || return 1
    [ "$(burst "$2" "$PORT")" = "$WANT" ]
}
t_check burst_ferry_default_backlog_clean_refusals check_burst "$FERRY" fburst
t_check burst_rsync_same_with_large_backlog check_burst "$RSYNC" rburst

# The backlog of a listening socket is its Send-Q in ss(8).
backlog_of() {
    ss -Hltn "sport = :$1" | awk '{ print $3 }'
}
check_backlog() { # NAME EXTRA WANT
    conf "$1" "$2" >"$T/$1.conf"
    start "$FERRY" "$1" || return 1
    local got
    got=$(backlog_of "$PORT")
    echo "backlog of $1: $got, want $3"
    [ "$got" = "$3" ]
}
if command -v ss >/dev/null 2>&1; then
    SOMAXCONN=$(cat /proc/sys/net/core/somaxconn)
    DEF=$((SOMAXCONN < 1024 ? SOMAXCONN : 1024))
    t_check listen_backlog_default check_backlog bl_default "" "$DEF"
    t_check listen_backlog_parameter check_backlog bl_seven "listen backlog = 7" 7
else
    t_skip listen_backlog "ss not found"
fi

# The daemons' own output (where a sanitizer build reports) is clean.
t_check no_sanitizer_reports t_no_sanitizer_reports "$T"/*.out
t_done
