#!/bin/bash
# Incremental recursion with ferry as the RECEIVER: ferry pulling from a
# real rsync daemon, real rsync pushing to a ferry daemon, and local copies
# (both halves ferry). Every case is run with real rsync in ferry's role
# too, and must give the same tree, the same -v/-i output and the same
# exit code (the fixture is in inc_fixture.bash; 96 has ferry as sender).
# Run against real rsync (FERRY=/usr/bin/rsync) every check must pass.
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON" "$FERRY"
t_setup
# shellcheck source=inc_fixture.bash
. "$(dirname "$0")/inc_fixture.bash"

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
# --delete-delay keeps incremental recursion: "deleting" lines at the end
recv_pull rdelay "" "$T/rfull.f" -avi --delete-delay
t_check recv_pull_resync_delete_delay check_pull rdelay
t_check recv_pull_delete_delay_is_incremental incremental "$T/rdelay.fo"
# -A and -H keep it too
recv_pull racl "tree/" "" -avAH
t_check recv_pull_acls_hard_links check_pull racl
t_check recv_pull_acls_hard_links_is_incremental incremental "$T/racl.fo"
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

t_done
