#!/usr/bin/env bash
# kill -9 at random points of 100-file transfers, 50 times over (issue 22,
# "Load and faults"): pushes to and pulls from one `ferry --daemon`, the
# victim in turn the client and the daemon's connection child (the
# receiver or the sender). After every kill:
#   - every file under its final name is either the old or the new one,
#     never a truncated or mixed one (temp file + rename);
#   - temp files: none when the receiver lived (it cleans up, as rsync's
#     does), at most the one it was writing when the receiver was killed
#     (rsync's SIGKILLed receiver leaves that one too);
# every fifth time the next, unkilled run completes and the tree is new;
# and at the end the daemon still serves.
# The kill points come from a seeded generator (STRESS_SEED, default 22),
# so a failing round can be run again. Part of `make stress`.

# shellcheck source=tests/interop/lib.sh
. "$(dirname "$0")/../interop/lib.sh"
t_setup
t_require "$PYTHON" sha256sum

ROUNDS=${STRESS_KILL_ROUNDS:-50}
RANDOM=${STRESS_SEED:-22}
FILES=100
SIZE_KB=32
BWLIMIT=4000 # KiB/s: a whole transfer takes about 0.8 s

mkdir -p "$T/new" "$T/old"
for i in $(seq -w 1 $FILES); do
    head -c $((SIZE_KB * 1024)) /dev/urandom >"$T/new/f$i"
    head -c $((SIZE_KB * 1024)) /dev/urandom >"$T/old/f$i"
done
touch -d @1000000000 "$T"/old/*
(cd "$T/new" && sha256sum f*) >"$T/new.sha"
(cd "$T/old" && sha256sum f*) >"$T/old.sha"
cat "$T/new.sha" "$T/old.sha" | sort >"$T/either.sha"

t_ferryd_start k9 "[src]
path = $T/new
[dst]
path = $T/pushed
read only = no" || { t_fail daemon_start "ferry daemon did not start"; t_done; }

reset_dest() {
    rm -rf "${T:?}/$1"
    cp -a "$T/old" "$T/$1"
}

is_temp() { [[ $1 =~ ^\..+\.[A-Za-z0-9]{6}$ ]]; }

# check_tree DIR MAX_TEMPS -- every final name old or new, all present,
# at most MAX_TEMPS temp files. Prints what is wrong.
check_tree() {
    local dir=$1 max=$2 temps=0 n
    while IFS= read -r n; do
        if is_temp "$n"; then
            temps=$((temps + 1))
        elif [[ ! $n =~ ^f[0-9]+$ ]]; then
            echo "unexpected entry $n"
        fi
    done < <(ls -A "$dir")
    [ "$temps" -le "$max" ] || echo "$temps temp files, at most $max allowed: $(cd "$dir" && echo .?*)"
    n=$(find "$dir" -maxdepth 1 -name 'f*' -type f | wc -l)
    [ "$n" = $FILES ] || echo "$n files under final names, expected $FILES"
    (cd "$dir" && sha256sum f* 2>/dev/null) | sort | comm -23 - "$T/either.sha" | sed 's/^/neither old nor new: /'
}

# daemon_kids -- the listener's connection children (and theirs).
daemon_kids() {
    local c g
    for c in $(pgrep -P "$FERRYD_PID"); do
        echo "$c"
        for g in $(pgrep -P "$c"); do echo "$g"; done
    done
}

# settle PID -- wait (at most 15 s) for the client PID and every daemon
# child to end; false if one is still there.
settle() {
    local i
    for i in $(seq 150); do
        if ! t_pid_alive "$1" && [ -z "$(daemon_kids)" ]; then
            wait "$1" 2>/dev/null
            return 0
        fi
        sleep 0.1
    done
    return 1
}

bad=0 killed_mid=0 recovered=0 temps_left=0
for round in $(seq 1 "$ROUNDS"); do
    kind=$((round % 4)) # 0 push/client 1 push/daemon 2 pull/client 3 pull/daemon
    delay_ms=$((30 + RANDOM % 770))
    if [ $kind -le 1 ]; then
        dest=$T/pushed
        reset_dest pushed
        args=(-rt "--bwlimit=$BWLIMIT" "$T/new/" "rsync://127.0.0.1:$FERRYD_PORT/dst/")
    else
        dest=$T/pulled
        reset_dest pulled
        args=(-rt "--bwlimit=$BWLIMIT" "rsync://127.0.0.1:$FERRYD_PORT/src/" "$T/pulled/")
    fi
    "$FERRY" "${args[@]}" >"$T/run.log" 2>&1 </dev/null &
    pid=$!
    t_track_pid "$pid"
    sleep "$(printf '0.%03d' "$delay_ms")"
    if [ $((kind % 2)) = 0 ]; then
        victim=client
        kill -9 "$pid" 2>/dev/null && killed_mid=$((killed_mid + 1))
    else
        victim=daemon
        kids=$(daemon_kids)
        # shellcheck disable=SC2086
        [ -n "$kids" ] && kill -9 $kids 2>/dev/null && killed_mid=$((killed_mid + 1))
    fi
    if ! settle "$pid"; then
        t_fail "round_$round" "processes still running 15 s after the kill"
        bad=$((bad + 1))
        continue
    fi
    # the receiver is the pushing client's daemon child, or the pulling client
    receiver_killed=0
    { [ $kind = 1 ] || [ $kind = 2 ]; } && receiver_killed=1
    why=$(check_tree "$dest" $receiver_killed)
    temps_left=$((temps_left + $(find "$dest" -maxdepth 1 -name '.f*' | wc -l)))
    if [ -n "$why" ]; then
        t_fail "round_$round" "kill -9 of the $victim after ${delay_ms} ms: $why"
        bad=$((bad + 1))
        continue
    fi
    if [ $((round % 5)) = 0 ]; then
        # the next run completes and makes the tree new
        if "$FERRY" "${args[@]/--bwlimit=$BWLIMIT/--timeout=60}" >"$T/next.log" 2>&1 </dev/null &&
            diff <(cd "$dest" && sha256sum f* | sort) <(sort "$T/new.sha") >/dev/null; then
            recovered=$((recovered + 1))
        else
            t_fail "round_${round}_next_run" "$(tail -n 2 "$T/next.log")"
            bad=$((bad + 1))
        fi
    fi
done
echo "$ROUNDS rounds (seed ${STRESS_SEED:-22}), $killed_mid kills landed on a live process, $temps_left temp files left by killed receivers, $recovered of $((ROUNDS / 5)) next runs complete"
[ "$bad" = 0 ] && t_pass "kill9_${ROUNDS}_rounds_old_or_new"
if "$PYTHON" "$(dirname "$0")/seq_connect.py" "$FERRYD_PORT" 1 >/dev/null &&
    t_pid_alive "$FERRYD_PID"; then
    t_pass daemon_still_serves
else
    t_fail daemon_still_serves "no listing"
fi
t_done
