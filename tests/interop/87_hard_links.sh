#!/bin/bash
# -H against REAL rsync: which member of a hard-link group is written and
# which are linked to it shows in -v and -i output, so ferry must choose as
# rsync does (a missing member waits for the last one of its group; one
# already in place is the group's target). Each case runs the same command
# with rsync and with ferry into like destinations and compares the tree
# (hard-link groups included), the itemized output and the exit code:
# local copies with and without incremental recursion, pulls from a real
# rsync daemon, real rsync pushing to a ferry daemon, re-syncs where one
# member is already there or changed, and dry runs.
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

SRC=$T/src
make_src() {
    mkdir -p "$SRC/a/b" "$SRC/c" "$SRC/e" || return 1
    echo one >"$SRC/x" && ln "$SRC/x" "$SRC/a/x2" && ln "$SRC/x" "$SRC/c/x3"
    echo two >"$SRC/a/y" && ln "$SRC/a/y" "$SRC/a/b/y2"
    echo three >"$SRC/e/z" && ln "$SRC/e/z" "$SRC/e/z2"
    echo four >"$SRC/c/w"
    touch -d @1600000000 "$SRC"/x "$SRC"/a/y "$SRC"/e/z "$SRC"/c/w
    touch -d @1600000000 "$SRC"/a/b "$SRC"/a "$SRC"/c "$SRC"/e "$SRC"
}
t_check make_source make_src || t_done

# run TAG CMD... -- TAG.out/.err/.rc get CMD's stdout, stderr and status.
run() {
    local tag=$1
    shift
    timeout 120 "$@" >"$T/$tag.out" 2>"$T/$tag.err" </dev/null
    echo $? >"$T/$tag.rc"
}

filter_out() {
    sed -e '/^created directory/d' -e '/file list/d' -e '/^sent .* bytes/d' \
        -e '/^total size is/d' "$1"
}

# same TAG DEST_R DEST_F -- rsync's and ferry's runs agree: exit code,
# output (the destination's own name aside) and the two trees (a dry run
# leaves none).
same() {
    local tag=$1
    if [ "$(cat "$T/$tag.r.rc")" != "$(cat "$T/$tag.f.rc")" ]; then
        echo "exit: rsync $(cat "$T/$tag.r.rc"), ferry $(cat "$T/$tag.f.rc")"
        cat "$T/$tag.f.err"
        return 1
    fi
    # rsync copies locally with incremental recursion even with -H, where
    # ferry uses one list: the header and the byte counts differ.
    # Where a link line falls depends on when the generator hears that the
    # transfer it waits for is done, in rsync as in ferry: compared as sets.
    diff <(filter_out "$T/$tag.r.out" | sort) <(filter_out "$T/$tag.f.out" | sort) || return 1
    [ -e "$2" ] || [ -e "$3" ] || return 0
    t_compare "$2" "$3" --nsec
}

# prepare NAME SETUP -- fresh destinations $T/NAME.r and $T/NAME.f, each
# set up by the function SETUP DIR (or left missing for "none").
prepare() {
    rm -rf "$T/$1.r" "$T/$1.f"
    [ "$2" = none ] && return 0
    mkdir -p "$T/$1.r" "$T/$1.f"
    "$2" "$T/$1.r" && "$2" "$T/$1.f"
}

# Some members are there already, as copies of their own.
partial_dest() {
    mkdir -p "$1/a/b" "$1/c" && cp -p "$SRC/x" "$1/x" && cp -p "$SRC/a/b/y2" "$1/a/b/y2" &&
        touch -d @1500000000 "$1/a/b" "$1/a" "$1/c" "$1"
}
# The group's first member is there but changed.
changed_dest() {
    mkdir -p "$1/a" && echo changed >"$1/x" && cp -p "$SRC/a/y" "$1/a/y" &&
        touch -d @1500000000 "$1/x" "$1/a" "$1"
}
# Every member is there and linked: nothing to do.
full_dest() {
    "$RSYNC" -aH "$SRC/" "$1/"
}

# local NAME SETUP OPTS... -- a local copy by rsync and by ferry.
local_case() {
    local name=$1 setup=$2
    shift 2
    prepare "$name" "$setup" || return 1
    run "$name.r" "$RSYNC" -aHi "$@" "$SRC/" "$T/$name.r/"
    run "$name.f" "$FERRY" -aHi "$@" "$SRC/" "$T/$name.f/"
    same "$name" "$T/$name.r" "$T/$name.f"
}

for setup in none partial_dest changed_dest full_dest; do
    t_check "local_${setup}" local_case "l_$setup" "$setup"
    t_check "local_${setup}_no_inc" local_case "ln_$setup" "$setup" --no-inc-recursive
    t_check "local_${setup}_verbose" local_case "lv_$setup" "$setup" -v
done
t_check local_dry_run local_case l_dry none -n
t_check local_partial_dry_run local_case l_pdry partial_dest -n

if t_check rsyncd_start t_rsyncd_start hl "[m]
    path = $SRC
    read only = yes"; then
    pull_case() {
        local name=$1 setup=$2
        shift 2
        prepare "$name" "$setup" || return 1
        run "$name.r" "$RSYNC" -aHi "$@" "rsync://127.0.0.1:$RSYNCD_PORT/m/" "$T/$name.r/"
        run "$name.f" "$FERRY" -aHi "$@" "rsync://127.0.0.1:$RSYNCD_PORT/m/" "$T/$name.f/"
        same "$name" "$T/$name.r" "$T/$name.f"
    }
    for setup in none partial_dest changed_dest; do
        t_check "pull_${setup}" pull_case "p_$setup" "$setup"
        t_check "pull_${setup}_no_inc" pull_case "pn_$setup" "$setup" --no-inc-recursive
    done
    t_check pull_dry_run pull_case p_dry none -n
    t_check pull_dry_run_no_inc pull_case pn_dry none -n --no-inc-recursive
    t_rsyncd_stop
fi

# Real rsync pushes to an rsync daemon and to a ferry daemon: the item
# lines the client prints come from the receiving daemon's generator.
PUSH_R=$T/push_r
PUSH_F=$T/push_f
mkdir -p "$PUSH_R" "$PUSH_F"
if t_check push_daemons_start t_rsyncd_start hlr "[m]
    path = $PUSH_R
    read only = no" && t_ferryd_start hlf "[m]
    path = $PUSH_F
    read only = no"; then
    push_case() {
        local name=$1 setup=$2
        shift 2
        rm -rf "${PUSH_R:?}"/* "${PUSH_F:?}"/*
        if [ "$setup" != none ]; then
            "$setup" "$PUSH_R" && "$setup" "$PUSH_F" || return 1
        fi
        run "$name.r" "$RSYNC" -aHi "$@" "$SRC/" "rsync://127.0.0.1:$RSYNCD_PORT/m/"
        run "$name.f" "$RSYNC" -aHi "$@" "$SRC/" "rsync://127.0.0.1:$FERRYD_PORT/m/"
        same "$name" "$PUSH_R" "$PUSH_F"
    }
    for setup in none partial_dest changed_dest; do
        t_check "rsync_push_${setup}" push_case "u_$setup" "$setup"
        t_check "rsync_push_${setup}_no_inc" push_case "un_$setup" "$setup" --no-inc-recursive
    done
    # ferry sends: hard links named across parts of an incremental list
    # (a leader in an earlier part is named with all attributes).
    # push_into NAME SETUP CLIENT OPTS... -- a fresh $PUSH_R set up by
    # SETUP, then CLIENT pushes into it; the result is moved to NAME.tree.
    push_into() {
        local name=$1 setup=$2 client=$3
        shift 3
        rm -rf "$PUSH_R" "$T/$name.tree" && mkdir "$PUSH_R" || return 1
        if [ "$setup" != none ]; then
            "$setup" "$PUSH_R" || return 1
        fi
        run "$name" "$client" -aHi "$@" "$SRC/" "rsync://127.0.0.1:$RSYNCD_PORT/m/"
        mv "$PUSH_R" "$T/$name.tree" && mkdir "$PUSH_R"
    }
    ferry_push_case() {
        local name=$1 setup=$2
        shift 2
        push_into "$name.f" "$setup" "$FERRY" "$@" &&
            push_into "$name.r" "$setup" "$RSYNC" "$@" &&
            same "$name" "$T/$name.r.tree" "$T/$name.f.tree"
    }
    for setup in none partial_dest changed_dest; do
        t_check "ferry_push_${setup}" ferry_push_case "fu_$setup" "$setup"
        t_check "ferry_push_${setup}_no_inc" ferry_push_case "fun_$setup" "$setup" \
            --no-inc-recursive
    done
    # real rsync pulls from a ferry daemon (ferry sends) and from rsync's
    if t_ferryd_start hlsrc "[m]
    path = $SRC
    read only = yes"; then
        FERRY_SRC_PORT=$FERRYD_PORT
        rsync_pull_case() {
            local name=$1 setup=$2
            shift 2
            prepare "$name" "$setup" || return 1
            run "$name.r" "$RSYNC" -aHi "$@" "$SRC/" "$T/$name.r/"
            run "$name.f" "$RSYNC" -aHi "$@" "rsync://127.0.0.1:$FERRY_SRC_PORT/m/" "$T/$name.f/"
            same "$name" "$T/$name.r" "$T/$name.f"
        }
        for setup in none partial_dest changed_dest; do
            t_check "rsync_pulls_ferry_${setup}" rsync_pull_case "rp_$setup" "$setup"
            t_check "rsync_pulls_ferry_${setup}_no_inc" rsync_pull_case "rpn_$setup" "$setup" \
                --no-inc-recursive
        done
    fi
fi

t_check no_sanitizer_reports t_no_sanitizer_reports "$T"
t_done
