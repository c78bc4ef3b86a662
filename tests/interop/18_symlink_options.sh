#!/bin/bash
# -L, --copy-unsafe-links, -k, --safe-links, --munge-links: ferry and real
# rsync run the same command on the same tree and must produce the same
# result; then the same through daemons, where a followed link must never
# lead out of a ferry module.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON"
t_setup

OUT=$T/outside
SRC=$T/src
mkdir -p "$OUT/odir" "$SRC/real/deep"
echo outside-secret >"$OUT/secret.txt"
echo odir-file >"$OUT/odir/f"
echo data >"$SRC/real/file"
echo deep >"$SRC/real/deep/x"
ln -s real/file "$SRC/safe_file"           # safe, to a file
ln -s real "$SRC/safe_dir"                 # safe, to a dir
ln -s "$OUT/secret.txt" "$SRC/abs_file"    # unsafe (absolute)
ln -s ../outside/odir "$SRC/up_dir"        # unsafe (climbs out)
ln -s ../../real/file "$SRC/real/deep/rel_ok"  # safe relative from a subdir
ln -s nowhere "$SRC/dangling"              # dangling
touch -h -d @1600000000 "$SRC"/* "$SRC/real/deep/rel_ok"

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

t_check links_kept         both plain -a "$SRC/" DST/
t_check copy_links         both copyl -aL "$SRC/" DST/
t_check copy_unsafe_links  both unsafe -a --copy-unsafe-links "$SRC/" DST/
t_check copy_dirlinks      both dirl -ak "$SRC/" DST/
t_check safe_links         both safel -a --safe-links "$SRC/" DST/
t_check munge_links        both munge -a --munge-links "$SRC/" DST/

check_loop() {
    mkdir -p "$T/loop/a"
    ln -s .. "$T/loop/a/up"
    timeout 60 "$FERRY" -aL "$T/loop/" "$T/loop.out/" >"$T/loop.log" 2>&1
    local rc=$?
    [ $rc != 124 ] && [ -d "$T/loop.out/a" ]
}
t_check copy_links_loop_terminates check_loop

t_rsyncd_start sl_rsyncd "[m]
    path = $SRC
    read only = no" || { t_fail rsyncd_start; t_done; }
t_ferryd_start sl_ferryd "[m]
    path = $SRC
[w]
    path = $T/wmod
    read only = no" || { t_fail ferryd_start; t_done; }
mkdir -p "$T/wmod"

check_pull_rsyncd() {
    both pull_l -aL "rsync://127.0.0.1:$RSYNCD_PORT/m/" DST/ || return 1
    both pull_unsafe -a --copy-unsafe-links "rsync://127.0.0.1:$RSYNCD_PORT/m/" DST/ || return 1
    both pull_k -ak "rsync://127.0.0.1:$RSYNCD_PORT/m/" DST/
}
t_check ferry_pulls_from_rsyncd_following check_pull_rsyncd

check_ferryd_no_escape() {
    rm -rf "$T/p3"
    "$RSYNC" -aL "rsync://127.0.0.1:$FERRYD_PORT/m/" "$T/p3/" >"$T/p3.out" 2>&1
    # links inside the module are followed; links out of it are not
    [ -f "$T/p3/safe_file" ] && [ ! -L "$T/p3/safe_file" ] || return 1
    [ -d "$T/p3/safe_dir/deep" ] || return 1
    ! grep -rqs outside-secret "$T/p3" && ! grep -rqs odir-file "$T/p3"
}
t_check ferryd_follows_only_inside_module check_ferryd_no_escape

check_push_safe() {
    "$RSYNC" -a --safe-links "$SRC/" "rsync://127.0.0.1:$FERRYD_PORT/w/" || return 1
    [ -L "$T/wmod/safe_file" ] && [ ! -e "$T/wmod/abs_file" ] && [ ! -e "$T/wmod/up_dir" ]
}
t_check rsync_pushes_safe_links_to_ferryd check_push_safe

t_done
