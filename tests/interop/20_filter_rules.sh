#!/bin/bash
# Filter-rule semantics as REAL rsync has them (no ferry here): one source
# tree, many rule combinations, and which files end up in the destination
# (sender-side selection, and with --delete what the receiver protects).
# The results are compared with the golden file next to this script, so a
# later test can hold ferry to exactly the same answers.
#
# Regenerate the golden file with UPDATE_GOLDEN=1 (and review the diff:
# it must only change because the cases changed).
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" find sort
t_setup

GOLDEN=$FERRY_SRC/tests/interop/20_filter_rules.golden
SRC=$T/src
# -C reads $HOME/.cvsignore and $CVSIGNORE: keep both out of the results.
export HOME=$T/home
unset CVSIGNORE
mkdir -p "$HOME"

# The source tree: names for every pattern form, per-directory rule files.
make_src() {
    local d
    for d in a/b/c a/foo foo/bar/baz x/y/z sub/deep/er keep .git/objects build/obj \
        'br[ack]et' empty; do
        mkdir -p "$SRC/$d"
    done
    (
        cd "$SRC" || exit 1
        touch a.o a.c a.h b.log core README Makefile foo/x.c foo/bar/y.o \
            foo/bar/baz/z.c a/foo/q a/b/c/d.c a/b/c/d.o x/y/z/file.txt x/y/file.txt \
            x/y/zzz.txt x/z.txt keep/keep.o sub/important.log sub/x.log sub/a.bak \
            sub/deep/a.bak sub/deep/er/important.log .git/objects/o1 build/obj/m.o \
            'br[ack]et/f' 'star*' q.tmp a/q.tmp foo/bar/q.tmp top-only sub/top-only \
            sub/anch sub/deep/anch sub/deep/deep-more deep-more 'with space.txt' \
            'x~' '#save#' .hidden
        printf -- '- *.log\n- /top-only\n+ keep.o\n' >.rules
        printf -- '+ important.log\n- *.bak\n- /anch\n: .more\n' >sub/.rules
        printf -- '- deep-more\n' >sub/.more
        printf -- '!\n- *.c\n' >a/.rules
        printf 'z.c *.txt\n' >x/.cvsignore
    )
    printf '# a comment\n; another\n\n*.o\n+ keep.o\n- *.h\n' >"$T/exclude-from"
    printf '*/\n*.c\n' >"$T/include-from"
    printf -- '- *.tmp\n+ /x/***\n- /x\n' >"$T/merge"
}

# The destination for --delete cases: the source plus things only it has.
make_dst() {
    local dst=$1
    cp -a "$SRC/." "$dst/"
    mkdir -p "$dst/extradir" "$dst/gone" "$dst/sub/old"
    touch "$dst/extra.o" "$dst/extra.log" "$dst/extra.c" "$dst/sub/extra.bak" \
        "$dst/extradir/f" "$dst/gone/x.o" "$dst/sub/old/y.o" "$dst/foo/extra.c"
}

# The destination as sorted lines, directories with a trailing slash.
listing() {
    (cd "$1" && find . -mindepth 1 \( -type d -printf '%P/\n' \) -o -printf '%P\n') |
        LC_ALL=C sort
}

OUT=$T/results
: >"$OUT"

# run_case NAME DELETE? ARGS... -- one transfer, its listing appended to OUT.
run_case() {
    local name=$1 del=$2 dst=$T/dst.$1 rc
    shift 2
    mkdir -p "$dst"
    [ "$del" = del ] && make_dst "$dst"
    (cd "$T" && "$RSYNC" -r "$@" "$SRC/" "$dst/") >"$T/log.$name" 2>&1
    rc=$?
    {
        printf '== %s:' "$name"
        printf ' %q' "$@"
        printf '\n'
        [ "$rc" -eq 0 ] || printf 'exit %d\n' "$rc"
        listing "$dst"
    } >>"$OUT"
}

make_src

# --- sender side: what goes into the file list
run_case exclude_glob - -f'- *.o'
run_case anchored - -f'- /foo'
run_case dir_only - -f'- foo/'
run_case last_component - -f'- foo'
run_case two_elements - -f'- foo/bar'
run_case star_middle - -f'- x/*/*.txt'
run_case anchored_starstar - -f'- /foo/**/baz'
run_case starstar_prefix - -f'- **/bar'
run_case starstar_infix - -f'- sub**'
run_case triple_star - -f'- foo/***'
run_case anchored_triple_star - -f'- /a/***'
run_case dirs_and_c_only - -f'+ */' -f'+ *.c' -f'- *'
run_case only_foo_x_c - -f'+ foo/' -f'+ foo/x.c' -f'- *'
run_case man_x_y_file - -f'+ x/' -f'+ x/y/' -f'+ x/y/file.txt' -f'- *'
run_case first_match_include - -f'+ keep.o' -f'- *.o'
run_case first_match_exclude - -f'- *.o' -f'+ keep.o'
run_case negate - -f'-! */' -f'-! *.c'
run_case class - -f'- [ab].?'
run_case negated_class - -f'- *.[!c]'
run_case escapes - -f'- br\[ack\]et' -f'- star\*'
run_case posix_class - -f'- *[[:upper:]]*'
run_case question - -f'- ?.o'
run_case anchored_include - -f'+ /q.tmp' -f'- *.tmp'
run_case hidden_files - -f'- .*'
run_case long_names - -f'exclude *.h' -f'include keep.o' -f'exclude *.o'
run_case underscore - -f'-_*.h' -f'-,_*.log'
run_case hide_show - -f'S a.o' -f'H *.o'
run_case clear - -f'- *.c' -f'!' -f'- *.h'
run_case dir_merge - -f': .rules'
run_case dir_merge_no_prefixes - -f':- .rules'
run_case dir_merge_no_inherit - -f':n .rules'
run_case dir_merge_exclude_self - -f':e .rules'
run_case dir_merge_before_global - -f': .rules' -f'- *.bak'
run_case global_before_dir_merge - -f'- *.bak' -f': .rules'
run_case cvs_dir_merge - -f':C'
run_case cvs_rule - -f'-C'
run_case cvs_rule_after_include - -f'+ *.o' -f'-C'
run_case merge_file - -f". $T/merge"
run_case merge_no_prefixes - -f"merge,- $T/exclude-from"
run_case old_exclude_include - --include='keep.o' --exclude='*.o'
run_case old_prefix_in_exclude - --exclude='+ keep.o' --exclude='*.o'
run_case exclude_from - --exclude-from="$T/exclude-from"
run_case include_from - --include-from="$T/include-from" --exclude='*'

# --- receiver side: what --delete removes and what the rules protect
run_case del_plain del --delete
run_case del_exclude_protects del --delete -f'- *.o'
run_case del_excluded del --delete --delete-excluded -f'- *.o'
run_case del_excluded_protect del --delete --delete-excluded -f'- *.o' -f'P extra.o'
run_case del_protect del --delete -f'P extra*'
run_case del_protect_dir del --delete -f'P extradir/'
run_case del_hide_not_protect del --delete -f'H *.o'
run_case del_risk del --delete -f'R extra.o' -f'- *.o'
run_case del_perishable del --delete -f'-p *.o'
run_case del_dir_merge del --delete -f': .rules'
run_case del_after_dir_merge del --delete-after -f':e .rules'
run_case del_sender_side del --delete -f'-s *.c'
run_case del_receiver_side del --delete -f'-r *.c'

if [ "${UPDATE_GOLDEN:-0}" = 1 ]; then
    # $T differs per run: the golden file says "$T" instead
    sed "s|$T|\$T|g" "$OUT" >"$GOLDEN"
    echo "golden file updated: $GOLDEN"
fi
if [ ! -f "$GOLDEN" ]; then
    t_skip "$(_t_script_name)" "no golden file (run with UPDATE_GOLDEN=1)"
    t_done
fi

# section NAME FILE -- one case's block (its header line and listing).
section() {
    awk -v n="== $1:" 'index($0, n) == 1 { on = 1; print; next }
                         /^== / { on = 0 } on' "$2"
}

check_case() {
    local got want
    got=$(section "$1" "$OUT")
    want=$(section "$1" "$GOLDEN")
    [ -n "$want" ] || { echo "case $1 missing from the golden file"; return 1; }
    # The header holds $T paths; the golden file has them masked.
    got=${got//$T/\$T}
    [ "$got" = "$want" ] && return 0
    diff <(echo "$want") <(echo "$got")
    cat "$T/log.$1"
    return 1
}

while IFS= read -r name; do
    t_check "$name" check_case "$name"
done < <(sed -n 's/^== \([^:]*\):.*/\1/p' "$OUT")
t_done
