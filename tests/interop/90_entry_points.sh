#!/bin/bash
# rsync's other entry points, ferry against REAL rsync: RSYNC_CONNECT_PROG
# both ways (the daemon on a socket pair, no listener), an inetd-style
# ferry daemon (a tiny accept-and-exec helper), systemd socket activation
# (LISTEN_FDS/LISTEN_PID from a bind-then-exec harness), RSYNC_PROXY
# through a small CONNECT proxy, -VV JSON against rsync's, --protocol
# 29..31, --secluded-args both ways over a remote shell and a daemon,
# --old-args, --early-input, --sockopts, --max-alloc, RSYNC_PORT.
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
t_check mktree t_mktree "$SRC" || t_done
# Names a remote shell would split or expand, for the argument tests.
mkdir -p "$T/args/dir one" && echo "one" >"$T/args/dir one/a b.txt" &&
    echo "star" >"$T/args/dir one/*" && echo "two" >"$T/args/two.txt"

MODS="[src]
    path = $SRC
    read only = yes
[up]
    path = $T/up
    read only = no
[args]
    path = $T/args
    read only = yes"
mkdir -p "$T/up"
_t_rsyncd_conf rsyncd "$MODS" >"$T/rsyncd.conf"
_t_rsyncd_conf ferryd "$MODS" >"$T/ferryd.conf"

# ------------------------------------------------------------------ helpers

ok_compare() {
    local r=$1
    shift
    ok "$r" && t_compare "$@"
}

# fails_with RUN CODE TEXT -- exit CODE and TEXT on stderr.
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

# listing_has RUN MODULE -- a module listing that names MODULE.
listing_has() {
    ok "$1" || return 1
    grep -q "^$2 " "$1.out" || { echo "no module $2 listed"; show_run "$1"; return 1; }
}

FERRY_PROG="$FERRY --daemon --config=$T/ferryd.conf"
RSYNC_PROG="$RSYNC --daemon --config=$T/rsyncd.conf"

# ------------------------------------- RSYNC_CONNECT_PROG, real rsync client

run "$T/cp_r_list" env RSYNC_CONNECT_PROG="$FERRY_PROG" "$RSYNC" rsync://localhost/
t_check connect_prog_rsync_lists listing_has "$T/cp_r_list" src
run "$T/cp_r_pull" env RSYNC_CONNECT_PROG="$FERRY_PROG" "$RSYNC" -aH rsync://localhost/src/ "$T/cp_r_pull/"
t_check connect_prog_rsync_pulls ok_compare "$T/cp_r_pull" "$SRC" "$T/cp_r_pull" --nsec
run "$T/cp_r_push" env RSYNC_CONNECT_PROG="$FERRY_PROG" "$RSYNC" -aH "$SRC/" rsync://localhost/up/r/
t_check connect_prog_rsync_pushes ok_compare "$T/cp_r_push" "$SRC" "$T/up/r" --nsec

# ------------------------------------------ RSYNC_CONNECT_PROG, ferry client

run "$T/cp_f_list" env RSYNC_CONNECT_PROG="$RSYNC_PROG" "$FERRY" rsync://localhost/
t_check connect_prog_ferry_lists listing_has "$T/cp_f_list" src
run "$T/cp_f_pull" env RSYNC_CONNECT_PROG="$RSYNC_PROG" "$FERRY" -aH localhost::src/ "$T/cp_f_pull/"
t_check connect_prog_ferry_pulls ok_compare "$T/cp_f_pull" "$SRC" "$T/cp_f_pull" --nsec
run "$T/cp_f_push" env RSYNC_CONNECT_PROG="$RSYNC_PROG" "$FERRY" -aH "$SRC/" localhost::up/f/
t_check connect_prog_ferry_pushes ok_compare "$T/cp_f_push" "$SRC" "$T/up/f" --nsec

# %H is the host, single-quoted; %% a percent sign. A host that could
# change the command's meaning is refused before anything runs.
run "$T/cp_host" env RSYNC_CONNECT_PROG="echo %H 100%% >$T/cp_host.seen; exec $RSYNC_PROG" \
    "$FERRY" rsync://host-1.example:99/
host_seen() { listing_has "$1" src && [ "$(cat "$1.seen")" = "host-1.example 100%" ]; }
t_check connect_prog_host_substituted host_seen "$T/cp_host"
run "$T/cp_unsafe" env RSYNC_CONNECT_PROG="touch $T/cp_unsafe.ran %H" "$FERRY" 'rsync://-rf/src/'
unsafe_refused() { fails_with "$1" 10 "unsafe host characters" && [ ! -e "$1.ran" ]; }
t_check connect_prog_unsafe_host_refused unsafe_refused "$T/cp_unsafe"

# ---------------------------------------------- inetd-style ferry daemon

# accept one connection on a fresh port, then exec CMD with it on 0 and 1.
cat >"$T/inetd.py" <<'EOF'
import os, socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
with open(sys.argv[1], "w") as f:
    f.write("%d\n" % s.getsockname()[1])
c, _ = s.accept()
s.close()
os.dup2(c.fileno(), 0)
os.dup2(c.fileno(), 1)
c.close()
os.execvp(sys.argv[2], sys.argv[2:])
EOF
"$PYTHON" "$T/inetd.py" "$T/inetd.port" "$FERRY" --daemon --config="$T/ferryd.conf" \
    2>"$T/inetd.err" &
INETD_PID=$!
t_track_pid "$INETD_PID"
for _ in $(seq 50); do [ -s "$T/inetd.port" ] && break; sleep 0.1; done
run "$T/inetd_pull" "$RSYNC" -aH "rsync://127.0.0.1:$(cat "$T/inetd.port")/src/" "$T/inetd_pull/"
t_check inetd_serves_pull ok_compare "$T/inetd_pull" "$SRC" "$T/inetd_pull" --nsec
served_one() {
    local _
    for _ in $(seq 50); do t_pid_alive "$INETD_PID" || break; sleep 0.1; done
    ! t_pid_alive "$INETD_PID" && wait "$INETD_PID"
}
t_check inetd_exits_after_one served_one

# ---------------------------------------------- systemd socket activation

# bind a listening socket, pass it as fd 3 with LISTEN_FDS=1, and exec CMD
# through sh so that LISTEN_PID can be set to the pid CMD will have.
cat >"$T/sdact.py" <<'EOF'
import os, socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(16)
with open(sys.argv[1], "w") as f:
    f.write("%d\n" % s.getsockname()[1])
if s.fileno() != 3:
    os.dup2(s.fileno(), 3)
os.set_inheritable(3, True)
env = dict(os.environ, LISTEN_FDS=sys.argv[2])
os.execvpe("sh", ["sh", "-c", 'LISTEN_PID=$$ exec "$0" "$@"'] + sys.argv[3:], env)
EOF
"$PYTHON" "$T/sdact.py" "$T/sd.port" 1 "$FERRY" --daemon --no-detach --config="$T/ferryd.conf" \
    >"$T/sd.out" 2>&1 &
SD_PID=$!
t_track_pid "$SD_PID"
for _ in $(seq 50); do [ -s "$T/sd.port" ] && break; sleep 0.1; done
SD_PORT=$(cat "$T/sd.port")
run "$T/sd_list" "$RSYNC" "rsync://127.0.0.1:$SD_PORT/"
t_check socket_activation_lists listing_has "$T/sd_list" src
run "$T/sd_pull" "$RSYNC" -aH "rsync://127.0.0.1:$SD_PORT/src/" "$T/sd_pull/"
t_check socket_activation_rsync_pulls ok_compare "$T/sd_pull" "$SRC" "$T/sd_pull" --nsec
run "$T/sd_fpull" "$FERRY" -aH "rsync://127.0.0.1:$SD_PORT/src/" "$T/sd_fpull/"
t_check socket_activation_ferry_pulls ok_compare "$T/sd_fpull" "$SRC" "$T/sd_fpull" --nsec
t_check socket_activation_keeps_serving t_pid_alive "$SD_PID"
t_ferryd_stop "$SD_PID"

"$PYTHON" "$T/sdact.py" "$T/sd2.port" 2 "$FERRY" --daemon --no-detach \
    --config="$T/ferryd.conf" >"$T/sd2.out" 2>"$T/sd2.err"
echo $? >"$T/sd2.rc"
t_check socket_activation_two_fds_refused fails_with "$T/sd2" 10 "2 sockets were passed"
run "$T/sd3" sh -c "LISTEN_FDS=1 LISTEN_PID=\$\$ exec $FERRY --daemon --no-detach \
    --config=$T/ferryd.conf 3</dev/null"
t_check socket_activation_not_a_socket fails_with "$T/sd3" 10 "fd 3 is not a socket"

# ------------------------------------------------------------ RSYNC_PROXY

t_rsyncd_start rsyncd_tcp "$MODS" || { t_fail rsyncd_start "rsync daemon did not start"; t_done; }

# A CONNECT proxy: PORTFILE [USER:PASS]; logs each request line to PORTFILE.log.
cat >"$T/proxy.py" <<'EOF'
import base64, os, select, socket, sys, threading
portfile = sys.argv[1]
want = sys.argv[2] if len(sys.argv) > 2 else None
log = open(portfile + ".log", "a", buffering=1)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(8)
def pump(a, b):
    while True:
        r, _, _ = select.select([a, b], [], [])
        for x in r:
            d = x.recv(65536)
            if not d:
                return
            (b if x is a else a).sendall(d)
def serve(c):
    f = c.makefile("rb")
    req = f.readline().decode().strip()
    hdrs = []
    while True:
        l = f.readline().decode().strip()
        if not l:
            break
        hdrs.append(l)
    log.write(req + "\n")
    if want is not None:
        ok = "Proxy-Authorization: Basic " + base64.b64encode(want.encode()).decode()
        if ok not in hdrs:
            c.sendall(b"HTTP/1.0 407 Proxy Authentication Required\r\n\r\n")
            c.close()
            return
    host, port = req.split()[1].rsplit(":", 1)
    u = socket.create_connection((host, int(port)))
    c.sendall(b"HTTP/1.0 200 Connection established\r\nX-Proxy: test\r\n\r\n")
    try:
        pump(c, u)
    finally:
        u.close()
        c.close()
with open(portfile + ".tmp", "w") as f:
    f.write("%d\n" % s.getsockname()[1])
os.rename(portfile + ".tmp", portfile)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
EOF
start_proxy() {
    local pf=$1
    shift
    "$PYTHON" "$T/proxy.py" "$pf" "$@" 2>"$pf.err" &
    t_track_pid $!
    for _ in $(seq 50); do [ -s "$pf" ] && break; sleep 0.1; done
    [ -s "$pf" ]
}
if ! start_proxy "$T/px" || ! start_proxy "$T/pxa" alice:s3cret; then
    t_fail proxy_start "proxy did not start"
    t_done
fi
PX=127.0.0.1:$(cat "$T/px")
PXA=127.0.0.1:$(cat "$T/pxa")

run "$T/px_pull" env RSYNC_PROXY="$PX" "$FERRY" -aH "rsync://127.0.0.1:$RSYNCD_PORT/src/" "$T/px_pull/"
proxied() {
    ok_compare "$@" && grep -q "^CONNECT 127.0.0.1:$RSYNCD_PORT HTTP/1.0$" "$T/px.log"
}
t_check proxy_pull proxied "$T/px_pull" "$SRC" "$T/px_pull" --nsec
run "$T/px_auth" env RSYNC_PROXY="alice:s3cret@$PXA" "$FERRY" -aH \
    "rsync://127.0.0.1:$RSYNCD_PORT/src/" "$T/px_auth/"
t_check proxy_basic_auth_pull ok_compare "$T/px_auth" "$SRC" "$T/px_auth" --nsec
run "$T/px_bad" env RSYNC_PROXY="alice:wrong@$PXA" "$FERRY" "rsync://127.0.0.1:$RSYNCD_PORT/"
t_check proxy_refusal_reported fails_with "$T/px_bad" 10 "bad response from proxy -- HTTP/1.0 407"
run "$T/px_spec" env RSYNC_PROXY="nocolon" "$FERRY" "rsync://127.0.0.1:$RSYNCD_PORT/"
t_check proxy_bad_spec fails_with "$T/px_spec" 10 "invalid proxy specification"
# A "proxy" that answers 200 and then never ends its header.
"$PYTHON" -c 'import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
open(sys.argv[1], "w").write("%d\n" % s.getsockname()[1])
c, _ = s.accept(); c.recv(4096)
c.sendall(b"HTTP/1.0 200 OK\r\n")
try:
    while True: c.sendall(b"X-Junk: " + b"y" * 100 + b"\r\n")
except OSError: pass' "$T/pxevil" &
t_track_pid $!
for _ in $(seq 50); do [ -s "$T/pxevil" ] && break; sleep 0.1; done
run "$T/px_evil" timeout 20 env RSYNC_PROXY="127.0.0.1:$(cat "$T/pxevil")" "$FERRY" \
    "rsync://127.0.0.1:$RSYNCD_PORT/"
t_check proxy_endless_header_bounded fails_with "$T/px_evil" 10 "proxy response header has more than"

# -------------------------------------------------------------- -VV JSON

"$FERRY" -VV >"$T/vv.json" 2>"$T/vv.err"
"$RSYNC" -VV >"$T/rvv.json" 2>/dev/null
cat >"$T/vv.py" <<'EOF'
import json, subprocess, sys
ferry, rsync_json, ferry_json = sys.argv[1], sys.argv[2], sys.argv[3]
f = json.load(open(ferry_json))
bad = []
try:
    r = json.load(open(rsync_json))
except ValueError:
    r = None
if r is not None:
    # rsync adds its web site; ferry has none.
    if set(f) != set(r) - {"url"}:
        bad.append("top-level keys differ: %s vs %s" % (sorted(f), sorted(r)))
    for obj in ("capabilities", "optimizations"):
        extra = set(f[obj]) - set(r[obj])
        # ACL-at and IDN depend on how rsync was built.
        missing = set(r[obj]) - set(f[obj]) - {"ACL_at", "IDN"}
        if extra or missing:
            bad.append("%s: ferry-only %s, rsync-only %s" % (obj, sorted(extra), sorted(missing)))
if f["program"] != "ferry" or not f["protocol"].startswith("32"):
    bad.append("program/protocol: %s %s" % (f["program"], f["protocol"]))
# Each capability must match what the option parser accepts.
probes = {
    "hardlinks": ["-H"], "atimes": ["-U"], "batchfiles": ["--write-batch=X"],
    "inplace": ["--inplace"], "append": ["--append"], "ACLs": ["-A"],
    "xattrs": ["-X"], "iconv": ["--iconv=utf8"], "prealloc": ["--preallocate"],
    "stop_at": ["--stop-at=23:59"], "crtimes": ["-N"], "secluded_args": ["-s"],
}
for cap, args in probes.items():
    p = subprocess.run([ferry, "-n"] + args + ["/nonexistent-src", "/nonexistent-dst"],
                       capture_output=True, text=True)
    refused = "not supported yet" in p.stderr or "does not support" in p.stderr
    claimed = f["capabilities"][cap] not in (False,)
    if claimed == refused:
        bad.append("%s: -VV says %s, %s %s" % (cap, f["capabilities"][cap], " ".join(args),
                   "is refused" if refused else "is accepted"))
for k, want in (("checksum_list", "none"), ("compress_list", "none"), ("daemon_auth_list", "md5")):
    if want not in f[k]:
        bad.append("%s lacks %s" % (k, want))
print("\n".join(bad))
sys.exit(1 if bad else 0)
EOF
t_check vv_is_json "$PYTHON" -c 'import json, sys; json.load(open(sys.argv[1]))' "$T/vv.json"
t_check vv_keys_match_rsync_and_options "$PYTHON" "$T/vv.py" "$FERRY" "$T/rvv.json" "$T/vv.json"
version_layout() {
    local v
    v=$("$FERRY" --version) || return 1
    head -n 1 <<<"$v" | grep -qE '^ferry  version [0-9.]+  protocol version 32$' &&
        grep -qx 'Capabilities:' <<<"$v" && grep -qx 'Optimizations:' <<<"$v" &&
        grep -qx 'Checksum list:' <<<"$v" && grep -qx 'Compress list:' <<<"$v" &&
        grep -qx 'Daemon auth list:' <<<"$v" && grep -q 'optional secluded-args' <<<"$v"
}
t_check version_layout version_layout

# --------------------------------------------------- --protocol=29..31

for p in 29 30 31; do
    run "$T/proto$p" "$FERRY" --protocol=$p -aH "rsync://127.0.0.1:$RSYNCD_PORT/src/" "$T/proto$p/"
    # Nanoseconds travel from protocol 31 on.
    nsec=--nsec
    [ "$p" -lt 31 ] && nsec=
    t_check "protocol_${p}_pull_from_rsyncd" ok_compare "$T/proto$p" "$SRC" "$T/proto$p" $nsec
done
run "$T/proto26" "$FERRY" --protocol=26 "rsync://127.0.0.1:$RSYNCD_PORT/"
t_check protocol_26_refused fails_with "$T/proto26" 1 "protocol version must be between 27 and 32"
run "$T/seed" "$FERRY" -aH --checksum-seed=12345 -c "rsync://127.0.0.1:$RSYNCD_PORT/src/" "$T/seed/"
t_check checksum_seed_pull ok_compare "$T/seed" "$SRC" "$T/seed" --nsec

# --------------------------------------- --secluded-args, --old-args

# A remote shell that runs the command here and logs its command line.
cat >"$T/rsh" <<EOF
#!/bin/sh
shift
echo "\$*" >>"$T/rsh.log"
exec sh -c "\$*"
EOF
chmod 0755 "$T/rsh"
RSH=$T/rsh
last_cmd() { tail -n 1 "$T/rsh.log"; }
# secluded RUN: no path on the remote command line, which ends with "-s...".
secluded_cmd() { last_cmd | grep -qE -- ' -s[a-zA-Z]*(e\.[a-zA-Z]*)?$' || { last_cmd; return 1; }; }
args_pulled() {
    ok "$1" && [ "$(cat "$2/a b.txt")" = one ] && [ "$(cat "$2/*")" = star ] && secluded_cmd
}

run "$T/s_rf" "$RSYNC" -s -a -e "$RSH" --rsync-path="$FERRY" "h:$T/args/dir one/" "$T/s_rf/"
t_check secluded_rsync_client_ferry_server_pull args_pulled "$T/s_rf" "$T/s_rf"
mkdir -p "$T/s_rf_push" "$T/s_fr_push"
run "$T/s_rf_push" "$RSYNC" -s -a -e "$RSH" --rsync-path="$FERRY" "$T/args/dir one/" \
    "h:$T/s_rf_push/x y/"
pushed() { ok "$1" && [ "$(cat "$2/a b.txt")" = one ] && [ "$(cat "$2/*")" = star ] && secluded_cmd; }
t_check secluded_rsync_client_ferry_server_push pushed "$T/s_rf_push" "$T/s_rf_push/x y"
run "$T/s_fr" "$FERRY" -s -a -e "$RSH" --rsync-path="$RSYNC" "h:$T/args/dir one/" "$T/s_fr/"
t_check secluded_ferry_client_rsync_server_pull args_pulled "$T/s_fr" "$T/s_fr"
run "$T/s_fr_push" "$FERRY" -s -a -e "$RSH" --rsync-path="$RSYNC" "$T/args/dir one/" \
    "h:$T/s_fr_push/x y/"
t_check secluded_ferry_client_rsync_server_push pushed "$T/s_fr_push" "$T/s_fr_push/x y"
run "$T/s_env" env RSYNC_PROTECT_ARGS=1 "$FERRY" -a -e "$RSH" --rsync-path="$RSYNC" \
    "h:$T/args/dir one/" "$T/s_env/"
t_check rsync_protect_args_env args_pulled "$T/s_env" "$T/s_env"
run "$T/s_dr" env RSYNC_CONNECT_PROG="$RSYNC_PROG" "$FERRY" -s -a "localhost::args/dir one/" "$T/s_dr/"
t_check secluded_ferry_client_rsync_daemon ok_compare "$T/s_dr" "$T/args/dir one" "$T/s_dr"
run "$T/s_df" env RSYNC_CONNECT_PROG="$FERRY_PROG" "$RSYNC" -s -a "localhost::args/dir one/" "$T/s_df/"
t_check secluded_rsync_client_ferry_daemon ok_compare "$T/s_df" "$T/args/dir one" "$T/s_df"
run "$T/s_df29" env RSYNC_CONNECT_PROG="$FERRY_PROG" "$RSYNC" --protocol=29 -s -a \
    "localhost::args/dir one/" "$T/s_df29/"
t_check secluded_rsync_client_ferry_daemon_protocol_29 ok_compare "$T/s_df29" "$T/args/dir one" "$T/s_df29"

# --old-args: the remote shell splits the path argument at spaces again.
run "$T/old" "$FERRY" --old-args -a -e "$RSH" --rsync-path="$RSYNC" \
    "h:$T/args/two.txt $T/args/dir\\ one" "$T/old/"
old_split() { ok "$1" && [ -f "$1/two.txt" ] && [ -f "$1/dir one/a b.txt" ]; }
t_check old_args_split old_split "$T/old"
run "$T/old_env" env RSYNC_OLD_ARGS=1 "$FERRY" -a -e "$RSH" --rsync-path="$RSYNC" \
    "h:$T/args/two.txt $T/args/dir\\ one" "$T/old_env/"
t_check rsync_old_args_env old_split "$T/old_env"
run "$T/old_s" "$FERRY" --old-args -s -a "$SRC/" "$T/old_s/"
t_check old_args_conflicts_with_secluded fails_with "$T/old_s" 1 "--secluded-args conflicts with --old-args"

# ------------------------------------------------------------- --early-input

mkdir -p "$T/early"
cat >"$T/early.sh" <<EOF
#!/bin/sh
cat >"$T/early/got.\$\$"
EOF
chmod 0755 "$T/early.sh"
_t_rsyncd_conf rsyncd_early "[early]
    path = $SRC
    early exec = $T/early.sh" >"$T/rsyncd_early.conf"
printf 'early data\nline 2\n' >"$T/early.in"
run "$T/ei" env RSYNC_CONNECT_PROG="$RSYNC --daemon --config=$T/rsyncd_early.conf" \
    "$FERRY" --early-input="$T/early.in" -aH localhost::early/ "$T/ei/"
early_got() { ok_compare "$1" "$SRC" "$T/ei" --nsec && cat "$T"/early/got.* | cmp - "$T/early.in"; }
t_check early_input_to_rsync_daemon early_got "$T/ei"
run "$T/ei_f" env RSYNC_CONNECT_PROG="$FERRY_PROG" "$RSYNC" --early-input="$T/early.in" -aH \
    localhost::src/ "$T/ei_f/"
t_check early_input_accepted_by_ferry_daemon ok_compare "$T/ei_f" "$SRC" "$T/ei_f" --nsec
head -c 6000 /dev/zero >"$T/early.big"
run "$T/ei_big" "$FERRY" --early-input="$T/early.big" "rsync://127.0.0.1:$RSYNCD_PORT/"
t_check early_input_too_big fails_with "$T/ei_big" 5 "is > 5120 bytes"

# ------------------------------------- --sockopts, --max-alloc, RSYNC_PORT

run "$T/so" "$FERRY" -aH --sockopts=SO_KEEPALIVE,SO_SNDBUF=262144,TCP_NODELAY,IPTOS_THROUGHPUT \
    --blocking-io "rsync://127.0.0.1:$RSYNCD_PORT/src/" "$T/so/"
t_check sockopts_pull ok_compare "$T/so" "$SRC" "$T/so" --nsec
run "$T/so_bad" "$FERRY" --sockopts=SO_BOGUS "rsync://127.0.0.1:$RSYNCD_PORT/"
t_check sockopts_unknown_refused fails_with "$T/so_bad" 1 "Unknown socket option SO_BOGUS"
DSO_PORT=$(t_free_port)
"$FERRY" --daemon --no-detach --address=127.0.0.1 --port="$DSO_PORT" \
    --sockopts=SO_KEEPALIVE,SO_RCVBUF=262144 --config="$T/ferryd.conf" >"$T/dso.out" 2>&1 </dev/null &
DSO_PID=$!
t_track_pid "$DSO_PID"
t_wait_port "$DSO_PORT" 10 "$DSO_PID"
run "$T/dso" "$RSYNC" -aH "rsync://127.0.0.1:$DSO_PORT/src/" "$T/dso/"
t_check sockopts_daemon_listener ok_compare "$T/dso" "$SRC" "$T/dso" --nsec
t_ferryd_stop "$DSO_PID"
run "$T/ma" "$FERRY" -aH --max-alloc=64M -e "$RSH" --rsync-path="$RSYNC" "h:$SRC/" "$T/ma/"
forwarded() { ok_compare "$@" && last_cmd | grep -q -- '--max-alloc=64M'; }
t_check max_alloc_forwarded forwarded "$T/ma" "$SRC" "$T/ma" --nsec
run "$T/ma_small" "$FERRY" --max-alloc=10k "$SRC/" "$T/ma_small/"
t_check max_alloc_too_small fails_with "$T/ma_small" 1 "too small"

cat >"$T/rsh_port" <<EOF
#!/bin/sh
echo "RSYNC_PORT=\$RSYNC_PORT" >>"$T/rsh_port.log"
shift
exec sh -c "\$*"
EOF
chmod 0755 "$T/rsh_port"
run "$T/rp" "$FERRY" -e "$T/rsh_port" --rsync-path="$RSYNC --config=$T/rsyncd.conf" \
    "rsync://h:2873/src/one" "$T/rp_one"
rsync_port_set() { ok "$1" && grep -qx 'RSYNC_PORT=2873' "$T/rsh_port.log"; }
t_check rsync_port_for_daemon_over_rsh rsync_port_set "$T/rp"

no_reports() {
    local f bad=0
    for f in "$T"/*.err "$T"/*.out; do
        [ -f "$f" ] || continue
        if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer' "$f"; then
            echo "sanitizer report in $f:"
            grep -m1 -A12 -E 'ERROR: [A-Za-z]*Sanitizer|runtime error' "$f"
            bad=1
        fi
    done
    return "$bad"
}
t_check no_sanitizer_reports no_reports

t_done
