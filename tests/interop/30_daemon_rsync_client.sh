#!/bin/bash
# ferry as the daemon, REAL rsync as the client: module listing (byte for
# byte what a real rsync daemon with the same config prints), pulls and
# pushes with the common option sets and every protocol 27..32, and the
# daemon's access rules -- read only, write only, auth users, hosts
# allow/deny, max connections, exclude, uid, use chroot -- each checked
# for its effect and, for refusals, for the exit code and message a real
# rsync daemon gives in the same case. Last, config files with mistakes.
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON"
t_setup

if [ ! -x "$FERRY" ]; then
    t_skip "$(_t_script_name)" "ferry binary not found: $FERRY"
    t_done
fi

IS_ROOT=0
[ "$(id -u)" = 0 ] && IS_ROOT=1
# Root daemons switch to the module's uid (nobody) for [nobody], which must
# be able to reach its module below $T (mktemp makes $T 0700).
[ "$IS_ROOT" = 1 ] && chmod 0711 "$T"

SRC=$T/src   # the standard tree, served read-only
UP=$T/up     # push target (read only = no)
RO=$T/ro     # read-only module: must stay empty
AUP=$T/aup   # push target behind auth
NB=$T/nb     # uid = nobody push target
HL=$T/hl     # hard links between plain files
t_check mktree t_mktree "$SRC" || t_done
mkdir -p "$UP" "$RO" "$AUP" "$NB"

# mk_hltree DIR -- one directory of 20 plain files (0644, one mtime) mixed
# with 10 links to one inode (0600, another mtime). From protocol 30 on a
# link after the first is sent abbreviated (the receiver copies the first
# one's attributes), and the entry after it may then be sent as "same
# mode/mtime as the previous one": this catches a sender whose idea of the
# previous entry differs from the receiver's. Whatever the readdir order,
# some link sits between two plain files.
mk_hltree() {
    local d=$1/d i
    mkdir -p "$d" || return 1
    for i in $(seq -w 0 19); do echo "plain $i" >"$d/n$i"; done
    echo "linked" >"$d/h00" && chmod 0600 "$d/h00"
    for i in $(seq 1 9); do ln "$d/h00" "$d/h0$i" || return 1; done
    chmod 0644 "$d"/n* && touch -d @1500000000 "$d"/n* && touch -d @1600000000 "$d/h00" &&
        touch -d @1500000000 "$d" "$1"
}
t_check mk_hltree mk_hltree "$HL" || t_done

echo "Welcome to the ferry daemon test" >"$T/motd"
printf '  second motd line\n' >>"$T/motd"
(umask 077 && printf 'alice:apw\nbob:bpw\n' >"$T/secrets")

NOBODY_MOD=""
NOGROUP=nogroup
getent group nogroup >/dev/null || NOGROUP=nobody
if [ "$IS_ROOT" = 1 ] && id nobody >/dev/null 2>&1 && getent group "$NOGROUP" >/dev/null; then
    chown "nobody:$NOGROUP" "$NB"
    NOBODY_MOD="
[nobody]
    path = $NB
    read only = no
    uid = nobody
    gid = $NOGROUP"
fi
CHROOT_MOD=""
if [ "$IS_ROOT" = 1 ]; then
    CHROOT_MOD="
[jail]
    path = $SRC
    comment = chrooted
    use chroot = yes"
fi

MODULES="
motd file = $T/motd
[pub]
    path = $SRC
    comment = public test module
    read only = yes
[hidden]
    path = $SRC
    list = no
[hl]
    path = $HL
[nocomment]
    path = $SRC
[a_module_with_a_rather_long_name]
    path = $SRC
    comment = long name, comment with  two  blanks
[up]
    path = $UP
    comment = writable
    read only = no
[ro]
    path = $RO
[wo]
    path = $UP
    read only = no
    write only = yes
[auth]
    path = $AUP
    read only = no
    auth users = alice, bob:ro
    secrets file = $T/secrets
[deny]
    path = $SRC
    hosts deny = 127.0.0.1
[denyhidden]
    path = $SRC
    list = no
    hosts deny = 127.0.0.1
[allow10]
    path = $SRC
    hosts allow = 10.0.0.0/8
[one]
    path = $SRC
    max connections = 1
[excl]
    path = $SRC
    exclude = *.bin secret/
$NOBODY_MOD
$CHROOT_MOD
"

if ! t_ferryd_start fd30 "$MODULES"; then
    t_fail ferryd_start "ferry daemon did not start"
    t_done
fi
t_pass ferryd_start
FURL=rsync://127.0.0.1:$FERRYD_PORT
# The reference: a real rsync daemon with the very same configuration.
if ! t_rsyncd_start rd30 "$MODULES"; then
    t_fail rsyncd_start "real rsync daemon did not start"
    t_done
fi
RURL=rsync://127.0.0.1:$RSYNCD_PORT

# ------------------------------------------------------------------ helpers

CLEAN_ENV=(env -u RSYNC_PASSWORD -u USER -u LOGNAME -u RSYNC_PORT)

# refused RUN RC TEXT -- the run exited RC and printed TEXT.
refused() {
    local rc
    rc=$(cat "$1.rc")
    if [ "$rc" != "$2" ]; then
        echo "exit $rc, expected $2"
        show_run "$1"
        return 1
    fi
    if ! grep -qF -- "$3" "$1.out" "$1.err"; then
        echo "no \"$3\" in the output"
        show_run "$1"
        return 1
    fi
}

# ok_compare RUN A B [treecmp opts] -- the run exited 0 and A equals B.
ok_compare() {
    local r=$1
    shift
    ok "$r" && t_compare "$@"
}

# pull NAME ARGS... -- real rsync pulls with ARGS into $T/NAME/ (run files
# $T/NAME.*); ARGS end with the source URL.
pull() {
    local name=$1
    shift
    run "$T/$name" "$RSYNC" "$@" "$T/$name/"
}

# copy_src DIR -- a fresh local copy of the source tree.
copy_src() {
    rm -rf "$1" && "$RSYNC" -aH "$SRC/" "$1/"
}

# flip_byte FILE OFFSET -- same size, same mtime, one bit different.
flip_byte() {
    "$PYTHON" -c 'import os, sys
p, off = sys.argv[1], int(sys.argv[2]); st = os.stat(p)
with open(p, "r+b") as f:
    f.seek(off); b = f.read(1); f.seek(off); f.write(bytes([b[0] ^ 1]))
os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))' "$1" "$2"
}

# stat_bytes RUN FIELD -- "Literal data" / "Matched data" from --stats.
stat_bytes() {
    sed -n "s/^$2: \([0-9,]*\) bytes.*/\1/p" "$1.out" | tr -d , | head -n 1
}

# ------------------------------------------------------------ module list

# listing WHICH URL -- rsync's module listing of a daemon (motd included).
listing_same() {
    run "$T/list_ferry" "$RSYNC" "$FURL/"
    run "$T/list_rsync" "$RSYNC" "$RURL/"
    ok "$T/list_ferry" && ok "$T/list_rsync" || return 1
    echo "--- ferry's listing:"
    cat "$T/list_ferry.out"
    diff "$T/list_rsync.out" "$T/list_ferry.out"
}
t_check list_identical listing_same

# Modules the client may not use are still listed unless "list = no", as
# rsync does: hosts allow/deny do not filter the listing.
hidden_unlisted() {
    ! grep -qE '^(hidden|denyhidden)[[:space:]]' "$T/list_ferry.out" &&
        grep -q '^pub ' "$T/list_ferry.out"
}
t_check list_hides_unlisted hidden_unlisted

motd_shown() {
    grep -qF "Welcome to the ferry daemon test" "$T/list_ferry.out" &&
        grep -qF "second motd line" "$T/list_ferry.out" || return 1
    run "$T/motd_pull" "$RSYNC" -a "$FURL/pub/one" "$T/motd_pull.dst"
    ok "$T/motd_pull" && grep -qF "Welcome to the ferry daemon test" "$T/motd_pull.out"
}
t_check motd_printed motd_shown

# ------------------------------------------------------------------ pulls

pull pull_a -a "$FURL/pub/"
t_check pull_a ok_compare "$T/pull_a" "$SRC" "$T/pull_a" --nsec --no-hardlinks
pull pull_aH -aH "$FURL/pub/"
t_check pull_aH ok_compare "$T/pull_aH" "$SRC" "$T/pull_aH" --nsec
pull pull_hidden -aH "$FURL/hidden/"
t_check pull_hidden_by_name ok_compare "$T/pull_hidden" "$SRC" "$T/pull_hidden" --nsec

for p in 29 30 31 32; do
    pull "pull_hl_p$p" -aH --protocol="$p" "$FURL/hl/"
    t_check "pull_aH_hlink_attrs_p$p" ok_compare "$T/pull_hl_p$p" "$HL" "$T/pull_hl_p$p" --nsec
done

# --delete: extra files and a whole extra directory go; the rest is synced.
prep_delete() {
    copy_src "$T/pull_delete" || return 1
    echo extra >"$T/pull_delete/extra.txt"
    mkdir -p "$T/pull_delete/extradir/deeper" && echo x >"$T/pull_delete/extradir/deeper/f"
    echo extra >"$T/pull_delete/sub/extra2"
    rm -f "$T/pull_delete/small.txt"
}
check_pull_delete() {
    prep_delete || return 1
    pull pull_delete -aH --delete "$FURL/pub/"
    ok_compare "$T/pull_delete" "$SRC" "$T/pull_delete" --nsec
}
t_check pull_delete check_pull_delete

# -c: a file that differs only in content (same size and mtime) is fixed.
check_pull_c() {
    copy_src "$T/pull_c" || return 1
    flip_byte "$T/pull_c/big.bin" 4242 || return 1
    pull pull_c_noc -aH "$FURL/pub/"
    ok "$T/pull_c_noc" || return 1
    # Rename the run, not the dest: pull() syncs into $T/NAME/.
    run "$T/pull_c" "$RSYNC" -aH -c "$FURL/pub/" "$T/pull_c/"
    ok_compare "$T/pull_c" "$SRC" "$T/pull_c" --nsec
}
t_check pull_checksum check_pull_c

for p in 27 28 29 30 31 32; do
    cmp_opts=(--no-hardlinks)
    # Nanosecond mtimes travel only from protocol 31 on.
    [ "$p" -ge 31 ] && cmp_opts+=(--nsec)
    pull "pull_p$p" -a --protocol="$p" "$FURL/pub/"
    t_check "pull_protocol_$p" ok_compare "$T/pull_p$p" "$SRC" "$T/pull_p$p" "${cmp_opts[@]}"
done

# Every checksum: -c finds a flipped byte with it, and the block search
# with it reuses the rest of the file.
check_cc() {
    local cc=$1 d=$T/pull_cc_$1 matched
    copy_src "$d" || return 1
    flip_byte "$d/sub/huge.bin" 3000000 || return 1
    run "$d" "$RSYNC" -aH -c --checksum-choice="$cc" --stats "$FURL/pub/" "$d/"
    ok_compare "$d" "$SRC" "$d" --nsec || return 1
    matched=$(stat_bytes "$d" "Matched data")
    echo "matched data with $cc: $matched"
    [ "${matched:-0}" -gt 4000000 ]
}
for cc in xxh128 xxh3 xxh64 md5 md4 sha1; do
    t_check "pull_cc_$cc" check_cc "$cc"
done

# ------------------------------------------------------------------ pushes

run "$T/push_a" "$RSYNC" -a "$SRC/" "$FURL/up/a/"
t_check push_a ok_compare "$T/push_a" "$SRC" "$UP/a" --nsec --no-hardlinks
run "$T/push_aH" "$RSYNC" -aH "$SRC/" "$FURL/up/h/"
t_check push_aH ok_compare "$T/push_aH" "$SRC" "$UP/h" --nsec

run "$T/push_hl" "$RSYNC" -aH "$HL/" "$FURL/up/hl/"
t_check push_aH_hlink_attrs ok_compare "$T/push_hl" "$HL" "$UP/hl" --nsec

check_push_delete() {
    echo extra >"$UP/h/extra.txt"
    mkdir -p "$UP/h/extradir/deeper" && echo x >"$UP/h/extradir/deeper/f"
    echo extra >"$UP/h/sub/dir/extra2"
    run "$T/push_delete" "$RSYNC" -aH --delete "$SRC/" "$FURL/up/h/"
    ok_compare "$T/push_delete" "$SRC" "$UP/h" --nsec || return 1
    [ ! -e "$UP/h/extra.txt" ] && [ ! -e "$UP/h/extradir" ]
}
t_check push_delete check_push_delete

# Delta: 16 MiB pushed, 1% of it rewritten in 16 spread-out pieces, pushed
# again; the literal data must be a small part of the file.
DELTA=$T/delta
check_push_delta() {
    local i lit matched
    mkdir -p "$DELTA" && head -c $((16 * 1048576)) /dev/urandom >"$DELTA/big" || return 1
    # An old dir mtime: a receiver that compares whole seconds only (real
    # rsync) would not re-set one from this very second after writing.
    touch -d @1600000000 "$DELTA/big" "$DELTA"
    run "$T/delta1" "$RSYNC" -a "$DELTA/" "$FURL/up/delta/"
    ok_compare "$T/delta1" "$DELTA" "$UP/delta" --nsec || return 1
    for i in $(seq 0 15); do
        dd if=/dev/urandom of="$DELTA/big" bs=10240 count=1 seek=$((i * 102 + 7)) \
            conv=notrunc status=none || return 1
    done
    touch -d @1600003600 "$DELTA/big"
    run "$T/delta2" "$RSYNC" -a --stats "$DELTA/" "$FURL/up/delta/"
    ok_compare "$T/delta2" "$DELTA" "$UP/delta" --nsec || return 1
    lit=$(stat_bytes "$T/delta2" "Literal data")
    matched=$(stat_bytes "$T/delta2" "Matched data")
    echo "literal $lit matched $matched"
    [ -n "$lit" ] && [ "$lit" -gt 0 ] && [ "$lit" -lt $((16 * 1048576 / 20)) ] &&
        [ "${matched:-0}" -gt $((15 * 1048576)) ]
}
t_check push_delta check_push_delta

# ------------------------------------------------- refusals, vs real rsyncd

# same_as_rsyncd NAME RC TEXT CMD-ARGS... -- "@PORT@" in the arguments is
# replaced by each daemon's port; both must exit RC and print TEXT.
same_as_rsyncd() {
    local name=$1 rc=$2 text=$3 side port a args
    shift 3
    for side in rsync ferry; do
        port=$RSYNCD_PORT
        [ "$side" = ferry ] && port=$FERRYD_PORT
        args=()
        for a in "$@"; do args+=("${a//@PORT@/$port}"); done
        run "$T/$name.$side" "${args[@]}"
        echo "--- $side:"
        refused "$T/$name.$side" "$rc" "$text" || return 1
    done
}

t_check push_read_only same_as_rsyncd ro 1 "module is read only" \
    "$RSYNC" -a "$SRC/" "rsync://127.0.0.1:@PORT@/ro/"
ro_untouched() { [ -z "$(ls -A "$RO")" ]; }
t_check push_read_only_untouched ro_untouched
t_check pull_write_only same_as_rsyncd wo 1 "module is write only" \
    "$RSYNC" -a "rsync://127.0.0.1:@PORT@/wo/" "$T/wo_dst/"
t_check unknown_module same_as_rsyncd nosuch 5 "@ERROR: Unknown module 'nosuch'" \
    "$RSYNC" -a "rsync://127.0.0.1:@PORT@/nosuch/" "$T/nosuch_dst/"
t_check hosts_deny same_as_rsyncd deny 5 "@ERROR: access denied to deny from" \
    "$RSYNC" -a "rsync://127.0.0.1:@PORT@/deny/" "$T/deny_dst/"
t_check hosts_deny_unlisted same_as_rsyncd denyhidden 5 "@ERROR: Unknown module 'denyhidden'" \
    "$RSYNC" -a "rsync://127.0.0.1:@PORT@/denyhidden/" "$T/deny_dst/"
t_check hosts_allow same_as_rsyncd allow10 5 "@ERROR: access denied to allow10 from" \
    "$RSYNC" -a "rsync://127.0.0.1:@PORT@/allow10/" "$T/allow_dst/"
nothing_leaked() { [ ! -e "$T/wo_dst" ] || [ -z "$(ls -A "$T/wo_dst")" ]; }
t_check refused_pulls_copy_nothing nothing_leaked

# ------------------------------------------------------------------- auth

auth_pull_ok() {
    run "$T/auth_ok" env RSYNC_PASSWORD=apw "$RSYNC" -aH "$SRC/" \
        "rsync://alice@127.0.0.1:$FERRYD_PORT/auth/"
    ok_compare "$T/auth_ok" "$SRC" "$AUP" --nsec || return 1
    run "$T/auth_pull" env RSYNC_PASSWORD=apw "$RSYNC" -aH \
        "rsync://alice@127.0.0.1:$FERRYD_PORT/auth/" "$T/auth_pull/"
    ok_compare "$T/auth_pull" "$SRC" "$T/auth_pull" --nsec
}
t_check auth_right_password auth_pull_ok
t_check auth_wrong_password same_as_rsyncd authbad 5 "@ERROR: auth failed on module auth" \
    env RSYNC_PASSWORD=wrong "$RSYNC" -a "rsync://alice@127.0.0.1:@PORT@/auth/" "$T/authbad_dst/"
t_check auth_unknown_user same_as_rsyncd authwho 5 "@ERROR: auth failed on module auth" \
    env RSYNC_PASSWORD=apw "$RSYNC" -a "rsync://mallory@127.0.0.1:@PORT@/auth/" "$T/authwho_dst/"
bob_push() {
    local side port
    for side in rsync ferry; do
        port=$RSYNCD_PORT
        [ "$side" = ferry ] && port=$FERRYD_PORT
        run "$T/bob.$side" env RSYNC_PASSWORD=bpw "$RSYNC" -a "$T/motd" \
            "rsync://bob@127.0.0.1:$port/auth/bob_was_here"
        echo "--- $side:"
        refused "$T/bob.$side" 1 "module is read only" || return 1
    done
    [ ! -e "$AUP/bob_was_here" ]
}
t_check auth_ro_user_push_refused bob_push
bob_pull() {
    run "$T/bob_pull" env RSYNC_PASSWORD=bpw "$RSYNC" -aH \
        "rsync://bob@127.0.0.1:$FERRYD_PORT/auth/" "$T/bob_pull/"
    ok_compare "$T/bob_pull" "$SRC" "$T/bob_pull" --nsec
}
t_check auth_ro_user_pull bob_pull

# -------------------------------------------------------- max connections

# A client that takes the only slot of [one] and then sits in the
# argument phase until it is killed.
cat >"$T/hold.py" <<'EOF'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"@RSYNCD: 32.0 md5\n" + sys.argv[2].encode() + b"\n")
buf = b""
while b"@RSYNCD: OK\n" not in buf and b"@ERROR" not in buf:
    d = s.recv(4096)
    if not d:
        break
    buf += d
print("held" if b"@RSYNCD: OK\n" in buf else "not held: %r" % buf, flush=True)
time.sleep(120)
EOF
check_max_conn() {
    local hold i
    "$PYTHON" "$T/hold.py" "$FERRYD_PORT" one >"$T/hold.out" 2>&1 &
    hold=$!
    t_track_pid "$hold"
    for i in $(seq 100); do
        [ -s "$T/hold.out" ] && break
        sleep 0.1
    done
    cat "$T/hold.out"
    if ! grep -qx held "$T/hold.out"; then
        _t_kill_pid "$hold"
        _t_untrack_pid "$hold"
        return 1
    fi
    run "$T/maxconn" "$RSYNC" -a "$FURL/one/" "$T/maxconn_dst/"
    refused "$T/maxconn" 5 "@ERROR: max connections (1) reached" || {
        _t_kill_pid "$hold"
        _t_untrack_pid "$hold"
        return 1
    }
    _t_kill_pid "$hold"
    _t_untrack_pid "$hold"
    # The slot is free again once the holder is gone (its server child
    # notices the closed socket).
    for i in $(seq 50); do
        run "$T/maxconn2" "$RSYNC" -aH "$FURL/one/" "$T/maxconn_dst/"
        grep -q "max connections" "$T/maxconn2.err" || break
        sleep 0.1
    done
    ok_compare "$T/maxconn2" "$SRC" "$T/maxconn_dst" --nsec
}
t_check max_connections check_max_conn

# ---------------------------------------------------------------- exclude

# (-a, not -aH: see pull_aH_hlink_attrs for what -H adds.)
check_exclude() {
    run "$T/excl_ferry" "$RSYNC" -a "$FURL/excl/" "$T/excl_ferry/"
    run "$T/excl_rsync" "$RSYNC" -a "$RURL/excl/" "$T/excl_rsync/"
    ok "$T/excl_ferry" && ok "$T/excl_rsync" || return 1
    if [ -n "$(find "$T/excl_ferry" -name '*.bin')" ] || [ -e "$T/excl_ferry/secret" ]; then
        echo "excluded files were sent:"
        find "$T/excl_ferry" -name '*.bin' -o -name secret
        return 1
    fi
    [ -f "$T/excl_ferry/small.txt" ] && [ -f "$T/excl_ferry/sub/dir/deep/file.txt" ] || return 1
    t_compare "$T/excl_rsync" "$T/excl_ferry" --nsec
}
t_check exclude_param check_exclude

# ------------------------------------------------------- uid and chroot

if [ -n "$NOBODY_MOD" ]; then
    check_nobody() {
        local bad
        run "$T/nobody" "$RSYNC" -rlpt "$SRC/sub/" "$FURL/nobody/"
        ok "$T/nobody" || return 1
        if [ ! -f "$NB/medium.txt" ] || [ ! -d "$NB/dir/deep" ]; then
            ls -lR "$NB"
            return 1
        fi
        bad=$(find "$NB" ! -user nobody -printf '%u %p\n')
        [ -z "$bad" ] && return 0
        echo "not owned by nobody: $bad"
        return 1
    }
    t_check uid_nobody_owns_pushed check_nobody
else
    t_skip uid_nobody_owns_pushed "needs root, a nobody user and a nogroup/nobody group"
fi

if [ -n "$CHROOT_MOD" ]; then
    pull pull_jail -aH "$FURL/jail/"
    t_check use_chroot_pull ok_compare "$T/pull_jail" "$SRC" "$T/pull_jail" --nsec
else
    t_skip use_chroot_pull "needs root"
fi

# ------------------------------------------------------- config errors

# bad_conf NAME LINE TEXT BODY -- the daemon refuses the file: exit 1, and
# stderr names FILE:LINE and TEXT; it never starts listening.
bad_conf() {
    local name=$1 line=$2 text=$3 body=$4 conf=$T/$1.conf rc port
    printf '%s\n' "$body" >"$conf"
    port=$(t_free_port) || return 1
    timeout 20 "$FERRY" --daemon --no-detach --address=127.0.0.1 --port="$port" \
        --config="$conf" >"$T/$name.out" 2>"$T/$name.err" </dev/null
    rc=$?
    echo "exit $rc; stderr:"
    cat "$T/$name.err"
    [ "$rc" = 1 ] && grep -qF "$conf:$line" "$T/$name.err" && grep -qF "$text" "$T/$name.err"
}
t_check conf_unknown_param bad_conf bad_unknown 4 'unknown parameter' "use chroot = no
[m]
    path = $SRC
    bogus parameter = 1"
t_check conf_bad_boolean bad_conf bad_bool 3 'maybe' "[m]
    path = $SRC
    read only = maybe"
t_check conf_no_path bad_conf bad_nopath 2 'path' "# a module without a path
[m]
    comment = nothing here"

# ----------------------------------------- a destination that cannot be made

# rsync makes only the last component of a destination path: a push whose
# parent is missing fails in the receiver with "error in file IO" (11),
# which the sender must hear (MSG_ERROR_EXIT) rather than a reset
# connection (10). The same from each client and daemon, and locally.
push_unmakeable() {
    local client=$1 url=$2 tag=$3 rc
    "$client" -a "$SRC/" "$url/up/missing_$tag/deeper/" >"$T/unmk_$tag.out" 2>&1
    rc=$?
    echo "exit $rc:"
    cat "$T/unmk_$tag.out"
    [ "$rc" = 11 ] && grep -q 'mkdir ".*missing_'"$tag"'/deeper" .*failed: No such file' "$T/unmk_$tag.out" &&
        ! grep -q 'Connection reset\|unexpectedly closed' "$T/unmk_$tag.out"
}
t_check unmakeable_dest_rsync_to_ferryd push_unmakeable "$RSYNC" "$FURL" rf
t_check unmakeable_dest_ferry_to_ferryd push_unmakeable "$FERRY" "$FURL" ff
t_check unmakeable_dest_ferry_to_rsyncd push_unmakeable "$FERRY" "$RURL" fr
t_check unmakeable_dest_rsync_to_rsyncd push_unmakeable "$RSYNC" "$RURL" rr
local_unmakeable() {
    local rc
    "$FERRY" -a "$SRC/" "$T/missing_local/deeper/" >"$T/unmk_local.out" 2>&1
    rc=$?
    echo "exit $rc:"
    cat "$T/unmk_local.out"
    [ "$rc" = 11 ] && ! grep -q 'Connection reset\|unexpectedly closed' "$T/unmk_local.out"
}
t_check unmakeable_dest_local local_unmakeable

# ----------------------------------------------------------- sanitizers

# The per-connection children print sanitizer reports to the daemon's
# stderr, which no client sees.
no_reports() {
    local f bad=0
    for f in "$T/fd30.out" "$T"/*.err; do
        [ -f "$f" ] || continue
        if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer' "$f"; then
            echo "sanitizer report in $f:"
            grep -m1 -A12 -E 'ERROR: [A-Za-z]*Sanitizer|runtime error' "$f"
            bad=1
        fi
    done
    t_pid_alive "$FERRYD_PID" || { echo "the daemon died"; bad=1; }
    return "$bad"
}
t_check no_sanitizer_reports no_reports

t_done
