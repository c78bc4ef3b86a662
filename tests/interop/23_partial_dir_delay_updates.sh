#!/bin/bash
# --partial-dir and --delay-updates against real rsync: an interrupted
# transfer leaves its data in the partial dir and the next run uses it as
# the basis; --delay-updates puts everything in place at the end; the
# implied filter keeps partial dirs from being sent or deleted.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON"
t_setup

SRC=$T/src
mkdir -p "$SRC/sub"
head -c 8000000 /dev/urandom >"$SRC/big"
echo a >"$SRC/a"
echo b >"$SRC/sub/b"
touch -d @1600000000 "$SRC/big" "$SRC/a" "$SRC/sub/b" "$SRC/sub"

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

check_delay_local() {
    both delay -a --delay-updates "$SRC/" DST/ || return 1
    [ ! -e "$T/delay.ferry/.~tmp~" ] && [ ! -e "$T/delay.ferry/sub/.~tmp~" ]
}
t_check delay_updates_local check_delay_local

check_delay_update() {
    # an update of an existing tree, with a custom partial dir
    cp -a "$SRC" "$T/upd.rsync"
    cp -a "$SRC" "$T/upd.ferry"
    echo changed >"$T/a2"
    touch -d @1700000000 "$T/a2"
    for tool in rsync ferry; do
        local bin=$RSYNC
        [ $tool = ferry ] && bin=$FERRY
        "$bin" -a --delay-updates --partial-dir=.pd "$T/a2" "$T/upd.$tool/a" || return 1
    done
    # the directory's time is whenever each tool renamed into it
    t_compare --no-dir-times "$T/upd.rsync" "$T/upd.ferry" && [ ! -e "$T/upd.ferry/.pd" ]
}
t_check delay_updates_partial_dir_update check_delay_update

# A pull that is interrupted: the data so far goes to the partial dir.
t_rsyncd_start pd_rsyncd "[m]
    path = $SRC
[w]
    path = $T/wr
    read only = no" || { t_fail rsyncd_start; t_done; }
t_ferryd_start pd_ferryd "[m]
    path = $SRC
[w]
    path = $T/wf
    read only = no" || { t_fail ferryd_start; t_done; }
mkdir -p "$T/wr" "$T/wf"

# Run CMD and stop it with SIGTERM once the receiving side (DIR) holds at
# least 500 kB of the big file's temp data, so the interruption always
# lands mid-file however loaded the machine is.
interrupt() { # DIR CMD...
    local dir=$1 pid n
    shift
    "$@" >/dev/null 2>&1 &
    pid=$!
    for n in $(seq 200); do
        if find "$dir" -maxdepth 1 -name '.big.*' -size +500k 2>/dev/null | grep -q .; then
            break
        fi
        sleep 0.1
    done
    kill -TERM "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    return 0
}

# The receiving side keeps the partial data when it notices the sender is
# gone, which for a daemon happens a little after the client died.
wait_for_file() { # FILE
    local n
    for n in $(seq 100); do
        [ -f "$1" ] && return 0
        sleep 0.1
    done
    return 1
}

check_interrupted_pull() {
    rm -rf "$T/ip"
    interrupt "$T/ip" "$FERRY" -a --partial-dir=.rsync-partial --bwlimit=2000 \
        "rsync://127.0.0.1:$RSYNCD_PORT/m/" "$T/ip/"
    [ -f "$T/ip/.rsync-partial/big" ] || { echo "no partial file"; ls -la "$T/ip" "$T/ip/.rsync-partial" 2>&1; return 1; }
    [ ! -e "$T/ip/big" ] || { echo "truncated file under the final name"; return 1; }
    local have
    have=$(stat -c %s "$T/ip/.rsync-partial/big")
    "$FERRY" -a --partial-dir=.rsync-partial --stats \
        "rsync://127.0.0.1:$RSYNCD_PORT/m/" "$T/ip/" >"$T/ip.stats" || return 1
    t_compare "$SRC" "$T/ip" || return 1
    [ ! -e "$T/ip/.rsync-partial" ] || { echo "partial dir left"; return 1; }
    # the partial data was the basis: less than everything came as literal data
    local lit
    lit=$(sed -n 's/^Literal data: \([0-9,]*\).*/\1/p' "$T/ip.stats" | tr -d ,)
    [ "$lit" -lt $((8000000 - have + 200000)) ] || { echo "literal $lit, had $have"; return 1; }
}
t_check interrupted_pull_resumes_from_partial_dir check_interrupted_pull

check_rsync_push_ferryd() {
    interrupt "$T/wf" "$RSYNC" -a --partial-dir=.rsync-partial --bwlimit=2000 "$SRC/" \
        "rsync://127.0.0.1:$FERRYD_PORT/w/"
    wait_for_file "$T/wf/.rsync-partial/big" || { echo "no partial file on the ferry side"; return 1; }
    [ ! -e "$T/wf/big" ] || return 1
    "$RSYNC" -a --partial-dir=.rsync-partial "$SRC/" "rsync://127.0.0.1:$FERRYD_PORT/w/" || return 1
    t_compare "$SRC" "$T/wf" && [ ! -e "$T/wf/.rsync-partial" ]
}
t_check rsync_push_to_ferryd_resumes check_rsync_push_ferryd

check_ferry_push_rsyncd() {
    interrupt "$T/wr" "$FERRY" -a --partial-dir=.rsync-partial --bwlimit=2000 "$SRC/" \
        "rsync://127.0.0.1:$RSYNCD_PORT/w/"
    wait_for_file "$T/wr/.rsync-partial/big" || { echo "no partial file on the rsync side"; return 1; }
    "$FERRY" -a --partial-dir=.rsync-partial "$SRC/" "rsync://127.0.0.1:$RSYNCD_PORT/w/" || return 1
    t_compare "$SRC" "$T/wr" && [ ! -e "$T/wr/.rsync-partial" ]
}
t_check ferry_push_to_rsyncd_resumes check_ferry_push_rsyncd

check_filter() {
    # a partial dir in the source is not sent; one in the destination is
    # not deleted
    mkdir -p "$T/fs/.rsync-partial" "$T/fd.rsync/.rsync-partial" "$T/fd.ferry/.rsync-partial"
    echo x >"$T/fs/x"
    echo junk >"$T/fs/.rsync-partial/junk"
    echo keep >"$T/fd.rsync/.rsync-partial/keep"
    echo keep >"$T/fd.ferry/.rsync-partial/keep"
    "$RSYNC" -a --delete --partial-dir=.rsync-partial "$T/fs/" "$T/fd.rsync/" || return 1
    "$FERRY" -a --delete --partial-dir=.rsync-partial "$T/fs/" "$T/fd.ferry/" || return 1
    t_compare --no-dir-times "$T/fd.rsync" "$T/fd.ferry" && [ -f "$T/fd.ferry/.rsync-partial/keep" ] &&
        [ ! -e "$T/fd.ferry/.rsync-partial/junk" ]
}
t_check partial_dir_filter_rule check_filter

check_inplace_conflict() {
    local rr fr
    "$RSYNC" --inplace --delay-updates "$SRC/" "$T/never/" >"$T/c.r" 2>&1; rr=$?
    "$FERRY" --inplace --delay-updates "$SRC/" "$T/never/" >"$T/c.f" 2>&1; fr=$?
    [ "$rr" = "$fr" ] && grep -q "cannot be used with --delay-updates" "$T/c.f"
}
t_check inplace_refuses_delay_updates check_inplace_conflict

t_done
