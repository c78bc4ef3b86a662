# Shared by 96_inc_recursive.sh and 99_inc_recursive_recv.sh (sourced
# after lib.sh and t_setup): the test tree, a ferry daemon and a real rsync
# daemon serving it (module src, and a writable module dst on each), and
# the helpers that run a case with ferry and with rsync and compare them.
# The tree has a directory of 10,200 files (more than rsync's 10,000-file
# look-ahead), a 40-level chain and 120 small directories, so the list
# parts go interleaved with file data.
# shellcheck shell=bash
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317

SRC=$T/src

make_src() {
    t_mktree "$SRC" || return 1
    "$PYTHON" - "$SRC" <<'EOF'
import os, sys
root = sys.argv[1]
wide = os.path.join(root, "wide")
os.makedirs(wide)
for i in range(10200):
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
    # Fixed times on every directory made here: a copy made within the
    # same second as a directory's creation would keep its own time (rsync
    # compares times to the second), and --nsec comparisons would differ.
    find "$SRC/n0" -type d -exec touch -d @1600000000 {} + &&
        touch -d @1600000000 "$SRC" "$SRC"/wide "$SRC"/tree "$SRC"/tree/* "$SRC"/tree/*/*
}
t_check make_src make_src || t_done

if ! t_ferryd_start fdinc "
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
if ! t_rsyncd_start rdinc "
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

# The -v/-i lines that do not depend on timing or byte counts, as a set:
# where a deletion line falls among the item lines depends on how much
# output each side had buffered (rsync's messages overtake it).
stable_out() {
    grep -v -e '^sent .* bytes' -e '^total size is' -e '^$' -e '^created directory' \
        -e '^Total bytes' -e '^File list' -e '^Literal data' -e '^Matched data' "$1" |
        LC_ALL=C sort
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

