#!/bin/bash
# Edges of the protocol and of connecting, each against the REAL rsync:
# - --existing with new directories three levels deep (also -R and with an
#   exclude): skipped silently, exit 0, as rsync; also as a receiving
#   daemon and as a server under a remote shell;
# - protocols 27, 28 and 29: what ferry sends as the client is rsync's
#   stream byte for byte (file list, id lists and all, with a fixed checksum
#   seed), and what a ferry server sends is rsync's list; pushes and pulls
#   between ferry and real daemons, both ways, leave equal trees. The tree
#   has symlinks, hard links, a fifo, and as root devices and a directory
#   whose flags byte would otherwise be empty (rsync's XMIT_LONG_NAME case);
# - a module listing through a daemon over a remote shell exits 0 (a fake
#   shell, and a private sshd when one can start);
# - a remote shell that cannot connect: rsync's message, code and role;
# - a merge / exclude / include file that cannot be opened: code 11.
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON"
t_setup

if [ ! -x "$FERRY" ]; then
    t_skip "$(_t_script_name)" "ferry binary not found: $FERRY"
    t_done
fi

ROOT=0
[ "$(id -u)" = 0 ] && ROOT=1
t_fakessh "$T/fakessh"

# reaped CMD... -- run CMD and wait for everything it started: rsync ends
# a listing, or a run whose shell died, without waiting for its remote
# shell, which must not outlive the test. Exits with CMD's status.
cat >"$T/reaped.py" <<'EOF'
import ctypes, os, subprocess, sys
ctypes.CDLL(None).prctl(36, 1)  # PR_SET_CHILD_SUBREAPER: orphans come to us
rc = subprocess.call(sys.argv[1:])
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
sys.exit(rc)
EOF
reaped() { "$PYTHON" "$T/reaped.py" "$@"; }

# ------------------------------------------------------------- --existing

EX=$T/ex
mk_existing() {
    mkdir -p "$EX/src/a/b/c" "$EX/src/old/n1/n2/n3" "$EX/pre/old" &&
        echo new >"$EX/src/a/b/c/f" && echo deep >"$EX/src/old/n1/n2/n3/g" &&
        echo top >"$EX/src/top" && echo was >"$EX/pre/top" &&
        echo keep >"$EX/src/old/k" && echo was >"$EX/pre/old/k" &&
        touch -d @1500000000 "$EX/pre/top" "$EX/pre/old/k"
}
t_check existing_tree mk_existing || t_done

# existing_case NAME SRC_ARGS... -- rsync and ferry each from a copy of pre:
# both exit 0 and print nothing, and the trees end equal.
existing_case() {
    local name=$1 rr fr
    shift
    rm -rf "$EX/r_$name" "$EX/f_$name"
    cp -a "$EX/pre" "$EX/r_$name" && cp -a "$EX/pre" "$EX/f_$name"
    (cd "$EX/src" && "$RSYNC" "$@" "$EX/r_$name/") >"$EX/r_$name.out" 2>&1
    rr=$?
    (cd "$EX/src" && "$FERRY" "$@" "$EX/f_$name/") >"$EX/f_$name.out" 2>&1
    fr=$?
    echo "existing $name: rsync $rr, ferry $fr"
    cat "$EX/f_$name.out"
    [ "$rr" = 0 ] && [ "$fr" = 0 ] && [ ! -s "$EX/f_$name.out" ] &&
        t_compare "$EX/r_$name" "$EX/f_$name"
}
t_check existing_deep existing_case deep -a --existing ./
t_check existing_deep_no_inc existing_case deep_noinc -a --no-i-r --existing ./
t_check existing_relative existing_case rel -aR --existing ./a/b/c/f ./old
t_check existing_relative_dir existing_case reldir -aR --existing ./a ./old
t_check existing_exclude existing_case excl -a --existing --exclude=f ./

# The receiver as a server under a remote shell, and as a daemon.
existing_remote() {
    local rr fr
    rm -rf "$EX/r_sh" "$EX/f_sh"
    cp -a "$EX/pre" "$EX/r_sh" && cp -a "$EX/pre" "$EX/f_sh"
    "$RSYNC" -a --existing -e "$T/fakessh" "$EX/src/" "h:$EX/r_sh/" >"$EX/r_sh.out" 2>&1
    rr=$?
    "$RSYNC" -a --existing -e "$T/fakessh" --rsync-path="$FERRY" "$EX/src/" "h:$EX/f_sh/" \
        >"$EX/f_sh.out" 2>&1
    fr=$?
    echo "existing over rsh: rsync $rr, ferry server $fr"
    cat "$EX/f_sh.out"
    [ "$rr" = 0 ] && [ "$fr" = 0 ] && [ ! -s "$EX/f_sh.out" ] && t_compare "$EX/r_sh" "$EX/f_sh"
}
t_check existing_server_rsh existing_remote

existing_daemon() {
    local rc
    rm -rf "$EX/r_d" "$EX/f_d"
    cp -a "$EX/pre" "$EX/r_d" && cp -a "$EX/pre" "$EX/f_d"
    "$RSYNC" -a --existing "$EX/src/" "$EX/r_d/" || return 1
    "$RSYNC" -a --existing "$EX/src/" "rsync://127.0.0.1:$FERRYD_PORT/ex/" >"$EX/f_d.out" 2>&1
    rc=$?
    echo "existing into a ferry daemon: $rc"
    cat "$EX/f_d.out"
    [ "$rc" = 0 ] && [ ! -s "$EX/f_d.out" ] && t_compare "$EX/r_d" "$EX/f_d"
}

# ------------------------------------------------- protocols 27, 28, 29

P=$T/p
mk_proto_tree() {
    local s=$P/src
    mkdir -p "$s/d/e" "$s/sub" || return 1
    echo a >"$s/f1" && echo bb >"$s/d/f2" && echo cc >"$s/sub/f3" &&
        ln -s f1 "$s/l1" && ln -s ../f1 "$s/d/l2" && ln -s does/not/exist "$s/dangling" &&
        ln "$s/f1" "$s/d/h1" && ln "$s/f1" "$s/d/e/h2" && mkfifo "$s/p1" || return 1
    if [ "$ROOT" = 1 ]; then
        # devices: repeated numbers, a minor over 255, a major over 255
        mknod "$s/c1" c 1 3 && mknod "$s/c2" c 1 5 && mknod "$s/b1" b 8 300 &&
            mknod "$s/d/c3" c 300 7 && mknod "$s/d/c4" c 300 7 || return 1
        # a directory that shares nothing with the entry before it (other
        # mode, time, owner and group, no common name prefix): its flags
        # byte is empty before protocol 28
        mkdir -m 0700 "$s/zdir" && echo z >"$s/zdir/z" &&
            chown -h 1234:1235 "$s/l1" "$s/f1" && chown 2345:2346 "$s/zdir" "$s/sub" || return 1
    fi
    touch -h -d @1500000000 "$s/l1" "$s/f1" "$s/p1"
    touch -d @1600000000 "$s/d/e" "$s/d" "$s/sub"
    [ "$ROOT" = 0 ] || touch -d @1400000000 "$s/zdir"
}
t_check proto_tree mk_proto_tree || t_done

# A remote shell that records what the client sends and what the server
# answers, then runs the server here. Each chunk is written to its record
# before it is passed on, so the records are whole when the client ends.
cat >"$T/relay.py" <<'EOF'
import os, subprocess, sys, threading
rec_in, rec_out, cmd = sys.argv[1], sys.argv[2], sys.argv[3]
srv = subprocess.Popen(["sh", "-c", cmd], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def pump(src, dst, rec):
    with open(rec, "wb", buffering=0) as f:
        while True:
            b = os.read(src, 65536)
            if not b:
                break
            f.write(b)
            try:
                os.write(dst, b)
            except OSError:
                break
    if dst != 1:
        os.close(dst)
threading.Thread(target=pump, args=(0, srv.stdin.fileno(), rec_in), daemon=True).start()
out = threading.Thread(target=pump, args=(srv.stdout.fileno(), 1, rec_out))
out.start()
rc = srv.wait()
out.join()
os._exit(rc)
EOF
cat >"$T/teesh" <<EOF
#!/bin/bash
while [ \$# -gt 0 ]; do
    case \$1 in -l | -p) shift 2 ;; -*) shift ;; *) break ;; esac
done
shift
exec "$PYTHON" "$T/relay.py" "$P/in.\$TAG" "$P/out.\$TAG" "\$*"
EOF
chmod 0755 "$T/teesh"

# The server's multiplexed output as its data alone, after the first
# SKIP bytes (sent before multiplexing starts).
cat >"$T/demux.py" <<'EOF'
import struct, sys
d = open(sys.argv[1], "rb").read()
skip = int(sys.argv[2])
out, i = bytearray(d[:skip]), skip
while i + 4 <= len(d):
    h, = struct.unpack("<I", d[i:i + 4])
    n, i = h & 0xFFFFFF, i + 4
    if (h >> 24) == 7:
        out += d[i:i + n]
    i += n
sys.stdout.buffer.write(out)
EOF

# client_stream PROTO OPTS... -- rsync and ferry push the tree through the
# recording shell to a real rsync server: the client's bytes are equal.
client_stream() {
    local pr=$1 c bin rc
    shift
    for c in rsync ferry; do
        bin=$RSYNC
        [ "$c" = ferry ] && bin=$FERRY
        rm -rf "$P/dst"
        TAG=$c.$pr "$bin" "$@" --checksum-seed=7 --protocol="$pr" -e "$T/teesh" \
            "$P/src/" "h:$P/dst/" >"$P/$c.out" 2>&1
        rc=$?
        echo "client $c --protocol=$pr $*: exit $rc"
        [ "$rc" = 0 ] || { cat "$P/$c.out"; return 1; }
    done
    cmp "$P/in.rsync.$pr" "$P/in.ferry.$pr"
}

# server_stream PROTO OPTS... -- a real rsync client pulls from rsync's and
# from ferry's server: the data they send is equal up to the closing
# statistics (their times differ).
server_stream() {
    local pr=$1 c bin rc n
    shift
    for c in rsync ferry; do
        bin=$RSYNC
        [ "$c" = ferry ] && bin=$FERRY
        rm -rf "$P/dst"
        TAG=s$c.$pr "$RSYNC" "$@" --checksum-seed=7 --protocol="$pr" -e "$T/teesh" \
            --rsync-path="$bin" "h:$P/src/" "$P/dst/" >"$P/s$c.out" 2>&1
        rc=$?
        echo "server $c --protocol=$pr $*: exit $rc"
        [ "$rc" = 0 ] || { cat "$P/s$c.out"; return 1; }
        "$PYTHON" "$T/demux.py" "$P/out.s$c.$pr" 8 >"$P/dm.$c" || return 1
    done
    n=$(stat -c %s "$P/dm.rsync")
    [ "$n" = "$(stat -c %s "$P/dm.ferry")" ] || { echo "lengths differ"; return 1; }
    cmp -n $((n - 20)) "$P/dm.rsync" "$P/dm.ferry"
}

for pr in 27 28 29; do
    t_check "p${pr}_client_bytes_a" client_stream "$pr" -a
    t_check "p${pr}_client_bytes_aH" client_stream "$pr" -aH
    t_check "p${pr}_client_bytes_aHc" client_stream "$pr" -aHc
    t_check "p${pr}_server_bytes_aH" server_stream "$pr" -aH
done

MODS="[m]
path = $P/mod
read only = no
[src]
path = $P/src
"
mkdir -p "$P/mod"
t_rsyncd_start rd "$MODS" || t_fail rsyncd_start "no rsync daemon"
t_ferryd_start fd "$MODS
[ex]
path = $EX/f_d
read only = no" || t_fail ferryd_start "no ferry daemon"
t_check existing_daemon existing_daemon

# Without root nobody's ids survive a daemon's receiving side.
CMP_IDS=()
[ "$ROOT" = 1 ] || CMP_IDS=(--no-owner --no-group)

# daemon_case NAME CLIENT PORT DIRECTION PROTO OPTS...
daemon_case() {
    local name=$1 bin=$2 port=$3 dir=$4 pr=$5 rc hl=()
    shift 5
    case " $* " in *H*) ;; *) hl=(--no-hardlinks) ;; esac
    rm -rf "$P/mod" "$P/pulled" && mkdir -p "$P/mod"
    if [ "$dir" = push ]; then
        "$bin" "$@" --protocol="$pr" "$P/src/" "rsync://127.0.0.1:$port/m/" >"$P/$name.out" 2>&1
        rc=$?
        echo "$name: exit $rc"
        cat "$P/$name.out"
        [ "$rc" = 0 ] && t_compare "$P/src" "$P/mod" --no-dir-times "${hl[@]}" "${CMP_IDS[@]}"
    else
        "$bin" "$@" --protocol="$pr" "rsync://127.0.0.1:$port/src/" "$P/pulled/" >"$P/$name.out" 2>&1
        rc=$?
        echo "$name: exit $rc"
        cat "$P/$name.out"
        [ "$rc" = 0 ] && t_compare "$P/src" "$P/pulled" "${hl[@]}" "${CMP_IDS[@]}"
    fi
}

for pr in 27 28 29; do
    for opts in -a -aH; do
        t_check "p${pr}_ferry_push_rsyncd$opts" daemon_case "fpush$pr$opts" "$FERRY" "$RSYNCD_PORT" push "$pr" "$opts"
        t_check "p${pr}_ferry_pull_rsyncd$opts" daemon_case "fpull$pr$opts" "$FERRY" "$RSYNCD_PORT" pull "$pr" "$opts"
        t_check "p${pr}_rsync_push_ferryd$opts" daemon_case "rpush$pr$opts" "$RSYNC" "$FERRYD_PORT" push "$pr" "$opts"
        t_check "p${pr}_rsync_pull_ferryd$opts" daemon_case "rpull$pr$opts" "$RSYNC" "$FERRYD_PORT" pull "$pr" "$opts"
    done
done

# -------------------------------------- module listing over a remote shell

LS_CONF=$T/ls.conf
printf '[alpha]\npath = %s\ncomment = the first\n[beta]\npath = %s\n' "$T" "$T" >"$LS_CONF"

# listing NAME SHELL SERVER [FERRY_OPTS...] -- ferry lists the modules of
# SERVER's daemon over SHELL: exit 0 and the lines rsync prints for it.
listing() {
    local name=$1 sh=$2 server=$3 rr fr
    shift 3
    reaped "$RSYNC" -e "$sh" --rsync-path="$RSYNC --config=$LS_CONF" 127.0.0.1:: >"$T/$name.r" 2>&1
    rr=$?
    "$FERRY" "$@" -e "$sh" --rsync-path="$server --config=$LS_CONF" 127.0.0.1:: >"$T/$name.f" 2>&1
    fr=$?
    echo "$name: rsync $rr, ferry $fr"
    cat "$T/$name.f"
    [ "$rr" = 0 ] && [ "$fr" = 0 ] && grep -q alpha "$T/$name.r" && cmp "$T/$name.r" "$T/$name.f"
}
t_check listing_rsh_rsyncd listing listing_rsh "$T/fakessh" "$RSYNC"
t_check listing_rsh_ferryd listing listing_rsh_f "$T/fakessh" "$FERRY"

t_sshd_start
case $? in
0)
    t_check listing_ssh_spawn listing listing_ssh "$SSH_CMD" "$RSYNC" --ssh=spawn
    t_check listing_ssh_auto listing listing_ssh_a "$SSH_CMD" "$RSYNC"
    ;;
2) t_skip listing_ssh "$T_SKIP_REASON" ;;
*)
    # a user without a login shell cannot log in to it
    if [ "$ROOT" = 1 ]; then
        t_fail listing_ssh "sshd did not start"
    else
        t_skip listing_ssh "the private sshd does not let $(id -un) log in"
    fi
    ;;
esac

# ------------------------------------- a remote shell that cannot connect

# A stand-in for an ssh that cannot reach its host: it says why and exits
# 255, as ssh does. It first takes the 4 bytes both clients send before
# they read (their protocol version): gone sooner, the clients' write
# could fail instead, whichever comes first.
cat >"$T/deadssh" <<'EOF'
#!/bin/sh
head -c 4 >/dev/null
echo "ssh: connect to host 127.0.0.1 port 1: Connection refused" >&2
exit 255
EOF
chmod 0755 "$T/deadssh"

# dead_shell NAME WANT_RC WANT_ROLE ARGS... -- ferry's code, its message
# with the role, and its closing line's words and role; rsync's message
# and role must be the same (its code races with the shell's exit: 12 or
# 255 -- ferry waits for the shell, so always its 255).
dead_shell() {
    local name=$1 want=$2 role=$3 rc
    shift 3
    reaped "$RSYNC" "$@" >/dev/null 2>"$T/$name.r"
    "$FERRY" --ssh=spawn "$@" >/dev/null 2>"$T/$name.f"
    rc=$?
    echo "$name: ferry exit $rc"
    cat "$T/$name.r" "$T/$name.f"
    local msg="connection unexpectedly closed (0 bytes received so far) [$role]"
    [ "$rc" = "$want" ] &&
        grep -qF "rsync: $msg" "$T/$name.r" && grep -qF "ferry: $msg" "$T/$name.f" &&
        grep -qE "^ferry error: unexplained error \(code 255\) at .* \[$role=" "$T/$name.f"
}
mkdir -p "$T/ds"
echo x >"$T/ds/x"
t_check dead_shell_push dead_shell dead_push 255 sender -a -e "$T/deadssh" "$T/ds/" h:/nowhere/
t_check dead_shell_pull dead_shell dead_pull 255 Receiver -a -e "$T/deadssh" h:/nowhere/ "$T/ds_pulled/"

# Through a daemon over the dead shell: no greeting, code 5, as rsync.
dead_daemon() {
    local r f
    r=$(reaped "$RSYNC" -e "$T/deadssh" h:: 2>&1; echo "rc $?")
    f=$("$FERRY" --ssh=spawn -e "$T/deadssh" h:: 2>&1; echo "rc $?")
    echo "rsync: $r"
    echo "ferry: $f"
    [ "$(echo "$f" | tail -n 1)" = "rc 5" ] &&
        echo "$r" | grep -q "^rsync: did not see server greeting" &&
        echo "$f" | grep -q "^ferry: did not see server greeting" &&
        echo "$f" | grep -qE '^ferry error: error starting client-server protocol \(code 5\) .*\[Receiver='
}
t_check dead_shell_daemon dead_daemon

# A daemon that greets, then ends without answering the module request:
# "didn't get server startup line", code 5, as rsync.
cat >"$T/halfd" <<'EOF'
#!/bin/sh
head -n 1 >/dev/null
echo '@RSYNCD: 31.0'
head -n 1 >/dev/null
EOF
chmod 0755 "$T/halfd"
half_daemon() {
    local r f
    norm() { sed -E 's/^(rsync|ferry)( error)?: /P\2: /; s/ at [^ ]+\([0-9]+\) \[([a-zA-Z]+)=[^]]*\]$/ [\1]/'; }
    r=$(reaped "$RSYNC" -e "$T/halfd" "$@" 2>&1; echo "rc $?")
    f=$("$FERRY" --ssh=spawn -e "$T/halfd" "$@" 2>&1; echo "rc $?")
    r=$(echo "$r" | norm)
    f=$(echo "$f" | norm)
    echo "rsync: $r"
    echo "ferry: $f"
    [ "$r" = "$f" ] && echo "$f" | grep -q "didn't get server startup line"
}
t_check half_daemon_module half_daemon h::mod/ "$T/half_dst/"
t_check half_daemon_listing half_daemon h::

# A real ssh to a port nobody listens on.
dead_ssh() {
    local port rc
    port=$(t_free_port) || return 1
    "$FERRY" --ssh=spawn -a -e "ssh -p $port -o BatchMode=yes -o StrictHostKeyChecking=no" \
        "$T/ds/" 127.0.0.1:/nowhere/ >/dev/null 2>"$T/dead_ssh.f"
    rc=$?
    echo "dead ssh: ferry exit $rc"
    cat "$T/dead_ssh.f"
    [ "$rc" = 255 ] && grep -qF "ferry: connection unexpectedly closed (0 bytes received so far) [sender]" "$T/dead_ssh.f"
}
if command -v ssh >/dev/null; then
    t_check dead_ssh_spawned dead_ssh
else
    t_skip dead_ssh_spawned "ssh not installed"
fi

# ------------------------------------------- a rule file that cannot open

# rule_file NAME ARGS... -- code, message and closing line as rsync's.
rule_file() {
    local name=$1 r f
    shift
    r=$(cd "$T" && "$RSYNC" "$@" ds/ rf_dst/ 2>&1; echo "rc $?")
    f=$(cd "$T" && "$FERRY" "$@" ds/ rf_dst/ 2>&1; echo "rc $?")
    norm() { sed -E 's/^(rsync|ferry)( error)?: /P\2: /; s/ at [^ ]+\([0-9]+\) \[([a-zA-Z]+)=[^]]*\]$/ [\1]/'; }
    r=$(echo "$r" | norm)
    f=$(echo "$f" | norm)
    echo "$name: rsync: $r"
    echo "$name: ferry: $f"
    [ "$r" = "$f" ] && echo "$f" | grep -q "^rc 11$"
}
t_check merge_missing rule_file merge -a -f "merge $T/missing.rules"
t_check merge_short_missing rule_file merge_short -a -f ". $T/missing.rules"
t_check merge_modified_missing rule_file merge_mod -a -f "merge,- $T/missing.rules"
t_check exclude_from_missing rule_file exclude_from -a --exclude-from="$T/missing.rules"
t_check include_from_missing rule_file include_from -a --include-from="$T/missing.rules"
nested_missing() {
    echo "merge $T/missing.rules" >"$T/outer.rules"
    rule_file nested -a -f "merge $T/outer.rules"
}
t_check merge_nested_missing nested_missing
# a per-directory file is optional: no error
t_check dir_merge_missing_ok "$FERRY" -a -f "dir-merge $T/missing.rules" "$T/ds/" "$T/rf_dst2/"

t_no_sanitizer_reports "$T/fd.out"
t_done
