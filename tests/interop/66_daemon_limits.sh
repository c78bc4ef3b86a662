#!/usr/bin/env bash
# Limits on what a peer can make a ferry client or daemon hold: the HTTP
# proxy's answer (RSYNC_PROXY) is shown escaped, bounded and waited for only
# so long; the TCP daemon's `max connections per host` refuses the excess
# in the listener, before a child is forked.
. "$(dirname "$0")/lib.sh"
t_setup

run() {
    local out=$1
    shift
    (exec "$@") >"$out.out" 2>"$out.err" </dev/null
    echo $? >"$out.rc"
}

show_run() {
    local f
    for f in "$1.out" "$1.err"; do
        [ -s "$f" ] && { echo "--- $f:"; head -n 20 "$f"; }
    done
    return 0
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

t_done
