#!/bin/bash
# Single-cause parity items (issue 21, cluster 16) against REAL rsync: each
# case runs the same command with rsync and with ferry (as the client, the
# local-copy tool, or the daemon a real rsync talks to) and checks that the
# outcome is rsync's.
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

# run TAG CMD... -- TAG.out/.err/.rc get CMD's stdout, stderr and status.
run() {
    local tag=$1
    shift
    timeout 120 "$@" >"$T/$tag.out" 2>"$T/$tag.err" </dev/null
    echo $? >"$T/$tag.rc"
    sed "s/^/   $tag: /" "$T/$tag.err" >&2
}
rc_of() { cat "$T/$1.rc"; }

# daemon_stop PID -- stop a daemon once its connection children are gone
# (a child still logging its last transfer would outlive it otherwise).
daemon_stop() {
    local i
    for i in $(seq 100); do
        pgrep -P "$1" >/dev/null || break
        sleep 0.1
    done
    t_rsyncd_stop "$1"
}
mode_of() { stat -c %a "$1"; }

# ------------------------------------------------------------- --chmod
# Clauses apply left to right, once: g=o,o= on 0647 gives 0670. A second
# pass in the local receiver would turn it into 0600.
check_chmod_copy_clause() {
    local tool want got
    mkdir -p "$T/chmod/src"
    echo data >"$T/chmod/src/f"
    chmod 0647 "$T/chmod/src/f"
    for tool in "$RSYNC" "$FERRY"; do
        rm -rf "$T/chmod/dst"
        "$tool" -a --chmod=g=o,o= "$T/chmod/src/" "$T/chmod/dst/" || return 1
        got+="$(mode_of "$T/chmod/dst/f") "
    done
    want="670 670 "
    echo "rsync, ferry: $got"
    [ "$got" = "$want" ]
}
t_check chmod_clauses_left_to_right check_chmod_copy_clause

# ------------------------------------------------------ %% in --out-format
# "%%" is a literal '%': "%%i" neither itemizes nor turns on the lines of
# attribute-only changes.
check_percent_literal() {
    local tool out
    mkdir -p "$T/pct/src"
    echo data >"$T/pct/src/f"
    for tool in "$RSYNC" "$FERRY"; do
        rm -rf "$T/pct/dst"
        out=$("$tool" -a --out-format='100%% done %n' "$T/pct/src/" "$T/pct/dst/") ||
            return 1
        echo "$tool: $out"
        grep -qx '100% done f' <<<"$out" || return 1
        chmod 0600 "$T/pct/src/f"
        out=$("$tool" -a --out-format='%%i %n' "$T/pct/src/" "$T/pct/dst/") || return 1
        echo "$tool (attributes only): '$out'"
        [ -z "$out" ] || return 1
        chmod 0644 "$T/pct/src/f"
    done
}
t_check out_format_percent_literal check_percent_literal

# --------------------------------------- refuse options: --del is delete-during
check_refuse_del_alias() {
    local tool rc
    mkdir -p "$T/ref/src" "$T/ref/rmod" "$T/ref/fmod"
    echo keep >"$T/ref/src/keep"
    t_rsyncd_start rref "[m]
    path = $T/ref/rmod
    read only = no
    refuse options = delete-during" || return 1
    t_ferryd_start fref "[m]
    path = $T/ref/fmod
    read only = no
    refuse options = delete-during" || return 1
    for port in "$RSYNCD_PORT" "$FERRYD_PORT"; do
        run "ref$port" "$RSYNC" -r --delete -M--del "$T/ref/src/" \
            "rsync://127.0.0.1:$port/m/"
        rc=$(rc_of "ref$port")
        echo "port $port: exit $rc"
        [ "$rc" != 0 ] || return 1
        grep -q 'configured to refuse --del\b' "$T/ref$port.err" || return 1
    done
    # The module still takes a push without it.
    run refok "$RSYNC" -r --delete "$T/ref/src/" "rsync://127.0.0.1:$FERRYD_PORT/m/"
    [ "$(rc_of refok)" = 0 ] && [ -f "$T/ref/fmod/keep" ]
}
t_check refuse_delete_during_covers_del check_refuse_del_alias
daemon_stop "$RSYNCD_PID"
daemon_stop "$FERRYD_PID"

# ------------------------------- -R --no-implied-dirs and a destination link
# The path elements are not in the list, so the user's own link in the
# destination is used as it is: the file lands in its target. With implied
# dirs the link is replaced by a directory.
check_no_implied_dirs_link() {
    local tool tag got=""
    mkdir -p "$T/nid/src/path"
    echo NEW >"$T/nid/src/path/file"
    for tool in "$RSYNC" "$FERRY"; do
        tag=$(basename "$tool")
        for mode in noimp imp; do
            rm -rf "$T/nid/$tag-$mode"
            mkdir -p "$T/nid/$tag-$mode/real"
            ln -s real "$T/nid/$tag-$mode/path"
        done
        run "nid-$tag" "$tool" -a -R --no-implied-dirs "$T/nid/src/./path/file" \
            "$T/nid/$tag-noimp/"
        run "imp-$tag" "$tool" -a -R "$T/nid/src/./path/file" "$T/nid/$tag-imp/"
        got+="$(rc_of "nid-$tag") $(cat "$T/nid/$tag-noimp/real/file" 2>/dev/null) "
        got+="$(rc_of "imp-$tag") $(stat -c %F "$T/nid/$tag-imp/path") "
    done
    echo "rsync, ferry: $got"
    [ "$got" = "0 NEW 0 directory 0 NEW 0 directory " ]
}
t_check no_implied_dirs_follows_own_dest_link check_no_implied_dirs_link

# --------------------------- --*-missing-args with --files-from names
# A --files-from name missing on the sender is skipped quietly with
# --ignore-missing-args, and deleted on the receiver (file or directory)
# with --delete-missing-args; exit 0 both ways.
check_missing_args_files_from() {
    local tool tag got="" opt
    mkdir -p "$T/mia/src"
    echo keep >"$T/mia/src/keep"
    printf 'keep\nghost\nghostdir\n' >"$T/mia/list"
    for tool in "$RSYNC" "$FERRY"; do
        tag=$(basename "$tool")
        for opt in ignore delete; do
            rm -rf "$T/mia/$tag-$opt"
            mkdir -p "$T/mia/$tag-$opt/ghostdir"
            echo old >"$T/mia/$tag-$opt/ghost"
            echo old >"$T/mia/$tag-$opt/ghostdir/inner"
            run "mia-$tag-$opt" "$tool" -a --delete "--$opt-missing-args" \
                --files-from="$T/mia/list" "$T/mia/src/" "$T/mia/$tag-$opt/"
            got+="$opt:$(rc_of "mia-$tag-$opt"):$(cd "$T/mia/$tag-$opt" && echo *) "
        done
    done
    echo "rsync, ferry: $got"
    [ "$got" = "ignore:0:ghost ghostdir keep delete:0:keep ignore:0:ghost ghostdir keep delete:0:keep " ]
}
t_check missing_args_apply_to_files_from check_missing_args_files_from

# ----------------------------------------- -M and the local receiving half
# In a local copy the receiving half takes the -M options too: with
# -M--fake-super it records the owner in user.rsync.%stat instead of
# chowning.
check_remote_option_local() {
    local tool got=""
    mkdir -p "$T/mopt/src"
    echo x >"$T/mopt/src/f"
    chown 1234:1234 "$T/mopt/src/f"
    for tool in "$RSYNC" "$FERRY"; do
        rm -rf "$T/mopt/dst"
        "$tool" -a -M--fake-super "$T/mopt/src/" "$T/mopt/dst/" || return 1
        got+="$(stat -c %u "$T/mopt/dst/f"):"
        got+="$(getfattr --only-values -n user.rsync.%stat "$T/mopt/dst/f" 2>/dev/null) "
    done
    echo "rsync, ferry: $got"
    [ "$got" = "0:100644 0,0 1234:1234 0:100644 0,0 1234:1234 " ]
}

# ------------------------------------------- itemizing hard links and *-dest
# The item lines of -H with the basis-dir options, and of a link that
# replaces a separate file, are rsync's (the lines sorted: the order of
# generator and sender lines is a matter of buffering); -H --compare-dest
# exits 0.
item_lines() {
    grep -v '^sending\|^delta\|^total\|^sent\|^$\|bytes/sec\|speedup\|^created' "$1" | sort
}

check_itemize_dests() {
    local tool tag base args i
    for tool in "$RSYNC" "$FERRY"; do
        tag=$(basename "$tool")
        base="$T/itz/$tag"
        rm -rf "$base"
        mkdir -p "$base/from/foo" "$base/from/bar"
        seq 1 3000 >"$base/from/foo/config1"
        seq 1 5000 >"$base/from/foo/config2"
        seq 1 700 >"$base/from/bar/data"
        ln "$base/from/foo/config1" "$base/from/foo/extra"
        ln -s ../bar/data "$base/from/foo/sym"
        touch -h -d '2020-01-01 00:00:00' "$base"/from/*/* "$base"/from/* "$base/from"
        # the link to be made replaces a separate copy of the same data
        "$tool" -pr "$base/from/" "$base/sep/" >/dev/null 2>&1
        run "itzsep-$tag" "$tool" -iprH "$base/from/" "$base/sep/"
        rsync -a "$base/from/" "$base/to/"
        i=0
        for args in "-ivvprtlH --copy-dest=../to" "-iprtlH --copy-dest=../to" \
            "-ivvprtlH --link-dest=$base/to" "-iprtlH --link-dest=$base/to" \
            "-vvprtlH --link-dest=$base/to" "-ivvprtlH --compare-dest=$base/to" \
            "-iprtlH --compare-dest=$base/to" "-vvprtlH --compare-dest=$base/to"; do
            i=$((i + 1))
            rm -rf "$base/to2"
            # shellcheck disable=SC2086
            run "itz$i-$tag" "$tool" $args "$base/from/" "$base/to2/"
        done
    done
    for tag in itzsep itz1 itz2 itz3 itz4 itz5 itz6 itz7 itz8; do
        echo "== $tag: rsync exit $(rc_of "$tag-rsync"), ferry exit $(rc_of "$tag-ferry")"
        [ "$(rc_of "$tag-rsync")" = 0 ] && [ "$(rc_of "$tag-ferry")" = 0 ] || return 1
        # ferry cannot hard-link a symlink (no hardlink-symlinks), rsync here can
        diff <(item_lines "$T/$tag-rsync.out" | sed 's/^hL /cL /' | sort) \
            <(item_lines "$T/$tag-ferry.out") || return 1
    done
}
t_check itemize_hard_links_and_dests check_itemize_dests

# ------------------------------------------------ --inplace --sparse holes
# An in-place update that turns a run into zeros punches it out, in literal
# data and in blocks that stay where they are, where the file system frees
# such blocks (probed first); the content stays exact.
punch_frees_blocks() {
    local f=$1 before after
    head -c 262144 /dev/urandom >"$f" && sync "$f"
    before=$(stat -c %b "$f")
    fallocate -p -o 65536 -l 131072 "$f" 2>/dev/null || return 1
    after=$(stat -c %b "$f")
    [ "$after" -lt "$before" ]
}

check_inplace_sparse() {
    local tool tag base got=""
    mkdir -p "$T/isp"
    punch_frees_blocks "$T/isp/probe" || { echo "no hole punching here"; return 0; }
    for tool in "$RSYNC" "$FERRY"; do
        tag=$(basename "$tool")
        base="$T/isp/$tag"
        mkdir -p "$base/src"
        head -c 1000000 /dev/urandom >"$base/src/f"
        "$tool" -a "$base/src/" "$base/dst/" || return 1
        "$PYTHON" -c 'import sys
p = sys.argv[1]
d = bytearray(open(p, "rb").read())
d[200000:800000] = bytes(600000)
open(p, "wb").write(d)' "$base/src/f"
        touch -d '2020-01-01' "$base/src/f"
        "$tool" -a --inplace --sparse --no-whole-file "$base/src/" "$base/dst/" || return 1
        cmp "$base/src/f" "$base/dst/f" || return 1
        # a whole-file pass over identical data: the zeros stay holes
        "$tool" -a -I --inplace --sparse --no-whole-file "$base/src/" "$base/dst/" || return 1
        cmp "$base/src/f" "$base/dst/f" || return 1
        got+="$(( $(stat -c %b "$base/dst/f") * 512 < 1000000 )) "
    done
    echo "rsync, ferry (allocated below the size): $got"
    [ "$got" = "1 1 " ]
}
t_check inplace_sparse_punches_holes check_inplace_sparse

# ------------------------------------------------------ -X --copy-dest
# A file copied from a --copy-dest dir has that file's xattrs.
check_copy_dest_xattrs() {
    local tool tag got=""
    mkdir -p "$T/xcd/src" "$T/xcd/alt"
    echo data >"$T/xcd/src/f"
    setfattr -n user.parity -v kept "$T/xcd/src/f" 2>/dev/null ||
        { echo "no user xattrs here"; return 0; }
    touch -d '2020-01-01' "$T/xcd/src/f"
    cp -a "$T/xcd/src/f" "$T/xcd/alt/f"
    for tool in "$RSYNC" "$FERRY"; do
        tag=$(basename "$tool")
        "$tool" -aX --copy-dest="$T/xcd/alt" "$T/xcd/src/" "$T/xcd/$tag/" || return 1
        got+="$(getfattr --only-values -n user.parity "$T/xcd/$tag/f" 2>/dev/null) "
    done
    echo "rsync, ferry: $got"
    [ "$got" = "kept kept " ]
}
if command -v setfattr >/dev/null && command -v getfattr >/dev/null; then
    t_check copy_dest_copies_xattrs check_copy_dest_xattrs
else
    t_skip copy_dest_copies_xattrs "setfattr/getfattr not installed"
fi

# --------------------------------------- --daemon with a socket on stdin
# A daemon handed a connected socket on stdin serves that connection and
# answers on it, --no-detach or not (inetd style).
check_daemon_stdin_socket() {
    local tool out got=""
    mkdir -p "$T/sock/mod"
    printf 'use chroot = no\n[mod]\n    path = %s\n' "$T/sock/mod" >"$T/sock.conf"
    for tool in "$RSYNC" "$FERRY"; do
        out=$("$PYTHON" - "$tool" "$T/sock.conf" <<'EOF'
import socket, subprocess, sys
a, b = socket.socketpair()
p = subprocess.Popen([sys.argv[1], "--daemon", "--no-detach", "--config=" + sys.argv[2]],
                     stdin=b, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
b.close()
a.settimeout(10)
data = b""
try:
    data = a.recv(200)
    a.sendall(b"@RSYNCD: 32.0 md5\n#list\n")
    while True:
        d = a.recv(1000)
        if not d:
            break
        data += d
except OSError:
    pass
a.close()
try:
    p.wait(10)
except subprocess.TimeoutExpired:
    p.kill()
    p.wait()
print(repr(data.split(b"\n")[1:]))
EOF
)
        echo "$tool: $out"
        got+="$out "
    done
    [ "$got" = "[b'mod            \\t', b'@RSYNCD: EXIT', b''] [b'mod            \\t', b'@RSYNCD: EXIT', b''] " ]
}
t_check daemon_serves_socket_on_stdin check_daemon_stdin_socket

# --------------------------------------------- --only-write-batch -X
# The batch holds the xattr requests as rsync's does: rsync reads it back.
check_only_write_batch_xattrs() {
    local i got=""
    mkdir -p "$T/owb/src" "$T/owb/rb"
    for i in 1 2 3; do
        echo x >"$T/owb/src/f$i"
        setfattr -n user.m -v v "$T/owb/src/f$i" 2>/dev/null ||
            { echo "no user xattrs here"; return 0; }
    done
    "$FERRY" -a -X --only-write-batch="$T/owb/batch" "$T/owb/src/" "$T/owb/wb" || return 1
    run owb-read "$RSYNC" -aX --read-batch="$T/owb/batch" "$T/owb/rb"
    got="$(rc_of owb-read) $(getfattr --only-values -n user.m "$T/owb/rb/f3" 2>/dev/null)"
    echo "rsync reading ferry's batch: $got"
    [ "$got" = "0 v" ]
}
if command -v setfattr >/dev/null && command -v getfattr >/dev/null; then
    t_check only_write_batch_xattrs_readable check_only_write_batch_xattrs
else
    t_skip only_write_batch_xattrs_readable "setfattr/getfattr not installed"
fi

# daemon_start NAME TOOL CONF -- run TOOL --daemon with the config file CONF
# (written by the caller, no globals added) on a free port; sets DPORT and
# DPID.
daemon_start() {
    local name=$1 tool=$2 conf=$3 port pid _
    for _ in 1 2 3; do
        port=$(t_free_port) || return 1
        "$tool" --daemon --no-detach --address=127.0.0.1 --port="$port" \
            --config="$conf" >>"$T/$name.out" 2>&1 </dev/null &
        pid=$!
        t_track_pid "$pid"
        if t_wait_port "$port" 10 "$pid"; then
            DPORT=$port
            DPID=$pid
            return 0
        fi
        t_rsyncd_stop "$pid"
    done
    return 1
}

# ------------------------------------ munge symlinks default, path = BASE/./SUB
# A chroot to BASE with SUB as the module confines nothing between BASE and
# SUB, so links are munged by default, as without chroot; a chroot that
# serves its own root does not munge.
check_chroot_inner_munge() {
    local tool tag got=""
    for tool in "$RSYNC" "$FERRY"; do
        tag=$(basename "$tool")
        rm -rf "$T/munge"
        mkdir -p "$T/munge/src" "$T/munge/inner/sub" "$T/munge/whole"
        ln -s target "$T/munge/src/sl"
        cat >"$T/munge-$tag.conf" <<EOF
pid file = $T/munge-$tag.pid
log file = $T/munge-$tag.log
uid = root
gid = root
[inner]
    path = $T/munge/inner/./sub
    use chroot = yes
    read only = no
[whole]
    path = $T/munge/whole
    use chroot = yes
    read only = no
EOF
        daemon_start "munge-$tag" "$tool" "$T/munge-$tag.conf" || return 1
        "$RSYNC" -rl "$T/munge/src/" "rsync://127.0.0.1:$DPORT/inner/" || return 1
        "$RSYNC" -rl "$T/munge/src/" "rsync://127.0.0.1:$DPORT/whole/" || return 1
        daemon_stop "$DPID"
        got+="$(readlink "$T/munge/inner/sub/sl") $(readlink "$T/munge/whole/sl") "
    done
    echo "rsync, ferry: $got"
    [ "$got" = "/rsyncd-munged/target target /rsyncd-munged/target target " ]
}

# ------------------------------------------------------------- gid lists
# `gid` takes a list (the first is the primary group, which new files get)
# and "*" for all the groups of the module's uid; an unknown group is
# refused by name.
check_gid_list() {
    local tool tag got="" g1 g2
    g1=$(getent group daemon | cut -d: -f3)
    g2=$(getent group bin | cut -d: -f3)
    [ -n "$g1" ] && [ -n "$g2" ] || return 1
    for tool in "$RSYNC" "$FERRY"; do
        tag=$(basename "$tool")
        rm -rf "$T/gid"
        mkdir -p "$T/gid/src" "$T/gid/list" "$T/gid/star"
        echo data >"$T/gid/src/f"
        cat >"$T/gid-$tag.conf" <<EOF
pid file = $T/gid-$tag.pid
log file = $T/gid-$tag.log
use chroot = no
[list]
    path = $T/gid/list
    read only = no
    uid = root
    gid = daemon, bin
[star]
    path = $T/gid/star
    read only = no
    uid = root
    gid = *
[bad]
    path = $T/gid/list
    uid = root
    gid = no-such-group-here
EOF
        daemon_start "gid-$tag" "$tool" "$T/gid-$tag.conf" || return 1
        "$RSYNC" -r "$T/gid/src/" "rsync://127.0.0.1:$DPORT/list/" || return 1
        "$RSYNC" -r "$T/gid/src/" "rsync://127.0.0.1:$DPORT/star/" || return 1
        run "gidbad-$tag" "$RSYNC" "rsync://127.0.0.1:$DPORT/bad/"
        daemon_stop "$DPID"
        got+="$(stat -c %g "$T/gid/list/f") $(stat -c %g "$T/gid/star/f") "
        got+="$(rc_of "gidbad-$tag") "
        grep -q '@ERROR: invalid gid no-such-group-here' "$T/gidbad-$tag.err" || return 1
    done
    echo "rsync, ferry: $got"
    [ "$got" = "$g1 0 5 $g1 0 5 " ]
}

# ------------------------------------------- a search-only (0111) parent
# The receiver passes through a parent it may search but not read (rsync
# uses descriptors that need search permission only).
check_search_only_parent() {
    local tool tag base="$T/srch"
    for tool in "$RSYNC" "$FERRY_NOBODY"; do
        tag=$(basename "$tool")
        rm -rf "$base"
        mkdir -p "$base/src" "$base/p/dest"
        echo probe >"$base/src/f"
        chmod 0755 "$T" "$base"
        chown -R 65534:65534 "$base/src" "$base/p/dest"
        chmod 0111 "$base/p"
        run "srch-$tag" "${AS_NOBODY[@]}" "$tool" -a "$base/src/" "$base/p/dest/"
        chmod 0755 "$base/p"
        echo "$tag: exit $(rc_of "srch-$tag")"
        [ "$(rc_of "srch-$tag")" = 0 ] && cmp -s "$base/src/f" "$base/p/dest/f" || return 1
    done
}

# --------------------------------------- a non-root receiver and 0500 dirs
# A receiver that is not root opens a 0500 directory up while it fills it
# and gives it back its mode at the end, on a first and on a later run.
check_nonroot_widens() {
    local tool tag got="" base="$T/nrp"
    rm -rf "$base"
    mkdir -p "$base/src/ro"
    echo one >"$base/src/ro/f"
    chmod 0755 "$T" "$base"
    for tool in "$RSYNC" "$FERRY_NOBODY"; do
        tag=$(basename "$tool")
        chmod 0700 "$base/src/ro"
        echo one >"$base/src/ro/f"
        rm -f "$base/src/ro/g"
        chmod 0500 "$base/src/ro"
        chown -R 65534:65534 "$base/src"
        mkdir -p "$base/$tag" && chown 65534:65534 "$base/$tag"
        run "nrp1-$tag" "${AS_NOBODY[@]}" "$tool" -rp "$base/src/" "$base/$tag/"
        chmod 0700 "$base/src/ro"
        echo two-longer >"$base/src/ro/f"
        echo new >"$base/src/ro/g"
        chmod 0500 "$base/src/ro"
        chown -R 65534:65534 "$base/src"
        run "nrp2-$tag" "${AS_NOBODY[@]}" "$tool" -rp "$base/src/" "$base/$tag/"
        got+="$(rc_of "nrp1-$tag")/$(rc_of "nrp2-$tag") $(mode_of "$base/$tag/ro") "
        got+="$(cat "$base/$tag/ro/f" "$base/$tag/ro/g" 2>/dev/null | tr '\n' +) "
    done
    echo "rsync, ferry: $got"
    [ "$got" = "0/0 500 two-longer+new+ 0/0 500 two-longer+new+ " ]
}

# ------------------------------- a client's merge rules on a daemon
# A '.' merge file named by the client (-M--filter) is read inside the
# module; one the module's own rules hide is as if it were not there.
check_daemon_client_merge() {
    local tool tag got="" rules
    for tool in "$RSYNC" "$FERRY"; do
        tag=$(basename "$tool")
        rm -rf "$T/dmerge-$tag"
        mkdir -p "$T/dmerge-$tag/mod/secret"
        echo public >"$T/dmerge-$tag/mod/public.txt"
        echo '- *' >"$T/dmerge-$tag/mod/secret/rules"
        echo '- public.txt' >"$T/dmerge-$tag/mod/visible-rules"
        cat >"$T/dmerge-$tag.conf" <<EOF
pid file = $T/dmerge-$tag.pid
log file = $T/dmerge-$tag.log
use chroot = no
$([ "$(id -u)" = 0 ] && printf 'uid = root\ngid = root\n')
[mod]
    path = $T/dmerge-$tag/mod
    filter = - /secret/***
EOF
        daemon_start "dmerge-$tag" "$tool" "$T/dmerge-$tag.conf" || return 1
        for rules in /secret/rules /visible-rules; do
            rm -rf "$T/dmerge-$tag/out"
            mkdir -p "$T/dmerge-$tag/out"
            run "dmerge-$tag" "$RSYNC" -a -M--filter="._$rules" \
                "rsync://127.0.0.1:$DPORT/mod/" "$T/dmerge-$tag/out/"
            got+="$(rc_of "dmerge-$tag"):$(cd "$T/dmerge-$tag/out" && echo *) "
        done
        daemon_stop "$DPID"
    done
    echo "rsync, ferry: $got"
    [ "$got" = "0:public.txt visible-rules 0:visible-rules 0:public.txt visible-rules 0:visible-rules " ]
}
t_check daemon_reads_client_merge_in_module check_daemon_client_merge

if [ "$(id -u)" = 0 ]; then
    if t_runas_nobody; then
        t_check search_only_dest_parent check_search_only_parent
        t_check nonroot_receiver_widens_0500_dirs check_nonroot_widens
    else
        t_skip search_only_dest_parent "$T_SKIP_REASON"
        t_skip nonroot_receiver_widens_0500_dirs "$T_SKIP_REASON"
    fi
    if command -v getfattr >/dev/null; then
        t_check remote_option_reaches_local_receiver check_remote_option_local
    else
        t_skip remote_option_reaches_local_receiver "getfattr not installed"
    fi
    t_check chroot_inner_subdir_munges_by_default check_chroot_inner_munge
    t_check module_gid_list_and_star check_gid_list
else
    t_skip search_only_dest_parent "switching to nobody needs root"
    t_skip nonroot_receiver_widens_0500_dirs "switching to nobody needs root"
    t_skip remote_option_reaches_local_receiver "chown needs root"
    t_skip chroot_inner_subdir_munges_by_default "chroot needs root"
    t_skip module_gid_list_and_star "changing groups needs root"
fi

t_done
