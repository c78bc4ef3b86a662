#!/bin/bash
# --ignore-missing-args and --delete-missing-args, locally and with rsync
# daemons in both directions, against real rsync.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON"
t_setup

SRC=$T/src
mkdir -p "$SRC"
echo a >"$SRC/a"
touch -d @1600000000 "$SRC/a"

prep() { # DIR
    rm -rf "$1"
    mkdir -p "$1/gonedir"
    echo old >"$1/gone"
    echo old >"$1/gonedir/f"
    touch -d @1500000000 "$1/gone" "$1/gonedir/f"
}

both() { # TAG EXPECTED_RC ARGS... (DST stands for the destination)
    local tag=$1 want=$2 tool rc
    shift 2
    for tool in rsync ferry; do
        local d="$T/$tag.$tool" bin=$RSYNC
        [ $tool = ferry ] && bin=$FERRY
        prep "$d"
        "$bin" "${@//DST/$d}" >"$d.out" 2>&1
        rc=$?
        [ "$rc" = "$want" ] || { echo "$tool exit $rc, want $want"; cat "$d.out"; return 1; }
    done
    t_compare --no-dir-times "$T/$tag.rsync" "$T/$tag.ferry"
}

t_check missing_is_error  both err 23 -a "$SRC/a" "$SRC/gone" DST/
t_check ignore_missing    both ign 0 -a --ignore-missing-args "$SRC/a" "$SRC/gone" DST/
t_check delete_missing    both del 0 -a --delete-missing-args "$SRC/a" "$SRC/gone" "$SRC/gonedir" DST/

t_rsyncd_start ma_rsyncd "[m]
    path = $SRC
[w]
    path = $T/wr
    read only = no" || { t_fail rsyncd_start; t_done; }

t_check delete_missing_pull both pull 0 -a --delete-missing-args \
    "rsync://127.0.0.1:$RSYNCD_PORT/m/a" "rsync://127.0.0.1:$RSYNCD_PORT/m/gone" DST/
t_check ignore_missing_pull both ipull 0 -a --ignore-missing-args \
    "rsync://127.0.0.1:$RSYNCD_PORT/m/a" "rsync://127.0.0.1:$RSYNCD_PORT/m/gone" DST/

check_push() {
    prep "$T/wr"
    "$FERRY" -a --delete-missing-args "$SRC/a" "$SRC/gone" "rsync://127.0.0.1:$RSYNCD_PORT/w/" ||
        return 1
    [ -f "$T/wr/a" ] && [ ! -e "$T/wr/gone" ] && [ -d "$T/wr/gonedir" ]
}
t_check delete_missing_push_to_rsyncd check_push

t_done
