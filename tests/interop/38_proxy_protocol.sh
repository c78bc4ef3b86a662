#!/bin/bash
# "proxy protocol": a relay in front of the daemon sends a PROXY header
# (text v1 and binary v2) naming a client address; the daemon uses that
# address for hosts allow/deny and logging, refuses a header from a peer
# not in "proxy protocol hosts", and refuses a malformed header. The same
# config runs on a real rsync daemon; results must agree.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON"
t_setup

SRC=$T/src
mkdir -p "$SRC"
echo hello >"$SRC/a.txt"
RELAY="$(dirname "$0")/proxy_relay.py"

body() { # TRUSTED
    cat <<EOF
proxy protocol = yes
proxy protocol hosts = $1
[open]
    path = $SRC
[deny]
    path = $SRC
    hosts deny = 10.66.0.0/16
EOF
}

start_relay() { # NAME TARGET_PORT KIND CLIENT -> RELAY_PORT
    rm -f "$T/$1.port"
    "$PYTHON" "$RELAY" "$T/$1.port" "$2" "$3" "$4" >>"$T/relay.log" 2>&1 </dev/null &
    t_track_pid $!
    for _ in $(seq 50); do [ -s "$T/$1.port" ] && break; sleep 0.1; done
    RELAY_PORT=$(cat "$T/$1.port")
}

t_rsyncd_start pp_rsyncd "$(body 127.0.0.1)" || { t_fail rsyncd_start; t_done; }
t_ferryd_start pp_ferryd "$(body 127.0.0.1)" || { t_fail ferryd_start; t_done; }
R_PORT=$RSYNCD_PORT
F_PORT=$FERRYD_PORT

pull() { # PORT MODULE DEST -> exit code
    rm -rf "$3"
    "$RSYNC" -a "rsync://127.0.0.1:$1/$2/" "$3/" >"$3.out" 2>&1
}

for kind in v1 v2; do
    check_allowed() {
        local rp fp
        start_relay "r_$kind" "$R_PORT" "$kind" 10.1.2.3; rp=$RELAY_PORT
        start_relay "f_$kind" "$F_PORT" "$kind" 10.1.2.3; fp=$RELAY_PORT
        pull "$rp" open "$T/r_$kind" || return 1
        pull "$fp" open "$T/f_$kind" || { cat "$T/f_$kind.out"; return 1; }
        cmp "$SRC/a.txt" "$T/f_$kind/a.txt" || return 1
        grep -q "connect from .*(10.1.2.3)" "$T/pp_ferryd.log"
    }
    t_check "proxy_${kind}_client_address_used" check_allowed

    check_denied() {
        local rp fp rr fr
        start_relay "rd_$kind" "$R_PORT" "$kind" 10.66.7.8; rp=$RELAY_PORT
        start_relay "fd_$kind" "$F_PORT" "$kind" 10.66.7.8; fp=$RELAY_PORT
        pull "$rp" deny "$T/rd_$kind"; rr=$?
        pull "$fp" deny "$T/fd_$kind"; fr=$?
        [ "$rr" != 0 ] && [ "$rr" = "$fr" ] || { echo "rsyncd $rr ferryd $fr"; return 1; }
        grep -q "access denied to deny" "$T/fd_$kind.out"
    }
    t_check "proxy_${kind}_hosts_deny_uses_client_address" check_denied
done

check_garbage() {
    local fp
    start_relay garbage "$F_PORT" garbage 10.1.2.3; fp=$RELAY_PORT
    ! pull "$fp" open "$T/garbage" || return 1
    [ ! -e "$T/garbage/a.txt" ] || return 1
    grep -q "invalid proxy protocol header" "$T/pp_ferryd.log" || return 1
    pull "$(cat "$T/f_v1.port")" open "$T/after" # still serving
}
t_check proxy_malformed_header_refused check_garbage

check_untrusted() {
    local rr fr
    t_rsyncd_start pp2_rsyncd "$(body 10.9.9.9)" || return 1
    t_ferryd_start pp2_ferryd "$(body 10.9.9.9)" || return 1
    pull "$RSYNCD_PORT" open "$T/u_r"; rr=$?
    pull "$FERRYD_PORT" open "$T/u_f"; fr=$?
    # Both daemons just close: the client sees either the missing greeting
    # (5) or, when the close races its own greeting, a reset (12).
    case "$rr:$fr" in
    5:5 | 5:12 | 12:5 | 12:12) ;;
    *) echo "rsyncd $rr ferryd $fr"; return 1 ;;
    esac
    grep -q "proxy protocol rejected from untrusted peer" "$T/pp2_ferryd.log"
}
t_check proxy_untrusted_peer_refused check_untrusted

t_done
