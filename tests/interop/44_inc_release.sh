#!/bin/bash
# Incremental recursion, ferry receiving: the parts the sender has
# finished are released (flist_release_parts), so the receiver's memory
# follows the parts in flight, not the whole tree. Checked against a real
# rsync daemon: the copy is right, -i output matches rsync's, --delete
# still finds every listed name (directories of released parts included),
# and the peak RSS grows by far less than the list would take if kept,
# for a copy and for a --list-only listing.
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON" "$FERRY"
t_setup

SRC=$T/src
NFILES=40000

# 400 directories of 100 one-line files, two levels deep, plus a
# one-file tree to measure the fixed cost against.
make_src() {
    "$PYTHON" - "$SRC" "$NFILES" <<'EOF' && mkdir -p "$T/one" && echo one >"$T/one/f"
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(root, "a%02d" % (i // 2000), "b%03d" % (i // 100))
    if i % 100 == 0:
        os.makedirs(d)
    with open(os.path.join(d, "f%03d" % (i % 100)), "w") as f:
        f.write("%d\n" % i)
# Directories get a time long past: one made in the same second as the
# copy's own directory would differ only in nanoseconds, which neither
# rsync nor ferry compares by default.
for d, _, _ in os.walk(root, topdown=False):
    os.utime(d, ns=(1600000000123456789, 1600000000123456789))
EOF
}
t_check make_src make_src || t_done

if ! t_rsyncd_start rdrel "
[src]
    path = $SRC
    read only = yes
[one]
    path = $T/one
    read only = yes
"; then
    t_fail rsyncd_start "rsync daemon did not start"
    t_done
fi
URL=rsync://127.0.0.1:$RSYNCD_PORT

# peak_rss OUT CMD... -- run CMD, its output to OUT; print its peak RSS
# (KiB), -1 if it failed. Through bench/rusage_run.c: a small parent,
# whose own size the child would otherwise inherit as its high mark.
cc -O2 -o "$T/rusage_run" bench/rusage_run.c || t_fail build_rusage_run "cc failed"
peak_rss() {
    local out=$1 st _u _s rss
    shift
    "$T/rusage_run" "$T/rusage" "$@" >"$out" 2>&1
    read -r st _u _s rss <"$T/rusage" || return 1
    if [ "$st" = 0 ]; then echo "$rss"; else echo -1; fi
}

FULL_RSS=$(peak_rss "$T/full.out" "$FERRY" -a "$URL/src/" "$T/full/")
ONE_RSS=$(peak_rss "$T/one.out" "$FERRY" -a "$URL/one/" "$T/onecopy/")
t_check pull_full t_compare "$SRC" "$T/full" --nsec

# Kept whole, 40,000 entries take over 5 MiB (an entry, its index slot
# and its name); released as they finish, the parts in flight (rsync's
# look-ahead is 10,000 files) and the directories take under 2 MiB.
# Sanitizer builds keep freed memory in quarantine: not measured there.
check_rss() {
    if grep -q __asan_init "$FERRY"; then
        echo "sanitizer build: peak RSS not meaningful"
        return 0
    fi
    echo "one file: $ONE_RSS KiB; $NFILES files: $FULL_RSS KiB"
    [ "$ONE_RSS" -gt 0 ] && [ "$FULL_RSS" -gt 0 ] &&
        [ $((FULL_RSS - ONE_RSS)) -lt 3072 ]
}
t_check pull_memory_follows_parts check_rss

# --list-only receives in parts too, listed as the generator reaches
# them (rsync lists in recv_generator), and releases them: the listing
# is rsync's, and its peak grows by far less than the whole list's
# (--no-inc-recursive keeps it all: about 2 MiB for 40,000 entries).
LIST_RSS=$(peak_rss "$T/list.out" "$FERRY" -r --list-only "$URL/src/")
WHOLE_RSS=$(peak_rss "$T/whole.out" "$FERRY" -r --list-only --no-inc-recursive "$URL/src/")
list_like_rsync() {
    "$RSYNC" -r --list-only "$URL/src/" >"$T/list.rsync" 2>&1 &&
        diff "$T/list.rsync" "$T/list.out" && diff "$T/list.rsync" "$T/whole.out" &&
        [ "$(wc -l <"$T/list.out")" -gt "$NFILES" ]
}
t_check list_only_matches_rsync list_like_rsync
check_list_rss() {
    if grep -q __asan_init "$FERRY"; then
        echo "sanitizer build: peak RSS not meaningful"
        return 0
    fi
    echo "one file pulled: $ONE_RSS KiB; $NFILES listed: $LIST_RSS KiB, whole: $WHOLE_RSS KiB"
    [ "$ONE_RSS" -gt 0 ] && [ "$LIST_RSS" -gt 0 ] && [ "$WHOLE_RSS" -gt 0 ] &&
        [ $((LIST_RSS - ONE_RSS)) -lt 1024 ] && [ $((WHOLE_RSS - LIST_RSS)) -gt 1024 ]
}
t_check list_only_memory_follows_parts check_list_rss

# A re-sync with changes spread over the tree: --delete must still see
# every listed name, -i must say what rsync says.
change_dest() {
    local d=$1
    rm -rf "$d/a03/b061" && rm -f "$d/a07/b150/f007" &&
        echo junk >"$d/a05/b110/zz_extra" && mkdir -p "$d/a19/b399/junkdir" &&
        echo junk >"$d/a19/b399/junkdir/x" && echo changed >"$d/a11/b230/f050"
}
resync_pair() {
    rm -rf "$T/rf" "$T/rr" && cp -a "$T/full" "$T/rf" && cp -a "$T/full" "$T/rr" &&
        change_dest "$T/rf" && change_dest "$T/rr" || return 1
    "$FERRY" -ai --delete "$URL/src/" "$T/rf/" >"$T/rf.out" 2>&1 || return 1
    "$RSYNC" -ai --delete "$URL/src/" "$T/rr/" >"$T/rr.out" 2>&1 || return 1
    t_compare "$SRC" "$T/rf" --nsec || return 1
    diff <(sort "$T/rf.out") <(sort "$T/rr.out")
}
t_check resync_delete_matches_rsync resync_pair

# Options that keep every part (hard links, delayed updates): still right.
keep_all() {
    rm -rf "$T/k" && cp -a "$T/full" "$T/k" && change_dest "$T/k" &&
        "$FERRY" -aH --delay-updates --delete "$URL/src/" "$T/k/" >"$T/k.out" 2>&1 &&
        t_compare "$SRC" "$T/k" --nsec
}
t_check keep_all_parts_options keep_all

t_done
