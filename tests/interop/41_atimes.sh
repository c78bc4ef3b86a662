#!/bin/bash
# -U/--atimes (and -UU, which also keeps the source's access times), against
# real rsync locally and with rsync daemons both ways.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON"
t_setup

mksrc() { # DIR: access times after the modification times, so reading
          # them (relatime) leaves them alone
    rm -rf "$1"
    mkdir -p "$1/sub"
    echo a >"$1/a"
    echo b >"$1/sub/b"
    touch -m -d @1300000000 "$1/a" "$1/sub/b"
    touch -a -d @1400000000 "$1/a"
    touch -a -d @1400000100 "$1/sub/b"
}

atimes() { (cd "$1" && find . -type f -printf '%A@ %p\n' | sed 's/\.0* / /' | sort); }

both() { # TAG ARGS... (SRC / DST stand for the source and destination)
    local tag=$1 tool
    shift
    for tool in rsync ferry; do
        local d="$T/$tag.$tool" bin=$RSYNC
        [ $tool = ferry ] && bin=$FERRY
        mksrc "$T/$tag.src.$tool"
        rm -rf "$d"
        local args=("${@//DST/$d}")
        args=("${args[@]//SRC/$T/$tag.src.$tool}")
        "$bin" "${args[@]}" >"$d.out" 2>&1 || { echo "$tool failed"; cat "$d.out"; return 1; }
    done
    diff <(atimes "$T/$tag.rsync") <(atimes "$T/$tag.ferry") || return 1
    # (before anything reads the copies: reading them moves their atimes)
    atimes "$T/$tag.ferry" | grep -q '^1400000000 ./a$' || { atimes "$T/$tag.ferry"; return 1; }
    t_compare --no-dir-times "$T/$tag.rsync" "$T/$tag.ferry"
}

check_local() {
    both loc -aU SRC/ DST/
}
t_check atimes_local check_local

check_uu() {
    both uu -aUU SRC/ DST/ || return 1
    # -UU reads without touching the source's access times
    [ "$(stat -c %X "$T/uu.src.ferry/a")" = 1400000000 ]
}
t_check atimes_uu_keeps_source check_uu

check_itemize() {
    mksrc "$T/isrc"
    "$FERRY" -aUU "$T/isrc/" "$T/idst/" || return 1
    touch -a -d @1500000000 "$T/idst/a"
    "$FERRY" -aUUi "$T/isrc/" "$T/idst/" >"$T/i.out" || return 1
    grep -q '^\.f\.\.\.\.\.\.u\.\. a$' "$T/i.out" &&
        [ "$(stat -c %X "$T/idst/a")" = 1400000000 ]
}
t_check atimes_itemized_and_fixed check_itemize

mksrc "$T/dsrc"
t_rsyncd_start at_rsyncd "[m]
    path = $T/dsrc
[w]
    path = $T/wr
    read only = no" || { t_fail rsyncd_start; t_done; }
t_ferryd_start at_ferryd "[w]
    path = $T/wf
    read only = no" || { t_fail ferryd_start; t_done; }
mkdir -p "$T/wr" "$T/wf"

check_daemons() {
    "$FERRY" -aUU "rsync://127.0.0.1:$RSYNCD_PORT/m/" "$T/pull/" || return 1
    mksrc "$T/p1"
    mksrc "$T/p2"
    "$FERRY" -aUU "$T/p1/" "rsync://127.0.0.1:$RSYNCD_PORT/w/" || return 1
    "$RSYNC" -aUU "$T/p2/" "rsync://127.0.0.1:$FERRYD_PORT/w/" || return 1
    diff <(atimes "$T/pull") <(atimes "$T/wr") && diff <(atimes "$T/wr") <(atimes "$T/wf") &&
        [ "$(stat -c %X "$T/pull/sub/b")" = 1400000100 ]
}
t_check atimes_with_daemons_both_ways check_daemons

t_done
