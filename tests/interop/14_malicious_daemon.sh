#!/bin/bash
# A hostile daemon (evil_daemon.py, next to this script) feeds crafted file
# lists and transfer replies to a pulling client (docs/protocol.md 13.1).
# For every scenario the client must exit with the status real rsync 3.5.0
# uses, print an error naming the problem, not crash (no signal, no
# sanitizer report) and write nothing outside its destination: a sandbox
# around the destinations (with a canary file and the "outside" directory
# the crafted names and symlinks point at) must be unchanged, and no temp
# file or unwanted file may be left in the destination.
#
# Each scenario runs real rsync first ("<scenario>_rsync"): that proves the
# daemon speaks the protocol well enough and pins the expected status.
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

EVIL=$_T_LIB_DIR/evil_daemon.py
SANDBOX=$T/sandbox
OUTSIDE=$SANDBOX/outside
mkdir -p "$OUTSIDE"
echo "canary" >"$SANDBOX/canary.txt"
echo "outside canary" >"$OUTSIDE/canary.txt"

# What is outside every destination: names, types, sizes, mtimes, link
# targets and content hashes of the sandbox minus the dest.* directories.
snapshot() {
    (
        cd "$SANDBOX" || exit 1
        find . -path './dest.*' -prune -o -print0 | sort -z |
            xargs -0 stat -c '%n %F %s %Y %N'
        find . -path './dest.*' -prune -o -type f -print0 | sort -z | xargs -0 md5sum
    )
}

# start_evil SCENARIO -- sets EVIL_PORT, EVIL_PID.
start_evil() {
    local _
    for _ in 1 2 3; do
        EVIL_PORT=$(t_free_port) || return 1
        "$PYTHON" "$EVIL" "$EVIL_PORT" "$1" "$OUTSIDE" >>"$T/evil.$1.log" 2>&1 </dev/null &
        EVIL_PID=$!
        t_track_pid "$EVIL_PID"
        t_wait_port "$EVIL_PORT" 10 "$EVIL_PID" && return 0
        _t_kill_pid "$EVIL_PID"
        _t_untrack_pid "$EVIL_PID"
    done
    cat "$T/evil.$1.log" >&2
    return 1
}

stop_evil() {
    _t_kill_pid "$EVIL_PID"
    _t_untrack_pid "$EVIL_PID"
}

# check_run SCENARIO TAG PROG WANT_RC PATTERN KEEP -- run PROG against the
# evil daemon into $SANDBOX/dest.SCENARIO.TAG/ and print why it failed (or
# nothing). KEEP is a regex of the destination entries that may exist
# afterwards (besides "."); PATTERN (grep -Ei) must match stderr when
# WANT_RC is not 0.
check_run() {
    local sc=$1 tag=$2 prog=$3 want=$4 pat=$5 keep=$6 dest log rc before after extra
    dest=$SANDBOX/dest.$sc.$tag
    log=$T/$sc.$tag.log
    mkdir -p "$dest"
    # A symlink planted by an earlier (imagined) run, pointing outside.
    [ "$sc" = symlink_planted ] && ln -s "$OUTSIDE" "$dest/link"
    before=$(snapshot)
    timeout 60 "$prog" -rlt --port="$EVIL_PORT" 127.0.0.1::mod/ "$dest/" \
        >"$log.out" 2>"$log" </dev/null
    rc=$?
    after=$(snapshot)
    {
        echo "== $sc ($tag): exit $rc"
        sed 's/^/   stdout: /' "$log.out"
        sed 's/^/   stderr: /' "$log"
        (cd "$dest" && find . | sort | sed 's/^/   dest: /')
    } >&2
    if [ "$rc" -ge 124 ]; then
        echo "exit $rc: timed out or killed by a signal"
        return
    fi
    if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer' "$log"; then
        echo "sanitizer report: $(grep -m1 -E 'ERROR|runtime error' "$log")"
        return
    fi
    if [ "$before" != "$after" ]; then
        echo "something outside the destination changed: $(diff <(echo "$before") <(echo "$after") | grep '^[<>]' | head -n 3)"
        return
    fi
    if [ "$rc" -ne "$want" ]; then
        echo "exit $rc, expected $want: $(tail -n 2 "$log")"
        return
    fi
    if [ "$want" -ne 0 ] && ! grep -qEi -- "$pat" "$log"; then
        echo "no clear error (stderr does not match /$pat/): $(tail -n 2 "$log")"
        return
    fi
    # Temp files (".name.XXXXXX") or anything not expected in the destination.
    extra=$(cd "$dest" && find . -mindepth 1 | sed 's|^\./||' | grep -vxE "$keep" | head -n 3)
    if [ -n "$extra" ]; then
        echo "unexpected entries left in the destination: $(echo "$extra" | tr '\n' ' ')"
        return
    fi
}

# scenario NAME WANT_RC PATTERN KEEP -- real rsync, then ferry.
scenario() {
    local sc=$1 why
    if ! start_evil "$sc"; then
        t_fail "$sc" "evil daemon did not start"
        return
    fi
    why=$(check_run "$sc" rsync "$RSYNC" "${@:2}")
    if [ -z "$why" ]; then t_pass "${sc}_rsync"; else t_fail "${sc}_rsync" "$why"; fi
    why=$(check_run "$sc" ferry "$FERRY" "${@:2}")
    # A successful run must give what rsync gave.
    if [ -z "$why" ] && [ "$2" -eq 0 ] &&
        ! t_compare "$SANDBOX/dest.$sc.rsync" "$SANDBOX/dest.$sc.ferry" >&2; then
        why="destination differs from real rsync's"
    fi
    if [ -z "$why" ]; then t_pass "$sc"; else t_fail "$sc" "$why"; fi
    stop_evil
    sed 's/^/   /' "$T/evil.$sc.log" >&2
}

NONE='$^' # no entry may be left in the destination

# The control: a valid one-file list and a valid reply.
scenario valid 0 "" 'file'

# --- file list (flist.c: recv_file_entry): "ABORTING due to unsafe
# pathname from sender", RERR_UNSUPPORTED (4).
scenario dotdot 4 "unsafe pathname" "$NONE"
scenario dotdot_inner 4 "unsafe pathname" "$NONE"
scenario absolute 4 "unsafe pathname" "$NONE"

# --- names through symlinks / without a parent (generator.c:
# recv_generator, "ABORTING due to invalid path from sender",
# RERR_PROTOCOL (2)); the symlink itself may have been created.
scenario symlink_dir 2 "link/pwned" 'link'
scenario missing_parent 2 "nodir/pwned" "$NONE"
# A planted destination symlink where the list has a directory: replaced by
# the directory, the file lands inside the destination.
scenario symlink_planted 0 "" 'link|link/pwned'

# --- sum head (io.c: read_sum_head), RERR_PROTOCOL (2).
scenario s2length 2 "checksum length" "$NONE"
scenario blength 2 "block length" "$NONE"
scenario count_negative 2 "checksum count" "$NONE"

# --- tokens (receiver.c: receive_data).
# A literal run of 0x7fffffff bytes: rsync reads it until the stream ends
# (RERR_STREAMIO, 12); no file may appear.
scenario huge_literal 12 "." "$NONE"
# Any positive literal length is legal: a valid file sent as one 17 MiB run.
scenario big_literal_valid 0 "" 'file'
# Block index >= count: "Invalid block index", RERR_PROTOCOL (2).
scenario block_index 2 "block index" "$NONE"
scenario block_index_min 2 "block index" "$NONE"

# --- reply indexes (rsync.c: read_ndx_and_attrs), RERR_PROTOCOL (2).
scenario ndx_out_of_range 2 "index" "$NONE"
scenario ndx_negative 2 "index" "$NONE"
scenario ndx_directory 2 "non-regular" "$NONE"

# --- multiplexing (io.c: read_a_msg): "multiplexing overflow",
# RERR_STREAMIO (12).
scenario big_message 12 "multiplexing overflow" "$NONE"

# --- the stream ends mid-file / before the file checksum: RERR_STREAMIO
# (12), no file under its final name, no temp file.
scenario truncated 12 "unexpectedly closed|connection" "$NONE"
scenario truncated_sum 12 "unexpectedly closed|connection" "$NONE"

t_done
