#!/bin/bash
# A hostile client (evil_client.py, next to this script) against the ferry
# daemon: crafted sum heads on a pull (checksum length beyond the digest,
# zero or oversized block length, negative and huge block counts, a bad
# remainder), "../" and absolute names in a pushed file list, a pushed
# symlink to / (and one climbing out with "..") followed by a file below
# it, requests for module/../../etc/passwd and module/../outside/..., a
# greeting trickled in a byte a second, and garbage after the greeting, in
# the argument list and in place of the multiplexed stream. The module has
# "use chroot = no" and "munge symlinks = no", the setting where the
# daemon's own confinement is all there is.
#
# For every scenario: the connection ends with an error, nothing outside
# the module is read or written (a snapshot of the sandbox around it is
# unchanged, and nothing received holds the outside secret or /etc/passwd),
# and the daemon keeps serving (a real rsync pull right after succeeds).
# Each scenario runs against a real rsync daemon with the same config
# first ("<scenario>_rsync"): that proves the client speaks the protocol
# and that the case is refused by the reference too.
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

EVIL=$_T_LIB_DIR/evil_client.py
SANDBOX=$T/sandbox
MOD=$SANDBOX/mod
OUTSIDE=$SANDBOX/outside
mkdir -p "$MOD/sub" "$OUTSIDE"
head -c 100000 /dev/urandom >"$MOD/file"
echo "kept" >"$MOD/sub/keep.txt"
echo "outside secret 5c1e" >"$OUTSIDE/secret.txt"
echo "canary" >"$SANDBOX/canary.txt"
touch -d @1600000000 "$MOD/file" "$MOD/sub/keep.txt" "$MOD/sub"
HANDSHAKE_LIMIT=4

# The global timeout also bounds the handshake (rsync 3.5: the greeting,
# module line, auth and arguments must arrive within min(timeout, 60) s).
CONF="
timeout = $HANDSHAKE_LIMIT
[m]
    path = $MOD
    read only = no
    use chroot = no
    munge symlinks = no
"
if ! t_rsyncd_start rd34 "$CONF"; then
    t_fail rsyncd_start "real rsync daemon did not start"
    t_done
fi
if ! t_ferryd_start fd34 "$CONF"; then
    t_fail ferryd_start "ferry daemon did not start"
    t_done
fi
t_pass daemons_started

# ------------------------------------------------------------------ helpers

# Names, types, sizes, mtimes, link targets and hashes of everything in the
# sandbox except the module itself.
snapshot() {
    (
        cd "$SANDBOX" || exit 1
        find . -path ./mod -prune -o -print0 | sort -z | xargs -0 stat -c '%n %F %s %Y %N'
        find . -path ./mod -prune -o -type f -print0 | sort -z | xargs -0 md5sum
    )
}

# The module as the tests left it: only what was there at the start.
reset_module() {
    find "$MOD" -mindepth 1 -maxdepth 1 ! -name file ! -name sub -exec rm -rf {} +
}

# evil NAME SIDE SCENARIO -- run the client against SIDE (rsync|ferry);
# the outcome line goes to $T/NAME.result, received data to $T/NAME.recv/.
evil() {
    local name=$1 side=$2 sc=$3 port=$RSYNCD_PORT
    [ "$side" = ferry ] && port=$FERRYD_PORT
    rm -rf "$T/$name.recv" && mkdir -p "$T/$name.recv"
    timeout 60 "$PYTHON" -S "$EVIL" "$port" m "$sc" "$OUTSIDE" "$T/$name.recv" \
        >"$T/$name.out" 2>"$T/$name.err"
    grep '^RESULT ' "$T/$name.out" | tail -n 1 >"$T/$name.result"
    echo "--- $side, $sc: $(cat "$T/$name.result")"
}

# Nothing received may be the outside secret or a passwd file.
nothing_leaked() {
    if grep -rlqE 'outside secret|^root:' "$T/$1.recv"; then
        echo "received outside data:"
        grep -rlE 'outside secret|^root:' "$T/$1.recv"
        return 1
    fi
}

# still_serving SIDE -- a real rsync pull of the module works.
still_serving() {
    local port=$RSYNCD_PORT pid=$RSYNCD_PID dst=$T/serving.$1
    [ "$1" = ferry ] && port=$FERRYD_PORT pid=$FERRYD_PID
    t_pid_alive "$pid" || { echo "the $1 daemon died"; return 1; }
    rm -rf "$dst"
    if ! "$RSYNC" -a "rsync://127.0.0.1:$port/m/file" "rsync://127.0.0.1:$port/m/sub" \
        "$dst/" >"$dst.log" 2>&1; then
        echo "a real rsync pull after the attack failed:"
        cat "$dst.log"
        return 1
    fi
    cmp "$MOD/file" "$dst/file" && cmp "$MOD/sub/keep.txt" "$dst/sub/keep.txt"
}

# attack SIDE SCENARIO EXPECT -- one run: EXPECT is the outcome word
# (complete|error); the sandbox must be unchanged and the daemon serving.
attack() {
    local side=$1 sc=$2 expect=$3 name=$2.$1 before after
    reset_module
    before=$(snapshot)
    evil "$name" "$side" "$sc"
    after=$(snapshot)
    local ok=0
    if ! grep -q "^RESULT $expect" "$T/$name.result"; then
        echo "expected \"$expect\"; client log:"
        tail -n 15 "$T/$name.err"
        ok=1
    fi
    if [ "$before" != "$after" ]; then
        echo "the sandbox outside the module changed:"
        diff <(echo "$before") <(echo "$after")
        ok=1
    fi
    nothing_leaked "$name" || ok=1
    still_serving "$side" || ok=1
    return "$ok"
}

# scenario SCENARIO EXPECT [CHECK] -- against rsync, then ferry; CHECK (a
# function given the run name) adds scenario-specific checks.
scenario() {
    local sc=$1 expect=$2 check=${3:-true} side tag
    for side in rsync ferry; do
        tag=$sc
        [ "$side" = rsync ] && tag=${sc}_rsync
        t_check "$tag" eval "attack $side $sc $expect && $check $sc.$side"
    done
}

# -------------------------------------------------------------- controls

pushed_ok() { cmp -s "$MOD/pushed_ok" <(yes "valid file data from the evil daemon" | head -n 40); }
pulled_ok() { cmp "$MOD/file" "$T/$1.recv/recv.0"; }
scenario push_valid complete pushed_ok
scenario pull_valid complete pulled_ok

# ------------------------------------------------------- crafted sum heads

for sc in pull_s2length pull_s2length_xxh64 pull_blength_zero pull_blength_huge \
    pull_count_negative pull_count_huge pull_remainder; do
    scenario "$sc" error
done

# A count whose sums would take 400 MB, of which 1000 are sent: memory
# must follow what arrives, not what is announced.
hold_rss() {
    local side=$1 pid=$RSYNCD_PID name=hold.$1 kb c total=0 ok=0
    [ "$side" = ferry ] && pid=$FERRYD_PID
    "$PYTHON" -S "$EVIL" "$([ "$side" = ferry ] && echo "$FERRYD_PORT" || echo "$RSYNCD_PORT")" \
        m hold_count_large "$OUTSIDE" >"$T/$name.out" 2>"$T/$name.err" &
    local client=$!
    for _ in $(seq 50); do
        grep -q '^holding' "$T/$name.out" && break
        sleep 0.1
    done
    sleep 0.3
    for c in $(pgrep -P "$pid"); do
        kb=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$c/status" 2>/dev/null)
        echo "connection process $c: VmRSS ${kb:-?} kB"
        total=$((total + ${kb:-0}))
    done
    wait "$client"
    grep -q '^holding' "$T/$name.out" || { echo "the client never got to send the sums"; ok=1; }
    [ "$total" -lt 65536 ] || { echo "RSS $total kB after 1000 sums"; ok=1; }
    still_serving "$side" || ok=1
    return "$ok"
}
t_check hold_count_large_rsync hold_rss rsync
t_check hold_count_large hold_rss ferry

# ----------------------------------------------------- crafted file lists

for sc in push_dotdot push_dotdot_inner push_absolute push_symlink_root push_symlink_rel; do
    scenario "$sc" error
done

# ------------------------------------------------- paths that climb out

# The daemon resolves the argument inside the module (module/../outside
# is the module's own "outside"), finds nothing and says so.
for sc in pull_escape_dotdot pull_escape_passwd pull_escape_deep; do
    scenario "$sc" error
done

# -------------------------------------------------------------- handshake

# Cut off within the handshake limit (plus slack for a loaded machine).
cut_off_in_time() {
    local secs
    secs=$(sed -n 's/.*closed after \([0-9.]*\) s.*/\1/p' "$T/$1.result")
    echo "closed after ${secs:-?} s (limit $HANDSHAKE_LIMIT s)"
    [ -n "$secs" ] && awk -v s="$secs" -v l="$((HANDSHAKE_LIMIT + 2))" 'BEGIN { exit !(s <= l) }'
}
scenario trickle error cut_off_in_time
for sc in garbage_greeting garbage_line garbage_args garbage_mux; do
    scenario "$sc" error
done

# ----------------------------------------------------------- sanitizers

no_reports() {
    local f bad=0
    for f in "$T/fd34.out" "$T"/*.err; do
        [ -f "$f" ] || continue
        if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer' "$f"; then
            echo "sanitizer report in $f:"
            grep -m1 -A12 -E 'ERROR: [A-Za-z]*Sanitizer|runtime error' "$f"
            bad=1
        fi
    done
    t_pid_alive "$FERRYD_PID" || { echo "the daemon died"; bad=1; }
    return "$bad"
}
t_check no_sanitizer_reports no_reports

t_done
