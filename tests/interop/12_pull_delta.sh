#!/bin/bash
# The delta algorithm on pulls from a REAL rsync daemon: a 64 MiB file
# changed in scattered blocks, then shifted by an insertion at its front,
# each pulled over the previous copy (normally and --inplace). The result
# must be byte-identical and cost little literal data; real rsync makes the
# same pulls from the same states, for comparison. Then the shape changes a
# receiver must cope with: empty files, shrinking and growing files, a file
# replaced by a directory and vice versa, a symlink replaced by a file.
#
# Run against real rsync (FERRY=/usr/bin/rsync) every check must pass: that
# proves the checks themselves.
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON" "$FERRY"
t_setup

BIG=$T/big          # module "big": one 64 MiB file
SHAPES=$T/shapes    # module "shapes": entries that change type or size
SIZE=$((64 * 1048576))

make_big() {
    mkdir -p "$BIG" "$SHAPES" && head -c "$SIZE" /dev/urandom >"$BIG/file" &&
        touch -d @1600000000 "$BIG/file"
}
if ! t_check make_big make_big; then
    t_done
fi
if ! t_rsyncd_start d12 "
[big]
    path = $BIG
    read only = yes
[shapes]
    path = $SHAPES
    read only = yes
"; then
    t_fail rsyncd_start "real rsync daemon did not start"
    t_done
fi
BASE=rsync://127.0.0.1:$RSYNCD_PORT

# ------------------------------------------------------------------ helpers

# pull TOOL RUN DEST ARGS... -- RUN.out/.err/.rc get stdout, stderr, exit.
pull() {
    local tool=$1 run=$2 dst=$3
    shift 3
    "$tool" "$@" "$dst/" >"$run.out" 2>"$run.err" </dev/null
    echo $? >"$run.rc"
}

rc_is() {
    local rc
    rc=$(cat "$1.rc")
    [ "$rc" = "$2" ] && return 0
    echo "exit $rc, expected $2"
    head -n 20 "$1.out" "$1.err"
    return 1
}

same_rc() {
    local r f
    r=$(cat "$1.rc") f=$(cat "$2.rc")
    [ "$r" = "$f" ] && return 0
    echo "exit: rsync $r, ferry $f"
    head -n 20 "$2.err"
    return 1
}

# stat_field RUN NAME -- the number of the --stats line "NAME: N bytes".
stat_field() {
    sed -n "s/^$2: \([0-9,]*\).*/\1/p" "$1.out" | tr -d ',' | head -n 1
}

# ------------------------------------------------------- source mutations

# change_blocks FILE PERCENT SEED -- overwrite PERCENT of FILE's 4 KiB
# blocks, chosen at random, with random bytes. The seed makes a failure
# reproducible.
change_blocks() {
    "$PYTHON" -c 'import os, random, sys
path, pct, seed = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
blocks = os.path.getsize(path) // 4096
rng = random.Random(seed)
with open(path, "r+b") as f:
    for b in sorted(rng.sample(range(blocks), int(blocks * pct / 100))):
        f.seek(b * 4096)
        f.write(os.urandom(4096))' "$1" "$2" "$3"
}

# insert_front FILE BYTES -- BYTES of random data before the old content.
insert_front() {
    { head -c "$2" /dev/urandom && cat "$1"; } >"$1.new" && mv "$1.new" "$1"
}

# ----------------------------------------------------------- big file

FDST=$T/dst.ferry
RDST=$T/dst.rsync

# A whole-file check that shows where the first difference is.
identical() { t_compare "$BIG" "$1" --nsec; }

# step NAME MTIME ARGS... -- the source has just changed: give it MTIME,
# pull it over both previous copies, check the results and literal data.
# Records literal data of both tools in $T/NAME.{ferry,rsync}.lit.
# The directory gets a fixed time too: rsync ignores sub-second differences
# by default, so a source dir touched in the same second as the last pull
# would legitimately keep a different nanosecond part.
step() {
    local name=$1 mtime=$2
    shift 2
    touch -d "@$mtime" "$BIG/file" "$BIG"
    local inode_before
    inode_before=$(stat -c %i "$FDST/file" 2>/dev/null)
    pull "$RSYNC" "$T/$name.rsync" "$RDST" -a --stats "$@" "$BASE/big/"
    pull "$FERRY" "$T/$name.ferry" "$FDST" -a --stats "$@" "$BASE/big/"
    t_check "$name.rc" rc_is "$T/$name.ferry" 0
    t_check "$name.identical" identical "$FDST"
    t_check "$name.rsync_identical" identical "$RDST"
    stat_field "$T/$name.ferry" "Literal data" >"$T/$name.ferry.lit"
    stat_field "$T/$name.rsync" "Literal data" >"$T/$name.rsync.lit"
    echo "$name: literal data ferry=$(cat "$T/$name.ferry.lit") rsync=$(cat "$T/$name.rsync.lit") of $(stat -c %s "$BIG/file")"
    echo "$inode_before" >"$T/$name.inode_before"
}

# literal_below NAME PERCENT -- ferry's literal data < PERCENT of the file.
literal_below() {
    local lit size
    lit=$(cat "$T/$1.ferry.lit") size=$(stat -c %s "$BIG/file")
    echo "literal $lit bytes, limit $2% of $size"
    [ -n "$lit" ] && [ "$lit" -lt $((size * $2 / 100)) ]
}

# literal_like_rsync NAME -- ferry sends no more literal data than rsync
# did from the same state, give or take 1% of the file (block-size choices).
literal_like_rsync() {
    local f r size
    f=$(cat "$T/$1.ferry.lit") r=$(cat "$T/$1.rsync.lit") size=$(stat -c %s "$BIG/file")
    echo "literal ferry=$f rsync=$r"
    [ -n "$f" ] && [ -n "$r" ] && [ "$f" -le $((r + size / 100)) ]
}

# inode_kept NAME -- --inplace wrote into the same file.
inode_kept() {
    local before now
    before=$(cat "$T/$1.inode_before") now=$(stat -c %i "$FDST/file")
    echo "inode before $before, after $now"
    [ "$before" = "$now" ]
}

test_big() {
    step initial 1600000000 # fresh: all literal
    t_check initial.literal_like_rsync literal_like_rsync initial

    change_blocks "$BIG/file" 1 12
    step blocks1pct 1600003600
    t_check blocks1pct.literal_below_5pct literal_below blocks1pct 5
    t_check blocks1pct.literal_like_rsync literal_like_rsync blocks1pct

    insert_front "$BIG/file" 1048576
    step insert1m 1600007200
    t_check insert1m.literal_below_5pct literal_below insert1m 5
    t_check insert1m.literal_like_rsync literal_like_rsync insert1m

    # The same two changes written in place.
    change_blocks "$BIG/file" 1 34
    step inplace_blocks1pct 1600010800 --inplace
    t_check inplace_blocks1pct.literal_below_5pct literal_below inplace_blocks1pct 5
    t_check inplace_blocks1pct.literal_like_rsync literal_like_rsync inplace_blocks1pct
    t_check inplace_blocks1pct.same_inode inode_kept inplace_blocks1pct

    # In place, a block can only be reused if it lies at or after the
    # write position, and an insertion moves every block later: rsync's
    # own literal data is the yardstick here, not 5%.
    insert_front "$BIG/file" 1048576
    step inplace_insert1m 1600014400 --inplace
    t_check inplace_insert1m.literal_like_rsync literal_like_rsync inplace_insert1m
    t_check inplace_insert1m.same_inode inode_kept inplace_insert1m

    # Cut back to the first 20 MiB: all of it matches the old copy.
    truncate -s $((20 * 1048576)) "$BIG/file"
    step truncate20m 1600018000
    t_check truncate20m.literal_below_1pct literal_below truncate20m 1
}

# -------------------------------------------------------------- shapes

# set_shapes ROUND -- the "shapes" module as it is in ROUND 1 or 2. Each
# entry changes between the two rounds in one way.
set_shapes() {
    local s=$SHAPES
    rm -rf "${s:?}"/* && mkdir -p "$s"
    if [ "$1" = 1 ]; then
        : >"$s/empty_stays"
        : >"$s/empty_grows"
        echo "soon empty" >"$s/becomes_empty"
        head -c 1048576 /dev/urandom >"$s/shrinks"
        head -c 307200 /dev/urandom >"$s/grows"
        echo "plain file" >"$s/file2dir"
        echo "plain file" >"$s/file2emptydir"
        mkdir -p "$s/dir2file/sub" && echo x >"$s/dir2file/sub/x" && echo y >"$s/dir2file/y"
        mkdir -p "$s/emptydir2file"
        ln -s somewhere "$s/link2file"
        echo "file" >"$s/file2link"
        ln -s a "$s/link2dir"
    else
        : >"$s/empty_stays"
        echo "now with content" >"$s/empty_grows"
        : >"$s/becomes_empty"
        head -c 307200 "$T/shrinks.1" >"$s/shrinks"
        cat "$T/grows.1" >"$s/grows" && head -c 716800 /dev/urandom >>"$s/grows"
        mkdir -p "$s/file2dir/inner" && echo in >"$s/file2dir/inner/f"
        mkdir -p "$s/file2emptydir"
        echo "was a directory" >"$s/dir2file"
        echo "was an empty directory" >"$s/emptydir2file"
        echo "was a symlink" >"$s/link2file"
        ln -s elsewhere "$s/file2link"
        mkdir -p "$s/link2dir" && echo d >"$s/link2dir/d"
    fi
    # Fixed times: the quick check must see every change, and both tools'
    # results must be comparable.
    find "$s" -mindepth 1 -depth -exec touch -h -d "@$((1600000000 + $1 * 86400))" {} +
    touch -d "@$((1600000000 + $1 * 86400))" "$s"
}

# check_shapes ROUND ARGS... -- pull the round with both tools (over the
# previous round's results) and compare.
check_shapes() {
    local name=shapes$1
    shift
    [ $# -gt 0 ] && name=$name.${1#--}
    pull "$RSYNC" "$T/$name.rsync" "$T/shapes.rsync" -a "$@" "$BASE/shapes/"
    pull "$FERRY" "$T/$name.ferry" "$T/shapes.ferry" -a "$@" "$BASE/shapes/"
    t_check "$name.rc_like_rsync" same_rc "$T/$name.rsync" "$T/$name.ferry"
    t_check "$name.tree_like_rsync" t_compare "$T/shapes.rsync" "$T/shapes.ferry" --nsec
}

test_shapes() {
    set_shapes 1
    cp "$SHAPES/shrinks" "$T/shrinks.1" && cp "$SHAPES/grows" "$T/grows.1"
    check_shapes 1
    t_check shapes1.identical t_compare "$SHAPES" "$T/shapes.ferry" --nsec
    # Keep this state: round 2 runs twice, without and with --force.
    cp -a "$T/shapes.rsync" "$T/shapes1.rsync" && cp -a "$T/shapes.ferry" "$T/shapes1.ferry"

    set_shapes 2
    # Without --force or --delete, rsync cannot replace a non-empty
    # directory with a file; ferry must fail the same way (and do the rest).
    check_shapes 2
    rm -rf "$T/shapes.rsync" "$T/shapes.ferry"
    cp -a "$T/shapes1.rsync" "$T/shapes.rsync" && cp -a "$T/shapes1.ferry" "$T/shapes.ferry"
    check_shapes 2 --force
    t_check shapes2.force.rc rc_is "$T/shapes2.force.ferry" 0
    t_check shapes2.force.identical t_compare "$SHAPES" "$T/shapes.ferry" --nsec
}

test_big
test_shapes
t_done
