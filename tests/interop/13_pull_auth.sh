#!/bin/bash
# Daemon authentication on a pull (docs/protocol.md 3.1, 3.5): a real rsync
# daemon with "auth users = alice" and a secrets file. Every case is run
# first with real rsync (the "_rsync" result: proves the case is set up as
# the reference behaves) and then with ferry, which must give the same exit
# status and, on success, the same tree.
#
# Digest choice: rsync 3.5 picks from the peer's greeting list the name it
# ranks highest ("auth digest" in rsyncd.conf is only a minimum), so to
# force one digest a small relay sits in front of the daemon and rewrites
# BOTH greeting lines (client's and daemon's) to the same list. It also
# rewrites them to the old forms without a list ("@RSYNCD: 31.0" -> md5,
# "@RSYNCD: 29" -> md4 with the 4 zero seed bytes). The daemon still checks
# the response, so a successful login proves ferry hashed with the right
# digest; the relay logs the challenge length, which shows the daemon's
# choice (22 md4/md5, 27 sha1, 43 sha256, 86 sha512).
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

SRC=$T/src
OUT=$T/out
mkdir -p "$SRC/sub" "$OUT"
echo "hello" >"$SRC/a.txt"
head -c 100000 /dev/urandom >"$SRC/sub/b.bin"
ln -s a.txt "$SRC/link"
touch -h -d @1600000000 "$SRC/a.txt" "$SRC/sub/b.bin" "$SRC/link" "$SRC/sub" "$SRC"

PASSWORD=s3cret
(umask 077 && printf 'alice:%s\n' "$PASSWORD" >"$T/secrets")

if ! t_rsyncd_start authd "
[sec]
    path = $SRC
    read only = yes
    auth users = alice
    secrets file = $T/secrets
"; then
    t_fail rsyncd_start "real rsync daemon did not start"
    t_done
fi
DPORT=$RSYNCD_PORT

# Password files, one per mode/content.
pwfile() { # NAME MODE CONTENT
    printf '%s' "$3" >"$T/$1"
    chmod "$2" "$T/$1"
}
pwfile pw600 600 "$PASSWORD"$'\n'
pwfile pw640 640 "$PASSWORD"$'\n'
pwfile pw644 644 "$PASSWORD"$'\n'
pwfile pw604 604 "$PASSWORD"$'\n'
pwfile pw_crlf 600 "$PASSWORD"$'\r\nsecond line\n'
pwfile pw_nonl 600 "$PASSWORD"
pwfile pw_space 600 "$PASSWORD  "$'\n'
pwfile pw_wrong 600 $'wrong\n'
pwfile pw_empty 600 ""
pwfile pw_blank_first 600 $'\n\r\n'"$PASSWORD"$'\n'

# ---------------------------------------------------------------- helpers

# No password or user name may leak in from the caller's environment.
CLEAN_ENV=(env -u RSYNC_PASSWORD -u USER -u LOGNAME -u RSYNC_PORT)

# The run must not have crashed: no signal exit, no sanitizer report.
not_crashed() { # RC LOG
    if [ "$1" -ge 128 ]; then
        echo "killed by signal $(($1 - 128))"
        return 1
    fi
    if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer' "$2"; then
        echo "sanitizer report in $2"
        return 1
    fi
    return 0
}

# run_case NAME PROG WANT_RC PATTERN [VAR=VALUE...] -- ARGS...
# Run PROG ("$RSYNC" or "$FERRY") with ARGS and the destination
# $OUT/NAME.<prog>/ appended; report NAME. WANT_RC 0 also needs the tree to
# match the source; otherwise nothing may have been transferred and, if
# PATTERN is not empty, stderr must match it (grep -E).
run_case() {
    local name=$1 prog=$2 want=$3 pat=$4 envs=() tag dest log rc why=""
    shift 4
    while [ "$1" != -- ]; do
        envs+=("$1")
        shift
    done
    shift
    tag=ferry
    [ "$prog" = "$RSYNC" ] && tag=rsync
    dest=$OUT/$name.$tag
    log=$T/$name.$tag.log
    echo "== $name ($tag): ${envs[*]} $prog $* $dest/"
    "${CLEAN_ENV[@]}" "${envs[@]}" timeout 60 "$prog" "$@" "$dest/" >"$log" 2>&1 </dev/null
    rc=$?
    cat "$log"
    echo "exit $rc"
    [ "$tag" = ferry ] && { why=$(not_crashed "$rc" "$log") || { report "$name" "$tag" "$why"; return; }; }
    if [ "$rc" -ne "$want" ]; then
        why="exit $rc, expected $want: $(tail -n 2 "$log")"
    elif [ "$want" -eq 0 ]; then
        t_compare "$SRC" "$dest" || why="tree differs from the source"
    else
        if [ -n "$(ls -A "$dest" 2>/dev/null)" ]; then
            why="files arrived although the login failed"
        elif [ -n "$pat" ] && ! grep -qE -- "$pat" "$log"; then
            why="stderr does not match /$pat/: $(tail -n 2 "$log")"
        fi
    fi
    report "$name" "$tag" "$why"
}

report() { # NAME TAG WHY
    local n=$1
    [ "$2" = rsync ] && n=${1}_rsync
    if [ -z "$3" ]; then t_pass "$n"; else t_fail "$n" "$3"; fi
}

# both NAME WANT_RC PATTERN [VAR=VALUE...] -- ARGS... : real rsync, then ferry.
both() {
    run_case "$1" "$RSYNC" "${@:2}"
    run_case "$1" "$FERRY" "${@:2}"
}

# ------------------------------------------------- direct to the daemon

HOSTMOD=alice@127.0.0.1::sec/

both env_password 0 "" RSYNC_PASSWORD=$PASSWORD -- -a --port="$DPORT" "$HOSTMOD"
both password_file 0 "" -- -a --port="$DPORT" --password-file="$T/pw600" "$HOSTMOD"
# --password-file wins over RSYNC_PASSWORD (authenticate.c: getpassf).
both password_file_over_env 0 "" RSYNC_PASSWORD=wrong -- \
    -a --port="$DPORT" --password-file="$T/pw600" "$HOSTMOD"
# Only "other" bits make a password file too open; group bits are fine.
both password_file_group_readable 0 "" -- -a --port="$DPORT" --password-file="$T/pw640" "$HOSTMOD"
# Only the first line counts, CR LF stripped; no newline at all is fine.
both password_file_crlf 0 "" -- -a --port="$DPORT" --password-file="$T/pw_crlf" "$HOSTMOD"
both password_file_no_newline 0 "" -- -a --port="$DPORT" --password-file="$T/pw_nonl" "$HOSTMOD"
# Trailing blanks are part of the password, so this one is wrong.
both password_file_trailing_space 5 "auth failed on module sec" -- \
    -a --port="$DPORT" --password-file="$T/pw_space" "$HOSTMOD"
# An other-accessible password file is refused before anything is sent:
# "ERROR: password file must not be other-accessible", RERR_SYNTAX (1).
both password_file_world_readable 1 "other-accessible" -- \
    -a --port="$DPORT" --password-file="$T/pw644" "$HOSTMOD"
both password_file_other_only 1 "other-accessible" -- \
    -a --port="$DPORT" --password-file="$T/pw604" "$HOSTMOD"
# A missing password file: "could not open password file", RERR_SYNTAX (1).
both password_file_missing 1 "password file" -- \
    -a --port="$DPORT" --password-file="$T/no-such-file" "$HOSTMOD"
# Running as root, rsync also wants the password file owned by root.
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
    pwfile pw_nobody 600 "$PASSWORD"$'\n'
    chown nobody "$T/pw_nobody"
    both password_file_not_root_owned 1 "owned by root" -- \
        -a --port="$DPORT" --password-file="$T/pw_nobody" "$HOSTMOD"
else
    t_skip password_file_not_root_owned "only checked when running as root"
fi

both wrong_password 5 "auth failed on module sec" RSYNC_PASSWORD=wrong -- \
    -a --port="$DPORT" "$HOSTMOD"
both wrong_password_file 5 "auth failed on module sec" -- \
    -a --port="$DPORT" --password-file="$T/pw_wrong" "$HOSTMOD"
both unknown_user 5 "auth failed on module sec" RSYNC_PASSWORD=$PASSWORD -- \
    -a --port="$DPORT" bob@127.0.0.1::sec/
both empty_password 5 "auth failed on module sec" RSYNC_PASSWORD= -- \
    -a --port="$DPORT" "$HOSTMOD"

# The user name forms: rsync:// URL with user and port, and $USER when the
# spec has no user.
both url_user_port 0 "" RSYNC_PASSWORD=$PASSWORD -- -a "rsync://alice@127.0.0.1:$DPORT/sec/"
both url_user_port_wrong_password 5 "auth failed on module sec" RSYNC_PASSWORD=wrong -- \
    -a "rsync://alice@127.0.0.1:$DPORT/sec/"
both url_unknown_user 5 "auth failed on module sec" RSYNC_PASSWORD=$PASSWORD -- \
    -a "rsync://mallory@127.0.0.1:$DPORT/sec/"
both user_from_env 0 "" USER=alice RSYNC_PASSWORD=$PASSWORD -- -a --port="$DPORT" 127.0.0.1::sec/
both user_from_env_url 0 "" USER=alice RSYNC_PASSWORD=$PASSWORD -- \
    -a "rsync://127.0.0.1:$DPORT/sec/"
both user_from_env_unknown 5 "auth failed on module sec" USER=bob RSYNC_PASSWORD=$PASSWORD -- \
    -a --port="$DPORT" 127.0.0.1::sec/

# The password on stdin (--password-file=-).
check_stdin_password() {
    local prog=$1 dest=$OUT/stdin.$2 rc
    printf '%s\n' "$PASSWORD" | "${CLEAN_ENV[@]}" timeout 60 "$prog" -a --port="$DPORT" \
        --password-file=- "$HOSTMOD" "$dest/" >"$T/stdin.$2.log" 2>&1
    rc=$?
    cat "$T/stdin.$2.log"
    [ "$2" = rsync ] || not_crashed "$rc" "$T/stdin.$2.log" || return 1
    [ "$rc" -eq 0 ] && t_compare "$SRC" "$dest"
}
t_check password_stdin_rsync check_stdin_password "$RSYNC" rsync
t_check password_stdin check_stdin_password "$FERRY" ferry

# A password file with no password in it: "ERROR: failed to read a
# password from FILE", RERR_SYNTAX (1); blank lines before it are skipped
# (authenticate.c: getpassf's strtok).
both password_file_empty 1 "^ERROR: failed to read a password from" -- \
    -a --port="$DPORT" --password-file="$T/pw_empty" "$HOSTMOD"
both password_file_blank_first 0 "" -- -a --port="$DPORT" --password-file="$T/pw_blank_first" "$HOSTMOD"

# The prompt (readpassphrase, rsync: getpass) comes last: with no
# --password-file and no RSYNC_PASSWORD. Without a controlling terminal
# (setsid) both read the password from stdin and prompt on stderr. With
# RSYNC_PASSWORD set there is no prompt and stdin is not read.
# check_prompt PROG TAG ENV_PASSWORD STDIN_PASSWORD WANT_PROMPT
check_prompt() {
    local prog=$1 dest=$OUT/prompt.$2.$3 log=$T/prompt.$2.$3.log rc envs=()
    [ "$3" != none ] && envs=(RSYNC_PASSWORD="$3")
    printf '%s\n' "$4" | "${CLEAN_ENV[@]}" "${envs[@]}" setsid -w timeout 60 "$prog" -a \
        --port="$DPORT" "$HOSTMOD" "$dest/" >"$log" 2>&1
    rc=$?
    cat "$log"
    echo # the prompt ends no line: the result must start one
    [ "$2" = rsync ] || not_crashed "$rc" "$log" || return 1
    if [ "$5" = yes ]; then grep -q '^Password: ' "$log" || { echo "no prompt"; return 1; }
    elif grep -q 'Password:' "$log"; then echo "prompted"; return 1; fi
    [ "$rc" -eq 0 ] && t_compare "$SRC" "$dest"
}
if command -v setsid >/dev/null 2>&1; then
    for p in rsync ferry; do
        bin=$FERRY sfx=""
        [ $p = rsync ] && bin=$RSYNC sfx=_rsync
        t_check "password_prompt_no_tty$sfx" check_prompt "$bin" $p none "$PASSWORD" yes
        t_check "password_env_over_prompt$sfx" check_prompt "$bin" $p "$PASSWORD" wrong no
    done
else
    t_skip password_prompt_no_tty "setsid not installed"
fi

# ------------------------------------------------ digests via the relay

cat >"$T/relay.py" <<'EOF'
"""TCP relay for 13_pull_auth.sh: rewrites each side's greeting line.

usage: relay.py LISTEN_PORT TARGET_PORT CLIENT_LINE DAEMON_LINE LOG

CLIENT_LINE replaces the first line the client sends (its greeting),
DAEMON_LINE the first line the daemon sends; "-" keeps the original. All
other bytes pass unchanged. The daemon's AUTHREQD challenge is logged with
its length, which tells which digest the daemon chose. Runs until killed.
"""
import re
import socket
import sys
import threading

TIMEOUT = 30
listen_port, target_port = int(sys.argv[1]), int(sys.argv[2])
client_line, daemon_line, log_path = sys.argv[3], sys.argv[4], sys.argv[5]
log_lock = threading.Lock()


def log(msg):
    with log_lock, open(log_path, "a") as f:
        f.write(msg + "\n")


def read_line(sock):
    """Read one \\n-terminated line (the greeting), at most 4 KiB."""
    buf = b""
    while not buf.endswith(b"\n") and len(buf) < 4096:
        c = sock.recv(1)
        if not c:
            break
        buf += c
    return buf


def pump(conn_id, src, dst, name, new_first):
    seen = b""
    try:
        first = read_line(src)
        if not first:
            return
        out = first if new_first == "-" else new_first.encode() + b"\n"
        log("conn %d: %s greeting %r -> %r" % (conn_id, name, first, out))
        dst.sendall(out)
        while True:
            data = src.recv(65536)
            if not data:
                break
            if name == "daemon" and seen is not None:
                seen += data
                m = re.search(rb"@RSYNCD: AUTHREQD (\S+)\n", seen)
                if m:
                    log("conn %d: challenge length %d" % (conn_id, len(m.group(1))))
                if m or len(seen) > 8192:
                    seen = None
            dst.sendall(data)
    except OSError as e:
        log("conn %d: %s: %s" % (conn_id, name, e))
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def serve(conn_id, client):
    try:
        daemon = socket.create_connection(("127.0.0.1", target_port), timeout=TIMEOUT)
    except OSError as e:
        log("conn %d: connect: %s" % (conn_id, e))
        client.close()
        return
    client.settimeout(TIMEOUT)
    threads = [
        threading.Thread(target=pump, args=(conn_id, client, daemon, "client", client_line)),
        threading.Thread(target=pump, args=(conn_id, daemon, client, "daemon", daemon_line)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    client.close()
    daemon.close()


def main():
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", listen_port))
    ls.listen(8)
    n = 0
    while True:
        client, _ = ls.accept()
        n += 1
        threading.Thread(target=serve, args=(n, client), daemon=True).start()


main()
EOF

# start_relay NAME CLIENT_LINE DAEMON_LINE -- sets RELAY_PORT, RELAY_PID, RELAY_LOG.
start_relay() {
    local _
    RELAY_LOG=$T/relay.$1.log
    : >"$RELAY_LOG"
    for _ in 1 2 3; do
        RELAY_PORT=$(t_free_port) || return 1
        "$PYTHON" "$T/relay.py" "$RELAY_PORT" "$DPORT" "$2" "$3" "$RELAY_LOG" \
            >>"$T/relay.$1.out" 2>&1 </dev/null &
        RELAY_PID=$!
        t_track_pid "$RELAY_PID"
        t_wait_port "$RELAY_PORT" 10 "$RELAY_PID" && return 0
        _t_kill_pid "$RELAY_PID"
        _t_untrack_pid "$RELAY_PID"
    done
    cat "$T/relay.$1.out" >&2
    return 1
}

stop_relay() {
    _t_kill_pid "$RELAY_PID"
    _t_untrack_pid "$RELAY_PID"
}

# Every challenge the daemon sent through the relay had this length.
challenges_are() { # LEN
    local got
    got=$(sed -n 's/.*challenge length //p' "$RELAY_LOG" | sort -u | tr '\n' ' ')
    echo "challenge lengths: $got (want $1)"
    [ "$got" = "$1 " ]
}

# digest_case NAME CLIENT_LINE DAEMON_LINE CHALLENGE_LEN
digest_case() {
    local name=$1
    if ! start_relay "$name" "$2" "$3"; then
        t_fail "$name" "relay did not start"
        return
    fi
    both "$name" 0 "" RSYNC_PASSWORD=$PASSWORD -- -a --port="$RELAY_PORT" "$HOSTMOD"
    both "${name}_wrong_password" 5 "auth failed on module sec" RSYNC_PASSWORD=wrong -- \
        -a --port="$RELAY_PORT" "$HOSTMOD"
    cat "$RELAY_LOG"
    t_check "${name}_daemon_choice" challenges_are "$4"
    stop_relay
}

for d in sha512:86 sha256:43 sha1:27 md5:22 md4:22; do
    digest_case "digest_${d%%:*}" "@RSYNCD: 32.0 ${d%%:*}" "@RSYNCD: 32.0 ${d%%:*}" "${d#*:}"
done
# Lists in an unusual order: each side takes the name IT ranks highest.
digest_case digest_unordered_list "@RSYNCD: 32.0 md4 md5 sha1" "@RSYNCD: 32.0 md4 md5 sha1" 27
# Old daemons: no digest list. 31.0 -> plain md5; 29 -> md4 over
# 4 zero bytes ++ password ++ challenge (the legacy seed quirk).
digest_case old_greeting_31 "@RSYNCD: 31.0" "@RSYNCD: 31.0" 22
digest_case old_greeting_30 "@RSYNCD: 30.0" "@RSYNCD: 30.0" 22
digest_case old_greeting_29 "@RSYNCD: 29" "@RSYNCD: 29" 22

# A daemon offering only digests the client does not know: the client
# gives up with "Failed to negotiate a daemon auth checksum choice",
# RERR_UNSUPPORTED (4).
if start_relay no_common "-" "@RSYNCD: 32.0 foo bar"; then
    both digest_no_common 4 "" RSYNC_PASSWORD=$PASSWORD -- -a --port="$RELAY_PORT" "$HOSTMOD"
    stop_relay
else
    t_fail digest_no_common "relay did not start"
fi

t_done
