#!/bin/bash
# Single-cause parity items (issue 21, cluster 16) against REAL rsync: each
# case runs the same command with rsync and with ferry (as the client, the
# local-copy tool, or the daemon a real rsync talks to) and checks that the
# outcome is rsync's.
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

# run TAG CMD... -- TAG.out/.err/.rc get CMD's stdout, stderr and status.
run() {
    local tag=$1
    shift
    timeout 120 "$@" >"$T/$tag.out" 2>"$T/$tag.err" </dev/null
    echo $? >"$T/$tag.rc"
    sed "s/^/   $tag: /" "$T/$tag.err" >&2
}
rc_of() { cat "$T/$1.rc"; }
mode_of() { stat -c %a "$1"; }

# ------------------------------------------------------------- --chmod
# Clauses apply left to right, once: g=o,o= on 0647 gives 0670. A second
# pass in the local receiver would turn it into 0600.
check_chmod_copy_clause() {
    local tool want got
    mkdir -p "$T/chmod/src"
    echo data >"$T/chmod/src/f"
    chmod 0647 "$T/chmod/src/f"
    for tool in "$RSYNC" "$FERRY"; do
        rm -rf "$T/chmod/dst"
        "$tool" -a --chmod=g=o,o= "$T/chmod/src/" "$T/chmod/dst/" || return 1
        got+="$(mode_of "$T/chmod/dst/f") "
    done
    want="670 670 "
    echo "rsync, ferry: $got"
    [ "$got" = "$want" ]
}
t_check chmod_clauses_left_to_right check_chmod_copy_clause

# ------------------------------------------------------ %% in --out-format
# "%%" is a literal '%': "%%i" neither itemizes nor turns on the lines of
# attribute-only changes.
check_percent_literal() {
    local tool out
    mkdir -p "$T/pct/src"
    echo data >"$T/pct/src/f"
    for tool in "$RSYNC" "$FERRY"; do
        rm -rf "$T/pct/dst"
        out=$("$tool" -a --out-format='100%% done %n' "$T/pct/src/" "$T/pct/dst/") ||
            return 1
        echo "$tool: $out"
        grep -qx '100% done f' <<<"$out" || return 1
        chmod 0600 "$T/pct/src/f"
        out=$("$tool" -a --out-format='%%i %n' "$T/pct/src/" "$T/pct/dst/") || return 1
        echo "$tool (attributes only): '$out'"
        [ -z "$out" ] || return 1
        chmod 0644 "$T/pct/src/f"
    done
}
t_check out_format_percent_literal check_percent_literal

# --------------------------------------- refuse options: --del is delete-during
check_refuse_del_alias() {
    local tool rc
    mkdir -p "$T/ref/src" "$T/ref/rmod" "$T/ref/fmod"
    echo keep >"$T/ref/src/keep"
    t_rsyncd_start rref "[m]
    path = $T/ref/rmod
    read only = no
    refuse options = delete-during" || return 1
    t_ferryd_start fref "[m]
    path = $T/ref/fmod
    read only = no
    refuse options = delete-during" || return 1
    for port in "$RSYNCD_PORT" "$FERRYD_PORT"; do
        run "ref$port" "$RSYNC" -r --delete -M--del "$T/ref/src/" \
            "rsync://127.0.0.1:$port/m/"
        rc=$(rc_of "ref$port")
        echo "port $port: exit $rc"
        [ "$rc" != 0 ] || return 1
        grep -q 'configured to refuse --del\b' "$T/ref$port.err" || return 1
    done
    # The module still takes a push without it.
    run refok "$RSYNC" -r --delete "$T/ref/src/" "rsync://127.0.0.1:$FERRYD_PORT/m/"
    [ "$(rc_of refok)" = 0 ] && [ -f "$T/ref/fmod/keep" ]
}
t_check refuse_delete_during_covers_del check_refuse_del_alias
t_rsyncd_stop
t_ferryd_stop

t_done
