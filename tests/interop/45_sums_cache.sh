#!/bin/bash
# --sums-cache (a ferry extension): the receiving side keeps the block sums
# of what it wrote and sends them as the basis sums next time. Checked: the
# cache is made and used (a spoiled cache changes what matches), a lying
# cache is caught where blocks are copied and mended by -c where --inplace
# trusts it, damaged or hostile cache files are ignored, and it works with ferry
# as the receiver of a local copy, a push to a ferry daemon and a pull from
# the real rsync daemon.
set -u
. "$(dirname "$0")/lib.sh"
t_setup
t_require python3 rsync

TOOL="python3 $(dirname "$0")/sumcache_tool.py"
# cache_ok FILE: it parses (the tool asserts the format)
cache_ok() { $TOOL "$1" list >/dev/null; }
not_same() { ! cmp -s "$1" "$2"; }
OPTS=(-a --no-whole-file --inplace -B 8192 --checksum-seed=4242 --sums-cache=.sums --stats)

make_src() {
    mkdir -p "$T/src/sub"
    python3 - "$T/src" <<'PY'
import os, sys
d = sys.argv[1]
open(f"{d}/big", "wb").write(os.urandom(3 * 1024 * 1024 + 100))
open(f"{d}/twin", "wb").write(os.urandom(3 * 1024 * 1024 + 100))
open(f"{d}/sub/small", "wb").write(os.urandom(5000))
PY
    touch -d '2001-01-01' "$T/src/big" "$T/src/twin" "$T/src/sub/small"
}

# poke FILE OFFSET [DAY]: change 4 bytes in place and give it a new mtime
poke() {
    printf 'ZZZZ' | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
    touch -d "2002-01-${3:-02}" "$1"
}

stat_bytes() { sed -n "s/^$1: \([0-9,]*\) bytes.*/\1/p" "$2" | tr -d ,; }

# --- local copy -----------------------------------------------------------
make_src
"$FERRY" "${OPTS[@]}" "$T/src/" "$T/dst/" >"$T/out1" 2>&1
t_check local_first_rc test $? -eq 0
t_check local_cache_made test -f "$T/dst/.sums"
$TOOL "$T/dst/.sums" list >"$T/list1" 2>&1
t_check local_cache_entries grep -qx "big 385" "$T/list1"
t_check local_cache_small grep -qx "sub/small 1" "$T/list1"

poke "$T/src/big" 1000000
"$FERRY" "${OPTS[@]}" "$T/src/" "$T/dst/" >"$T/out2" 2>&1
t_check local_second_rc test $? -eq 0
t_check local_second_same cmp "$T/src/big" "$T/dst/big"
lit=$(stat_bytes "Literal data" "$T/out2")
t_check local_second_delta test "${lit:-x}" = 8192
$TOOL "$T/dst/.sums" list >"$T/list2" 2>&1
t_check local_old_entries_kept grep -qx "sub/small 1" "$T/list2"

# A spoiled cache is used: no block of big matches its sums any more.
$TOOL "$T/dst/.sums" spoil big
poke "$T/src/big" 2000000 03
"$FERRY" "${OPTS[@]}" "$T/src/" "$T/dst/" >"$T/out3" 2>&1
t_check spoiled_rc test $? -eq 0
t_check spoiled_same cmp "$T/src/big" "$T/dst/big"
lit=$(stat_bytes "Literal data" "$T/out3")
t_check spoiled_cache_used test "${lit:-0}" -eq $((3 * 1024 * 1024 + 100))
# ... and replaced by right sums from that transfer.
poke "$T/src/big" 3000000 04
"$FERRY" "${OPTS[@]}" "$T/src/" "$T/dst/" >"$T/out4" 2>&1
lit=$(stat_bytes "Literal data" "$T/out4")
t_check spoiled_cache_healed test "${lit:-x}" = 8192

# A lying cache: twin's entry says it holds big's data, and the source's
# twin becomes big's data, so every block "matches".
# - Copied blocks (no --inplace) are read as they are copied: the
#   whole-file sum fails and the redo pass, which never reads the cache,
#   fetches the file.
# - --inplace leaves a matched block where it lies, unread: its kept sums
#   stand for it (the block-wise file sum, blockwise.h) -- the cache's
#   trust, rsync's quick check at the size of a block -- and the lie
#   stands. -c takes the sums afresh from the data and mends it.
cp "$T/src/big" "$T/src/twin"
touch -d '2002-02-01' "$T/src/twin"
COPY_OPTS=()
for o in "${OPTS[@]}"; do [ "$o" = --inplace ] || COPY_OPTS+=("$o"); done
$TOOL "$T/dst/.sums" lie "$T/dst" big twin
"$FERRY" "${COPY_OPTS[@]}" "$T/src/" "$T/dst/" >"$T/out5" 2>&1
t_check lying_rc test $? -eq 0
t_check lying_same cmp "$T/src/twin" "$T/dst/twin"
t_check lying_big_same cmp "$T/src/big" "$T/dst/big"
# the first pass believed the cache: twin's blocks all "matched"
matched=$(stat_bytes "Matched data" "$T/out5")
t_check lying_cache_used test "${matched:-0}" -ge $((3 * 1024 * 1024))

python3 - "$T/src/twin" <<'PY'
import os, sys
open(sys.argv[1], "wb").write(os.urandom(3 * 1024 * 1024 + 100))
PY
touch -d '2002-02-02' "$T/src/twin"
"$FERRY" "${OPTS[@]}" "$T/src/" "$T/dst/" >/dev/null 2>&1
cp "$T/src/big" "$T/src/twin"
touch -d '2002-02-03' "$T/src/twin"
$TOOL "$T/dst/.sums" lie "$T/dst" big twin
"$FERRY" "${OPTS[@]}" "$T/src/" "$T/dst/" >"$T/out5i" 2>&1
t_check lying_inplace_rc test $? -eq 0
t_check lying_inplace_trusted not_same "$T/src/twin" "$T/dst/twin"
touch -d '2002-02-04' "$T/src/twin"
"$FERRY" "${OPTS[@]}" -c "$T/src/" "$T/dst/" >"$T/out5c" 2>&1
t_check lying_checksum_rc test $? -eq 0
t_check lying_checksum_mended cmp "$T/src/twin" "$T/dst/twin"
lit=$(stat_bytes "Literal data" "$T/out5c")
t_check lying_checksum_fresh_sums test "${lit:-0}" -ge $((3 * 1024 * 1024))

# A damaged cache is ignored and rewritten; a file of that name that is
# not a cache at all (a user's data) is ignored and left as it is.
for how in truncated garbage empty; do
    case $how in
    truncated) head -c 100 "$T/dst/.sums" >"$T/cut" && cat "$T/cut" >"$T/dst/.sums" ;;
    garbage) head -c 70000 /dev/urandom >"$T/dst/.sums" ;;
    empty) : >"$T/dst/.sums" ;;
    esac
    cp "$T/dst/.sums" "$T/before"
    poke "$T/src/sub/small" 10 0$((5 + ${#how} % 4))
    "$FERRY" "${OPTS[@]}" "$T/src/" "$T/dst/" >"$T/out6" 2>&1
    t_check "damaged_${how}_rc" test $? -eq 0
    t_check "damaged_${how}_same" cmp "$T/src/sub/small" "$T/dst/sub/small"
    if [ "$how" = truncated ]; then
        t_check "damaged_${how}_rewritten" cache_ok "$T/dst/.sums"
    else
        t_check "foreign_${how}_left" cmp "$T/before" "$T/dst/.sums"
        t_check "foreign_${how}_said" grep -q "not a sums cache; left as it is" "$T/out6"
        rm -f "$T/dst/.sums"
    fi
done

# Hostile entries: absurd block counts and escaping paths make the file
# unusable, never a crash or a stat outside the tree.
python3 - "$T/dst/.sums" <<'PY'
import struct, sys
name = sys.argv[1]
d = bytearray(open(name, "rb").read())
head = d[:23]
bad = bytearray(head[:19]) + struct.pack("<I", 2)
for path, count in ((b"../../etc/passwd", 1), (b"big", 0x7fffffff)):
    bad += struct.pack("<H", len(path)) + path
    bad += struct.pack("<QQqqIqIii", 1, 2, 8192, 0, 0, 0, 0, 8192, count)
open(name, "wb").write(bad + b"\0" * 64)
PY
poke "$T/src/big" 5 09
"$FERRY" "${OPTS[@]}" "$T/src/" "$T/dst/" >"$T/out7" 2>&1
t_check hostile_rc test $? -eq 0
t_check hostile_same cmp "$T/src/big" "$T/dst/big"
t_check hostile_rewritten cache_ok "$T/dst/.sums"

# The cache is never followed through a symlink, nor replaces one.
echo keep >"$T/target"
rm -f "$T/dst/.sums"
ln -s "$T/target" "$T/dst/.sums"
poke "$T/src/big" 6 10
"$FERRY" "${OPTS[@]}" "$T/src/" "$T/dst/" >"$T/out8" 2>&1
t_check symlink_rc test $? -eq 0
t_check symlink_target_kept test "$(cat "$T/target")" = keep
t_check symlink_left test -L "$T/dst/.sums"
rm -f "$T/dst/.sums"

# Not written by a dry run; refused as anything but a plain name.
rm -rf "$T/dry"
"$FERRY" "${OPTS[@]}" -n "$T/src/" "$T/dry/" >"$T/out9" 2>&1
t_check dry_run_no_cache test ! -e "$T/dry/.sums"
"$FERRY" -a --sums-cache=a/b "$T/src/" "$T/dst2/" >"$T/out10" 2>&1
rc=$?
t_check plain_name_only test $rc -eq 1
t_check plain_name_message grep -q "sums-cache=a/b: expected a plain file name" "$T/out10"

# --- push to a ferry daemon ---------------------------------------------
mkdir -p "$T/mod" "$T/mod/e"
echo secret >"$T/mod/e/hidden"
t_ferryd_start fd "[m]
path = $T/mod
read only = no
exclude = hidden" || t_fail ferryd_start "no daemon"
wait_cache() {
    # the daemon writes it after the client has its answer
    for _ in $(seq 50); do [ -f "$1" ] && return 0; sleep 0.1; done
    return 1
}
"$FERRY" "${OPTS[@]}" "$T/src/" "rsync://127.0.0.1:$FERRYD_PORT/m/d/" >"$T/p1" 2>&1
t_check push_first_rc test $? -eq 0
t_check push_cache_made wait_cache "$T/mod/d/.sums"
poke "$T/src/big" 2500000 11
"$FERRY" "${OPTS[@]}" "$T/src/" "rsync://127.0.0.1:$FERRYD_PORT/m/d/" >"$T/p2" 2>&1
t_check push_second_rc test $? -eq 0
t_check push_second_same cmp "$T/src/big" "$T/mod/d/big"
sleep 0.5
$TOOL "$T/mod/d/.sums" spoil big
poke "$T/src/big" 2600000 12
"$FERRY" "${OPTS[@]}" "$T/src/" "rsync://127.0.0.1:$FERRYD_PORT/m/d/" >"$T/p3" 2>&1
lit=$(stat_bytes "Literal data" "$T/p3")
t_check push_cache_used test "${lit:-0}" -eq $((3 * 1024 * 1024 + 100))
t_check push_spoiled_same cmp "$T/src/big" "$T/mod/d/big"
# a name the module excludes is not written
"$FERRY" -a --checksum-seed=4242 --sums-cache=hidden "$T/src/" \
    "rsync://127.0.0.1:$FERRYD_PORT/m/e/" >"$T/p4" 2>&1
t_check push_excluded_rc test $? -eq 0
t_check push_excluded_said grep -q "hidden is excluded by the module" "$T/p4"
sleep 0.5
t_check push_excluded_untouched test "$(cat "$T/mod/e/hidden")" = secret
# A pull from a ferry daemon: the server's sender never hears of the
# option (only a client's sender forwards it), so neither end makes the
# whole-file sum block-wise; a change is still a one-block delta.
"$FERRY" "${OPTS[@]}" --exclude=/.sums "rsync://127.0.0.1:$FERRYD_PORT/m/d/" "$T/fpull/" >"$T/p5" 2>&1
t_check pull_ferryd_rc test $? -eq 0
poke "$T/mod/d/big" 100 13
"$FERRY" "${OPTS[@]}" --exclude=/.sums "rsync://127.0.0.1:$FERRYD_PORT/m/d/" "$T/fpull/" >"$T/p6" 2>&1
t_check pull_ferryd_second_rc test $? -eq 0
t_check pull_ferryd_same cmp "$T/mod/d/big" "$T/fpull/big"
lit=$(stat_bytes "Literal data" "$T/p6")
t_check pull_ferryd_delta test "${lit:-x}" = 8192
t_ferryd_stop

# --- pull from the real rsync daemon -------------------------------------
t_rsyncd_start rd "[src]
path = $T/src
read only = yes" || t_fail rsyncd_start "no daemon"
"$FERRY" "${OPTS[@]}" "rsync://127.0.0.1:$RSYNCD_PORT/src/" "$T/pull/" >"$T/r1" 2>&1
t_check pull_first_rc test $? -eq 0
t_check pull_cache_made test -f "$T/pull/.sums"
$TOOL "$T/pull/.sums" spoil big
poke "$T/src/big" 123 13
"$FERRY" "${OPTS[@]}" "rsync://127.0.0.1:$RSYNCD_PORT/src/" "$T/pull/" >"$T/r2" 2>&1
t_check pull_second_rc test $? -eq 0
t_check pull_second_same cmp "$T/src/big" "$T/pull/big"
lit=$(stat_bytes "Literal data" "$T/r2")
t_check pull_cache_used test "${lit:-0}" -eq $((3 * 1024 * 1024 + 100))
poke "$T/src/big" 456789 14
"$FERRY" "${OPTS[@]}" "rsync://127.0.0.1:$RSYNCD_PORT/src/" "$T/pull/" >"$T/r3" 2>&1
t_check pull_third_same cmp "$T/src/big" "$T/pull/big"
lit=$(stat_bytes "Literal data" "$T/r3")
t_check pull_third_delta test "${lit:-x}" = 8192

# A push to rsync: only a ferry receiver knows the option, and rsync says so.
mkdir -p "$T/rmod"
t_rsyncd_stop
t_rsyncd_start rd2 "[w]
path = $T/rmod
read only = no" || t_fail rsyncd_start2 "no daemon"
"$FERRY" "${OPTS[@]}" "$T/src/" "rsync://127.0.0.1:$RSYNCD_PORT/w/" >"$T/w1" 2>&1
rc=$?
t_check push_rsync_refused test $rc -ne 0
t_check push_rsync_says grep -q "sums-cache" "$T/w1"
t_check no_sanitizer_reports t_no_sanitizer_reports "$T/fd.out"
t_done
