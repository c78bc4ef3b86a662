#!/bin/bash
# IPv6: ferry pulls from a real rsync daemon on ::1 (URL and [addr]::module
# forms), and real rsync pulls from a ferry daemon on ::1.
set -u
. "$(dirname "$0")/lib.sh"
t_setup
t_require rsync python3
if ! python3 -c 'import socket; s=socket.socket(socket.AF_INET6); s.bind(("::1", 0))' 2>/dev/null; then
    t_skip ipv6 "no IPv6 loopback on this machine"
    t_done
fi

mkdir -p "$T/src/sub"
echo hello >"$T/src/a"
head -c 50000 /dev/urandom >"$T/src/sub/b"
{
    echo "use chroot = no"
    echo "munge symlinks = no"
    if [ "$(id -u)" = 0 ]; then printf 'uid = root\ngid = root\n'; fi
    echo "[m]"
    echo "path = $T/src"
} >"$T/d.conf"

start_on_v6() { # NAME CMD... -> sets PORT, tracks the pid
    local name=$1; shift
    PORT=$(t_free_port)
    "$@" --no-detach --address=::1 --port="$PORT" --config="$T/d.conf" \
        >"$T/$name.out" 2>&1 </dev/null &
    t_track_pid $!
    for _ in $(seq 50); do
        python3 -c "import socket,sys; socket.create_connection(('::1', int(sys.argv[1])), 1)" \
            "$PORT" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

TREECMP="$(dirname "$0")/treecmp.py"
if start_on_v6 rsyncd rsync --daemon; then
    t_check url_pull "$FERRY" -a "rsync://[::1]:$PORT/m/" "$T/d1/"
    t_check url_pull_same python3 "$TREECMP" "$T/src" "$T/d1"
    t_check bracket_pull "$FERRY" -a --port="$PORT" "[::1]::m/" "$T/d2/"
    t_check bracket_pull_same python3 "$TREECMP" "$T/src" "$T/d2"
else
    t_fail rsyncd_v6 "real rsync daemon did not start on ::1"
fi
if start_on_v6 ferryd "$FERRY" --daemon; then
    t_check rsync_from_ferryd rsync -a "rsync://[::1]:$PORT/m/" "$T/d3/"
    t_check rsync_from_ferryd_same python3 "$TREECMP" "$T/src" "$T/d3"
else
    t_fail ferryd_v6 "ferry daemon did not start on ::1"
fi
t_done
