#!/bin/bash
# --log-file / --log-file-format on the client, and on the daemon's command
# line, compared line by line with real rsync (timestamps, pids and byte
# counts normalised).
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON"
t_setup

SRC=$T/src
mkdir -p "$SRC/sub"
echo a >"$SRC/a"
echo b >"$SRC/sub/b"
touch -d @1600000000 "$SRC/a" "$SRC/sub/b"

# Drop the stamp and the counts, which legitimately differ.
norm() {
    sed -E -e 's/^[0-9]{4}\/[0-9]{2}\/[0-9]{2} [0-9:]{8} \[[0-9]+\] //' \
        -e 's/^sent [0-9]+ bytes  received [0-9]+ bytes  total size ([0-9]+)$/sent N  received N  total size \1/' "$1"
}

both_log() { # TAG ARGS... (DST / LOG stand for the destination and log)
    local tag=$1 tool
    shift
    for tool in rsync ferry; do
        local d="$T/$tag.$tool" bin=$RSYNC
        [ $tool = ferry ] && bin=$FERRY
        local args=("${@//DST/$d}")
        args=("${args[@]//LOG/$d.log}")
        "$bin" "${args[@]}" >"$d.out" 2>&1 || { echo "$tool failed"; cat "$d.out"; return 1; }
    done
    diff <(norm "$T/$tag.rsync.log") <(norm "$T/$tag.ferry.log")
}

t_check log_file_local_copy both_log copy -a --log-file=LOG "$SRC/" DST/
check_update2() {
    echo changed2 >"$SRC/a"
    touch -d @1600000200 "$SRC/a"
    echo extra >"$T/copy.rsync/extra"
    echo extra >"$T/copy.ferry/extra"
    for tool in rsync ferry; do
        local bin=$RSYNC
        [ $tool = ferry ] && bin=$FERRY
        "$bin" -a --delete --log-file="$T/upd.$tool.log" "$SRC/" "$T/copy.$tool/" || return 1
    done
    # the deletion and the item lines come from two processes in a local
    # copy, so only the set of lines is compared
    diff <(norm "$T/upd.rsync.log" | sort) <(norm "$T/upd.ferry.log" | sort)
}
t_check log_file_update_and_delete check_update2
t_check log_file_format both_log fmt -a --log-file=LOG --log-file-format='%o %n %l' "$SRC/" DST/

t_rsyncd_start lf_rsyncd "[m]
    path = $SRC" || { t_fail rsyncd_start; t_done; }
t_check log_file_pull_from_rsyncd both_log pull -a --log-file=LOG \
    "rsync://127.0.0.1:$RSYNCD_PORT/m/" DST/

check_daemon_override() {
    local conf=$T/dl.conf port pid
    {
        echo "use chroot = no"
        echo "log file = $T/config.log"
        [ "$(id -u)" = 0 ] && printf 'uid = root\ngid = root\n'
        echo "[m]"
        echo "    path = $SRC"
        echo "    transfer logging = yes"
    } >"$conf"
    port=$(t_free_port) || return 1
    "$FERRY" --daemon --no-detach --address=127.0.0.1 --port="$port" --config="$conf" \
        --log-file="$T/cli.log" --log-file-format='XFER %o %f' >/dev/null 2>&1 </dev/null &
    pid=$!
    t_track_pid "$pid"
    t_wait_port "$port" 10 "$pid" || return 1
    "$RSYNC" -a "rsync://127.0.0.1:$port/m/" "$T/dl/" || return 1
    kill "$pid"
    [ -s "$T/cli.log" ] && [ ! -e "$T/config.log" ] && grep -q "connect from" "$T/cli.log" &&
        grep -q "XFER send" "$T/cli.log"
}
t_check daemon_log_file_option_overrides_config check_daemon_override

t_done
