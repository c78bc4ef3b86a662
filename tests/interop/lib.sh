# shellcheck shell=bash
# Helpers for interop scripts: source this file, call t_setup, report with
# t_pass/t_fail/t_skip (or t_check), end with t_done.
#
# Results are plain lines on stdout -- "PASS name", "FAIL name: reason",
# "SKIP name: reason" -- which tests/run counts. Everything else a script
# prints is only log, shown when the script fails, so helpers must never
# print lines starting with PASS/FAIL/SKIP themselves.
#
# Functions: t_setup t_track_pid t_pid_alive t_free_port t_port_open
# t_wait_port t_rsyncd_start t_rsyncd_stop t_ferryd_start t_ferryd_stop
# t_sshd_start t_mktree t_compare t_pass t_fail t_skip t_check t_require t_done
# t_runas_nobody t_nobody_can_read; run, show_run and ok for scripts that
# record a command's output.
# Variables: T FERRY FERRY_SRC RSYNC PYTHON RSYNCD_PORT RSYNCD_PID SSHD_PORT
# SSHD_PID SSH_CMD T_SKIP_REASON FERRYD_PORT FERRYD_PID AS_NOBODY FERRY_NOBODY.

# Variables set here are read by the scripts that source this file.
# shellcheck disable=SC2034
set -u

_T_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# Standalone runs (bash tests/interop/NN_x.sh) get the same defaults that
# tests/run would pass.
: "${FERRY_SRC:=$(cd "$_T_LIB_DIR/../.." && pwd)}"
: "${FERRY:=$FERRY_SRC/build/release/ferry}"
: "${RSYNC:=rsync}"
# Prefer the distro python: version-manager shims cost ~0.3 s per call.
if [ -z "${PYTHON:-}" ]; then
    PYTHON=python3
    [ -x /usr/bin/python3 ] && PYTHON=/usr/bin/python3
fi
export FERRY FERRY_SRC

T=""
_T_OWNER=""
_T_PIDS=()
_T_EXTRA_DIRS=()
_T_PORTS=" "
T_SKIP_REASON=""

# ---------------------------------------------------------------- results

# The test name is the script's file name, used for whole-script SKIPs.
_t_script_name() { basename "$0" .sh; }

# A reason must stay on its result line, or the runner miscounts.
_t_oneline() { local s=${1//$'\n'/ }; printf '%s' "${s//$'\r'/ }"; }

t_pass() { printf 'PASS %s\n' "$1"; }
t_fail() { printf 'FAIL %s: %s\n' "$1" "$(_t_oneline "${2:-failed}")"; }
t_skip() { printf 'SKIP %s: %s\n' "$1" "$(_t_oneline "${2:-skipped}")"; }

# t_check NAME CMD... -- PASS if CMD exits 0, FAIL otherwise. CMD's output
# stays in the log so a failure can be diagnosed from the runner's tail.
t_check() {
    local name=$1 rc
    shift
    "$@"
    rc=$?
    if [ "$rc" -eq 0 ]; then
        t_pass "$name"
    else
        t_fail "$name" "exit $rc: $*"
    fi
    return "$rc"
}

# Failures are counted by the runner from FAIL lines, so success here just
# means "the script got to its end".
t_done() { exit 0; }

# run OUT CMD... -- run CMD with umask 022 and no stdin, behind the script's
# CLEAN_ENV (an "env -u ..." array) when it defines one; its stdout, stderr
# and exit code go to OUT.out, OUT.err and OUT.rc. A script that needs
# another shape defines its own run after sourcing this file.
run() {
    local out=$1
    shift
    (umask 022 && exec ${CLEAN_ENV[@]+"${CLEAN_ENV[@]}"} "$@") >"$out.out" 2>"$out.err" </dev/null
    echo $? >"$out.rc"
}

# show_run OUT -- the first lines of a run's output and errors, for the log.
show_run() {
    local f
    for f in "$1.out" "$1.err"; do
        [ -s "$f" ] && { echo "--- $f:"; head -n 20 "$f"; }
    done
    return 0
}

# ok OUT -- true when the run exited 0; else say how it ended, for the log.
ok() {
    [ "$(cat "$1.rc")" = 0 ] && return 0
    echo "exit $(cat "$1.rc"), expected 0"
    show_run "$1"
    return 1
}

# t_require CMD... -- skip the whole script if any command is missing; a
# missing tool is an environment problem, not a ferry bug.
t_require() {
    local c
    for c in "$@"; do
        if ! command -v "$c" >/dev/null 2>&1; then
            t_skip "$(_t_script_name)" "required command not found: $c"
            exit 0
        fi
    done
}

# ---------------------------------------------------------- setup/cleanup

t_setup() {
    T=$(mktemp -d "${TMPDIR:-/tmp}/ferry-test.XXXXXX") || {
        t_fail "$(_t_script_name)" "mktemp failed"
        exit 1
    }
    export T
    _T_OWNER=$BASHPID
    trap _t_cleanup EXIT
    # Without these a signal (e.g. from `timeout`) would skip the EXIT trap
    # and leave daemons running.
    trap 'exit 129' HUP
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

_t_cleanup() {
    local pid d
    # A forked child that has not exec'd yet still has our traps; if it is
    # signalled in that window it must not tear down the test.
    [ "$BASHPID" = "$_T_OWNER" ] || return 0
    for pid in "${_T_PIDS[@]}"; do
        _t_kill_pid "$pid"
    done
    _T_PIDS=()
    for d in "${_T_EXTRA_DIRS[@]}"; do
        rm -rf "$d"
    done
    _T_EXTRA_DIRS=()
    [ -n "$T" ] && [ -d "$T" ] || return 0
    if [ "${KEEP_TMP:-0}" = 1 ]; then
        echo "KEEP_TMP=1: leaving $T" >&2
    else
        # Read-only dirs from a test tree would make rm fail for non-root.
        chmod -R u+rwX "$T" 2>/dev/null
        rm -rf "$T"
    fi
}

t_track_pid() { _T_PIDS+=("$1"); }

_t_untrack_pid() {
    local p keep=()
    for p in "${_T_PIDS[@]}"; do
        [ "$p" = "$1" ] || keep+=("$p")
    done
    _T_PIDS=("${keep[@]}")
}

# t_pid_alive PID -- true while PID runs. A zombie counts as dead: kill -0
# succeeds on one, which would make "is it gone?" checks lie.
t_pid_alive() {
    local st
    st=$(sed -n 's/^.*) \(.\).*/\1/p' "/proc/$1/stat" 2>/dev/null)
    [ -n "$st" ] && [ "$st" != Z ]
}

# TERM, give it 2 s to exit cleanly, then KILL; reap it if it is our child.
_t_kill_pid() {
    local pid=$1 i
    kill -TERM "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }
    for i in $(seq 20); do
        t_pid_alive "$pid" || break
        sleep 0.1
    done
    t_pid_alive "$pid" && kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    return 0
}

# -------------------------------------------------------- another user

# t_runas_nobody -- prepare to run programs as nobody: sets AS_NOBODY (a
# setpriv prefix) and FERRY_NOBODY, a copy of $FERRY in a fresh 0755
# directory under /tmp (removed with $T). A test must run that copy, never
# $FERRY: the clone, and so the build, may lie where nobody cannot go (a
# clone under a 0700 /root gives exit 126). Returns 2 with T_SKIP_REASON set
# when we are not root, setpriv is missing, or nobody still cannot run it.
# Whether nobody can reach the test's own files (under $T, so under
# ${TMPDIR:-/tmp}) is for the caller to check: t_nobody_can_read.
t_runas_nobody() {
    local d
    AS_NOBODY=()
    FERRY_NOBODY=""
    if [ "$(id -u)" != 0 ]; then
        T_SKIP_REASON="only root can switch to nobody"
        return 2
    fi
    if ! command -v setpriv >/dev/null 2>&1; then
        T_SKIP_REASON="setpriv not found"
        return 2
    fi
    d=$(mktemp -d /tmp/ferry-nobody.XXXXXX) || {
        T_SKIP_REASON="mktemp under /tmp failed"
        return 2
    }
    _T_EXTRA_DIRS+=("$d")
    if ! { chmod 0755 "$d" && cp "$FERRY" "$d/ferry" && chmod 0755 "$d/ferry"; }; then
        T_SKIP_REASON="could not copy $FERRY to $d"
        return 2
    fi
    AS_NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
    if ! "${AS_NOBODY[@]}" "$d/ferry" --version >/dev/null 2>&1; then
        T_SKIP_REASON="nobody cannot run $d/ferry"
        AS_NOBODY=()
        return 2
    fi
    FERRY_NOBODY=$d/ferry
}

# t_nobody_can_read PATH -- after t_runas_nobody: true if nobody can read
# PATH (the test tree lies under ${TMPDIR:-/tmp}, which may be private).
t_nobody_can_read() {
    "${AS_NOBODY[@]}" test -r "$1"
}

# ------------------------------------------------------------------ ports

# True if something accepts TCP connections on 127.0.0.1:PORT.
t_port_open() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# t_free_port -- print a free TCP port on 127.0.0.1. The kernel picks it
# (bind to port 0); we retry if it is already listening or was handed out
# earlier in this script, since the port is only free until someone binds.
t_free_port() {
    local i port
    for i in $(seq 20); do
        port=$("$PYTHON" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()') || return 1
        case $_T_PORTS in *" $port "*) continue ;; esac
        t_port_open "$port" && continue
        _T_PORTS+="$port "
        echo "$port"
        return 0
    done
    echo "t_free_port: no free port found" >&2
    return 1
}

# t_wait_port PORT SECONDS [PID] -- wait until PORT accepts connections.
# Gives up early if PID dies (e.g. it lost the race for the port).
t_wait_port() {
    local port=$1 secs=$2 pid=${3:-} i
    for i in $(seq $((secs * 10))); do
        if [ -n "$pid" ] && ! t_pid_alive "$pid"; then
            return 1
        fi
        if t_port_open "$port"; then
            # Someone else may own the port; only count it if PID survived.
            [ -z "$pid" ] || t_pid_alive "$pid"
            return
        fi
        sleep 0.1
    done
    return 1
}

# ----------------------------------------------------------- rsync daemon

_t_rsyncd_conf() {
    local name=$1 body=$2
    cat <<EOF
# generated by tests/interop/lib.sh
pid file = $T/$name.pid
lock file = $T/$name.lock
log file = $T/$name.log
use chroot = no
# Tests compare symlink targets with the source; a module that wants
# munging says so itself.
munge symlinks = no
EOF
    # A root daemon would otherwise drop to "nobody" and fail to read the
    # test trees.
    if [ "$(id -u)" = 0 ]; then
        printf 'uid = root\ngid = root\n'
    fi
    printf '\n%s\n' "$body"
}

# t_rsyncd_start NAME CONF_BODY -- run a real rsync daemon with CONF_BODY
# (module sections) on a free port; sets RSYNCD_PORT and RSYNCD_PID.
t_rsyncd_start() {
    local name=$1 body=$2 conf="$T/$1.conf" port pid _
    _t_rsyncd_conf "$name" "$body" >"$conf"
    for _ in 1 2 3; do
        port=$(t_free_port) || return 1
        rm -f "$T/$name.pid"
        "$RSYNC" --daemon --no-detach --address=127.0.0.1 --port="$port" \
            --config="$conf" >>"$T/$name.out" 2>&1 </dev/null &
        pid=$!
        t_track_pid "$pid"
        if t_wait_port "$port" 10 "$pid"; then
            RSYNCD_PORT=$port
            RSYNCD_PID=$pid
            return 0
        fi
        # Most likely the port was taken between picking and binding.
        _t_kill_pid "$pid"
        _t_untrack_pid "$pid"
    done
    echo "t_rsyncd_start $name: daemon did not come up; its output:" >&2
    tail -n 20 "$T/$name.out" "$T/$name.log" >&2 2>/dev/null
    return 1
}

# t_rsyncd_stop [PID] -- stop the daemon (default: the last one started).
t_rsyncd_stop() {
    local pid=${1:-${RSYNCD_PID:-}}
    [ -n "$pid" ] || return 0
    _t_kill_pid "$pid"
    _t_untrack_pid "$pid"
    ! t_pid_alive "$pid"
}

# ------------------------------------------------------------------- sshd

_t_sshd_configs() {
    local d=$1 port=$2
    cat >"$d/sshd_config" <<EOF
ListenAddress 127.0.0.1
Port $port
HostKey $d/host_key
PidFile $d/sshd.pid
AuthorizedKeysFile $d/authorized_keys
UsePAM no
StrictModes no
PermitRootLogin yes
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
LogLevel VERBOSE
EOF
    # Pin the host key so we can only ever talk to our own sshd.
    printf '[127.0.0.1]:%s %s\n' "$port" "$(cut -d' ' -f1-2 "$d/host_key.pub")" \
        >"$d/known_hosts"
    cat >"$T/ssh_config" <<EOF
Host *
  Port $port
  User $(id -un)
  IdentityFile $d/client_key
  IdentitiesOnly yes
  UserKnownHostsFile $d/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  BatchMode yes
  ConnectTimeout 10
  LogLevel ERROR
EOF
}

# t_sshd_start -- run a private sshd on 127.0.0.1; sets SSHD_PORT, SSHD_PID
# and SSH_CMD (use as rsync -e "$SSH_CMD"; breaks if $T contains spaces).
# Returns 2 with T_SKIP_REASON set when ssh tools are missing.
t_sshd_start() {
    local sshd d="$T/ssh" port pid _
    sshd=$(command -v sshd || { [ -x /usr/sbin/sshd ] && echo /usr/sbin/sshd; })
    if [ -z "$sshd" ] || ! command -v ssh >/dev/null || ! command -v ssh-keygen >/dev/null; then
        T_SKIP_REASON="sshd, ssh or ssh-keygen not installed"
        return 2
    fi
    mkdir -p "$d" && chmod 700 "$d"
    ssh-keygen -q -t ed25519 -N '' -C ferry-test-host -f "$d/host_key" || return 1
    ssh-keygen -q -t ed25519 -N '' -C ferry-test-client -f "$d/client_key" || return 1
    cp "$d/client_key.pub" "$d/authorized_keys"
    # sshd refuses to start as root without its privilege-separation dir.
    [ "$(id -u)" != 0 ] || [ -d /run/sshd ] || mkdir -m 0755 /run/sshd
    for _ in 1 2 3; do
        port=$(t_free_port) || return 1
        _t_sshd_configs "$d" "$port"
        "$sshd" -t -f "$d/sshd_config" || return 1
        # sshd re-execs itself, so it needs an absolute path.
        "$sshd" -D -e -f "$d/sshd_config" >>"$T/sshd.log" 2>&1 </dev/null &
        pid=$!
        t_track_pid "$pid"
        if t_wait_port "$port" 10 "$pid"; then
            SSHD_PORT=$port
            SSHD_PID=$pid
            SSH_CMD="ssh -F $T/ssh_config -p $port"
            if $SSH_CMD 127.0.0.1 true </dev/null; then
                return 0
            fi
            echo "t_sshd_start: sshd runs but login fails; sshd log:" >&2
            tail -n 20 "$T/sshd.log" >&2
            return 1
        fi
        _t_kill_pid "$pid"
        _t_untrack_pid "$pid"
    done
    echo "t_sshd_start: sshd did not come up:" >&2
    tail -n 20 "$T/sshd.log" >&2
    return 1
}

# -------------------------------------------------------------- test trees

# t_mktree DIR -- build the standard varied tree in DIR (created).
t_mktree() {
    local d=$1
    mkdir -p "$d" || return 1
    # Fixed umask so the default modes (0644/0755) don't depend on the caller.
    (umask 022 && _t_mktree_files "$d" && _t_mktree_special "$d" && _t_mktree_times "$d")
}

_t_mktree_files() {
    local d=$1
    mkdir -p "$d/sub/dir/deep" "$d/sub/emptyleaf" "$d/emptydir" "$d/secret"
    : >"$d/empty"
    printf 'x' >"$d/one"
    head -c 700 /dev/urandom | base64 -w 76 | head -c 700 >"$d/small.txt"
    head -c 4096 /dev/urandom >"$d/page.bin"
    # Compressible text, so compression paths get real work to do.
    seq 1 100000 | head -c 102400 >"$d/sub/medium.txt"
    head -c 1048576 /dev/urandom >"$d/big.bin"
    # Not a multiple of any block size, so the last block is a short one.
    head -c $((5 * 1048576 + 12345)) /dev/urandom >"$d/sub/huge.bin"
    echo "deep file" >"$d/sub/dir/deep/file.txt"
    echo "secret" >"$d/secret/inside.txt"
}

_t_mktree_special() {
    local d=$1
    echo "space" >"$d/with space.txt"
    echo "newline" >"$d/new"$'\n'"line"
    echo "unicode" >"$d/ünïcødé.txt"
    echo "dash" >"$d/-leading-dash"
    ln -s small.txt "$d/link_file"
    ln -s does/not/exist "$d/link_dangling"
    ln -s sub/dir "$d/link_dir"
    # A hard-link pair across directories.
    echo "hard linked" >"$d/hard_a"
    ln "$d/hard_a" "$d/sub/hard_b"
    echo "private" >"$d/private.txt"
    printf '#!/bin/sh\necho hi\n' >"$d/script.sh"
    echo "read only" >"$d/readonly.txt"
    chmod 0600 "$d/private.txt"
    chmod 0755 "$d/script.sh"
    chmod 0444 "$d/readonly.txt"
    chmod 0700 "$d/secret"
}

# Give every entry its own mtime with a nanosecond part; directories last and
# deepest first, since creating entries inside a dir bumps its mtime.
_t_mktree_times() {
    local d=$1 base=1600000000 i=0 p
    while IFS= read -r -d '' p; do
        i=$((i + 1))
        touch -h -d "@$((base + i * 3600)).$(printf '%09d' $((i * 7654321 % 1000000000)))" "$p" || return 1
    done < <(find "$d" -mindepth 1 ! -type d -print0 | sort -z)
    while IFS= read -r -d '' p; do
        i=$((i + 1))
        touch -d "@$((base + i * 3600)).$(printf '%09d' $((i * 7654321 % 1000000000)))" "$p" || return 1
    done < <(find "$d" -depth -type d -print0)
}

# t_compare A B [--nsec] [--no-times] [--no-dir-times] [...] -- see
# treecmp.py --help. Prints the first differences and returns non-zero.
t_compare() {
    "$PYTHON" "$_T_LIB_DIR/treecmp.py" "$@"
}

# ----------------------------------------------------------- ferry daemon

# t_ferryd_start NAME CONF_BODY -- run `$FERRY --daemon` with CONF_BODY
# (module sections) on a free port, with the same global settings as
# t_rsyncd_start; sets FERRYD_PORT and FERRYD_PID. Its stdout/stderr (where
# sanitizer reports of the per-connection children land) go to $T/NAME.out.
t_ferryd_start() {
    local name=$1 body=$2 conf="$T/$1.conf" port pid _
    _t_rsyncd_conf "$name" "$body" >"$conf"
    for _ in 1 2 3; do
        port=$(t_free_port) || return 1
        rm -f "$T/$name.pid"
        "$FERRY" --daemon --no-detach --address=127.0.0.1 --port="$port" \
            --config="$conf" >>"$T/$name.out" 2>&1 </dev/null &
        pid=$!
        t_track_pid "$pid"
        if t_wait_port "$port" 10 "$pid"; then
            FERRYD_PORT=$port
            FERRYD_PID=$pid
            return 0
        fi
        _t_kill_pid "$pid"
        _t_untrack_pid "$pid"
    done
    echo "t_ferryd_start $name: daemon did not come up; its output:" >&2
    tail -n 20 "$T/$name.out" "$T/$name.log" >&2 2>/dev/null
    return 1
}

# t_ferryd_stop [PID] -- stop the ferry daemon (default: the last started).
t_ferryd_stop() {
    local pid=${1:-${FERRYD_PID:-}}
    [ -n "$pid" ] || return 0
    _t_kill_pid "$pid"
    _t_untrack_pid "$pid"
    ! t_pid_alive "$pid"
}

# ------------------------------------------------------------- extra sshd

# t_sshd_start_extra NAME [KEY=VALUE...] -- after t_sshd_start: run another
# sshd with the same keys and sshd_config, plus each KEY=VALUE as an sshd -o
# option (these win over the config file, e.g. LogLevel=DEBUG1 or
# Ciphers=aes128-ctr), on a free port, logging to $T/NAME.log. Its host key
# is pinned in the same known_hosts. Sets SSHD_EXTRA_PORT and SSHD_EXTRA_PID.
t_sshd_start_extra() {
    local name=$1 d="$T/ssh" sshd port pid o _ args=()
    shift
    for o in "$@"; do args+=(-o "$o"); done
    sshd=$(command -v sshd || { [ -x /usr/sbin/sshd ] && echo /usr/sbin/sshd; })
    if [ -z "$sshd" ] || [ ! -f "$d/sshd_config" ]; then
        echo "t_sshd_start_extra $name: no sshd, or t_sshd_start did not run" >&2
        return 1
    fi
    for _ in 1 2 3; do
        port=$(t_free_port) || return 1
        args+=(-o "Port=$port" -o "PidFile=$T/$name.pid")
        "$sshd" -t -f "$d/sshd_config" "${args[@]}" || return 1
        "$sshd" -D -e -f "$d/sshd_config" "${args[@]}" >>"$T/$name.log" 2>&1 </dev/null &
        pid=$!
        t_track_pid "$pid"
        if t_wait_port "$port" 10 "$pid"; then
            printf '[127.0.0.1]:%s %s\n' "$port" "$(cut -d' ' -f1-2 "$d/host_key.pub")" \
                >>"$d/known_hosts"
            SSHD_EXTRA_PORT=$port
            SSHD_EXTRA_PID=$pid
            return 0
        fi
        _t_kill_pid "$pid"
        _t_untrack_pid "$pid"
        # Drop this try's Port/PidFile (sshd keeps the first value given).
        args=("${args[@]:0:${#args[@]}-4}")
    done
    echo "t_sshd_start_extra $name: sshd did not come up:" >&2
    tail -n 20 "$T/$name.log" >&2
    return 1
}

# ------------------------------------------------------------ shared helpers

# t_fakessh PATH -- write a stand-in for ssh at PATH: it drops ssh's own
# options and the host name and runs the remote command locally, so the
# remote-shell path (rsync -e RSH host:path) is tested without an sshd.
t_fakessh() {
    cat >"$1" <<'EOF'
#!/bin/sh
while [ $# -gt 0 ]; do
    case $1 in
    -l | -p | -o | -i | -F) shift 2 ;;
    -*) shift ;;
    *) break ;;
    esac
done
shift
exec sh -c "$*"
EOF
    chmod 0755 "$1"
}

# t_no_sanitizer_reports FILE... -- fail, showing the first report, if any
# existing FILE holds an ASan/UBSan/LSan report (server-side children and
# daemons write them where no client sees them).
t_no_sanitizer_reports() {
    local f bad=0
    for f in "$@"; do
        [ -f "$f" ] || continue
        if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer' "$f"; then
            echo "sanitizer report in $f:"
            grep -m1 -A12 -E 'ERROR: [A-Za-z]*Sanitizer|runtime error' "$f"
            bad=1
        fi
    done
    return "$bad"
}
