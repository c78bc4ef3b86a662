#!/bin/bash
# ferry's adaptive compression (proto/delta/zadapt.h) against real rsync 3.5.0:
# real rsync must decode every stream ferry's sender produces while it
# changes levels (incompressible data stored, compressible data compressed
# again, the level stepped down when the compressor is the bottleneck) --
# for zstd, lz4, zlibx and zlib, rsync pulling from a ferry daemon and
# ferry pushing to an rsync daemon, whole-file and delta, on random,
# compressible and mixed files; results byte-identical. On a --bwlimit=2m
# link ferry sends no more than rsync -z (+2%), nor at a rate faster than
# the machine compresses (--bwlimit=50m: +25%), and with zstd, where the
# data repeats far back, much less (wide mode); an explicit --zl keeps a
# fixed level (the bytes match rsync's at that level); --compress-threads
# works, and a daemon caps what a client asks for at 8 zstd workers.
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

SRC=$T/src   # random, compressible and mixed files
FAR=$T/far   # a text file and its copy: a repeat 10 MiB back
NEW=$T/new   # the same, about 1% changed
BW=$T/bw     # a smaller set for the rate-limited runs
BWF=$T/bwf   # 64 MiB of database-like pages for a fast rate limit
UPR=$T/up_rsyncd
mkdir -p "$UPR"

CLEAN_ENV=(env -u RSYNC_PASSWORD -u USER -u LOGNAME -u RSYNC_PORT -u RSYNC_COMPRESS_LIST)

ok() {
    [ "$(cat "$1.rc")" = 0 ] && return 0
    echo "exit $(cat "$1.rc"), expected 0"
    head -n 20 "$1.out" "$1.err"
    return 1
}

same() {
    t_compare "$1" "$2" --no-hardlinks --no-dir-times
}

# stat_bytes OUT LABEL -- a number from a --stats line.
stat_bytes() {
    sed -n "s/^$2: \([0-9,]*\).*/\1/p" "$1.out" | tr -d , | head -n 1
}

# The files: text.txt (words, compresses about 3:1), noise.bin (random),
# mixed.dat (text and random in 1 MiB-scale stretches), pages.dat (8 KiB
# pages, mostly zero-filled, as in a database), and small files.
make_trees() {
    "$PYTHON" - "$SRC" "$NEW" "$BW" "$FAR" <<'EOF' || return 1
import os, random, sys
src, new, bw, far = sys.argv[1:5]
rng = random.Random(95)
words = [''.join(rng.choice('abcdefghijklmnopqrstuvwxyz') for _ in range(rng.randint(2, 9)))
         for _ in range(3000)]
def text(n):
    out, size = [], 0
    while size < n:
        line = ' '.join(rng.choice(words) for _ in range(rng.randint(4, 14))) + '\n'
        out.append(line)
        size += len(line)
    return ''.join(out).encode()[:n]
def noise(n):
    return rng.randbytes(n)
def pages(n):
    out = bytearray()
    while len(out) < n:
        p = bytearray(8192)
        body = text(rng.randint(500, 3000))
        p[8192 - len(body):] = body
        p[:24] = rng.randbytes(24)
        out += p
    return bytes(out[:n])
M = 1 << 20
files = {
    'text.txt': text(8 * M),
    'noise.bin': noise(3 * M),
    'mixed.dat': text(3 * M // 2) + noise(M) + text(2 * M) + noise(M) + text(3 * M // 2),
    'pages.dat': pages(4 * M),
}
for i in range(40):
    files['small/%02d.txt' % i] = text(rng.randint(100, 30000))
for d in (src, new):
    os.makedirs(d + '/small', exist_ok=True)
for name, data in files.items():
    open(src + '/' + name, 'wb').write(data)
    b = bytearray(data)
    for _ in range(5):
        if len(b) > 1000:
            o = rng.randrange(len(b) - 200)
            b[o:o + max(1, len(b) // 500)] = rng.randbytes(max(1, len(b) // 500))
    open(new + '/' + name, 'wb').write(b)
os.makedirs(bw, exist_ok=True)
open(bw + '/text.txt', 'wb').write(files['text.txt'][:4 * M])
open(bw + '/noise.bin', 'wb').write(files['noise.bin'][:M])
open(bw + '/mixed.dat', 'wb').write(text(M) + noise(M) + text(M))
os.makedirs(far, exist_ok=True)
far_text = text(10 * M)
for name in ('a.txt', 'b.txt'):
    open(far + '/' + name, 'wb').write(far_text)
EOF
    touch -d @1700000000 "$NEW"/* "$NEW"/small/*
    # 16 MiB of 8 KiB pages (a few lines of text at the end of each), in
    # four files rotated by a page each: quick to make, 20:1 for zstd
    "$PYTHON" - "$BWF" <<'EOF' || return 1
import os, random, sys
rng = random.Random(96)
words = [''.join(rng.choice('abcdefghijklmnopqrstuvwxyz') for _ in range(rng.randint(2, 9)))
         for _ in range(300)]
chunk = bytearray()
for _ in range(2048):
    p = bytearray(8192)
    body = b''.join((' '.join(rng.choice(words) for _ in range(8)) + '\n').encode()
                    for _ in range(rng.randint(2, 12)))
    p[8192 - len(body):] = body
    p[:24] = rng.randbytes(24)
    chunk += p
os.makedirs(sys.argv[1], exist_ok=True)
for f in range(4):
    open(os.path.join(sys.argv[1], 'pages%d.dat' % f), 'wb').write(chunk[f * 8192:] + chunk[:f * 8192])
EOF
}
t_check make_trees make_trees || t_done

MODULES="
[src]
    path = $SRC
    use chroot = no
[new]
    path = $NEW
    use chroot = no
[bw]
    path = $BW
    use chroot = no
[far]
    path = $FAR
    use chroot = no
[bwf]
    path = $BWF
    use chroot = no
"
if ! t_rsyncd_start rd95 "$MODULES
[up]
    path = $UPR
    read only = no
    use chroot = no
"; then
    t_fail rsyncd_start "real rsync daemon did not start"
    t_done
fi
RD=rsync://127.0.0.1:$RSYNCD_PORT
if ! t_ferryd_start fd95 "$MODULES"; then
    t_fail ferryd_start "ferry daemon did not start"
    t_done
fi
FD=rsync://127.0.0.1:$FERRYD_PORT

# ------------------------------- real rsync decodes ferry's adaptive streams

# rsync <- ferry daemon (ferry's sender adapts), whole-file then delta.
rsync_pull() {
    local z=$1 d=$T/rpull_$1
    run "$d.w" "$RSYNC" -a --compress-choice="$z" "$FD/src/" "$d.w/"
    ok "$d.w" && same "$SRC" "$d.w" || return 1
    "$RSYNC" -a "$SRC/" "$d.d/" || return 1
    run "$d.d" "$RSYNC" -a --no-W --compress-choice="$z" --stats "$FD/new/" "$d.d/"
    ok "$d.d" && same "$NEW" "$d.d" || return 1
    echo "$z delta: matched $(stat_bytes "$d.d" "Matched data"), received $(stat_bytes "$d.d" "Total bytes received")"
    [ "$(stat_bytes "$d.d" "Matched data")" -gt 10000000 ]
}

# ferry -> rsync daemon (ferry's sender adapts), whole-file then delta.
ferry_push() {
    local z=$1 name=fpush_$1
    run "$T/$name.w" "$FERRY" -a --compress-choice="$z" "$SRC/" "$RD/up/$name.w/"
    ok "$T/$name.w" && same "$SRC" "$UPR/$name.w" || return 1
    "$RSYNC" -a "$SRC/" "$UPR/$name.d/" || return 1
    run "$T/$name.d" "$FERRY" -a --no-W --compress-choice="$z" --stats "$NEW/" "$RD/up/$name.d/"
    ok "$T/$name.d" && same "$NEW" "$UPR/$name.d" || return 1
    echo "$z delta: matched $(stat_bytes "$T/$name.d" "Matched data"), sent $(stat_bytes "$T/$name.d" "Total bytes sent")"
    [ "$(stat_bytes "$T/$name.d" "Matched data")" -gt 10000000 ]
}

# Also under a slow link (the level stays up; incompressible stretches
# are still stored) and with the data judged per file only (-W).
ferry_push_slow() {
    local z=$1 name=fpush_slow_$1
    run "$T/$name" "$FERRY" -a --compress-choice="$z" --bwlimit=8m "$BW/" "$RD/up/$name/"
    ok "$T/$name" && same "$BW" "$UPR/$name"
}

for z in zstd lz4 zlibx zlib; do
    t_check "rsync_pull_from_ferryd_adaptive_$z" rsync_pull "$z"
    t_check "ferry_push_to_rsyncd_adaptive_$z" ferry_push "$z"
    t_check "ferry_push_to_rsyncd_slow_link_$z" ferry_push_slow "$z"
done

# ----------------------------------------- on a slow link: no more bytes

# slow_pair NAME MODULE DIR RATE -- module MODULE (holding DIR) pulled by
# real rsync from ferry's daemon and from rsync's, and DIR pushed to
# rsync's daemon by ferry and by rsync, all -z at --bwlimit=RATE; every
# result identical to DIR. Sets PULL_F/PULL_R (bytes received from ferryd,
# from rsyncd) and PUSH_F/PUSH_R (bytes sent by ferry, by rsync).
slow_pair() {
    local name=$1 mod=$2 dir=$3 rate=$4
    run "$T/${name}_fpull" "$RSYNC" -a -z --bwlimit="$rate" --stats "$FD/$mod/" "$T/${name}_fpull/"
    run "$T/${name}_rpull" "$RSYNC" -a -z --bwlimit="$rate" --stats "$RD/$mod/" "$T/${name}_rpull/"
    ok "$T/${name}_fpull" && ok "$T/${name}_rpull" && same "$dir" "$T/${name}_fpull" || return 1
    PULL_F=$(stat_bytes "$T/${name}_fpull" "Total bytes received")
    PULL_R=$(stat_bytes "$T/${name}_rpull" "Total bytes received")
    echo "pull at $rate: from ferryd $PULL_F bytes, from rsyncd $PULL_R bytes"
    run "$T/${name}_fpush" "$FERRY" -a -z --bwlimit="$rate" --stats "$dir/" "$RD/up/${name}_fpush/"
    run "$T/${name}_rpush" "$RSYNC" -a -z --bwlimit="$rate" --stats "$dir/" "$RD/up/${name}_rpush/"
    ok "$T/${name}_fpush" && ok "$T/${name}_rpush" && same "$dir" "$UPR/${name}_fpush" || return 1
    PUSH_F=$(stat_bytes "$T/${name}_fpush" "Total bytes sent")
    PUSH_R=$(stat_bytes "$T/${name}_rpush" "Total bytes sent")
    echo "push at $rate: ferry sent $PUSH_F bytes, rsync sent $PUSH_R bytes"
}

# At 2 MB/s ferry's bytes are at most 2% over rsync's, both ways.
bwlimit_bytes() {
    slow_pair bw bw "$BW" 2m || return 1
    [ "$PULL_F" -le $((PULL_R + PULL_R / 50)) ] && [ "$PUSH_F" -le $((PUSH_R + PUSH_R / 50)) ]
}
t_check bwlimit_2m_bytes_vs_rsync bwlimit_bytes

# At --bwlimit=50m (faster than rsync's compressor needs, slower than
# storing) the rate is the link: ferry compresses as rsync does and sends
# at most a quarter more, both ways. The rate's sleeps come in lumps of
# 0.1 s, between which the output seems to leave at once; taken for a fast
# link, that made ferry store: 58.8 MB of these 64 MiB where rsync sends
# about 1.5 MB.
bwlimit_fast_rate() {
    slow_pair bwf bwf "$BWF" 50m || return 1
    [ "$PULL_F" -le $((PULL_R + PULL_R / 4)) ] && [ "$PUSH_F" -le $((PUSH_R + PUSH_R / 4)) ]
}
t_check bwlimit_50m_compresses_as_rsync bwlimit_fast_rate

# ------------------------------------- on a slow link: zstd's wide window

# A file and its copy 10 MiB further on: zstd's normal window (2 MiB at
# level 3) cannot reach back that far, wide mode's can (64 MiB with
# long-distance matching; proto/delta/zadapt.h). Pushed by ferry to
# rsync's daemon at --bwlimit=4m (the rate ferry's sender keeps to is its
# link: it goes wide), real rsync decodes it (results identical) and ferry
# sends at most 3/4 of what rsync does. Pulled by rsync from ferry's
# daemon at rsync's --bwlimit=4m the result is identical too; whether the
# sender goes wide there depends on whether TCP reports the receiver's
# window, not the link, as what held it back (rsync pauses its reads), so
# the bytes are only shown.
wide_window() {
    slow_pair far far "$FAR" 4m || return 1
    [ "$PUSH_F" -le $((PUSH_R * 3 / 4)) ]
}
t_check wide_window_on_slow_link wide_window

# ------------------------------------------- --compress-level: fixed level

# At full loopback speed the adaptive rule would step down; with --zl the
# level stays put: ferry's bytes match rsync's at the same level (within
# 1%), and a higher level sends fewer bytes.
fixed_level() {
    local z lvl f r prev=""
    for z in zstd:1 zstd:19 zlib:1 zlib:9 zlibx:1 zlibx:9 lz4:1; do
        lvl=${z#*:}
        z=${z%:*}
        run "$T/zl_f_$z$lvl" "$FERRY" -a --zc="$z" --zl="$lvl" --stats "$SRC/" "$RD/up/zl_f_$z$lvl/"
        run "$T/zl_r_$z$lvl" "$RSYNC" -a --zc="$z" --zl="$lvl" --stats "$SRC/" "$RD/up/zl_r_$z$lvl/"
        ok "$T/zl_f_$z$lvl" && ok "$T/zl_r_$z$lvl" && same "$SRC" "$UPR/zl_f_$z$lvl" || return 1
        f=$(stat_bytes "$T/zl_f_$z$lvl" "Total bytes sent")
        r=$(stat_bytes "$T/zl_r_$z$lvl" "Total bytes sent")
        echo "$z --zl=$lvl: ferry $f, rsync $r"
        [ "$f" -le $((r + r / 100)) ] && [ "$f" -ge $((r - r / 100)) ] || return 1
        if [ -n "$prev" ] && [ "${prev%:*}" = "$z" ]; then
            [ "$f" -lt "${prev#*:}" ] || { echo "the higher level did not send fewer bytes"; return 1; }
        fi
        prev=$z:$f
    done
}
t_check compress_level_is_fixed fixed_level

# ------------------------------------------------ the compressor thread

# most_threads OUT CMD... -- run CMD (its output in OUT.*); print the most
# threads its process had, looked at every 50 ms until it ended.
most_threads() {
    local out=$1 most=0 n
    shift
    (umask 022 && exec "${CLEAN_ENV[@]}" "$@") >"$out.out" 2>"$out.err" </dev/null &
    local pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        n=$(awk '/^Threads:/ {print $2}' "/proc/$pid/status" 2>/dev/null)
        [ -n "$n" ] && [ "$n" -gt "$most" ] && most=$n
        sleep 0.05
    done
    wait "$pid"
    echo $? >"$out.rc"
    echo "$most"
}

# A large file with compression goes through the compressor thread of
# ferry's sender (token_pipe.c): ferry pushing to real rsync has a second
# thread (and rsync decodes the stream, at every algorithm); without
# compression, and for small files only, it stays at one. The rate limit
# keeps each run long enough to be seen.
compressor_thread() {
    local z n
    for z in zstd lz4 zlibx zlib; do
        n=$(most_threads "$T/zthr_$z" "$FERRY" -a --zc="$z" --bwlimit=1m "$BW/text.txt" \
            "$RD/up/zthr_$z/")
        echo "$z: $n threads"
        ok "$T/zthr_$z" && cmp "$BW/text.txt" "$UPR/zthr_$z/text.txt" && [ "$n" = 2 ] || return 1
    done
    n=$(most_threads "$T/zthr_none" "$FERRY" -a --bwlimit=2m "$BW/text.txt" "$RD/up/zthr_none/")
    echo "no compression: $n threads"
    ok "$T/zthr_none" && cmp "$BW/text.txt" "$UPR/zthr_none/text.txt" && [ "$n" = 1 ] || return 1
    n=$(most_threads "$T/zthr_small" "$FERRY" -a -z --bwlimit=100 "$SRC/small/" "$RD/up/zthr_small/")
    echo "small files only: $n threads"
    ok "$T/zthr_small" && same "$SRC/small" "$UPR/zthr_small" && [ "$n" = 1 ]
}
t_check compressor_thread_only_for_large_compressed_files compressor_thread

# --append and --append-verify send the rest of a file as literal data
# through the compressor thread; real rsync puts it after what it has.
append_through_thread() {
    local z v
    for z in zstd zlib; do
        for v in append append-verify; do
            mkdir -p "$UPR/app_${z}_$v" &&
                head -c 3000000 "$SRC/mixed.dat" >"$UPR/app_${z}_$v/mixed.dat" || return 1
            run "$T/app_${z}_$v" "$FERRY" -a --"$v" --zc="$z" --stats "$SRC/mixed.dat" \
                "$RD/up/app_${z}_$v/"
            ok "$T/app_${z}_$v" && cmp "$SRC/mixed.dat" "$UPR/app_${z}_$v/mixed.dat" || return 1
        done
    done
}
t_check append_through_compressor_thread append_through_thread

# ---------------------------------------------------- --compress-threads

threads() {
    run "$T/zt_push" "$FERRY" -a --zc=zstd --zt=2 --stats "$SRC/" "$RD/up/zt_push/"
    ok "$T/zt_push" && same "$SRC" "$UPR/zt_push" || return 1
    # zstd workers with the adaptive rule's level changes, local copy
    run "$T/zt_local" "$FERRY" -a -z --compress-threads=3 "$SRC/" "$T/zt_local/"
    ok "$T/zt_local" && same "$SRC" "$T/zt_local" || return 1
    # other algorithms ignore it; a negative count means none (as rsync)
    run "$T/zt_lz4" "$FERRY" -a --zc=lz4 --zt=-4 "$SRC/" "$RD/up/zt_lz4/"
    ok "$T/zt_lz4" && same "$SRC" "$UPR/zt_lz4" || return 1
    run "$T/zt_bad" "$FERRY" -a -z --zt=many "$SRC/" "$T/zt_bad/"
    [ "$(cat "$T/zt_bad.rc")" = 1 ] && grep -q "invalid numeric value" "$T/zt_bad.err"
}
t_check compress_threads threads

# As rsync, the option is not passed on to the server (pull or push): the
# server's command lines are rsync's.
threads_not_forwarded() {
    local rsh=$T/zt_rsh tool dir
    printf '#!/bin/sh\necho "remote: $*" >&2\nexit 1\n' >"$rsh" && chmod 0755 "$rsh" || return 1
    for tool in "$FERRY" "$RSYNC"; do
        for dir in pull push; do
            if [ $dir = pull ]; then
                run "$T/zt_$dir" "$tool" -a -z --zt=3 -e "$rsh" host:src/ "$T/zt_dst/"
            else
                run "$T/zt_$dir" "$tool" -a -z --zt=3 -e "$rsh" "$SRC/" host:dst/
            fi
            grep '^remote:' "$T/zt_$dir.err" >>"$T/zt_args.$(basename "$tool")"
        done
    done
    cat "$T/zt_args.$(basename "$FERRY")"
    grep -q -- '--server' "$T/zt_args.$(basename "$FERRY")" &&
        ! grep -q -- 'compress-threads\|--zt' "$T/zt_args.$(basename "$FERRY")" &&
        cmp "$T/zt_args.$(basename "$FERRY")" "$T/zt_args.$(basename "$RSYNC")"
}
t_check compress_threads_not_passed_to_server threads_not_forwarded

# A client asks a ferry daemon's sender for zstd workers (rsync's -M
# passes the option on): 2 are granted, 64 are capped at 8. Prints the
# most threads seen in a daemon child during a slow pull.
threads_seen() {
    local child most=0 n i
    "${CLEAN_ENV[@]}" "$RSYNC" -a --zc=zstd -M--compress-threads="$1" --bwlimit=1m \
        "$FD/src/text.txt" "$T/zt_cap$1/" >"$T/zt_cap$1.out" 2>&1 &
    local pid=$!
    for i in $(seq 1 25); do
        sleep 0.2
        for child in $(pgrep -P "$FERRYD_PID"); do
            n=$(awk '/^Threads:/ {print $2}' "/proc/$child/status" 2>/dev/null)
            [ -n "$n" ] && [ "$n" -gt "$most" ] && most=$n
        done
    done
    wait "$pid" && cmp "$SRC/text.txt" "$T/zt_cap$1/text.txt" >&2 && echo "$most"
}

daemon_thread_cap() {
    local two many
    two=$(threads_seen 2) && many=$(threads_seen 64) || return 1
    echo "most threads in a daemon child: $two with 2 workers asked, $many with 64"
    [ "$two" -ge 3 ] && [ $((many - two)) = 6 ]
}
t_check daemon_caps_compress_threads daemon_thread_cap

t_done
