#!/bin/bash
# The module hooks "early exec", "pre-xfer exec" and "post-xfer exec": the
# same config is served by a real rsync daemon and by the ferry daemon, a
# real rsync client runs the same requests against each, and the hooks'
# environment, the client's messages and exit codes must agree.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC"
t_setup

SRC=$T/src
mkdir -p "$SRC/sub" "$T/hooks"
echo hello >"$SRC/a.txt"
echo world >"$SRC/sub/b.txt"

# A hook that records its environment (sorted, RSYNC_* only) in a file
# named by its first argument.
cat >"$T/record.sh" <<'EOF'
#!/bin/sh
env | grep '^RSYNC_' | sort >"$1"
[ -n "$2" ] && cat >"$1.stdin"
exit 0
EOF
chmod +x "$T/record.sh"

conf_for() { # DAEMON
    local d=$1
    cat <<EOF
[env]
    path = $SRC
    read only = no
    pre-xfer exec = $T/record.sh $T/hooks/$d.pre
    post-xfer exec = $T/record.sh $T/hooks/$d.post
[deny]
    path = $SRC
    pre-xfer exec = echo "not today: \$RSYNC_REQUEST"; echo second line; exit 3
[early]
    path = $SRC
    early exec = $T/record.sh $T/hooks/$d.early stdin
[earlyfail]
    path = $SRC
    early exec = exit 1
EOF
}

t_rsyncd_start hooks_rsyncd "$(conf_for rsyncd)" || { t_fail rsyncd_start; t_done; }
t_ferryd_start hooks_ferryd "$(conf_for ferryd)" || { t_fail ferryd_start; t_done; }
declare -A PORT=([rsyncd]=$RSYNCD_PORT [ferryd]=$FERRYD_PORT)

# Run the same rsync client command against both daemons; record exit code
# and stderr (with the port and daemon-specific words normalised).
run_both() { # TAG RSYNC-ARGS... (URL as rsync://127.0.0.1:PORT/...)
    local tag=$1 d
    shift
    for d in rsyncd ferryd; do
        rm -rf "$T/dst.$d"
        mkdir -p "$T/dst.$d"
        local args=("${@//PORT/${PORT[$d]}}")
        args=("${args[@]//DST/$T/dst.$d}")
        "$RSYNC" "${args[@]}" >"$T/$tag.$d.out" 2>"$T/$tag.$d.err"
        echo $? >"$T/$tag.$d.rc"
        # The client's own closing lines differ by how the connection
        # ended: a real rsync daemon that refuses after reading the
        # arguments does not drain the client's data, so the client often
        # sees a reset (exit 10) instead of the daemon's exit code 4.
        # The daemon's own closing line names the daemon ("rsync error:"
        # from rsyncd, "ferry error:" from ferry).
        grep -v -e '^rsync error: ' -e '^ferry error: ' -e '^rsync: \[Receiver\] read error' \
            "$T/$tag.$d.err" | sed -e "s/${PORT[$d]}/PORT/g" -e "s/$d/DAEMON/g" \
            >"$T/$tag.$d.errn"
        sed -i -e 's/^10$/4/' "$T/$tag.$d.rc"
    done
}

same_result() { # TAG
    local tag=$1
    if ! cmp -s "$T/$tag.rsyncd.rc" "$T/$tag.ferryd.rc"; then
        echo "exit codes differ: rsyncd $(cat "$T/$tag.rsyncd.rc") ferryd $(cat "$T/$tag.ferryd.rc")"
        return 1
    fi
    if ! diff "$T/$tag.rsyncd.errn" "$T/$tag.ferryd.errn"; then
        echo "client messages differ"
        return 1
    fi
}

# Normalise a recorded environment: values that differ by daemon.
norm_env() { # FILE
    sed -E -e 's/^RSYNC_PID=[0-9]+$/RSYNC_PID=N/' -e 's/^RSYNC_RAW_STATUS=.*//' \
        -e "s/(rsyncd|ferryd)/DAEMON/g" "$1" | grep -v '^$'
}

check_pre_env() {
    run_both env -a rsync://127.0.0.1:PORT/env/sub/ DST/
    same_result env || return 1
    [ "$(cat "$T/env.ferryd.rc")" = 0 ] || { cat "$T/env.ferryd.err"; return 1; }
    # The post-xfer hook runs after the client has gone: wait for it.
    for _ in $(seq 50); do
        [ -s "$T/hooks/rsyncd.post" ] && [ -s "$T/hooks/ferryd.post" ] && break
        sleep 0.1
    done
    diff <(norm_env "$T/hooks/rsyncd.pre") <(norm_env "$T/hooks/ferryd.pre") || return 1
    grep -q '^RSYNC_REQUEST=env/sub/$' "$T/hooks/ferryd.pre" || return 1
    grep -q '^RSYNC_ARG0=rsyncd$' "$T/hooks/ferryd.pre" || return 1
    grep -q "^RSYNC_MODULE_PATH=$SRC\$" "$T/hooks/ferryd.pre" || return 1
    grep -q '^RSYNC_PID=[0-9]' "$T/hooks/ferryd.pre" || return 1
}
t_check pre_xfer_exec_environment check_pre_env

check_post_env() {
    diff <(norm_env "$T/hooks/rsyncd.post") <(norm_env "$T/hooks/ferryd.post") || return 1
    grep -q '^RSYNC_EXIT_STATUS=0$' "$T/hooks/ferryd.post" || return 1
    grep -q '^RSYNC_RAW_STATUS=0$' "$T/hooks/ferryd.post"
}
t_check post_xfer_exec_environment check_post_env

check_post_status() {
    rm -f "$T/hooks/"*.post
    run_both post_fail -a rsync://127.0.0.1:PORT/env/missing DST/
    cmp "$T/post_fail.rsyncd.rc" "$T/post_fail.ferryd.rc" || return 1
    for _ in $(seq 50); do
        [ -s "$T/hooks/rsyncd.post" ] && [ -s "$T/hooks/ferryd.post" ] && break
        sleep 0.1
    done
    grep -q '^RSYNC_EXIT_STATUS=23$' "$T/hooks/rsyncd.post" || return 1
    diff <(norm_env "$T/hooks/rsyncd.post") <(norm_env "$T/hooks/ferryd.post")
}
t_check post_xfer_exec_sees_exit_status check_post_status

check_deny() {
    run_both deny -a rsync://127.0.0.1:PORT/deny/a.txt DST/
    same_result deny || return 1
    grep -q 'not today: deny/a.txt' "$T/deny.ferryd.err" || return 1
    [ ! -e "$T/dst.ferryd/a.txt" ]
}
t_check pre_xfer_exec_failure_refuses check_deny

check_early() {
    printf 'early bytes\n' >"$T/early.in"
    run_both early --early-input="$T/early.in" -a rsync://127.0.0.1:PORT/early/a.txt DST/
    same_result early || return 1
    cmp "$T/hooks/ferryd.early.stdin" "$T/early.in" || return 1
    diff <(norm_env "$T/hooks/rsyncd.early") <(norm_env "$T/hooks/ferryd.early")
}
t_check early_exec_gets_early_input check_early

check_early_fail() {
    run_both earlyfail -a rsync://127.0.0.1:PORT/earlyfail/a.txt DST/
    same_result earlyfail || return 1
    grep -q 'early exec failed' "$T/earlyfail.ferryd.err"
}
t_check early_exec_failure_refuses check_early_fail

# "daemon uid"/"daemon gid": the whole connection runs as nobody, so a
# module only root can read fails while a world-readable one works, as
# with a real rsync daemon.
check_daemon_uid() {
    [ "$(id -u)" = 0 ] || { echo "needs root"; return 0; }
    local priv=$T/private pub=$T/public d
    mkdir -p "$priv" "$pub"
    echo secret >"$priv/s.txt"
    echo open >"$pub/o.txt"
    chmod 700 "$priv"
    chmod 755 "$T" "$pub"
    chmod 644 "$pub/o.txt"
    local body="daemon uid = nobody
daemon gid = nogroup
[pub]
    path = $pub
[priv]
    path = $priv"
    t_rsyncd_start uid_rsyncd "$body" || return 1
    t_ferryd_start uid_ferryd "$body" || return 1
    PORT=([rsyncd]=$RSYNCD_PORT [ferryd]=$FERRYD_PORT)
    run_both uid_pub -a rsync://127.0.0.1:PORT/pub/ DST/
    [ "$(cat "$T/uid_pub.ferryd.rc")" = 0 ] || { cat "$T/uid_pub.ferryd.err"; return 1; }
    cmp "$T/dst.ferryd/o.txt" "$pub/o.txt" || return 1
    run_both uid_priv -a rsync://127.0.0.1:PORT/priv/ DST/
    same_result uid_priv || return 1
    [ "$(cat "$T/uid_priv.ferryd.rc")" != 0 ] || return 1
    [ ! -e "$T/dst.ferryd/s.txt" ]
}
t_check daemon_uid_drops_privileges check_daemon_uid

# "temp dir": pushed files are received there and renamed into the module
check_temp_dir() {
    mkdir -p "$T/tdmod" "$T/tdtmp"
    t_ferryd_start td_ferryd "[t]
    path = $T/tdmod
    read only = no
    temp dir = $T/tdtmp" || return 1
    "$RSYNC" -a "$SRC/" "rsync://127.0.0.1:$FERRYD_PORT/t/" || return 1
    t_compare "$SRC" "$T/tdmod" && [ -z "$(ls -A "$T/tdtmp")" ]
}
t_check module_temp_dir check_temp_dir

t_done
