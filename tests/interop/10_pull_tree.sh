#!/bin/bash
# Whole-tree pulls from a REAL rsync daemon: for each option set, protocol
# version and checksum choice, pull once with real rsync and once with
# ferry into fresh directories and require identical results (content and
# every attribute the option set preserves). A second run over the result
# must then change exactly what rsync's second run changes -- nothing, for
# every option set that preserves times.
#
# Run against real rsync (FERRY=/usr/bin/rsync) every check must pass: that
# proves the checks themselves.
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON" "$FERRY"
t_setup

SRC=$T/src
IS_ROOT=0
[ "$(id -u)" = 0 ] && IS_ROOT=1

# ------------------------------------------------------------------ fixture

# The standard tree, plus a char device and a fifo (only root may mknod;
# mkfifo is kept with it so -D is tested as one unit).
make_src() {
    t_mktree "$SRC" || return 1
    if [ "$IS_ROOT" = 1 ]; then
        mknod "$SRC/dev_null" c 1 3 && mkfifo "$SRC/sub/fifo" || return 1
        touch -h -d @1650000000.5 "$SRC/dev_null" "$SRC/sub/fifo"
        # Adding entries bumped these directories' mtimes; give them
        # nanosecond-carrying times again.
        touch -d @1650003600.123456789 "$SRC/sub"
        touch -d @1650007200.987654321 "$SRC"
    fi
}

if ! t_check make_src make_src; then
    t_done
fi
if ! t_rsyncd_start d10 "
[tree]
    path = $SRC
    read only = yes
"; then
    t_fail rsyncd_start "real rsync daemon did not start"
    t_done
fi
URL=rsync://127.0.0.1:$RSYNCD_PORT/tree/

# ------------------------------------------------------------------ helpers

# pull TOOL DEST ARGS... -- pull the whole module into DEST (fresh or not).
# stdout goes to DEST.out, stderr to DEST.err; returns the tool's exit code.
# The umask is unusual on purpose: without -p, new files get the source mode
# masked by it, and 022 would hide a receiver that ignores the umask.
pull() {
    local tool=$1 dst=$2
    shift 2
    (umask 027 && exec "$tool" "$@" "$URL" "$dst/") >"$dst.out" 2>"$dst.err"
}

# Itemize lines as a sorted set. The "receiving ... file list" line is
# dropped: with -H, -A and a few other options ferry asks for whole lists
# where rsync would not.
norm_out() {
    grep -v -e '^receiving .*file list$' -e '^$' "$1" | LC_ALL=C sort
}

# ferry_unsupported ERRFILE -- true if ferry refused an option it documents
# as "not supported yet"; such a case is a SKIP, not a bug.
ferry_unsupported() {
    grep -q 'is not supported yet' "$1" 2>/dev/null
}

show_err() {
    local f
    for f in "$@"; do
        [ -s "$f" ] && { echo "--- $f:"; head -n 20 "$f"; }
    done
    return 0
}

# check_rc0 DST RC -- a pull must have succeeded (else show its output).
check_rc0() {
    local dst=$1 rc=$2
    [ "$rc" -eq 0 ] && return 0
    echo "exit $rc for $dst"
    show_err "$dst.out" "$dst.err"
    return 1
}

# same_output A B -- two itemize outputs are equal as sets of lines.
same_output() {
    local a=$1 b=$2
    if diff <(norm_out "$a") <(norm_out "$b") >"$T/out.diff"; then
        return 0
    fi
    echo "itemize output differs (< rsync, > ferry):"
    head -n 30 "$T/out.diff"
    return 1
}

# empty_output FILE -- nothing itemized (a no-op run). Without -D, rsync
# also says "skipping non-regular file" for devices and fifos: not a change.
empty_output() {
    local n
    n=$(norm_out "$1" | grep -vc '^skipping non-regular file ')
    [ "$n" -eq 0 ] && return 0
    echo "expected no itemized changes, got $n line(s):"
    norm_out "$1" | head -n 20
    return 1
}

# run_case NAME "CMPFLAGS" [--times-kept] ARGS... -- the core comparison:
#   NAME.pull     ferry exits 0
#   NAME.same     ferry's tree equals rsync's (t_compare CMPFLAGS)
#   NAME.rerun    a second ferry run exits 0 and itemizes exactly what
#                 rsync's second run itemizes (and, with --times-kept,
#                 nothing at all), leaving the tree still equal
# ARGS go to both tools; ferry-only args may follow "--ferry".
run_case() {
    local name=$1 cmp times_kept=0 args=() fargs=() rc rrc
    read -ra cmp <<<"$2"
    shift 2
    if [ "${1:-}" = --times-kept ]; then
        times_kept=1
        shift
    fi
    while [ $# -gt 0 ] && [ "$1" != --ferry ]; do
        args+=("$1")
        shift
    done
    [ "${1:-}" = --ferry ] && shift && fargs=("$@")
    local ref=$T/$name.rsync dst=$T/$name.ferry

    pull "$RSYNC" "$ref" "${args[@]}"
    rrc=$?
    if [ "$rrc" -ne 0 ]; then
        t_fail "$name.reference" "real rsync ${args[*]} exit $rrc: $(head -c 300 "$ref.err")"
        return 1
    fi
    pull "$FERRY" "$dst" "${args[@]}" "${fargs[@]}"
    rc=$?
    if [ "$rc" -ne 0 ] && ferry_unsupported "$dst.err"; then
        t_skip "$name" "ferry: $(head -n 1 "$dst.err")"
        return 0
    fi
    t_check "$name.pull" check_rc0 "$dst" "$rc" || return 1
    t_check "$name.same" t_compare "$ref" "$dst" "${cmp[@]}"

    # Second runs: same options, -i added so every change is visible.
    pull "$RSYNC" "$ref" "${args[@]}" -i
    pull "$FERRY" "$dst" "${args[@]}" "${fargs[@]}" -i
    rc=$?
    t_check "$name.rerun_rc" check_rc0 "$dst" "$rc"
    if [ "$times_kept" = 1 ]; then
        t_check "$name.rerun_noop" empty_output "$dst.out"
    fi
    t_check "$name.rerun_like_rsync" same_output "$ref.out" "$dst.out"
    t_check "$name.rerun_same" t_compare "$ref" "$dst" "${cmp[@]}"
}

# ------------------------------------------------------------ option sets

# The hard-link pair is only expected to survive with -H.
NOH=--no-hardlinks
run_case a "--nsec $NOH" --times-kept -a
run_case r "--no-times $NOH" -r
run_case rlpt "--nsec $NOH" --times-kept -rlpt
run_case a_numeric_ids "--nsec $NOH" --times-kept -a --numeric-ids
run_case aH "--nsec" --times-kept -aH
run_case a_chmod "--nsec $NOH" --times-kept -a --chmod=Du+rwx,go-w,Fgo-w
run_case rlt "--nsec $NOH" --times-kept -rlt

# ---------------------------------------------------------------- protocols

# Real rsync pulls with the same --protocol, so whatever an old protocol
# cannot carry (e.g. nanoseconds before 31) is missing from both sides.
for p in 32 31 30 29 28 27; do
    run_case "proto$p.a" "--nsec $NOH" --times-kept -a --protocol="$p"
    run_case "proto$p.aH" "--nsec" --times-kept -aH --protocol="$p"
done

# ------------------------------------------------------------ checksums

REF_A=$T/a.rsync # rsync -a result from the option-set cases

# flip_byte FILE OFFSET -- change one byte; size and mtime stay as they were.
flip_byte() {
    "$PYTHON" -c 'import os, sys
p, off = sys.argv[1], int(sys.argv[2]); st = os.stat(p)
with open(p, "r+b") as f:
    f.seek(off); b = f.read(1); f.seek(off); f.write(bytes([b[0] ^ 1]))
os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))' "$1" "$2"
}

# stat_field FILE NAME -- the number from a --stats line "NAME: N bytes".
stat_field() {
    sed -n "s/^$2: \([0-9,.]*\).*/\1/p" "$1" | tr -d ',.' | head -n 1
}

# An old copy of the tree: the big files altered in a few places and with an
# older mtime, so the quick check sends them through the delta algorithm.
make_stale_copy() {
    local d=$1
    cp -a "$REF_A" "$d" || return 1
    flip_byte "$d/big.bin" 1000 && flip_byte "$d/big.bin" 700000 &&
        flip_byte "$d/sub/huge.bin" 3000000 || return 1
    touch -d @1500000000 "$d/big.bin" "$d/sub/huge.bin"
}

# The delta pull used the blocks of the old copy (a checksum mismatch with
# the sender would make every block literal, or fail verification).
check_delta_stats() {
    local out=$1 matched literal
    matched=$(stat_field "$out" "Matched data")
    literal=$(stat_field "$out" "Literal data")
    echo "matched=$matched literal=$literal"
    if [ -z "$matched" ] || [ -z "$literal" ]; then
        cat "$out"
        return 1
    fi
    # Three flipped bytes cost at most three blocks (<= 3 x 128 KiB).
    [ "$matched" -gt 5000000 ] && [ "$literal" -lt 400000 ]
}

# file_differs A B -- true if the two files' contents differ.
file_differs() { ! cmp -s "$1" "$2"; }

checksum_case() {
    local cc=$1 name=cc_$1 d rc
    # Fresh pull: the whole-file checksum verifies every file.
    d=$T/$name.fresh
    pull "$FERRY" "$d" -a --checksum-choice="$cc"
    rc=$?
    t_check "$name.fresh_pull" check_rc0 "$d" "$rc"
    t_check "$name.fresh_same" t_compare "$REF_A" "$d" --nsec $NOH

    # Delta pull: block checksums with the chosen algorithm.
    d=$T/$name.delta
    make_stale_copy "$d"
    pull "$FERRY" "$d" -a --stats --checksum-choice="$cc"
    rc=$?
    t_check "$name.delta_pull" check_rc0 "$d" "$rc"
    t_check "$name.delta_same" t_compare "$REF_A" "$d" --nsec $NOH
    t_check "$name.delta_matched" check_delta_stats "$d.out"

    # -c: a file changed with size and mtime kept is only seen by checksum.
    local r=$T/$name.c.rsync
    d=$T/$name.c.ferry
    cp -a "$REF_A" "$d" && cp -a "$REF_A" "$r"
    flip_byte "$d/small.txt" 10 && flip_byte "$r/small.txt" 10
    pull "$FERRY" "$d" -a -i --checksum-choice="$cc"
    t_check "$name.quick_check_skips" empty_output "$d.out"
    t_check "$name.quick_check_kept" file_differs "$REF_A/small.txt" "$d/small.txt"
    pull "$RSYNC" "$r" -a -i -c --checksum-choice="$cc"
    pull "$FERRY" "$d" -a -i -c --checksum-choice="$cc"
    rc=$?
    t_check "$name.c_pull" check_rc0 "$d" "$rc"
    # rsync itemizes exactly ">fc........ small.txt"; with a wrong
    # algorithm every file would look changed.
    t_check "$name.c_itemize" same_output "$r.out" "$d.out"
    t_check "$name.c_same" t_compare "$REF_A" "$d" --nsec $NOH
}

if [ -d "$REF_A" ]; then
    for cc in md4 md5 sha1 xxh64 xxh3 xxh128; do
        checksum_case "$cc"
    done
else
    t_fail checksums "no rsync -a reference tree"
fi

t_done
