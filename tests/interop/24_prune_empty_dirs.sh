#!/bin/bash
# -m/--prune-empty-dirs, the classic "copy only *.txt with their dirs" use,
# compared with real rsync locally and in both directions with daemons.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON"
t_setup

SRC=$T/src
mkdir -p "$SRC/a/b/c" "$SRC/d/e" "$SRC/empty/deeper" "$SRC/f"
echo t >"$SRC/a/b/c/one.txt"
echo x >"$SRC/a/skip.bin"
echo t >"$SRC/d/two.txt"
echo x >"$SRC/d/e/only.bin"
echo t >"$SRC/top.txt"
touch -d @1600000000 "$SRC"/a/b/c/one.txt "$SRC/a/skip.bin" "$SRC/d/two.txt" "$SRC/d/e/only.bin" \
    "$SRC/top.txt"
find "$SRC" -type d -exec touch -d @1600000000 {} +

FILTER=(--include='*/' --include='*.txt' --exclude='*')

both() { # TAG ARGS... (DST stands for the destination)
    local tag=$1 tool
    shift
    for tool in rsync ferry; do
        local d="$T/$tag.$tool" bin=$RSYNC
        [ $tool = ferry ] && bin=$FERRY
        rm -rf "$d"
        "$bin" "${@//DST/$d}" >"$d.out" 2>&1 || { echo "$tool failed"; cat "$d.out"; return 1; }
    done
    t_compare "$T/$tag.rsync" "$T/$tag.ferry"
}

t_check prune_local          both local -am "$SRC/" DST/
t_check prune_local_filtered both filt -am "${FILTER[@]}" "$SRC/" DST/
t_check no_prune_filtered    both nofilt -a "${FILTER[@]}" "$SRC/" DST/

t_rsyncd_start pe_rsyncd "[m]
    path = $SRC
[w]
    path = $T/wr
    read only = no" || { t_fail rsyncd_start; t_done; }
t_ferryd_start pe_ferryd "[w]
    path = $T/wf
    read only = no" || { t_fail ferryd_start; t_done; }
mkdir -p "$T/wr" "$T/wf"

t_check prune_pull_from_rsyncd both pull -am "${FILTER[@]}" \
    "rsync://127.0.0.1:$RSYNCD_PORT/m/" DST/

check_push_rsyncd() {
    "$FERRY" -am "${FILTER[@]}" "$SRC/" "rsync://127.0.0.1:$RSYNCD_PORT/w/" || return 1
    t_compare "$T/filt.rsync" "$T/wr"
}
t_check prune_push_to_rsyncd check_push_rsyncd

check_rsync_push_ferryd() {
    "$RSYNC" -am "${FILTER[@]}" "$SRC/" "rsync://127.0.0.1:$FERRYD_PORT/w/" || return 1
    t_compare "$T/filt.rsync" "$T/wf"
}
t_check prune_rsync_push_to_ferryd check_rsync_push_ferryd

t_done
