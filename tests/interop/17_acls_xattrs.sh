#!/bin/bash
# -A/--acls and -X/--xattrs against real rsync, every direction: ferry
# pulling from an rsync daemon, ferry pushing to one, rsync pulling from
# and pushing to a ferry daemon, and a local copy. Each run's ACLs
# (getfacl) and xattrs (getfattr) must equal those of the same run done by
# rsync alone, and so must the itemize lines of an update that changes an
# ACL ('a') and xattrs ('x'), short and long (digest + request round)
# ones; -XX also copies user.rsync.%* names, plain -X leaves them out.
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" setfacl getfacl setfattr getfattr
# tmpfs /tmp may lack user xattrs: keep the trees on a filesystem that has
# them (checked below).
TMPDIR=${FERRY_XATTR_TMPDIR:-/var/tmp}
t_setup

if [ ! -x "$FERRY" ]; then
    t_skip "$(_t_script_name)" "ferry binary not found: $FERRY"
    t_done
fi
touch "$T/probe"
if ! setfattr -n user.probe -v 1 "$T/probe" 2>/dev/null ||
    ! setfacl -m u:nobody:r "$T/probe" 2>/dev/null; then
    t_skip "$(_t_script_name)" "$T does not support user xattrs and ACLs"
    t_done
fi

long() { printf "$1%.0s" $(seq 1 100); }

# mk_src DIR -- files with named-user/group ACLs, a dir with a default
# ACL, short (inline) and long (digest) user xattrs, an rsync-internal name
# and a symlink.
mk_src() {
    local d=$1
    mkdir -p "$d/sub/deep" || return 1
    echo hello >"$d/a" && head -c 6000 /dev/urandom >"$d/big" && echo plain >"$d/plain"
    echo deep >"$d/sub/deep/f" && ln -s a "$d/link"
    setfacl -m u:nobody:rw,g:daemon:r "$d/a" &&
        setfacl -m u:nobody:r "$d/sub/deep/f" &&
        setfacl -d -m u:nobody:rwx,g::r-x "$d/sub" &&
        setfattr -n user.short -v abc "$d/a" &&
        setfattr -n user.long -v "$(long x)" "$d/a" &&
        setfattr -n user.long -v "$(long y)" "$d/big" &&
        setfattr -n user.dir -v d "$d/sub" &&
        setfattr -n user.rsync.%internal -v zz "$d/big" &&
        touch -d @1500000000 "$d"/a "$d"/big "$d"/plain "$d"/sub/deep/f
}

# change_src DIR -- one ACL and some xattrs change, mtimes stay.
change_src() {
    local d=$1
    setfacl -m u:nobody:r "$d/big" &&
        setfattr -n user.short -v changed "$d/a" &&
        setfattr -n user.long -v "$(long z)" "$d/big" &&
        setfattr -x user.dir "$d/sub" &&
        setfattr -n user.new -v "$(long n)" "$d/plain" &&
        touch -d @1500000000 "$d"/a "$d"/big "$d"/plain
}

# meta DIR -- every ACL and xattr under DIR, relative names.
meta() {
    (cd "$1" && getfacl -R -p . 2>/dev/null && getfattr -R -h -d -m - . 2>/dev/null) |
        grep -v '^# owner\|^# group' | sed 's/^# file: \.\//# file: /'
}

same_meta() {
    if ! diff <(meta "$1") <(meta "$2") >"$T/meta.diff"; then
        cat "$T/meta.diff"
        return 1
    fi
}

same_lines() {
    if ! diff <(sort "$1") <(sort "$2"); then
        return 1
    fi
}

SRC=$T/src
t_check mktree mk_src "$SRC" || t_done
# rsync's own results, the oracle for every direction.
"$RSYNC" -aAX "$SRC/" "$T/want/" >/dev/null || t_fail want "rsync -aAX failed"
"$RSYNC" -aAXX "$SRC/" "$T/wantxx/" >/dev/null || t_fail want "rsync -aAXX failed"

if ! t_rsyncd_start rd17 "
[m]
    path = $T/rd
    read only = no
"; then
    t_fail rsyncd_start "real rsync daemon did not start"
    t_done
fi
RD=rsync://127.0.0.1:$RSYNCD_PORT/m
if ! t_ferryd_start fd17 "
[m]
    path = $T/fd
    read only = no
"; then
    t_fail ferryd_start "ferry daemon did not start"
    t_done
fi
FD=rsync://127.0.0.1:$FERRYD_PORT/m
mkdir -p "$T/rd" "$T/fd"

# ------------------------------------------------- first copy, each way

# Local copy.
t_check local_copy "$FERRY" -aAX "$SRC/" "$T/l/"
t_check local_meta same_meta "$T/l" "$T/want"
t_check local_xx_copy "$FERRY" -aAXX "$SRC/" "$T/lxx/"
t_check local_xx_meta same_meta "$T/lxx" "$T/wantxx"

# ferry pushes to the rsync daemon, then pulls it back.
t_check push_rsyncd "$FERRY" -aAX "$SRC/" "$RD/"
t_check push_rsyncd_meta same_meta "$T/rd" "$T/want"
t_check pull_rsyncd "$FERRY" -aAX "$RD/" "$T/p/"
t_check pull_rsyncd_meta same_meta "$T/p" "$T/want"

# rsync pushes to the ferry daemon, then pulls it back.
t_check rsync_push_ferryd "$RSYNC" -aAX "$SRC/" "$FD/"
t_check rsync_push_ferryd_meta same_meta "$T/fd" "$T/want"
t_check rsync_pull_ferryd "$RSYNC" -aAX "$FD/" "$T/rp/"
t_check rsync_pull_ferryd_meta same_meta "$T/rp" "$T/want"

# ------------------------------------------- an update: 'a' and 'x' items

cp -a "$T/want/." "$T/want_old/"
change_src "$SRC"
"$RSYNC" -aAXi "$SRC/" "$T/want/" >"$T/want_update.out" || t_fail want_update "rsync failed"
cat "$T/want_update.out"
up_check() { # NAME ITEMS_FILE DEST
    t_check "$1_items" same_lines "$2" "$T/want_update.out"
    t_check "$1_meta" same_meta "$3" "$T/want"
}
"$FERRY" -aAXi "$SRC/" "$T/l/" >"$T/l_update.out" && up_check local_update "$T/l_update.out" "$T/l"
"$FERRY" -aAXi "$SRC/" "$RD/" >"$T/rd_update.out" && up_check push_rsyncd_update "$T/rd_update.out" "$T/rd"
"$FERRY" -aAXi "$RD/" "$T/p/" >"$T/p_update.out" && up_check pull_rsyncd_update "$T/p_update.out" "$T/p"
"$RSYNC" -aAXi "$SRC/" "$FD/" >"$T/fd_update.out" && up_check rsync_push_ferryd_update "$T/fd_update.out" "$T/fd"
"$RSYNC" -aAXi "$FD/" "$T/rp/" >"$T/rp_update.out" && up_check rsync_pull_ferryd_update "$T/rp_update.out" "$T/rp"

# Nothing left to do: no items at all.
t_check local_uptodate bash -c '[ -z "$("$0" -aAXi "$1/" "$2/")" ]' "$FERRY" "$SRC" "$T/l"
t_check pull_uptodate bash -c '[ -z "$("$0" -aAXi "$1/" "$2/")" ]' "$FERRY" "$RD" "$T/p"

# --version says so.
t_check version_caps bash -c '"$0" --version | grep -q " ACLs," && "$0" --version | grep -q " xattrs,"' "$FERRY"

t_done
