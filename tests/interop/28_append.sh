#!/bin/bash
# --append and --append-verify against real rsync: a shorter destination
# file gets only the missing tail; --append-verify notices a damaged
# prefix and redoes the file; --append leaves longer files alone.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON"
t_setup

SRC=$T/src
mkdir -p "$SRC"
head -c 3000000 /dev/urandom >"$SRC/grow"
head -c 100000 /dev/urandom >"$SRC/longer_at_dest"
head -c 500000 /dev/urandom >"$SRC/damaged"
echo new >"$SRC/new"
touch -d @1600000000 "$SRC"/*

prep() { # DIR
    rm -rf "$1"
    mkdir -p "$1"
    head -c 1000000 "$SRC/grow" >"$1/grow"
    { cat "$SRC/longer_at_dest"; echo extra; } >"$1/longer_at_dest"
    head -c 200000 "$SRC/damaged" >"$1/damaged"
    printf 'XXXX' | dd of="$1/damaged" bs=1 seek=1000 conv=notrunc 2>/dev/null
    touch -d @1500000000 "$1"/*
}

both() { # TAG ARGS... (DST stands for the destination)
    local tag=$1 tool
    shift
    for tool in rsync ferry; do
        local d="$T/$tag.$tool" bin=$RSYNC
        [ $tool = ferry ] && bin=$FERRY
        prep "$d"
        "$bin" "${@//DST/$d}" >"$d.out" 2>&1 || { echo "$tool failed"; cat "$d.out"; return 1; }
    done
    t_compare --no-dir-times "$T/$tag.rsync" "$T/$tag.ferry"
}

lit() { sed -n 's/^Literal data: \([0-9,]*\).*/\1/p' "$1" | tr -d ,; }

check_append_local() {
    both app -a --append --stats "$SRC/" DST/ || return 1
    cmp "$SRC/grow" "$T/app.ferry/grow" || return 1
    # the damaged prefix stays: --append trusts what is there
    ! cmp -s "$SRC/damaged" "$T/app.ferry/damaged" || return 1
    [ "$(lit "$T/app.ferry.out")" = "$(lit "$T/app.rsync.out")" ]
}
t_check append_local check_append_local

check_verify_local() {
    both ver -a --append-verify "$SRC/" DST/ || return 1
    cmp "$SRC/damaged" "$T/ver.ferry/damaged" && cmp "$SRC/grow" "$T/ver.ferry/grow"
}
t_check append_verify_local check_verify_local

t_rsyncd_start ap_rsyncd "[m]
    path = $SRC
[w]
    path = $T/wr
    read only = no" || { t_fail rsyncd_start; t_done; }
t_ferryd_start ap_ferryd "[m]
    path = $SRC
[w]
    path = $T/wf
    read only = no" || { t_fail ferryd_start; t_done; }

t_check append_pull_from_rsyncd both pull -a --append-verify --stats \
    "rsync://127.0.0.1:$RSYNCD_PORT/m/" DST/
t_check append_rsync_pull_from_ferryd both rpull -a --append \
    "rsync://127.0.0.1:$FERRYD_PORT/m/" DST/

check_push() {
    prep "$T/wr"
    prep "$T/wf"
    "$FERRY" -a --append --stats "$SRC/" "rsync://127.0.0.1:$RSYNCD_PORT/w/" >"$T/push.out" || return 1
    "$RSYNC" -a --append "$SRC/" "rsync://127.0.0.1:$FERRYD_PORT/w/" || return 1
    cmp "$SRC/grow" "$T/wr/grow" && cmp "$SRC/grow" "$T/wf/grow" &&
        t_compare --no-dir-times "$T/wr" "$T/wf" &&
        [ "$(lit "$T/push.out")" = 2300004 ]
}
t_check append_push_both_ways check_push

check_whole_file() {
    local rr fr
    "$RSYNC" --append -W "$SRC/" "$T/never/" >"$T/w.r" 2>&1; rr=$?
    "$FERRY" --append -W "$SRC/" "$T/never/" >"$T/w.f" 2>&1; fr=$?
    [ "$rr" = "$fr" ] && grep -q "cannot be used with --whole-file" "$T/w.f"
}
t_check append_refuses_whole_file check_whole_file

t_done
