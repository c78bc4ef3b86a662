#!/bin/bash
# Compressed transfers against real rsync 3.5.0, every algorithm (zstd,
# lz4, zlibx, zlib) and every direction: ferry pulling from and pushing to
# a real rsync daemon, real rsync pulling from and pushing to a ferry
# daemon, each as a whole-file transfer and as a delta (basis present, about
# 1% changed); the results must be byte-identical. Also: plain -z
# negotiation both ways (and against a daemon restricted by
# RSYNC_COMPRESS_LIST), -z with protocols 29 and 30, -zz, --old-compress,
# --new-compress, levels, incompressible and highly compressible data
# (ferry's adaptive rule), the default skip-suffix list and --skip-compress.
# Corrupt compressed streams are covered by tests/unit/test_token_rsync.c.
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

SRC=$T/src      # the tree
NEW=$T/new      # the tree with about 1% of its bytes changed
TXT=$T/txt      # mostly compressible files
TXT2=$T/txt2    # the same with about 1% changed
UPR=$T/up_rsyncd
UPF=$T/up_ferryd
mkdir -p "$UPR" "$UPF"

CLEAN_ENV=(env -u RSYNC_PASSWORD -u USER -u LOGNAME -u RSYNC_PORT -u RSYNC_COMPRESS_LIST)

# same A B -- the trees hold the same files with the same contents.
same() {
    t_compare "$1" "$2" --no-hardlinks --no-dir-times
}

ok_same() {
    local r=$1
    shift
    ok "$r" && same "$@"
}

# stat_bytes OUT LABEL -- a number from a --stats line ("Total bytes sent").
stat_bytes() {
    sed -n "s/^$2: \([0-9,]*\).*/\1/p" "$1.out" | tr -d , | head -n 1
}

# mutate FILE SEED -- change about 1% of FILE in place (five random
# patches of 0.2% each), same size, new mtime.
mutate() {
    "$PYTHON" -c 'import random, sys
p, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)
b = bytearray(open(p, "rb").read())
n = max(1, len(b) // 500)
for _ in range(5):
    o = rng.randrange(len(b))
    b[o:o + n] = rng.randbytes(n)[:len(b) - o]
open(p, "wb").write(b)' "$1" "$2" && touch -d @1700000000 "$1"
}

make_trees() {
    t_mktree "$SRC" || return 1
    mkdir -p "$SRC/comp" || return 1
    yes "the same line again and again, compressible" | head -c 2000000 >"$SRC/comp/yes.txt"
    seq 1 200000 >"$SRC/comp/seq.txt"
    head -c 300000 /dev/urandom >"$SRC/comp/photo.bin"
    { head -c 200000 /dev/urandom; seq 1 150000; } >"$SRC/comp/mixed.dat"
    "$RSYNC" -a "$SRC/" "$NEW/" || return 1
    local f i=1
    for f in sub/huge.bin big.bin sub/medium.txt comp/seq.txt comp/mixed.dat comp/yes.txt; do
        mutate "$NEW/$f" "$i" || return 1
        i=$((i + 1))
    done
    mkdir -p "$TXT" && cp "$SRC/comp/seq.txt" "$SRC/comp/yes.txt" "$SRC/sub/medium.txt" "$TXT/" &&
        cp "$SRC/comp/photo.bin" "$TXT/photo.bin" || return 1
    "$RSYNC" -a "$TXT/" "$TXT2/" || return 1
    mutate "$TXT2/seq.txt" 7 && mutate "$TXT2/medium.txt" 8 && mutate "$TXT2/photo.bin" 9
}
t_check make_trees make_trees || t_done

MODULES="
[src]
    path = $SRC
    use chroot = no
    munge symlinks = no
[new]
    path = $NEW
    use chroot = no
    munge symlinks = no
[txt]
    path = $TXT
    use chroot = no
[txt2]
    path = $TXT2
    use chroot = no
"
if ! t_rsyncd_start rd40 "$MODULES
[up]
    path = $UPR
    read only = no
    use chroot = no
    munge symlinks = no
"; then
    t_fail rsyncd_start "real rsync daemon did not start"
    t_done
fi
RD=rsync://127.0.0.1:$RSYNCD_PORT
if ! t_ferryd_start fd40 "$MODULES
[up]
    path = $UPF
    read only = no
    use chroot = no
    munge symlinks = no
"; then
    t_fail ferryd_start "ferry daemon did not start"
    t_done
fi
FD=rsync://127.0.0.1:$FERRYD_PORT

# ------------------------------------------ every algorithm, every direction

# ferry <- rsync daemon
ferry_pull() {
    local z=$1 d=$T/fpull_$1
    run "$d.w" "$FERRY" -a --compress-choice="$z" "$RD/src/" "$d.w/"
    ok_same "$d.w" "$SRC" "$d.w" || return 1
    "$RSYNC" -a "$SRC/" "$d.d/" || return 1
    run "$d.d" "$FERRY" -a --compress-choice="$z" --stats "$RD/new/" "$d.d/"
    ok_same "$d.d" "$NEW" "$d.d" || return 1
    local matched
    matched=$(stat_bytes "$d.d" "Matched data")
    echo "matched data: $matched"
    [ "${matched:-0}" -gt 5000000 ]
}

# ferry -> rsync daemon
ferry_push() {
    local z=$1 name=fpush_$1
    run "$T/$name.w" "$FERRY" -a --compress-choice="$z" "$SRC/" "$RD/up/$name.w/"
    ok_same "$T/$name.w" "$SRC" "$UPR/$name.w" || return 1
    "$RSYNC" -a "$SRC/" "$UPR/$name.d/" || return 1
    run "$T/$name.d" "$FERRY" -a --compress-choice="$z" --stats "$NEW/" "$RD/up/$name.d/"
    ok_same "$T/$name.d" "$NEW" "$UPR/$name.d" || return 1
    local sent
    sent=$(stat_bytes "$T/$name.d" "Total bytes sent")
    echo "bytes sent: $sent"
    [ "${sent:-99999999}" -lt 1000000 ]
}

# rsync <- ferry daemon
rsync_pull() {
    local z=$1 d=$T/rpull_$1
    run "$d.w" "$RSYNC" -a --compress-choice="$z" "$FD/src/" "$d.w/"
    ok_same "$d.w" "$SRC" "$d.w" || return 1
    "$RSYNC" -a "$SRC/" "$d.d/" || return 1
    run "$d.d" "$RSYNC" -a --compress-choice="$z" --stats "$FD/new/" "$d.d/"
    ok_same "$d.d" "$NEW" "$d.d" || return 1
    local got
    got=$(stat_bytes "$d.d" "Total bytes received")
    echo "bytes received: $got"
    [ "${got:-99999999}" -lt 1000000 ]
}

# rsync -> ferry daemon
rsync_push() {
    local z=$1 name=rpush_$1
    run "$T/$name.w" "$RSYNC" -a --compress-choice="$z" "$SRC/" "$FD/up/$name.w/"
    ok_same "$T/$name.w" "$SRC" "$UPF/$name.w" || return 1
    "$RSYNC" -a "$SRC/" "$UPF/$name.d/" || return 1
    run "$T/$name.d" "$RSYNC" -a --compress-choice="$z" --stats "$NEW/" "$FD/up/$name.d/"
    ok_same "$T/$name.d" "$NEW" "$UPF/$name.d" || return 1
    local matched
    matched=$(stat_bytes "$T/$name.d" "Matched data")
    echo "matched data: $matched"
    [ "${matched:-0}" -gt 5000000 ]
}

for z in zstd lz4 zlibx zlib; do
    t_check "ferry_pull_from_rsyncd_$z" ferry_pull "$z"
    t_check "ferry_push_to_rsyncd_$z" ferry_push "$z"
    t_check "rsync_pull_from_ferryd_$z" rsync_pull "$z"
    t_check "rsync_push_to_ferryd_$z" rsync_push "$z"
done

# -------------------------------------------------------------- negotiation

# ferry -z against rsync: the same bytes as a forced zstd (plus the lists).
neg_ferry_client() {
    local a b c
    run "$T/neg_z" "$FERRY" -a -z --stats "$RD/txt/" "$T/neg_z/"
    ok_same "$T/neg_z" "$TXT" "$T/neg_z" || return 1
    run "$T/neg_zstd" "$FERRY" -a --zc=zstd --stats "$RD/txt/" "$T/neg_zstd/"
    run "$T/neg_lz4" "$FERRY" -a --zc=lz4 --stats "$RD/txt/" "$T/neg_lz4/"
    ok "$T/neg_zstd" && ok "$T/neg_lz4" || return 1
    a=$(stat_bytes "$T/neg_z" "Total bytes received")
    b=$(stat_bytes "$T/neg_zstd" "Total bytes received")
    c=$(stat_bytes "$T/neg_lz4" "Total bytes received")
    echo "received: -z $a, zstd $b, lz4 $c"
    [ $((a - b)) -lt 100 ] && [ $((b - a)) -lt 100 ] && [ $((c - a)) -gt 1000 ]
}
t_check negotiate_ferry_client_default neg_ferry_client

# real rsync -z against ferry: both directions pick zstd
neg_rsync_client() {
    run "$T/neg_r_pull" "$RSYNC" -a -z --debug=NSTR "$FD/txt/" "$T/neg_r_pull/"
    ok_same "$T/neg_r_pull" "$TXT" "$T/neg_r_pull" || return 1
    grep -q "Client negotiated compress: zstd" "$T/neg_r_pull.out" || { show_run "$T/neg_r_pull"; return 1; }
    run "$T/neg_r_push" "$RSYNC" -a -z --debug=NSTR "$TXT/" "$FD/up/neg_r_push/"
    ok_same "$T/neg_r_push" "$TXT" "$UPF/neg_r_push" || return 1
    grep -q "Client negotiated compress: zstd" "$T/neg_r_push.out" || { show_run "$T/neg_r_push"; return 1; }
}
t_check negotiate_rsync_client_default neg_rsync_client

# A client list without zstd and lz4: ferry's server takes its best of it.
neg_rsync_client_list() {
    run "$T/neg_r_list" env RSYNC_COMPRESS_LIST="zlibx zlib" "$RSYNC" -a -z --debug=NSTR \
        "$FD/txt/" "$T/neg_r_list/"
    ok_same "$T/neg_r_list" "$TXT" "$T/neg_r_list" || return 1
    grep -q "Client negotiated compress: zlibx" "$T/neg_r_list.out" || { show_run "$T/neg_r_list"; return 1; }
}
t_check negotiate_rsync_client_restricted neg_rsync_client_list

# A daemon that only offers lz4: ferry -z must end up with lz4 too.
neg_restricted_daemon() {
    local saved_pid=$RSYNCD_PID saved_port=$RSYNCD_PORT a b rc=0
    export RSYNC_COMPRESS_LIST=lz4
    t_rsyncd_start rd40lz4 "$MODULES" || rc=1
    unset RSYNC_COMPRESS_LIST
    [ "$rc" = 0 ] || return 1
    local url=rsync://127.0.0.1:$RSYNCD_PORT
    run "$T/neg_lz4d" "$FERRY" -a -z --stats "$url/txt/" "$T/neg_lz4d/"
    ok_same "$T/neg_lz4d" "$TXT" "$T/neg_lz4d" || rc=1
    t_rsyncd_stop
    RSYNCD_PID=$saved_pid RSYNCD_PORT=$saved_port
    [ "$rc" = 0 ] || return 1
    a=$(stat_bytes "$T/neg_lz4d" "Total bytes received")
    b=$(stat_bytes "$T/neg_lz4" "Total bytes received")
    echo "received: -z against an lz4-only daemon $a, forced lz4 $b"
    [ $((a - b)) -lt 100 ] && [ $((b - a)) -lt 100 ]
}
t_check negotiate_daemon_lz4_only neg_restricted_daemon

# Protocol 29 has no negotiation: -z means zlib. Protocol 30 negotiates
# (real rsync 3.5.0 picks zstd there too).
old_protocols() {
    run "$T/p29_pull" "$FERRY" -a -z --protocol=29 "$RD/new/" "$T/p29_pull/"
    ok_same "$T/p29_pull" "$NEW" "$T/p29_pull" || return 1
    "$RSYNC" -a "$SRC/" "$UPR/p29_push/" || return 1
    run "$T/p29_push" "$FERRY" -a -z --protocol=29 "$NEW/" "$RD/up/p29_push/"
    ok_same "$T/p29_push" "$NEW" "$UPR/p29_push" || return 1
    "$RSYNC" -a "$SRC/" "$T/p29_rpull/" || return 1
    run "$T/p29_rpull" "$RSYNC" -a -z --protocol=29 --debug=NSTR "$FD/new/" "$T/p29_rpull/"
    ok_same "$T/p29_rpull" "$NEW" "$T/p29_rpull" || return 1
    grep -q "Client compress: zlib" "$T/p29_rpull.out" || { show_run "$T/p29_rpull"; return 1; }
    "$RSYNC" -a "$SRC/" "$T/p30_rpull/" || return 1
    run "$T/p30_rpull" "$RSYNC" -a -z --protocol=30 --debug=NSTR "$FD/new/" "$T/p30_rpull/"
    ok_same "$T/p30_rpull" "$NEW" "$T/p30_rpull" || return 1
    grep -q "Client negotiated compress: zstd" "$T/p30_rpull.out" || { show_run "$T/p30_rpull"; return 1; }
    run "$T/p30_pull" "$FERRY" -a -z --protocol=30 "$RD/new/" "$T/p30_pull/"
    ok_same "$T/p30_pull" "$NEW" "$T/p30_pull"
}
t_check z_protocol_29_and_30 old_protocols

# Forced choices and levels (sent as --old-compress, --new-compress,
# --compress-choice, --compress-level), as deltas in all four directions.
forced() {
    local i=0 args
    for args in "-zz" "--old-compress" "--new-compress" "-z --zl=1" "-z --zl=9" "-z --zl=0" \
        "--zc=zstd --zl=19" "--zc=zstd --zl=-20" "--zc=lz4 --zl=5" "--zc=none"; do
        i=$((i + 1))
        echo "== $args"
        "$RSYNC" -a "$TXT/" "$T/forced_pull$i/" || return 1
        # shellcheck disable=SC2086
        run "$T/forced_pull$i" "$FERRY" -a $args "$RD/txt2/" "$T/forced_pull$i/"
        ok_same "$T/forced_pull$i" "$TXT2" "$T/forced_pull$i" || return 1
        "$RSYNC" -a "$TXT/" "$UPR/forced$i/" || return 1
        # shellcheck disable=SC2086
        run "$T/forced_push$i" "$FERRY" -a $args "$TXT2/" "$RD/up/forced$i/"
        ok_same "$T/forced_push$i" "$TXT2" "$UPR/forced$i" || return 1
        "$RSYNC" -a "$TXT/" "$T/forced_rpull$i/" || return 1
        # shellcheck disable=SC2086
        run "$T/forced_rpull$i" "$RSYNC" -a $args "$FD/txt2/" "$T/forced_rpull$i/"
        ok_same "$T/forced_rpull$i" "$TXT2" "$T/forced_rpull$i" || return 1
        "$RSYNC" -a "$TXT/" "$UPF/forced$i/" || return 1
        # shellcheck disable=SC2086
        run "$T/forced_rpush$i" "$RSYNC" -a $args "$TXT2/" "$FD/up/forced$i/"
        ok_same "$T/forced_rpush$i" "$TXT2" "$UPF/forced$i" || return 1
    done
}
t_check forced_choices_and_levels forced

# Blocks over 64 KiB with zlib: for protocol 30 both ends feed the history
# from the block's start for every 0xFFFF-byte piece (the kept bug), from
# 31 on piece after piece. Literal data after the block that repeats its
# start or its end is only rebuilt right if ferry does the same as rsync.
big_blocks() {
    local p dir
    mkdir -p "$T/bigsrc" "$T/bigbasis" || return 1
    "$PYTHON" -c 'import sys
blk = "".join("alpha %05d\n" % i for i in range(4000)) + "".join("beta  %05d\n" % i for i in range(1500))
head = "".join("alpha %05d\n" % i for i in range(38))
open(sys.argv[1] + "/big.txt", "w").write(blk + "z" * 1000)
open(sys.argv[2] + "/big.txt", "w").write(blk + head + blk[-3000:] + "end\n")' \
        "$T/bigbasis" "$T/bigsrc" || return 1
    for p in 30 31; do
        dir=big_p$p
        "$RSYNC" -a "$T/bigbasis/" "$UPR/$dir/" || return 1
        run "$T/$dir" "$FERRY" -a -I -B 66000 --protocol=$p --old-compress --stats \
            "$T/bigsrc/" "$RD/up/$dir/"
        ok_same "$T/$dir" "$T/bigsrc" "$UPR/$dir" || return 1
        grep -q "^Matched data: 66,000 bytes" "$T/$dir.out" || { show_run "$T/$dir"; return 1; }
        # and ferry receiving from real rsync
        "$RSYNC" -a "$T/bigbasis/" "$T/${dir}_pull/" || return 1
        run "$T/${dir}_pull" "$FERRY" -a -I -B 66000 --protocol=$p --old-compress --stats \
            "$RD/up/$dir/" "$T/${dir}_pull/"
        # (the module now holds bigsrc; its basis here is the old file)
        ok_same "$T/${dir}_pull" "$T/bigsrc" "$T/${dir}_pull" || return 1
        grep -q "^Matched data: 66,000 bytes" "$T/${dir}_pull.out" || { show_run "$T/${dir}_pull"; return 1; }
    done
}
t_check zlib_blocks_over_64k big_blocks

# Local copies (both ends ferry) with the delta algorithm.
local_copy() {
    local z
    for z in -z -zz --zc=lz4 --zc=zstd; do
        "$RSYNC" -a "$TXT/" "$T/local$z/" || return 1
        run "$T/local$z" "$FERRY" -a --no-W "$z" "$TXT2/" "$T/local$z/"
        echo "local $z"
        ok_same "$T/local$z" "$TXT2" "$T/local$z" || return 1
    done
}
t_check local_copy_compressed local_copy

unknown_name() {
    run "$T/bogus" "$FERRY" -a --zc=bogus "$TXT/" "$T/bogus_dst/"
    [ "$(cat "$T/bogus.rc")" = 4 ] && grep -q "unknown compress name: bogus" "$T/bogus.err"
}
t_check unknown_compress_name_exit_4 unknown_name

# -------------------------------------- incompressible and compressible data

# ferry_sent Z FILE -- push FILE alone with --zc=Z; prints the bytes sent.
ferry_sent() {
    local z=$1 f=$2 name
    name=one_$1_$(basename "$f")
    shift 2
    run "$T/$name" "$FERRY" -a --compress-choice="$z" --stats "$@" "$f" "$RD/up/$name/"
    ok "$T/$name" && cmp "$f" "$UPR/$name/$(basename "$f")" >&2 &&
        stat_bytes "$T/$name" "Total bytes sent"
}

incompressible() {
    local z=$1 size sent
    size=$(stat -c %s "$SRC/sub/huge.bin")
    sent=$(ferry_sent "$z" "$SRC/sub/huge.bin") || return 1
    echo "$z: random $size bytes, sent $sent"
    [ "$sent" -lt $((size + size / 100 + 4096)) ] || return 1
    # with an explicit level there is no probing; still within 2%
    sent=$(ferry_sent "$z" "$SRC/sub/huge.bin" --compress-level=1) || return 1
    echo "$z --zl=1: sent $sent"
    [ "$sent" -lt $((size + size / 50 + 4096)) ] || return 1
    # real rsync receiving from a ferry daemon
    run "$T/rand_rpull_$z" "$RSYNC" -a --stats --compress-choice="$z" "$FD/src/sub/huge.bin" \
        "$T/rand_rpull_$z/"
    ok "$T/rand_rpull_$z" && cmp "$SRC/sub/huge.bin" "$T/rand_rpull_$z/huge.bin" || return 1
    sent=$(stat_bytes "$T/rand_rpull_$z" "Total bytes received")
    echo "$z rsync pull: received $sent"
    [ "$sent" -lt $((size + size / 100 + 4096)) ]
}

compressible() {
    local z=$1 size sent
    size=$(stat -c %s "$SRC/comp/yes.txt")
    sent=$(ferry_sent "$z" "$SRC/comp/yes.txt") || return 1
    echo "$z: $size bytes of text, sent $sent"
    [ "$sent" -lt $((size / 20)) ] || return 1
    # random then text in one file: the probe only looks at the start
    sent=$(ferry_sent "$z" "$SRC/comp/mixed.dat") || return 1
    echo "$z: mixed.dat sent $sent"
}

for z in zstd lz4 zlibx zlib; do
    t_check "incompressible_$z" incompressible "$z"
    t_check "compressible_$z" compressible "$z"
done

# ------------------------------------------------- a delta reads its source once

# Only zlib's stream takes matched blocks into its history (rsync's
# see_deflate_token); under zstd, lz4 and zlibx the bytes of a matched block
# are needed for nothing, and the sender must not read them again after its
# read-ahead hasher summed them (it did: every changed PGDATA segment was
# read twice under -z). ferry pushes a 24 MiB file with 1% changed to the
# real rsync daemon; its own rchar (/proc of the shell that reaped it)
# must stay near one read of the file, and the copy must equal the source.
read_once() {
    local z=$1 name=readonce_$1 size rchar
    mkdir -p "$T/$name.src" && head -c 25165824 /dev/urandom >"$T/$name.src/big.bin" &&
        "$RSYNC" -a "$T/$name.src/" "$UPR/$name/" && mutate "$T/$name.src/big.bin" 11 ||
        return 1
    size=$(stat -c %s "$T/$name.src/big.bin")
    rchar=$(sh -c '"$@" >"$0.out" 2>"$0.err" </dev/null; echo $? >"$0.rc"
                   sed -n "s/^rchar: //p" /proc/$$/io' "$T/$name" "${CLEAN_ENV[@]}" \
        "$FERRY" -a --no-whole-file --compress-choice="$z" --stats "$T/$name.src/" \
        "$RD/up/$name/")
    ok_same "$T/$name" "$T/$name.src" "$UPR/$name" || return 1
    echo "$z: $size bytes, matched $(stat_bytes "$T/$name" "Matched data"), ferry read $rchar"
    [ "$(stat_bytes "$T/$name" "Matched data")" -gt $((size / 2)) ] || return 1
    [ "$z" = zlib ] || [ "$rchar" -lt $((size + size / 4)) ]
}
for z in zstd lz4 zlibx zlib; do
    t_check "delta_reads_source_once_$z" read_once "$z"
done

# ---------------------------------------------------------- skipped suffixes

# The default list (rsync's media suffixes): a compressible file named .gz
# goes out with no compression effort, the same file named .txt compressed.
default_skip_list() {
    local z=$1 gz txt
    mkdir -p "$T/skip_$z" && cp "$SRC/comp/yes.txt" "$T/skip_$z/data.gz" &&
        cp "$SRC/comp/yes.txt" "$T/skip_$z/data.txt" || return 1
    gz=$(ferry_sent "$z" "$T/skip_$z/data.gz") || return 1
    txt=$(ferry_sent "$z" "$T/skip_$z/data.txt") || return 1
    echo "$z: data.gz sent $gz, data.txt sent $txt"
    [ "$gz" -gt 1000000 ] && [ "$txt" -lt 100000 ]
}
for z in zstd lz4 zlib; do
    t_check "default_skip_list_$z" default_skip_list "$z"
done

skip_compress_option() {
    run "$T/skip_push" "$FERRY" -a -z --skip-compress=bin/txt "$NEW/" "$RD/up/skip_push/"
    ok_same "$T/skip_push" "$NEW" "$UPR/skip_push" || return 1
    run "$T/skip_pull" "$FERRY" -a -z --skip-compress=bin "$RD/new/" "$T/skip_pull/"
    ok_same "$T/skip_pull" "$NEW" "$T/skip_pull" || return 1
    # real rsync sends --skip-compress to a ferry sender
    run "$T/skip_rpull" "$RSYNC" -a -z --skip-compress=bin "$FD/new/" "$T/skip_rpull/"
    ok_same "$T/skip_rpull" "$NEW" "$T/skip_rpull" || return 1
    run "$T/skip_rpush" "$RSYNC" -a --zc=zlib --skip-compress=dat "$NEW/" "$FD/up/skip_rpush/"
    ok_same "$T/skip_rpush" "$NEW" "$UPF/skip_rpush"
}
t_check skip_compress_option skip_compress_option

# Under ASan/UBSan: nothing reported by ferry, client or daemon children.
no_reports() {
    local f bad=0
    for f in "$T/fd40.out" "$T"/*.err; do
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
