#!/bin/bash
# --fake-super, --super/--no-super and -N against REAL rsync:
# - local copies: rsync --fake-super and ferry --fake-super leave the same
#   placeholder tree and the same user.rsync.%stat xattrs (getfattr -e hex),
#   with the same itemized output; -X names of other namespaces are kept
#   under user.rsync. the same way; a second run changes nothing.
# - round trips: a --fake-super sender (ferry or rsync behind a remote
#   shell, -M--fake-super) gives owners, set-id bits, devices, specials and
#   symlinks back to a real root receiver (rsync or ferry).
# - daemons: a ferry module with "fake super = yes" receives a push from
#   real rsync exactly as an rsyncd module does, and real rsync pulls it
#   back restored; ferry pushes to an rsyncd "fake super" module.
# - --no-super as root acts like a non-root receiver, as rsync's does.
# - -N/--crtimes and --fake-super with -XX fail with rsync's words.
# Privileged trees need root (chown, mknod); without it those parts skip.
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" getfattr setfattr stat
t_setup

if [ ! -x "$FERRY" ]; then
    t_skip "$(_t_script_name)" "ferry binary not found: $FERRY"
    t_done
fi

# ------------------------------------------------------------------ helpers

# run OUT CMD... -- OUT.out, OUT.err, OUT.rc get CMD's stdout, stderr, exit.
run() {
    local out=$1
    shift
    "$@" >"$out.out" 2>"$out.err"
    echo $? >"$out.rc"
}

# xdump DIR -- every entry's xattrs (hex), entries in name order.
xdump() {
    (cd "$1" && find . | LC_ALL=C sort | while IFS= read -r p; do
        printf '%s\n' "$p"
        getfattr -h -d -m- -e hex "$p" 2>/dev/null | grep -v '^#' | grep -v '^$'
    done)
}

# lsdump DIR -- type+mode, owner, size, device numbers, mtime and link
# target of every entry (directory sizes left out: file-system specific).
lsdump() {
    (cd "$1" && find . | LC_ALL=C sort | while IFS= read -r p; do
        if [ -d "$p" ] && [ ! -L "$p" ]; then
            stat -c '%n %f %u:%g - %t,%T %Y' "$p"
        else
            stat -c '%n %f %u:%g %s %t,%T %Y %N' "$p"
        fi
    done)
}

same() { # same WHAT A B -- diff two files, show the difference
    if diff -u "$2" "$3"; then return 0; fi
    echo "$1 differ" >&2
    return 1
}

same_xattrs() {
    xdump "$1" >"$T/x.a" && xdump "$2" >"$T/x.b" && same xattrs "$T/x.a" "$T/x.b"
}

same_tree() {
    lsdump "$1" >"$T/l.a" && lsdump "$2" >"$T/l.b" && same trees "$T/l.a" "$T/l.b"
}

# ------------------------------------------------------- option messages

# -N: rsync built without crtimes support refuses it at parse time.
check_crtimes() {
    local opt
    for opt in -N --crtimes -aN; do
        run "$T/nr" "$RSYNC" "$opt" "$T/none" "$T/none2"
        run "$T/nf" "$FERRY" "$opt" "$T/none" "$T/none2"
        [ "$(cat "$T/nr.rc")" = "$(cat "$T/nf.rc")" ] || { echo "exit codes differ for $opt"; return 1; }
        head -n1 "$T/nr.err" | sed 's/rsync/ferry/g' >"$T/nr.line"
        head -n1 "$T/nf.err" >"$T/nf.line"
        same "-N message" "$T/nr.line" "$T/nf.line" || return 1
    done
    "$FERRY" -VV | grep -q '"crtimes": false'
}
t_check crtimes_refused check_crtimes

check_xx_conflict() {
    run "$T/xr" "$RSYNC" -aXX --fake-super "$T/none" "$T/none2"
    run "$T/xf" "$FERRY" -aXX --fake-super "$T/none" "$T/none2"
    [ "$(cat "$T/xr.rc")" = "$(cat "$T/xf.rc")" ] || return 1
    grep -q -- "--fake-super conflicts with -XX" "$T/xf.err"
}
t_check fake_super_xx_conflict check_xx_conflict

if [ "$(id -u)" != 0 ]; then
    t_skip "$(_t_script_name)" "the privileged parts need root (chown, mknod)"
    t_done
fi

# ------------------------------------------------------------------ trees

SRC=$T/src
make_src() {
    mkdir -p "$SRC/d/inner" "$SRC/sticky" || return 1
    echo "set-uid" >"$SRC/suid" && chown 1234:5678 "$SRC/suid" && chmod 4755 "$SRC/suid"
    echo "owned" >"$SRC/owned" && chown 2000:3000 "$SRC/owned" && chmod 0640 "$SRC/owned"
    echo "plain" >"$SRC/plain" && chmod 0644 "$SRC/plain"
    echo "ro" >"$SRC/d/inner/ro" && chmod 0400 "$SRC/d/inner/ro"
    ln -s plain "$SRC/lnk" && chown -h 42:43 "$SRC/lnk"
    ln -s ../plain "$SRC/d/uplink"
    mkfifo "$SRC/fifo" && chown 7:8 "$SRC/fifo"
    mknod "$SRC/cdev" c 1 3 && mknod "$SRC/bdev" b 7 9 && chmod 0660 "$SRC/bdev"
    chown 42:43 "$SRC/d" && chmod 2750 "$SRC/d" && chmod 1777 "$SRC/sticky"
    find "$SRC" -mindepth 1 -print0 | xargs -0 touch -h -d @1600000000
    touch -d @1600000000 "$SRC"
}
t_check make_src make_src || t_done

# -------------------------------------------------------------- local copies

check_local() {
    run "$T/lr" "$RSYNC" -ai --fake-super "$SRC/" "$T/r1/"
    run "$T/lf" "$FERRY" -ai --fake-super "$SRC/" "$T/f1/"
    [ "$(cat "$T/lr.rc")" = 0 ] && [ "$(cat "$T/lf.rc")" = 0 ] || { cat "$T/lf.err"; return 1; }
    sed 's|/r1$|/f1|' "$T/lr.out" >"$T/lr.items"
    same_xattrs "$T/r1" "$T/f1" && same_tree "$T/r1" "$T/f1" &&
        same "itemized output" "$T/lr.items" "$T/lf.out"
}
t_check local_fake_super_same_xattrs check_local

check_placeholders() {
    # what stands in for the privileged entries: plain files
    [ -f "$T/f1/cdev" ] && [ ! -L "$T/f1/lnk" ] && [ -f "$T/f1/fifo" ] &&
        [ "$(cat "$T/f1/lnk")" = plain ] &&
        [ "$(getfattr --absolute-names -h --only-values -n user.rsync.%stat "$T/f1/suid")" = "104755 0,0 1234:5678" ] &&
        [ "$(getfattr --absolute-names -h --only-values -n user.rsync.%stat "$T/f1/bdev")" = "60660 7,9 0:0" ]
}
t_check placeholders_as_rsync check_placeholders

check_rerun_quiet() {
    run "$T/qr" "$RSYNC" -ai --fake-super "$SRC/" "$T/r1/"
    run "$T/qf" "$FERRY" -ai --fake-super "$SRC/" "$T/f1/"
    same "re-run output" "$T/qr.out" "$T/qf.out" && [ ! -s "$T/qf.out" ] &&
        [ "$(cat "$T/qf.rc")" = 0 ]
}
t_check rerun_changes_nothing check_rerun_quiet

check_attr_change() {
    # an owner and a mode change on the source reach only the xattr
    chown 2001 "$SRC/owned" && chmod 0600 "$SRC/owned" && touch -h -d @1600000000 "$SRC/owned"
    run "$T/cr" "$RSYNC" -ai --fake-super "$SRC/" "$T/r1/"
    run "$T/cf" "$FERRY" -ai --fake-super "$SRC/" "$T/f1/"
    same "itemized output" "$T/cr.out" "$T/cf.out" && same_xattrs "$T/r1" "$T/f1" &&
        same_tree "$T/r1" "$T/f1"
}
t_check attr_change_to_xattr check_attr_change

check_local_roundtrip() {
    # both sides --fake-super: the placeholders are copied as what they stand for
    run "$T/rt" "$FERRY" -a --fake-super "$T/f1/" "$T/f2/" &&
        [ "$(cat "$T/rt.rc")" = 0 ] && same_xattrs "$T/f1" "$T/f2" && same_tree "$T/f1" "$T/f2"
}
t_check local_roundtrip check_local_roundtrip

check_xattr_names() {
    setfattr -n user.keep -v one "$SRC/plain" && setfattr -n trusted.other -v two "$SRC/plain" &&
        touch -h -d @1600000000 "$SRC/plain" || return 1
    run "$T/xr" "$RSYNC" -aX --fake-super "$SRC/" "$T/rx/"
    run "$T/xf" "$FERRY" -aX --fake-super "$SRC/" "$T/fx/"
    same_xattrs "$T/rx" "$T/fx" || return 1
    getfattr --absolute-names -h --only-values -n user.rsync.trusted.other "$T/fx/plain" | grep -q two || return 1
    # and back out through a --fake-super sender into a real receiver
    run "$T/xb" "$FERRY" -aX -e "$T/fakessh" --rsync-path="$RSYNC" -M--fake-super \
        "localhost:$T/fx/" "$T/fxback/"
    [ "$(getfattr --absolute-names -h --only-values -n trusted.other "$T/fxback/plain")" = two ]
}

# A remote shell that runs the command here (see 32_server_over_rsh.sh).
t_fakessh "$T/fakessh"

t_check xattr_namespaces check_xattr_names

# -A with --fake-super: ACLs in user.rsync.%aacl / %dacl. A local copy
# reads the source's ACLs from those attributes too (both sides are
# fake), so the real ACLs come from a plain sender over a remote shell.
check_acls() {
    command -v setfacl >/dev/null && command -v getfacl >/dev/null || {
        echo "no setfacl/getfacl"; return 0; }
    local A=$T/asrc
    mkdir -p "$A/dd" && echo x >"$A/file" && echo y >"$A/dd/in" || return 1
    setfacl -m u:1234:rwx,g:5678:r "$A/file" && setfacl -m u:42:r "$A/dd" &&
        setfacl -d -m u:1234:rx "$A/dd" && echo z >"$A/dd/inherits" || return 1
    run "$T/ar" "$RSYNC" -aA -e "$T/fakessh" -M--fake-super "$A/" "localhost:$T/acl_r/"
    run "$T/af" "$RSYNC" -aA -e "$T/fakessh" --rsync-path="$FERRY" -M--fake-super \
        "$A/" "localhost:$T/acl_f/"
    [ "$(cat "$T/af.rc")" = 0 ] || { cat "$T/af.err"; return 1; }
    same_xattrs "$T/acl_r" "$T/acl_f" || return 1
    getfattr --absolute-names -h -n user.rsync.%dacl "$T/acl_f/dd" >/dev/null || return 1
    # back out through fake-super senders into real receivers
    run "$T/ab1" "$RSYNC" -aA -e "$T/fakessh" --rsync-path="$FERRY" -M--fake-super \
        "localhost:$T/acl_f/" "$T/acl_back_r/"
    run "$T/ab2" "$FERRY" -aA -e "$T/fakessh" --rsync-path="$RSYNC" -M--fake-super \
        "localhost:$T/acl_r/" "$T/acl_back_f/"
    (cd "$A" && getfacl -R . 2>/dev/null) >"$T/acl.want"
    (cd "$T/acl_back_r" && getfacl -R . 2>/dev/null) >"$T/acl.got_r"
    (cd "$T/acl_back_f" && getfacl -R . 2>/dev/null) >"$T/acl.got_f"
    same "ACLs restored by rsync" "$T/acl.want" "$T/acl.got_r" &&
        same "ACLs restored by ferry" "$T/acl.want" "$T/acl.got_f"
}
t_check acls_in_xattrs check_acls

# ------------------------------------------------------ restoring the tree

check_restore_rsync_receiver() {
    # real rsync (root) pulls from ferry --server --sender --fake-super
    run "$T/rr" "$RSYNC" -a -e "$T/fakessh" --rsync-path="$FERRY" -M--fake-super \
        "localhost:$T/f1/" "$T/back_r/"
    [ "$(cat "$T/rr.rc")" = 0 ] || { cat "$T/rr.err"; return 1; }
    same_tree "$SRC" "$T/back_r"
}
t_check restore_rsync_from_ferry_sender check_restore_rsync_receiver

check_restore_ferry_receiver() {
    # ferry (root) pulls from rsync --server --sender --fake-super
    run "$T/fr" "$FERRY" -a -e "$T/fakessh" --rsync-path="$RSYNC" -M--fake-super \
        "localhost:$T/r1/" "$T/back_f/"
    [ "$(cat "$T/fr.rc")" = 0 ] || { cat "$T/fr.err"; return 1; }
    same_tree "$SRC" "$T/back_f"
}
t_check restore_ferry_from_rsync_sender check_restore_ferry_receiver

check_remote_fake_receiver() {
    # real rsync pushes to ferry --server -M--fake-super: same as local
    run "$T/pr" "$RSYNC" -a -e "$T/fakessh" --rsync-path="$FERRY" -M--fake-super \
        "$SRC/" "localhost:$T/pushed_f/"
    [ "$(cat "$T/pr.rc")" = 0 ] || { cat "$T/pr.err"; return 1; }
    same_xattrs "$T/r1" "$T/pushed_f" && same_tree "$T/r1" "$T/pushed_f"
}
t_check rsync_push_to_fake_ferry_server check_remote_fake_receiver

# ----------------------------------------------------------------- daemons

mkdir -p "$T/fmod" "$T/rmod"
CONF="[fake]
    path = $T/fmod
    read only = no
    fake super = yes
"
t_check ferryd_start t_ferryd_start ferryd "$CONF" || t_done
t_check rsyncd_start t_rsyncd_start rsyncd "[fake]
    path = $T/rmod
    read only = no
    fake super = yes
" || t_done

check_ferryd_receives() {
    run "$T/dp" "$RSYNC" -a "$SRC/" "rsync://127.0.0.1:$FERRYD_PORT/fake/"
    [ "$(cat "$T/dp.rc")" = 0 ] || { cat "$T/dp.err"; return 1; }
    run "$T/dr" "$RSYNC" -a "$SRC/" "rsync://127.0.0.1:$RSYNCD_PORT/fake/"
    same_xattrs "$T/rmod" "$T/fmod" && same_tree "$T/rmod" "$T/fmod"
}
t_check ferryd_fake_super_receives_push check_ferryd_receives

check_ferryd_restores() {
    run "$T/dl" "$RSYNC" -a "rsync://127.0.0.1:$FERRYD_PORT/fake/" "$T/back_d/"
    [ "$(cat "$T/dl.rc")" = 0 ] || { cat "$T/dl.err"; return 1; }
    same_tree "$SRC" "$T/back_d"
}
t_check ferryd_fake_super_pull_restores check_ferryd_restores

check_push_to_rsyncd() {
    rm -rf "${T:?}/rmod" && mkdir "$T/rmod"
    run "$T/fp" "$FERRY" -a "$SRC/" "rsync://127.0.0.1:$RSYNCD_PORT/fake/"
    [ "$(cat "$T/fp.rc")" = 0 ] || { cat "$T/fp.err"; return 1; }
    same_xattrs "$T/fmod" "$T/rmod" && same_tree "$T/fmod" "$T/rmod"
}
t_check ferry_push_to_rsyncd_fake_super check_push_to_rsyncd

check_ferry_pull_from_rsyncd() {
    run "$T/fl" "$FERRY" -a "rsync://127.0.0.1:$RSYNCD_PORT/fake/" "$T/back_rd/"
    [ "$(cat "$T/fl.rc")" = 0 ] || { cat "$T/fl.err"; return 1; }
    same_tree "$SRC" "$T/back_rd"
}
t_check ferry_pull_from_rsyncd_restores check_ferry_pull_from_rsyncd

# ---------------------------------------------------------------- --no-super

check_no_super() {
    run "$T/nsr" "$RSYNC" -a --no-super "$SRC/" "$T/ns_r/"
    run "$T/nsf" "$FERRY" -a --no-super "$SRC/" "$T/ns_f/"
    [ "$(cat "$T/nsr.rc")" = "$(cat "$T/nsf.rc")" ] || {
        echo "exit $(cat "$T/nsr.rc") vs $(cat "$T/nsf.rc")"; cat "$T/nsr.err" "$T/nsf.err"; return 1; }
    same_tree "$T/ns_r" "$T/ns_f"
}
t_check no_super_as_root check_no_super

check_super_local() {
    run "$T/sr" "$RSYNC" -a --super "$SRC/" "$T/s_r/"
    run "$T/sf" "$FERRY" -a --super "$SRC/" "$T/s_f/"
    [ "$(cat "$T/sf.rc")" = 0 ] && same_tree "$T/s_r" "$T/s_f" && same_tree "$SRC" "$T/s_f"
}
t_check super_local check_super_local

check_super_sent() {
    # a pushing client tells the remote receiver --super, as rsync does
    printf '#!/bin/sh\necho "$@" >"%s"\nexec "%s" "$@"\n' "$T/server.args" "$RSYNC" >"$T/showargs"
    chmod 0755 "$T/showargs"
    run "$T/ss" "$FERRY" -a --super -e "$T/fakessh" --rsync-path="$T/showargs" "$SRC/" \
        "localhost:$T/s_remote/"
    [ "$(cat "$T/ss.rc")" = 0 ] && grep -q -- " --super " "$T/server.args"
}
t_check super_sent_to_receiver check_super_sent

# ------------------------------------- SSH-listener logins as the auth user

# The SSH user of a login on the daemon's SSH listener is the module's
# authenticated user: RSYNC_USER_NAME for the hooks, %u and the "from
# USER@host" line in the log, as a password login gives them.
check_ssh_user() {
    local K=$T/keys port
    command -v ssh-keygen >/dev/null && command -v ssh >/dev/null || {
        echo "no OpenSSH client"; return 0; }
    mkdir -p "$K" && ssh-keygen -q -t ed25519 -N '' -f "$K/host" </dev/null &&
        ssh-keygen -q -t ed25519 -N '' -f "$K/client" </dev/null || return 1
    cp "$K/client.pub" "$K/authorized_keys" && chmod 600 "$K/authorized_keys"
    port=$(t_free_port) || return 1
    t_ferryd_start sshd_user "ssh port = $port
ssh host key = $K/host
ssh authorized keys = $K/authorized_keys
[hooked]
    path = $SRC
    transfer logging = yes
    log format = user=%u file=%f
    post-xfer exec = sh -c 'echo \"\$RSYNC_USER_NAME\" >$T/hook_user'
" || return 1
    printf '[127.0.0.1]:%s %s\n' "$port" "$(cut -d' ' -f1-2 "$K/host.pub")" >"$T/kh"
    run "$T/su" "$RSYNC" -a -e "ssh -l alice -p $port -i $K/client -o UserKnownHostsFile=$T/kh -o StrictHostKeyChecking=yes -o BatchMode=yes -F /dev/null" \
        127.0.0.1::hooked/plain "$T/ssh_pulled"
    [ "$(cat "$T/su.rc")" = 0 ] || { cat "$T/su.err"; return 1; }
    local i
    for i in 1 2 3 4 5 6 7 8 9 10; do [ -s "$T/hook_user" ] && break; sleep 0.2; done
    [ "$(cat "$T/hook_user")" = alice ] || { echo "hook saw '$(cat "$T/hook_user")'"; return 1; }
    grep -q "user=alice file=plain" "$T/sshd_user.log" &&
        grep -q "rsync on hooked.* from alice@localhost" "$T/sshd_user.log" ||
        { cat "$T/sshd_user.log"; return 1; }
}
t_check ssh_login_is_auth_user check_ssh_user

# ---------------------------------------------------------- name converter

# "name converter": the daemon asks this program (line protocol "uid N",
# "gid N", "usr NAME", "grp NAME") instead of the passwd and group files.
# The same program behind ferryd and rsyncd must give the same trees.
cat >"$T/namecvt" <<'EOF'
#!/bin/sh
while read -r cmd arg; do
    echo "$cmd $arg" >>"$NAMECVT_LOG"
    case "$cmd $arg" in
    "uid 1234") echo conv_user ;;
    "gid 5678") echo conv_group ;;
    "usr daemon") echo 5555 ;;
    "grp daemon") echo 6666 ;;
    *) echo ;;
    esac
done
EOF
chmod 0755 "$T/namecvt"

check_name_converter() {
    local d
    mkdir -p "$T/ncsrc" "$T/nc_f" "$T/nc_r" || return 1
    echo a >"$T/ncsrc/a" && chown 1234:5678 "$T/ncsrc/a"
    echo b >"$T/ncsrc/b" && chown daemon:daemon "$T/ncsrc/b"
    for d in f r; do
        printf '[nc]\n    path = %s\n    read only = no\n    name converter = env NAMECVT_LOG=%s %s\n' \
            "$T/nc_$d" "$T/namecvt_$d.log" "$T/namecvt" >"$T/nc_$d.body"
    done
    t_ferryd_start nc_ferryd "$(cat "$T/nc_f.body")" || return 1
    t_rsyncd_start nc_rsyncd "$(cat "$T/nc_r.body")" || return 1
    # push: the daemon maps the client's names through the converter
    run "$T/ncp_f" "$RSYNC" -a "$T/ncsrc/" "rsync://127.0.0.1:$FERRYD_PORT/nc/"
    run "$T/ncp_r" "$RSYNC" -a "$T/ncsrc/" "rsync://127.0.0.1:$RSYNCD_PORT/nc/"
    [ "$(cat "$T/ncp_f.rc")" = 0 ] || { cat "$T/ncp_f.err"; return 1; }
    same_tree "$T/nc_r" "$T/nc_f" || return 1
    [ "$(stat -c %u:%g "$T/nc_f/b")" = 5555:6666 ] || { stat -c %u:%g "$T/nc_f/b"; return 1; }
    # pull: the daemon names its ids through the converter
    run "$T/ncl_f" "$RSYNC" -a --usermap=conv_user:4321 --groupmap=conv_group:8765 \
        "rsync://127.0.0.1:$FERRYD_PORT/nc/" "$T/ncback_f/"
    run "$T/ncl_r" "$RSYNC" -a --usermap=conv_user:4321 --groupmap=conv_group:8765 \
        "rsync://127.0.0.1:$RSYNCD_PORT/nc/" "$T/ncback_r/"
    [ "$(cat "$T/ncl_f.rc")" = 0 ] || { cat "$T/ncl_f.err"; return 1; }
    same_tree "$T/ncback_r" "$T/ncback_f" &&
        [ "$(stat -c %u:%g "$T/ncback_f/a")" = 4321:8765 ] &&
        grep -qx "usr daemon" "$T/namecvt_f.log" && grep -qx "uid 1234" "$T/namecvt_f.log"
}
t_check name_converter check_name_converter

# The daemons' children and every command here left their stderr in $T.
no_reports() {
    t_no_sanitizer_reports "$T"/*.out "$T"/*.err
}
t_check no_sanitizer_reports no_reports

t_done
