#!/bin/bash
# The ferry daemon's SSH listener (`ssh port`, `ssh host key`, `ssh
# authorized keys`), driven by the real OpenSSH client and real rsync, with
# keys made by ssh-keygen here: listing, pull and push of a tree with
# rsync -e ssh host::module and with ferry's built-in libssh transport;
# plain `rsync --server` into a module with `ssh allow server = yes`;
# per-module key files and `auth users` mapped from the SSH user; the login
# line in the log; the TCP listener still serving. Refused: a wrong key,
# password auth, an exec of /bin/sh, a shell with a pty, stdio (-W), local
# (-L) and remote (-R) forwarding, a plain server command outside an
# allowing module, a fourth key after `ssh max auth tries = 3`; an idle
# connection is dropped after `ssh login grace time`.
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON" ssh ssh-keygen
t_setup

if [ ! -x "$FERRY" ]; then
    t_skip "$(_t_script_name)" "ferry binary not found: $FERRY"
    t_done
fi

# ------------------------------------------------------------------ keys

K=$T/keys
mkdir -p "$K"
mkkey() { ssh-keygen -q -t "$1" -N '' -C "$2" -f "$K/$2" </dev/null; }
make_keys() {
    mkkey ed25519 host_ed25519 && mkkey rsa host_rsa && mkkey ed25519 client &&
        mkkey ed25519 stranger && mkkey ed25519 private && mkkey ed25519 w1 &&
        mkkey ed25519 w2 && mkkey ed25519 w3 || return 1
    cat "$K/client.pub" >"$K/authorized_keys"
    # a key with an option ferry cannot honour is not accepted
    printf 'command="/bin/true" %s\n' "$(cat "$K/stranger.pub")" >>"$K/authorized_keys"
    cat "$K/private.pub" >"$K/private_keys"
    chmod 600 "$K/authorized_keys" "$K/private_keys"
}
t_check make_keys make_keys || t_done

# ------------------------------------------------------------------ trees

SRC=$T/src
DST=$T/dst
PRIV=$T/priv
t_check mktree t_mktree "$SRC" || t_done
mkdir -p "$DST" "$PRIV" && echo secret >"$PRIV/secret.txt"

SSH_PORT=$(t_free_port) || t_done
BODY="ssh port = $SSH_PORT
ssh host key = $K/host_ed25519 $K/host_rsa
ssh authorized keys = $K/authorized_keys
ssh max auth tries = 3
ssh login grace time = 2

[src]
	path = $SRC
	comment = the source tree
[dst]
	path = $DST
	read only = no
	ssh allow server = yes
[private]
	path = $PRIV
	ssh authorized keys = $K/private_keys
[members]
	path = $SRC
	auth users = alice, carol:ro
	secrets file = $T/no-such-secrets
[notallowed]
	path = $T/srcplain
"
mkdir -p "$T/srcplain" && echo x >"$T/srcplain/x"
t_check ferryd_start t_ferryd_start ssh "$BODY" || t_done
LOG=$T/ssh.log

# known_hosts pinning both host keys, so StrictHostKeyChecking=yes holds.
KH=$T/known_hosts
printf '[127.0.0.1]:%s %s\n' "$SSH_PORT" "$(cut -d' ' -f1-2 "$K/host_ed25519.pub")" >"$KH"
printf '[127.0.0.1]:%s %s\n' "$SSH_PORT" "$(cut -d' ' -f1-2 "$K/host_rsa.pub")" >>"$KH"

# ssh_e KEY [EXTRA...] -- an -e command for rsync and ferry.
ssh_e() {
    local key=$1
    shift
    printf 'ssh -p %s -i %s -o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes' \
        "$SSH_PORT" "$K/$key" "$KH"
    [ $# -gt 0 ] && printf ' %s' "$@"
}
E=$(ssh_e client)
# For raw ssh calls: no agent, no config keys, never a prompt.
SSH_RAW=(ssh -F /dev/null -p "$SSH_PORT" -o UserKnownHostsFile="$KH"
    -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes -o BatchMode=yes
    -o ConnectTimeout=10)

# run NAME CMD... -- NAME.out/.err/.rc in $T get CMD's output and status.
run() {
    local name=$1
    shift
    timeout 60 "$@" >"$T/$name.out" 2>"$T/$name.err" </dev/null
    echo $? >"$T/$name.rc"
}
rc_of() { cat "$T/$1.rc"; }
ok() {
    [ "$(rc_of "$1")" = 0 ] && return 0
    echo "$1: exit $(rc_of "$1")"
    cat "$T/$1.err"
    return 1
}
refused() {
    [ "$(rc_of "$1")" != 0 ] && return 0
    echo "$1: exit 0, expected a refusal"
    cat "$T/$1.out" "$T/$1.err"
    return 1
}

# ------------------------------------------------------------- rsync client

list_modules() {
    run list "$RSYNC" -e "$E" 127.0.0.1:: && ok list || return 1
    grep -q '^src *	the source tree' "$T/list.out" && grep -q '^dst ' "$T/list.out" &&
        ! grep -q '^private' "$T/list.out" || { cat "$T/list.out"; return 1; }
}
t_check rsync_lists_modules list_modules

rsync_pull() {
    run pull "$RSYNC" -aH -e "$E" 127.0.0.1::src/ "$T/pulled/" && ok pull &&
        t_compare "$SRC" "$T/pulled"
}
t_check rsync_pull_tree rsync_pull

rsync_push() {
    run push "$RSYNC" -aH -e "$E" "$SRC/" 127.0.0.1::dst/pushed/ && ok push &&
        t_compare "$SRC" "$DST/pushed"
}
t_check rsync_push_tree rsync_push

rsa_host_key() {
    run rsahost "$RSYNC" -e "$E -o HostKeyAlgorithms=rsa-sha2-512,rsa-sha2-256" 127.0.0.1:: &&
        ok rsahost
}
t_check rsync_with_rsa_host_key rsa_host_key

login_logged() {
    local fp
    fp=$(ssh-keygen -lf "$K/client.pub" | cut -d' ' -f2)
    grep -q "ssh login: user $(id -un) key ssh-ed25519 $fp from 127.0.0.1 port [0-9]*; modules: src,dst,notallowed" "$LOG" ||
        { grep 'ssh' "$LOG"; return 1; }
}
t_check login_logged_with_fingerprint login_logged

# ------------------------------------------------------------- ferry client

ferry_builtin() {
    run flist "$FERRY" --ssh=builtin -e "$E" 127.0.0.1:: && ok flist &&
        grep -q '^src ' "$T/flist.out" || return 1
    run fpull "$FERRY" --ssh=builtin -aH -e "$E" 127.0.0.1::src/ "$T/fpulled/" && ok fpull &&
        t_compare "$SRC" "$T/fpulled" || return 1
    run fpush "$FERRY" --ssh=builtin -aH -e "$E" "$SRC/" 127.0.0.1::dst/fpushed/ && ok fpush &&
        t_compare "$SRC" "$DST/fpushed"
}
t_check ferry_builtin_list_pull_push ferry_builtin

# ------------------------------------------------------ plain server mode

plain_server() {
    run ppush "$RSYNC" -aH -e "$E" "$SRC/" "127.0.0.1:$DST/plain/" && ok ppush &&
        t_compare "$SRC" "$DST/plain" || return 1
    run ppull "$RSYNC" -aH -e "$E" "127.0.0.1:$DST/plain/" "$T/ppulled/" && ok ppull &&
        t_compare "$SRC" "$T/ppulled" || return 1
    # a path relative to the module name, as with a daemon path
    run prel "$RSYNC" -aH -e "$E" "127.0.0.1:dst/plain/" "$T/prel/" && ok prel &&
        t_compare "$SRC" "$T/prel"
}
t_check plain_server_in_allowing_module plain_server

plain_ferry() {
    run pfpull "$FERRY" --ssh=builtin -aH -e "$E" "127.0.0.1:$DST/plain/" "$T/pfpulled/" &&
        ok pfpull && t_compare "$SRC" "$T/pfpulled"
}
t_check plain_server_ferry_builtin plain_ferry

plain_refused() {
    run pother "$RSYNC" -a -e "$E" "127.0.0.1:$T/srcplain/" "$T/pother/" && refused pother &&
        [ ! -e "$T/pother/x" ] || return 1
    run petc "${SSH_RAW[@]}" -i "$K/client" 127.0.0.1 rsync --server --sender -logDtpre.iLsfxCIvu . /etc &&
        refused petc && [ ! -s "$T/petc.out" ] || return 1
    # ".." cannot climb out of the module
    run pdots "$RSYNC" -a -e "$E" "127.0.0.1:$DST/../srcplain/" "$T/pdots/" && refused pdots &&
        [ ! -e "$T/pdots/x" ] || return 1
    grep -q 'refused command "rsync --server --sender -logDtpre.iLsfxCIvu . /etc"' "$LOG" ||
        { grep ssh "$LOG"; return 1; }
}
t_check plain_server_outside_module_refused plain_refused

# ----------------------------------------------- per-module keys, auth users

private_key() {
    run plist "$RSYNC" -e "$(ssh_e private)" 127.0.0.1:: && ok plist || return 1
    grep -q '^private' "$T/plist.out" && ! grep -q '^src' "$T/plist.out" ||
        { cat "$T/plist.out"; return 1; }
    run ppriv "$RSYNC" -a -e "$(ssh_e private)" 127.0.0.1::private/ "$T/privpulled/" &&
        ok ppriv && cmp "$PRIV/secret.txt" "$T/privpulled/secret.txt" || return 1
    # the main key does not open the module with its own key file
    run pnot "$RSYNC" -a -e "$E" 127.0.0.1::private/ "$T/privnot/" && refused pnot &&
        grep -q "Unknown module 'private'" "$T/pnot.err" || { cat "$T/pnot.err"; return 1; }
}
t_check per_module_authorized_keys private_key

auth_users() {
    # root is not in auth users, so the main login did not list members;
    # alice is listed: no password challenge (stdin is /dev/null, so a
    # prompt would fail)
    run alice "$RSYNC" -aH -e "$E -l alice" 127.0.0.1::members/ "$T/alice/" && ok alice &&
        t_compare "$SRC" "$T/alice" || return 1
    # bob is not: the module does not exist for him
    run bob "$RSYNC" -a -e "$E -l bob" 127.0.0.1::members/ "$T/bob/" && refused bob &&
        grep -q "Unknown module 'members'" "$T/bob.err" || { cat "$T/bob.err"; return 1; }
    # carol:ro cannot push (the module's `read only` would not stop her)
    run carol "$RSYNC" -a -e "$E -l carol" "$SRC/" 127.0.0.1::members/carol/ && refused carol &&
        grep -q "read only" "$T/carol.err" || { cat "$T/carol.err"; return 1; }
}
t_check auth_users_from_ssh_user auth_users

# ------------------------------------------------------------------ refusals

wrong_key() {
    run wrong "$RSYNC" -e "$(ssh_e stranger -o IdentitiesOnly=yes -o BatchMode=yes)" 127.0.0.1:: &&
        refused wrong && grep -q 'Permission denied' "$T/wrong.err" || return 1
    grep -q "key ssh-ed25519 .* not accepted" "$LOG" || { grep ssh "$LOG"; return 1; }
}
t_check wrong_key_refused wrong_key

password_refused() {
    run pw "${SSH_RAW[@]}" -o PreferredAuthentications=password,keyboard-interactive \
        127.0.0.1 rsync --server --daemon . && refused pw &&
        grep -q 'Permission denied' "$T/pw.err"
}
t_check password_auth_refused password_refused

exec_shell() {
    run sh "${SSH_RAW[@]}" -i "$K/client" 127.0.0.1 /bin/sh -c 'echo pwned' && refused sh &&
        ! grep -q pwned "$T/sh.out" || return 1
    run sh2 "${SSH_RAW[@]}" -i "$K/client" 127.0.0.1 'rsync --server --daemon . ; echo pwned' &&
        refused sh2 && ! grep -q pwned "$T/sh2.out"
}
t_check exec_of_other_commands_refused exec_shell

shell_pty() {
    run tty "${SSH_RAW[@]}" -tt -i "$K/client" 127.0.0.1 && refused tty || return 1
    grep -q "refused a pty" "$LOG" && grep -q "refused a shell" "$LOG" ||
        { grep ssh "$LOG"; return 1; }
}
t_check shell_request_refused shell_pty

stdio_forward() {
    run fwdw "${SSH_RAW[@]}" -i "$K/client" -W "127.0.0.1:$FERRYD_PORT" 127.0.0.1 &&
        refused fwdw
}
t_check stdio_forward_refused stdio_forward

remote_forward() {
    run fwdr "${SSH_RAW[@]}" -i "$K/client" -N -o ExitOnForwardFailure=yes -R 0:127.0.0.1:22 \
        127.0.0.1 && refused fwdr
}
t_check remote_forward_refused remote_forward

# -L: the forwarded port must not reach the daemon's TCP port (whose first
# words would be "@RSYNCD:").
local_forward() {
    local lport pid got
    lport=$(t_free_port) || return 1
    "${SSH_RAW[@]}" -i "$K/client" -N -L "127.0.0.1:$lport:127.0.0.1:$FERRYD_PORT" 127.0.0.1 \
        >"$T/fwdl.out" 2>"$T/fwdl.err" </dev/null &
    pid=$!
    t_track_pid "$pid"
    t_wait_port "$lport" 10 "$pid" || { cat "$T/fwdl.err"; _t_kill_pid "$pid"; return 1; }
    got=$("$PYTHON" -c 'import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
try:
    print(s.recv(100).decode("ascii", "replace"))
except OSError:
    pass' "$lport")
    _t_kill_pid "$pid"
    _t_untrack_pid "$pid"
    cat "$T/fwdl.err"
    case $got in *RSYNCD*) echo "forwarded: $got"; return 1 ;; esac
    grep -q 'open failed' "$T/fwdl.err"
}
t_check local_forward_refused local_forward

max_auth_tries() {
    # three wrong keys offered first: the fourth (right) one is never tried
    run tries "${SSH_RAW[@]}" -i "$K/w1" -i "$K/w2" -i "$K/w3" -i "$K/client" 127.0.0.1 \
        rsync --server --daemon . && refused tries || return 1
    grep -q "too many authentication failures" "$LOG" || { grep ssh "$LOG"; return 1; }
    run tries2 "${SSH_RAW[@]}" -i "$K/w1" -i "$K/client" 127.0.0.1 rsync --server --daemon . \
        && ok tries2 && grep -q '^@RSYNCD: ' "$T/tries2.out"
}
t_check max_auth_tries max_auth_tries

grace_time() {
    local t0 t1
    t0=$(date +%s)
    "$PYTHON" -c 'import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"SSH-2.0-idle\r\n")
while s.recv(4096):
    pass' "$SSH_PORT" || return 1
    t1=$(date +%s)
    echo "dropped after $((t1 - t0)) s"
    [ $((t1 - t0)) -le 6 ]
}
t_check login_grace_time_drops_idle grace_time

# ------------------------------------------------------------ TCP unchanged

tcp_still() {
    run tcp "$RSYNC" -aH "rsync://127.0.0.1:$FERRYD_PORT/src/" "$T/tcppulled/" && ok tcp &&
        t_compare "$SRC" "$T/tcppulled"
}
t_check tcp_listener_unchanged tcp_still

t_check ferryd_stop t_ferryd_stop
t_done
