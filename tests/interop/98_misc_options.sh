#!/bin/bash
# --stderr (and --msgs2stderr/--no-msgs2stderr), --old-dirs, --drop-D and
# --qsort against REAL rsync: the same command is run with rsync and with
# ferry, and the results must agree -- the tree, which stream each kind of
# line goes to, and the exit code. Remote-shell cases use a fake remote
# shell that runs the command here (as in 32_server_over_rsh.sh), both
# ferry -> rsync --server and rsync -> ferry --server. The --stderr cases
# need an unreadable file, so they run as nobody (setpriv) when we are root,
# with a copy of ferry nobody can reach (t_runas_nobody).
# (--insecure-links is covered by 60_operator_paths.sh, --confine-root by
# 71_confine_root.sh.)
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON" mkfifo
t_setup

if [ ! -x "$FERRY" ]; then
    t_skip "$(_t_script_name)" "ferry binary not found: $FERRY"
    t_done
fi

# Everything under $W is reachable by nobody, for the setpriv runs.
chmod 0755 "$T"
W=$T/w
mkdir -p "$W"
chmod 0777 "$W"

# The fake remote shell logs each command line it runs to $W/rsh.log.
cat >"$W/fakessh" <<'EOF'
#!/bin/sh
while [ $# -gt 0 ]; do
    case $1 in
    -l | -p | -o | -i | -F) shift 2 ;;
    -*) shift ;;
    *) break ;;
    esac
done
shift
printf '%s\n' "$*" >>"$(dirname "$0")/rsh.log"
exec sh -c "$*"
EOF
chmod 0755 "$W/fakessh"
RSH=$W/fakessh

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

# same_tree NAME DIR_RSYNC DIR_FERRY -- names, types and contents agree.
same_tree() {
    local a b
    a=$(cd "$2" 2>/dev/null && find . -printf '%y %p\n' | LC_ALL=C sort)
    b=$(cd "$3" 2>/dev/null && find . -printf '%y %p\n' | LC_ALL=C sort)
    if [ "$a" != "$b" ]; then
        t_fail "$1" "trees differ: rsync [$a] ferry [$b]"
    elif ! diff -r --no-dereference "$2" "$3" >/dev/null 2>&1; then
        t_fail "$1" "file contents differ"
    else
        t_pass "$1"
    fi
}

# ------------------------------------------------------------ the trees

SRC=$W/src
mkdir -p "$SRC/d/e/f" "$SRC/g"
echo a >"$SRC/a"
echo b >"$SRC/d/b"
echo c >"$SRC/d/e/c"
echo deep >"$SRC/d/e/f/deep"
echo h >"$SRC/g/h"
echo secret >"$SRC/unreadable"
chmod 0000 "$SRC/unreadable"
chmod -R a+rwX "$SRC/d" "$SRC/g"
chmod a+rwx "$SRC"

# A tree with specials (and a device when we are root) for --drop-D.
DEV=$W/dev
mkdir -p "$DEV/x"
echo f >"$DEV/file"
echo g >"$DEV/x/g"
mkfifo "$DEV/fifo"
HAVE_DEVICE=0
if [ "$(id -u)" = 0 ] && mknod "$DEV/null" c 1 3 2>/dev/null; then
    HAVE_DEVICE=1
fi

# As root the --stderr cases run as nobody, with nobody's own copy of ferry
# (the clone may be out of nobody's reach).
AS_NOBODY=()
FERRY_RUN=$FERRY
STDERR_SKIP=""
if [ "$(id -u)" = 0 ]; then
    if ! t_runas_nobody; then
        STDERR_SKIP="running as root, no unreadable file: $T_SKIP_REASON"
    elif ! t_nobody_can_read "$SRC/a"; then
        STDERR_SKIP="nobody cannot reach the test tree under ${TMPDIR:-/tmp}"
    else
        FERRY_RUN=$FERRY_NOBODY
    fi
fi

# ------------------------------------------------------------ --stderr

# split TAG -- what kinds of line ended up where: "out:<kinds> err:<kinds>"
# where the kinds are N (a transferred name, d/b), S (the "sent ..."
# summary) and E (the error about the unreadable file).
split() {
    local f kinds res=""
    for f in out err; do
        kinds=""
        grep -qx 'd/b' "$T/$1.$f" && kinds+=N
        grep -q '^sent .* bytes' "$T/$1.$f" && kinds+=S
        grep -q 'unreadable.*Permission denied' "$T/$1.$f" && kinds+=E
        res+="$f:$kinds "
    done
    printf '%s' "$res"
}

# same_split NAME TAG_RSYNC TAG_FERRY [WANT]
same_split() {
    local a b
    a=$(split "$2") b=$(split "$3")
    if [ "$a" != "$b" ]; then
        t_fail "$1" "rsync [$a], ferry [$b]"
    elif [ -n "${4:-}" ] && [ "$b" != "$4" ]; then
        t_fail "$1" "both [$b], expected [$4]"
    else
        t_pass "$1"
    fi
}

if [ -n "$STDERR_SKIP" ]; then
    t_skip stderr_modes "$STDERR_SKIP"
else
    # mode option, expected split
    for spec in "e|--stderr=e|out:NS err:E " "errors|--stderr=errors|out:NS err:E " \
        "a|--stderr=a|out: err:NSE " "all|--stderr=all|out: err:NSE " \
        "c|--stderr=c|out:NS err:E " "client|--stderr=client|out:NS err:E " \
        "m2s|--msgs2stderr|out: err:NSE " "nom2s|--no-msgs2stderr|out:NS err:E "; do
        IFS='|' read -r tag opt want <<<"$spec"
        for p in rsync ferry; do
            bin=$RSYNC
            [ $p = ferry ] && bin=$FERRY_RUN
            rm -rf "$W/dst_$p"
            run "stderr_${tag}_$p" "${AS_NOBODY[@]}" "$bin" -rv "$opt" "$SRC/" "$W/dst_$p/"
        done
        same_split "stderr_${tag}_local_split" "stderr_${tag}_rsync" "stderr_${tag}_ferry" "$want"
        same_rc "stderr_${tag}_local_rc" "stderr_${tag}_rsync" "stderr_${tag}_ferry" 23
    done

    # Over a remote shell: a pull from rsync --server (ferry's client sends
    # the mode on; the server writes its messages straight to stderr with
    # 'all'), and rsync's client pulling from ferry --server.
    for spec in "e|--stderr=errors|out:NS err:E " "a|--stderr=all|out: err:NSE " \
        "c|--stderr=client|out:NS err:E "; do
        IFS='|' read -r tag opt want <<<"$spec"
        rm -rf "$W/dst_rsync" "$W/dst_ferry" "$W/dst_rf"
        run "rsh_stderr_${tag}_rsync" "${AS_NOBODY[@]}" "$RSYNC" -rv "$opt" -e "$RSH" \
            "h:$SRC/" "$W/dst_rsync/"
        run "rsh_stderr_${tag}_ferry" "${AS_NOBODY[@]}" "$FERRY_RUN" -rv "$opt" -e "$RSH" \
            --rsync-path="$RSYNC" "h:$SRC/" "$W/dst_ferry/"
        run "rsh_stderr_${tag}_rf" "${AS_NOBODY[@]}" "$RSYNC" -rv "$opt" -e "$RSH" \
            --rsync-path="$FERRY_RUN" "h:$SRC/" "$W/dst_rf/"
        same_split "stderr_${tag}_ferry_pulls_rsync_split" "rsh_stderr_${tag}_rsync" \
            "rsh_stderr_${tag}_ferry" "$want"
        same_rc "stderr_${tag}_ferry_pulls_rsync_rc" "rsh_stderr_${tag}_rsync" \
            "rsh_stderr_${tag}_ferry" 23
        same_split "stderr_${tag}_rsync_pulls_ferry_split" "rsh_stderr_${tag}_rsync" \
            "rsh_stderr_${tag}_rf" "$want"
        same_rc "stderr_${tag}_rsync_pulls_ferry_rc" "rsh_stderr_${tag}_rsync" \
            "rsh_stderr_${tag}_rf" 23
    done
fi

# --version and --help go where the messages go.
run ver_all "$FERRY" --stderr=all --version
t_check stderr_all_version sh -c "[ ! -s '$T/ver_all.out' ] && grep -q ferry '$T/ver_all.err'"
run ver_plain "$FERRY" --stderr=client --version
t_check stderr_client_version sh -c "grep -q ferry '$T/ver_plain.out' && [ ! -s '$T/ver_plain.err' ]"

run bad_rsync "$RSYNC" --stderr=bogus "$SRC/"
run bad_ferry "$FERRY" --stderr=bogus "$SRC/"
same_rc stderr_bad_mode_rc bad_rsync bad_ferry 1
t_check stderr_bad_mode_text grep -q 'is not one of errors, all, or client' "$T/bad_ferry.err"

# ------------------------------------------------------------ --old-dirs

chmod 0644 "$SRC/unreadable"
for opt in --old-dirs --old-d; do
    rm -rf "$W/od_rsync" "$W/od_ferry"
    run "od${opt}_rsync" "$RSYNC" -a "$opt" "$SRC/" "$W/od_rsync/"
    run "od${opt}_ferry" "$FERRY" -a "$opt" "$SRC/" "$W/od_ferry/"
    same_rc "old_dirs_local_rc$opt" "od${opt}_rsync" "od${opt}_ferry" 0
    same_tree "old_dirs_local_tree$opt" "$W/od_rsync" "$W/od_ferry"
done
# One level and no deeper: the directories come, their contents do not.
t_check old_dirs_one_level sh -c "[ -d '$W/od_ferry/d' ] && [ ! -e '$W/od_ferry/d/b' ]"

# with a user filter: theirs comes first, "- /*/*" is appended
rm -rf "$W/od_rsync" "$W/od_ferry"
run odf_rsync "$RSYNC" -a --old-dirs --exclude=g "$SRC/" "$W/od_rsync/"
run odf_ferry "$FERRY" -a --old-dirs --exclude=g "$SRC/" "$W/od_ferry/"
same_rc old_dirs_filter_rc odf_rsync odf_ferry 0
same_tree old_dirs_filter_tree "$W/od_rsync" "$W/od_ferry"

# pull from rsync --server, push to rsync --server, rsync pulling from ferry
rm -rf "$W/od_rsync" "$W/od_ferry" "$W/od_rf"
run odp_rsync "$RSYNC" -a --old-dirs -e "$RSH" "h:$SRC/" "$W/od_rsync/"
run odp_ferry "$FERRY" -a --old-dirs -e "$RSH" --rsync-path="$RSYNC" "h:$SRC/" "$W/od_ferry/"
run odp_rf "$RSYNC" -a --old-dirs -e "$RSH" --rsync-path="$FERRY" "h:$SRC/" "$W/od_rf/"
same_rc old_dirs_ferry_pulls_rsync_rc odp_rsync odp_ferry 0
same_tree old_dirs_ferry_pulls_rsync_tree "$W/od_rsync" "$W/od_ferry"
same_rc old_dirs_rsync_pulls_ferry_rc odp_rsync odp_rf 0
same_tree old_dirs_rsync_pulls_ferry_tree "$W/od_rsync" "$W/od_rf"
rm -rf "$W/od_ferry"
run odq_ferry "$FERRY" -a --old-dirs -e "$RSH" --rsync-path="$RSYNC" "$SRC/" "h:$W/od_ferry/"
same_rc old_dirs_ferry_pushes_rsync_rc odp_rsync odq_ferry 0
same_tree old_dirs_ferry_pushes_rsync_tree "$W/od_rsync" "$W/od_ferry"

# ------------------------------------------------------------ --drop-D

# skipped NAME TAG_RSYNC TAG_FERRY -- the same "skipping non-regular file"
# lines, on the same stream.
same_skips() {
    local f a b
    for f in out err; do
        a=$(grep '^skipping non-regular file' "$T/$2.$f" | LC_ALL=C sort)
        b=$(grep '^skipping non-regular file' "$T/$3.$f" | LC_ALL=C sort)
        if [ "$a" != "$b" ]; then
            t_fail "$1" "std$f: rsync [$a] ferry [$b]"
            return
        fi
    done
    if ! grep -q 'skipping non-regular file "fifo"' "$T/$3.out" "$T/$3.err"; then
        t_fail "$1" "no skip message for the fifo"
        return
    fi
    t_pass "$1"
}

rm -rf "$W/dd_rsync" "$W/dd_ferry"
run dd_rsync "$RSYNC" -a --drop-D "$DEV/" "$W/dd_rsync/"
run dd_ferry "$FERRY" -a --drop-D "$DEV/" "$W/dd_ferry/"
same_rc drop_D_local_rc dd_rsync dd_ferry 0
same_tree drop_D_local_tree "$W/dd_rsync" "$W/dd_ferry"
same_skips drop_D_local_messages dd_rsync dd_ferry
t_check drop_D_no_fifo test ! -e "$W/dd_ferry/fifo"
if [ $HAVE_DEVICE = 1 ]; then
    t_check drop_D_no_device test ! -e "$W/dd_ferry/null"
else
    t_skip drop_D_no_device "mknod not possible here"
fi

# itemized, verbose
rm -rf "$W/dd_rsync" "$W/dd_ferry"
run ddi_rsync "$RSYNC" -ai --drop-D "$DEV/" "$W/dd_rsync/"
run ddi_ferry "$FERRY" -ai --drop-D "$DEV/" "$W/dd_ferry/"
same_rc drop_D_itemize_rc ddi_rsync ddi_ferry 0
t_check drop_D_itemize_lines sh -c "
    [ \"\$(grep -E '^(c[DS]|>f|cd)' '$T/ddi_rsync.out' | LC_ALL=C sort)\" = \
      \"\$(grep -E '^(c[DS]|>f|cd)' '$T/ddi_ferry.out' | LC_ALL=C sort)\" ]"
same_skips drop_D_itemize_messages ddi_rsync ddi_ferry

# Nodes already there are left alone.
rm -rf "$W/dd_rsync" "$W/dd_ferry"
mkdir -p "$W/dd_rsync" "$W/dd_ferry"
mkfifo "$W/dd_rsync/fifo" "$W/dd_ferry/fifo"
run ddk_rsync "$RSYNC" -a --drop-D "$DEV/" "$W/dd_rsync/"
run ddk_ferry "$FERRY" -a --drop-D "$DEV/" "$W/dd_ferry/"
same_rc drop_D_keeps_existing_rc ddk_rsync ddk_ferry 0
t_check drop_D_keeps_existing test -p "$W/dd_ferry/fifo"

# --no-drop-D undoes it
rm -rf "$W/dd_ferry"
run ddn_ferry "$FERRY" -a --drop-D --no-drop-D "$DEV/" "$W/dd_ferry/"
t_check drop_D_negated test -p "$W/dd_ferry/fifo"

# Receiver-side only and never forwarded: a ferry pull from rsync --server
# drops (ferry receives); a push gets it only on the far side's own command
# line, both ways round.
rm -rf "$W/dd_rsync" "$W/dd_ferry" "$W/dd_rf"
: >"$W/rsh.log"
run ddp_rsync "$RSYNC" -a --drop-D -e "$RSH" "h:$DEV/" "$W/dd_rsync/"
run ddp_ferry "$FERRY" -a --drop-D -e "$RSH" --rsync-path="$RSYNC" "h:$DEV/" "$W/dd_ferry/"
same_rc drop_D_ferry_pulls_rsync_rc ddp_rsync ddp_ferry 0
same_tree drop_D_ferry_pulls_rsync_tree "$W/dd_rsync" "$W/dd_ferry"
t_check drop_D_not_forwarded sh -c "! grep -q -- '--drop-D' '$W/rsh.log'"
rm -rf "$W/dd_rsync" "$W/dd_ferry"
run ddq_rsync "$RSYNC" -a -e "$RSH" --rsync-path="$RSYNC --drop-D" "$DEV/" "h:$W/dd_rsync/"
run ddq_ferry "$FERRY" -a -e "$RSH" --rsync-path="$RSYNC --drop-D" "$DEV/" "h:$W/dd_ferry/"
run ddq_rf "$RSYNC" -a -e "$RSH" --rsync-path="$FERRY --drop-D" "$DEV/" "h:$W/dd_rf/"
same_rc drop_D_ferry_pushes_rsync_rc ddq_rsync ddq_ferry 0
same_tree drop_D_ferry_pushes_rsync_tree "$W/dd_rsync" "$W/dd_ferry"
same_rc drop_D_rsync_pushes_ferry_rc ddq_rsync ddq_rf 0
same_tree drop_D_rsync_pushes_ferry_tree "$W/dd_rsync" "$W/dd_rf"
same_skips drop_D_rsync_pushes_ferry_messages ddq_rsync ddq_rf

# ------------------------------------------------------------ --qsort

rm -rf "$W/qs_rsync" "$W/qs_ferry"
run qs_rsync "$RSYNC" -a --qsort "$SRC/" "$W/qs_rsync/"
run qs_ferry "$FERRY" -a --qsort "$SRC/" "$W/qs_ferry/"
same_rc qsort_local_rc qs_rsync qs_ferry 0
same_tree qsort_local_tree "$W/qs_rsync" "$W/qs_ferry"
mv "$W/qs_rsync" "$W/qs_ref"

# Duplicate names (the one case where the sort could differ): the same
# source twice, and a file and a directory of one name from two sources.
mkdir -p "$W/dup1" "$W/dup2/same"
echo file >"$W/dup1/same"
echo inner >"$W/dup2/same/inner"
for spec in "twice|$SRC/d|$SRC/d" "kinds|$W/dup1/|$W/dup2/" "kinds_rev|$W/dup2/|$W/dup1/"; do
    IFS='|' read -r tag s1 s2 <<<"$spec"
    rm -rf "$W/qs_rsync" "$W/qs_ferry"
    run "qsd_${tag}_rsync" "$RSYNC" -a --qsort "$s1" "$s2" "$W/qs_rsync/"
    run "qsd_${tag}_ferry" "$FERRY" -a --qsort "$s1" "$s2" "$W/qs_ferry/"
    same_rc "qsort_duplicates_${tag}_rc" "qsd_${tag}_rsync" "qsd_${tag}_ferry"
    same_tree "qsort_duplicates_${tag}_tree" "$W/qs_rsync" "$W/qs_ferry"
done

# Over a remote shell ferry sends "--qsort" (rsync's own client sends
# "--use-qsort", which rsync's server refuses) and never asks for
# incremental recursion ('i' in the -e capabilities).
rm -rf "$W/qs_ferry" "$W/qs_rf"
: >"$W/rsh.log"
run qsp_ferry "$FERRY" -a --qsort -e "$RSH" --rsync-path="$RSYNC" "h:$SRC/" "$W/qs_ferry/"
t_check qsort_ferry_pulls_rsync sh -c "[ \"\$(cat '$T/qsp_ferry.rc')\" = 0 ]"
same_tree qsort_ferry_pulls_rsync_tree "$W/qs_ref" "$W/qs_ferry"
t_check qsort_sent_as_qsort grep -q -- ' --qsort ' "$W/rsh.log"
t_check qsort_no_inc_recursion sh -c "! grep -qE -- ' -[A-Za-z]*e\\.[A-Za-z]*i' '$W/rsh.log'"
rm -rf "$W/qs_ferry"
: >"$W/rsh.log"
run qsq_ferry "$FERRY" -a --qsort -e "$RSH" --rsync-path="$RSYNC" "$SRC/" "h:$W/qs_ferry/"
t_check qsort_ferry_pushes_rsync sh -c "[ \"\$(cat '$T/qsq_ferry.rc')\" = 0 ]"
same_tree qsort_ferry_pushes_rsync_tree "$W/qs_ref" "$W/qs_ferry"
t_check qsort_push_no_inc_recursion sh -c "! grep -qE -- ' -[A-Za-z]*e\\.[A-Za-z]*i' '$W/rsh.log'"
run qsr_rf "$RSYNC" -a --qsort -e "$RSH" --rsync-path="$FERRY" "$SRC/" "h:$W/qs_rf/"
t_check qsort_rsync_pushes_ferry sh -c "[ \"\$(cat '$T/qsr_rf.rc')\" = 0 ]"
same_tree qsort_rsync_pushes_ferry_tree "$W/qs_ref" "$W/qs_rf"

t_done
