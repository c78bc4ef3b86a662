#!/bin/bash
# Smoke test of the harness itself, against real rsync only (no ferry):
# if this fails, every other interop result is suspect.
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON"
t_setup

SRC=$T/src
t_check mktree t_mktree "$SRC"

# --- cleanup: a sourced lib's trap kills tracked PIDs and removes $T.
check_cleanup() {
    local out child_t child_pid
    # $(...) returns only once the child has exited, EXIT trap included.
    out=$(KEEP_TMP=0 bash -c '
        . "$1"; t_setup
        sleep 300 >/dev/null 2>&1 & t_track_pid $!
        echo "$T $!"' _ "$_T_LIB_DIR/lib.sh")
    read -r child_t child_pid <<<"$out"
    echo "child T=$child_t sleep pid=$child_pid"
    [ -n "$child_t" ] && [ ! -e "$child_t" ] && ! t_pid_alive "$child_pid"
}
t_check cleanup_on_exit check_cleanup

# --- daemon with one listed and one hidden module.
if ! t_rsyncd_start d0 "
[pub]
    path = $SRC
    comment = public test module
    read only = yes
[hidden]
    path = $SRC
    list = no
"; then
    t_fail rsyncd_start "real rsync daemon did not start"
    t_done
fi
t_pass rsyncd_start
URL=rsync://127.0.0.1:$RSYNCD_PORT

# The listing is "name<pad>\tcomment"; squeeze whitespace to compare.
check_listing() {
    local got
    got=$("$RSYNC" "$URL/" | tr -s ' \t' ' ') || return 1
    echo "listing: $got"
    [ "$got" = "pub public test module" ]
}
t_check list_modules check_listing

t_check pull_pub "$RSYNC" -aH "$URL/pub/" "$T/pub/"
t_check compare_pub t_compare "$SRC" "$T/pub" --nsec
# Unlisted modules must still be reachable by name.
t_check pull_hidden "$RSYNC" -aH "$URL/hidden/" "$T/hidden/"
t_check compare_hidden t_compare "$SRC" "$T/hidden" --nsec

# --- t_compare must catch single differences (else the above prove nothing).
# expect_diff NAME PATH MUTATION... -- copy, mutate PATH, expect a reported diff.
expect_diff() {
    local name=$1 path=$2 out rc copy
    copy="$T/neg_$name"
    shift 2
    "$RSYNC" -aH "$SRC/" "$copy/" || return 1
    t_compare "$SRC" "$copy" --nsec || { echo "fresh copy differs"; return 1; }
    (cd "$copy" && "$@") || return 1
    out=$(t_compare "$SRC" "$copy" --nsec)
    rc=$?
    echo "$out"
    [ "$rc" -eq 1 ] && grep -qF -- "$path" <<<"$out"
}
flip_byte() {  # same size, same mtime, one bit different
    "$PYTHON" -c 'import os, sys
p = sys.argv[1]; st = os.stat(p)
with open(p, "r+b") as f:
    f.seek(123456); b = f.read(1); f.seek(123456); f.write(bytes([b[0] ^ 1]))
os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))' "$1"
}
t_check detect_byte expect_diff byte big.bin flip_byte big.bin
t_check detect_mode expect_diff mode script.sh chmod 0700 script.sh
t_check detect_mtime expect_diff mtime small.txt touch -d @1000000000 small.txt

# A nanosecond-only change: visible with --nsec, ignored without it.
check_nsec() {
    local copy="$T/neg_nsec" sec
    "$RSYNC" -aH "$SRC/" "$copy/" || return 1
    sec=$(stat -c %Y "$copy/one")
    touch -h -d "@$sec.000000001" "$copy/one"
    ! t_compare "$SRC" "$copy" --nsec && t_compare "$SRC" "$copy"
}
t_check detect_nsec check_nsec

# --- stopping the daemon by PID really ends it.
pid=$RSYNCD_PID
t_check rsyncd_stop t_rsyncd_stop
daemon_gone() { ! t_pid_alive "$pid" && ! t_port_open "$RSYNCD_PORT"; }
t_check rsyncd_gone daemon_gone

# --- ssh transport with a private sshd.
t_sshd_start
case $? in
0)
    t_pass sshd_start
    t_check ssh_pull "$RSYNC" -aH -e "$SSH_CMD" "127.0.0.1:$SRC/" "$T/viassh/"
    t_check compare_ssh t_compare "$SRC" "$T/viassh" --nsec
    ;;
2) t_skip sshd_start "$T_SKIP_REASON" ;;
*) t_fail sshd_start "see log" ;;
esac

t_done
