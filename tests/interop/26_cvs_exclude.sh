#!/bin/bash
# -C/--cvs-exclude: the CVS default patterns and per-directory .cvsignore
# files, locally and in both directions with daemons, against real rsync;
# with --delete, ignored files on the receiver are kept, as rsync does.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON"
t_setup

SRC=$T/src
mkdir -p "$SRC/CVS" "$SRC/sub"
echo o >"$SRC/a.o"
echo c >"$SRC/keep.c"
echo e >"$SRC/CVS/Entries"
echo i >"$SRC/sub/ign.txt"
echo ign.txt >"$SRC/sub/.cvsignore"
echo k >"$SRC/sub/k"
echo t >"$SRC/core"
find "$SRC" -exec touch -h -d @1600000000 {} +

prep_dest() { # DIR: a destination with files -C would ignore
    rm -rf "$1"
    mkdir -p "$1/sub"
    echo old >"$1/old.o"
    echo old >"$1/sub/ign.txt"
    echo old >"$1/gone"
    touch -d @1500000000 "$1/old.o" "$1/sub/ign.txt" "$1/gone"
}

both() { # TAG ARGS... (DST stands for the destination)
    local tag=$1 tool
    shift
    for tool in rsync ferry; do
        local d="$T/$tag.$tool" bin=$RSYNC
        [ $tool = ferry ] && bin=$FERRY
        prep_dest "$d"
        "$bin" "${@//DST/$d}" >"$d.out" 2>&1 || { echo "$tool failed"; cat "$d.out"; return 1; }
    done
    t_compare --no-dir-times "$T/$tag.rsync" "$T/$tag.ferry"
}

t_check cvs_local          both local -aC "$SRC/" DST/
t_check cvs_local_delete   both ldel -aC --delete "$SRC/" DST/

t_rsyncd_start cv_rsyncd "[m]
    path = $SRC
[w]
    path = $T/wr
    read only = no" || { t_fail rsyncd_start; t_done; }
t_ferryd_start cv_ferryd "[w]
    path = $T/wf
    read only = no" || { t_fail ferryd_start; t_done; }

t_check cvs_pull_from_rsyncd both pull -aC --delete "rsync://127.0.0.1:$RSYNCD_PORT/m/" DST/

check_push() {
    prep_dest "$T/wr"
    prep_dest "$T/wf"
    "$FERRY" -aC --delete "$SRC/" "rsync://127.0.0.1:$RSYNCD_PORT/w/" || return 1
    "$RSYNC" -aC --delete "$SRC/" "rsync://127.0.0.1:$FERRYD_PORT/w/" || return 1
    t_compare --no-dir-times "$T/ldel.rsync" "$T/wr" && t_compare --no-dir-times "$T/ldel.rsync" "$T/wf"
}
t_check cvs_push_both_ways check_push

# -F / -FF: per-directory .rsync-filter files (dir-merge), the same way
FSRC=$T/fsrc
mkdir -p "$FSRC/sub"
echo a >"$FSRC/a.log"
echo b >"$FSRC/b"
echo c >"$FSRC/sub/c.tmp"
echo d >"$FSRC/sub/d"
echo "- *.log" >"$FSRC/.rsync-filter"
echo "- *.tmp" >"$FSRC/sub/.rsync-filter"
find "$FSRC" -exec touch -h -d @1600000000 {} +
t_check rsync_filter_F  both f1 -aF "$FSRC/" DST/
t_check rsync_filter_FF both f2 -aFF "$FSRC/" DST/

check_F_daemons() {
    t_rsyncd_start fr_rsyncd "[m]
    path = $FSRC" || return 1
    "$RSYNC" -aF "rsync://127.0.0.1:$RSYNCD_PORT/m/" "$T/fpull.ref/" || return 1
    "$FERRY" -aF "rsync://127.0.0.1:$RSYNCD_PORT/m/" "$T/fpull/" || return 1
    t_compare "$T/fpull.ref" "$T/fpull" || return 1
    "$RSYNC" -aFF "$FSRC/" "$T/fpush.ref/" || return 1
    mkdir -p "$T/wf2"
    t_ferryd_start ff_ferryd "[w]
    path = $T/wf2
    read only = no" || return 1
    "$RSYNC" -aFF "$FSRC/" "rsync://127.0.0.1:$FERRYD_PORT/w/" || return 1
    t_compare "$T/fpush.ref" "$T/wf2"
}
t_check rsync_filter_F_daemons check_F_daemons

t_done
