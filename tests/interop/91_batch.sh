#!/bin/bash
# Batch mode against real rsync: a batch written by ferry (--write-batch,
# --only-write-batch; local, pulled from an rsync daemon, pushed to rsync
# over a remote shell) is replayed by `rsync --read-batch` on a copy of the
# old tree, and a batch written by rsync is replayed by `ferry
# --read-batch`; every result must equal the new tree. FILE.sh must run;
# --only-write-batch must leave the destination as it was.
#
# Run against real rsync (FERRY=/usr/bin/rsync) every check but the
# ferry-only ones must pass: that proves the checks themselves.
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON" "$FERRY"
t_setup

OLD=$T/old   # what every destination starts as
NEW=$T/new   # the source: OLD with changes
B=$T/batches
mkdir -p "$B"

make_trees() {
    t_mktree "$OLD" || return 1
    "$RSYNC" -aH "$OLD/" "$NEW/" || return 1
    # A scattered change inside the 5 MiB file, so the batch holds a delta.
    head -c 40000 /dev/urandom | dd of="$NEW/sub/huge.bin" bs=1 seek=2000000 \
        conv=notrunc 2>/dev/null || return 1
    touch -d @1700000000 "$NEW/sub/huge.bin"
    echo "appended" >>"$NEW/small.txt"
    rm "$NEW/one"
    mkdir "$NEW/newdir" && echo "new file" >"$NEW/newdir/f.txt"
    chmod 0640 "$NEW/page.bin"
    touch -d @1600000000 "$NEW/newdir/f.txt" "$NEW/newdir" "$NEW/small.txt" "$NEW"
}
if ! t_check make_trees make_trees; then
    t_done
fi

t_fakessh "$T/fakessh"

# ------------------------------------------------------------------ helpers

# run OUT CMD... -- OUT.out, OUT.err, OUT.rc get CMD's stdout, stderr, exit.
run() {
    local out=$1
    shift
    "$@" >"$out.out" 2>"$out.err" </dev/null
    echo $? >"$out.rc"
}

# ok_same RUN A B -- RUN exited 0 and tree B equals tree A.
ok_same() {
    local rc
    rc=$(cat "$1.rc")
    if [ "$rc" != 0 ]; then
        echo "exit $rc"
        head -n 20 "$1.out" "$1.err"
        return 1
    fi
    t_compare "$2" "$3" --nsec
}

# fresh DIR -- DIR becomes a copy of the old tree.
fresh() {
    rm -rf "$1" && "$RSYNC" -aH "$OLD/" "$1/"
}

# replay_rsync NAME BATCH -- real rsync replays BATCH onto a fresh copy of
# the old tree, which must then equal the new one.
replay_rsync() {
    local d=$T/replay_$1
    fresh "$d"
    run "$T/$1.replay" "$RSYNC" -aH --delete --read-batch="$2" "$d/"
    ok_same "$T/$1.replay" "$NEW" "$d"
}

small_batch() {
    local size
    size=$(stat -c %s "$1")
    [ "$size" -lt 1048576 ] && return 0
    echo "batch $1 is $size bytes: not a delta"
    return 1
}

# ----------------------------------------------- ferry writes, rsync reads

fresh "$T/d1"
run "$T/local_write" "$FERRY" -aH --delete --write-batch="$B/local" "$NEW/" "$T/d1/"
t_check local_write_updates_dest ok_same "$T/local_write" "$NEW" "$T/d1"
t_check local_write_batch_is_delta small_batch "$B/local"
t_check local_rsync_reads_ferry_batch replay_rsync local "$B/local"

sh_runs() {
    local d=$T/sh_dest
    [ -x "$B/local.sh" ] || { echo "$B/local.sh is not executable"; return 1; }
    grep -q -- "--read-batch=" "$B/local.sh" || { cat "$B/local.sh"; return 1; }
    fresh "$d"
    run "$T/sh_run" sh "$B/local.sh" "$d/"
    ok_same "$T/sh_run" "$NEW" "$d"
}
t_check batch_sh_runs sh_runs

# The filter rules travel in FILE.sh as a here-document for --filter=._-.
sh_with_filters() {
    local d=$T/shf_dest
    fresh "$T/shf_w"
    run "$T/shf_write" "$FERRY" -a --exclude='*.txt' --exclude='big.bin' \
        --write-batch="$B/filt" "$NEW/" "$T/shf_w/" || return 1
    grep -q "^- \*\.txt$" "$B/filt.sh" || { cat "$B/filt.sh"; return 1; }
    fresh "$d"
    run "$T/shf_run" sh "$B/filt.sh" "$d/"
    ok_same "$T/shf_run" "$T/shf_w" "$d"
}
t_check batch_sh_with_filters sh_with_filters

# Compression: the token stream in the batch is zlib, as rsync expects.
fresh "$T/dz"
run "$T/local_z" "$FERRY" -aHz --delete --write-batch="$B/localz" "$NEW/" "$T/dz/"
t_check local_z_write ok_same "$T/local_z" "$NEW" "$T/dz"
t_check local_z_rsync_reads replay_rsync localz "$B/localz"

only_write_local() {
    fresh "$T/d3"
    run "$T/only_local" "$FERRY" -aH --delete --only-write-batch="$B/only" "$NEW/" "$T/d3/"
    [ "$(cat "$T/only_local.rc")" = 0 ] || { cat "$T/only_local.err"; return 1; }
    t_compare "$OLD" "$T/d3" --nsec
}
t_check only_write_batch_leaves_dest only_write_local
t_check only_write_batch_rsync_reads replay_rsync only "$B/only"

# ----------------------------------------------- rsync writes, ferry reads

rsync_batch() {
    fresh "$T/r_w"
    "$RSYNC" -aH --delete --no-inc-recursive --write-batch="$B/byrsync" "$NEW/" "$T/r_w/"
}
t_check rsync_writes_batch rsync_batch

ferry_reads() {
    local d=$T/f_r
    fresh "$d"
    run "$T/ferry_read" "$FERRY" -aH --delete --read-batch="$B/byrsync" "$d/"
    ok_same "$T/ferry_read" "$NEW" "$d"
}
t_check ferry_reads_rsync_batch ferry_reads

rsync_z_batch() {
    local d=$T/f_rz
    fresh "$T/r_wz" && fresh "$d"
    "$RSYNC" -aHz --delete --no-inc-recursive --write-batch="$B/byrsync_z" "$NEW/" "$T/r_wz/" ||
        return 1
    run "$T/ferry_read_z" "$FERRY" -aH --delete --read-batch="$B/byrsync_z" "$d/"
    ok_same "$T/ferry_read_z" "$NEW" "$d"
}
t_check ferry_reads_rsync_z_batch rsync_z_batch

# "-" reads the batch from standard input.
from_stdin() {
    local d=$T/f_stdin
    fresh "$d"
    "$FERRY" -aH --delete --read-batch=- "$d/" <"$B/byrsync" >"$T/stdin.out" 2>"$T/stdin.err"
    echo $? >"$T/stdin.rc"
    ok_same "$T/stdin" "$NEW" "$d"
}
t_check ferry_reads_batch_from_stdin from_stdin

# Read on a destination that already has the update: nothing to apply.
reread() {
    run "$T/reread" "$FERRY" -aH --delete --read-batch="$B/byrsync" "$T/f_r/"
    ok_same "$T/reread" "$NEW" "$T/f_r"
}
t_check ferry_rereads_batch reread

# The batch's stream flags win over the command line: no -H/-r/-l given
# here (--delete is no stream flag, so it is given, and needs -d).
flags_from_batch() {
    local d=$T/f_flags
    fresh "$d"
    run "$T/ferry_flags" "$FERRY" -ptgo -d --delete --read-batch="$B/byrsync" "$d/"
    ok_same "$T/ferry_flags" "$NEW" "$d"
}
t_check ferry_takes_batch_flags flags_from_batch

# Older protocols: no compat flags in the header (29), md4 sums (29), and
# no nanoseconds in the file list (< 31), so times compare in seconds.
ok_same_sec() {
    local rc
    rc=$(cat "$1.rc")
    [ "$rc" = 0 ] || { echo "exit $rc"; head -n 20 "$1.err"; return 1; }
    t_compare "$2" "$3"
}
old_protocol() {
    local p=$1 d=$T/op_$1 r=$T/op_$1.replay
    fresh "$d" || return 1
    run "$T/op_w$p" "$FERRY" -aH --delete --protocol="$p" --write-batch="$B/p$p" "$NEW/" "$d/"
    ok_same_sec "$T/op_w$p" "$NEW" "$d" || return 1
    fresh "$r" || return 1
    run "$T/op_rr$p" "$RSYNC" -aH --delete --read-batch="$B/p$p" "$r/"
    ok_same_sec "$T/op_rr$p" "$NEW" "$r" || return 1
    fresh "$d" && fresh "$d.r" || return 1
    "$RSYNC" -aH --delete --no-inc-recursive --protocol="$p" --write-batch="$B/rp$p" \
        "$NEW/" "$d.r/" || return 1
    run "$T/op_r$p" "$FERRY" -aH --delete --read-batch="$B/rp$p" "$d/"
    ok_same_sec "$T/op_r$p" "$NEW" "$d"
}
t_check protocol_29_both_ways old_protocol 29
t_check protocol_30_both_ways old_protocol 30

# What a replay prints (-i items, --stats with the recorded counts, the
# "Setting ... to match the batchfile" notes) is rsync's, line for line;
# sorted, since where rsync's generator (another process) puts its
# "*deleting" lines among the receiver's is a race.
same_output() {
    local f=$T/out_f r=$T/out_r
    fresh "$f" && fresh "$r" || return 1
    "$RSYNC" -v -ptgo -d -i --delete --stats --read-batch="$B/byrsync" "$r/" 2>&1 |
        grep -v "bytes/sec" | sort >"$T/out_r.txt"
    "$FERRY" -v -ptgo -d -i --delete --stats --read-batch="$B/byrsync" "$f/" 2>&1 |
        grep -v "bytes/sec" | sort >"$T/out_f.txt"
    diff "$T/out_r.txt" "$T/out_f.txt"
}
t_check replay_output_like_rsync same_output

# ACLs and xattrs travel in the file list and the item exchange: a
# changed long (abbreviated) value and a new ACL entry, both ways.
XD=$T/xattr_src
xattrs_ready() {
    command -v setfattr >/dev/null && command -v getfattr >/dev/null &&
        command -v setfacl >/dev/null || return 2
    mkdir -p "$XD/d" && echo a >"$XD/f" && head -c 100000 /dev/urandom >"$XD/big" &&
        echo b >"$XD/d/g" || return 1
    setfattr -n user.test -v hello "$XD/f" 2>/dev/null || return 2
    setfattr -n user.long -v "$(head -c 200 /dev/zero | tr '\0' x)" "$XD/big" &&
        setfattr -n user.g -v gval "$XD/d/g" || return 1
    "$RSYNC" -aAX "$XD/" "$XD.old/" || return 1
    setfattr -n user.test -v changed "$XD/f" &&
        setfattr -n user.long -v "$(head -c 300 /dev/zero | tr '\0' y)" "$XD/big" &&
        setfattr -n user.new -v 1 "$XD/d/g" && setfacl -m u:nobody:r "$XD/d/g" &&
        echo more >>"$XD/big" && touch -d @1700000000 "$XD/big"
}
# xattrs_of DIR -- every extended attribute (ACLs included) below DIR.
xattrs_of() {
    (cd "$1" && getfattr -R -d -m - . 2>/dev/null | sort)
}
xattr_both_ways() {
    local n
    for n in fw fr rw rr; do
        rm -rf "$T/x_$n" && "$RSYNC" -aAX "$XD.old/" "$T/x_$n/" || return 1
    done
    "$FERRY" -aAX --write-batch="$B/xf" "$XD/" "$T/x_fw/" || return 1
    "$RSYNC" -aAX --read-batch="$B/xf" "$T/x_fr/" >/dev/null || return 1
    "$RSYNC" -aAX --no-inc-recursive --write-batch="$B/xr" "$XD/" "$T/x_rw/" || return 1
    "$FERRY" -aAX --read-batch="$B/xr" "$T/x_rr/" >/dev/null || return 1
    xattrs_of "$XD" >"$T/x_want"
    for n in fw fr rw rr; do
        xattrs_of "$T/x_$n" | diff "$T/x_want" - || return 1
        # rsync itself leaves d/'s mtime changed by this update (run with
        # FERRY=rsync): times of dirs are not compared.
        t_compare "$XD" "$T/x_$n" --nsec --no-dir-times || return 1
    done
}
xattrs_ready
case $? in
0) t_check acl_xattr_batches_both_ways xattr_both_ways ;;
2) t_skip acl_xattr_batches_both_ways "no setfattr/setfacl or no user xattrs on $T" ;;
*) t_fail acl_xattr_batches_both_ways "could not build the xattr trees" ;;
esac

# ------------------------------------------------- over the network

if t_rsyncd_start d91 "
[new]
    path = $NEW
    read only = yes
"; then
    URL=rsync://127.0.0.1:$RSYNCD_PORT/new/
    fresh "$T/p1"
    run "$T/pull_write" "$FERRY" -aHz --delete --write-batch="$B/pull" "$URL" "$T/p1/"
    t_check pull_write_updates_dest ok_same "$T/pull_write" "$NEW" "$T/p1"
    t_check pull_batch_is_delta small_batch "$B/pull"
    t_check pull_rsync_reads_ferry_batch replay_rsync pull "$B/pull"

    pull_only() {
        fresh "$T/p2"
        run "$T/pull_only" "$FERRY" -aHz --delete --only-write-batch="$B/pullonly" "$URL" "$T/p2/"
        [ "$(cat "$T/pull_only.rc")" = 0 ] || { cat "$T/pull_only.err"; return 1; }
        t_compare "$OLD" "$T/p2" --nsec
    }
    # A forced algorithm is not recorded in the batch: the reader is
    # given the same option, as FILE.sh does.
    pull_zc() {
        local zc=$1 w=$T/pz_w_$1 r=$T/pz_r_$1 f=$T/pz_f_$1
        fresh "$w" && fresh "$r" && fresh "$f" && fresh "$T/pz_rw_$zc" || return 1
        run "$T/pz_w$zc" "$FERRY" -aH --delete --zc="$zc" --write-batch="$B/pz$zc" "$URL" "$w/"
        ok_same "$T/pz_w$zc" "$NEW" "$w" || return 1
        run "$T/pz_r$zc" "$RSYNC" -aH --delete --zc="$zc" --read-batch="$B/pz$zc" "$r/"
        ok_same "$T/pz_r$zc" "$NEW" "$r" || return 1
        "$RSYNC" -aH --delete --no-inc-recursive --zc="$zc" --write-batch="$B/rz$zc" \
            "$URL" "$T/pz_rw_$zc/" >/dev/null || return 1
        run "$T/pz_f$zc" "$FERRY" -aH --delete --zc="$zc" --read-batch="$B/rz$zc" "$f/"
        ok_same "$T/pz_f$zc" "$NEW" "$f"
    }
    t_check pull_zstd_batch_both_ways pull_zc zstd
    t_check pull_zlibx_batch_both_ways pull_zc zlibx

    t_check pull_only_write_leaves_dest pull_only
    t_check pull_only_rsync_reads replay_rsync pullonly "$B/pullonly"
else
    t_fail rsyncd_start "real rsync daemon did not start"
fi

push_write() {
    fresh "$T/q1"
    run "$T/push_write" "$FERRY" -aH --delete -e "$T/fakessh" --rsync-path="$RSYNC" \
        --write-batch="$B/push" "$NEW/" "localhost:$T/q1/"
    ok_same "$T/push_write" "$NEW" "$T/q1"
}
t_check push_rsh_write_updates_dest push_write
t_check push_rsh_rsync_reads_ferry_batch replay_rsync push "$B/push"

push_only() {
    fresh "$T/q2"
    run "$T/push_only" "$FERRY" -aHz --delete -e "$T/fakessh" --rsync-path="$RSYNC" \
        --only-write-batch="$B/pushonly" "$NEW/" "localhost:$T/q2/"
    [ "$(cat "$T/push_only.rc")" = 0 ] || { cat "$T/push_only.err"; return 1; }
    t_compare "$OLD" "$T/q2" --nsec
}
t_check push_rsh_only_write_leaves_dest push_only
t_check push_rsh_only_rsync_reads replay_rsync pushonly "$B/pushonly"

# ferry as the server of an rsync client that writes the batch: a pull
# (ferry sends) and an --only-write-batch push (ferry's receiver must
# change nothing and read no file data).
rsync_client_pull() {
    fresh "$T/s1"
    run "$T/s_pull" "$RSYNC" -aH --delete -e "$T/fakessh" --rsync-path="$FERRY" \
        --write-batch="$B/srvpull" "localhost:$NEW/" "$T/s1/"
    ok_same "$T/s_pull" "$NEW" "$T/s1" || return 1
    replay_rsync srvpull "$B/srvpull"
}
t_check rsync_client_batch_pull_from_ferry rsync_client_pull

rsync_client_only_push() {
    fresh "$T/s2"
    run "$T/s_push" "$RSYNC" -aH --delete -e "$T/fakessh" --rsync-path="$FERRY" \
        --only-write-batch="$B/srvpush" "$NEW/" "localhost:$T/s2/"
    [ "$(cat "$T/s_push.rc")" = 0 ] || { cat "$T/s_push.err"; return 1; }
    t_compare "$OLD" "$T/s2" --nsec || return 1
    replay_rsync srvpush "$B/srvpush"
}
t_check rsync_client_only_write_push_to_ferry rsync_client_only_push

# ------------------------------------------------------------- refusals

rc_is() {
    local rc
    rc=$(cat "$1.rc")
    [ "$rc" = "$2" ] && return 0
    echo "exit $rc, expected $2"
    head -n 20 "$1.out" "$1.err"
    return 1
}

run "$T/missing" "$FERRY" -a --read-batch="$T/no-such-batch" "$T/nowhere/"
t_check read_batch_missing_file rc_is "$T/missing" 11

run "$T/both" "$FERRY" -a --read-batch="$B/local" --write-batch="$B/x" "$T/nowhere/"
t_check write_and_read_batch_refused rc_is "$T/both" 1

# A truncated batch is a stream error, not a crash or a partial tree.
truncated() {
    local d=$T/trunc
    fresh "$d"
    head -c 300 "$B/local" >"$B/truncated"
    run "$T/truncated" "$FERRY" -aH --read-batch="$B/truncated" "$d/"
    local rc
    rc=$(cat "$T/truncated.rc")
    case $rc in 0 | 1[5-9] | 1[0-9][0-9]) echo "exit $rc"; cat "$T/truncated.err"; return 1 ;; esac
    return 0
}
t_check read_batch_truncated truncated

# rsync's default for -r is incremental recursion: its batch holds the
# later parts of the file list between the files. Replayed by ferry, the
# tree and the -v output must equal rsync's own replay.
# Deletions are the replaying generator's own, printed while the receiver
# prints the batch's item lines: their order between them depends on the
# two threads (processes in rsync), so the lines are compared as sets.
same_output() {
    diff <(grep -v -e '^created directory' -e 'bytes/sec' "$1" | sort) \
        <(grep -v -e '^created directory' -e 'bytes/sec' "$2" | sort)
}

inc_batch() {
    local name=$1
    shift
    fresh "$T/ir_w_$name" && fresh "$T/ir_f_$name" && fresh "$T/ir_r_$name"
    "$RSYNC" -aH --delete "$@" --write-batch="$B/inc_$name" "$NEW/" "$T/ir_w_$name/" || return 1
    run "$T/inc_$name" "$FERRY" -aHv --delete --read-batch="$B/inc_$name" "$T/ir_f_$name/"
    run "$T/inc_${name}_rsync" "$RSYNC" -aHv --delete --read-batch="$B/inc_$name" \
        "$T/ir_r_$name/"
    ok_same "$T/inc_$name" "$NEW" "$T/ir_f_$name" &&
        same_output "$T/inc_${name}_rsync.out" "$T/inc_$name.out"
}
t_check ferry_reads_inc_recursive_batch inc_batch plain
t_check ferry_reads_inc_recursive_z_batch inc_batch z -z

# Hard links across directories: rsync's generator chose the member it
# wrote knowing later parts of the list; ferry's replay must take the same
# one and link the others to it.
HL=$T/hl_src
make_hl_tree() {
    mkdir -p "$HL/a/b" "$HL/c" "$HL/e" || return 1
    echo one >"$HL/x" && ln "$HL/x" "$HL/a/x2" && ln "$HL/x" "$HL/c/x3"
    echo two >"$HL/a/y" && ln "$HL/a/y" "$HL/a/b/y2"
    echo three >"$HL/e/z" && ln "$HL/e/z" "$HL/e/z2"
    echo four >"$HL/c/w"
    touch -d @1600000000 "$HL"/x "$HL"/a/y "$HL"/e/z "$HL"/c/w
    # fixed directory times: a copy made within the second of a fresh
    # directory's time keeps its own, with rsync as with ferry
    touch -d @1600000000 "$HL"/a/b "$HL"/a "$HL"/c "$HL"/e "$HL"
}
hl_batch() {
    local name=$1
    shift
    rm -rf "$T/hl_w_$name" "$T/hl_f_$name" "$T/hl_r_$name"
    "$RSYNC" -aH "$@" --write-batch="$B/hl_$name" "$HL/" "$T/hl_w_$name/" || return 1
    run "$T/hl_$name" "$FERRY" -aHv --read-batch="$B/hl_$name" "$T/hl_f_$name/"
    run "$T/hl_${name}_rsync" "$RSYNC" -aHv --read-batch="$B/hl_$name" "$T/hl_r_$name/"
    ok_same "$T/hl_$name" "$HL" "$T/hl_f_$name" &&
        same_output "$T/hl_${name}_rsync.out" "$T/hl_$name.out"
}
if t_check hard_link_tree make_hl_tree; then
    t_check ferry_reads_inc_hard_link_batch hl_batch inc
    t_check ferry_reads_whole_list_hard_link_batch hl_batch whole --no-inc-recursive
fi

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
