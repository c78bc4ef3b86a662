#!/bin/bash
# -K/--keep-dirlinks: a symlink to a directory on the receiving side is
# kept and written through, against real rsync locally, pulling from an
# rsync daemon, and as a ferry daemon receiving (where the link may not
# lead out of the destination).
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON"
t_setup

SRC=$T/src
mkdir -p "$SRC/sub"
echo f >"$SRC/sub/f"
echo top >"$SRC/top"
find "$SRC" -exec touch -h -d @1600000000 {} +

prep() { # DIR: sub is a symlink to real/
    rm -rf "$1"
    mkdir -p "$1/real"
    ln -s real "$1/sub"
    touch -h -d @1500000000 "$1/sub"
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

check_keep() {
    both keep -aK "$SRC/" DST/ || return 1
    [ -L "$T/keep.ferry/sub" ] && [ -f "$T/keep.ferry/real/f" ]
}
t_check keep_dirlinks_local check_keep
t_check without_K_link_replaced both nokeep -a "$SRC/" DST/

t_rsyncd_start kd_rsyncd "[m]
    path = $SRC" || { t_fail rsyncd_start; t_done; }
t_check keep_dirlinks_pull both pull -aK "rsync://127.0.0.1:$RSYNCD_PORT/m/" DST/

check_ferryd() {
    prep "$T/fmod"
    mkdir -p "$T/outside"
    ln -s "$T/outside" "$T/fmod/escape"
    mkdir -p "$T/esrc/escape"
    echo x >"$T/esrc/escape/evil"
    t_ferryd_start kd_ferryd "[w]
    path = $T/fmod
    read only = no" || return 1
    "$RSYNC" -aK "$SRC/" "rsync://127.0.0.1:$FERRYD_PORT/w/" || return 1
    [ -L "$T/fmod/sub" ] && [ -f "$T/fmod/real/f" ] || return 1
    # a link leading out of the module is not written through
    "$RSYNC" -aK "$T/esrc/" "rsync://127.0.0.1:$FERRYD_PORT/w/" >"$T/esc.out" 2>&1
    [ ! -e "$T/outside/evil" ]
}
t_check keep_dirlinks_ferryd_stays_inside check_ferryd

t_done
