#!/bin/bash
# Real rsync clients against the ferry daemon and against a real rsync
# daemon with the same config, the same starting state and the same
# options: the two results must be identical. Pulls and pushes at
# --protocol=29/30/31 and the default (32) with -aH --delete --exclude,
# -a -c --inplace and -a --partial, and with each --checksum-choice
# (xxh128 xxh3 xxh64 md5 md4). Then delta both ways on a 64 MiB file,
# 1% rewritten and 1 MiB inserted: under 5% of it may travel as literal
# data (--stats "Literal data").
#
# What 30_daemon_rsync_client.sh already covers is not repeated: pulls
# with -a at protocols 27..32 and -aH at 29..32, pulls with -c and each
# checksum choice, pushes with -a/-aH/--delete at 32 and a 16 MiB push
# delta.
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

SRC=$T/src      # what is transferred
BASE=$T/base    # the starting state of every destination
UPF=$T/upf      # the ferry daemon's push module
UPR=$T/upr      # the rsync daemon's push module
t_check mktree t_mktree "$SRC" || t_done
mkdir -p "$UPF" "$UPR" "$T/bigf" "$T/bigr"

# flip_byte FILE OFFSET -- same size, same mtime, one bit different.
flip_byte() {
    "$PYTHON" -c 'import os, sys
p, off = sys.argv[1], int(sys.argv[2]); st = os.stat(p)
with open(p, "r+b") as f:
    f.seek(off); b = f.read(1); f.seek(off); f.write(bytes([b[0] ^ 1]))
os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))' "$1" "$2"
}

# The starting state: a copy of the source with every kind of difference
# (content with the same size and mtime for -c, a grown file for the block
# search, missing and extra entries for --delete, changed modes and times).
make_base() {
    "$RSYNC" -aH "$SRC/" "$BASE/" || return 1
    (
        cd "$BASE" || exit 1
        flip_byte big.bin 4242 && flip_byte sub/huge.bin 3000000 || exit 1
        head -c 100000 /dev/urandom >>sub/medium.txt && touch -d @1000000000 sub/medium.txt
        echo "changed content" >small.txt && touch -d @1000000000 small.txt
        chmod 0600 script.sh && touch -d @1000000001 one
        rm -rf sub/dir && rm -f page.bin
        echo extra >extra.txt && mkdir -p extradir/deeper && echo x >extradir/deeper/f
        echo extra >extra.bin
    ) || return 1
    touch -d @1000000003 "$BASE" "$BASE/sub" "$BASE/extradir"
}
t_check make_base make_base || t_done

MODULES="
[pub]
    path = $SRC
[up]
    path = @UP@
    read only = no
[bigsrc]
    path = $T/bigsrc
[big]
    path = @BIG@
    read only = no
"
if ! t_ferryd_start fd36 "$(echo "$MODULES" | sed "s|@UP@|$UPF|; s|@BIG@|$T/bigf|")"; then
    t_fail ferryd_start "ferry daemon did not start"
    t_done
fi
if ! t_rsyncd_start rd36 "$(echo "$MODULES" | sed "s|@UP@|$UPR|; s|@BIG@|$T/bigr|")"; then
    t_fail rsyncd_start "real rsync daemon did not start"
    t_done
fi
t_pass daemons_started
FURL=rsync://127.0.0.1:$FERRYD_PORT
RURL=rsync://127.0.0.1:$RSYNCD_PORT

CLEAN_ENV=(env -u RSYNC_PASSWORD -u USER -u LOGNAME -u RSYNC_PORT -u RSYNC_CONNECT_PROG)

# same_run NAME -- both daemons' runs exited alike, and both 0.
same_run() {
    local rf rr
    rf=$(cat "$T/$1.ferry.rc") rr=$(cat "$T/$1.rsync.rc")
    [ "$rf" = 0 ] && [ "$rr" = 0 ] && return 0
    echo "exit: ferry $rf, rsync $rr"
    show_run "$T/$1.ferry"
    show_run "$T/$1.rsync"
    return 1
}

# pull_both NAME OPTS... -- real rsync pulls [pub] into a copy of BASE,
# once from each daemon; the two destinations must end identical.
pull_both() {
    local name=$1 side url
    shift
    for side in rsync ferry; do
        url=$RURL
        [ "$side" = ferry ] && url=$FURL
        rm -rf "$T/$name.$side.d" && cp -a "$BASE" "$T/$name.$side.d" || return 1
        run "$T/$name.$side" "$RSYNC" "$@" "$url/pub/" "$T/$name.$side.d/"
    done
    same_run "$name" && t_compare "$T/$name.rsync.d" "$T/$name.ferry.d" --nsec
}

# push_both NAME OPTS... -- real rsync pushes SRC into a copy of BASE in
# each daemon's [up]; the two module directories must end identical.
push_both() {
    local name=$1 side url dir
    shift
    for side in rsync ferry; do
        url=$RURL dir=$UPR
        [ "$side" = ferry ] && url=$FURL dir=$UPF
        rm -rf "${dir:?}/$name" && cp -a "$BASE" "$dir/$name" || return 1
        run "$T/$name.$side" "$RSYNC" "$@" "$SRC/" "$url/up/$name/"
    done
    same_run "$name" && t_compare "$UPR/$name" "$UPF/$name" --nsec
}

# ---------------------------------------------------------- the matrix

OPTSETS=("-aH --delete --exclude=*.bin --exclude=secret/" "-a -c --inplace" "-a --partial")
optname() { printf '%s' "$1" | tr -cd 'a-zA-Z'; }

for p in 29 30 31 32; do
    for opts in "${OPTSETS[@]}"; do
        # (word splitting of $opts is the point)
        # shellcheck disable=SC2086
        {
            pflag=--protocol=$p
            [ "$p" = 32 ] && pflag=
            n=$(optname "$opts")_p$p
            t_check "pull_${n}" pull_both "pull_$n" $opts $pflag
            t_check "push_${n}" push_both "push_$n" $opts $pflag
        }
    done
done

for cc in xxh128 xxh3 xxh64 md5 md4; do
    t_check "pull_cc_$cc" pull_both "pull_cc_$cc" -a --checksum-choice="$cc"
    t_check "push_cc_$cc" push_both "push_cc_$cc" -a --checksum-choice="$cc"
done

# ---------------------------------------------------------- 64 MiB delta

BIG=$((64 * 1048576))
mkdir -p "$T/bigsrc" "$T/old"
head -c "$BIG" /dev/urandom >"$T/old/big.bin"

# new_version KIND -- $T/bigsrc/big.bin from $T/old/big.bin: "changed"
# rewrites 1% in 64 spread-out 10 KiB pieces, "inserted" puts 1 MiB of
# new data in the middle.
new_version() {
    local i
    if [ "$1" = changed ]; then
        cp "$T/old/big.bin" "$T/bigsrc/big.bin" || return 1
        for i in $(seq 0 63); do
            dd if=/dev/urandom of="$T/bigsrc/big.bin" bs=10240 count=1 \
                seek=$((i * 102 + 37)) conv=notrunc status=none || return 1
        done
    else
        { head -c $((BIG / 2)) "$T/old/big.bin" && head -c 1048576 /dev/urandom &&
            tail -c $((BIG / 2)) "$T/old/big.bin"; } >"$T/bigsrc/big.bin" || return 1
    fi
    touch -d @1600003600 "$T/bigsrc/big.bin"
}

# small_literal RUN -- the run exited 0 and sent under 5% literally.
small_literal() {
    local lit
    [ "$(cat "$1.rc")" = 0 ] || { show_run "$1"; return 1; }
    lit=$(sed -n 's/^Literal data: \([0-9,]*\) bytes.*/\1/p' "$1.out" | tr -d ,)
    echo "$(basename "$1"): literal data ${lit:-?} bytes of $BIG"
    [ -n "$lit" ] && [ "$lit" -lt $((BIG / 20)) ]
}

# delta_pull KIND -- ferry sends: the client holds the old version.
delta_pull() {
    local d=$T/dpull_$1
    new_version "$1" || return 1
    mkdir -p "$d" && cp -p "$T/old/big.bin" "$d/big.bin" || return 1
    run "$d" "$RSYNC" -a --stats "$FURL/bigsrc/big.bin" "$d/big.bin"
    small_literal "$d" && cmp "$T/bigsrc/big.bin" "$d/big.bin"
}

# delta_push KIND -- ferry receives: its module holds the old version.
delta_push() {
    local r=$T/dpush_$1
    new_version "$1" || return 1
    cp -p "$T/old/big.bin" "$T/bigf/big.bin" || return 1
    run "$r" "$RSYNC" -a --stats "$T/bigsrc/big.bin" "$FURL/big/big.bin"
    small_literal "$r" && cmp "$T/bigsrc/big.bin" "$T/bigf/big.bin"
}

for kind in changed inserted; do
    t_check "delta_pull_64M_$kind" delta_pull "$kind"
    t_check "delta_push_64M_$kind" delta_push "$kind"
done

# ----------------------------------------------------------- sanitizers

no_reports() {
    local f bad=0
    for f in "$T/fd36.out" "$T"/*.err; do
        [ -f "$f" ] || continue
        if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer' "$f"; then
            echo "sanitizer report in $f:"
            grep -m1 -A12 -E 'ERROR: [A-Za-z]*Sanitizer|runtime error' "$f"
            bad=1
        fi
    done
    t_pid_alive "$FERRYD_PID" || { echo "the daemon died"; bad=1; }
    return "$bad"
}
t_check no_sanitizer_reports no_reports

t_done
