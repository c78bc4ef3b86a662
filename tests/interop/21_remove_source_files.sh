#!/bin/bash
# --remove-source-files / --remove-sent-files: the sender removes what the
# receiver confirmed, locally, as a ferry client pulling from and pushing
# to real rsync daemons, and as a ferry daemon serving a real rsync client.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON"
t_setup

head -c 200000 /dev/urandom >"$T/big.data"
mksrc() { # DIR
    rm -rf "$1"
    mkdir -p "$1/sub"
    echo a >"$1/a"
    echo b >"$1/sub/b"
    cp "$T/big.data" "$1/big"
    ln -s a "$1/link"
    touch -h -d @1600000000 "$1/a" "$1/sub/b" "$1/big" "$1/link"
}

# What is left of a source tree: names only, sorted.
left() { (cd "$1" && find . -mindepth 1 | sort | tr '\n' ' '); }

both_local() { # TAG ARGS...
    local tag=$1
    shift
    mksrc "$T/$tag.src.r"
    mksrc "$T/$tag.src.f"
    # an up-to-date copy of one file already at the destination
    mkdir -p "$T/$tag.dst.r" "$T/$tag.dst.f"
    cp -p "$T/$tag.src.r/a" "$T/$tag.dst.r/a"
    cp -p "$T/$tag.src.f/a" "$T/$tag.dst.f/a"
    "$RSYNC" "$@" "$T/$tag.src.r/" "$T/$tag.dst.r/" || return 1
    "$FERRY" "$@" "$T/$tag.src.f/" "$T/$tag.dst.f/" || return 1
    [ "$(left "$T/$tag.src.r")" = "$(left "$T/$tag.src.f")" ] ||
        { echo "rsync left: $(left "$T/$tag.src.r") ferry left: $(left "$T/$tag.src.f")"; return 1; }
    t_compare --no-dir-times "$T/$tag.dst.r" "$T/$tag.dst.f"
}
t_check remove_source_files_local both_local rsf -a --remove-source-files
t_check remove_sent_files_local both_local rsent -a --remove-sent-files

check_self() {
    mksrc "$T/self"
    "$FERRY" -a --remove-source-files "$T/self/" "$T/self/" 2>"$T/self.err"
    [ $? = 23 ] && [ -f "$T/self/a" ] && [ -f "$T/self/big" ] &&
        grep -q "Skipping sender remove of destination file" "$T/self.err"
}
t_check copy_onto_itself_removes_nothing check_self

mkdir -p "$T/rmod" "$T/fmod" "$T/fro"
t_rsyncd_start rs_rsyncd "[m]
    path = $T/rmod
    read only = no" || { t_fail rsyncd_start; t_done; }
t_ferryd_start rs_ferryd "[m]
    path = $T/fmod
    read only = no
[ro]
    path = $T/fro" || { t_fail ferryd_start; t_done; }

check_push_rsyncd() {
    mksrc "$T/push"
    "$FERRY" -a --remove-source-files "$T/push/" "rsync://127.0.0.1:$RSYNCD_PORT/m/p/" || return 1
    [ "$(left "$T/push")" = "./sub " ] || { echo "left: $(left "$T/push")"; return 1; }
    mksrc "$T/ref"
    t_compare --no-dir-times "$T/ref" "$T/rmod/p"
}
t_check ferry_push_to_rsyncd check_push_rsyncd

check_pull_rsyncd() {
    mksrc "$T/rmod/q"
    "$FERRY" -a --remove-source-files "rsync://127.0.0.1:$RSYNCD_PORT/m/q/" "$T/pulled/" || return 1
    [ "$(left "$T/rmod/q")" = "./sub " ] || { echo "left: $(left "$T/rmod/q")"; return 1; }
}
t_check ferry_pull_from_rsyncd check_pull_rsyncd

check_rsync_pull_ferryd() {
    mksrc "$T/fmod/q"
    "$RSYNC" -a --remove-source-files "rsync://127.0.0.1:$FERRYD_PORT/m/q/" "$T/pulled2/" || return 1
    [ "$(left "$T/fmod/q")" = "./sub " ] || { echo "left: $(left "$T/fmod/q")"; return 1; }
}
t_check rsync_pull_from_ferryd check_rsync_pull_ferryd

check_rsync_push_ferryd() {
    mksrc "$T/push2"
    "$RSYNC" -a --remove-source-files "$T/push2/" "rsync://127.0.0.1:$FERRYD_PORT/m/p2/" || return 1
    [ "$(left "$T/push2")" = "./sub " ]
}
t_check rsync_push_to_ferryd check_rsync_push_ferryd

check_read_only() {
    mksrc "$T/fro"
    "$RSYNC" -a --remove-source-files "rsync://127.0.0.1:$FERRYD_PORT/ro/" "$T/pulled3/" \
        >"$T/ro.out" 2>&1
    [ $? != 0 ] && grep -q "cannot be used with a read-only module" "$T/ro.out" &&
        [ -f "$T/fro/a" ]
}
t_check read_only_module_refuses check_read_only


# -R with a source directly under /: its parent is / itself (an empty
# directory part), never the sender's cwd, where a same-named, same-sized,
# same-mtime decoy waits.  Needs root to write under /.
check_root_child() { # TOOL
    local probe="/ferry-rsf-anchor-$$" cwd="$T/anchor.cwd" rc=0
    rm -rf "$cwd" "$T/anchor.dst"
    mkdir -p "$cwd" "$T/anchor.dst"
    printf 'REAL-SOURCE-CONTENT' >"$probe" || return 1
    printf 'CWD-DECOY-CONTENT!!' >"$cwd/${probe#/}"
    touch -r "$probe" "$cwd/${probe#/}"
    (cd "$cwd" && "$1" -aR --remove-source-files "$probe" "$T/anchor.dst/") || rc=1
    [ ! -e "$probe" ] || { echo "$1 left $probe"; rc=1; }
    rm -f "$probe"
    [ "$(cat "$cwd/${probe#/}")" = "CWD-DECOY-CONTENT!!" ] || { echo "$1 removed the decoy"; rc=1; }
    [ "$(cat "$T/anchor.dst/${probe#/}")" = "REAL-SOURCE-CONTENT" ] || rc=1
    return $rc
}
if [ "$(id -u)" = 0 ]; then
    t_check root_child_rsync_reference check_root_child "$RSYNC"
    t_check root_child_removes_under_root_not_cwd check_root_child "$FERRY"
else
    t_skip root_child_removes_under_root_not_cwd "needs root to write under /"
fi

t_done
