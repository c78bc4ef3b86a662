#!/bin/bash
# Daemon hook variables and diagnostics, compared with the real rsync: the
# same module config is served by a real rsync daemon and by the ferry
# daemon, a real rsync client runs the same requests against both.
#  - %RSYNC_USER_NAME% and %RSYNC_MODULE_PATH% are expanded in the exec
#    hooks once the client has logged in, and a value holding a shell
#    metacharacter or blank is refused with rsync's log message.
#  - A module's directory exclude covers its subtree: a push into it is
#    refused ("daemon has excluded destination", exit 3), and so are
#    --backup-dir, --partial-dir and --link-dest that reach it through "..".
#  - Wildcards in option values reach the daemon intact, with and without
#    --secluded-args.
#  - --debug=NSTR and --debug=FUZZY print rsync's lines, --info=stats3 a
#    heap statistics block per role, --daemon --help rsync's usage line.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC"
t_setup

SRC=$T/src
mkdir -p "$SRC" "$T/My Dir" "$T/out"
echo hello >"$SRC/a.txt"
echo hello >"$T/My Dir/a.txt"
printf 'alice.b-1_x:pw\nev!l:pw\n' >"$T/secrets"
chmod 600 "$T/secrets"
printf 'pw\n' >"$T/pw"
chmod 600 "$T/pw"

hook_conf() { # DAEMON
    local d=$1
    cat <<EOF
[user]
    path = $SRC
    auth users = *
    secrets file = $T/secrets
    early exec = printf %s %RSYNC_USER_NAME% >$T/out/$d.early
    pre-xfer exec = printf %s '%RSYNC_USER_NAME%' >$T/out/$d.pre
[mpath]
    path = $SRC
    pre-xfer exec = printf %s %RSYNC_MODULE_PATH% >$T/out/$d.mpath
[spaced]
    path = $T/My Dir
    pre-xfer exec = printf %s "%RSYNC_MODULE_PATH%" >/dev/null
EOF
}

# The daemons inherit a stale value that the module's path must replace.
export RSYNC_MODULE_PATH=/inherited-value
t_rsyncd_start hooks_rsyncd "$(hook_conf rsyncd)" || { t_fail rsyncd_start; t_done; }
t_ferryd_start hooks_ferryd "$(hook_conf ferryd)" || { t_fail ferryd_start; t_done; }
unset RSYNC_MODULE_PATH
declare -A PORT=([rsyncd]=$RSYNCD_PORT [ferryd]=$FERRYD_PORT)

pull() { # DAEMON USER@ MODULE -> exit code in $T/DAEMON.MODULE.USER.rc
    local d=$1 who=$2 mod=$3 dst="$T/dst.$1.$3.$2"
    rm -rf "$dst"
    mkdir -p "$dst"
    "$RSYNC" -r --password-file="$T/pw" "rsync://${who}127.0.0.1:${PORT[$d]}/$mod/" "$dst/" \
        >"$dst.out" 2>&1
    echo $? >"$dst.rc"
}

refused_in_log() { # DAEMON VAR
    grep -q "refusing to run shell hook: %$2% holds a shell metacharacter" "$T/hooks_$1.log"
}

for d in rsyncd ferryd; do
    pull "$d" 'alice.b-1_x@' user
    pull "$d" '' mpath
done
user_hooks() {
    local d
    for d in rsyncd ferryd; do
        [ "$(cat "$T/dst.$d.user.alice.b-1_x@.rc")" = 0 ] || { echo "$d: rc"; return 1; }
        [ "$(cat "$T/out/$d.early")" = alice.b-1_x ] || { echo "$d: early exec saw $(cat "$T/out/$d.early")"; return 1; }
        [ "$(cat "$T/out/$d.pre")" = alice.b-1_x ] || { echo "$d: pre-xfer exec saw $(cat "$T/out/$d.pre")"; return 1; }
    done
}
t_check hook_user_name_expanded user_hooks

module_path() {
    local d
    for d in rsyncd ferryd; do
        [ "$(cat "$T/dst.$d.mpath..rc")" = 0 ] || { echo "$d: rc"; return 1; }
        [ "$(cat "$T/out/$d.mpath")" = "$SRC" ] || { echo "$d: saw $(cat "$T/out/$d.mpath")"; return 1; }
    done
}
t_check hook_module_path_expanded module_path

for d in rsyncd ferryd; do
    pull "$d" 'ev!l@' user
    pull "$d" '' spaced
done
refusals() {
    local d
    for d in rsyncd ferryd; do
        [ "$(cat "$T/dst.$d.user.ev!l@.rc")" != 0 ] || { echo "$d: hostile user name served"; return 1; }
        [ "$(cat "$T/dst.$d.spaced..rc")" != 0 ] || { echo "$d: spaced module path served"; return 1; }
        refused_in_log "$d" RSYNC_USER_NAME || { echo "$d: no user name refusal logged"; return 1; }
        refused_in_log "$d" RSYNC_MODULE_PATH || { echo "$d: no module path refusal logged"; return 1; }
        [ ! -e "$T/dst.$d.spaced./a.txt" ] || { echo "$d: file sent"; return 1; }
    done
}
t_check hook_metachar_refused refusals

t_rsyncd_stop
t_ferryd_stop

# ------------------------------------------------ module excludes on a push
X=$T/x
mkdir -p "$X/src/sub" "$X/excluded" "$X/bare/excluded"
echo new >"$X/src/f0"
excl_conf() {
    cat <<EOF
[dir]
    path = $X
    read only = no
    exclude = /excluded/
[bare]
    path = $X/bare
    read only = no
    exclude = /excluded
EOF
}
t_rsyncd_start excl_rsyncd "$(excl_conf)" || { t_fail rsyncd_start; t_done; }
t_ferryd_start excl_ferryd "$(excl_conf)" || { t_fail ferryd_start; t_done; }
PORT=([rsyncd]=$RSYNCD_PORT [ferryd]=$FERRYD_PORT)

push() { # DAEMON TAG URL-TAIL [OPTION...] -> $X/DAEMON.TAG.{rc,err,victim,ls}
    local d=$1 tag=$2 tail=$3
    shift 3
    rm -rf "$X/excluded"/* "$X/bare/excluded"/*
    echo secret >"$X/excluded/f0"
    mkdir -p "$X/dest"
    echo "older, longer" >"$X/dest/f0"
    "$RSYNC" -a "$@" "$X/src/" "rsync://127.0.0.1:${PORT[$d]}/$tail" >"$X/$d.$tag.out" 2>"$X/$d.$tag.err"
    echo $? >"$X/$d.$tag.rc"
    cat "$X/excluded/f0" >"$X/$d.$tag.victim" 2>/dev/null
    ls "$X/excluded" "$X/bare/excluded" >"$X/$d.$tag.ls"
}
for d in rsyncd ferryd; do
    push "$d" into dir/excluded/sub/
    push "$d" bare bare/excluded/sub/
    push "$d" backup dir/dest --backup --backup-dir=/src/sub/../../excluded/
    push "$d" partial dir/dest --partial-dir=/src/sub/../../excluded/
    push "$d" linkdest dir/dest --link-dest=/src/sub/../../excluded/
    push "$d" okbackup dir/dest --backup --backup-dir=/bk/
done
same_push() { # TAG RC VICTIM [MESSAGE]
    local tag=$1 rc=$2 victim=$3 msg=${4:-} d
    for d in rsyncd ferryd; do
        [ "$(cat "$X/$d.$tag.rc")" = "$rc" ] || { echo "$d $tag: rc $(cat "$X/$d.$tag.rc"), want $rc"; cat "$X/$d.$tag.err"; return 1; }
        [ "$(cat "$X/$d.$tag.victim")" = "$victim" ] || { echo "$d $tag: victim is $(cat "$X/$d.$tag.victim")"; return 1; }
        [ -z "$msg" ] || grep -qF "$msg" "$X/$d.$tag.err" || { echo "$d $tag: no '$msg'"; cat "$X/$d.$tag.err"; return 1; }
    done
    cmp -s "$X/rsyncd.$tag.ls" "$X/ferryd.$tag.ls" || { echo "$tag: trees differ"; return 1; }
}
t_check excluded_destination_refused same_push into 3 secret 'ERROR: daemon has excluded destination "excluded/sub/"'
# rsyncd.conf(5): a bare name protects only that name, not its subtree
bare_lands() {
    same_push bare 0 secret && grep -qx sub "$X/ferryd.bare.ls"
}
t_check bare_exclude_is_name_only bare_lands
t_check backup_dir_dotdot_refused same_push backup 4 secret 'Your options have been rejected by the server.'
t_check partial_dir_dotdot_refused same_push partial 1 secret 'Your options have been rejected by the server.'
t_check link_dest_dotdot_refused same_push linkdest 1 secret 'Your options have been rejected by the server.'
t_check backup_dir_allowed same_push okbackup 0 secret

t_rsyncd_stop
t_ferryd_stop

# ------------------------------------- option values with wildcards, -s
# A client escapes wildcards in option values only in the normal argument
# list (safe_arg); with --secluded-args it sends them raw. A daemon
# removes the escapes from the normal list (read_args).
W=$T/w
mkdir -p "$W/src" "$W/mod"
echo new >"$W/src/f0"
wild_conf() {
    cat <<EOF
[w]
    path = $W/mod
    read only = no
EOF
}
t_rsyncd_start wild_rsyncd "$(wild_conf)" || { t_fail rsyncd_start; t_done; }
t_ferryd_start wild_ferryd "$(wild_conf)" || { t_fail ferryd_start; t_done; }

wild_push() { # CLIENT PORT [OPTION...] -> the name of the backup made
    local client=$1 port=$2
    shift 2
    rm -rf "$W/mod"/*
    echo "older, longer" >"$W/mod/f0"
    "$client" -r --backup --suffix='.[1]*' "$@" "$W/src/" "rsync://127.0.0.1:$port/w/" >&2 || return 1
    (cd "$W/mod" && ls)
}
wild_suffix() { # CLIENT PORT [OPTION...]
    local got
    got=$(wild_push "$@") || { echo "push failed"; return 1; }
    [ "$got" = "$(printf 'f0\nf0.[1]*')" ] || { echo "backup names: $got"; return 1; }
}
t_check suffix_wild_rsync_to_ferryd wild_suffix "$RSYNC" "$FERRYD_PORT"
t_check suffix_wild_rsync_to_ferryd_secluded wild_suffix "$RSYNC" "$FERRYD_PORT" --secluded-args
t_check suffix_wild_ferry_to_rsyncd wild_suffix "$FERRY" "$RSYNCD_PORT"
t_check suffix_wild_ferry_to_rsyncd_secluded wild_suffix "$FERRY" "$RSYNCD_PORT" --secluded-args

# --groupmap=*:GID (rsync #829), as root where the group can be set
if [ "$(id -u)" = 0 ]; then
    GID=$(getent group | awk -F: '$3 != 0 {print $3; exit}')
    groupmap_push() { # CLIENT PORT [OPTION...]
        local client=$1 port=$2
        shift 2
        rm -rf "$W/mod"/*
        chgrp 0 "$W/src/f0"
        "$client" -rg --groupmap="*:$GID" "$@" "$W/src/f0" "rsync://127.0.0.1:$port/w/" >&2 || { echo "push failed"; return 1; }
        [ "$(stat -c %g "$W/mod/f0")" = "$GID" ] || { echo "gid $(stat -c %g "$W/mod/f0")"; return 1; }
    }
    t_check groupmap_wild_rsync_to_ferryd groupmap_push "$RSYNC" "$FERRYD_PORT"
    t_check groupmap_wild_ferry_to_rsyncd_secluded groupmap_push "$FERRY" "$RSYNCD_PORT" --secluded-args
else
    t_skip groupmap_wild "needs root to set a file's group"
fi

t_rsyncd_stop
t_ferryd_stop

# ------------------------------------------------------------ diagnostics
D=$T/diag
mkdir -p "$D/s/sub" "$D/fz/s" "$D/fz/d"
echo hello >"$D/s/a"
echo world >"$D/s/sub/b"
head -c 3000 /dev/zero | tr '\0' x >"$D/fz/s/archive-v2.tar"
cp "$D/fz/s/archive-v2.tar" "$D/fz/d/archive-v1.tar"

# --debug=NSTR: the checksum and compressor lines, rsync's words and levels
nstr_same() {
    local args
    for args in "-a" "-az" "-a -c --checksum-choice=md5" "-a --checksum-choice=md5,xxh64" \
        "-az --compress-choice=zlibx" "-az --compress-choice=lz4" \
        "-az --compress-choice=zlib --compress-level=9" "-az --protocol=29"; do
        rm -rf "$D/d1" "$D/d2"
        # shellcheck disable=SC2086
        "$RSYNC" $args --debug=NSTR "$D/s/" "$D/d1/" >"$D/nstr.rsync" 2>&1
        # shellcheck disable=SC2086
        "$FERRY" $args --debug=NSTR "$D/s/" "$D/d2/" >"$D/nstr.ferry" 2>&1
        grep -q 'checksum: ' "$D/nstr.rsync" || { echo "rsync printed no NSTR line for $args"; return 1; }
        diff "$D/nstr.rsync" "$D/nstr.ferry" || { echo "differs for $args"; return 1; }
    done
}
t_check debug_nstr_lines nstr_same

# --debug=FUZZY names the basis it chose
fuzzy_same() {
    local t
    for t in "$RSYNC" "$FERRY"; do
        rm -rf "$D/fz/d2"
        cp -a "$D/fz/d" "$D/fz/d2"
        "$t" -ry --debug=FUZZY "$D/fz/s/" "$D/fz/d2/" >"$D/fuzzy.$(basename "$t")" 2>&1 || return 1
    done
    grep -qx 'fuzzy basis selected for archive-v2.tar: archive-v1.tar' "$D/fuzzy.ferry" ||
        { cat "$D/fuzzy.ferry"; return 1; }
    diff "$D/fuzzy.$(basename "$RSYNC")" "$D/fuzzy.ferry"
}
t_check debug_fuzzy_basis fuzzy_same

# --info=stats3: one heap statistics block per role (sender, server
# receiver, server generator in a local copy), rsync's fields in order
heap_blocks() {
    rm -rf "$D/d1" "$D/d2"
    "$RSYNC" -r --info=stats3 "$D/s/" "$D/d1/" >"$D/heap.rsync" 2>&1 || return 1
    "$FERRY" -r --info=stats3 "$D/s/" "$D/d2/" >"$D/heap.ferry" 2>&1 || return 1
    local want got
    want=$(sed -n 's/^rsync\[[0-9]*\] \((.*)\) heap statistics:$/\1/p' "$D/heap.rsync" | sort)
    got=$(sed -n 's/^ferry\[[0-9]*\] \((.*)\) heap statistics:$/\1/p' "$D/heap.ferry" | sort)
    [ -n "$want" ] && [ "$want" = "$got" ] || { echo "roles: rsync [$want] ferry [$got]"; return 1; }
    diff <(sed -n 's/^  \([a-z]*\): *[0-9]* *\(.*\)$/\1 \2/p' "$D/heap.rsync") \
        <(sed -n 's/^  \([a-z]*\): *[0-9]* *\(.*\)$/\1 \2/p' "$D/heap.ferry") || return 1
    # honest numbers: allmem is arena + hblkhd, and something is in use;
    # not under ASan, whose allocator answers mallinfo2() with zeros
    ldd "$FERRY" 2>/dev/null | grep -q libasan && return 0
    awk '/^  arena:/{a=$2} /^  hblkhd:/{h=$2} /^  allmem:/{if ($2 != a + h) bad=1}
         /^  uordblks:/{if ($2 <= 0) bad=1} END{exit bad}' "$D/heap.ferry"
}
t_check info_stats3_heap_blocks heap_blocks

# --daemon --help: the usage line names the program as it was started
daemon_usage() {
    mkdir -p "$D/bin"
    ln -sf "$FERRY" "$D/bin/rsync"
    "$D/bin/rsync" --daemon --help >"$D/dhelp.ferry" || return 1
    "$RSYNC" --daemon --help >"$D/dhelp.rsync" || return 1
    grep -x 'Usage: rsync --daemon \[OPTION\]\.\.\.' "$D/dhelp.rsync" >/dev/null || return 1
    grep -x 'Usage: rsync --daemon \[OPTION\]\.\.\.' "$D/dhelp.ferry" >/dev/null ||
        { cat "$D/dhelp.ferry"; return 1; }
    grep -q -- '^--no-detach ' "$D/dhelp.ferry"
}
t_check daemon_help_usage daemon_usage

t_done
