#!/bin/bash
# --chown, --usermap, --groupmap: ferry and real rsync give the same owners
# and groups, locally and with ferry receiving from / sending to rsync
# daemons. Needs root (only root can give files away).
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON"
t_setup

if [ "$(id -u)" != 0 ]; then
    t_skip id_maps "needs root"
    t_done
fi

SRC=$T/src
mkdir -p "$SRC/sub"
echo a >"$SRC/a"
echo b >"$SRC/sub/b"
echo c >"$SRC/c"
ln -s a "$SRC/link"
chown daemon:daemon "$SRC/a"
chown bin:bin "$SRC/sub/b"
chown -h daemon:bin "$SRC/link"
touch -h -d @1600000000 "$SRC"/* "$SRC/sub/b"

both() { # TAG ARGS... (DST stands for the destination)
    local tag=$1 tool
    shift
    for tool in rsync ferry; do
        local d="$T/$tag.$tool" bin=$RSYNC
        [ $tool = ferry ] && bin=$FERRY
        rm -rf "$d"
        "$bin" "${@//DST/$d}" >"$d.out" 2>&1
        echo $? >"$d.rc"
    done
    if ! cmp -s "$T/$tag.rsync.rc" "$T/$tag.ferry.rc"; then
        echo "exit codes: rsync $(cat "$T/$tag.rsync.rc") ferry $(cat "$T/$tag.ferry.rc")"
        cat "$T/$tag.ferry.out"
        return 1
    fi
    t_compare --no-dir-times "$T/$tag.rsync" "$T/$tag.ferry"
}

t_check chown_user_group    both chown -a --chown=nobody:nogroup "$SRC/" DST/
t_check chown_user_only     both chownu -a --chown=nobody "$SRC/" DST/
t_check chown_group_only    both chowng -a --chown=:nogroup "$SRC/" DST/
t_check usermap_names       both umap -a --usermap=daemon:nobody,bin:daemon "$SRC/" DST/
t_check usermap_wild_ids    both uwild -a --usermap=b*:nobody,0-10:bin "$SRC/" DST/
t_check groupmap            both gmap -a --groupmap=bin:nogroup,*:daemon "$SRC/" DST/
t_check numeric_usermap     both nmap -a --numeric-ids --usermap=1:nobody "$SRC/" DST/

check_bad() {
    local rr fr
    "$RSYNC" -a --usermap=nocolon "$SRC/" "$T/bad.r/" >"$T/bad.r.out" 2>&1; rr=$?
    "$FERRY" -a --usermap=nocolon "$SRC/" "$T/bad.f/" >"$T/bad.f.out" 2>&1; fr=$?
    [ "$rr" = "$fr" ] || { echo "rsync $rr ferry $fr"; cat "$T/bad.f.out"; return 1; }
    grep -q "No colon found in --usermap: nocolon" "$T/bad.f.out"
}
t_check usermap_without_colon check_bad

t_rsyncd_start im_rsyncd "[m]
    path = $SRC
[w]
    path = $T/wmod
    read only = no" || { t_fail rsyncd_start; t_done; }
mkdir -p "$T/wmod"

t_check pull_from_rsyncd_chown both pullc -a --chown=nobody:nogroup \
    "rsync://127.0.0.1:$RSYNCD_PORT/m/" DST/

check_push() {
    "$FERRY" -a --usermap=daemon:nobody --groupmap=*:nogroup "$SRC/" \
        "rsync://127.0.0.1:$RSYNCD_PORT/w/" || return 1
    [ "$(stat -c %U:%G "$T/wmod/a")" = "nobody:nogroup" ] &&
        [ "$(stat -c %U:%G "$T/wmod/sub/b")" = "bin:nogroup" ]
}
t_check push_to_rsyncd_maps check_push

t_done
