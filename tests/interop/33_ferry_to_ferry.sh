#!/bin/bash
# ferry client <-> ferry daemon, no rsync on the wire: pulls and pushes with
# -a, -aH and --delete at every protocol 27..32, each ending with a tree
# equal to the source. The hard-link tree of 30_daemon_rsync_client.sh is
# pulled and pushed too, since both ends being ferry could hide a mistake
# the two sides make alike.
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

SRC=$T/src
HL=$T/hl
UP=$T/up
OUT=$T/out
t_check mktree t_mktree "$SRC" || t_done
mkdir -p "$UP" "$OUT"

# mk_hltree DIR -- see 30_daemon_rsync_client.sh: plain files mixed with
# links to one inode that has another mode and mtime, so that an
# abbreviated hard-link entry sits between two plain files.
mk_hltree() {
    local d=$1/d i
    mkdir -p "$d" || return 1
    for i in $(seq -w 0 19); do echo "plain $i" >"$d/n$i"; done
    echo "linked" >"$d/h00" && chmod 0600 "$d/h00"
    for i in $(seq 1 9); do ln "$d/h00" "$d/h0$i" || return 1; done
    chmod 0644 "$d"/n* && touch -d @1500000000 "$d"/n* && touch -d @1600000000 "$d/h00" &&
        touch -d @1500000000 "$d" "$1"
}
t_check mk_hltree mk_hltree "$HL" || t_done

if ! t_ferryd_start fd33 "
[src]
    path = $SRC
[hl]
    path = $HL
[up]
    path = $UP
    read only = no
"; then
    t_fail ferryd_start "ferry daemon did not start"
    t_done
fi
URL=rsync://127.0.0.1:$FERRYD_PORT

# ------------------------------------------------------------------ helpers

CLEAN_ENV=(env -u RSYNC_PASSWORD -u USER -u LOGNAME -u RSYNC_PORT)

ok_compare() {
    local r=$1
    shift
    ok "$r" && t_compare "$@"
}

# add_extras DIR -- what --delete must remove (and one file it must bring
# back).
add_extras() {
    echo extra >"$1/extra.txt"
    mkdir -p "$1/extradir/deeper" && echo x >"$1/extradir/deeper/f"
    echo extra >"$1/sub/dir/extra2"
    rm -f "$1/small.txt"
}

# ---------------------------------------------------------------- protocols

for p in 27 28 29 30 31 32; do
    cmp=()
    # Nanosecond mtimes travel only from protocol 31 on.
    [ "$p" -ge 31 ] && cmp=(--nsec)
    P=--protocol=$p

    run "$T/pull_a_$p" "$FERRY" -a "$P" "$URL/src/" "$OUT/a_$p/"
    t_check "pull_a_p$p" ok_compare "$T/pull_a_$p" "$SRC" "$OUT/a_$p" --no-hardlinks "${cmp[@]}"
    run "$T/pull_aH_$p" "$FERRY" -aH "$P" "$URL/src/" "$OUT/aH_$p/"
    t_check "pull_aH_p$p" ok_compare "$T/pull_aH_$p" "$SRC" "$OUT/aH_$p" "${cmp[@]}"
    add_extras "$OUT/aH_$p"
    run "$T/pull_del_$p" "$FERRY" -aH --delete "$P" "$URL/src/" "$OUT/aH_$p/"
    t_check "pull_delete_p$p" ok_compare "$T/pull_del_$p" "$SRC" "$OUT/aH_$p" "${cmp[@]}"
    run "$T/pull_hl_$p" "$FERRY" -aH "$P" "$URL/hl/" "$OUT/hl_$p/"
    t_check "pull_aH_hlink_attrs_p$p" ok_compare "$T/pull_hl_$p" "$HL" "$OUT/hl_$p" "${cmp[@]}"

    run "$T/push_a_$p" "$FERRY" -a "$P" "$SRC/" "$URL/up/a_$p/"
    t_check "push_a_p$p" ok_compare "$T/push_a_$p" "$SRC" "$UP/a_$p" --no-hardlinks "${cmp[@]}"
    run "$T/push_aH_$p" "$FERRY" -aH "$P" "$SRC/" "$URL/up/aH_$p/"
    t_check "push_aH_p$p" ok_compare "$T/push_aH_$p" "$SRC" "$UP/aH_$p" "${cmp[@]}"
    add_extras "$UP/aH_$p"
    run "$T/push_del_$p" "$FERRY" -aH --delete "$P" "$SRC/" "$URL/up/aH_$p/"
    t_check "push_delete_p$p" ok_compare "$T/push_del_$p" "$SRC" "$UP/aH_$p" "${cmp[@]}"
    run "$T/push_hl_$p" "$FERRY" -aH "$P" "$HL/" "$URL/up/hl_$p/"
    t_check "push_aH_hlink_attrs_p$p" ok_compare "$T/push_hl_$p" "$HL" "$UP/hl_$p" "${cmp[@]}"
done

# flip_byte FILE OFFSET -- same size, same mtime, one bit different.
flip_byte() {
    "$PYTHON" -c 'import os, sys
p, off = sys.argv[1], int(sys.argv[2]); st = os.stat(p)
with open(p, "r+b") as f:
    f.seek(off); b = f.read(1); f.seek(off); f.write(bytes([b[0] ^ 1]))
os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))' "$1" "$2"
}

# -c both ways: a file that differs only in content (same size and mtime).
check_c() {
    local dir=$1 dst=$2
    shift 2
    "$RSYNC" -aH "$SRC/" "$dst/" && flip_byte "$dst/big.bin" 4242 || return 1
    run "$T/c_$dir" "$FERRY" -aH -c "$@"
    ok_compare "$T/c_$dir" "$SRC" "$dst" --nsec
}
t_check pull_checksum check_c pull "$OUT/c" "$URL/src/" "$OUT/c/"
t_check push_checksum check_c push "$UP/c" "$SRC/" "$URL/up/c/"

# A second pull onto an up-to-date copy transfers nothing.
check_noop() {
    run "$T/noop" "$FERRY" -aH --stats "$URL/src/" "$OUT/aH_32/"
    ok "$T/noop" || return 1
    grep -q '^Number of regular files transferred: 0$' "$T/noop.out" || { show_run "$T/noop"; return 1; }
}
t_check pull_up_to_date_noop check_noop

no_reports() {
    local f bad=0
    for f in "$T/fd33.out" "$T"/*.err; do
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
