#!/bin/bash
# How the receiver writes: -S (holes for runs of zeros), --preallocate,
# and the argument checks of --stop-at/--stop-after/--outbuf, each against
# real rsync.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON"
t_setup

SRC=$T/src
mkdir -p "$SRC"
# 32 MiB with data only at three places: mostly holes
"$PYTHON" - "$SRC/holes" <<'EOF'
import os, sys
with open(sys.argv[1], "wb") as f:
    for off in (0, 10 << 20, (32 << 20) - 5000):
        f.seek(off)
        f.write(os.urandom(5000))
EOF
head -c 3000000 /dev/urandom >"$SRC/dense"
touch -d @1600000000 "$SRC/holes" "$SRC/dense"

blocks() { stat -c %b "$1"; }

check_sparse_local() {
    rm -rf "$T/s1" "$T/r1"
    "$FERRY" -aS "$SRC/" "$T/s1/" || return 1
    "$RSYNC" -aS "$SRC/" "$T/r1/" || return 1
    t_compare "$SRC" "$T/s1" || return 1
    # the copy is sparse: far fewer than 32 MiB of 512-byte blocks
    [ "$(blocks "$T/s1/holes")" -lt 4096 ] || { echo "blocks: $(blocks "$T/s1/holes")"; return 1; }
    [ "$(blocks "$T/s1/holes")" -le $(($(blocks "$T/r1/holes") + 64)) ]
}
t_check sparse_local check_sparse_local

check_sparse_remote() {
    t_rsyncd_start sp_rsyncd "[m]
    path = $SRC
[w]
    path = $T/wmod
    read only = no" || return 1
    mkdir -p "$T/wmod"
    rm -rf "$T/s2"
    "$FERRY" -aS "rsync://127.0.0.1:$RSYNCD_PORT/m/" "$T/s2/" || return 1
    t_compare "$SRC" "$T/s2" || return 1
    [ "$(blocks "$T/s2/holes")" -lt 4096 ] || return 1
    "$FERRY" -aS "$SRC/" "rsync://127.0.0.1:$RSYNCD_PORT/w/" || return 1
    t_compare "$SRC" "$T/wmod" || return 1
    [ "$(blocks "$T/wmod/holes")" -lt 4096 ]
}
t_check sparse_pull_and_push_with_rsyncd check_sparse_remote

check_prealloc() {
    rm -rf "$T/p1" "$T/p2"
    "$FERRY" -a --preallocate "$SRC/" "$T/p1/" || return 1
    t_compare "$SRC" "$T/p1" || return 1
    "$FERRY" -a --preallocate -S "$SRC/" "$T/p2/" || return 1
    t_compare "$SRC" "$T/p2" || return 1
    [ "$(blocks "$T/p2/holes")" -lt 4096 ]
}
t_check preallocate check_prealloc

# Bad arguments: the same exit code and message as rsync.
same_refusal() { # ARGS...
    local rr fr
    "$RSYNC" "$@" "$SRC/" "$T/never/" >"$T/ref.out" 2>&1; rr=$?
    "$FERRY" "$@" "$SRC/" "$T/never/" >"$T/fer.out" 2>&1; fr=$?
    [ "$rr" = "$fr" ] || { echo "rsync $rr ferry $fr"; cat "$T/fer.out"; return 1; }
    local want
    want=$(head -1 "$T/ref.out" | sed 's/^rsync: //')
    grep -qF -e "$want" "$T/fer.out" || { echo "want: $want"; cat "$T/fer.out"; return 1; }
    [ ! -e "$T/never" ]
}
t_check stop_at_garbage        same_refusal --stop-at=garbage
t_check stop_at_past           same_refusal --stop-at=2001-01-01T00:00
t_check stop_after_zero        same_refusal --stop-after=0
t_check outbuf_bad             same_refusal --outbuf=X

check_outbuf() {
    "$FERRY" -a --outbuf=N -v "$SRC/" "$T/o1/" >"$T/o1.out" || return 1
    grep -q dense "$T/o1.out"
}
t_check outbuf_none check_outbuf

check_stop_future() {
    # a limit far away does not stop anything
    "$FERRY" -a --stop-after=60 "$SRC/" "$T/f1/" && t_compare "$SRC" "$T/f1"
}
t_check stop_after_not_reached check_stop_future

check_open_noatime() {
    mkdir -p "$T/na"
    echo data >"$T/na/f"
    touch -a -d @1500000000 "$T/na/f"
    "$FERRY" -a --open-noatime "$T/na/" "$T/na.out/" || return 1
    [ "$(stat -c %X "$T/na/f")" = 1500000000 ] || { echo "atime changed"; return 1; }
    # forwarded to a real rsync daemon that sends
    t_rsyncd_start na_rsyncd "[m]
    path = $T/na" || return 1
    "$FERRY" -a --open-noatime "rsync://127.0.0.1:$RSYNCD_PORT/m/" "$T/na.pull/" || return 1
    local at
    at=$(stat -c %X "$T/na/f")
    [ "$at" = 1500000000 ] || { echo "atime after the pull: $at"; return 1; }
    cmp "$T/na/f" "$T/na.out/f" && cmp "$T/na/f" "$T/na.pull/f" # reads it: last
}
t_check open_noatime check_open_noatime

t_done
