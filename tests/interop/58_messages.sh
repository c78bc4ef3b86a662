#!/bin/bash
# The one message path (proto/core/msg.h), compared line by line with real
# rsync: error lines name the full path, the role and the errno; a daemon's
# name the module "(in MODULE)" and go to its log; --log-file gets every
# error the terminal gets, the closing line included; control bytes in
# names are escaped (\#012) in every log.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$FERRY"
t_setup

IS_ROOT=0
[ "$(id -u)" = 0 ] && IS_ROOT=1
# root writes anywhere: the permission cases then run as nobody, which
# must reach the test tree and a copy of the binary
RUN_AS=()
BIN_FERRY=$FERRY
if [ "$IS_ROOT" = 1 ]; then
    if ! command -v setpriv >/dev/null 2>&1; then
        t_skip "$(_t_script_name)" "root without setpriv cannot test permission errors"
        t_done
    fi
    chmod 0711 "$T"
    cp "$FERRY" "$T/ferry" && chmod 0755 "$T/ferry" && BIN_FERRY=$T/ferry
    RUN_AS=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi

# rsync's and ferry's names, the random temp suffix, the byte counts, the
# stamp of a log line and where the closing line was decided differ
# legitimately; nothing else may.
norm() {
    sed -E -e 's/^[0-9]{4}\/[0-9]{2}\/[0-9]{2} [0-9:]{8} \[[0-9]+\] //' \
        -e 's/^(rsync|ferry)( error| warning|:)/TOOL\2/' \
        -e 's/(\.[^/."]+(\.[^/."]+)?)\.[A-Za-z0-9]{6}"/\1.XXXXXX"/g' \
        -e 's/^sent [0-9]+ bytes  received [0-9]+ bytes  total size ([0-9]+)$/sent N  received N  total size \1/' \
        -e 's/ at [a-z_]+\.c\([0-9]+\) \[([A-Za-z]+)=[0-9.a-z]+\]$/ [\1]/' \
        -e 's/^TOOL error: (.*) \[(sender|Receiver|receiver|generator|client)\]$/TOOL error: \1/'
}

same_lines() { # FILE_RSYNC FILE_FERRY: equal once normalised
    diff <(norm "$1") <(norm "$2")
}

same_line_set() { # the same, in any order (two threads write them)
    diff <(norm "$1" | sort) <(norm "$2" | sort)
}

# a connection's process may still be writing its last log lines when
# the client is done: let it end before the daemon is stopped
connections_done() { # DAEMON_PID
    local _
    for _ in $(seq 100); do
        [ -z "$(pgrep -P "$1")" ] && return 0
        sleep 0.1
    done
    return 1
}

# --------------------------------------------- mkstemp: full path, role, errno

M=$T/mk
mkdir -p "$M/src"
echo hi >"$M/src/l1.log"
prep_unwritable() {
    rm -rf "$M/dst" && mkdir -p "$M/dst/ro" || return 1
    if [ "$IS_ROOT" = 1 ]; then
        chmod 0755 "$M" "$M/src" && chown -R 65534:65534 "$M/dst" && chown 0:0 "$M/dst/ro"
    else
        chmod 0555 "$M/dst/ro"
    fi
}
mkstemp_run() { # TOOL BIN
    prep_unwritable || return 1
    (cd "$M" && "${RUN_AS[@]}" "$2" -a src/l1.log dst/ro/ >"$M/$1.out" 2>"$M/$1.err")
    echo $? >"$M/$1.rc"
}
mkstemp_run rsync "$RSYNC"
mkstemp_run ferry "$BIN_FERRY"
chmod -R u+w "$M/dst" 2>/dev/null
cat "$M/rsync.err" "$M/ferry.err"
check_mkstemp_shape() {
    grep -qE "^ferry: \[receiver\] mkstemp \"$M/dst/ro/\.l1\.log\.[A-Za-z0-9]{6}\" failed: Permission denied \(13\)$" "$M/ferry.err"
}
t_check mkstemp_names_path_role_errno check_mkstemp_shape
t_check mkstemp_lines_like_rsync same_lines "$M/rsync.err" "$M/ferry.err"
t_check mkstemp_exit_like_rsync cmp "$M/rsync.rc" "$M/ferry.rc"

# a pull names the destination too: the generator's mkdir and the
# receiver's mkstemp
PL=$T/pl
mkdir -p "$PL/src/sub" "$PL/dst"
echo a >"$PL/src/sub/f"
chmod -R 0755 "$PL"
pull_run() { # TOOL BIN PORT
    rm -rf "$PL/dst/$1" && mkdir "$PL/dst/$1" || return 1
    [ "$IS_ROOT" = 1 ] || chmod 0555 "$PL/dst/$1"
    (cd "$PL" && "${RUN_AS[@]}" "$2" -a "rsync://127.0.0.1:$3/p/" "dst/$1/" >/dev/null 2>"$PL/$1.tree.err"
        "${RUN_AS[@]}" "$2" -a "rsync://127.0.0.1:$3/p/sub/f" "dst/$1/new" >/dev/null 2>"$PL/$1.file.err")
    chmod 0755 "$PL/dst/$1"
    # the destination's own name differs between the two runs
    sed -i "s|/dst/$1/|/dst/D/|" "$PL/$1.tree.err" "$PL/$1.file.err"
}
if t_rsyncd_start msg_pull "[p]
    path = $PL/src"; then
    pull_run rsync "$RSYNC" "$RSYNCD_PORT"
    pull_run ferry "$BIN_FERRY" "$RSYNCD_PORT"
    connections_done "$RSYNCD_PID"
    t_rsyncd_stop
    cat "$PL/rsync.tree.err" "$PL/ferry.tree.err" "$PL/rsync.file.err" "$PL/ferry.file.err"
    t_check pull_generator_errors_like_rsync same_line_set "$PL/rsync.tree.err" "$PL/ferry.tree.err"
    t_check pull_mkstemp_like_rsync same_lines "$PL/rsync.file.err" "$PL/ferry.file.err"
    t_check pull_names_destination grep -qF "ferry: [generator] recv_generator: mkdir \"$PL/dst/D/sub\" failed: Permission denied (13)" "$PL/ferry.tree.err"
fi

# ---------------------------- -L over a dangling link: --log-file as the terminal

L=$T/dl
mkdir -p "$L/src"
echo data >"$L/src/f"
ln -s "$L/nowhere" "$L/src/dangle"
for tool in rsync ferry; do
    bin=$RSYNC
    [ $tool = ferry ] && bin=$FERRY
    "$bin" -aL --log-file="$L/$tool.log" "$L/src/" "$L/dst.$tool/" >"$L/$tool.out" 2>"$L/$tool.err"
    echo $? >"$L/$tool.rc"
done
cat "$L/rsync.log" "$L/ferry.log"
t_check dangling_log_has_referent_line grep -q "symlink has no referent: \"$L/src/dangle\"" "$L/ferry.log"
t_check dangling_log_has_closing_line grep -qE '^.{20}\[[0-9]+\] ferry error: some files/attrs were not transferred \(see previous errors\) \(code 23\)' "$L/ferry.log"
t_check dangling_log_like_rsync same_lines "$L/rsync.log" "$L/ferry.log"
t_check dangling_stderr_like_rsync same_lines "$L/rsync.err" "$L/ferry.err"
t_check dangling_exit_23 grep -qx 23 "$L/ferry.rc"

# the -v summary, --stats and info lines reach the log as well
for tool in rsync ferry; do
    bin=$RSYNC
    [ $tool = ferry ] && bin=$FERRY
    rm -rf "$L/dst"
    "$bin" -avL --stats --log-file="$L/$tool.v.log" "$L/src/" "$L/dst/" >/dev/null 2>&1
done
strip_counts() { # byte counts and rates differ between the two tools
    norm "$1" | sed -E -e 's/^(Total bytes (sent|received)): .*/\1: N/' \
        -e 's/^sent [0-9,.]+ bytes  received [0-9,.]+ bytes  [0-9,.]+ bytes\/sec$/sent N  received N  R bytes\/sec/' \
        -e 's/speedup is [0-9.,]+/speedup is S/'
}
t_check verbose_log_like_rsync diff <(strip_counts "$L/rsync.v.log") <(strip_counts "$L/ferry.v.log")

# --json: the same messages as events, and stdout nothing but JSON lines
json_messages() {
    rm -rf "$L/dst.json"
    "$FERRY" -avL --json "$L/src/" "$L/dst.json/" 2>"$L/json.err" | "$PYTHON" -c '
import json, sys
events = [json.loads(line) for line in sys.stdin]
texts = [(e["level"], e["text"]) for e in events if e["event"] == "message"]
print(texts)
sys.exit(0 if ("error", sys.argv[1]) in texts and [e["event"] for e in events[-2:]] == ["stats", "end"] else 1)
' "symlink has no referent: \"$L/src/dangle\""
}
if command -v "$PYTHON" >/dev/null 2>&1; then
    t_check json_message_events json_messages
    t_check json_errors_still_on_stderr grep -q "symlink has no referent" "$L/json.err"
fi

# --------------------------------------------- control bytes in a logged name

N=$T/nl
mkdir -p "$N/src"
echo x >"$N/src/"$'a\nb'
echo y >"$N/src/"$'c\033d'
echo z >"$N/src/"$'e\302\205f'
for tool in rsync ferry; do
    bin=$RSYNC
    [ $tool = ferry ] && bin=$FERRY
    "$bin" -a --log-file="$N/$tool.log" "$N/src/" "$N/dst.$tool/" >/dev/null 2>&1
done
cat -A "$N/ferry.log"
t_check newline_name_escaped_in_log grep -q '>f+++++++++ a\\#012b$' "$N/ferry.log"
t_check escape_and_c1_escaped_in_log grep -qF 'e'$'\302''\#205f' "$N/ferry.log"
t_check control_names_log_like_rsync same_line_set "$N/rsync.log" "$N/ferry.log"

# ------------------------ a daemon's errors: "(in MODULE)", and in its log too

D=$T/dm
mkdir -p "$D/src" "$D/mod"
echo f >"$D/src/f"
touch "$D/src/"$'n\nl'
chmod 0755 "$D" "$D/mod"
if [ "$IS_ROOT" = 1 ]; then
    MODULE_USER=$'    uid = 65534\n    gid = 65534'
else
    MODULE_USER=""
fi
MODULES="[m]
    path = $D/mod
    read only = no
    transfer logging = yes
$MODULE_USER"
# a chroot names the module's root "/" (only root may chroot)
if [ "$IS_ROOT" = 1 ]; then
    MODULES="$MODULES
[c]
    path = $D/mod
    read only = no
    use chroot = yes
$MODULE_USER"
fi
prep_module() {
    rm -rf "$D/mod/ro" "$D/mod/rw" && mkdir "$D/mod/ro" "$D/mod/rw" &&
        if [ "$IS_ROOT" = 1 ]; then
            chmod 0755 "$D/mod/ro" && chown 65534:65534 "$D/mod/rw"
        else
            chmod 0555 "$D/mod/ro"
        fi
}
mkdir -p "$D/mod/pull"
echo ok >"$D/mod/pull/ok"
echo secret >"$D/mod/pull/secret"
chmod 0000 "$D/mod/pull/secret"
ln -s "$D/nowhere" "$D/mod/pull/dangle"
daemon_pull() { # TOOL PORT: the sender's errors name the module too
    "$RSYNC" -aL "rsync://127.0.0.1:$2/m/pull/" "$D/pulled.$1/" >/dev/null 2>"$D/$1.pull.err"
    echo $? >"$D/$1.pull.rc"
}
daemon_push() { # TOOL PORT
    daemon_pull "$1" "$2"
    prep_module || return 1
    "$RSYNC" -a "$D/src/" "rsync://127.0.0.1:$2/m/ro/" >"$D/$1.out" 2>"$D/$1.err"
    echo $? >"$D/$1.rc"
    # a name with a newline in the transfer log
    "$RSYNC" -a "$D/src/" "rsync://127.0.0.1:$2/m/rw/" >>"$D/$1.out" 2>&1
    # a destination that cannot be made, named from the module's root
    "$RSYNC" -a "$D/src/" "rsync://127.0.0.1:$2/m/ro/sub/" >/dev/null 2>"$D/$1.mkdir.err"
    if [ "$IS_ROOT" = 1 ]; then
        "$RSYNC" -a "$D/src/" "rsync://127.0.0.1:$2/c/ro/sub/" >/dev/null 2>>"$D/$1.mkdir.err"
    fi
}
if t_rsyncd_start msg_rsyncd "$MODULES"; then
    daemon_push rsync "$RSYNCD_PORT"
    connections_done "$RSYNCD_PID"
    t_rsyncd_stop
fi
if t_ferryd_start msg_ferryd "$MODULES"; then
    daemon_push ferry "$FERRYD_PORT"
    connections_done "$FERRYD_PID"
    t_ferryd_stop
fi
chmod -R u+w "$D/mod" 2>/dev/null
cat "$D/rsync.err" "$D/ferry.err"
in_module_lines() { grep -F '(in m)' "$1" >"$1.in_m"; }
in_module_lines "$T/msg_rsyncd.log"
in_module_lines "$T/msg_ferryd.log"
cat "$T/msg_rsyncd.log.in_m" "$T/msg_ferryd.log.in_m"
t_check daemon_sender_errors_like_rsync same_line_set "$D/rsync.pull.err" "$D/ferry.pull.err"
t_check daemon_sender_names_module grep -qF 'ferry: [sender] send_files failed to open "/pull/secret" (in m): Permission denied (13)' "$D/ferry.pull.err"
t_check daemon_sender_exit_like_rsync cmp "$D/rsync.pull.rc" "$D/ferry.pull.rc"
t_check daemon_mkdir_like_rsync same_lines "$D/rsync.mkdir.err" "$D/ferry.mkdir.err"
t_check daemon_mkdir_names_module grep -qF 'ferry: [Receiver] mkdir "ro/sub" (in m) failed: Permission denied (13)' "$D/ferry.mkdir.err"
if [ "$IS_ROOT" = 1 ]; then
    t_check daemon_chroot_names_root grep -qF 'ferry: [Receiver] mkdir "/ro/sub" (in c) failed: Permission denied (13)' "$D/ferry.mkdir.err"
fi
check_daemon_mkstemp() {
    grep -qE '^ferry: \[receiver\] mkstemp "/ro/\.f\.[A-Za-z0-9]{6}" \(in m\) failed: Permission denied \(13\)$' "$D/ferry.err"
}
t_check daemon_error_names_module check_daemon_mkstemp
t_check daemon_errors_to_client_like_rsync same_line_set "$D/rsync.err" "$D/ferry.err"
t_check daemon_errors_in_log_like_rsync same_line_set "$T/msg_rsyncd.log.in_m" "$T/msg_ferryd.log.in_m"
t_check daemon_exit_like_rsync cmp "$D/rsync.rc" "$D/ferry.rc"
# (rsync's %f there says "rw/n\#012l", ferry's leaves out the destination
# directory, a difference of its own: only the escaping is compared here)
escaped_recv_line() { grep -qE '\] recv .*[ /]n\\#012l 0$' "$1"; }
no_forged_line() { ! grep -qE '^l 0$' "$1"; }
t_check daemon_transfer_log_escapes_newline escaped_recv_line "$T/msg_ferryd.log"
t_check daemon_transfer_log_no_forged_line no_forged_line "$T/msg_ferryd.log"
t_check rsync_daemon_log_escapes_too escaped_recv_line "$T/msg_rsyncd.log"

t_done
