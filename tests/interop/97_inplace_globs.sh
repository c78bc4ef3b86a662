#!/bin/bash
# Two rsync behaviours checked against real rsync 3.x:
#
# 1. --inplace --no-W with the data moved around: the sender must never
#    point at a basis block the receiver has already overwritten, and
#    prefers the block at the same offset (rsync match.c: hash_search,
#    updating_basis_file). Files with shuffled blocks, data inserted near
#    the front, data deleted near the front and runs of zeros go through
#    local mode, ferry pushing to a real rsync daemon and real rsync
#    pulling from a ferry daemon; each must give the same "Literal data"
#    and "Matched data" as rsync as the sender, no "failed verification"
#    redo, and the source's bytes.
# 2. Wildcards in a daemon client's path arguments (util1.c: glob_expand):
#    a real rsync client pulls "mod/a*", "mod/sub/*.txt", "mod/nomatch*",
#    "mod/../*" and more from a ferry daemon and from an rsync daemon over
#    the same tree: same tree received, same exit code.
#
# Run with FERRY=/usr/bin/rsync every check must pass: that proves the
# checks themselves.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON" "$FERRY"
t_setup

# ------------------------------------------------- part 1: --inplace

SRC=$T/src   # the new versions
OLD=$T/old   # what each destination starts as
FILES="shuffled.bin inserted.bin deleted.bin zeros.bin"

make_inplace_files() {
    mkdir -p "$SRC" "$OLD" || return 1
    "$PYTHON" - "$SRC" "$OLD" <<'EOF' || return 1
import random, sys
src, old = sys.argv[1], sys.argv[2]
r = random.Random(97)
def rnd(n):
    return bytes(r.getrandbits(8) for _ in range(n))
def put(name, before, after):
    open(f"{old}/{name}", "wb").write(before)
    open(f"{src}/{name}", "wb").write(after)
# 2 KiB pieces, shuffled
pieces = [rnd(2048) for _ in range(150)]
mixed = pieces[:]
r.shuffle(mixed)
put("shuffled.bin", b"".join(pieces), b"".join(mixed))
# 777 bytes inserted near the front: every block moves forward
base = rnd(300000)
put("inserted.bin", base, base[:100] + rnd(777) + base[100:])
# 5000 bytes deleted near the front: every block moves back
put("deleted.bin", base, base[:1000] + base[6000:])
# runs of zeros with data dropped in: zero blocks re-aligned
z = bytearray(250000)
for at in (3000, 90000, 180000):
    z[at:at + 700] = rnd(700)
zz = bytearray(z)
zz[500:500] = bytes(123)
zz[100000:100000] = rnd(55)
put("zeros.bin", bytes(z), bytes(zz))
EOF
    touch -d @1700000000 "$SRC"/*.bin
}
t_check make_inplace_files make_inplace_files || t_done

# fresh_dst DIR -- DIR holds the old versions, older than the new ones.
fresh_dst() {
    rm -rf "$1" && mkdir -p "$1" && cp "$OLD"/*.bin "$1"/ && touch -d @1500000000 "$1"/*.bin
}

# figures OUT -- "literal matched" from a --stats output.
figures() {
    sed -n 's/^Literal data: \([0-9,]*\) bytes.*/\1/p; s/^Matched data: \([0-9,]*\) bytes.*/\1/p' \
        "$1" | tr -d , | tr '\n' ' '
}

# same_inplace NAME REF_OUT OUT DST FILE -- the run OUT matched the
# reference run REF_OUT: same figures, no redo, the source's bytes in DST.
same_inplace() {
    local name=$1 ref=$2 out=$3 dst=$4 f=$5 a b
    a=$(figures "$ref")
    b=$(figures "$out")
    if grep -q 'failed verification' "$out" "$ref"; then
        t_fail "$name" "a redo: $(grep -h 'failed verification' "$out" "$ref" | head -1)"
    elif [ -z "$a" ] || [ "$a" != "$b" ]; then
        t_fail "$name" "literal/matched: rsync [$a] ferry [$b]"
    elif ! cmp -s "$SRC/$f" "$dst/$f"; then
        t_fail "$name" "$dst/$f differs from the source"
    else
        t_pass "$name"
    fi
}

IPOPTS=(-a --inplace --no-W --stats)

# local mode: rsync and ferry each as sender and receiver
for f in $FILES; do
    fresh_dst "$T/l_r" && fresh_dst "$T/l_f"
    "$RSYNC" "${IPOPTS[@]}" "$SRC/$f" "$T/l_r/" >"$T/l_r.out" 2>&1
    "$FERRY" "${IPOPTS[@]}" "$SRC/$f" "$T/l_f/" >"$T/l_f.out" 2>&1
    cat "$T/l_f.out"
    same_inplace "inplace_local_$f" "$T/l_r.out" "$T/l_f.out" "$T/l_f" "$f"
done

# ferry pushing to a real rsync daemon (the receiver is rsync)
if t_rsyncd_start rsyncd "[pr]
path = $T/push_r
read only = no
[pf]
path = $T/push_f
read only = no
[src]
path = $SRC"; then
    for f in $FILES; do
        fresh_dst "$T/push_r" && fresh_dst "$T/push_f"
        : >"$T/rsyncd.log"
        "$RSYNC" "${IPOPTS[@]}" "$SRC/$f" "rsync://127.0.0.1:$RSYNCD_PORT/pr/" >"$T/p_r.out" 2>&1
        "$FERRY" "${IPOPTS[@]}" "$SRC/$f" "rsync://127.0.0.1:$RSYNCD_PORT/pf/" >"$T/p_f.out" 2>&1
        cat "$T/rsyncd.log" >>"$T/p_f.out"
        same_inplace "inplace_push_to_rsyncd_$f" "$T/p_r.out" "$T/p_f.out" "$T/push_f" "$f"
    done
    # the reference for the pulls below: rsync pulling from rsync
    for f in $FILES; do
        fresh_dst "$T/pull_r_$f"
        "$RSYNC" "${IPOPTS[@]}" "rsync://127.0.0.1:$RSYNCD_PORT/src/$f" "$T/pull_r_$f/" \
            >"$T/pull_r_$f.out" 2>&1
    done
    t_rsyncd_stop
else
    t_fail inplace_push_to_rsyncd "rsync daemon did not start"
fi

# real rsync pulling from a ferry daemon (the sender is ferry)
if t_ferryd_start ferryd "[src]
path = $SRC"; then
    for f in $FILES; do
        fresh_dst "$T/pull_f"
        "$RSYNC" "${IPOPTS[@]}" "rsync://127.0.0.1:$FERRYD_PORT/src/$f" "$T/pull_f/" \
            >"$T/pull_f.out" 2>&1
        same_inplace "inplace_rsync_pulls_ferryd_$f" "$T/pull_r_$f.out" "$T/pull_f.out" \
            "$T/pull_f" "$f"
    done
    t_ferryd_stop
else
    t_fail inplace_rsync_pulls_ferryd "ferry daemon did not start"
fi

# ------------------------------------------- part 2: daemon wildcards

G=$T/gmod
GL=$T/gmod_links
make_glob_tree() {
    mkdir -p "$G/sub/deep" "$G/adir" "$G/sub2" || return 1
    echo 1 >"$G/a1.txt" && echo 2 >"$G/a2.bin" && echo b >"$G/b.txt"
    echo h >"$G/.ahidden" && echo x >"$G/sub/x.txt" && echo y >"$G/sub/y.txt"
    echo z >"$G/sub/z.bin" && echo w >"$G/sub/deep/w.txt" && echo q >"$G/sub2/q.txt"
    echo "a file name with a space" >"$G/a b.txt"
    ln -s a1.txt "$G/link_in"
    ln -s sub "$G/link_dir"
    ln -s nothere "$G/link_dangling"
    touch -d @1600000000 "$G" "$G"/* "$G"/sub/* "$G"/sub/deep/*
    # the same with a link out of the module: never to be followed
    cp -a "$G" "$GL" || return 1
    echo "outside" >"$T/outside.txt"
    ln -s "$T/outside.txt" "$GL/link_out"
}
t_check make_glob_tree make_glob_tree || t_done

MODS="[g]
path = $G
[gx]
path = $G
exclude = b.txt sub/y.txt"
# A module whose symlinks may point out of it: ferry treats such a link
# as rsync's chrooted daemon does (its target is not there), so the
# reference is a chrooted rsync module, which needs root.
[ "$(id -u)" = 0 ] && MODS="$MODS
[gc]
path = $GL
use chroot = yes"

RPORT="" FPORT=""
if t_rsyncd_start grsyncd "$MODS"; then
    RPORT=$RSYNCD_PORT
fi
if t_ferryd_start gferryd "$MODS
[gl]
path = $GL
use chroot = no"; then
    FPORT=$FERRYD_PORT
fi

# pull_both NAME ARG [OPTS...] -- a real rsync client pulls ARG from both
# daemons; the trees and exit codes must agree (and the names printed).
pull_both() {
    local name=$1 arg=$2 rc_r rc_f
    shift 2
    rm -rf "$T/gr" "$T/gf" && mkdir "$T/gr" "$T/gf"
    "$RSYNC" -a "$@" "rsync://127.0.0.1:$RPORT/$arg" "$T/gr/" >"$T/gr.out" 2>&1
    rc_r=$?
    "$RSYNC" -a "$@" "rsync://127.0.0.1:$FPORT/$arg" "$T/gf/" >"$T/gf.out" 2>&1
    rc_f=$?
    echo "== $name: rsyncd exit $rc_r, ferryd exit $rc_f"
    # The destination itself is not transferred unless a directory's
    # contents are: its mtime is just when the run ended.
    touch -d @1650000000 "$T/gr" "$T/gf"
    cat "$T/gr.out" "$T/gf.out"
    if [ "$rc_r" != "$rc_f" ]; then
        t_fail "$name" "exit codes: rsync daemon $rc_r, ferry daemon $rc_f"
    elif grep -q 'No such file' "$T/gr.out" && ! grep -q 'No such file' "$T/gf.out"; then
        t_fail "$name" "rsync reports a missing file, ferry does not"
    elif ! t_compare "$T/gr" "$T/gf"; then
        t_fail "$name" "the received trees differ"
    else
        t_pass "$name"
    fi
}

if [ -n "$RPORT" ] && [ -n "$FPORT" ]; then
    pull_both glob_prefix 'g/a*'
    pull_both glob_subdir_txt 'g/sub/*.txt'
    pull_both glob_nomatch 'g/nomatch*'
    pull_both glob_nomatch_dir 'g/nomatch/*'
    pull_both glob_file_as_dir 'g/a1.txt/*'
    pull_both glob_dotdot 'g/../*'
    pull_both glob_dotdot_deep 'g/sub/../../a*'
    pull_both glob_dirs_only 'g/*/'
    pull_both glob_every_level 'g/s?b/d*/*.txt'
    pull_both glob_class 'g/[ab]*'
    pull_both glob_dotfile 'g/.a*'
    pull_both glob_two_levels 'g/*/*.txt'
    pull_both glob_escaped 'g/a\*'
    pull_both glob_daemon_excludes 'gx/*.txt'
    pull_both glob_daemon_excludes_sub 'gx/sub/*'
    pull_both glob_relative 'g/sub/*.txt' -R
    pull_both glob_relative_dot 'g/sub/./*.txt' -R
    pull_both glob_secluded 'g/a*' -s
    pull_both glob_old_args_split 'g/a1.txt g/b*' --old-args
    pull_both glob_space_name 'g/a b*'
    if [ "$(id -u)" = 0 ]; then
        pull_both glob_symlinks_chrooted 'gc/link*'
        pull_both glob_all_chrooted 'gc/*'
    else
        t_skip glob_symlinks_chrooted "a chrooted rsync module needs root"
    fi
    # nothing from outside the module, whatever the pattern
    for p in 'gl/../*' 'gl/../../*' 'gl/link*' 'gl/*' 'gl/link_out' 'gl/link_out/*' 'gl/*/../*'; do
        rm -rf "$T/gf" && mkdir "$T/gf"
        "$RSYNC" -aL "rsync://127.0.0.1:$FPORT/$p" "$T/gf/" >/dev/null 2>&1
        if grep -rqs outside "$T/gf"; then
            t_fail "glob_confined $p" "a file from outside the module arrived"
        else
            t_pass "glob_confined $p"
        fi
    done
else
    t_fail glob_daemons "a daemon did not start (rsync port '$RPORT', ferry port '$FPORT')"
fi

t_done
