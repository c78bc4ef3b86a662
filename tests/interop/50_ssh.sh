#!/bin/bash
# ferry's ssh transports against a private sshd (skipped when it cannot
# start): the built-in libssh client, proven to need no ssh binary (run
# with a PATH lacking ssh), with --ssh=builtin and the default --ssh=auto,
# pulling and pushing -a, -aH, --delete and an 8 MiB delta against remote
# real rsync and remote ferry; RSYNC_RSH, user@host, odd remote paths, -F;
# every cipher through -c and --ssh-cipher (checked in the DEBUG1 log of a
# second sshd); unknown and mismatched ciphers (a third sshd speaks only
# aes128-ctr); unknown, accepted and changed host keys; --ssh=spawn; -e
# commands the built-in does not understand; failures of the remote
# command and of the remote shell; daemon over ssh (host::module with -e)
# with ferry and rsync on either end.
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

t_sshd_start
case $? in
0) t_pass sshd_start ;;
2)
    t_skip "$(_t_script_name)" "$T_SKIP_REASON"
    t_done
    ;;
*)
    t_skip "$(_t_script_name)" "sshd did not start (see the log)"
    t_done
    ;;
esac
echo "--- harness ssh_config:"
cat "$T/ssh_config"

D=$T/ssh
KEY=$D/client_key
KH=$D/known_hosts
HOSTKEY=$(cut -d' ' -f1-2 "$D/host_key.pub")

# ssh_cmd PORT [KNOWN_HOSTS [STRICT]] -- an -e command built from the
# harness's files, with only options the built-in transport honours. (The
# harness config also sets IdentitiesOnly, GlobalKnownHostsFile,
# ConnectTimeout and LogLevel, which the built-in does not take on the
# command line, so it is not used for the main cases.)
ssh_cmd() {
    printf 'ssh -p %s -i %s -o UserKnownHostsFile=%s -o StrictHostKeyChecking=%s' \
        "$1" "$KEY" "${2:-$KH}" "${3:-yes}"
}
E=$(ssh_cmd "$SSHD_PORT")

# A PATH with no ssh in it: the built-in transport must not need one.
NOSSH=$T/nossh-bin
mkdir -p "$NOSSH"
ln -s "$(command -v "$RSYNC")" "$NOSSH/rsync"
ln -s "$(command -v env)" "$NOSSH/env"
no_ssh_in() {
    local found
    found=$(PATH=$1 type -P ssh) || return 0
    echo "found $found"
    return 1
}
t_check nossh_path_lacks_ssh no_ssh_in "$NOSSH"

# A PATH whose ssh records every call, then runs the real one: shows when
# ferry spawned ssh and when it did not.
REAL_SSH=$(command -v ssh)
WRAP=$T/wrap-bin
mkdir -p "$WRAP"
cat >"$WRAP/ssh" <<EOF
#!/bin/sh
echo "ssh \$*" >>"$T/ssh-calls"
exec "$REAL_SSH" "\$@"
EOF
chmod 0755 "$WRAP/ssh"
WPATH=$WRAP:$PATH

# sshd hands the command a clean environment: carry the sanitizer settings
# (leak checks stay off, as tests/run sets them) to the server side.
RPATH="env ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}"
RPATH+=" UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} $FERRY"

# ------------------------------------------------------------------ trees

SRC=$T/src
t_check mktree t_mktree "$SRC" || t_done

# A small tree for the cipher and policy cases: some random data so the
# cipher has real work, a hard link and a symlink.
SMALL=$T/small
mk_small() {
    mkdir -p "$SMALL/d" && head -c 300000 /dev/urandom >"$SMALL/rand.bin" &&
        echo "text" >"$SMALL/d/t.txt" && ln "$SMALL/d/t.txt" "$SMALL/hl" &&
        ln -s d/t.txt "$SMALL/sl" && touch -d @1600000000 "$SMALL/d" "$SMALL"
}
t_check mk_small mk_small || t_done

# The 8 MiB file for the delta cases, and its 1%-changed version.
BIG=$T/big
make_big() {
    local i
    mkdir -p "$BIG/old" "$BIG/new" && head -c $((8 * 1048576)) /dev/urandom >"$BIG/old/file" &&
        cp "$BIG/old/file" "$BIG/new/file" || return 1
    for i in $(seq 0 7); do
        dd if=/dev/urandom of="$BIG/new/file" bs=10240 count=1 seek=$((i * 100 + 7)) \
            conv=notrunc status=none || return 1
    done
    touch -d @1600000000 "$BIG/old/file" "$BIG/old"
    touch -d @1600003600 "$BIG/new/file" && touch -d @1600000000 "$BIG/new"
}
t_check make_big make_big || t_done

# ------------------------------------------------------------------ helpers

# run OUT CMD... -- OUT.out, OUT.err, OUT.rc get CMD's stdout, stderr, exit.
run() {
    local out=$1 t0=$EPOCHREALTIME
    shift
    echo "--- run $(basename "$out"): $*"
    (umask 022 && exec "$@") >"$out.out" 2>"$out.err" </dev/null
    echo $? >"$out.rc"
    echo "--- exit $(cat "$out.rc") after $(awk "BEGIN { printf \"%.1f\", $EPOCHREALTIME - $t0 }") s"
}

ok_compare() {
    local r=$1
    shift
    ok "$r" && t_compare "$@"
}

# fails_with RUN CODE REGEX -- exit CODE ("nonzero": anything but 0) and
# stderr matching the extended REGEX.
fails_with() {
    local rc
    rc=$(cat "$1.rc")
    if [ "$2" = nonzero ]; then
        [ "$rc" != 0 ] || { echo "exit 0, expected a failure"; show_run "$1"; return 1; }
    elif [ "$rc" != "$2" ]; then
        echo "exit $rc, expected $2"
        show_run "$1"
        return 1
    fi
    grep -qE -- "$3" "$1.err" && return 0
    echo "stderr does not match /$3/"
    show_run "$1"
    return 1
}

absent() {
    [ ! -e "$1" ] && return 0
    echo "$1 exists"
    return 1
}

stat_bytes() {
    sed -n "s/^$2: \([0-9,]*\) bytes.*/\1/p" "$1.out" | tr -d , | head -n 1
}

# small_delta RUN -- --stats says: little literal data, most of it matched.
small_delta() {
    local lit matched
    lit=$(stat_bytes "$1" "Literal data")
    matched=$(stat_bytes "$1" "Matched data")
    echo "literal $lit matched $matched"
    [ -n "$lit" ] && [ "$lit" -gt 0 ] && [ "$lit" -lt $((8 * 1048576 / 20)) ] &&
        [ "${matched:-0}" -gt $((7 * 1048576)) ]
}

# no_ssh_spawned -- the wrapper ssh was not called since the last reset.
ssh_calls_reset() { : >"$T/ssh-calls"; }
no_ssh_spawned() {
    [ ! -s "$T/ssh-calls" ] && return 0
    echo "ssh was spawned:"
    cat "$T/ssh-calls"
    return 1
}
ssh_spawned() {
    [ -s "$T/ssh-calls" ] && return 0
    echo "ssh was not spawned"
    return 1
}

# ------------------------------------------------------------ main suite

# suite TAG RSYNC_PATH PULL_MODE PUSH_MODE -- -a, -aH, --delete and an
# 8 MiB delta, pulled and pushed by ferry over the built-in transport with
# a PATH lacking ssh. A mode is builtin (--ssh=builtin) or auto (no --ssh
# option); RSYNC_PATH empty means the remote default, real rsync.
suite() {
    local tag=$1 rp=$2 d=$T/$1 r=127.0.0.1: w
    local pull=(env PATH="$NOSSH" "$FERRY" -e "$E") push
    [ -z "$rp" ] || pull+=(--rsync-path="$rp")
    push=("${pull[@]}")
    [ "$3" = auto ] || pull+=(--ssh="$3")
    [ "$4" = auto ] || push+=(--ssh="$4")
    mkdir -p "$d"

    run "$T/$tag.pull_a" "${pull[@]}" -a "$r$SRC/" "$d/pull_a/"
    t_check "${tag}_pull_a" ok_compare "$T/$tag.pull_a" "$SRC" "$d/pull_a" --nsec --no-hardlinks
    run "$T/$tag.pull_aH" "${pull[@]}" -aH "$r$SRC/" "$d/pull_aH/"
    t_check "${tag}_pull_aH" ok_compare "$T/$tag.pull_aH" "$SRC" "$d/pull_aH" --nsec
    run "$T/$tag.push_a" "${push[@]}" -a "$SRC/" "$r$d/push_a/"
    t_check "${tag}_push_a" ok_compare "$T/$tag.push_a" "$SRC" "$d/push_a" --nsec --no-hardlinks
    run "$T/$tag.push_aH" "${push[@]}" -aH "$SRC/" "$r$d/push_aH/"
    t_check "${tag}_push_aH" ok_compare "$T/$tag.push_aH" "$SRC" "$d/push_aH" --nsec

    # --delete: extras go, the missing come back.
    for w in pull_aH push_aH; do
        echo extra >"$d/$w/extra.txt"
        mkdir -p "$d/$w/extradir/x" && echo x >"$d/$w/extradir/x/f"
        rm -f "$d/$w/small.txt"
    done
    run "$T/$tag.pull_delete" "${pull[@]}" -aH --delete "$r$SRC/" "$d/pull_aH/"
    t_check "${tag}_pull_delete" ok_compare "$T/$tag.pull_delete" "$SRC" "$d/pull_aH" --nsec
    run "$T/$tag.push_delete" "${push[@]}" -aH --delete "$SRC/" "$r$d/push_aH/"
    t_check "${tag}_push_delete" ok_compare "$T/$tag.push_delete" "$SRC" "$d/push_aH" --nsec

    # Delta pull (the local copy is old) and push (the remote copy is old).
    "$RSYNC" -a "$BIG/old/" "$d/pull_big/" && "$RSYNC" -a "$BIG/old/" "$d/push_big/"
    run "$T/$tag.pull_delta" "${pull[@]}" -a --stats "$r$BIG/new/" "$d/pull_big/"
    t_check "${tag}_pull_delta" ok_compare "$T/$tag.pull_delta" "$BIG/new" "$d/pull_big" --nsec
    t_check "${tag}_pull_delta_small" small_delta "$T/$tag.pull_delta"
    run "$T/$tag.push_delta" "${push[@]}" -a --stats "$BIG/new/" "$r$d/push_big/"
    t_check "${tag}_push_delta" ok_compare "$T/$tag.push_delta" "$BIG/new" "$d/push_big" --nsec
    t_check "${tag}_push_delta_small" small_delta "$T/$tag.push_delta"
}

# Each remote end gets both modes and both directions; a connection costs
# seconds on a loaded machine, so not every combination.
suite rsync_pullauto_pushbuiltin "" auto builtin
suite ferry_pullbuiltin_pushauto "$RPATH" builtin auto

# RSYNC_RSH instead of -e, and user@host.
run "$T/rsync_rsh" env PATH="$NOSSH" RSYNC_RSH="$E" "$FERRY" -aH \
    "$(id -un)@127.0.0.1:$SMALL/" "$T/rsync_rsh/"
t_check builtin_RSYNC_RSH_user_at_host ok_compare "$T/rsync_rsh" "$SMALL" "$T/rsync_rsh" --nsec
# -vv names the remote shell's command, as rsync's, though ssh is built in
run "$T/vv_builtin" env PATH="$NOSSH" "$FERRY" -e "$E" --ssh=builtin -avv \
    "127.0.0.1:$SMALL/" "$T/vv_builtin/"
vv_cmd_shown() {
    grep -q "^opening connection using: ssh .* 127.0.0.1 .*--server --sender" "$1.out" ||
        { show_run "$1"; return 1; }
}
t_check builtin_vv_shows_command vv_cmd_shown "$T/vv_builtin"

# Remote paths with blanks, quotes and shell characters reach the remote
# shell intact through the built-in (one command string, as ssh sends it):
# two remote sources pulled, and a push into an odd directory.
ODD="$T/odd 'q' & \$HOME"
mkdir -p "$ODD/in 'x' ;" && echo one >"$ODD/f \"q\" \$x & y" && echo two >"$ODD/in 'x' ;/g"
# Times from another second: a directory made in the second its source was
# changed keeps the time its new files gave it (rsync's touch_up_dirs
# compares whole seconds), and the exact comparison below would fail.
find "$ODD" -exec touch -h -d '2020-01-01 00:00:00.25' {} +
run "$T/odd_pull" env PATH="$NOSSH" "$FERRY" -e "$E" --ssh=builtin -a \
    "127.0.0.1:$ODD/f \"q\" \$x & y" "127.0.0.1:$ODD/in 'x' ;" "$T/odd_pull/"
t_check builtin_odd_remote_paths_pull ok_compare "$T/odd_pull" "$ODD" "$T/odd_pull" --nsec --no-dir-times
run "$T/odd_push" env PATH="$NOSSH" "$FERRY" -e "$E" --ssh=builtin -a "$ODD/" \
    "127.0.0.1:$T/odd push \"q\" & \$(true)/"
t_check builtin_odd_remote_path_push ok_compare "$T/odd_push" "$ODD" "$T/odd push \"q\" & \$(true)" --nsec

# The harness's own -e command (-F with its ssh_config, which says
# IdentitiesOnly, a keyword libssh 0.10 ignores): auto leaves the file to
# ssh, --ssh=builtin refuses it rather than half-honour it (57_ssh_config
# has the other cases).
ssh_calls_reset
run "$T/harness_F" env PATH="$WPATH" "$FERRY" -e "$SSH_CMD" -aH "127.0.0.1:$SMALL/" "$T/harness_F/"
t_check harness_F_config_spawned_works ok_compare "$T/harness_F" "$SMALL" "$T/harness_F" --nsec
t_check harness_F_config_spawns_ssh ssh_spawned
run "$T/harness_F_b" env PATH="$NOSSH" "$FERRY" -e "$SSH_CMD" --ssh=builtin -aH \
    "127.0.0.1:$SMALL/" "$T/harness_F_b/"
t_check harness_F_config_builtin_refused fails_with "$T/harness_F_b" 1 \
    'ssh=builtin: the built-in ssh cannot honour .*IdentitiesOnly is not applied'
# Without that line the built-in reads the file through libssh.
grep -v IdentitiesOnly "$T/ssh_config" >"$T/ssh_config_b"
run "$T/builtin_F" env PATH="$NOSSH" "$FERRY" -e "ssh -F $T/ssh_config_b -p $SSHD_PORT" \
    --ssh=builtin -aH "127.0.0.1:$SMALL/" "$T/builtin_F/"
t_check builtin_F_config ok_compare "$T/builtin_F" "$SMALL" "$T/builtin_F" --nsec

# The remote command's stderr and failure come through the built-in as
# through ssh: a missing --rsync-path is exit 12 (as rsync) with the
# remote shell's message.
run "$T/nocmd" env PATH="$NOSSH" "$FERRY" -e "$E" --ssh=builtin --rsync-path=/nonexistent/rsync \
    -a "127.0.0.1:$SMALL/" "$T/nocmd/"
t_check builtin_remote_cmd_missing fails_with "$T/nocmd" 12 '/nonexistent/rsync.*(No such file|not found)'

# ---------------------------------------------------------------- ciphers

CIPHERS="aes128-gcm@openssh.com aes256-gcm@openssh.com chacha20-poly1305@openssh.com
aes128-ctr aes192-ctr aes256-ctr"

# A second sshd that logs the negotiated cipher (LogLevel DEBUG1).
DBG_PORT=""
if t_sshd_start_extra sshd_dbg LogLevel=DEBUG1; then
    DBG_PORT=$SSHD_EXTRA_PORT
    t_pass sshd_debug_start
else
    t_fail sshd_debug_start "second sshd with LogLevel=DEBUG1 did not start"
fi

# used_cipher LOGOFFSET CIPHER -- sshd's log since LOGOFFSET shows CIPHER
# negotiated both ways.
used_cipher() {
    local new
    new=$(tail -c +"$(($1 + 1))" "$T/sshd_dbg.log")
    if grep -qF "kex: client->server cipher: $2 " <<<"$new" &&
        grep -qF "kex: server->client cipher: $2 " <<<"$new"; then
        return 0
    fi
    echo "sshd did not log cipher $2; its kex lines:"
    grep -F 'kex: ' <<<"$new"
    return 1
}

# cipher_case NAME CIPHER HOW ARGS... -- pull or push SMALL over the debug
# sshd; check the tree and that CIPHER was negotiated.
cipher_case() {
    local name=$1 c=$2 dir=$3 off dst=$T/$1
    shift 3
    off=$(stat -c %s "$T/sshd_dbg.log")
    if [ "$dir" = pull ]; then
        run "$T/$name" env PATH="$NOSSH" "$FERRY" "$@" -aH "127.0.0.1:$SMALL/" "$dst/"
    else
        run "$T/$name" env PATH="$NOSSH" "$FERRY" "$@" -aH "$SMALL/" "127.0.0.1:$dst/"
    fi
    t_check "$name" ok_compare "$T/$name" "$SMALL" "$dst" --nsec
    t_check "${name}_negotiated" used_cipher "$off" "$c"
}

if [ -n "$DBG_PORT" ]; then
    EDBG=$(ssh_cmd "$DBG_PORT")
    for c in $CIPHERS; do
        cipher_case "cipher_opt_c_$c" "$c" pull -e "$EDBG -c $c"
        cipher_case "cipher_ssh_cipher_$c" "$c" push -e "$EDBG" --ssh=builtin --ssh-cipher="$c"
    done
    # --ssh-cipher wins over -c in the -e command.
    cipher_case cipher_override aes192-ctr pull -e "$EDBG -c aes128-ctr" --ssh-cipher=aes192-ctr
fi

# Unknown ciphers: refused before connecting, with ssh's words and code.
run "$T/bad_c" env PATH="$NOSSH" "$FERRY" -e "$E -c nosuch-cipher" -a "127.0.0.1:$SMALL/" "$T/bad_c/"
t_check unknown_cipher_opt_c fails_with "$T/bad_c" 255 "Unknown cipher type 'nosuch-cipher'"
run "$T/bad_sc" env PATH="$NOSSH" "$FERRY" -e "$E" --ssh-cipher=nosuch-cipher \
    -a "127.0.0.1:$SMALL/" "$T/bad_sc/"
t_check unknown_cipher_ssh_cipher fails_with "$T/bad_sc" 255 "Unknown cipher type 'nosuch-cipher'"
# ssh refuses a list with any unknown name in it ("Unknown cipher type
# 'aes128-ctr,nosuch-cipher'", exit 255) rather than dropping that name.
run "$T/bad_list" env PATH="$NOSSH" "$FERRY" -e "$E -c aes128-ctr,nosuch-cipher" \
    -a "127.0.0.1:$SMALL/" "$T/bad_list/"
t_check unknown_cipher_in_list fails_with "$T/bad_list" 255 \
    "Unknown cipher type 'aes128-ctr,nosuch-cipher'"
run "$T/bad_mac" env PATH="$NOSSH" "$FERRY" -e "$E -m nosuch-mac" -a "127.0.0.1:$SMALL/" "$T/bad_mac/"
t_check unknown_mac fails_with "$T/bad_mac" 255 "Unknown mac type 'nosuch-mac'"

# An sshd that only speaks aes128-ctr: that works, anything else is refused.
if t_sshd_start_extra sshd_ctr Ciphers=aes128-ctr; then
    t_pass sshd_restricted_start
    ECTR=$(ssh_cmd "$SSHD_EXTRA_PORT")
    run "$T/only_ctr" env PATH="$NOSSH" "$FERRY" -e "$ECTR -c aes128-ctr" -a "127.0.0.1:$SMALL/" "$T/only_ctr/"
    t_check cipher_restricted_match ok_compare "$T/only_ctr" "$SMALL" "$T/only_ctr" --nsec --no-hardlinks
    run "$T/mismatch" env PATH="$NOSSH" "$FERRY" -e "$ECTR -c chacha20-poly1305@openssh.com" \
        -a "127.0.0.1:$SMALL/" "$T/mismatch/"
    t_check cipher_mismatch fails_with "$T/mismatch" nonzero \
        '(no match|no matching).*(cipher|encryption)|(cipher|encryption).*(no match|no matching)'
    t_check cipher_mismatch_nothing_written absent "$T/mismatch"
    run "$T/mismatch_sc" env PATH="$NOSSH" "$FERRY" -e "$ECTR" --ssh-cipher=aes256-gcm@openssh.com \
        -a "127.0.0.1:$SMALL/" "$T/mismatch_sc/"
    t_check cipher_mismatch_ssh_cipher fails_with "$T/mismatch_sc" nonzero \
        '(no match|no matching).*(cipher|encryption)|(cipher|encryption).*(no match|no matching)'
else
    t_fail sshd_restricted_start "sshd with Ciphers=aes128-ctr did not start"
fi

# -------------------------------------------------------------- host keys

# An empty known_hosts with strict checking: refused, as ssh does.
: >"$T/kh_empty"
run "$T/hk_unknown" env PATH="$NOSSH" "$FERRY" -e "$(ssh_cmd "$SSHD_PORT" "$T/kh_empty" yes)" \
    -a "127.0.0.1:$SMALL/" "$T/hk_unknown/"
t_check hostkey_unknown_strict fails_with "$T/hk_unknown" 255 '^Host key verification failed\.$'
t_check hostkey_unknown_nothing_written absent "$T/hk_unknown"
t_check hostkey_unknown_known_hosts_untouched test ! -s "$T/kh_empty"

# accept-new: works and records the key in that file.
: >"$T/kh_new"
run "$T/hk_new" env PATH="$NOSSH" "$FERRY" -e "$(ssh_cmd "$SSHD_PORT" "$T/kh_new" accept-new)" \
    -a "127.0.0.1:$SMALL/" "$T/hk_new/"
t_check hostkey_accept_new ok_compare "$T/hk_new" "$SMALL" "$T/hk_new" --nsec --no-hardlinks
key_recorded() {
    local got
    got=$(ssh-keygen -F "[127.0.0.1]:$SSHD_PORT" -f "$1" | grep -v '^#' | cut -d' ' -f2-3)
    [ "$got" = "$HOSTKEY" ] && return 0
    echo "known_hosts $1 does not hold the host key for [127.0.0.1]:$SSHD_PORT:"
    cat "$1"
    return 1
}
t_check hostkey_accept_new_recorded key_recorded "$T/kh_new"
# A changed key is refused even with accept-new (ssh's rule).
ssh-keygen -q -t ed25519 -N '' -C other -f "$T/other_key"
printf '[127.0.0.1]:%s %s\n' "$SSHD_PORT" "$(cut -d' ' -f1-2 "$T/other_key.pub")" >"$T/kh_changed"
run "$T/hk_changed" env PATH="$NOSSH" "$FERRY" -e "$(ssh_cmd "$SSHD_PORT" "$T/kh_changed" accept-new)" \
    -a "127.0.0.1:$SMALL/" "$T/hk_changed/"
t_check hostkey_changed_refused fails_with "$T/hk_changed" 255 'Host key verification failed\.'

# StrictHostKeyChecking accept-new from an -F config file: `ssh -F FILE`
# accepts and records the key. Whether a laxer policy applies depends on
# the Host blocks, so auto leaves the file to ssh, which records the key;
# --ssh=builtin refuses.
: >"$T/kh_cfg"
cat >"$T/cfg_accept" <<EOF
Host *
  Port $SSHD_PORT
  User $(id -un)
  IdentityFile $KEY
  UserKnownHostsFile $T/kh_cfg
  StrictHostKeyChecking accept-new
  BatchMode yes
EOF
ssh_calls_reset
run "$T/hk_cfg" env PATH="$WPATH" "$FERRY" -e "ssh -F $T/cfg_accept" \
    -a "127.0.0.1:$SMALL/" "$T/hk_cfg/"
t_check hostkey_F_config_accept_new ok_compare "$T/hk_cfg" "$SMALL" "$T/hk_cfg" --nsec --no-hardlinks
t_check hostkey_F_config_accept_new_spawned ssh_spawned
t_check hostkey_F_config_accept_new_recorded key_recorded "$T/kh_cfg"
: >"$T/kh_cfg"
run "$T/hk_cfg_b" env PATH="$NOSSH" "$FERRY" -e "ssh -F $T/cfg_accept" --ssh=builtin \
    -a "127.0.0.1:$SMALL/" "$T/hk_cfg_b/"
t_check hostkey_F_config_accept_new_builtin_refused fails_with "$T/hk_cfg_b" 1 \
    'cannot honour .*StrictHostKeyChecking accept-new'
t_check hostkey_F_config_builtin_known_hosts_untouched test ! -s "$T/kh_cfg"

# ------------------------------------------------- spawn and fallback

# --ssh=spawn runs the ssh binary: works with it on PATH (and calls it),
# fails without.
ssh_calls_reset
run "$T/spawn" env PATH="$WPATH" "$FERRY" -e "$E" --ssh=spawn -aH "127.0.0.1:$SMALL/" "$T/spawn/"
t_check spawn_works ok_compare "$T/spawn" "$SMALL" "$T/spawn" --nsec
t_check spawn_calls_ssh ssh_spawned
run "$T/spawn_nossh" env PATH="$NOSSH" "$FERRY" -e "$E" --ssh=spawn -a "127.0.0.1:$SMALL/" "$T/spawn_nossh/"
t_check spawn_without_ssh_fails fails_with "$T/spawn_nossh" nonzero 'ssh'

# ... with an error code, never killed by SIGPIPE: the child that failed
# to exec can be gone before ferry first writes to it. A race, so a few
# tries; rsync exits 12 every time.
spawn_fail_codes() {
    local i rc codes="" bad=0
    for i in $(seq 20); do
        env PATH="$NOSSH" "$FERRY" -e "$E" --ssh=spawn -a "127.0.0.1:$SMALL/" "$T/spawn_nossh/" \
            2>>"$T/spawn_codes.err" </dev/null
        rc=$?
        codes+=" $rc"
        { [ "$rc" = 0 ] || [ "$rc" -ge 128 ]; } && bad=1
    done
    echo "exit codes:$codes"
    return "$bad"
}
t_check spawn_without_ssh_not_killed_by_signal spawn_fail_codes

# The same without the race: a remote shell that answers the version
# exchange (protocol 29 and a checksum seed), then closes the connection
# and lingers. ferry's next write (the filter list) meets a closed peer;
# that must be an error exit (rsync: 10), not death by SIGPIPE.
cat >"$T/closer" <<'EOF'
#!/bin/sh
head -c 4 >/dev/null
printf '\035\000\000\000\001\002\003\004'
exec 0<&- 1>&-
sleep 0.3
EOF
chmod 0755 "$T/closer"
closer_codes() {
    local i rc codes="" bad=0
    for i in $(seq 6); do
        "$FERRY" -e "$T/closer" -a "127.0.0.1:$SMALL/" "$T/closer_dst/" 2>>"$T/closer_codes.err" </dev/null
        rc=$?
        codes+=" $rc"
        { [ "$rc" = 0 ] || [ "$rc" -ge 128 ]; } && bad=1
    done
    echo "exit codes:$codes"
    return "$bad"
}
t_check rsh_closed_early_not_killed_by_signal closer_codes

# auto with a plain ssh command does not call the binary even when it is
# on PATH.
ssh_calls_reset
run "$T/auto_wrap" env PATH="$WPATH" "$FERRY" -e "$E" -aH "127.0.0.1:$SMALL/" "$T/auto_wrap/"
t_check auto_with_ssh_on_path ok_compare "$T/auto_wrap" "$SMALL" "$T/auto_wrap" --nsec
t_check auto_does_not_spawn no_ssh_spawned

# Options the built-in does not know make auto spawn ssh; --ssh=builtin
# refuses them with exit 1.
for opt in "-C" "-o ProxyCommand=none"; do
    tag=${opt//[^A-Za-z]/}
    ssh_calls_reset
    run "$T/fb_$tag" env PATH="$WPATH" "$FERRY" -e "$E $opt" -aH "127.0.0.1:$SMALL/" "$T/fb_$tag/"
    t_check "fallback_${tag}_works" ok_compare "$T/fb_$tag" "$SMALL" "$T/fb_$tag" --nsec
    t_check "fallback_${tag}_spawned_ssh" ssh_spawned
    run "$T/fb_${tag}_nossh" env PATH="$NOSSH" "$FERRY" -e "$E $opt" -a "127.0.0.1:$SMALL/" "$T/fb_${tag}_nossh/"
    t_check "fallback_${tag}_needs_ssh" fails_with "$T/fb_${tag}_nossh" nonzero 'ssh'
    run "$T/fb_${tag}_builtin" env PATH="$NOSSH" "$FERRY" -e "$E $opt" --ssh=builtin \
        -a "127.0.0.1:$SMALL/" "$T/fb_${tag}_builtin/"
    t_check "fallback_${tag}_builtin_refused" fails_with "$T/fb_${tag}_builtin" 1 'ssh=builtin'
done

# ------------------------------------------------------- daemon over ssh

DSRC=$T/dmod
DUP=$T/dup
mkdir -p "$DUP"
cp -a "$SMALL" "$DSRC"
{
    echo "use chroot = no"
    echo "log file = $T/d.log"
    [ "$(id -u)" != 0 ] || printf 'uid = root\ngid = root\n'
    printf '\n[mod]\n  path = %s\n  comment = over ssh\n' "$DSRC"
    # Without chroot a daemon munges uploaded symlinks by default (as rsync).
    printf '\n[up]\n  path = %s\n  read only = no\n  munge symlinks = no\n' "$DUP"
} >"$T/d.conf"

run "$T/d_ferry_pull" env PATH="$NOSSH" "$FERRY" -e "$E" --rsync-path="$RPATH --config=$T/d.conf" \
    -aH 127.0.0.1::mod/ "$T/d_ferry_pull/"
t_check daemon_ssh_ferry_to_ferry_pull ok_compare "$T/d_ferry_pull" "$DSRC" "$T/d_ferry_pull" --nsec
run "$T/d_ferry_push" env PATH="$NOSSH" "$FERRY" -e "$E" --rsync-path="$RPATH --config=$T/d.conf" \
    -aH "$SMALL/" 127.0.0.1::up/p/
t_check daemon_ssh_ferry_to_ferry_push ok_compare "$T/d_ferry_push" "$SMALL" "$DUP/p" --nsec
run "$T/d_ferry_list" env PATH="$NOSSH" "$FERRY" -e "$E" --rsync-path="$RPATH --config=$T/d.conf" \
    127.0.0.1::
list_has_mod() {
    ok "$1" && grep -qE '^mod[[:space:]]+over ssh$' "$1.out" && return 0
    echo "module list lacks mod:"
    show_run "$1"
    return 1
}
t_check daemon_ssh_ferry_list list_has_mod "$T/d_ferry_list"
run "$T/d_rsync_pull" "$RSYNC" -e "$SSH_CMD" --rsync-path="$RPATH --config=$T/d.conf" \
    -aH 127.0.0.1::mod/ "$T/d_rsync_pull/"
t_check daemon_ssh_rsync_to_ferry_pull ok_compare "$T/d_rsync_pull" "$DSRC" "$T/d_rsync_pull" --nsec
run "$T/d_to_rsyncd" env PATH="$NOSSH" "$FERRY" -e "$E" --rsync-path="rsync --config=$T/d.conf" \
    -aH 127.0.0.1::mod/ "$T/d_to_rsyncd/"
t_check daemon_ssh_ferry_to_rsync_pull ok_compare "$T/d_to_rsyncd" "$DSRC" "$T/d_to_rsyncd" --nsec

# ---------------------------------------------------------------- reports

no_reports() {
    local f bad=0
    for f in "$T"/*.err; do
        if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer' "$f"; then
            echo "sanitizer report in $f:"
            grep -m1 -A12 -E 'ERROR: [A-Za-z]*Sanitizer|runtime error' "$f"
            bad=1
        fi
    done
    return "$bad"
}
t_check no_sanitizer_reports no_reports

t_done
