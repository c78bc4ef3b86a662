#!/usr/bin/env bash
# Symlinks inside a daemon module, rsync 3.5.0's daemon against ferry's on
# the same module trees, a real rsync client on both:
#  - receiving side: a link that stays in the module is followed in the
#    destination path (with and without --mkpath), in --backup-dir=/link
#    and in --partial-dir=/link; one that leads out of the module fails
#    with an error and a non-zero exit, and nothing is written outside;
#  - sending side, -L / -k / --copy-dirlinks: links are resolved against
#    the module root (sub/x -> ../target is followed), a link that leaves
#    the module is refused with an error and never sent, not even as a
#    link; a source argument through an in-module link is followed;
#  - -K on a push: a destination link is followed inside the module only,
#    but anywhere in a module with "insecure links = yes".
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317,SC2119

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC"
t_setup

W=$T/w # the writable module and what lies outside it
R=$T/r # the read-only module and what lies outside it

reset_w() {
    rm -rf "$W" "$T/src"
    mkdir -p "$W/mod/public" "$W/secret" "$T/src"
    echo SECRET >"$W/secret/f0"
    echo OLD-DESTINATION >"$W/mod/f0"
    echo served >"$W/mod/public/served.txt"
    ln -s public "$W/mod/plink"
    ln -s "$W/secret" "$W/mod/blink"
    echo NEW >"$T/src/f0"
    rm -rf "$T/srcK"
    mkdir -p "$T/srcK/blink" "$T/srcK/plink"
    echo PWNED >"$T/srcK/blink/pwned"
    echo PWNED >"$T/srcK/plink/pwned"
}

reset_r() {
    rm -rf "$R" "$T/dest"
    mkdir -p "$R/module/sub" "$R/module/targetdir" "$R/module/sibling" "$R/outside/outdir" "$T/dest"
    echo IN-MODULE-FILE >"$R/module/target.txt"
    echo IN-MODULE-DIRFILE >"$R/module/targetdir/f.txt"
    echo SIBLING >"$R/module/sibling/s.txt"
    echo OUT-OF-MODULE >"$R/outside/secret.txt"
    echo OUT-OF-MODULE >"$R/outside/outdir/s.txt"
    ln -s ../target.txt "$R/module/sub/in_file"
    ln -s ../targetdir "$R/module/sub/in_dir"
    ln -s ../sibling "$R/module/sub/climb"
    ln -s ../../outside/secret.txt "$R/module/sub/esc_file"
    ln -s ../../outside/outdir "$R/module/sub/esc_dir"
}

conf() {
    cat <<EOF
[w]
    path = $W/mod
    read only = no
[wi]
    path = $W/mod
    read only = no
    insecure links = yes
[r]
    path = $R/module
    read only = yes
EOF
}
t_rsyncd_start links_rsyncd "$(conf)" || { t_fail rsyncd_start; t_done; }
t_ferryd_start links_ferryd "$(conf)" || { t_fail ferryd_start; t_done; }
declare -A PORT=([rsyncd]=$RSYNCD_PORT [ferryd]=$FERRYD_PORT)

# rsync_to DAEMON TAG [ARG...]: run the client with rsync://HOST:PORT/ in
# place of "@/", keeping rc and stderr in $T/DAEMON.TAG.{rc,err}.
rsync_to() {
    local d=$1 tag=$2 a args=()
    shift 2
    for a in "$@"; do
        args+=("${a/#@\//rsync://127.0.0.1:${PORT[$d]}/}")
    done
    "$RSYNC" "${args[@]}" >"$T/$d.$tag.out" 2>"$T/$d.$tag.err"
    echo $? >"$T/$d.$tag.rc"
}
rc_of() { cat "$T/$1.$2.rc"; }

# ------------------------------------------------------- receiving side
# push DAEMON TAG URL-TAIL [OPTION...], then record what landed where
# (SRC: the source, $T/src by default; MOD: the module, w by default)
push() {
    local d=$1 tag=$2 tail=$3
    shift 3
    reset_w
    rsync_to "$d" "$tag" -a "$@" "${SRC:-$T/src}/" "@/${MOD:-w}/$tail"
    (cd "$W" && find . -path ./mod/blink -prune -o -print | LC_ALL=C sort) >"$T/$d.$tag.tree"
    for f in secret/f0 secret/pwned mod/f0 mod/public/f0 mod/public/pwned; do
        printf '%s: %s\n' "$f" "$(cat "$W/$f" 2>/dev/null)"
    done >"$T/$d.$tag.files"
}
for d in rsyncd ferryd; do
    push "$d" dest_in plink/
    push "$d" dest_out blink/
    push "$d" mkpath_in plink/a/b/ --mkpath
    push "$d" mkpath_out blink/a/b/ --mkpath
    push "$d" backup_in "" --backup --backup-dir=/plink
    push "$d" backup_out "" --backup --backup-dir=/blink
    push "$d" partial_in "" --delay-updates --partial-dir=/plink/pdir
    push "$d" partial_out "" --delay-updates --partial-dir=/blink
    SRC=$T/srcK push "$d" keep_dirlinks "" -K
    SRC=$T/srcK MOD=wi push "$d" keep_dirlinks_insecure "" -K
done

# same_push TAG RC [MESSAGE]: both daemons exit RC (or both non-zero for
# "fail") and leave the same files; MESSAGE is in both clients' stderr
same_push() {
    local tag=$1 want=$2 msg=${3:-} d rc
    for d in rsyncd ferryd; do
        rc=$(rc_of "$d" "$tag")
        if [ "$want" = fail ]; then
            [ "$rc" != 0 ] || { echo "$d $tag: exit 0, want an error"; return 1; }
        else
            [ "$rc" = "$want" ] || { echo "$d $tag: exit $rc, want $want"; cat "$T/$d.$tag.err"; return 1; }
        fi
        grep -qx 'secret/f0: SECRET' "$T/$d.$tag.files" || { echo "$d $tag: wrote outside the module"; return 1; }
        [ -z "$msg" ] || grep -qF "$msg" "$T/$d.$tag.err" || { echo "$d $tag: no '$msg'"; cat "$T/$d.$tag.err"; return 1; }
    done
    cmp "$T/rsyncd.$tag.files" "$T/ferryd.$tag.files" || return 1
    diff "$T/rsyncd.$tag.tree" "$T/ferryd.$tag.tree"
}
dest_in() { same_push dest_in 0 && grep -qx 'mod/public/f0: NEW' "$T/ferryd.dest_in.files"; }
t_check dest_through_inmodule_link_followed dest_in
t_check dest_through_escaping_link_refused same_push dest_out 3 \
    'change_dir#1 "blink/" (in w) failed: Too many levels of symbolic links (40)'
mkpath_in() { same_push mkpath_in 0 && grep -qx './mod/public/a/b/f0' "$T/ferryd.mkpath_in.tree"; }
t_check mkpath_through_inmodule_link_followed mkpath_in
# rsync's own mkdir lands outside before it refuses the chdir: compare
# only the exit and that nothing was written to the file there
mkpath_out() {
    local d
    for d in rsyncd ferryd; do
        [ "$(rc_of "$d" mkpath_out)" = 11 ] || { echo "$d: exit $(rc_of "$d" mkpath_out)"; return 1; }
        grep -qF 'mkdir "blink/a/b/" (in w) failed: Too many levels of symbolic links' "$T/$d.mkpath_out.err" ||
            { cat "$T/$d.mkpath_out.err"; return 1; }
    done
    [ ! -e "$W/secret/a" ] || [ "$(find "$W/secret/a" -type f | wc -l)" = 0 ]
}
t_check mkpath_through_escaping_link_refused mkpath_out
backup_in() { same_push backup_in 0 && grep -qx 'mod/public/f0: OLD-DESTINATION' "$T/ferryd.backup_in.files"; }
t_check backup_dir_inmodule_link_followed backup_in
# rsync: exit 11 (keep_backup failed), ferry: 23 (each backup fails)
t_check backup_dir_escaping_link_refused same_push backup_out fail \
    'Too many levels of symbolic links'
partial_in() { same_push partial_in 0 && grep -qx './mod/public/pdir' "$T/ferryd.partial_in.tree"; }
t_check partial_dir_inmodule_link_followed partial_in
# rsync: exit 2 (refusing unconfined partial basis), ferry: 23
partial_out() {
    same_push partial_out fail && grep -qx 'mod/f0: OLD-DESTINATION' "$T/ferryd.partial_out.files"
}
t_check partial_dir_escaping_link_refused partial_out
keep_dirlinks() {
    same_push keep_dirlinks 23 'failed to stat "blink/pwned" (in w): Too many levels of symbolic links' &&
        grep -qx 'secret/pwned: ' "$T/ferryd.keep_dirlinks.files" &&
        grep -qx 'mod/public/pwned: PWNED' "$T/ferryd.keep_dirlinks.files"
}
t_check keep_dirlinks_only_inside_module keep_dirlinks
keep_insecure() {
    local d
    for d in rsyncd ferryd; do
        [ "$(rc_of "$d" keep_dirlinks_insecure)" = 0 ] || { cat "$T/$d.keep_dirlinks_insecure.err"; return 1; }
        grep -qx 'secret/pwned: PWNED' "$T/$d.keep_dirlinks_insecure.files" || return 1
    done
}
t_check keep_dirlinks_anywhere_with_insecure_links keep_insecure

# --------------------------------------------------------- sending side
# pull DAEMON TAG URL-TAIL [OPTION...], then record the destination tree
pull() {
    local d=$1 tag=$2 tail=$3
    shift 3
    reset_r
    rsync_to "$d" "$tag" "$@" "@/r/$tail" "$T/dest/"
    (cd "$T/dest" && find . -printf '%p %y\n' | LC_ALL=C sort) >"$T/$d.$tag.tree"
    grep -rl OUT-OF-MODULE "$T/dest" >"$T/$d.$tag.leak"
    cat "$T/dest/in_file" >"$T/$d.$tag.in_file" 2>/dev/null
}
for d in rsyncd ferryd; do
    pull "$d" copylinks sub/ -rL
    pull "$d" dirlinks sub/ -rlk
    pull "$d" arg_in sub/in_dir/ -r
    pull "$d" arg_out sub/esc_dir/ -r
done
no_leak() {
    local d
    for d in rsyncd ferryd; do
        [ ! -s "$T/$d.$1.leak" ] || { echo "$d $1: out-of-module content in"; cat "$T/$d.$1.leak"; return 1; }
        [ "$(rc_of "$d" "$1")" = "$2" ] || { echo "$d $1: exit $(rc_of "$d" "$1"), want $2"; cat "$T/$d.$1.err"; return 1; }
    done
}
# has DAEMON TAG LINE...: the destination tree holds these entries
has() {
    local d=$1 tag=$2 l
    shift 2
    for l in "$@"; do
        grep -qx "$l" "$T/$d.$tag.tree" || { echo "$d $tag: no '$l'"; cat "$T/$d.$tag.tree"; return 1; }
    done
}
copylinks() {
    local d
    no_leak copylinks 23 || return 1
    for d in rsyncd ferryd; do
        has "$d" copylinks './in_file f' './in_dir/f.txt f' './climb/s.txt f' || return 1
        [ "$(cat "$T/$d.copylinks.in_file")" = IN-MODULE-FILE ] || { echo "$d: in_file's content"; return 1; }
    done
    # the escaping file is refused, not sent in any form
    ! grep -q '^./esc_file ' "$T/ferryd.copylinks.tree" && grep -q 'esc_file' "$T/ferryd.copylinks.err"
}
t_check copy_links_follow_parent_relative_links_in_module copylinks
dirlinks() {
    local d
    no_leak dirlinks 23 || return 1
    for d in rsyncd ferryd; do
        has "$d" dirlinks './in_dir/f.txt f' './climb/s.txt f' './in_file l' || return 1
    done
    # never sent as a link that leads out of the module
    ! grep -q '^./esc_dir l' "$T/ferryd.dirlinks.tree" && ! grep -q '^./esc_dir/' "$T/ferryd.dirlinks.tree"
}
t_check copy_dirlinks_in_module_followed_escape_refused dirlinks
arg_in() { no_leak arg_in 0 && has rsyncd arg_in './f.txt f' && has ferryd arg_in './f.txt f'; }
t_check source_arg_through_inmodule_link_followed arg_in
arg_out() {
    no_leak arg_out 23 || return 1
    grep -qF 'change_dir "sub/esc_dir" (in r) failed: Too many levels of symbolic links (40)' \
        "$T/ferryd.arg_out.err" || { cat "$T/ferryd.arg_out.err"; return 1; }
}
t_check source_arg_through_escaping_link_refused arg_out

t_rsyncd_stop
t_ferryd_stop
t_done
