#!/bin/bash
# ferry as the client pushing to a REAL rsync daemon: the tree ends equal to
# the source (-a, -aH, --delete, protocols 29 and 30, two checksums), -n
# changes nothing, -i prints the same set of lines real rsync prints for the
# same push from the same starting state, a 1%-changed 16 MiB file goes as a
# small delta, client excludes keep files back, and an unknown module gives
# exit 5.
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
UP=$T/up
HL=$T/hl
t_check mktree t_mktree "$SRC" || t_done
mkdir -p "$UP"

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

if ! t_rsyncd_start rd31 "
[up]
    path = $UP
    read only = no
    use chroot = no
    munge symlinks = no
"; then
    t_fail rsyncd_start "real rsync daemon did not start"
    t_done
fi
URL=rsync://127.0.0.1:$RSYNCD_PORT/up

# ------------------------------------------------------------------ helpers

CLEAN_ENV=(env -u RSYNC_PASSWORD -u USER -u LOGNAME -u RSYNC_PORT)

ok_compare() {
    local r=$1
    shift
    ok "$r" && t_compare "$@"
}

# push NAME ARGS... -- ferry pushes; ARGS end with the source, the dest is
# the module's directory NAME.
push() {
    local name=$1
    shift
    run "$T/$name" "$FERRY" "$@" "$URL/$name/"
}

stat_bytes() {
    sed -n "s/^$2: \([0-9,]*\) bytes.*/\1/p" "$1.out" | tr -d , | head -n 1
}

flip_byte() {
    "$PYTHON" -c 'import os, sys
p, off = sys.argv[1], int(sys.argv[2]); st = os.stat(p)
with open(p, "r+b") as f:
    f.seek(off); b = f.read(1); f.seek(off); f.write(bytes([b[0] ^ 1]))
os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))' "$1" "$2"
}

# --------------------------------------------------------------- transfers

push push_a -a "$SRC/"
t_check push_a ok_compare "$T/push_a" "$SRC" "$UP/push_a" --nsec --no-hardlinks
push push_aH -aH "$SRC/"
t_check push_aH ok_compare "$T/push_aH" "$SRC" "$UP/push_aH" --nsec
push push_hl -aH "$HL/"
t_check push_aH_hlink_attrs ok_compare "$T/push_hl" "$HL" "$UP/push_hl" --nsec

check_delete() {
    "$RSYNC" -aH "$SRC/" "$UP/push_delete/" || return 1
    echo extra >"$UP/push_delete/extra.txt"
    mkdir -p "$UP/push_delete/extradir/deeper" && echo x >"$UP/push_delete/extradir/deeper/f"
    echo extra >"$UP/push_delete/sub/dir/extra2"
    rm -f "$UP/push_delete/small.txt"
    push push_delete -aH --delete "$SRC/"
    ok_compare "$T/push_delete" "$SRC" "$UP/push_delete" --nsec
}
t_check push_delete check_delete

for p in 29 30; do
    push "push_p$p" -aH --protocol="$p" "$SRC/"
    # Nanosecond mtimes travel only from protocol 31 on.
    t_check "push_protocol_$p" ok_compare "$T/push_p$p" "$SRC" "$UP/push_p$p"
done

check_cc() {
    local cc=$1 d=$UP/push_cc_$1 matched
    "$RSYNC" -aH "$SRC/" "$d/" || return 1
    flip_byte "$d/sub/huge.bin" 3000000 || return 1
    touch -d @1000000000 "$d/sub/huge.bin"
    push "push_cc_$cc" -aH --checksum-choice="$cc" --stats "$SRC/"
    ok_compare "$T/push_cc_$cc" "$SRC" "$d" --nsec || return 1
    matched=$(stat_bytes "$T/push_cc_$cc" "Matched data")
    echo "matched data with $cc: $matched"
    [ "${matched:-0}" -gt 4000000 ]
}
# -c: a file that differs only in content (same size and mtime) is fixed.
check_c() {
    local d=$UP/push_c
    "$RSYNC" -aH "$SRC/" "$d/" || return 1
    flip_byte "$d/big.bin" 4242 || return 1
    push push_c -aH -c "$SRC/"
    ok_compare "$T/push_c" "$SRC" "$d" --nsec
}
t_check push_checksum check_c

for cc in md5 xxh128; do
    t_check "push_cc_$cc" check_cc "$cc"
done

# ------------------------------------------- -i and -n against real rsync

# The starting state: a copy of the source with every kind of difference.
PRISTINE=$T/pristine
make_pristine() {
    "$RSYNC" -aH "$SRC/" "$PRISTINE/" || return 1
    (
        cd "$PRISTINE" || exit 1
        echo "changed content" >small.txt && touch -d @1000000000 small.txt
        chmod 0600 script.sh
        touch -d @1000000001 one
        rm -f sub/medium.txt && rm -rf sub/dir
        echo extra >extra.txt && mkdir -p extradir && echo x >extradir/f
        # (an old time: a symlink made in the second it is copied keeps its
        # own, as rsync compares whole seconds for links)
        rm -f link_file && ln -s other link_file && touch -h -d @1000000004 link_file
        rm -f sub/hard_b && echo "not linked" >sub/hard_b
        flip_byte big.bin 1000 && touch -d @1000000002 big.bin
    ) || return 1
    # Directories the edits touched get fixed times, the same in every copy.
    touch -d @1000000003 "$PRISTINE" "$PRISTINE/sub" "$PRISTINE/extradir"
}
t_check make_pristine make_pristine || t_done

# items TOOL NAME ARGS... -- push with TOOL from the pristine state into
# the module directory NAME; the -i lines, sorted, go to $T/NAME.items.
items() {
    local tool=$1 name=$2
    shift 2
    rm -rf "${UP:?}/$name" && "$RSYNC" -aH "$PRISTINE/" "$UP/$name/" || return 1
    run "$T/$name" "$tool" "$@" "$SRC/" "$URL/$name/"
    ok "$T/$name" || return 1
    sort "$T/$name.out" >"$T/$name.items"
}

same_items() {
    local args=("$@") tag
    tag=$(printf "%s" "$*" | tr -cd "a-zA-Z")
    items "$RSYNC" "i_rsync_$tag" "${args[@]}" || return 1
    items "$FERRY" "i_ferry_$tag" "${args[@]}" || return 1
    echo "--- ferry's lines:"
    cat "$T/i_ferry_$tag.items"
    diff "$T/i_rsync_$tag.items" "$T/i_ferry_$tag.items" || return 1
    [ -s "$T/i_ferry_$tag.items" ]
}
t_check itemize_lines same_items -aHi --delete
t_check itemize_result t_compare "$SRC" "$UP/i_ferry_aHidelete" --nsec
t_check dry_run_lines same_items -aHin --delete
# -n must leave the starting state exactly as it was.
t_check dry_run_changes_nothing t_compare "$PRISTINE" "$UP/i_ferry_aHindelete" --nsec

# ------------------------------------------------------------------- delta

DELTA=$T/delta
check_delta() {
    local i lit matched
    mkdir -p "$DELTA" && head -c $((16 * 1048576)) /dev/urandom >"$DELTA/big" || return 1
    # An old dir mtime: a receiver that compares whole seconds only (real
    # rsync) would not re-set one from this very second after writing.
    touch -d @1600000000 "$DELTA/big" "$DELTA"
    run "$T/delta1" "$FERRY" -a "$DELTA/" "$URL/delta/"
    ok_compare "$T/delta1" "$DELTA" "$UP/delta" --nsec || return 1
    for i in $(seq 0 15); do
        dd if=/dev/urandom of="$DELTA/big" bs=10240 count=1 seek=$((i * 102 + 7)) \
            conv=notrunc status=none || return 1
    done
    touch -d @1600003600 "$DELTA/big"
    run "$T/delta2" "$FERRY" -a --stats "$DELTA/" "$URL/delta/"
    ok_compare "$T/delta2" "$DELTA" "$UP/delta" --nsec || return 1
    lit=$(stat_bytes "$T/delta2" "Literal data")
    matched=$(stat_bytes "$T/delta2" "Matched data")
    echo "literal $lit matched $matched"
    [ -n "$lit" ] && [ "$lit" -gt 0 ] && [ "$lit" -lt $((16 * 1048576 / 20)) ] &&
        [ "${matched:-0}" -gt $((15 * 1048576)) ]
}
t_check push_delta check_delta

# ---------------------------------------------------------------- excludes

# (-a, not -aH: see push_aH_hlink_attrs for what -H adds.)
check_exclude() {
    local bad
    push push_excl -a --exclude='*.bin' --exclude=secret/ "$SRC/"
    ok "$T/push_excl" || return 1
    bad=$(find "$UP/push_excl" -name '*.bin' -o -name secret)
    [ -z "$bad" ] || { echo "excluded files were pushed: $bad"; return 1; }
    [ -f "$UP/push_excl/small.txt" ] || return 1
    run "$T/push_excl_rsync" "$RSYNC" -a --exclude='*.bin' --exclude=secret/ "$SRC/" \
        "$URL/push_excl_rsync/"
    ok_compare "$T/push_excl_rsync" "$UP/push_excl_rsync" "$UP/push_excl" --nsec
}
t_check push_exclude check_exclude

# ----------------------------------------------------------------- errors

check_unknown() {
    run "$T/nosuch" "$FERRY" -a "$SRC/" "rsync://127.0.0.1:$RSYNCD_PORT/nosuch/"
    [ "$(cat "$T/nosuch.rc")" = 5 ] && grep -qF "@ERROR: Unknown module 'nosuch'" "$T/nosuch.err" \
        "$T/nosuch.out" && return 0
    echo "exit $(cat "$T/nosuch.rc"), expected 5 and the daemon's @ERROR"
    show_run "$T/nosuch"
    return 1
}
t_check unknown_module check_unknown

no_reports() {
    local f bad=0
    for f in "$T"/*.err; do
        if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer' "$f"; then
            echo "sanitizer report in $f:"
            grep -m1 -A12 -E 'ERROR: [A-Za-z]*Sanitizer|runtime error' "$f"
            bad=1
        fi
    done
    return "$bad"
}
t_check no_sanitizer_reports no_reports

t_done
