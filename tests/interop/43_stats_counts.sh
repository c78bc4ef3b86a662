#!/bin/bash
# What a sending client reports, against real rsync. --stats: the created
# directories, links and specials it counts from the generator's records
# (sent from protocol 29 on even when nobody itemizes), the deletions the
# receiver reports at the end (NDX_DEL_STATS), the --max-delete warning,
# and the "File list
# size" of a sender, which counts only what reached the socket while the
# list went out (0 for a small list). Each pair of runs starts from the same
# destination state; ferry and rsync are each the client, against each
# daemon, and in local mode. Also: a push that names no module lists them,
# a munging daemon's itemized line for a link it must remake, a push with
# --list-only, which a daemon answers with a listing, the directory times
# --backup leaves alone, and the receiver's own per-directory merge files,
# which keep what they exclude from --delete.
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON" "$FERRY"
t_setup

SRC=$T/src
UP=$T/up

make_src() {
    mkdir -p "$SRC/d1/d2" "$UP" && echo a >"$SRC/f1" && echo bb >"$SRC/d1/f2" &&
        echo ccc >"$SRC/d1/d2/f3" && ln -s f1 "$SRC/l1" && mkfifo "$SRC/fifo"
}
t_check make_src make_src || t_done

MODULES="
[up]
    path = $UP
    read only = no
[munged]
    path = $UP/ml
    read only = no
    munge symlinks = yes
"
if ! t_ferryd_start fd43 "$MODULES" || ! t_rsyncd_start rd43 "$MODULES"; then
    t_fail daemons_start "a daemon did not start"
    t_done
fi
FURL=rsync://127.0.0.1:$FERRYD_PORT
RURL=rsync://127.0.0.1:$RSYNCD_PORT

# The --stats lines that count entries, and a sender's list size.
count_lines() {
    grep -E '^(Number of (files|created files|deleted files|regular files transferred)|File list size):' "$1"
}

# push_pair TAG URL [PREPARE [OPTION...]] -- ferry, then rsync, push with
# -a --stats OPTION... into URL/up/TAG (made from the source, then changed
# by PREPARE, when PREPARE is given); their counts must agree.
push_pair() {
    local tag=$1 url=$2 prep=${3:-} rc c
    shift 3 2>/dev/null || shift $#
    for c in ferry rsync; do
        local bin=$FERRY
        [ "$c" = rsync ] && bin=$RSYNC
        rm -rf "$UP/$tag"
        if [ -n "$prep" ]; then
            "$RSYNC" -a "$SRC/" "$UP/$tag/" && eval "$prep" || return 1
        fi
        "$bin" -a --stats "$@" "$SRC/" "$url/up/$tag/" >"$T/$tag.$c.out" 2>&1
        rc=$?
        [ "$rc" = 0 ] || { echo "$c exit $rc"; cat "$T/$tag.$c.out"; return 1; }
        count_lines "$T/$tag.$c.out" >"$T/$tag.$c.counts"
    done
    diff "$T/$tag.rsync.counts" "$T/$tag.ferry.counts" && cat "$T/$tag.ferry.counts"
}
t_check push_new_ferry_to_ferryd push_pair nff "$FURL"
t_check push_new_ferry_to_rsyncd push_pair nfr "$RURL"
t_check push_part_ferry_to_ferryd push_pair pff "$FURL" 'rm -rf "$UP/$tag/d1" "$UP/$tag/l1"'
# The deletions the receiver counts come back in NDX_DEL_STATS.
EXTRA='mkdir -p "$UP/$tag/xd/xe" && echo x >"$UP/$tag/xf" && ln -s nowhere "$UP/$tag/d1/xl"'
t_check push_delete_ferry_to_ferryd push_pair dff "$FURL" "$EXTRA" --delete
t_check push_delete_ferry_to_rsyncd push_pair dfr "$RURL" "$EXTRA" --delete

# rsync as the client both times: rsync's numbers against a ferry daemon
# are those it gets against an rsync daemon.
rsync_client_pair() {
    local tag=$1 prep=${2:-} where
    for where in ferryd rsyncd; do
        local url=$FURL
        [ "$where" = rsyncd ] && url=$RURL
        rm -rf "$UP/$tag"
        if [ -n "$prep" ]; then
            "$RSYNC" -a "$SRC/" "$UP/$tag/" && eval "$prep" || return 1
        fi
        "$RSYNC" -a --stats "$SRC/" "$url/up/$tag/" >"$T/$tag.$where.out" 2>&1 || return 1
        count_lines "$T/$tag.$where.out" >"$T/$tag.$where.counts"
    done
    diff "$T/$tag.rsyncd.counts" "$T/$tag.ferryd.counts" && cat "$T/$tag.ferryd.counts"
}
t_check push_new_rsync_to_ferryd rsync_client_pair rn
t_check push_part_rsync_to_ferryd rsync_client_pair rp 'rm -rf "$UP/$tag/d1/d2" "$UP/$tag/fifo"'

local_pair() {
    local tag=$1 prep=${2:-} c
    shift 2 2>/dev/null || shift $#
    for c in ferry rsync; do
        local bin=$FERRY
        [ "$c" = rsync ] && bin=$RSYNC
        rm -rf "$T/$tag"
        if [ -n "$prep" ]; then
            "$RSYNC" -a "$SRC/" "$T/$tag/" && eval "$prep" || return 1
        fi
        "$bin" -a --stats "$@" "$SRC/" "$T/$tag/" >"$T/$tag.$c.out" 2>&1 || return 1
        count_lines "$T/$tag.$c.out" >"$T/$tag.$c.counts"
    done
    diff "$T/$tag.rsync.counts" "$T/$tag.ferry.counts" && cat "$T/$tag.ferry.counts"
}
t_check local_new local_pair ln
t_check local_part local_pair lp 'rm -rf "$T/$tag/d1" "$T/$tag/fifo"'
t_check local_delete local_pair ld 'mkdir -p "$T/$tag/xd/xe" && echo x >"$T/$tag/xf"' --delete
# -b keeps a deleted directory's files as backups inside it: the directory
# cannot go, which rsync reports and does not count as an error
t_check local_delete_backup local_pair ldb 'mkdir -p "$T/$tag/xd" && echo x >"$T/$tag/xd/f"' \
    --delete -b
backup_dir_kept() { grep -q "^cannot delete non-empty directory: xd$" "$T/ldb.ferry.out"; }
t_check local_delete_backup_line backup_dir_kept

# A pull counts on the receiving side: the same either way.
pull_pair() {
    local tag=$1 c
    for c in ferry rsync; do
        local bin=$FERRY
        [ "$c" = rsync ] && bin=$RSYNC
        rm -rf "$T/$tag"
        "$bin" -a --stats "$RURL/up/nfr/" "$T/$tag/" >"$T/$tag.$c.out" 2>&1 || return 1
        count_lines "$T/$tag.$c.out" | grep -v '^File list size' >"$T/$tag.$c.counts"
    done
    diff "$T/$tag.rsync.counts" "$T/$tag.ferry.counts" && cat "$T/$tag.ferry.counts"
}
t_check pull_new pull_pair pn

# --max-delete reached: the receiver's generator warns before its last
# deletion stats, so a sending client prints it too (no "ferry:" prefix,
# as rsync's FWARNING); a push exits 0 as rsync's does, a local copy 25.
max_delete_pair() {
    local tag=$1 dest=$2 want=$3 c rc out
    for c in ferry rsync; do
        local bin=$FERRY
        [ "$c" = rsync ] && bin=$RSYNC
        rm -rf "$UP/$tag" "$T/$tag"
        "$RSYNC" -a "$SRC/" "$UP/$tag/" && "$RSYNC" -a "$SRC/" "$T/$tag/" || return 1
        touch "$UP/$tag/x1" "$UP/$tag/x2" "$UP/$tag/x3" "$T/$tag/x1" "$T/$tag/x2" "$T/$tag/x3"
        out=$T/$tag.$c.out
        "$bin" -a --delete --max-delete=1 "$SRC/" "${dest//TAG/$tag}" >"$out" 2>&1
        rc=$?
        echo "$c: exit $rc"
        cat "$out"
        [ "$rc" = "$want" ] && grep -qx 'Deletions stopped due to --max-delete limit (2 skipped)' "$out" ||
            return 1
    done
}
t_check max_delete_push_ferryd max_delete_pair mpf "$FURL/up/TAG/" 0
t_check max_delete_push_rsyncd max_delete_pair mpr "$RURL/up/TAG/" 0
t_check max_delete_local max_delete_pair mpl "$T/TAG/" 25

# A daemon that munges symlinks (use chroot = no) keeps only a munged link
# as "the right link": an unmunged one with the right target is made again
# (cLc), as rsync compares with the target it munged on receipt.
munged_link_pair() {
    local where url out
    for where in ferryd rsyncd; do
        url=$FURL
        [ "$where" = rsyncd ] && url=$RURL
        rm -rf "$UP/ml" && "$RSYNC" -a "$SRC/" "$UP/ml/" && touch -h -d @1600000000 "$UP/ml/l1" ||
            return 1
        out=$T/ml.$where.out
        "$RSYNC" -ai "$SRC/" "$url/munged/" >"$out" 2>&1 || return 1
        grep 'l1 ->' "$out" >"$out.l1"
        [ "$(readlink "$UP/ml/l1")" = /rsyncd-munged/f1 ] || { echo "$where left $(readlink "$UP/ml/l1")"; return 1; }
    done
    cat "$T/ml.ferryd.out.l1"
    diff "$T/ml.rsyncd.out.l1" "$T/ml.ferryd.out.l1" && grep -q '^cLc' "$T/ml.ferryd.out.l1"
}
t_check munged_link_remade munged_link_pair

# rsync -a --list-only SRC/ rsync://host/module/: the daemon's receiver
# lists what it was sent and writes nothing.
push_list_only() {
    local where url
    for where in ferryd rsyncd; do
        url=$FURL
        [ "$where" = rsyncd ] && url=$RURL
        rm -rf "$UP/lo" && mkdir "$UP/lo" || return 1
        "$RSYNC" -a --list-only "$SRC/" "$url/up/lo/" >"$T/lo.$where.out" 2>&1 || return 1
        [ -z "$(ls -A "$UP/lo")" ] || { echo "$where wrote:"; ls -la "$UP/lo"; return 1; }
    done
    cat "$T/lo.ferryd.out"
    diff "$T/lo.rsyncd.out" "$T/lo.ferryd.out" && grep -q ' d1/f2$' "$T/lo.ferryd.out"
}
t_check push_list_only_writes_nothing push_list_only

# --backup without --backup-dir implies --omit-dir-times on the receiver
# (the backups change their directory after its time was set): no
# ".d..t...... ./" line, the directory keeps the time the backups gave it.
backup_pair() {
    local where url out
    for where in ferryd rsyncd ferry_local rsync_local; do
        rm -rf "$UP/bk" && "$RSYNC" -a "$SRC/" "$UP/bk/" || return 1
        echo changed >>"$UP/bk/f1"
        touch -d @1500000000 "$UP/bk/f1" "$UP/bk/d1" "$UP/bk"
        out=$T/bk.$where.out
        case $where in
        ferryd) "$RSYNC" -ai -b "$SRC/" "$FURL/up/bk/" ;;
        rsyncd) "$RSYNC" -ai -b "$SRC/" "$RURL/up/bk/" ;;
        ferry_local) "$FERRY" -ai -b "$SRC/" "$UP/bk/" ;;
        rsync_local) "$RSYNC" -ai -b "$SRC/" "$UP/bk/" ;;
        esac >"$out" 2>&1 || return 1
        [ -f "$UP/bk/f1~" ] && [ "$(stat -c %Y "$UP/bk")" != 1500000000 ] ||
            { echo "$where: no backup, or the directory time was set"; return 1; }
    done
    cat "$T/bk.ferryd.out"
    diff "$T/bk.rsyncd.out" "$T/bk.ferryd.out" && diff "$T/bk.rsync_local.out" "$T/bk.ferry_local.out" &&
        ! grep -q '^\.d.*\./$' "$T/bk.ferryd.out"
}
t_check backup_implies_omit_dir_times backup_pair

# -F (dir-merge .rsync-filter) with --delete: the receiver reads the merge
# files of the destination's directories, so what they exclude or protect
# is not deleted -- as ferry receiving locally, pulling, and as a daemon.
MS=$T/msrc
make_merge_tree() {
    local d
    rm -rf "$MS" && mkdir -p "$MS/a/b" "$MS/c" && echo 1 >"$MS/a/f" && echo 2 >"$MS/a/b/g" &&
        echo "- *.tmp" >"$MS/a/.rsync-filter" && echo "P keep*" >"$MS/c/.rsync-filter" &&
        echo "- /c/old" >"$MS/.rsync-filter" || return 1
    rm -rf "$T/mbase" && "$RSYNC" -a "$MS/" "$T/mbase/" || return 1
    for d in "$T/mbase" "$T/mbase/a" "$T/mbase/a/b" "$T/mbase/c"; do
        echo x >"$d/x.tmp" && echo y >"$d/keepme" && echo z >"$d/old" || return 1
    done
}
merge_delete_pair() {
    local how=$1 c out
    shift
    for c in ferry rsync; do
        local bin=$FERRY
        [ "$c" = rsync ] && bin=$RSYNC
        out=$T/md.$how.$c
        rm -rf "$UP/md" && cp -a "$T/mbase" "$UP/md" || return 1
        case $how in
        local) "$bin" -ai "$@" "$MS/" "$UP/md/" ;;
        pull) "$bin" -ai "$@" "$RURL/up/msrc/" "$UP/md/" ;;
        push) "$RSYNC" -ai "$@" "$MS/" "$([ "$c" = ferry ] && echo "$FURL" || echo "$RURL")/up/md/" ;;
        esac >"$out.out" 2>&1 || { cat "$out.out"; return 1; }
        (cd "$UP/md" && find . | sort) >"$out.tree"
    done
    grep deleting "$T/md.$how.ferry.out"
    diff <(sort "$T/md.$how.rsync.out") <(sort "$T/md.$how.ferry.out") &&
        diff "$T/md.$how.rsync.tree" "$T/md.$how.ferry.tree" || return 1
    # what the -F files say: kept by "P keep*" and "- *.tmp", gone elsewhere
    [ "$*" = "-C --delete" ] ||
        { [ -f "$UP/md/c/keepme" ] && [ -f "$UP/md/a/b/x.tmp" ] && [ ! -e "$UP/md/keepme" ]; }
}
if make_merge_tree && rm -rf "$UP/msrc" && cp -a "$MS" "$UP/msrc"; then
    t_check merge_files_protect_local merge_delete_pair local -F --delete
    t_check merge_files_protect_local_after merge_delete_pair local -F --delete-after
    t_check merge_files_protect_pull merge_delete_pair pull -F --delete
    t_check merge_files_protect_daemon merge_delete_pair push -F --delete
    t_check merge_files_cvs_local merge_delete_pair local -C --delete
else
    t_fail merge_tree "could not make the tree"
fi

# Entries that replace another kind of entry: a special file or device is
# new ("cS+++++++++"), one whose device numbers changed is "cDc........";
# a non-empty directory in the way stays without --delete/--force ("cannot
# delete non-empty directory", "could not make way", exit 23), goes with
# its contents logged one by one with them, and with -b what is replaced
# is kept as a backup. The same lines and the same tree as rsync's.
make_kinds() {
    local d=$T/kinds
    rm -rf "$d" && mkdir -p "$d/s/b" "$d/base/a" "$d/base/c" || return 1
    echo f >"$d/s/a" && echo in >"$d/s/b/x" && ln -s a "$d/s/c" && mkfifo "$d/s/d" &&
        echo e >"$d/s/e" && echo in >"$d/base/a/y" && echo b >"$d/base/b" &&
        echo z >"$d/base/c/z" && echo d >"$d/base/d" && ln -s nowhere "$d/base/e" || return 1
    if [ "$(id -u)" = 0 ]; then
        mknod "$d/s/c1" c 1 3 && mknod "$d/base/c1" c 1 5 && mknod "$d/s/c2" c 1 3 &&
            echo y >"$d/base/c2" || return 1
    fi
    find "$d" -exec touch -h -d @1600000000 {} +
}
kinds_pair() {
    local c d=$T/kinds
    for c in ferry rsync; do
        local bin=$FERRY
        [ "$c" = rsync ] && bin=$RSYNC
        rm -rf "$d/$c" && cp -a "$d/base" "$d/$c" || return 1
        "$bin" -ai "$@" "$d/s/" "$d/$c/" >"$d/$c.out" 2>"$d/$c.err"
        echo "rc $?" >>"$d/$c.out"
        # the closing lines must agree but for the program and where in it
        sed -E 's/^(rsync|ferry) (error|warning): (.*) at [^ ]+\([0-9]+\) \[([A-Za-z]+)=[^]]*\]$/\2: \3 [\4]/' \
            "$d/$c.err" >>"$d/$c.out"
        (cd "$d/$c" && find . -printf '%p %y\n' | sort) >"$d/$c.tree"
    done
    cat "$d/ferry.out"
    diff <(sort "$d/rsync.out") <(sort "$d/ferry.out") && diff "$d/rsync.tree" "$d/ferry.tree" &&
        grep -q '^cS+++++++++ d$' "$d/ferry.out"
}
if make_kinds; then
    t_check replaced_kinds_itemized kinds_pair
    t_check replaced_kinds_force kinds_pair --force
    t_check replaced_kinds_delete_dry_run kinds_pair --delete -n
    t_check replaced_kinds_backup kinds_pair -b
    t_check replaced_kinds_backup_delete kinds_pair -b --delete
else
    t_fail make_kinds "could not make the tree"
fi

# "Total bytes sent/received" count the transfer from the end of the
# protocol negotiation, as rsync's do: not the daemon greeting or the
# arguments. On this small tree the handshake alone would be 30% more; the
# rest of the encoding may differ a little.
near() { # A B -- within 15% of each other, or 32 bytes (a small total
    # moves with a message more or less, as timing has it)
    local d=$(( $1 > $2 ? $1 - $2 : $2 - $1 ))
    [ "$d" -le 32 ] || [ $(( d * 100 )) -le $(( $2 * 15 )) ]
}
totals_pair() {
    local how=$1 c sent recv
    for c in ferry rsync; do
        local bin=$FERRY
        [ "$c" = rsync ] && bin=$RSYNC
        rm -rf "$UP/tb" "$T/tb"
        case $how in
        push) "$bin" -a --stats "$SRC/" "$RURL/up/tb/" ;;
        pull) "$bin" -a --stats "$RURL/up/nfr/" "$T/tb/" ;;
        esac >"$T/tb.$how.$c" 2>&1 || return 1
    done
    grep 'Total bytes' "$T/tb.$how.ferry" "$T/tb.$how.rsync"
    for what in sent received; do
        local f r
        f=$(sed -n "s/^Total bytes $what: //p" "$T/tb.$how.ferry" | tr -d ,)
        r=$(sed -n "s/^Total bytes $what: //p" "$T/tb.$how.rsync" | tr -d ,)
        near "$f" "$r" || return 1
    done
}
t_check total_bytes_push totals_pair push
t_check total_bytes_pull totals_pair pull

# --out-format with what only the end of a transfer knows: %b (bytes of
# the file on the wire), %c (block sums), %C (the whole-file sum, blanks
# for a directory), and %U/%G; a line with them waits for the transfer.
out_format_pair() {
    local how=$1 fmt=$2 c
    for c in ferry rsync; do
        local bin=$FERRY
        [ "$c" = rsync ] && bin=$RSYNC
        rm -rf "$UP/of" "$T/of"
        case $how in
        pull) "$bin" -a --out-format="$fmt" "$RURL/up/nfr/" "$T/of/" ;;
        push) "$bin" -a --out-format="$fmt" "$SRC/" "$RURL/up/of/" ;;
        local) "$bin" -a --out-format="$fmt" "$SRC/" "$T/of/" ;;
        local_c) "$bin" -ac --out-format="$fmt" "$SRC/" "$T/of/" ;;
        esac >"$T/of.$how.$c" 2>&1 || return 1
    done
    cat "$T/of.$how.ferry"
    diff <(sort "$T/of.$how.rsync") <(sort "$T/of.$how.ferry")
}
t_check out_format_pull_bcC out_format_pair pull '%n %l %b %c %C %U %G'
t_check out_format_push_bcC out_format_pair push '%i %n %b %c %C'
t_check out_format_local_bcC out_format_pair local '%n %b %c %C'
t_check out_format_checksum_C out_format_pair local_c '%n %C'

# -q drops every informational line, whatever else asked for one: names
# (-v, -i, --out-format), deletions, --stats, --progress, listings. Errors
# still reach stderr.
quiet_pair() {
    local c out
    for c in "$FERRY" "$RSYNC"; do
        rm -rf "$T/q" && mkdir "$T/q" && echo x >"$T/q/extra" || return 1
        out=$("$c" -aq "$@" "$SRC/" "$T/q/" 2>/dev/null) || return 1
        [ -z "$out" ] || { echo "$c printed:"; echo "$out"; return 1; }
    done
}
t_check quiet_beats_verbose quiet_pair -vv -i --delete --stats --progress
t_check quiet_listing_silent quiet_pair --list-only
quiet_error_shown() {
    "$FERRY" -aq "$T/no_such_dir/" "$T/q2/" 2>"$T/q2.err"
    [ $? = 23 ] && grep -q 'no_such_dir' "$T/q2.err"
}
t_check quiet_keeps_errors quiet_error_shown

# --info words choose the informational lines one by one, over what -v
# gives (rsync's info levels): names, deletions, skips, backups, the
# summary and --stats, NAME2's "X is uptodate". Compared sorted (two
# threads print them), without the timing lines and what ferry does not
# print (the -vv match totals and debug lines).
info_pair() {
    local c
    for c in ferry rsync; do
        local bin=$FERRY
        [ "$c" = rsync ] && bin=$RSYNC
        rm -rf "$T/inf" && "$RSYNC" -a "$MS/" "$T/inf/" && cp -a "$T/mbase/." "$T/inf/" &&
            echo newer >"$T/inf/a/f" || return 1
        "$bin" -a --delete "$@" "$MS/" "$T/inf/" 2>&1 |
            grep -Ev '^(sent|total size|File list|Total bytes|total:)|bytes/sec|delta-trans' |
            sort >"$T/inf.$c" || return 1
    done
    cat "$T/inf.ferry"
    diff "$T/inf.rsync" "$T/inf.ferry"
}
t_check info_name info_pair --info=name
t_check info_del_stats info_pair --info=del,stats2
t_check info_v_name0 info_pair -v --info=name0
t_check info_skip info_pair --info=skip --ignore-existing
t_check info_backup info_pair --info=backup -b
t_check info_vv info_pair -vv -u

# --link-dest, --compare-dest, --copy-dest: a new directory that the
# other dir holds is itemized against it (not as new), a link is 'h' at
# -ii, and an existing destination file identical to the other dir's is
# removed (compare) or made a link to it (link). Lines, tree and which
# files are links as rsync's, into a new destination and an existing one.
alt_pair() { # MODE FRESH(1/0) ITEMIZE
    local mode=$1 fresh=$2 ii=$3 c
    for c in ferry rsync; do
        local bin=$FERRY
        [ "$c" = rsync ] && bin=$RSYNC
        # the same destination name for both ("created directory d")
        rm -rf "$T/alt_$c" && mkdir "$T/alt_$c" &&
            { [ "$fresh" = 1 ] || cp -a "$T/altbase" "$T/alt_$c/d"; } || return 1
        (cd "$T/alt_$c" && "$bin" -a"$ii" --"$mode"-dest="$T/altbase" "$MS/" d/ 2>&1) |
            sort >"$T/alt.$c.out"
        (cd "$T/alt_$c/d" && find . | sort | while read -r p; do
            if [ "$p" -ef "$T/altbase/$p" ]; then echo "$p linked"; else echo "$p"; fi
        done) >>"$T/alt.$c.out"
    done
    diff "$T/alt.rsync.out" "$T/alt.ferry.out" && cat "$T/alt.ferry.out"
}
if rm -rf "$T/altbase" && "$RSYNC" -a "$MS/" "$T/altbase/" && touch -d @1500000000 "$T/altbase"; then
    t_check alt_link_new_dir alt_pair link 1 i
    t_check alt_link_new_ii alt_pair link 1 ii
    t_check alt_compare_new alt_pair compare 1 i
    t_check alt_copy_new alt_pair copy 1 ii
    t_check alt_link_existing alt_pair link 0 ii
    t_check alt_compare_existing alt_pair compare 0 i
else
    t_fail altbase "could not make the alternate dir"
fi

# --progress names the files when nothing else does, and above its meter
# when the line waits for the transfer (%b); the meter lines themselves
# (rates, times) are left out of the comparison.
progress_pair() {
    local c
    for c in ferry rsync; do
        local bin=$FERRY
        [ "$c" = rsync ] && bin=$RSYNC
        rm -rf "$T/pg_$c" && mkdir "$T/pg_$c" || return 1
        (cd "$T/pg_$c" && "$bin" -a --progress "$@" "$SRC/" d/ 2>&1) | tr '\r' '\n' |
            grep -Ev '%|bytes/sec|total size' >"$T/pg.$c"
    done
    cat "$T/pg.ferry"
    diff "$T/pg.rsync" "$T/pg.ferry"
}
t_check progress_names progress_pair
t_check progress_names_after_transfer progress_pair --out-format=%n%b

# rsync -a SRC/ rsync://host/ (no module) answers with the module list and
# exits 0, as a pull of rsync://host/ does.
push_no_module() {
    local c rc
    for c in "$FERRY" "$RSYNC"; do
        "$c" -a "$SRC/" "$FURL/" >"$T/nomod.out" 2>&1
        rc=$?
        echo "$c: exit $rc"
        cat "$T/nomod.out"
        [ "$rc" = 0 ] && grep -q '^up\b' "$T/nomod.out" || return 1
    done
}
t_check push_no_module_lists push_no_module

# The sender's %f starts with the source directory as its argument named
# it (rsync's F_PATHNAME), without a leading '/'.
fullname_pair() { # ARG...: sources, run from $T
    local c bin
    for c in ferry rsync; do
        bin=$FERRY
        [ "$c" = rsync ] && bin=$RSYNC
        rm -rf "$T/fn.$c"
        (cd "$T" && "$bin" -a --out-format='%o %f|%n' "$@" "$T/fn.$c/") >"$T/fn.$c.out" 2>&1 ||
            return 1
    done
    diff <(sort "$T/fn.rsync.out") <(sort "$T/fn.ferry.out") && head -3 "$T/fn.ferry.out"
}
ln -sfn "$SRC" "$T/srclink"
t_check fullname_contents fullname_pair "$SRC/"
t_check fullname_dir fullname_pair "$SRC"
t_check fullname_relative fullname_pair srclink/
t_check fullname_relative_R fullname_pair -R "$SRC/./d1"
t_check no_sanitizer_reports t_no_sanitizer_reports "$T/fd43.out"

t_done
