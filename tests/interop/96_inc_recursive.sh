#!/bin/bash
# Incremental recursion against REAL rsync in both roles. ferry as sender:
# real rsync pulling from a ferry daemon and over a remote shell (rsync -e
# RSH --rsync-path=ferry), and ferry pushing to a real rsync daemon. ferry
# as receiver: ferry pulling from a real rsync daemon, real rsync pushing
# to a ferry daemon, and local copies (both halves ferry). Every case is
# run with real rsync in ferry's role too, and must give the same tree,
# the same -v/-i output and the same exit code.
# The tree has a directory of 10,500 files (more than rsync's 10,000-file
# look-ahead), a 40-level chain and 120 small directories, so
# the list parts are sent interleaved with file data.
# Run against real rsync (FERRY=/usr/bin/rsync) every check must pass.
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON" "$FERRY"
t_setup

SRC=$T/src

make_src() {
    t_mktree "$SRC" || return 1
    "$PYTHON" - "$SRC" <<'EOF'
import os, sys
root = sys.argv[1]
wide = os.path.join(root, "wide")
os.makedirs(wide)
for i in range(10500):
    with open(os.path.join(wide, "w%05d" % i), "w") as f:
        f.write("%d\n" % i)
for d in range(120):
    p = os.path.join(root, "tree", "t%d" % (d % 7), "d%03d" % d)
    os.makedirs(p)
    for j in range(5):
        with open(os.path.join(p, "f%d" % j), "w") as f:
            f.write("%d %d\n" % (d, j))
p = root
for level in range(40):
    p = os.path.join(p, "n%d" % level)
    os.makedirs(p)
    with open(os.path.join(p, "leaf"), "w") as f:
        f.write("%d\n" % level)
os.makedirs(os.path.join(root, "tree", "empty"))
EOF
    touch -d @1600000000 "$SRC" "$SRC"/wide "$SRC"/tree "$SRC"/tree/* "$SRC"/tree/*/*
}
t_check make_src make_src || t_done

if ! t_ferryd_start fd96 "
[src]
    path = $SRC
    read only = yes
[dst]
    path = $T/fpush
    read only = no
"; then
    t_fail ferryd_start "ferry daemon did not start"
    t_done
fi
if ! t_rsyncd_start rd96 "
[src]
    path = $SRC
    read only = yes
[dst]
    path = $T/push
    read only = no
"; then
    t_fail rsyncd_start "real rsync daemon did not start"
    t_done
fi
mkdir -p "$T/push" "$T/fpush"
FURL=rsync://127.0.0.1:$FERRYD_PORT/src
RURL=rsync://127.0.0.1:$RSYNCD_PORT/src

# run OUT CMD... -- OUT.out, OUT.err, OUT.rc get CMD's stdout, stderr, exit.
run() {
    local out=$1
    shift
    (umask 022 && exec "$@") >"$out.out" 2>"$out.err" </dev/null
    echo $? >"$out.rc"
}

# The -v/-i lines that do not depend on timing or byte counts.
stable_out() {
    grep -v -e '^sent .* bytes' -e '^total size is' -e '^$' -e '^created directory' \
        -e '^Total bytes' -e '^File list' -e '^Literal data' -e '^Matched data' "$1"
}

# same_run A B -- same exit code and stable output.
same_run() {
    local a=$1 b=$2
    if [ "$(cat "$a.rc")" != "$(cat "$b.rc")" ]; then
        echo "exit $(cat "$a.rc") vs $(cat "$b.rc")"
        head -n 5 "$a.err" "$b.err"
        return 1
    fi
    diff <(stable_out "$a.out") <(stable_out "$b.out") | head -n 20
    [ "${PIPESTATUS[0]}" = 0 ]
}

# pull_both NAME URLPATH SEED ARGS... -- real rsync pulls URLPATH from the
# ferry daemon into $T/NAME.f and from the rsync daemon into $T/NAME.r
# (both starting as copies of SEED, or empty).
pull_both() {
    local name=$1 path=$2 seed=$3
    shift 3
    rm -rf "$T/$name.f" "$T/$name.r"
    if [ -n "$seed" ]; then
        cp -a "$seed" "$T/$name.f" && cp -a "$seed" "$T/$name.r" || return 1
    fi
    run "$T/$name.fo" "$RSYNC" "$@" "$FURL/$path" "$T/$name.f/"
    run "$T/$name.ro" "$RSYNC" "$@" "$RURL/$path" "$T/$name.r/"
}

check_pull() {
    local name=$1
    same_run "$T/$name.fo" "$T/$name.ro" || return 1
    # the destination directory itself is not part of a transfer without
    # a trailing slash: its time is when it was made
    [ ! -d "$T/$name.r" ] || t_compare "$T/$name.f" "$T/$name.r" --nsec ${CMP_EXTRA:-}
}

# incremental TOOLOUT -- rsync said it got incremental lists.
incremental() {
    grep -q '^receiving incremental file list' "$1.out" ||
        { echo "no 'receiving incremental file list' in $1.out"; head -n 3 "$1.out"; return 1; }
}

# ---------------------------------------------------------------- pulls

pull_both full "" "" -av
t_check pull_full check_pull full
t_check pull_full_is_incremental incremental "$T/full.fo"
t_check pull_full_tree t_compare "$SRC" "$T/full.f" --nsec --no-hardlinks

# changes in early, late and deep directories, plus extra files to delete
change_src() {
    echo changed >"$SRC/tree/t3/d010/f2" &&
        echo new >"$SRC/wide/w99999" &&
        rm "$SRC/wide/w00007" &&
        echo deeper >"$SRC/n0/n1/n2/n3/n4/n5/n6/n7/n8/n9/new" &&
        touch -d @1600000000 "$SRC/tree/t3/d010" "$SRC/wide"
}
t_check change_src change_src
mkdir -p "$T/full.f/tree/t1/junkdir" && echo junk >"$T/full.f/tree/t1/junkdir/x"
pull_both resync "" "$T/full.f" -ai --delete
t_check pull_resync_delete check_pull resync
t_check pull_resync_tree t_compare "$SRC" "$T/resync.f" --nsec --no-hardlinks

pull_both nochange "" "$T/resync.f" -ai --delete
t_check pull_nochange check_pull nochange

pull_both sub tree "" -av
CMP_EXTRA=--no-dir-times t_check pull_dir_no_slash check_pull sub
t_check pull_dir_no_slash_tree t_compare "$T/sub.f/tree" "$T/sub.r/tree" --nsec
pull_both sub2 tree/t2/ "" -av
t_check pull_subdir check_pull sub2
pull_both one one "" -av
CMP_EXTRA=--no-dir-times t_check pull_single_file check_pull one
pull_both csum "tree/t2/" "$T/sub2.f" -aic
t_check pull_checksum check_pull csum
pull_both zip tree/ "" -avz
t_check pull_compress check_pull zip
pull_both xclude "" "" -a --exclude=wide --exclude='d01*' --exclude='n1?' -v
t_check pull_exclude check_pull xclude
pull_both lst "tree/t1/" "" -r --list-only
t_check pull_list_only check_pull lst
pull_both noinc "tree/" "" -av --no-inc-recursive
t_check pull_no_inc check_pull noinc
pull_both hard "tree/" "" -aH
t_check pull_hard_links_whole_list check_pull hard

# A directory the daemon cannot read: the error is reported and the
# exit code is 23 on both.
if [ "$(id -u)" != 0 ]; then
    chmod 000 "$SRC/tree/t4"
    pull_both ioerr "" "" -a
    chmod 755 "$SRC/tree/t4"
    t_check pull_io_error check_pull ioerr
else
    t_skip pull_io_error "root reads unreadable directories"
fi

# ---------------------------------------------------------------- pushes

# push_both NAME ARGS... SRCDIR -- ferry and rsync push SRCDIR to the rsync
# daemon's writable module; the destination starts as the previous result.
push_one() {
    local out=$1 tool=$2
    shift 2
    run "$out" "$tool" "$@" "rsync://127.0.0.1:$RSYNCD_PORT/dst/"
}

push_pair() {
    local name=$1
    shift
    rm -rf "$T/push" && mkdir -p "$T/push" && cp -a "$T/pushseed/." "$T/push/" 2>/dev/null
    push_one "$T/$name.fo" "$FERRY" "$@" && cp -a "$T/push" "$T/$name.f"
    rm -rf "$T/push" && mkdir -p "$T/push" && cp -a "$T/pushseed/." "$T/push/" 2>/dev/null
    push_one "$T/$name.ro" "$RSYNC" "$@" && cp -a "$T/push" "$T/$name.r"
}

check_push() {
    local name=$1
    same_run "$T/$name.fo" "$T/$name.ro" && t_compare "$T/$name.f" "$T/$name.r" --nsec
}

mkdir -p "$T/pushseed"
push_pair pfull -av "$SRC/"
t_check push_full check_push pfull
t_check push_full_is_incremental grep -q '^sending incremental file list' "$T/pfull.fo.out"
rm -rf "$T/pushseed" && cp -a "$T/pfull.f" "$T/pushseed" &&
    echo again >"$T/pushseed/tree/t0/d007/f1" && rm -rf "$T/pushseed/tree/t5/d005"
push_pair presync -ai --delete "$SRC/"
t_check push_resync_delete check_push presync
push_pair pstats -a --stats "$SRC/tree"
t_check push_stats_counts check_push pstats

# --------------------------------------------------- ferry as the receiver

# recv_pull NAME PATH SEED ARGS... -- ferry and rsync pull PATH from the
# real rsync daemon into $T/NAME.f and $T/NAME.r (copies of SEED or empty).
recv_pull() {
    local name=$1 path=$2 seed=$3
    shift 3
    rm -rf "$T/$name.f" "$T/$name.r"
    if [ -n "$seed" ]; then
        cp -a "$seed" "$T/$name.f" && cp -a "$seed" "$T/$name.r" || return 1
    fi
    run "$T/$name.fo" "$FERRY" "$@" "$RURL/$path" "$T/$name.f/"
    run "$T/$name.ro" "$RSYNC" "$@" "$RURL/$path" "$T/$name.r/"
}

recv_pull rfull "" "" -av
t_check recv_pull_full check_pull rfull
t_check recv_pull_is_incremental incremental "$T/rfull.fo"
t_check recv_pull_full_tree t_compare "$SRC" "$T/rfull.f" --nsec --no-hardlinks
mkdir -p "$T/rfull.f/tree/t2/junk" && echo junk >"$T/rfull.f/tree/t2/junk/x" &&
    echo junk >"$T/rfull.f/wide/zz_extra" && rm -f "$T/rfull.f/tree/t6/d006/f3"
recv_pull rresync "" "$T/rfull.f" -ai --delete
t_check recv_pull_resync_delete check_pull rresync
recv_pull rnochange "" "$T/rresync.f" -ai --delete
t_check recv_pull_nochange check_pull rnochange
recv_pull rsub tree "" -av
CMP_EXTRA=--no-dir-times t_check recv_pull_dir_no_slash check_pull rsub
recv_pull rone one "" -av
CMP_EXTRA=--no-dir-times t_check recv_pull_single_file check_pull rone
recv_pull rcsum "tree/" "$T/rsub.f/tree" -aic
t_check recv_pull_checksum check_pull rcsum
recv_pull rzip "tree/" "" -avz
t_check recv_pull_compress check_pull rzip
recv_pull rdry "tree/" "" -avn
t_check recv_pull_dry_run check_pull rdry
recv_pull rnot "tree/" "" -rlptv
t_check recv_pull_no_owner check_pull rnot

# rsync pushing to a ferry daemon and to an rsync daemon
rpush_pair() {
    local name=$1
    shift
    rm -rf "$T/push" "$T/fpush" && mkdir -p "$T/push" "$T/fpush" &&
        cp -a "$T/pushseed/." "$T/push/" && cp -a "$T/pushseed/." "$T/fpush/" || return 1
    run "$T/$name.fo" "$RSYNC" "$@" "rsync://127.0.0.1:$FERRYD_PORT/dst/"
    run "$T/$name.ro" "$RSYNC" "$@" "rsync://127.0.0.1:$RSYNCD_PORT/dst/"
    rm -rf "$T/$name.f" "$T/$name.r"
    cp -a "$T/fpush" "$T/$name.f" && cp -a "$T/push" "$T/$name.r"
}

rm -rf "$T/pushseed" && mkdir -p "$T/pushseed"
rpush_pair rpfull -av "$SRC/"
t_check recv_daemon_push_full check_push rpfull
rm -rf "$T/pushseed" && cp -a "$T/rpfull.f" "$T/pushseed" &&
    echo again >"$T/pushseed/tree/t1/d008/f2" && rm -rf "$T/pushseed/tree/t3/d003" &&
    echo junk >"$T/pushseed/tree/t4/junk"
rpush_pair rpresync -ai --delete "$SRC/"
t_check recv_daemon_push_resync_delete check_push rpresync

# local copies: both halves ferry, against rsync's local copy
local_pair() {
    local name=$1 seed=$2
    shift 2
    rm -rf "$T/$name.f" "$T/$name.r"
    if [ -n "$seed" ]; then
        cp -a "$seed" "$T/$name.f" && cp -a "$seed" "$T/$name.r" || return 1
    fi
    run "$T/$name.fo" "$FERRY" "$@" "$T/$name.f/"
    run "$T/$name.ro" "$RSYNC" "$@" "$T/$name.r/"
}
local_pair lfull "" -av "$SRC/tree/"
t_check local_full check_pull lfull
t_check local_is_incremental grep -q '^sending incremental file list' "$T/lfull.fo.out"
echo more >"$T/lfull.f/tree_extra" 2>/dev/null
rm -rf "$T/lfull.f/t0/d000" && echo x >"$T/lfull.f/t5/extra"
local_pair lresync "$T/lfull.f" -av --delete "$SRC/tree/"
t_check local_resync_delete check_pull lresync
local_pair lwide "" -a "$SRC/"
t_check local_big_tree check_pull lwide

# ------------------------------------------------------- over a remote shell

t_fakessh "$T/fakessh"
RPATH="env ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}"
RPATH+=" UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} $FERRY"

rsh_pull() {
    rm -rf "$T/rsh.f" "$T/rsh.r"
    run "$T/rsh.fo" "$RSYNC" -av -e "$T/fakessh" --rsync-path="$RPATH" "127.0.0.1:$SRC/tree/" "$T/rsh.f/"
    run "$T/rsh.ro" "$RSYNC" -av -e "$T/fakessh" "127.0.0.1:$SRC/tree/" "$T/rsh.r/"
    same_run "$T/rsh.fo" "$T/rsh.ro" && incremental "$T/rsh.fo" &&
        t_compare "$T/rsh.f" "$T/rsh.r" --nsec
}
t_check rsh_pull rsh_pull

t_done
