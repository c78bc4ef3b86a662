#!/bin/bash
# Daemon parity: the same config is served by a real rsync daemon and by
# the ferry daemon, a real rsync client runs the same requests against
# each, and what the client gets (exit code, files) and what the daemon
# writes to its log file must agree with rsyncd.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC"
t_setup

SRC=$T/src
mkdir -p "$SRC/sub/deep" "$SRC/sec"
echo hello >"$SRC/a.txt"
echo world >"$SRC/sub/b.txt"
echo deeper >"$SRC/sub/deep/c.txt"
echo secret >"$SRC/sec/k.txt"

conf_for() { # DAEMON
    cat <<EOF2
[pub]
    path = $SRC
[excl]
    path = $SRC
    exclude = sub/ /sec
EOF2
}

t_rsyncd_start parity_rsyncd "$(conf_for rsyncd)" || { t_fail rsyncd_start; t_done; }
t_ferryd_start parity_ferryd "$(conf_for ferryd)" || { t_fail ferryd_start; t_done; }
declare -A PORT=([rsyncd]=$RSYNCD_PORT [ferryd]=$FERRYD_PORT)
declare -A LOG=([rsyncd]=$T/parity_rsyncd.log [ferryd]=$T/parity_ferryd.log)

# Run the same rsync client command against both daemons; keep exit code,
# stdout and stderr (ports and daemon names normalised).
run_both() { # TAG RSYNC-ARGS... (URL as rsync://127.0.0.1:PORT/..., DST)
    local tag=$1 d
    shift
    for d in rsyncd ferryd; do
        rm -rf "$T/dst.$d"
        mkdir -p "$T/dst.$d"
        local args=("${@//PORT/${PORT[$d]}}")
        args=("${args[@]//DST/$T/dst.$d}")
        "$RSYNC" "${args[@]}" >"$T/$tag.$d.out" 2>"$T/$tag.$d.err" </dev/null
        echo $? >"$T/$tag.$d.rc"
    done
}

same_rc() { # TAG
    cmp -s "$T/$1.rsyncd.rc" "$T/$1.ferryd.rc" && return 0
    echo "exit codes differ: rsyncd $(cat "$T/$1.rsyncd.rc") ferryd $(cat "$T/$1.ferryd.rc")"
    cat "$T/$1.ferryd.err"
    return 1
}

# A directory the module excludes does not exist for the client, also
# when it is only the directory an argument names a file or the contents
# of: rsync fails its change_dir with ENOENT (code 23) and sends nothing.
check_excluded_source_dir() {
    local url
    for url in excl/sub/ excl/sub/deep/c.txt excl/sec/k.txt excl/sub/deep/; do
        run_both exdir -r "rsync://127.0.0.1:PORT/$url" DST/
        same_rc exdir || return 1
        [ "$(cat "$T/exdir.ferryd.rc")" = 23 ] || return 1
        grep -q 'change_dir "[a-z/]*" .*failed: No such file or directory' \
            "$T/exdir.ferryd.err" || { cat "$T/exdir.ferryd.err"; return 1; }
        [ -z "$(ls -A "$T/dst.ferryd")" ] || { echo "$url leaked:"; ls -R "$T/dst.ferryd"; return 1; }
    done
}
t_check excluded_source_dir_is_missing check_excluded_source_dir

t_done
