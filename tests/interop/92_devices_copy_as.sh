#!/bin/bash
# --copy-devices, --write-devices, --copy-as and --trust-sender against REAL
# rsync, both ways: ferry client -> rsync server and rsync client -> ferry
# server over a fake remote shell (runs the command here), and over daemons
# (which refuse the device options unless "refuse options" accepts them by
# exact name). Devices are loop devices on small image files (losetup);
# when the machine has none to give, the device cases are skipped.
# --copy-as needs root. --trust-sender is checked with the scripted
# malicious daemon (evil_daemon.py) sending names nobody asked for, and with
# ordinary pulls from real rsync, which must not be refused.
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON" cmp stat
t_setup

if [ ! -x "$FERRY" ]; then
    t_skip "$(_t_script_name)" "ferry binary not found: $FERRY"
    t_done
fi

# A remote shell that is no shell at all: skip ssh's options and the host,
# and run the command line here (as in 32_server_over_rsh.sh).
t_fakessh "$T/fakessh"
RSH=$T/fakessh

# run TAG CMD... -- TAG.out/.err/.rc get CMD's stdout, stderr and status.
run() {
    local tag=$1
    shift
    timeout 120 "$@" >"$T/$tag.out" 2>"$T/$tag.err" </dev/null
    echo $? >"$T/$tag.rc"
    sed "s/^/   $tag: /" "$T/$tag.err" >&2
}
rc_of() { cat "$T/$1.rc"; }

# same_rc NAME TAG_RSYNC TAG_FERRY [WANT] -- both exited alike (and WANT).
same_rc() {
    local a b
    a=$(rc_of "$2") b=$(rc_of "$3")
    if [ "$a" != "$b" ]; then
        t_fail "$1" "rsync exit $a, ferry exit $b: $(tail -n 1 "$T/$3.err")"
    elif [ -n "${4:-}" ] && [ "$b" != "$4" ]; then
        t_fail "$1" "both exit $b, expected $4"
    else
        t_pass "$1"
    fi
}

# same_tree A B -- t_compare, but the destination roots were made at
# different times: their mtimes only count when the transfer set them.
same_tree() {
    local ta tb
    ta=$(stat -c %Y "$1") tb=$(stat -c %Y "$2")
    if [ "$ta" != "$tb" ] && [ $((ta - tb)) -le 5 ] && [ $((tb - ta)) -le 5 ]; then
        touch -r "$1" "$2"
    fi
    t_compare "$@"
}

# ------------------------------------------------------------ loop devices

LOOPS=()
cleanup_loops() {
    local l
    for l in "${LOOPS[@]}"; do losetup -d "$l" 2>/dev/null; done
}
trap 'cleanup_loops; _t_cleanup' EXIT

# new_loop IMG -- attach IMG, print the device (the caller records it).
new_loop() { losetup -f --show "$1" 2>/dev/null; }

# node_of DEV DIR/NAME -- a block device node for DEV at DIR/NAME.
node_of() {
    local maj min
    maj=$((16#$(stat -c %t "$1"))) min=$((16#$(stat -c %T "$1")))
    mknod "$2" b "$maj" "$min"
}

SIZE=$((256 * 1024))
HAVE_DEV=0
if [ "$(id -u)" = 0 ] && command -v losetup >/dev/null; then
    head -c $SIZE /dev/urandom >"$T/src.img"
    : >"$T/dst.img" && truncate -s $SIZE "$T/dst.img"
    SRCDEV=$(new_loop "$T/src.img") && LOOPS+=("$SRCDEV")
    DSTDEV=$(new_loop "$T/dst.img") && LOOPS+=("$DSTDEV")
    if [ ${#LOOPS[@]} = 2 ] && mkdir -p "$T/probe" && node_of "$SRCDEV" "$T/probe/n" &&
        cmp -s "$T/probe/n" "$T/src.img"; then
        HAVE_DEV=1
    fi
fi
DEV_WHY="no loop device available here (needs root, losetup and mknod)"

# ----------------------------------------------------------- --copy-devices

# A source tree with a file and a device node for the source loop device.
DSRC=$T/dsrc
copy_devices_cases() {
    mkdir -p "$DSRC" && echo "plain" >"$DSRC/plain" && node_of "$SRCDEV" "$DSRC/disk" || return 1
    local how tag dest
    # name: client, rsync-path, direction
    for how in local_ferry local_rsync push_f2r push_r2f pull_f2r pull_r2f; do
        dest=$T/cd.$how
        mkdir -p "$dest"
        case $how in
        local_ferry) run "cd.$how" "$FERRY" -a --copy-devices "$DSRC/" "$dest/" ;;
        local_rsync) run "cd.$how" "$RSYNC" -a --copy-devices "$DSRC/" "$dest/" ;;
        push_f2r) run "cd.$how" "$FERRY" -e "$RSH" --rsync-path="$RSYNC" -a --copy-devices \
            "$DSRC/" "h:$dest/" ;;
        push_r2f) run "cd.$how" "$RSYNC" -e "$RSH" --rsync-path="$FERRY" -a --copy-devices \
            "$DSRC/" "h:$dest/" ;;
        pull_f2r) run "cd.$how" "$FERRY" -e "$RSH" --rsync-path="$RSYNC" -a --copy-devices \
            "h:$DSRC/" "$dest/" ;;
        pull_r2f) run "cd.$how" "$RSYNC" -e "$RSH" --rsync-path="$FERRY" -a --copy-devices \
            "h:$DSRC/" "$dest/" ;;
        esac
        tag="copy_devices_$how"
        if [ "$(rc_of "cd.$how")" != 0 ]; then
            t_fail "$tag" "exit $(rc_of "cd.$how"): $(tail -n 1 "$T/cd.$how.err")"
        elif [ ! -f "$dest/disk" ] || [ -L "$dest/disk" ] || ! cmp -s "$dest/disk" "$T/src.img"; then
            t_fail "$tag" "disk is not a regular file holding the device's $SIZE bytes"
        elif ! cmp -s "$dest/plain" "$DSRC/plain"; then
            t_fail "$tag" "the plain file differs"
        else
            t_pass "$tag"
        fi
    done
    # Without --copy-devices and without -D a device is skipped; with -D it
    # is a device again (rsync and ferry alike).
    mkdir -p "$T/cd.none.r" "$T/cd.none.f" "$T/cd.D.r" "$T/cd.D.f"
    run cd.none.r "$RSYNC" -rt "$DSRC/" "$T/cd.none.r/"
    run cd.none.f "$FERRY" -rt "$DSRC/" "$T/cd.none.f/"
    same_rc copy_devices_absent_skips cd.none.r cd.none.f 0
    t_check copy_devices_absent_same_tree t_compare "$T/cd.none.r" "$T/cd.none.f"
    run cd.D.r "$RSYNC" -a "$DSRC/" "$T/cd.D.r/"
    run cd.D.f "$FERRY" -a "$DSRC/" "$T/cd.D.f/"
    if [ -b "$T/cd.D.f/disk" ] && [ -b "$T/cd.D.r/disk" ]; then
        t_pass copy_devices_absent_D_keeps_device
    else
        t_fail copy_devices_absent_D_keeps_device "disk is not a block device after -a"
    fi
}

# ---------------------------------------------------------- --write-devices

WSRC=$T/wsrc
# wd_reset DEST -- zero the destination device, put a node for it in DEST.
wd_reset() {
    rm -rf "$1" && mkdir -p "$1" && node_of "$DSTDEV" "$1/disk" &&
        dd if=/dev/zero of="$DSTDEV" bs=64k count=4 status=none conv=fsync
}
# wd_ok TAG DEST LEN -- DEST/disk is still the device and holds WSRC/disk.
wd_ok() {
    local tag=$1 dest=$2
    if [ "$(rc_of "$tag")" != 0 ]; then
        echo "exit $(rc_of "$tag"): $(tail -n 1 "$T/$tag.err")"
    elif [ ! -b "$dest/disk" ]; then
        echo "the device was replaced: $(stat -c %F "$dest/disk")"
    elif ! cmp -s -n "$(stat -c %s "$WSRC/disk")" "$DSTDEV" "$WSRC/disk"; then
        echo "the device does not hold the file's data"
    fi
}
write_devices_cases() {
    mkdir -p "$WSRC" && head -c 100000 /dev/urandom >"$WSRC/disk" && echo "x" >"$WSRC/plain" ||
        return 1
    local how dest why
    for how in local_ferry local_rsync push_f2r push_r2f pull_f2r pull_r2f; do
        dest=$T/wd.$how
        wd_reset "$dest" || return 1
        case $how in
        local_ferry) run "wd.$how" "$FERRY" -a --write-devices "$WSRC/" "$dest/" ;;
        local_rsync) run "wd.$how" "$RSYNC" -a --write-devices "$WSRC/" "$dest/" ;;
        push_f2r) run "wd.$how" "$FERRY" -e "$RSH" --rsync-path="$RSYNC" -a --write-devices \
            "$WSRC/" "h:$dest/" ;;
        push_r2f) run "wd.$how" "$RSYNC" -e "$RSH" --rsync-path="$FERRY" -a --write-devices \
            "$WSRC/" "h:$dest/" ;;
        pull_f2r) run "wd.$how" "$FERRY" -e "$RSH" --rsync-path="$RSYNC" -a --write-devices \
            "h:$WSRC/" "$dest/" ;;
        pull_r2f) run "wd.$how" "$RSYNC" -e "$RSH" --rsync-path="$FERRY" -a --write-devices \
            "h:$WSRC/" "$dest/" ;;
        esac
        why=$(wd_ok "wd.$how" "$dest")
        if [ -z "$why" ]; then t_pass "write_devices_$how"; else t_fail "write_devices_$how" "$why"; fi
    done
    # A delta update into the device: change 4 KiB in the middle, send the
    # difference (not whole) into the device the last case filled.
    dd if=/dev/urandom of="$WSRC/disk" bs=4096 count=1 seek=10 conv=notrunc status=none
    touch -d @1700000000 "$WSRC/disk"
    for how in push_f2r push_r2f; do
        dest=$T/wd.pull_r2f
        case $how in
        push_f2r) run "wd.delta.$how" "$FERRY" -e "$RSH" --rsync-path="$RSYNC" -a --no-W \
            --write-devices --stats "$WSRC/" "h:$dest/" ;;
        push_r2f) run "wd.delta.$how" "$RSYNC" -e "$RSH" --rsync-path="$FERRY" -a --no-W \
            --write-devices --stats "$WSRC/" "h:$dest/" ;;
        esac
        why=$(wd_ok "wd.delta.$how" "$dest")
        if [ -z "$why" ]; then t_pass "write_devices_delta_$how"; else t_fail "write_devices_delta_$how" "$why"; fi
        dd if=/dev/urandom of="$WSRC/disk" bs=4096 count=1 seek=3 conv=notrunc status=none
        touch -d @1700000100 "$WSRC/disk"
    done
    # Without --write-devices the device is replaced by a regular file.
    wd_reset "$T/wd.no.r" && wd_reset "$T/wd.no.f" || return 1
    run wd.no.r "$RSYNC" -a "$WSRC/" "$T/wd.no.r/"
    run wd.no.f "$FERRY" -a "$WSRC/" "$T/wd.no.f/"
    same_rc write_devices_absent_replaces wd.no.r wd.no.f 0
    t_check write_devices_absent_same_tree t_compare "$T/wd.no.r" "$T/wd.no.f"
}

# -------------------------------------------------- daemons and refusals

# daemon_case NAME DAEMON(rsync|ferry) REFUSE OPT DIR -- a client of the
# other kind pulls (--copy-devices) or pushes (--write-devices); real rsync
# is the reference client against the same daemon.
daemon_cases() {
    local kind refuse port
    for kind in rsync ferry; do
        for refuse in "" "!copy-devices !write-devices"; do
            local body="[dev]
path = $T
read only = no
refuse options = $refuse"
            local tag=daemon_${kind}_default
            [ -n "$refuse" ] && tag=daemon_${kind}_accepted
            if [ $kind = rsync ]; then
                t_rsyncd_start "d$kind${#refuse}" "$body" || { t_fail "$tag" "rsync daemon did not start"; continue; }
                port=$RSYNCD_PORT
            else
                t_ferryd_start "d$kind${#refuse}" "$body" || { t_fail "$tag" "ferry daemon did not start"; continue; }
                port=$FERRYD_PORT
            fi
            local client=$FERRY ref=$RSYNC
            [ $kind = ferry ] && client=$RSYNC ref=$RSYNC
            mkdir -p "$T/$tag.cd.ref" "$T/$tag.cd.cl"
            run "$tag.cd.ref" "$ref" -a --copy-devices --port="$port" "127.0.0.1::dev/dsrc/" "$T/$tag.cd.ref/"
            run "$tag.cd.cl" "$client" -a --copy-devices --port="$port" "127.0.0.1::dev/dsrc/" "$T/$tag.cd.cl/"
            if [ -n "$refuse" ]; then
                same_rc "${tag}_copy_devices" "$tag.cd.ref" "$tag.cd.cl" 0
                t_check "${tag}_copy_devices_data" cmp "$T/$tag.cd.cl/disk" "$T/src.img"
            else
                same_rc "${tag}_copy_devices_refused" "$tag.cd.ref" "$tag.cd.cl"
                if [ "$(rc_of "$tag.cd.cl")" = 0 ] ||
                    ! grep -q "refuse --copy-devices" "$T/$tag.cd.cl.err"; then
                    t_fail "${tag}_copy_devices_refused_msg" "no refusal message"
                else
                    t_pass "${tag}_copy_devices_refused_msg"
                fi
            fi
            wd_reset "$T/wdd.$tag" || return 1
            run "$tag.wd.cl" "$client" -a --write-devices --port="$port" "$WSRC/" "127.0.0.1::dev/wdd.$tag/"
            if [ -n "$refuse" ]; then
                local why
                why=$(wd_ok "$tag.wd.cl" "$T/wdd.$tag")
                if [ -z "$why" ]; then t_pass "${tag}_write_devices"; else t_fail "${tag}_write_devices" "$why"; fi
            else
                wd_reset "$T/wdd.$tag.ref" || return 1
                run "$tag.wd.ref" "$ref" -a --write-devices --port="$port" "$WSRC/" "127.0.0.1::dev/wdd.$tag.ref/"
                same_rc "${tag}_write_devices_refused" "$tag.wd.ref" "$tag.wd.cl"
                if [ -b "$T/wdd.$tag/disk" ] && [ "$(rc_of "$tag.wd.cl")" != 0 ]; then
                    t_pass "${tag}_write_devices_untouched"
                else
                    t_fail "${tag}_write_devices_untouched" "exit $(rc_of "$tag.wd.cl"), or the device was replaced"
                fi
            fi
            if [ $kind = rsync ]; then t_rsyncd_stop; else t_ferryd_stop; fi
        done
    done
}

if [ $HAVE_DEV = 1 ]; then
    copy_devices_cases || t_fail copy_devices_setup "could not build the device tree"
    write_devices_cases || t_fail write_devices_setup "could not set up the device cases"
    daemon_cases
else
    t_skip copy_devices "$DEV_WHY"
    t_skip write_devices "$DEV_WHY"
fi

# ---------------------------------------------------------------- --copy-as

copy_as_tree() {
    mkdir -p "$1/sub" "$1/locked" && echo "open" >"$1/a" && echo "deep" >"$1/sub/b" &&
        echo "secret" >"$1/sub/private" && chmod 0600 "$1/sub/private" &&
        echo "inside" >"$1/locked/c" && chmod 0700 "$1/locked" && chmod 0755 "$1" "$1/sub"
}
# owners DIR -- "name user" lines for everything below DIR.
owners() { (cd "$1" && find . -mindepth 1 -printf '%p %u\n' | sort); }

copy_as_cases() {
    local CA=$T/ca
    mkdir -p "$CA" && chmod 0755 "$T" "$CA" && copy_as_tree "$CA/src" || return 1
    local which
    for which in r f; do mkdir -p "$CA/local.$which" "$CA/push.$which" && chmod 0777 "$CA/local.$which" "$CA/push.$which"; done
    # The pushes' destinations belong to nobody, so the switched server
    # may set their times too.
    chown nobody "$CA/push.r" "$CA/push.f" || return 1
    run ca.local.r "$RSYNC" -rt --copy-as=nobody "$CA/src/" "$CA/local.r/"
    run ca.local.f "$FERRY" -rt --copy-as=nobody "$CA/src/" "$CA/local.f/"
    same_rc copy_as_local_exit ca.local.r ca.local.f 23
    if grep -q 'send_files failed to open "[^"]*/sub/private": Permission denied' "$T/ca.local.f.err"; then
        t_pass copy_as_local_unreadable_msg
    else
        t_fail copy_as_local_unreadable_msg "no 'Permission denied' for sub/private"
    fi
    if [ "$(owners "$CA/local.r")" = "$(owners "$CA/local.f")" ] &&
        [ "$(stat -c %U "$CA/local.f/a")" = nobody ]; then
        t_pass copy_as_local_owned_by_nobody
    else
        t_fail copy_as_local_owned_by_nobody "$(owners "$CA/local.f" | tr '\n' ' ')"
    fi
    t_check copy_as_local_same_tree same_tree "$CA/local.r" "$CA/local.f"

    # The server side switches with -M--copy-as (a push over the shell).
    run ca.push.r "$FERRY" -e "$RSH" --rsync-path="$RSYNC" -rt -M--copy-as=nobody "$CA/src/" "h:$CA/push.r/"
    run ca.push.f "$RSYNC" -e "$RSH" --rsync-path="$FERRY" -rt -M--copy-as=nobody "$CA/src/" "h:$CA/push.f/"
    same_rc copy_as_server_exit ca.push.r ca.push.f 0
    if [ "$(owners "$CA/push.r")" = "$(owners "$CA/push.f")" ] &&
        [ "$(stat -c %U "$CA/push.f/sub/private")" = nobody ]; then
        t_pass copy_as_server_owned_by_nobody
    else
        t_fail copy_as_server_owned_by_nobody "$(owners "$CA/push.f" | tr '\n' ' ')"
    fi

    # Unknown user or group, and a user that cannot switch: exit 1.
    run ca.nouser.r "$RSYNC" -rt --copy-as=no_such_user_92 "$CA/src/" "$CA/x/"
    run ca.nouser.f "$FERRY" -rt --copy-as=no_such_user_92 "$CA/src/" "$CA/x/"
    same_rc copy_as_unknown_user ca.nouser.r ca.nouser.f 1
    if grep -q "Invalid copy-as user: no_such_user_92" "$T/ca.nouser.f.err"; then
        t_pass copy_as_unknown_user_msg
    else
        t_fail copy_as_unknown_user_msg "message missing"
    fi
    run ca.nogroup.r "$RSYNC" -rt --copy-as=nobody:no_such_group_92 "$CA/src/" "$CA/x/"
    run ca.nogroup.f "$FERRY" -rt --copy-as=nobody:no_such_group_92 "$CA/src/" "$CA/x/"
    same_rc copy_as_unknown_group ca.nogroup.r ca.nogroup.f 1
    # nobody runs its own copy of ferry: the clone may be out of its reach.
    if t_runas_nobody; then
        run ca.nonroot.r "${AS_NOBODY[@]}" \
            "$RSYNC" -rt --copy-as=root "$CA/src/" "$CA/local.r/y/"
        run ca.nonroot.f "${AS_NOBODY[@]}" \
            "$FERRY_NOBODY" -rt --copy-as=root "$CA/src/" "$CA/local.f/y/"
        same_rc copy_as_not_root ca.nonroot.r ca.nonroot.f 1
        if grep -q "setgid failed: Operation not permitted" "$T/ca.nonroot.f.err"; then
            t_pass copy_as_not_root_msg
        else
            t_fail copy_as_not_root_msg "no 'setgid failed'"
        fi
    else
        t_skip copy_as_not_root "$T_SKIP_REASON"
    fi
}

if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
    copy_as_cases || t_fail copy_as_setup "could not build the tree"
else
    t_skip copy_as "needs root and a 'nobody' user"
fi

# ------------------------------------------------------------ --trust-sender


EVIL=$_T_LIB_DIR/evil_daemon.py
# evil_start SCENARIO -- sets EVIL_PORT, EVIL_PID.
evil_start() {
    local _
    for _ in 1 2 3; do
        EVIL_PORT=$(t_free_port) || return 1
        "$PYTHON" "$EVIL" "$EVIL_PORT" "$1" "$T/outside" >>"$T/evil.$1.log" 2>&1 </dev/null &
        EVIL_PID=$!
        t_track_pid "$EVIL_PID"
        t_wait_port "$EVIL_PORT" 10 "$EVIL_PID" && return 0
        _t_kill_pid "$EVIL_PID"
        _t_untrack_pid "$EVIL_PID"
    done
    return 1
}
evil_stop() {
    _t_kill_pid "$EVIL_PID"
    _t_untrack_pid "$EVIL_PID"
}

# evil_pair NAME SCENARIO WANT_RC PATTERN ARGS... -- rsync then ferry pull
# ARGS from the scripted daemon into fresh dirs; same exit (WANT_RC), and
# ferry's stderr matches PATTERN when WANT_RC is not 0.
evil_pair() {
    local name=$1 sc=$2 want=$3 pat=$4 c
    shift 4
    for c in rsync ferry; do
        rm -rf "$T/ev.$name.$c" && mkdir -p "$T/ev.$name.$c"
        local prog=$RSYNC
        [ $c = ferry ] && prog=$FERRY
        run "ev.$name.$c" "$prog" -rlt --port="$EVIL_PORT" "$@" "$T/ev.$name.$c/"
    done
    same_rc "$name" "ev.$name.rsync" "ev.$name.ferry" "$want"
    if [ "$want" != 0 ] && ! grep -qE -- "$pat" "$T/ev.$name.ferry.err"; then
        t_fail "${name}_msg" "stderr does not match /$pat/"
    elif [ "$want" = 0 ]; then
        # shellcheck disable=SC2086 # EV_CMP: treecmp options, word-split
        t_check "${name}_same_tree" same_tree "$T/ev.$name.rsync" "$T/ev.$name.ferry" ${EV_CMP:-}
    else
        t_pass "${name}_msg"
    fi
}

trust_sender_evil() {
    mkdir -p "$T/outside"
    if ! evil_start valid; then
        t_fail trust_sender_evil "scripted daemon did not start"
        return
    fi
    # The daemon sends "file" whatever we ask for.
    evil_pair unrequested_refused valid 4 "rejecting unrequested file-list name: file" \
        127.0.0.1::mod/wanted
    evil_pair unrequested_trusted valid 0 "" --trust-sender 127.0.0.1::mod/wanted
    # (The daemon lists "." too, which was not asked for: rsync 3.5.0 leaves
    # its time alone, ferry sets it; the dir times are not compared here.)
    EV_CMP=--no-dir-times evil_pair requested_ok valid 0 "" 127.0.0.1::mod/file
    EV_CMP=--no-dir-times evil_pair requested_relative_ok valid 0 "" -R 127.0.0.1::mod/./file
    evil_pair excluded_refused valid 4 "rejecting excluded file-list name: file" \
        --exclude=file 127.0.0.1::mod/
    evil_pair excluded_trusted valid 0 "" --trust-sender --exclude=file 127.0.0.1::mod/
    evil_pair excluded_dir_merge_trusted valid 0 "" -F --exclude=file 127.0.0.1::mod/
    # The daemon flags "." as a content dir though only "file" was asked
    # for: --delete must not sweep the destination (rsync 3.5.0 downgrades
    # it to an implied dir), unless the sender is trusted.
    local c trust keep_r keep_f
    for trust in "" --trust-sender; do
        for c in rsync ferry; do
            rm -rf "$T/del.$c" && mkdir -p "$T/del.$c" && echo keep >"$T/del.$c/keep"
            local prog=$RSYNC
            [ $c = ferry ] && prog=$FERRY
            run "del.$c" "$prog" -rlt --delete $trust --port="$EVIL_PORT" 127.0.0.1::mod/file "$T/del.$c/"
        done
        keep_r=$([ -e "$T/del.rsync/keep" ] && echo kept || echo deleted)
        keep_f=$([ -e "$T/del.ferry/keep" ] && echo kept || echo deleted)
        if [ "$keep_r" = "$keep_f" ] && [ "$keep_f" = "$([ -z "$trust" ] && echo kept || echo deleted)" ]; then
            t_pass "delete_scope_root${trust:+_trusted}"
        else
            t_fail "delete_scope_root${trust:+_trusted}" "rsync: $keep_r, ferry: $keep_f"
        fi
    done
    evil_stop
    # --trust-sender never lets a dangerous name through.
    local sc
    for sc in dotdot absolute missing_parent symlink_dir; do
        if ! evil_start "$sc"; then
            t_fail "trust_sender_$sc" "scripted daemon did not start"
            continue
        fi
        evil_pair "trust_sender_still_refuses_$sc" "$sc" "" "" --trust-sender 127.0.0.1::mod/
        evil_stop
        if [ -n "$(ls -A "$T/outside")" ]; then
            t_fail "trust_sender_${sc}_outside" "something was written outside: $(ls -A "$T/outside")"
        else
            t_pass "trust_sender_${sc}_outside"
        fi
        if [ "$(rc_of "ev.trust_sender_still_refuses_$sc.ferry")" = 0 ] && [ "$sc" != symlink_dir ]; then
            t_fail "trust_sender_${sc}_refused" "ferry accepted it"
        fi
    done
}

# Ordinary pulls from real rsync (over the shell and from its daemon) must
# pass the checks, with and without --trust-sender, and give rsync's tree.
trust_sender_real() {
    local TS=$T/ts
    mkdir -p "$TS/src/sub/deep" "$TS/src/other" "$TS/src/we[ir]d" &&
        echo 1 >"$TS/src/a1" && echo 2 >"$TS/src/a2" && echo 3 >"$TS/src/sub/x" &&
        echo 4 >"$TS/src/sub/deep/y" && echo 5 >"$TS/src/we[ir]d/z" &&
        echo 6 >"$TS/src/other/o.o" && echo 7 >"$TS/src/back\\slash" || return 1
    # "/./": -R recreates the path from there on, not from /tmp, whose
    # time changes all along
    local n=0 S="h:$TS/./src" args trust
    local -a cases=(
        "-a|$S" "-a|$S/" "-a|$S/sub" "-aR|h:$TS/src/./sub" "-aR|$S/sub/deep" "-a|$S/a*"
        "-a|$S/we[ir]d" "-a|$S//sub/" "-dt|$S/" "-a|$S/a1 $S/sub" "-a --exclude=*.o|$S/"
        "-a -F|$S/" "-a -C|$S/" "-a|$S/back\\slash" "-aR|$S/we[ir]d/z"
        "-aR --no-implied-dirs|$S/sub/deep" "-a|$S/." "-a|$S/sub/../a1" "-aR|$S/./s*/deep"
    )
    for args in "${cases[@]}"; do
        n=$((n + 1))
        for trust in "" --trust-sender; do
            local opts=${args%%|*} srcs=${args#*|} tag="ts$n${trust:+t}" c prog
            for c in rsync ferry; do
                prog=$RSYNC
                [ $c = ferry ] && prog=$FERRY
                mkdir -p "$T/$tag.$c"
                # shellcheck disable=SC2086 # the case lists words on purpose
                (cd "$T/$tag.$c" && run "$tag.$c" "$prog" -e "$RSH" --rsync-path="$RSYNC" \
                    $trust $opts $srcs .)
            done
            # --no-implied-dirs makes the missing parents plain, dated now
            local cmp_opts=()
            [[ $opts == *no-implied-dirs* ]] && cmp_opts=(--no-dir-times)
            if [ "$(rc_of "$tag.rsync")" != "$(rc_of "$tag.ferry")" ]; then
                t_fail "trust_sender_pull_$n${trust:+_trusted}" "rsync exit $(rc_of "$tag.rsync"), ferry exit $(rc_of "$tag.ferry") for $opts $srcs: $(tail -n 1 "$T/$tag.ferry.err")"
            elif ! same_tree "$T/$tag.rsync" "$T/$tag.ferry" "${cmp_opts[@]}" >&2; then
                t_fail "trust_sender_pull_$n${trust:+_trusted}" "trees differ for $opts $srcs"
            else
                t_pass "trust_sender_pull_$n${trust:+_trusted}"
            fi
        done
    done
    # A real rsync daemon, module paths; and real rsync pulling from a
    # ferry daemon (rsync checks the names ferry sends).
    local body="[ts]
path = $TS/src
read only = yes"
    t_rsyncd_start tsr "$body" || { t_fail trust_sender_daemon "rsync daemon did not start"; return; }
    t_ferryd_start tsf "$body" || { t_fail trust_sender_daemon "ferry daemon did not start"; return; }
    local spec port kind
    n=0
    for spec in "ts/" "ts" "ts/sub" "ts/sub/" "ts/./sub/deep" "ts/a*" "ts/we[ir]d"; do
        n=$((n + 1))
        for kind in rsyncd ferryd; do
            # a ferry daemon does not expand wildcards in module paths yet
            [ $kind = ferryd ] && [ "$spec" = "ts/a*" ] && continue
            port=$RSYNCD_PORT
            local client=$FERRY
            [ $kind = ferryd ] && port=$FERRYD_PORT client=$RSYNC
            local tag="tsd$n$kind"
            mkdir -p "$T/$tag.ref" "$T/$tag.cl"
            run "$tag.ref" "$RSYNC" -aR --port="$RSYNCD_PORT" "127.0.0.1::$spec" "$T/$tag.ref/"
            run "$tag.cl" "$client" -aR --port="$port" "127.0.0.1::$spec" "$T/$tag.cl/"
            if [ "$(rc_of "$tag.ref")" != "$(rc_of "$tag.cl")" ]; then
                t_fail "trust_sender_${kind}_$n" "exit $(rc_of "$tag.ref") vs $(rc_of "$tag.cl") for $spec: $(tail -n 1 "$T/$tag.cl.err")"
            elif ! same_tree "$T/$tag.ref" "$T/$tag.cl" >&2; then
                t_fail "trust_sender_${kind}_$n" "trees differ for $spec"
            else
                t_pass "trust_sender_${kind}_$n"
            fi
        done
    done
}

trust_sender_evil
trust_sender_real || t_fail trust_sender_real_setup "could not build the tree"

t_done
