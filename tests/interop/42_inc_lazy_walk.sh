#!/bin/bash
# The lazy walk (issue 8): with incremental recursion ferry's sender lists
# only the top level, reads each directory when its part is due and frees
# the part when the generator has finished it. Real rsync is the receiver
# (pulling from a ferry daemon and over a remote shell) or the daemon ferry
# pushes to; every case runs with real rsync as the sender too and must
# give the same tree, the same -i output and the same exit code. Also: a
# directory that vanishes between the top-level list and its own part,
# and the whole-tree walk that -H and per-directory filter files keep.
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
# 1,300 files in 40 nested dirs, so parts go out while files are sent
for a in range(4):
    for b in range(10):
        p = os.path.join(root, "lz", "a%d" % a, "b%02d" % b)
        os.makedirs(p)
        for j in range(30):
            with open(os.path.join(p, "f%02d" % j), "w") as f:
                f.write("%d %d %d\n" % (a, b, j))
        os.makedirs(os.path.join(p, "empty"))
        with open(os.path.join(p, "skip.tmp"), "w") as f:
            f.write("excluded\n")
    with open(os.path.join(root, "lz", "a%d" % a, "top"), "w") as f:
        f.write("%d\n" % a)
os.makedirs(os.path.join(root, "lz", "a1", "zz", "deeper", "deepest"))
os.symlink("../a0/top", os.path.join(root, "lz", "a1", "zz", "link"))
# -H: two names of one file in different directories
os.makedirs(os.path.join(root, "hl", "x"))
os.makedirs(os.path.join(root, "hl", "y"))
with open(os.path.join(root, "hl", "x", "one"), "w") as f:
    f.write("linked\n")
os.link(os.path.join(root, "hl", "x", "one"), os.path.join(root, "hl", "y", "two"))
# -F: a per-directory filter file below the top
os.makedirs(os.path.join(root, "pf", "sub", "inner"))
for n in ("keep", "drop.o"):
    for d in ("pf", "pf/sub", "pf/sub/inner"):
        with open(os.path.join(root, d, n), "w") as f:
            f.write(n + "\n")
with open(os.path.join(root, "pf", "sub", ".rsync-filter"), "w") as f:
    f.write("- *.o\n")
EOF
    # Fixed times on the directories and the symlink: rsync's receiver
    # leaves a symlink made within the second of its source's time as it
    # made it (seen with rsync and with ferry as sender), so copies differed.
    find "$SRC" -type d -exec touch -d @1600000000 {} + &&
        touch -h -d @1600000000 "$SRC/lz/a1/zz/link"
}
t_check make_src make_src || t_done

if ! t_ferryd_start fdlazy "
[src]
    path = $SRC
    read only = yes
[gone]
    path = $T/gone
    read only = yes
"; then
    t_fail ferryd_start "ferry daemon did not start"
    t_done
fi
FPORT=$FERRYD_PORT
if ! t_rsyncd_start rdlazy "
[src]
    path = $SRC
    read only = yes
[gone]
    path = $T/gone
    read only = yes
[dst]
    path = $T/push
    read only = no
"; then
    t_fail rsyncd_start "real rsync daemon did not start"
    t_done
fi
RPORT=$RSYNCD_PORT
mkdir -p "$T/push" "$T/gone"

# the -i lines, as a set (deletions may overtake item lines)
stable_out() {
    grep -v -e '^sent .* bytes' -e '^total size is' -e '^$' -e '^created directory' "$1" |
        LC_ALL=C sort
}

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

# pull NAME PATH SEED ARGS... -- rsync pulls PATH from each daemon into
# $T/NAME.f (ferry sends) and $T/NAME.r (rsync sends), seeded from SEED.
pull() {
    local name=$1 path=$2 seed=$3
    shift 3
    rm -rf "$T/$name.f" "$T/$name.r"
    if [ -n "$seed" ]; then
        cp -a "$seed" "$T/$name.f" && cp -a "$seed" "$T/$name.r" || return 1
    fi
    run "$T/$name.fo" "$RSYNC" "$@" "rsync://127.0.0.1:$FPORT/src/$path" "$T/$name.f/"
    run "$T/$name.ro" "$RSYNC" "$@" "rsync://127.0.0.1:$RPORT/src/$path" "$T/$name.r/"
}

check() {
    local name=$1
    shift
    same_run "$T/$name.fo" "$T/$name.ro" && t_compare "$T/$name.f" "$T/$name.r" --nsec "$@"
}

incremental() {
    grep -q '^receiving incremental file list' "$1.out" ||
        { echo "no incremental list in $1.out"; head -n 3 "$1.out"; return 1; }
}

# ------------------------------------------------------------------ pulls

no_tmp() {
    ! find "$1" -name '*.tmp' | grep .
}
pull full lz/ "" -aiv --exclude='*.tmp'
t_check pull_tree check full
t_check pull_is_incremental incremental "$T/full.fo"
t_check pull_tree_excluded no_tmp "$T/full.f"

# a directory argument without a trailing slash: the top level is the
# directory alone, its contents are its own part
pull named lz "" -ai
t_check pull_dir_no_slash check named --no-dir-times

change_src() {
    echo changed >"$SRC/lz/a2/b05/f07" &&
        rm -r "$SRC/lz/a3/b09" &&
        echo new >"$SRC/lz/a0/b00/new" &&
        touch -d @1600000000 "$SRC/lz/a2/b05" "$SRC/lz/a3" "$SRC/lz/a0/b00"
}
t_check change_src change_src
mkdir -p "$T/full.f/a1/junk/deep" && echo junk >"$T/full.f/a1/junk/deep/x"
pull resync lz/ "$T/full.f" -ai --delete --exclude='*.tmp'
t_check pull_resync_delete check resync
t_check pull_resync_deleted test ! -e "$T/resync.f/a1/junk" -a ! -e "$T/resync.f/a3/b09" -a \
    -f "$T/resync.f/a0/b00/new"

pull excl "" "" -ai --exclude='b0[2-7]/' --exclude=empty --exclude='/hl' --exclude='/pf'
t_check pull_excludes check excl

# ----------------------------------------------- the whole-tree fallbacks

pull hard hl/ "" -aiH
t_check pull_hard_links_fallback check hard
hard_linked() {
    [ "$(stat -c %i "$T/hard.f/x/one")" = "$(stat -c %i "$T/hard.f/y/two")" ] ||
        { echo "x/one and y/two are not one file"; return 1; }
}
t_check pull_hard_links_linked hard_linked

pull perdir pf/ "" -aiF
t_check pull_perdir_filter_fallback check perdir
t_check pull_perdir_filter_applied test ! -e "$T/perdir.f/sub/inner/drop.o" -a \
    -e "$T/perdir.f/drop.o" -a -e "$T/perdir.f/sub/inner/keep"

# ------------------------------------------- ferry pushing to rsync daemon

push_pair() {
    local name=$1
    shift
    rm -rf "$T/push" && mkdir -p "$T/push"
    run "$T/$name.fo" "$FERRY" "$@" "rsync://127.0.0.1:$RPORT/dst/" && cp -a "$T/push" "$T/$name.f"
    rm -rf "$T/push" && mkdir -p "$T/push"
    run "$T/$name.ro" "$RSYNC" "$@" "rsync://127.0.0.1:$RPORT/dst/" && cp -a "$T/push" "$T/$name.r"
}
push_pair push -ai --exclude='*.tmp' "$SRC/lz/"
t_check push_tree check push
push_pair pushnamed -ai "$SRC/lz"
t_check push_dir_no_slash check pushnamed --no-dir-times

# ----------------------------------------------------- over a remote shell

t_fakessh "$T/fakessh"
RPATH="env ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}"
RPATH+=" UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} $FERRY"
rsh_pull() {
    rm -rf "$T/rsh.f" "$T/rsh.r"
    run "$T/rsh.fo" "$RSYNC" -aiv -e "$T/fakessh" --rsync-path="$RPATH" "127.0.0.1:$SRC/lz/" "$T/rsh.f/"
    run "$T/rsh.ro" "$RSYNC" -aiv -e "$T/fakessh" "127.0.0.1:$SRC/lz/" "$T/rsh.r/"
    check rsh && incremental "$T/rsh.fo"
}
t_check rsh_pull rsh_pull

# ------------------------------------- a directory vanishing mid-transfer
#
# Module "gone": a 3 MB file first, slowed by --bwlimit, then enough small
# files that the lists run ahead of the generator by less than the tree:
# the part of "zgone" is read seconds after the top level was sent, by
# which time the directory has been removed. The receiver says it
# vanished and exits 24, as with rsync sending.
make_gone() {
    rm -rf "$T/gone" && mkdir -p "$T/gone/a" "$T/gone/zgone/inner" &&
        head -c 3000000 /dev/zero >"$T/gone/a/0big" &&
        "$PYTHON" - "$T/gone" <<'EOF'
import os, sys
root = sys.argv[1]
for d in range(12):
    p = os.path.join(root, "m%02d" % d)
    os.makedirs(p)
    for j in range(1000):
        open(os.path.join(p, "f%04d" % j), "w").close()
with open(os.path.join(root, "zgone", "inner", "x"), "w") as f:
    f.write("x\n")
EOF
}
vanish_run() {
    local port=$1 out=$2
    make_gone || return 1
    rm -rf "$out.d"
    (umask 022 && exec "$RSYNC" -a --bwlimit=1000 "rsync://127.0.0.1:$port/gone/" "$out.d/") \
        >"$out.out" 2>"$out.err" </dev/null &
    local pid=$!
    # the top level is listed as soon as a/ shows up on the receiver
    for _ in $(seq 100); do [ -d "$out.d/a" ] && break; sleep 0.05; done
    rm -rf "$T/gone/zgone"
    wait "$pid"
    echo $? >"$out.rc"
}
vanish_check() {
    vanish_run "$FPORT" "$T/vanf" && vanish_run "$RPORT" "$T/vanr" || return 1
    [ "$(cat "$T/vanr.rc")" = 24 ] ||
        { echo "rsync as sender gave $(cat "$T/vanr.rc"), not 24: timing off"; return 1; }
    [ "$(cat "$T/vanf.rc")" = 24 ] ||
        { echo "exit $(cat "$T/vanf.rc"), not 24"; cat "$T/vanf.err"; return 1; }
    grep -q 'directory has vanished: .*zgone' "$T/vanf.err" ||
        { echo "no vanished message:"; cat "$T/vanf.err"; return 1; }
    [ -f "$T/vanf.d/m11/f0999" ] && [ ! -e "$T/vanf.d/zgone/inner" ] ||
        { echo "the rest of the tree did not arrive"; return 1; }
}
t_check vanished_dir vanish_check

t_check no_sanitizer_reports t_no_sanitizer_reports "$T"/*.out "$T"/*.err
t_done
