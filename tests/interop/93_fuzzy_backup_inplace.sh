#!/bin/bash
# -y/--fuzzy, -yy, and --backup with --inplace, against real rsync: the same
# inputs go through rsync and ferry (local mode with both; -y also pulled
# from a real rsync daemon, pushed by real rsync to a ferry daemon, and
# pushed by ferry to a real rsync daemon). Each pair must end with the same
# tree, the same itemize lines (-i), the same exit code, and the same
# "Matched data" figure, which shows the same basis was used.
#
# Run against real rsync (FERRY=/usr/bin/rsync) every check must pass:
# that proves the checks themselves.
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON" "$FERRY"
t_setup

SRC=$T/src   # the new version
OLD=$T/old   # what each destination starts as

# Random data of N bytes in FILE, with mtime @1600000000.
blob() {
    head -c "$2" /dev/urandom >"$1" && touch -d @1600000000 "$1"
}

make_trees() {
    mkdir -p "$SRC/sub" "$OLD/sub" "$T/alt/sub" || return 1
    # renamed with a small change: the old name is the closest one
    blob "$OLD/report-2023.txt" 300000 || return 1
    cp "$OLD/report-2023.txt" "$SRC/report-2024.txt"
    printf 'tail' >>"$SRC/report-2024.txt"
    # renamed without a change: found by size and mtime, whatever the name
    blob "$OLD/sub/zzz.dat" 150000 || return 1
    cp -p "$OLD/sub/zzz.dat" "$SRC/sub/moved.bin"
    # decoys: a far name, an empty file, a directory
    blob "$OLD/sub/unrelated-name-entirely.xyz" 5000 || return 1
    : >"$OLD/sub/moved.bi"
    mkdir "$OLD/sub/moved.bin.d"
    # only under the --compare-dest dir: found with -yy, not with -y
    blob "$T/alt/sub/archive-v1.tar" 200000 || return 1
    cp "$T/alt/sub/archive-v1.tar" "$SRC/sub/archive-v2.tar"
    printf 'more' >>"$SRC/sub/archive-v2.tar"
    # for --backup --inplace: changed files, one in a subdirectory
    blob "$OLD/inplace.bin" 400000 || return 1
    cp "$OLD/inplace.bin" "$SRC/inplace.bin"
    printf 'XXXX' | dd of="$SRC/inplace.bin" bs=1 seek=200000 conv=notrunc 2>/dev/null
    echo "old text" >"$OLD/sub/note.txt"
    echo "new text, longer" >"$SRC/sub/note.txt"
    chmod 0640 "$OLD/inplace.bin"
    touch -d @1500000000 "$OLD/inplace.bin" "$OLD/sub/note.txt"
    touch -d @1700000000 "$SRC/inplace.bin" "$SRC/sub/note.txt" "$SRC/report-2024.txt" \
        "$SRC/sub/archive-v2.tar"
    touch -d @1650000000 "$SRC/sub" "$SRC" "$OLD/sub" "$OLD"
}
if ! t_check make_trees make_trees; then
    t_done
fi

# ------------------------------------------------------------------ helpers

# run OUT CMD... -- OUT.out, OUT.rc get CMD's output and exit code.
run() {
    local out=$1
    shift
    "$@" >"$out.out" 2>&1
    echo $? >"$out.rc"
}

# The itemize lines and the matched-data figure of a run's output, sorted:
# deletions are printed by the generator and transfers by the receiver,
# and how those two interleave is a race in rsync as well.
summary() {
    grep -E '^[<>ch.*][fdLDS+*]|^\*deleting|^Matched data' "$1.out" | sort
}

# same_run NAME A B [TREECMP_OPTS] -- the runs A and B (dirs A.dst, B.dst)
# ended alike: exit code, itemize lines, matched data, tree.
same_run() {
    local a=$2 b=$3
    shift 3
    if [ "$(cat "$a.rc")" != "$(cat "$b.rc")" ]; then
        echo "exit codes differ: rsync $(cat "$a.rc"), ferry $(cat "$b.rc")"
        cat "$b.out"
        return 1
    fi
    if ! diff <(summary "$a") <(summary "$b"); then
        echo "output differs (< rsync, > ferry)"
        return 1
    fi
    t_compare --nsec "$@" "$a.dst" "$b.dst"
}

fresh() {
    rm -rf "$1.dst" && cp -a "$OLD" "$1.dst"
}

# local_pair NAME [TREECMP_OPTS --] OPTS... -- rsync and ferry copy SRC
# locally onto fresh copies of OLD with OPTS (-i --stats always).
local_pair() {
    local name=$1 cmpopts=()
    shift
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        case $1 in --no-*) cmpopts+=("$1"); shift ;; *) break ;; esac
    done
    [ "${1:-}" = -- ] && shift
    local a="$T/$name.r" b="$T/$name.f"
    fresh "$a" && fresh "$b" || return 1
    run "$a" "$RSYNC" -i --stats --no-inc-recursive "$@" "$SRC/" "$a.dst/"
    run "$b" "$FERRY" -i --stats --no-inc-recursive "$@" "$SRC/" "$b.dst/"
    same_run "$name" "$a" "$b" "${cmpopts[@]}"
}

# The figure must show a basis was used at all (not both zero).
matched_some() {
    grep -q '^Matched data: [1-9]' "$T/$1.f.out" || {
        echo "no data matched:"
        cat "$T/$1.f.out"
        return 1
    }
}

# ---------------------------------------------------------------- local -y

t_check local_fuzzy local_pair fuzzy -a --no-W -y
t_check local_fuzzy_matched matched_some fuzzy
t_check local_fuzzy_whole_file local_pair fuzzy_w -a -y
t_check local_fuzzy_compare_dest local_pair fuzzy_cd -a --no-W -y --compare-dest="$T/alt"
t_check local_fuzzy2_compare_dest local_pair fuzzy2_cd -a --no-W -yy --compare-dest="$T/alt"
t_check local_fuzzy2_copy_dest local_pair fuzzy2_cp -a --no-W -yy --copy-dest="$T/alt"
# --delete (during) removes the candidates before their dir's files are
# generated; --delete-after keeps them until after the transfer
t_check local_fuzzy_delete local_pair fuzzy_del -a --no-W -y --delete
t_check local_fuzzy_delete_after local_pair fuzzy_dela -a --no-W -y --delete-after
t_check local_fuzzy_delete_after_matched matched_some fuzzy_dela
t_check local_fuzzy_dry_run local_pair fuzzy_n -a --no-W -y -n

# ------------------------------------------------- local --backup --inplace

# rsync leaves a directory that received a backup with the time of that
# write (it does not touch it up again), ferry restores it: directory
# times are left out where backups are written beside the files.
t_check local_backup_inplace local_pair bi --no-dir-times -- -a --inplace -b
t_check local_backup_inplace_delta local_pair bi_d --no-dir-times -- -a --inplace -b --no-W
t_check local_backup_inplace_suffix local_pair bi_s --no-dir-times -- -a --inplace -b \
    --suffix=.prev --no-W
t_check local_backup_inplace_no_times local_pair bi_nt --no-times -- -r --inplace -b --no-W
t_check local_backup_inplace_dir local_pair bi_bd --no-dir-times -- -a --inplace \
    --backup-dir=saved --no-W

# the backup holds the old content, with the old file's mode
backup_is_old() {
    cmp "$OLD/inplace.bin" "$T/bi_d.f.dst/inplace.bin~" &&
        cmp "$OLD/sub/note.txt" "$T/bi_bd.f.dst/saved/sub/note.txt" &&
        [ "$(stat -c %a "$T/bi_d.f.dst/inplace.bin~")" = 640 ] &&
        cmp "$SRC/inplace.bin" "$T/bi_d.f.dst/inplace.bin"
}
t_check local_backup_inplace_content backup_is_old

abs_backup_dir() {
    local a="$T/bad.r" b="$T/bad.f"
    fresh "$a" && fresh "$b" || return 1
    run "$a" "$RSYNC" -ai --no-W --inplace --backup-dir="$T/bak.r" "$SRC/" "$a.dst/"
    run "$b" "$FERRY" -ai --no-W --inplace --backup-dir="$T/bak.f" "$SRC/" "$b.dst/"
    same_run bad "$a" "$b" && t_compare --no-dir-times "$T/bak.r" "$T/bak.f"
}
t_check local_backup_inplace_abs_dir abs_backup_dir

# ------------------------------------------------------ -y with daemons

MODULES="[src]
    path = $SRC
    read only = yes
[up]
    path = @UP@
    read only = no
"
if ! t_rsyncd_start rd93 "$(echo "$MODULES" | sed "s|@UP@|$T/up.rsyncd|")"; then
    t_fail rsyncd_start "real rsync daemon did not start"
    t_done
fi
if ! t_ferryd_start fd93 "$(echo "$MODULES" | sed "s|@UP@|$T/up.ferryd|")"; then
    t_fail ferryd_start "ferry daemon did not start"
    t_done
fi
RD=rsync://127.0.0.1:$RSYNCD_PORT
FD=rsync://127.0.0.1:$FERRYD_PORT

# keep MODULE_DIR RUN -- a module's result as RUN.dst, for same_run.
keep() {
    rm -rf "$2.dst" && cp -a "$1" "$2.dst"
}

# ferry receives from a real rsync sender
pull_fuzzy() {
    local a="$T/pull.r" b="$T/pull.f"
    fresh "$a" && fresh "$b" || return 1
    run "$a" "$RSYNC" -ai --stats -y "$RD/src/" "$a.dst/"
    run "$b" "$FERRY" -ai --stats -y "$RD/src/" "$b.dst/"
    same_run pull "$a" "$b" && matched_some pull
}
t_check pull_fuzzy_from_rsyncd pull_fuzzy

# a ferry daemon receives from a real rsync client; the reference is the
# same push to a real rsync daemon
push_to_ferryd() {
    rm -rf "$T/up.rsyncd" "$T/up.ferryd"
    cp -a "$OLD" "$T/up.rsyncd" && cp -a "$OLD" "$T/up.ferryd" || return 1
    run "$T/rpush.r" "$RSYNC" -ai --stats -y "$SRC/" "$RD/up/"
    run "$T/rpush.f" "$RSYNC" -ai --stats -y "$SRC/" "$FD/up/"
    keep "$T/up.rsyncd" "$T/rpush.r" && keep "$T/up.ferryd" "$T/rpush.f" || return 1
    same_run rpush "$T/rpush.r" "$T/rpush.f" && matched_some rpush
}
t_check rsync_push_fuzzy_to_ferryd push_to_ferryd

# ferry sends to a real rsync daemon: -y must reach the receiving server
push_from_ferry() {
    rm -rf "$T/up.rsyncd" && cp -a "$OLD" "$T/up.rsyncd" || return 1
    run "$T/fpush.r" "$RSYNC" -ai --stats -yy "$SRC/" "$RD/up/"
    keep "$T/up.rsyncd" "$T/fpush.r" || return 1
    rm -rf "$T/up.rsyncd" && cp -a "$OLD" "$T/up.rsyncd" || return 1
    run "$T/fpush.f" "$FERRY" -ai --stats -yy "$SRC/" "$RD/up/"
    keep "$T/up.rsyncd" "$T/fpush.f" || return 1
    same_run fpush "$T/fpush.r" "$T/fpush.f" && matched_some fpush
}
t_check ferry_push_fuzzy_to_rsyncd push_from_ferry

# ferry receiving --backup --inplace from a real rsync client, as a daemon
push_backup_inplace() {
    rm -rf "$T/up.rsyncd" "$T/up.ferryd"
    cp -a "$OLD" "$T/up.rsyncd" && cp -a "$OLD" "$T/up.ferryd" || return 1
    run "$T/bpush.r" "$RSYNC" -ai --inplace -b "$SRC/" "$RD/up/"
    run "$T/bpush.f" "$RSYNC" -ai --inplace -b "$SRC/" "$FD/up/"
    keep "$T/up.rsyncd" "$T/bpush.r" && keep "$T/up.ferryd" "$T/bpush.f" || return 1
    same_run bpush "$T/bpush.r" "$T/bpush.f" --no-dir-times
}
t_check rsync_push_backup_inplace_to_ferryd push_backup_inplace

t_done
