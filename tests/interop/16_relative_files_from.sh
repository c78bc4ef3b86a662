#!/bin/bash
# -R/--relative (with "/./" anchors), --no-implied-dirs, --files-from (a
# local file, stdin, a file on the remote end), -0/--from0: real rsync and
# ferry run the same command on the same tree and must produce the same
# tree, exit code and (for listings) output. Locally; ferry as the client
# of an rsync daemon (pull: ferry forwards its list to the sender; push:
# ferry reads a remote list from the socket), a real rsync client of a
# ferry daemon and of ferry --server over a remote shell, each at protocol
# 32 and 30 (where the forwarded names go unframed).
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON"
t_setup

# Directories a transfer creates without setting their time (the
# destination root, dirs made for --no-implied-dirs) carry the time of the
# run; give those the same time in both trees before comparing. Times
# that came from the source (all before T_START) are left alone.
T_START=$(date +%s)
cmp_trees() {
    local d
    for d in "$1" "$2"; do
        find "$d" -type d -newermt "@$((T_START - 1))" -exec touch -d @1 {} + 2>/dev/null
    done
    # shellcheck disable=SC2086 # CMP_OPTS is a list of flags
    t_compare ${CMP_OPTS:-} "$1" "$2"
}

SRC=$T/src
mk_src() {
    mkdir -p "$SRC/a/b/c" "$SRC/x/y" "$SRC/emptydir" "$SRC/sp ace" || return 1
    echo one >"$SRC/a/b/f1" && echo two >"$SRC/a/b/c/f2" && echo three >"$SRC/x/f3" &&
        echo four >"$SRC/x/y/f4" && echo top >"$SRC/top" && echo sp >"$SRC/sp ace/f s" &&
        echo hash >"$SRC/#hash" || return 1
    ln -s f1 "$SRC/a/b/link" && ln -s a "$SRC/alink" || return 1
    chmod 0750 "$SRC/a" && chmod 0700 "$SRC/a/b/c" && chmod 0711 "$SRC/x" || return 1
    find "$SRC" -exec touch -h -d @1600000000 {} + &&
        touch -d @1500000000 "$SRC/a" && touch -d @1550000000 "$SRC/a/b"
}
t_check mk_src mk_src || t_done

# Lists: plain (with comments, a blank line, CRLF, "dir/", "..", "/"),
# NUL-separated, and with an entry naming a dir without a slash.
printf 'a/b/f1\n# a comment\n\n; another\nx/\r\n/top\n../a/b/c/f2\nsp ace/f s\n' >"$T/list"
printf 'a/b/f1\0x\0a/b/c/\0' >"$T/list0"
# What a receiving rsync 3.5 forwards must match what the sender sends
# back by name (it rejects "../a" coming back as "a"), so no ".." here.
printf 'a/b/f1\n# a comment\n\nx/\r\n/top\nsp ace/f s\na/b/c/f2\n' >"$T/listfw"
printf 'x\na/b\n' >"$T/listdirs"

# both TAG ARGS... -- rsync and ferry as the client, same arguments (DST
# stands for the destination, made fresh; PRE, when set, is run on it
# first); same exit code and tree. BOTH_OUT=1 also compares stdout.
both() {
    local tag=$1 tool
    shift
    for tool in rsync ferry; do
        local d="$T/$tag.$tool" bin=$RSYNC
        [ $tool = ferry ] && bin=$FERRY
        rm -rf "$d" && mkdir -p "$d"
        [ -n "${PRE:-}" ] && (cd "$d" && eval "$PRE" && find . -exec touch -h -d @1400000000 {} +)
        (cd "$T" && "$bin" "${@//DST/$d}" >"$d.out" 2>"$d.err" <"${STDIN:-/dev/null}")
        echo $? >"$d.rc"
    done
    if ! cmp -s "$T/$tag.rsync.rc" "$T/$tag.ferry.rc"; then
        echo "exit codes: rsync $(cat "$T/$tag.rsync.rc") ferry $(cat "$T/$tag.ferry.rc")"
        cat "$T/$tag.rsync.err" "$T/$tag.ferry.err"
        return 1
    fi
    if [ "${BOTH_OUT:-0}" = 1 ] && ! diff "$T/$tag.rsync.out" "$T/$tag.ferry.out"; then
        return 1
    fi
    cmp_trees "$T/$tag.rsync" "$T/$tag.ferry"
}

# ------------------------------------------------------------------ local

t_check local_anchors        both anchors -a -R "$SRC/./a/b/f1" "$SRC/./x" DST/
t_check local_anchor_mid     both anchormid -a -R "$SRC/a/./b/c" "src/x/./y/f4" DST/
t_check local_dot_prefix     both dotprefix -a -R ./src/x DST/
t_check local_no_recurse     both norec -lptgoD -R "$SRC/./a/b" "$SRC/./x/" DST/
t_check local_no_implied     both noimpl -a -R --no-implied-dirs "$SRC/./a/b/c" DST/
CMP_OPTS=--no-dir-times t_check local_absolute both abs -a -R "$SRC/a/b/f1" DST/
PRE='mkdir -p a/b/old x && echo k >a/keep && echo o >a/b/old/f && echo z >x/zap' \
    t_check local_delete both del -a -R --delete "$SRC/./a/b" "$SRC/./x/f3" DST/
check_dotdot() {
    both dotdot -a -R "$SRC/./a/../x" DST/ || return 1
    [ "$(cat "$T/dotdot.ferry.rc")" = 1 ] && grep -q 'found ".." dir in relative path' "$T/dotdot.ferry.err"
}
t_check local_dotdot_refused check_dotdot
BOTH_OUT=1 t_check local_list_only  both list -aR --list-only "$SRC/./a/b/c" "$SRC/./x"
BOTH_OUT=1 t_check local_list_no_implied both listni -aR --no-implied-dirs --list-only "$SRC/./a/b/c"

t_check local_files_from     both ff -a --files-from="$T/list" "$SRC" DST/
t_check local_files_from_r   both ffr -a -r --files-from="$T/list" "$SRC" DST/
t_check local_files_from_dirs both ffd -a --files-from="$T/listdirs" "$SRC" DST/
t_check local_files_from_noR both ffnor -a --no-R --files-from="$T/list" "$SRC/" DST/
t_check local_from0          both ff0 -a -0 --files-from="$T/list0" "$SRC" DST/
t_check local_from0_long     both ff0l -a --from0 --files-from="$T/list0" "$SRC" DST/
STDIN=$T/list t_check local_files_from_stdin both ffstdin -a --files-from=- "$SRC" DST/
PRE='mkdir -p x/y && echo z >x/zap && echo z >x/y/zap' \
    t_check local_files_from_delete both ffdel -a -r --delete --files-from="$T/listdirs" "$SRC" DST/
t_check local_files_from_missing_list both ffmiss -a --files-from="$T/nolist" "$SRC" DST/
t_check local_files_from_three_args both ff3 -a --files-from="$T/list" "$SRC" "$SRC" DST/
t_check local_files_from_remote_list both ffrem -a --files-from=:list "$SRC" DST/

# ------------------------------------------------- ferry client, rsyncd

mkdir -p "$T/pushr" "$T/pushf" "$T/push2r" "$T/push2f"
cp -p "$T/list" "$SRC/.list" && cp -p "$T/list0" "$SRC/.list0"
touch -d @1600000000 "$SRC"
t_rsyncd_start rf_rsyncd "[m]
    path = $SRC
[pushr]
    path = $T/pushr
    read only = no
[pushf]
    path = $T/pushf
    read only = no" || { t_fail rsyncd_start; t_done; }
RD=rsync://127.0.0.1:$RSYNCD_PORT

for P in 32 30; do
    t_check "pull_rsyncd_anchor_p$P" both "pa$P" -a --protocol=$P -R "$RD/m/a/./b/c" "$RD/m/./x/y" DST/
    t_check "pull_rsyncd_files_from_p$P" both "pff$P" -a --protocol=$P --files-from="$T/listfw" "$RD/m/" DST/
    t_check "pull_rsyncd_from0_p$P" both "pf0$P" -a -r --protocol=$P -0 --files-from="$T/list0" "$RD/m/" DST/
    t_check "pull_rsyncd_remote_list_p$P" both "prl$P" -a --protocol=$P --files-from=:.list "$RD/m/" DST/
    t_check "pull_rsyncd_no_implied_p$P" both "pni$P" -a --protocol=$P -R --no-implied-dirs "$RD/m/./a/b/c" DST/
done
BOTH_OUT=1 t_check pull_rsyncd_list_only both plist -a -R --list-only "$RD/m/./a/b/c"

# push_both TAG ARGS... -- push with rsync to module pushr and with ferry
# to pushf (MOD stands for the module), compare what the daemon wrote.
push_both() {
    local tag=$1 tool rc_r rc_f
    shift
    rm -rf "$T/pushr"/* "$T/pushf"/*
    (cd "$T" && "$RSYNC" "${@//MOD/$RD/pushr}" >"$T/$tag.r.out" 2>&1)
    rc_r=$?
    (cd "$T" && "$FERRY" "${@//MOD/$RD/pushf}" >"$T/$tag.f.out" 2>&1)
    rc_f=$?
    if [ $rc_r != $rc_f ]; then
        echo "exit codes: rsync $rc_r ferry $rc_f"
        cat "$T/$tag.r.out" "$T/$tag.f.out"
        return 1
    fi
    cmp_trees "$T/pushr" "$T/pushf"
}
for P in 32 30; do
    t_check "push_rsyncd_anchor_p$P" push_both "ua$P" -a --protocol=$P -R "$SRC/./a/b" "$SRC/x/./y" MOD/
    t_check "push_rsyncd_listed_dirs_p$P" push_both "udirs$P" -a --protocol=$P \
        --files-from="$T/listdirs" "$SRC" MOD/
    t_check "push_rsyncd_files_from_p$P" push_both "uff$P" -a --protocol=$P --files-from="$T/list" "$SRC" MOD/
    cp -p "$T/list" "$T/pushr/.list" && cp -p "$T/list" "$T/pushf/.list"
    t_check "push_rsyncd_remote_list_p$P" push_both "url$P" -a --protocol=$P \
        --files-from=:.list "$SRC" MOD/
done

# ----------------------------------------------- rsync client, ferryd

mkdir -p "$T/wr" "$T/wf"
t_ferryd_start rf_ferryd "[m]
    path = $SRC
[w]
    path = $T/wf
    read only = no" || { t_fail ferryd_start; t_done; }
FD=rsync://127.0.0.1:$FERRYD_PORT
t_rsyncd_stop
t_rsyncd_start rf_rsyncd2 "[m]
    path = $SRC
[w]
    path = $T/wr
    read only = no" || { t_fail rsyncd2_start; t_done; }
RD=rsync://127.0.0.1:$RSYNCD_PORT

# daemons_both TAG ARGS... -- real rsync against the rsync daemon and the
# ferry daemon (SRV stands for the daemon's URL, DST for a fresh local
# destination; WPRE is run in both push modules first); same exit code,
# same tree (the destination and the push module).
daemons_both() {
    local tag=$1 side url rc_r rc_f
    shift
    rm -rf "$T/$tag.r" "$T/$tag.f" "$T/wr" "$T/wf"
    mkdir -p "$T/wr" "$T/wf"
    if [ -n "${WPRE:-}" ]; then
        (cd "$T/wr" && eval "$WPRE") && (cd "$T/wf" && eval "$WPRE") &&
            find "$T/wr" "$T/wf" -exec touch -h -d @1400000000 {} +
    fi
    for side in r f; do
        url=$RD
        [ $side = f ] && url=$FD
        local args=("${@//SRV/$url}")
        args=("${args[@]//DST/$T/$tag.$side}")
        (cd "$T" && "$RSYNC" "${args[@]}" >"$T/$tag.$side.out" 2>"$T/$tag.$side.err" \
            <"${STDIN:-/dev/null}")
        echo $? >"$T/$tag.$side.rc"
    done
    rc_r=$(cat "$T/$tag.r.rc") rc_f=$(cat "$T/$tag.f.rc")
    if [ "$rc_r" != "$rc_f" ]; then
        echo "exit codes: via rsyncd $rc_r via ferryd $rc_f"
        cat "$T/$tag.r.err" "$T/$tag.f.err"
        return 1
    fi
    if [ "${BOTH_OUT:-0}" = 1 ] && ! diff "$T/$tag.r.out" "$T/$tag.f.out"; then
        return 1
    fi
    if [ -e "$T/$tag.r" ] || [ -e "$T/$tag.f" ]; then
        cmp_trees "$T/$tag.r" "$T/$tag.f" || return 1
    fi
    cmp_trees "$T/wr" "$T/wf"
}

for P in 32 30; do
    t_check "rsync_pulls_ferryd_anchor_p$P" daemons_both "ra$P" -a --protocol=$P -R \
        SRV/m/a/./b/c SRV/m/./x/y DST/
    t_check "rsync_pulls_ferryd_files_from_p$P" daemons_both "rff$P" -a --protocol=$P \
        --files-from="$T/listfw" SRV/m/ DST/
    t_check "rsync_pulls_ferryd_from0_p$P" daemons_both "rf0$P" -a -r --protocol=$P \
        -0 --files-from="$T/list0" SRV/m DST/
    t_check "rsync_pulls_ferryd_module_list_p$P" daemons_both "rml$P" -a --protocol=$P \
        --files-from=:.list SRV/m/ DST/
    t_check "rsync_pushes_ferryd_anchor_p$P" daemons_both "rua$P" -a --protocol=$P -R \
        "$SRC/./a/b" "$SRC/x/./y" SRV/w/
    WPRE='mkdir -p a/b/old x && echo k >a/keep && echo o >a/b/old/f && echo z >x/zap' \
        t_check "rsync_pushes_ferryd_delete_p$P" daemons_both "rud$P" -a --protocol=$P -R \
        --delete "$SRC/./a/b" "$SRC/./x/f3" SRV/w/
    t_check "rsync_pushes_ferryd_no_implied_p$P" daemons_both "runi$P" -a --protocol=$P -R \
        --no-implied-dirs "$SRC/./a/b/c" SRV/w/
    t_check "rsync_pushes_ferryd_listed_dirs_p$P" daemons_both "rudirs$P" -a --protocol=$P \
        --files-from="$T/listdirs" "$SRC" SRV/w/
    WPRE="cp -p '$T/list' .list" \
        t_check "rsync_pushes_ferryd_module_list_p$P" daemons_both "ruml$P" -a --protocol=$P \
        --files-from=:.list "$SRC" SRV/w/
done
STDIN=$T/listfw t_check rsync_pulls_ferryd_stdin_list daemons_both rstdin -a \
    --files-from=- SRV/m/ DST/
BOTH_OUT=1 t_check rsync_lists_ferryd daemons_both rlist -a -R --list-only SRV/m/./a/b/c
# rsync's daemon dies on a list it cannot open (the client sees a reset,
# exit 10); ferry's refuses it with the message and exit 1. Either way
# "../list" is read inside the module (as "list"), never beside it.
check_module_list_escape() {
    rm -rf "$T/resc"
    "$RSYNC" -a --files-from=:../list "$FD/m/" "$T/resc/" >"$T/resc.out" 2>&1
    local rc=$?
    cat "$T/resc.out"
    [ $rc = 1 ] && grep -q 'failed to open files-from file list' "$T/resc.out" &&
        [ ! -e "$T/resc/a" ]
}
t_check ferryd_module_list_stays_inside check_module_list_escape

# ------------------------------------------- rsync client, ferry --server

# A remote shell that is no shell at all (see 32_server_over_rsh.sh).
# shellcheck disable=SC2016 # the script's own $1, $#, $*
printf '%s\n' '#!/bin/sh' 'while [ $# -gt 0 ]; do' '    case $1 in' \
    '    -l | -p | -o | -i | -F) shift 2 ;;' '    -*) shift ;;' '    *) break ;;' \
    '    esac' 'done' 'shift' 'exec sh -c "$*"' >"$T/fakessh"
chmod 0755 "$T/fakessh"
RPATH="env ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}"
RPATH+=" UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} $FERRY"

# rsh_both TAG ARGS... -- real rsync with rsync and with ferry as the
# remote-shell server (DST stands for a fresh destination, local for a
# pull, "localhost:" one for a push); same exit code and tree.
rsh_both() {
    local tag=$1 side
    shift
    for side in r f; do
        local path=$RSYNC d="$T/$tag.$side"
        [ $side = f ] && path=$RPATH
        rm -rf "$d" && mkdir -p "$d"
        local args=("${@//DST/$d}")
        (cd "$T" && "$RSYNC" -e "$T/fakessh" --rsync-path="$path" "${args[@]}" \
            >"$d.out" 2>"$d.err" <"${STDIN:-/dev/null}")
        echo $? >"$d.rc"
    done
    if ! cmp -s "$T/$tag.r.rc" "$T/$tag.f.rc"; then
        echo "exit codes: rsync server $(cat "$T/$tag.r.rc") ferry server $(cat "$T/$tag.f.rc")"
        cat "$T/$tag.r.err" "$T/$tag.f.err"
        return 1
    fi
    cmp_trees "$T/$tag.r" "$T/$tag.f"
}
for P in 32 30; do
    t_check "rsync_pulls_ferry_server_anchor_p$P" rsh_both "sa$P" -a --protocol=$P -R \
        "localhost:$SRC/./a/b/c" "localhost:$SRC/x/./y" DST/
    t_check "rsync_pulls_ferry_server_files_from_p$P" rsh_both "sff$P" -a --protocol=$P \
        --files-from="$T/listfw" "localhost:$SRC" DST/
    t_check "rsync_pulls_ferry_server_remote_list_p$P" rsh_both "srl$P" -a --protocol=$P \
        --files-from=":$T/list" "localhost:$SRC" DST/
    t_check "rsync_pushes_ferry_server_anchor_p$P" rsh_both "sua$P" -a --protocol=$P -R \
        "$SRC/./a/b" "$SRC/x/./y" localhost:DST/
    t_check "rsync_pushes_ferry_server_remote_list_p$P" rsh_both "surl$P" -a --protocol=$P \
        --files-from=":$T/list" "$SRC" localhost:DST/
done

t_done
