#!/bin/bash
# One test per pull option, each asserting the option's EFFECT, and where
# it makes sense that ferry ends exactly where REAL rsync ends from the same
# starting state: same tree, same itemized/verbose output (as sorted sets of
# lines; the "receiving ... file list" line is dropped because with -H,
# -A and a few other options ferry asks for whole lists where rsync would
# not), same exit code.
#
# Run against real rsync (FERRY=/usr/bin/rsync) every check must pass: that
# proves the checks themselves.
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON" "$FERRY"
t_setup

SRC=$T/src     # the main module: small, every kind of entry
ESC=$T/esc     # names with control characters
SLOW=$T/slow   # one big file, for interrupting a transfer
IS_ROOT=0
[ "$(id -u)" = 0 ] && IS_ROOT=1

# ------------------------------------------------------------------ fixture

# settime N PATH... -- a fixed, distinct mtime with a nanosecond part.
settime() {
    local n=$1
    shift
    touch -h -d "@$((1600000000 + n * 3600)).$((100000000 + n * 1234567))" "$@"
}

make_src() {
    (
        umask 022
        mkdir -p "$SRC/dir1/sub" "$SRC/dir2" "$SRC/emptydir" || exit 1
        cd "$SRC" || exit 1
        echo "alpha" >a.txt
        echo "bravo bravo" >b.txt
        echo "object c" >c.o
        echo "object d" >d.o
        echo "keep me" >keep.o
        printf '#!/bin/sh\n' >exec.sh && chmod 0755 exec.sh
        echo "private" >priv.txt && chmod 0600 priv.txt
        head -c 2097152 /dev/urandom >big.bin
        echo "x" >dir1/x.txt
        echo "y log" >dir1/y.log
        echo "z" >dir1/sub/z.txt
        echo "w" >dir2/w.c
        ln -s a.txt link
        # A sender-side per-directory rule file, for the dir-merge case.
        printf -- '- *.log\n' >dir1/.rules
        local i=0 p
        for p in a.txt b.txt c.o d.o keep.o exec.sh priv.txt big.bin dir1/x.txt \
            dir1/y.log dir1/sub/z.txt dir2/w.c link dir1/.rules; do
            i=$((i + 1))
            settime "$i" "$p"
        done
        settime 20 dir1/sub && settime 21 dir1 && settime 22 dir2 &&
            settime 23 emptydir && settime 24 .
    ) || return 1
    mkdir -p "$ESC" && echo nl >"$ESC/new"$'\n'"line" && echo tab >"$ESC/tab"$'\t'"name" &&
        echo esc >"$ESC/esc"$'\033'"[1mbold" && echo del >"$ESC/del"$'\177'"x" || return 1
    mkdir -p "$SLOW" && head -c $((24 * 1048576)) /dev/urandom >"$SLOW/big" &&
        settime 1 "$SLOW/big"
}

if ! t_check make_src make_src; then
    t_done
fi
echo "Welcome to the ferry test daemon" >"$T/motd"
printf '  - a second motd line\n' >>"$T/motd"
MODULES="
motd file = $T/motd
[src]
    path = $SRC
    comment = the main test tree
    read only = yes
[esc]
    path = $ESC
[nocomment]
    path = $SRC
[unlisted]
    path = $SRC
    list = no
[slow]
    path = $SLOW
"
if ! t_rsyncd_start d11 "$MODULES"; then
    t_fail rsyncd_start "real rsync daemon did not start"
    t_done
fi
PORT=$RSYNCD_PORT
BASE=rsync://127.0.0.1:$PORT
URL=$BASE/src/

# ------------------------------------------------------------------ helpers

# run_tool TOOL OUT ARGS... -- run a transfer; OUT.out/.err/.rc get its
# stdout, stderr and exit code.
# Set RUN_AS (an array) to run it under another identity.
RUN_AS=()
run_tool() {
    local tool=$1 out=$2
    shift 2
    (umask 022 && exec "${RUN_AS[@]}" "$tool" "$@") >"$out.out" 2>"$out.err" </dev/null
    echo $? >"$out.rc"
}

# both NAME PREP ARGS... -- the same pull with rsync and with ferry:
# PREP (a function, or - for none) makes the starting state of each dest,
# $T/NAME.rsync and $T/NAME.ferry; ARGS get the dest appended.
both() {
    local name=$1 prep=$2 side tool d
    shift 2
    for side in rsync ferry; do
        d=$T/$name.$side
        tool=$RSYNC
        [ "$side" = ferry ] && tool=$FERRY
        if [ "$prep" != - ]; then
            if ! { "$prep" "$d" && fix_times "$d"; }; then
                echo "prep $prep $d failed"
                return 1
            fi
        fi
        run_tool "$tool" "$d" "$@" "$d/"
    done
}

rc_of() { cat "$1.rc"; }

# rc_is RUN N -- the run exited with N.
rc_is() {
    local rc
    rc=$(rc_of "$1")
    [ "$rc" = "$2" ] && return 0
    echo "exit $rc, expected $2"
    show_run "$1"
    return 1
}

# same_rc NAME -- ferry's exit code equals rsync's.
same_rc() {
    local r f
    r=$(rc_of "$T/$1.rsync") f=$(rc_of "$T/$1.ferry")
    [ "$r" = "$f" ] && return 0
    echo "exit: rsync $r, ferry $f"
    show_run "$T/$1.ferry"
    return 1
}

# pin_time NAME REL... -- after a run, give REL in both dests one fixed
# mtime: for directories outside the transfer (the dest root of a
# single-file pull, a dir kept by --delete) "now" is the right answer, and
# it differs between the two runs.
pin_time() {
    local name=$1 rel side
    shift
    for rel in "$@"; do
        for side in rsync ferry; do
            [ -e "$T/$name.$side/$rel" ] && touch -h -d @1650000000 "$T/$name.$side/$rel"
        done
    done
    return 0
}

# same_tree NAME [treecmp flags] -- ferry's dest equals rsync's.
same_tree() {
    local name=$1
    shift
    t_compare "$T/$name.rsync" "$T/$name.ferry" --nsec --no-hardlinks "$@"
}

# norm_out RUN -- RUN.out as a sorted set of lines. Dropped or masked: the
# "receiving ... file list" line (with -H, -A and a few other options ferry
# asks for whole lists where rsync would not), blank lines, the dest path in "created directory"
# (each tool has its own), and the byte counts and rate of the -v summary,
# which depend on protocol details; "total size is N" must still match.
norm_out() {
    grep -v -e '^receiving .*file list' -e '^$' "$1.out" |
        sed -e "s|^created directory $1\$|created directory DEST|" \
            -e 's/^sent [0-9,.]* bytes  received [0-9,.]* bytes .*/sent N bytes  received N bytes/' \
            -e 's/^\(total size is [0-9,.]*\)  speedup is .*/\1/' |
        LC_ALL=C sort
}

# same_out NAME -- ferry's stdout equals rsync's as a set of lines.
same_out() {
    local name=$1
    if diff <(norm_out "$T/$name.rsync") <(norm_out "$T/$name.ferry") >"$T/$name.diff"; then
        return 0
    fi
    echo "stdout differs (< rsync, > ferry):"
    head -n 30 "$T/$name.diff"
    return 1
}

# exact_out NAME -- byte-identical stdout (listings).
exact_out() {
    cmp -s "$T/$1.rsync.out" "$T/$1.ferry.out" && return 0
    echo "stdout differs (< rsync, > ferry):"
    diff "$T/$1.rsync.out" "$T/$1.ferry.out" | head -n 30
    return 1
}

# A whole-script SKIP would hide every other result: an option ferry
# documents as "not supported yet" only skips its own case.
ferry_unsupported() { grep -q 'is not supported yet' "$T/$1.ferry.err" 2>/dev/null; }

# ------------------------------------------------------ destination states

prep_copy() { rm -rf "$1" && cp -a "$SRC" "$1"; }

# fix_times DIR -- entries a prep just made get one fixed mtime, so the two
# starting states (made at different moments) are identical.
fix_times() {
    local now
    now=$(date +%s)
    find "$1" -newermt "@$((now - 86400))" ! -newermt "@$((now + 3600))" \
        -exec touch -h -d @1650000000 {} +
}

# Many kinds of difference at once, for itemize/verbose/dry-run output.
prep_stale() {
    prep_copy "$1" || return 1
    (
        cd "$1" || exit 1
        rm a.txt                               # missing file
        echo "changed content" >b.txt          # new size and mtime
        chmod 0640 priv.txt                    # perms only
        touch -d @1500000000 keep.o            # mtime only
        rm -rf dir2                            # missing directory
        ln -sfn b.txt link                     # symlink target
        echo extra >extra.txt                  # extraneous file
        mkdir -p extradir/deeper && echo e >extradir/deeper/e.txt
        printf 'X' | dd of=big.bin bs=1 seek=1000000 conv=notrunc status=none
        touch -d @1500000000 big.bin
    )
}

# A complete copy plus extraneous entries, some matching "*.o".
prep_extras() {
    prep_copy "$1" || return 1
    (
        cd "$1" || exit 1
        echo 1 >extra1.txt && echo 2 >extra2.txt && echo o >extra.o
        mkdir -p gone/inner && echo g >gone/inner/g.txt && echo o >gone/x.o
        echo s >dir1/sub/stale.txt
    )
}

# ---------------------------------------------------------------- dry run

# -n: nothing changes on disk, and the report equals rsync's dry run.
test_dry_run() {
    both dry_run prep_stale -a -n -i --delete "$URL"
    prep_stale "$T/dry_run.pristine" && fix_times "$T/dry_run.pristine"
    t_check dry_run.rc rc_is "$T/dry_run.ferry" 0
    t_check dry_run.unchanged t_compare "$T/dry_run.pristine" "$T/dry_run.ferry" --nsec
    t_check dry_run.itemize_like_rsync same_out dry_run

    # Into a destination that does not exist yet: nothing may be created,
    # and everything is new -- whatever the current directory holds (here
    # an up-to-date copy of the source, which must not be mistaken for
    # the destination).
    prep_copy "$T/cwd" && fix_times "$T/cwd"
    (cd "$T/cwd" && both dry_run_new - -a -n -i "$URL")
    t_check dry_run_new.rc rc_is "$T/dry_run_new.ferry" 0
    t_check dry_run_new.nothing_created test ! -e "$T/dry_run_new.ferry"
    t_check dry_run_new.itemize_like_rsync same_out dry_run_new
}

# ---------------------------------------------------------------- deletes

# gone_extras DIR -- every extraneous entry from prep_extras was deleted.
gone_extras() {
    local p left=()
    for p in extra1.txt extra2.txt extra.o gone dir1/sub/stale.txt; do
        [ -e "$1/$p" ] && left+=("$p")
    done
    [ ${#left[@]} -eq 0 ] && return 0
    echo "still there: ${left[*]}"
    return 1
}

test_delete_modes() {
    local mode name
    for mode in --delete --delete-before --delete-during --delete-after --delete-delay --del; do
        name=${mode#--}
        name=${name//-/_}
        both "$name" prep_extras -a -i "$mode" "$URL"
        t_check "$name.rc" rc_is "$T/$name.ferry" 0
        t_check "$name.extras_gone" gone_extras "$T/$name.ferry"
        t_check "$name.tree_like_rsync" same_tree "$name"
        t_check "$name.itemize_like_rsync" same_out "$name"
    done
}

test_delete_excluded() {
    # Excluded files are neither sent nor deleted without --delete-excluded.
    both del_excl_kept prep_extras -a --delete --exclude='*.o' "$URL"
    t_check del_excl_kept.rc rc_is "$T/del_excl_kept.ferry" 0
    t_check del_excl_kept.excluded_kept test -f "$T/del_excl_kept.ferry/extra.o" \
        -a -f "$T/del_excl_kept.ferry/keep.o"
    t_check del_excl_kept.others_gone test ! -e "$T/del_excl_kept.ferry/extra1.txt"
    pin_time del_excl_kept gone # lost gone/inner, kept gone/x.o
    t_check del_excl_kept.tree_like_rsync same_tree del_excl_kept

    both del_excluded prep_extras -a -i --delete --delete-excluded --exclude='*.o' "$URL"
    t_check del_excluded.rc rc_is "$T/del_excluded.ferry" 0
    t_check del_excluded.excluded_gone test ! -e "$T/del_excluded.ferry/extra.o" \
        -a ! -e "$T/del_excluded.ferry/keep.o"
    t_check del_excluded.tree_like_rsync same_tree del_excluded
    t_check del_excluded.itemize_like_rsync same_out del_excluded
}

# count_extras DIR -- how many of the extraneous entries are left
# (a deleted directory counts with everything in it).
count_extras() {
    local p n=0
    for p in extra1.txt extra2.txt extra.o gone/inner/g.txt gone/inner gone/x.o gone \
        dir1/sub/stale.txt; do
        [ -e "$1/$p" ] && n=$((n + 1))
    done
    echo "$n"
}

# --max-delete=N: exit 25, at most N deletions, the rest of the transfer done.
test_max_delete() {
    both max_delete prep_extras -a --delete --max-delete=2 "$URL"
    t_check max_delete.rc_25 rc_is "$T/max_delete.ferry" 25
    at_most_two() {
        local left
        left=$(count_extras "$T/max_delete.ferry")
        echo "extras left: $left of 8"
        [ "$left" -ge 6 ]
    }
    t_check max_delete.at_most_n at_most_two
    pin_time max_delete gone
    t_check max_delete.tree_like_rsync same_tree max_delete
}

# ---------------------------------------------------------------- filters

test_filters() {
    printf '# comment\n; another comment\n\n*.o\n/b.txt\ndir1/sub/\n' >"$T/exclude-from"
    printf '*/\n*.txt\n' >"$T/include-from"
    local i=0 rules
    # One rule set per line, each argument separated by "|".
    while IFS= read -r rules; do
        [ -n "$rules" ] || continue
        i=$((i + 1))
        local args=()
        IFS='|' read -ra args <<<"$rules"
        echo "filter$i: ${args[*]}"
        both "filter$i" - -a "${args[@]}" "$URL"
        t_check "filter$i.rc" rc_is "$T/filter$i.ferry" 0
        t_check "filter$i.tree_like_rsync" same_tree "filter$i"
    done <<EOF
--exclude=*.o
--include=keep.o|--exclude=*.o
--filter=- dir1/|--filter=- /b.txt
--filter=+ */|--filter=+ *.txt|--filter=- *
--filter=- **/sub/**|--filter=- [ab].txt
--exclude-from=$T/exclude-from
--include-from=$T/include-from|--exclude=*
--filter=: .rules
--filter=-! */|--filter=-! *.c
EOF
}

# ------------------------------------------------------- skip decisions

# set_file DIR REL CONTENT MTIME -- give a dest file new content and mtime.
set_file() { printf '%s' "$3" >"$1/$2" && touch -d "@$4" "$1/$2"; }

# -u: a newer file on the receiver is kept; an older one is updated.
prep_update() {
    prep_copy "$1" && set_file "$1" a.txt "newer on dest" 1900000000 &&
        set_file "$1" b.txt "older on dest" 1500000000
}
test_update() {
    both update prep_update -a -u "$URL"
    t_check update.rc rc_is "$T/update.ferry" 0
    t_check update.newer_kept grep -qx 'newer on dest' "$T/update.ferry/a.txt"
    t_check update.older_replaced cmp "$SRC/b.txt" "$T/update.ferry/b.txt"
    t_check update.tree_like_rsync same_tree update
}

# --existing: only files already on the receiver are updated.
prep_existing() {
    rm -rf "$1" && mkdir -p "$1/dir1" && set_file "$1" a.txt "old" 1500000000
}
test_existing() {
    both existing prep_existing -a --existing "$URL"
    t_check existing.rc rc_is "$T/existing.ferry" 0
    t_check existing.updated cmp "$SRC/a.txt" "$T/existing.ferry/a.txt"
    t_check existing.nothing_new test ! -e "$T/existing.ferry/b.txt" \
        -a ! -e "$T/existing.ferry/dir2" -a ! -e "$T/existing.ferry/dir1/x.txt"
    t_check existing.tree_like_rsync same_tree existing
}

# --ignore-existing: files already on the receiver are left alone.
prep_ign_existing() {
    rm -rf "$1" && mkdir -p "$1" && set_file "$1" a.txt "mine, do not touch" 1500000000
}
test_ignore_existing() {
    both ign_existing prep_ign_existing -a --ignore-existing "$URL"
    t_check ign_existing.rc rc_is "$T/ign_existing.ferry" 0
    t_check ign_existing.kept grep -qx 'mine, do not touch' "$T/ign_existing.ferry/a.txt"
    t_check ign_existing.others_created cmp "$SRC/b.txt" "$T/ign_existing.ferry/b.txt"
    t_check ign_existing.tree_like_rsync same_tree ign_existing
}

# --size-only: same size counts as up to date, whatever the mtime says.
prep_size_only() {
    prep_copy "$1" && set_file "$1" a.txt $'ALPHA\n' 1500000000 && # same size
        set_file "$1" b.txt "short" 1500000000                     # other size
}
test_size_only() {
    both size_only prep_size_only -a -i --size-only "$URL"
    t_check size_only.rc rc_is "$T/size_only.ferry" 0
    t_check size_only.same_size_kept grep -qx 'ALPHA' "$T/size_only.ferry/a.txt"
    t_check size_only.other_size_sent cmp "$SRC/b.txt" "$T/size_only.ferry/b.txt"
    t_check size_only.tree_like_rsync same_tree size_only
    t_check size_only.itemize_like_rsync same_out size_only
}

# -I: same size and mtime is not enough, every file is checked.
prep_same_stat() {
    prep_copy "$1" && printf 'ALPHA\n' >"$1/a.txt" && touch -r "$SRC/a.txt" "$1/a.txt"
}
test_ignore_times() {
    both no_ignore_times prep_same_stat -a "$URL"
    t_check quick_check.same_stat_skipped grep -qx 'ALPHA' "$T/no_ignore_times.ferry/a.txt"
    both ignore_times prep_same_stat -a -i -I "$URL"
    t_check ignore_times.rc rc_is "$T/ignore_times.ferry" 0
    t_check ignore_times.resent cmp "$SRC/a.txt" "$T/ignore_times.ferry/a.txt"
    t_check ignore_times.tree_like_rsync same_tree ignore_times
    t_check ignore_times.itemize_like_rsync same_out ignore_times
}

# A copy whose mtimes differ from the source's in the nanoseconds only.
prep_subsecond() {
    prep_copy "$1" && "$PYTHON" -c 'import os, sys
for root, dirs, files in os.walk(sys.argv[1]):
    for p in [root] + [os.path.join(root, n) for n in dirs + files]:
        st = os.lstat(p)
        ns = st.st_mtime_ns // 10**9 * 10**9 + (st.st_mtime_ns + 500000000) % 10**9
        os.utime(p, ns=(st.st_atime_ns, ns), follow_symlinks=False)' "$1"
}

# --modify-window: by default mtimes are equal when their whole seconds
# are ("The default is 0, which matches just integer seconds"); a negative
# window makes nanoseconds count too.
test_modify_window() {
    both subsecond prep_subsecond -a -i "$URL"
    t_check subsecond.rc rc_is "$T/subsecond.ferry" 0
    t_check subsecond.itemize_like_rsync same_out subsecond
    t_check subsecond.tree_like_rsync same_tree subsecond
    both subsecond_mw prep_subsecond -a -i --modify-window=-1 "$URL"
    t_check subsecond_mw.itemize_like_rsync same_out subsecond_mw
    t_check subsecond_mw.tree_like_rsync same_tree subsecond_mw
}

# ------------------------------------------------------- transfer modes

# stat_field FILE NAME -- the number of a --stats line "NAME: N bytes".
stat_field() {
    sed -n "s/^$2: \([0-9,]*\).*/\1/p" "$1" | tr -d ',' | head -n 1
}

# An up-to-date copy except big.bin: one byte changed and an older mtime.
prep_big_stale() {
    prep_copy "$1" || return 1
    printf 'X' | dd of="$1/big.bin" bs=1 seek=1000000 conv=notrunc status=none
    touch -d @1500000000 "$1/big.bin"
}

# -W sends the whole file as literal data; without it almost all matches.
test_whole_file() {
    local size
    size=$(stat -c %s "$SRC/big.bin")
    prep_big_stale "$T/whole.ferry"
    run_tool "$FERRY" "$T/whole.ferry" -a -W --stats "$URL" "$T/whole.ferry/"
    # literal_is RUN equal|below -- RUN's literal data vs the file size.
    literal_is() {
        local got
        got=$(stat_field "$T/$1.ferry.out" "Literal data")
        echo "literal data: $got (file size $size) expect $2"
        [ -n "$got" ] || return 1
        case $2 in
        equal) [ "$got" -eq "$size" ] ;;
        below) [ "$got" -lt "$size" ] ;;
        esac
    }
    t_check whole_file.rc rc_is "$T/whole.ferry" 0
    t_check whole_file.literal_equals_size literal_is whole equal
    t_check whole_file.result cmp "$SRC/big.bin" "$T/whole.ferry/big.bin"
    prep_big_stale "$T/delta.ferry"
    run_tool "$FERRY" "$T/delta.ferry" -a --no-W --stats "$URL" "$T/delta.ferry/"
    t_check no_whole_file.literal_below_size literal_is delta below
    t_check no_whole_file.result cmp "$SRC/big.bin" "$T/delta.ferry/big.bin"
}

# --inplace writes into the existing file (same inode); the default
# writes a temp file and renames it over (new inode).
test_inplace() {
    local d=$T/inplace.ferry d2=$T/notinplace.ferry before
    prep_big_stale "$d"
    before=$(stat -c %i "$d/big.bin")
    run_tool "$FERRY" "$d" -a --inplace "$URL" "$d/"
    t_check inplace.rc rc_is "$d" 0
    t_check inplace.result t_compare "$SRC" "$d" --nsec
    # same_inode DIR yes|no -- is big.bin still the file it was?
    same_inode() {
        local now
        now=$(stat -c %i "$1/big.bin")
        echo "inode before $before, after $now"
        if [ "$2" = yes ]; then [ "$now" = "$before" ]; else [ "$now" != "$before" ]; fi
    }
    t_check inplace.same_inode same_inode "$d" yes
    prep_big_stale "$d2"
    before=$(stat -c %i "$d2/big.bin")
    run_tool "$FERRY" "$d2" -a "$URL" "$d2/"
    t_check not_inplace.new_inode same_inode "$d2" no
}

# ---------------------------------------------------------------- partial

# A second daemon that sends at most 2 MB/s, so a transfer of the 24 MiB
# file can be interrupted part way. t_rsyncd_start runs "$RSYNC --daemon
# ...", so a wrapper adds the daemon-side --bwlimit.
start_slow_daemon() {
    local wrapper=$T/rsync-slow
    printf '#!/bin/sh\nexec %q "$@" --bwlimit=2000\n' "$(command -v "$RSYNC")" >"$wrapper"
    chmod +x "$wrapper"
    RSYNC=$wrapper t_rsyncd_start d11slow "$MODULES"
}

# interrupt TOOL DEST ARGS... -- start a pull of slow/big, SIGTERM the
# client once 1 MiB has arrived; DEST.rc gets the client's exit code.
interrupt() {
    local tool=$1 d=$2 pid i
    shift 2
    mkdir -p "$d"
    (exec "$tool" "$@" "$SLOWURL/big" "$d/") >"$d.out" 2>"$d.err" </dev/null &
    pid=$!
    for i in $(seq 100); do
        [ -n "$(find "$d" -type f -size +1024k 2>/dev/null)" ] && break
        t_pid_alive "$pid" || break
        sleep 0.1
    done
    kill -TERM "$pid" 2>/dev/null
    wait "$pid"
    echo $? >"$d.rc"
    ls -la "$d"
}

# partial_prefix DIR -- DIR/big is a proper, non-empty prefix of the source.
partial_prefix() {
    local size
    size=$(stat -c %s "$1/big" 2>/dev/null) || { echo "no $1/big"; return 1; }
    echo "partial size $size"
    [ "$size" -gt 0 ] && [ "$size" -lt "$(stat -c %s "$SLOW/big")" ] &&
        cmp -n "$size" "$SLOW/big" "$1/big"
}

# nothing_left DIR -- no dest file and no temp file left behind.
nothing_left() {
    local left
    left=$(find "$1" -mindepth 1)
    [ -z "$left" ] && return 0
    echo "left behind: $left"
    return 1
}

test_partial() {
    if ! start_slow_daemon; then
        t_fail partial "slow rsync daemon did not start"
        return
    fi
    SLOWURL=rsync://127.0.0.1:$RSYNCD_PORT/slow
    local slow_pid=$RSYNCD_PID
    interrupt "$RSYNC" "$T/partial.rsync" -a --partial
    interrupt "$FERRY" "$T/partial.ferry" -a --partial
    t_check partial.rc_like_rsync same_rc partial
    t_check partial.kept_prefix partial_prefix "$T/partial.ferry"

    interrupt "$FERRY" "$T/nopartial.ferry" -a
    t_check no_partial.nothing_left nothing_left "$T/nopartial.ferry"
    t_rsyncd_stop "$slow_pid"

    # The kept part is the basis of the next (fast) pull.
    local d=$T/partial.ferry
    run_tool "$FERRY" "$d.resume" -a --partial --stats "$BASE/slow/big" "$d/"
    resumed() {
        local m
        m=$(stat_field "$d.resume.out" "Matched data")
        echo "matched data: $m"
        [ -n "$m" ] && [ "$m" -gt 0 ] && cmp "$SLOW/big" "$d/big"
    }
    t_check partial.resume_uses_partial resumed
}

# ------------------------------------------------------------ reporting

# Same starting state, same options: the same lines on stdout.
test_output_formats() {
    both itemize_new - -a -i "$URL"
    t_check itemize_new.itemize_like_rsync same_out itemize_new
    both itemize prep_stale -a -i --delete "$URL"
    t_check itemize.rc rc_is "$T/itemize.ferry" 0
    t_check itemize.itemize_like_rsync same_out itemize
    t_check itemize.tree_like_rsync same_tree itemize
    both itemize_twice prep_stale -a -ii --delete "$URL"
    t_check itemize_twice.like_rsync same_out itemize_twice
    both out_format prep_stale -a --delete --out-format='%i %n%L' "$URL"
    t_check out_format.like_rsync same_out out_format
    both out_format_more prep_stale -a --out-format='%o %f %l %M %B|%n|' "$URL"
    t_check out_format_more.like_rsync same_out out_format_more
    both verbose_new - -av "$URL"
    t_check verbose_new.like_rsync same_out verbose_new
    both verbose prep_stale -av --delete "$URL"
    t_check verbose.like_rsync same_out verbose
    # Control characters in names are shown escaped ("\#012"), so one
    # name cannot forge or split report lines.
    both escapes mkdir -a -i --exclude='del*' "$BASE/esc/"
    t_check escapes.like_rsync same_out escapes
    # DEL (0x7f) is no control character to rsync: it is printed as is.
    both escape_del mkdir -a -i --include='del*' --exclude='*' "$BASE/esc/"
    t_check escape_del.like_rsync same_out escape_del
    # Without -l/-D rsync says what it leaves out, even without -v.
    both nonreg - -r "$URL"
    t_check nonreg.message_like_rsync same_out nonreg
}

test_stats() {
    both stats - -a --stats "$URL"
    t_check stats.rc rc_is "$T/stats.ferry" 0
    all_fields() {
        local f missing=()
        while IFS= read -r f; do
            grep -q "^$f: " "$T/stats.ferry.out" || missing+=("$f")
        done < <(sed -n 's/^\([A-Z][A-Za-z ]*\): .*/\1/p' "$T/stats.rsync.out")
        [ ${#missing[@]} -eq 0 ] && return 0
        echo "missing stats fields: ${missing[*]}"
        return 1
    }
    t_check stats.all_fields all_fields
    same_line() {
        local r f
        r=$(grep "^$2: " "$T/$1.rsync.out") f=$(grep "^$2: " "$T/$1.ferry.out")
        [ "$r" = "$f" ] && return 0
        echo "rsync: $r"
        echo "ferry: $f"
        return 1
    }
    local field
    for field in "Number of files" "Number of created files" "Number of deleted files" \
        "Number of regular files transferred" "Total file size" \
        "Total transferred file size" "Literal data" "Matched data"; do
        t_check "stats.${field// /_}" same_line stats "$field"
    done
    # Deletions and a delta transfer in the counts.
    both stats_stale prep_stale -a --delete --stats "$URL"
    for field in "Number of files" "Number of created files" "Number of deleted files" \
        "Number of regular files transferred" "Total file size" \
        "Total transferred file size"; do
        t_check "stats_stale.${field// /_}" same_line stats_stale "$field"
    done
}

test_listings() {
    both list_only - --list-only "$URL"
    t_check list_only.rc rc_is "$T/list_only.ferry" 0
    t_check list_only.like_rsync exact_out list_only
    both list_only_r - -r --list-only "$URL"
    t_check list_only_r.like_rsync exact_out list_only_r
    run_tool "$RSYNC" "$T/modules.rsync" "$BASE/"
    run_tool "$FERRY" "$T/modules.ferry" "$BASE/"
    t_check modules.rc rc_is "$T/modules.ferry" 0
    t_check modules.like_rsync exact_out modules
    t_check modules.motd grep -q 'Welcome to the ferry test daemon' "$T/modules.ferry.out"
    # --no-motd also suppresses the module list (a protocol limitation
    # that rsync's manual documents).
    run_tool "$RSYNC" "$T/modules_no_motd.rsync" --no-motd "$BASE/"
    run_tool "$FERRY" "$T/modules_no_motd.ferry" --no-motd "$BASE/"
    t_check modules_no_motd.like_rsync exact_out modules_no_motd
    # A transfer shows the motd, unless --no-motd.
    both motd_pull - -a "$BASE/src/a.txt"
    t_check motd_pull.shown grep -q 'Welcome to the ferry test daemon' "$T/motd_pull.ferry.out"
    t_check motd_pull.like_rsync exact_out motd_pull
    both no_motd_pull - -a --no-motd "$BASE/src/a.txt"
    no_motd() { ! grep -q Welcome "$1" && [ -f "$2/a.txt" ]; }
    t_check no_motd_pull.suppressed no_motd "$T/no_motd_pull.ferry.out" "$T/no_motd_pull.ferry"
}

# ------------------------------------------------------ connection options

# --timeout: a daemon that accepts but never speaks makes both give up
# with exit 30 ("timeout in data send/receive").
test_timeout() {
    local port pid
    port=$(t_free_port) || return 1
    "$PYTHON" -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8)
conns = []
while True:
    conns.append(s.accept()[0])' "$port" >/dev/null 2>&1 &
    pid=$!
    t_track_pid "$pid"
    t_wait_port "$port" 10 "$pid" || { t_fail timeout "silent server did not start"; return; }
    local start end
    start=$(date +%s)
    run_tool "$FERRY" "$T/timeout.ferry" -a --timeout=2 "rsync://127.0.0.1:$port/src/" "$T/timeout.ferry/"
    end=$(date +%s)
    run_tool "$RSYNC" "$T/timeout.rsync" -a --timeout=2 "rsync://127.0.0.1:$port/src/" "$T/timeout.rsync/"
    t_check timeout.rc_like_rsync same_rc timeout
    t_check timeout.rc_30 rc_is "$T/timeout.ferry" 30
    took() { echo "took $(($2 - $1)) s"; [ $(($2 - $1)) -ge 1 ] && [ $(($2 - $1)) -le 6 ]; }
    t_check timeout.gave_up_in_time took "$start" "$end"
    _t_kill_pid "$pid"
    _t_untrack_pid "$pid"

    # Nothing listens at all: a quick "connection refused", exit 10.
    port=$(t_free_port)
    start=$(date +%s)
    run_tool "$FERRY" "$T/contimeout.ferry" -a --contimeout=5 "rsync://127.0.0.1:$port/src/" "$T/contimeout.ferry/"
    end=$(date +%s)
    t_check contimeout.refused_rc_10 rc_is "$T/contimeout.ferry" 10
    quick() { echo "took $(($2 - $1)) s"; [ $(($2 - $1)) -le 2 ]; }
    t_check contimeout.refused_quickly quick "$start" "$end"
}

test_port_and_family() {
    run_tool "$FERRY" "$T/port.ferry" -a --port="$PORT" 127.0.0.1::src/ "$T/port.ferry/"
    t_check port.rc rc_is "$T/port.ferry" 0
    t_check port.result t_compare "$SRC" "$T/port.ferry" --nsec
    # The daemon listens on 127.0.0.1 only; -4 must connect over IPv4.
    run_tool "$FERRY" "$T/ipv4.ferry" -a -4 "$URL" "$T/ipv4.ferry/"
    t_check ipv4.rc rc_is "$T/ipv4.ferry" 0
    t_check ipv4.result t_compare "$SRC" "$T/ipv4.ferry" --nsec
    if getent ahostsv4 localhost >/dev/null 2>&1; then
        run_tool "$FERRY" "$T/ipv4_name.ferry" -a -4 "rsync://localhost:$PORT/src/" "$T/ipv4_name.ferry/"
        t_check ipv4_localhost.rc rc_is "$T/ipv4_name.ferry" 0
        t_check ipv4_localhost.result t_compare "$SRC" "$T/ipv4_name.ferry" --nsec
    fi
}

# --------------------------------------------------------- single files

test_single_files() {
    mkdir -p "$T/newname.rsync" "$T/newname.ferry"
    fix_times "$T/newname.rsync" && fix_times "$T/newname.ferry"
    run_tool "$RSYNC" "$T/newname.rsync" -a "$BASE/src/a.txt" "$T/newname.rsync/new.txt"
    run_tool "$FERRY" "$T/newname.ferry" -a "$BASE/src/a.txt" "$T/newname.ferry/new.txt"
    t_check single_new_name.rc rc_is "$T/newname.ferry" 0
    t_check single_new_name.only_that test "$(ls -A "$T/newname.ferry")" = new.txt
    t_check single_new_name.content cmp "$SRC/a.txt" "$T/newname.ferry/new.txt"
    pin_time newname .
    t_check single_new_name.tree_like_rsync same_tree newname

    mkdir -p "$T/intodir.rsync" "$T/intodir.ferry"
    fix_times "$T/intodir.rsync" && fix_times "$T/intodir.ferry"
    run_tool "$RSYNC" "$T/intodir.rsync" -a "$BASE/src/dir1/x.txt" "$T/intodir.rsync"
    run_tool "$FERRY" "$T/intodir.ferry" -a "$BASE/src/dir1/x.txt" "$T/intodir.ferry"
    t_check single_into_dir.rc rc_is "$T/intodir.ferry" 0
    t_check single_into_dir.content cmp "$SRC/dir1/x.txt" "$T/intodir.ferry/x.txt"
    pin_time intodir .
    t_check single_into_dir.tree_like_rsync same_tree intodir

    # Over an existing file of that name.
    prep_over() { mkdir -p "$1" && set_file "$1" b.txt old 1500000000; }
    both single_over prep_over -a -i "$BASE/src/b.txt"
    t_check single_over.content cmp "$SRC/b.txt" "$T/single_over.ferry/b.txt"
    t_check single_over.itemize_like_rsync same_out single_over
}

# ------------------------------------------------------------ exit codes

test_exit_codes() {
    both unknown_module - -a "$BASE/nosuchmodule/"
    t_check exit.unknown_module_5 rc_is "$T/unknown_module.ferry" 5
    both missing_file - -a "$BASE/src/nosuchfile" "$BASE/src/a.txt"
    t_check exit.missing_source_23 rc_is "$T/missing_file.ferry" 23
    t_check exit.missing_source_rest_sent cmp "$SRC/a.txt" "$T/missing_file.ferry/a.txt"
    t_check exit.missing_source_like_rsync same_rc missing_file

    # A directory the receiver cannot write into. root writes anywhere, so
    # as root both clients run as "nobody", ferry from nobody's own copy
    # (the clone may be out of nobody's reach).
    local ferry=$FERRY
    if [ "$IS_ROOT" = 1 ]; then
        chmod 0711 "$T"
        if ! t_runas_nobody; then
            t_skip exit.unwritable "running as root: $T_SKIP_REASON"
            return 0
        fi
        RUN_AS=("${AS_NOBODY[@]}")
        ferry=$FERRY_NOBODY
    fi
    prep_ro() {
        prep_copy "$1" && rm -f "$1/dir1/x.txt" "$1/a.txt" && chmod 0555 "$1/dir1" &&
            if [ "$IS_ROOT" = 1 ]; then chown -R 65534:65534 "$1" && chown 0:0 "$1/dir1"; fi
    }
    # -rlt: nobody cannot set root's owner; only the write must fail.
    prep_ro "$T/readonly.rsync" && prep_ro "$T/readonly.ferry"
    if [ "$IS_ROOT" = 1 ] && ! t_nobody_can_read "$T/readonly.ferry/dir1"; then
        RUN_AS=()
        t_skip exit.unwritable "nobody cannot reach $T"
        return 0
    fi
    run_tool "$RSYNC" "$T/readonly.rsync" -rlt "$URL" "$T/readonly.rsync/"
    run_tool "$ferry" "$T/readonly.ferry" -rlt "$URL" "$T/readonly.ferry/"
    RUN_AS=()
    t_check exit.unwritable_23 rc_is "$T/readonly.ferry" 23
    t_check exit.unwritable_rest_sent cmp "$SRC/a.txt" "$T/readonly.ferry/a.txt"
    t_check exit.unwritable_like_rsync same_rc readonly
}

# ----------------------------------------------------------------- run it

test_dry_run
test_delete_modes
test_delete_excluded
test_max_delete
test_filters
test_update
test_existing
test_ignore_existing
test_size_only
test_ignore_times
test_modify_window
test_whole_file
test_inplace
test_output_formats
test_stats
test_listings
test_timeout
test_port_and_family
test_single_files
test_exit_codes
test_partial
t_done
