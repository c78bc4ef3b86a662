#!/usr/bin/env bash
# Limits on what a peer can make a ferry client or daemon hold: the HTTP
# proxy's answer (RSYNC_PROXY) is shown escaped, bounded and waited for only
# so long; the TCP daemon's `max connections per host` refuses the excess
# in the listener, before a child is forked; `ssh max startups` drops SSH
# connections while too many are unauthenticated.
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_setup

run() {
    local out=$1
    shift
    (exec "$@") >"$out.out" 2>"$out.err" </dev/null
    echo $? >"$out.rc"
}

# fails_with RUN CODE TEXT -- RUN exited CODE and said TEXT on stderr.
fails_with() {
    local rc
    rc=$(cat "$1.rc")
    if [ "$rc" != "$2" ]; then
        echo "exit $rc, expected $2"
        show_run "$1"
        return 1
    fi
    grep -qF -- "$3" "$1.err" || { echo "no \"$3\" in stderr"; show_run "$1"; return 1; }
}

# same_err RUN_A RUN_B -- both said the same, the program's name aside.
same_err() {
    diff <(head -n 1 "$1.err" | sed 's/^[a-z]*: //') <(head -n 1 "$2.err" | sed 's/^[a-z]*: //') ||
        { show_run "$1"; show_run "$2"; return 1; }
}

# ------------------------------------------------------------ RSYNC_PROXY

# A hostile proxy: PORTFILE MODE. ctl answers a refusal full of control
# bytes, long a status line longer than any buffer, silent nothing at all.
cat >"$T/evilproxy.py" <<'PY'
import os, socket, sys
portfile, mode = sys.argv[1], sys.argv[2]
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
with open(portfile + ".tmp", "w") as f:
    f.write("%d\n" % s.getsockname()[1])
os.rename(portfile + ".tmp", portfile)
held = []
while True:
    c, _ = s.accept()
    c.recv(4096)
    if mode == "ctl":
        c.sendall(b"HTTP/1.0 403 \x1b[2Jgone\x07\rX\r\n\r\n")
        c.close()
    elif mode == "long":
        c.sendall(b"HTTP/1.0 200 " + b"y" * 5000 + b"\r\n")
        c.close()
    else:
        held.append(c)
PY
start_evil() {
    "$PYTHON" "$T/evilproxy.py" "$T/$1.port" "$1" 2>"$T/$1.perr" &
    t_track_pid $!
    for _ in $(seq 50); do [ -s "$T/$1.port" ] && break; sleep 0.1; done
    [ -s "$T/$1.port" ]
}
for m in ctl long silent; do
    start_evil $m || { t_fail proxy_start "evil proxy $m did not start"; t_done; }
done
# Port 9 on loopback: nothing is reached through these proxies anyway.
run "$T/px_ctl" env RSYNC_PROXY="127.0.0.1:$(cat "$T/ctl.port")" "$FERRY" rsync://127.0.0.1:9/
run "$T/rpx_ctl" env RSYNC_PROXY="127.0.0.1:$(cat "$T/ctl.port")" "$RSYNC" rsync://127.0.0.1:9/
escaped() {
    fails_with "$1" 10 'bad response from proxy -- HTTP/1.0 403 \#033[2Jgone\#007\#015X' &&
        ! LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$1.err"
}
t_check proxy_reply_escaped escaped "$T/px_ctl"
t_check proxy_reply_escaped_as_rsync same_err "$T/px_ctl" "$T/rpx_ctl"
run "$T/px_long" env RSYNC_PROXY="127.0.0.1:$(cat "$T/long.port")" "$FERRY" rsync://127.0.0.1:9/
t_check proxy_reply_line_bounded fails_with "$T/px_long" 10 "proxy response line too long"
# A proxy that never answers: --contimeout bounds the wait (rsync would
# wait forever). The outer timeout only keeps a regression from hanging.
start=$(date +%s)
run "$T/px_silent" timeout 30 env RSYNC_PROXY="127.0.0.1:$(cat "$T/silent.port")" "$FERRY" \
    --contimeout=2 rsync://127.0.0.1:9/
took=$(($(date +%s) - start))
silent_bounded() {
    fails_with "$1" 35 "timed out waiting for the proxy's answer" &&
        { [ "$took" -lt 20 ] || { echo "took ${took}s"; return 1; }; }
}
t_check proxy_silent_times_out silent_bounded "$T/px_silent"

# -------------------------------------------------------- helper scripts

# hold.py PORT N READYFILE -- open N connections, read each one's first line
# (the daemon's greeting or SSH banner: a child serves it), then write
# READYFILE and keep them open until killed.
cat >"$T/hold.py" <<'PY'
import socket, sys, time
port, n, ready = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
held = []
for _ in range(n):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    line = b""
    while not line.endswith(b"\n"):
        d = s.recv(1)
        if not d:
            sys.exit("closed before its first line")
        line += d
    held.append(s)
open(ready, "w").write("ok\n")
while True:
    time.sleep(60)
PY
# probe.py PORT -- "eof" if the connection is closed with nothing said,
# else its first line.
cat >"$T/probe.py" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
d = s.recv(256)
print(d.split(b"\n")[0].decode(errors="replace") if d else "eof")
PY
# hold PORT N NAME -- start hold.py; sets HOLD_PID once it holds them all.
hold() {
    rm -f "$T/$3.ready"
    "$PYTHON" "$T/hold.py" "$1" "$2" "$T/$3.ready" 2>"$T/$3.err" &
    HOLD_PID=$!
    t_track_pid "$HOLD_PID"
    for _ in $(seq 100); do
        [ -s "$T/$3.ready" ] && return 0
        t_pid_alive "$HOLD_PID" || break
        sleep 0.1
    done
    echo "hold $3 failed:"
    cat "$T/$3.err"
    return 1
}
release() {
    _t_kill_pid "$1"
    _t_untrack_pid "$1"
}
children_of() { pgrep -P "$1" | wc -l; }
# wait_children PID N -- up to 10 s for PID to have N children.
wait_children() {
    for _ in $(seq 100); do
        [ "$(children_of "$1")" -eq "$2" ] && return 0
        sleep 0.1
    done
    echo "$(children_of "$1") children, expected $2"
    return 1
}

# ------------------------------------------- max connections per host (TCP)

SRC=$T/src
mkdir -p "$SRC" && echo hello >"$SRC/file"
t_ferryd_start lim "max connections per host = 2
[src]
	path = $SRC
" || { t_fail ferryd_start "daemon did not start"; t_done; }
P=$FERRYD_PORT
REFUSAL="@ERROR: max connections per host (2) reached -- try again later"
t_check per_host_two_held hold "$P" 2 tcp2 || t_done
TCP_HOLD=$HOLD_PID
t_check per_host_two_children wait_children "$FERRYD_PID" 2
run "$T/ph_ferry" timeout 30 "$FERRY" "rsync://127.0.0.1:$P/src/"
t_check per_host_refused_ferry fails_with "$T/ph_ferry" 5 "$REFUSAL"
run "$T/ph_rsync" timeout 30 "$RSYNC" "rsync://127.0.0.1:$P/src/"
t_check per_host_refused_rsync fails_with "$T/ph_rsync" 5 "$REFUSAL"
no_fork() {
    [ "$(children_of "$FERRYD_PID")" -eq 2 ] || { echo "children: $(children_of "$FERRYD_PID")"; return 1; }
    grep -q "max connections per host (2) reached for 127.0.0.1" "$T/lim.log" ||
        { tail "$T/lim.log"; return 1; }
}
t_check per_host_refused_in_listener no_fork
release "$TCP_HOLD"
t_check per_host_children_reaped wait_children "$FERRYD_PID" 0
run "$T/ph_after" timeout 30 "$FERRY" "rsync://127.0.0.1:$P/src/"
t_check per_host_served_again grep -q "file" "$T/ph_after.out"
t_check ferryd_stop t_ferryd_stop

# ------------------------------------------------------- ssh max startups

# `ssh max startups = 1`: one connection may be pending authentication, a
# second is dropped (closed before the SSH banner); one that logged in no
# longer counts, and one that `ssh login grace time` ends frees its place.
if ! command -v ssh >/dev/null || ! command -v ssh-keygen >/dev/null; then
    t_skip ssh_max_startups "ssh or ssh-keygen not found"
    t_done
fi
K=$T/keys
mkdir -p "$K"
make_keys() {
    ssh-keygen -q -t ed25519 -N '' -C host -f "$K/host" </dev/null &&
        ssh-keygen -q -t ed25519 -N '' -C client -f "$K/client" </dev/null &&
        cp "$K/client.pub" "$K/authorized_keys" && chmod 600 "$K/authorized_keys"
}
t_check ssh_keys make_keys || t_done
SSH_PORT=$(t_free_port) || t_done
t_ferryd_start sshlim "ssh port = $SSH_PORT
ssh host key = $K/host
ssh authorized keys = $K/authorized_keys
ssh login grace time = 3
ssh max startups = 1
[src]
	path = $SRC
" || { t_fail ferryd_start "ssh daemon did not start"; t_done; }
printf '[127.0.0.1]:%s %s\n' "$SSH_PORT" "$(cut -d' ' -f1-2 "$K/host.pub")" >"$T/known_hosts"

# A logged-in session that stays: the daemon protocol waits for our
# greeting, which never comes while sleep holds stdin open.
sleep 30 | ssh -F /dev/null -p "$SSH_PORT" -i "$K/client" -o IdentitiesOnly=yes \
    -o BatchMode=yes -o UserKnownHostsFile="$T/known_hosts" -o StrictHostKeyChecking=yes \
    "$(id -un)@127.0.0.1" rsync --server --daemon . >"$T/sess.out" 2>"$T/sess.err" &
SESS_PID=$!
t_track_pid "$SESS_PID"
logged_in() {
    for _ in $(seq 100); do
        grep -q '^@RSYNCD:' "$T/sess.out" && return 0
        sleep 0.1
    done
    cat "$T/sess.err"
    return 1
}
t_check ssh_session_logged_in logged_in
t_check ssh_pending_one_held hold "$SSH_PORT" 1 ssh1
SSH_HOLD=$HOLD_PID
dropped() {
    local got
    got=$("$PYTHON" "$T/probe.py" "$SSH_PORT")
    [ "$got" = eof ] || { echo "got: $got"; return 1; }
    grep -q "ssh: drop connection from 127.0.0.1: 1 not yet authenticated" "$T/sshlim.log" ||
        { tail "$T/sshlim.log"; return 1; }
}
t_check ssh_max_startups_drops dropped
# The held connection sends nothing: the grace time ends it, and a new
# one is served (bounded: grace 3 s, then up to 10 s of retries).
served_after_grace() {
    local got
    for _ in $(seq 20); do
        got=$("$PYTHON" "$T/probe.py" "$SSH_PORT")
        case $got in SSH-2.0-*) return 0 ;; esac
        sleep 0.5
    done
    echo "last probe: $got"
    return 1
}
t_check ssh_grace_frees_startup served_after_grace
release "$SSH_HOLD"
release "$SESS_PID"
t_check ssh_ferryd_stop t_ferryd_stop
t_check no_sanitizer_reports t_no_sanitizer_reports "$T/lim.out" "$T/sshlim.out"

t_done
