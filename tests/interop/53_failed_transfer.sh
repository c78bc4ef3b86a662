#!/bin/bash
# A failed transfer never exits 0 (issue 20, items 1-3), compared run for
# run with rsync 3.5.0 doing the same thing:
#  - a destination on a full file system (a 1 MiB tmpfs): the receiver
#    reports the write failure and stops, exit 11, whichever side receives
#    (local copy, daemon, server over a remote shell, pulling client);
#  - per-file failures on a receiving daemon (mkstemp: permission denied)
#    reach the client, exit 23;
#  - a source that shrinks while it is sent (a sysfs file: 4096 bytes by
#    stat, a few by read) is reported, exit 23, and the destination keeps
#    its previous version (with --partial too, where rsync puts the zeros
#    in place); one that grows (a /proc file, 0 bytes by stat) is sent to
#    its listed length, exit 0.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_setup
t_require rsync

FULL="$T/full"
mounted=0
# The tmpfs goes before the tree is removed.
unmount_full() {
    [ "$mounted" = 1 ] || return 0
    umount "$FULL" 2>/dev/null || umount -l "$FULL" 2>/dev/null
    mounted=0
}
trap 'unmount_full; _t_cleanup' EXIT

mkdir -p "$T/src" "$FULL" "$T/bin"
echo first >"$T/src/a.txt"
head -c 3000000 /dev/urandom >"$T/src/big.bin"
echo last >"$T/src/z.txt"
t_fakessh "$T/bin/fakessh"
FAKESSH="$T/bin/fakessh"

if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=1m,mode=0755 tmpfs "$FULL" 2>/dev/null; then
    mounted=1
fi

ids=""
[ "$(id -u)" = 0 ] && ids=$'uid = nobody\ngid = nogroup'
mkdir -p "$T/ro_r/sub" "$T/ro_f/sub"
for d in ro_r ro_f; do
    echo old >"$T/$d/sub/x"
    chmod 0777 "$T/$d"
    chmod 0755 "$T/$d/sub"
    [ "$(id -u)" = 0 ] && chown nobody "$T/$d"
done
mkdir -p "$T/ro_src/sub" && echo new >"$T/ro_src/sub/x" && echo y >"$T/ro_src/y"
mkdir -p "$T/srcmod" "$T/shrink_r" "$T/shrink_f"
cp "$T/src/"* "$T/srcmod/"
# mods RO SHRINK -- the modules, with the daemon's own read-only tree and
# destination for a shrinking file
mods() {
    cat <<EOF
[full]
path = $FULL
read only = no
[src]
path = $T/srcmod
[sys]
path = /sys/kernel
[ro]
path = $1
read only = no
$ids
[shrink]
path = $2
read only = no
EOF
}
t_rsyncd_start rd "$(mods "$T/ro_r" "$T/shrink_r")" || { t_fail rsyncd_start "rsync daemon did not start"; t_done; }
RD=$RSYNCD_PORT
t_ferryd_start fd "$(mods "$T/ro_f" "$T/shrink_f")" || { t_fail ferryd_start "ferry daemon did not start"; t_done; }
FD=$FERRYD_PORT

# run NAME BIN ARGS... -- exit code in $T/NAME.rc, stderr in $T/NAME.err
run() {
    local name=$1
    shift
    timeout 120 "$@" >"$T/$name.out" 2>"$T/$name.err"
    echo $? >"$T/$name.rc"
    echo "--- $name: rc $(cat "$T/$name.rc"): $*"
    cat "$T/$name.err"
}
rc_of() { cat "$T/$1.rc"; }

# same_rc NAME REF -- the exit codes of runs NAME (ferry) and REF (rsync)
# are the same and not 0
same_rc() {
    local f r
    f=$(rc_of "$1") r=$(rc_of "$2")
    if [ "$f" = "$r" ] && [ "$f" != 0 ]; then
        t_pass "$1"
    else
        t_fail "$1" "ferry exit $f, rsync exit $r"
    fi
}

# has NAME REGEX WHAT -- run NAME's stderr has a line matching REGEX
has() {
    if grep -qE "$2" "$T/$1.err"; then t_pass "$1_$3"; else t_fail "$1_$3" "no line /$2/"; fi
}

empty_full() { rm -rf "${FULL:?}"/* "$FULL"/.[!.]* 2>/dev/null; }

# the receiver stopped at the failed file: only the first one landed, and
# no temporary file is left
only_first() {
    local got
    got=$(find "$FULL" -mindepth 1 -printf '%f\n' | sort | tr '\n' ' ')
    if [ "$got" = "a.txt " ]; then t_pass "$1_stopped_clean"; else t_fail "$1_stopped_clean" "left: $got"; fi
    empty_full
}

WRITE_FAILED='write failed on "[^"]*big\.bin": No space left on device'
CLOSING11='error: error in file IO \(code 11\) at [^ ]+\([0-9]+\) \[receiver='

if [ "$mounted" = 1 ]; then
    # --- a local copy
    run local_rsync "$RSYNC" -a "$T/src/" "$FULL/"; empty_full
    run local "$FERRY" -a "$T/src/" "$FULL/"
    same_rc local local_rsync
    has local "$WRITE_FAILED" message
    has local "$CLOSING11" closing
    only_first local

    # --- pushes: real rsync into ferry, as into rsync
    run push_rd_rsync "$RSYNC" -a "$T/src/" "rsync://127.0.0.1:$RD/full/"; empty_full
    run push_fd "$RSYNC" -a "$T/src/" "rsync://127.0.0.1:$FD/full/"
    same_rc push_fd push_rd_rsync
    has push_fd "$WRITE_FAILED" message
    has push_fd "$CLOSING11" closing
    only_first push_fd
    # before protocol 31 there is no exit message: the connection closes
    run push_rd30_rsync "$RSYNC" -a --protocol=30 "$T/src/" "rsync://127.0.0.1:$RD/full/"; empty_full
    run push_fd30 "$RSYNC" -a --protocol=30 "$T/src/" "rsync://127.0.0.1:$FD/full/"
    same_rc push_fd30 push_rd30_rsync
    only_first push_fd30

    run push_rsh_rsync "$RSYNC" -a -e "$FAKESSH" "$T/src/" "host:$FULL/"; empty_full
    run push_rsh "$RSYNC" -a -e "$FAKESSH" --rsync-path="$FERRY" "$T/src/" "host:$FULL/"
    same_rc push_rsh push_rsh_rsync
    has push_rsh "$WRITE_FAILED" message
    only_first push_rsh

    # --- ferry as the sending client: into ferry and into rsync
    run fpush_fd "$FERRY" -a "$T/src/" "rsync://127.0.0.1:$FD/full/"
    same_rc fpush_fd push_rd_rsync
    has fpush_fd "$WRITE_FAILED" message
    only_first fpush_fd
    run fpush_rd "$FERRY" -a "$T/src/" "rsync://127.0.0.1:$RD/full/"
    same_rc fpush_rd push_rd_rsync
    only_first fpush_rd
    run fpush_rsh "$FERRY" -a -e "$FAKESSH" --rsync-path="$FERRY" "$T/src/" "host:$FULL/"
    same_rc fpush_rsh push_rsh_rsync
    has fpush_rsh "$WRITE_FAILED" message
    only_first fpush_rsh
    run fpush_rsh_r "$FERRY" -a -e "$FAKESSH" "$T/src/" "host:$FULL/"
    same_rc fpush_rsh_r push_rsh_rsync
    only_first fpush_rsh_r

    # --- ferry as the receiving client
    run pull_rsync "$RSYNC" -a "rsync://127.0.0.1:$RD/src/" "$FULL/"; empty_full
    run pull_rd "$FERRY" -a "rsync://127.0.0.1:$RD/src/" "$FULL/"
    same_rc pull_rd pull_rsync
    has pull_rd "$WRITE_FAILED" message
    has pull_rd "$CLOSING11" closing
    only_first pull_rd
    run pull_fd "$FERRY" -a "rsync://127.0.0.1:$FD/src/" "$FULL/"
    same_rc pull_fd pull_rsync
    only_first pull_fd
    unmount_full
else
    t_skip full_disk "needs root to mount a tmpfs"
fi

# --- a file the receiving daemon cannot create (mkstemp: EACCES): 23
if [ "$(id -u)" = 0 ]; then
    run mkstemp_rsync "$RSYNC" -rtI "$T/ro_src/" "rsync://127.0.0.1:$RD/ro/"
    run mkstemp "$RSYNC" -rtI "$T/ro_src/" "rsync://127.0.0.1:$FD/ro/"
    same_rc mkstemp mkstemp_rsync
    t_check mkstemp_is_23 test "$(rc_of mkstemp)" = 23
    has mkstemp 'mkstemp "[^"]*x[^"]*" \(in ro\) failed: Permission denied \(13\)' message
    t_check mkstemp_others_land cmp "$T/ro_src/y" "$T/ro_f/y"
else
    t_skip mkstemp "the daemon module drops to nobody only when run as root"
fi

# --- a source that shrinks while it is sent
SYSF=/sys/kernel/uevent_seqnum
if [ -r "$SYSF" ] && [ "$(stat -c %s "$SYSF")" -gt "$(wc -c <"$SYSF")" ]; then
    # prev DIR -- a previous version the run must not replace
    prev() {
        mkdir -p "$1"
        echo old >"$1/uevent_seqnum"
        touch -d 2000-01-01 "$1/uevent_seqnum"
    }
    kept() {
        if [ "$(cat "$2/uevent_seqnum")" = old ]; then t_pass "$1_kept"; else t_fail "$1_kept" "destination replaced"; fi
    }
    # a daemon sender names the file within its module, as rsync's full_fname
    READ_ERR='read errors mapping "[^"]*uevent_seqnum"( \(in sys\))?: No data available \(61\)'
    prev "$T/sh_r"
    run shrink_rsync "$RSYNC" -a "$SYSF" "$T/sh_r/"
    prev "$T/sh_f"
    run shrink "$FERRY" -a "$SYSF" "$T/sh_f/"
    same_rc shrink shrink_rsync
    t_check shrink_is_23 test "$(rc_of shrink)" = 23
    has shrink "\[sender\] $READ_ERR" read_error
    has shrink '^ERROR: uevent_seqnum failed verification -- update discarded\.$' discarded
    kept shrink "$T/sh_f"
    # rsync --partial puts the zeros in place; ferry keeps the old file
    prev "$T/sh_p"
    run shrink_partial "$FERRY" -a --partial "$SYSF" "$T/sh_p/"
    t_check shrink_partial_is_23 test "$(rc_of shrink_partial)" = 23
    kept shrink_partial "$T/sh_p"
    # ferry sending to an rsync daemon, rsync pulling from a ferry daemon,
    # ferry pulling from an rsync daemon
    prev "$T/shrink_r"
    run shrink_push_rd "$FERRY" -a "$SYSF" "rsync://127.0.0.1:$RD/shrink/"
    same_rc shrink_push_rd shrink_rsync
    kept shrink_push_rd "$T/shrink_r"
    prev "$T/sh_pf"
    run shrink_pull_fd "$RSYNC" -a "rsync://127.0.0.1:$FD/sys/uevent_seqnum" "$T/sh_pf/"
    same_rc shrink_pull_fd shrink_rsync
    has shrink_pull_fd "$READ_ERR" read_error
    kept shrink_pull_fd "$T/sh_pf"
    prev "$T/sh_pr"
    run shrink_pull_rd "$FERRY" -a "rsync://127.0.0.1:$RD/sys/uevent_seqnum" "$T/sh_pr/"
    same_rc shrink_pull_rd shrink_rsync
    kept shrink_pull_rd "$T/sh_pr"
else
    t_skip shrink "no sysfs file that reads shorter than its size"
fi

# --- a source that grows after it was listed: its listed length is sent
if [ -r /proc/version ] && [ "$(stat -c %s /proc/version)" = 0 ]; then
    mkdir -p "$T/gr_r" "$T/gr_f"
    run grow_rsync "$RSYNC" -a /proc/version "$T/gr_r/"
    run grow "$FERRY" -a /proc/version "$T/gr_f/"
    t_check grow_rc test "$(rc_of grow)" = "$(rc_of grow_rsync)"
    t_check grow_size test "$(stat -c %s "$T/gr_f/version")" = "$(stat -c %s "$T/gr_r/version")"
else
    t_skip grow "no /proc file that stats as empty"
fi
t_done
