#!/bin/bash
# Incremental recursion with ferry as the SENDER and REAL rsync as the
# receiver: real rsync pulling from a ferry daemon and over a remote shell
# (rsync -e RSH --rsync-path=ferry), and ferry pushing to a real rsync
# daemon. Every case is run with real rsync in ferry's role too, and must
# give the same tree, the same -v/-i output and the same exit code (the
# fixture is in inc_fixture.bash; 99 has ferry as the receiver).
# Run against real rsync (FERRY=/usr/bin/rsync) every check must pass.
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON" "$FERRY"
t_setup
# shellcheck source=inc_fixture.bash
. "$(dirname "$0")/inc_fixture.bash"

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
