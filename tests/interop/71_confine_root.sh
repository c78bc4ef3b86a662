#!/bin/bash
# --confine-root=DIR (rsync 3.5.0): the server side that a wrapper such as
# rrsync starts with its restricted directory refuses a merge file, a
# --files-from list, a --backup-dir, a --temp-dir or a --*-dest dir that
# resolves outside DIR, and keeps working inside it. The same cases run
# with real rsync and with ferry as that server (real rsync the client),
# first through upstream's own rrsync script, then with --confine-root
# given directly (--rsync-path), and the results are compared.
#
# rrsync is not part of this repository: it is taken at test time from a
# clone of RsyncProject/rsync ($RSYNC_MIRROR, a git dir) or from $RRSYNC,
# and the cases that need it are skipped when neither is there.
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317,SC2119

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON"
t_setup

: "${RSYNC_MIRROR:=/work/.mirror/RsyncProject+rsync/repo}"
RR_ORIG=$T/rrsync.orig
if [ -n "${RRSYNC:-}" ] && [ -f "$RRSYNC" ]; then
    cp "$RRSYNC" "$RR_ORIG"
elif [ -d "$RSYNC_MIRROR" ]; then
    git --git-dir="$RSYNC_MIRROR" show HEAD:support/rrsync >"$RR_ORIG" 2>/dev/null || rm -f "$RR_ORIG"
fi

# The tree for one server binary: root/ is the restricted dir; outside/
# sits beside it, where "../" from the root leads.
make_tree() { # DIR
    local d=$1
    rm -rf "$d"
    mkdir -p "$d/root/sub" "$d/outside/basis" "$d/outside/tmp" "$d/src"
    echo secretword >"$d/outside-secret"
    echo X >"$d/root/secretword"
    echo X >"$d/root/keep"
    echo X >"$d/root/sub/intree-dropped"
    echo X >"$d/root/sub/intree-kept"
    echo intree-dropped >"$d/root/sub/.rsync-filter"
    echo keep >"$d/outside/list"
    echo keep >"$d/root/list"
    echo NEW >"$d/src/f"
    echo data >"$d/src/g"
    cp -p "$d/src/g" "$d/outside/basis/g"
}

# An rsh that runs the command it is given, as ssh would (the host is
# dropped): for --rsync-path="SERVER --confine-root=DIR".
printf '#!/bin/sh\nshift\nexec sh -c "$*"\n' >"$T/rsh-direct"
chmod +x "$T/rsh-direct"

# rrsync patched to run BIN, and an rsh that hands it the command as
# sshd's command= would (SSH_ORIGINAL_COMMAND).
make_rrsync() { # DIR BIN MODE(-ro|-wo)
    local d=$1
    printf '#!/bin/sh\nexec %s "$@"\n' "$2" >"$d/shim"
    chmod +x "$d/shim"
    sed "s|^RSYNC = .*|RSYNC = '$d/shim'|" "$RR_ORIG" >"$d/rrsync"
    printf '#!/bin/sh\nshift\nSSH_ORIGINAL_COMMAND="$*" exec "%s" "%s" %s -no-lock "%s"\n' \
        "$PYTHON" "$d/rrsync" "$3" "$d/root" >"$d/rsh$3"
    chmod +x "$d/rsh$3"
}

# run NAME CMD... -- CMD's exit code to $D/NAME.rc, its output to NAME.err.
# CMD runs under a child subreaper that waits for every process it left
# (a client that exits on an error does not wait for its remote-shell
# side, whose orphans nobody here would otherwise reap).
REAP='import ctypes, os, subprocess, sys
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
rc = subprocess.call(sys.argv[1:])
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
sys.exit(rc)'
run() {
    local name=$1
    shift
    "$PYTHON" -c "$REAP" "$@" >"$D/$name.out" 2>"$D/$name.err" </dev/null
    echo $? >"$D/$name.rc"
}

cases() { # SERVER-BINARY (real rsync is the client)
    local bin=$1 rp="$1 --confine-root=$D/root"
    make_tree "$D"
    if [ -f "$RR_ORIG" ]; then
        make_rrsync "$D" "$bin" -ro
        make_rrsync "$D" "$bin" -wo
        # an exclude-only dir-merge naming a file beside the root: the
        # server must not read it (else "secretword" goes missing)
        mkdir -p "$D/pull-esc" "$D/pull-ctl"
        run merge_escape "$RSYNC" -r '--filter=:-s ../outside-secret' -e "$D/rsh-ro" x:. "$D/pull-esc/"
        run merge_intree "$RSYNC" -r '--filter=:-s .rsync-filter' -e "$D/rsh-ro" x:. "$D/pull-ctl/"
        run rr_push "$RSYNC" -r -e "$D/rsh-wo" "$D/src/f" x:
    fi
    # --confine-root given directly to the server
    echo OLD >"$D/root/f"
    run backup_out "$RSYNC" -rtI -b --backup-dir="$D/outside/bak" -e "$T/rsh-direct" \
        --rsync-path="$rp" "$D/src/f" "x:$D/root/"
    echo OLD >"$D/root/f"
    run backup_in "$RSYNC" -rtI -b --backup-dir="$D/root/bak" -e "$T/rsh-direct" \
        --rsync-path="$rp" "$D/src/f" "x:$D/root/"
    mkdir -p "$D/ff-out" "$D/ff-in"
    run files_from_out "$RSYNC" -r --files-from=":$D/outside/list" -e "$T/rsh-direct" \
        --rsync-path="$rp" "x:$D/root/" "$D/ff-out/"
    run files_from_in "$RSYNC" -r --files-from=":$D/root/list" -e "$T/rsh-direct" \
        --rsync-path="$rp" "x:$D/root/" "$D/ff-in/"
    run link_dest_out "$RSYNC" -rt --link-dest="$D/outside/basis" -e "$T/rsh-direct" \
        --rsync-path="$rp" "$D/src/g" "x:$D/root/"
    stat -c %h "$D/root/g" >"$D/link_dest_out.nlink" 2>&1
    rm -f "$D/root/g"
    run temp_dir_out "$RSYNC" -rt --temp-dir="$D/outside/tmp" -e "$T/rsh-direct" \
        --rsync-path="$rp" "$D/src/g" "x:$D/root/"
    run relative_root "$bin" -r --confine-root=rel "$D/src/" "$D/rel-dst/"
    run with_insecure "$bin" -r --confine-root="$D/root" --insecure-links "$D/src/" "$D/ins-dst/"
}

for who in rsync ferry; do
    D=$T/$who
    mkdir -p "$D"
    if [ $who = rsync ]; then cases "$(command -v "$RSYNC")"; else cases "$FERRY"; fi
done

rc_of() { cat "$T/$1/$2.rc"; }
# the same exit code from both servers
same_rc() { # CASE [EXPECTED]
    local r f
    r=$(rc_of rsync "$1")
    f=$(rc_of ferry "$1")
    [ "$r" = "$f" ] || { echo "$1: rsync $r, ferry $f"; cat "$T/ferry/$1.err"; return 1; }
    [ -z "${2:-}" ] || [ "$f" = "$2" ] || { echo "$1: exit $f, want $2"; cat "$T/ferry/$1.err"; return 1; }
}
F=$T/ferry

if [ -f "$RR_ORIG" ]; then
    merge_escape() {
        same_rc merge_escape 0 && [ -e "$F/pull-esc/secretword" ] && [ -e "$T/rsync/pull-esc/secretword" ] &&
            ! grep -q secretword "$F/merge_escape.err"
    }
    t_check rrsync_merge_file_outside_root_not_read merge_escape
    merge_intree() {
        same_rc merge_intree 0 && [ -e "$F/pull-ctl/sub/intree-kept" ] &&
            [ ! -e "$F/pull-ctl/sub/intree-dropped" ]
    }
    t_check rrsync_merge_file_inside_root_obeyed merge_intree
    rr_push() { same_rc rr_push 0 && [ "$(cat "$F/root/f")" = NEW ]; }
    t_check rrsync_push_through_confine_root rr_push
else
    t_skip rrsync_cases "no rrsync script (set RRSYNC or RSYNC_MIRROR)"
fi

# rsync makes a failed backup fatal (exit 11), ferry an error of the
# file (23): both fail, and neither writes outside the root
backup_out() {
    [ "$(rc_of rsync backup_out)" = 11 ] && [ "$(rc_of ferry backup_out)" = 23 ] &&
        [ ! -e "$F/outside/bak" ] && [ ! -e "$T/rsync/outside/bak" ]
}
t_check backup_dir_outside_root_refused backup_out
backup_in() { same_rc backup_in 0 && [ "$(cat "$F/root/bak/f")" = OLD ]; }
t_check backup_dir_inside_root_used backup_in
# rsync refuses the list while parsing its options (the client sees the
# connection close: 12); ferry after the handshake, with its exit code
files_from_out() {
    [ "$(rc_of rsync files_from_out)" != 0 ] && [ "$(rc_of ferry files_from_out)" != 0 ] &&
        grep -q "failed to open files-from file $F/outside/list: Too many levels of symbolic links" \
            "$F/files_from_out.err" && [ ! -e "$F/ff-out/keep" ]
}
t_check files_from_outside_root_refused files_from_out
files_from_in() { same_rc files_from_in 0 && [ -e "$F/ff-in/keep" ]; }
t_check files_from_inside_root_read files_from_in
link_dest_out() {
    same_rc link_dest_out 23 &&
        grep -qF "open \"$F/outside/basis/g\": Too many levels of symbolic links (40)" "$F/link_dest_out.err" &&
        [ "$(cat "$F/link_dest_out.nlink")" = 1 ]
}
t_check link_dest_outside_root_not_linked link_dest_out
temp_dir_out() { same_rc temp_dir_out 23 && [ -z "$(ls -A "$F/outside/tmp")" ]; }
t_check temp_dir_outside_root_refused temp_dir_out
relative_root() {
    same_rc relative_root 1 && grep -q -- '--confine-root must be an absolute path' "$F/relative_root.err"
}
t_check relative_confine_root_refused relative_root
with_insecure() {
    same_rc with_insecure 1 &&
        grep -q -- '--insecure-links cannot be combined with --confine-root' "$F/with_insecure.err"
}
t_check confine_root_with_insecure_links_refused with_insecure

# A daemon ignores a client's --confine-root: its module is the boundary.
conf="[m]
    path = $T/mod
    use chroot = no
    read only = no"
mkdir -p "$T/mod"
if t_ferryd_start confine_ferryd "$conf"; then
    "$RSYNC" -r -M--confine-root=/nonexistent "$T/ferry/src/f" "rsync://127.0.0.1:$FERRYD_PORT/m/" \
        >"$T/daemon.out" 2>&1
    echo $? >"$T/daemon.rc"
    # let the daemon reap the child that served the connection first
    for _ in $(seq 50); do pgrep -P "$FERRYD_PID" >/dev/null || break; sleep 0.1; done
    t_ferryd_stop
    daemon_ignores() { [ "$(cat "$T/daemon.rc")" = 0 ] && [ "$(cat "$T/mod/f")" = NEW ]; }
    t_check daemon_ignores_client_confine_root daemon_ignores
else
    t_fail daemon_ignores_client_confine_root "ferry daemon did not start"
fi

t_done
