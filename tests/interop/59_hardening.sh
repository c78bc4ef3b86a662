#!/bin/bash
# Hardening fixes of issue 22, each against the real rsync 3.5.0 where it
# has the behaviour to match:
#   flood_*    a pulling client sends 262,144 weak sums crafted to collide
#              in the unkeyed table ferry once used: the daemon answers at
#              once (it took 21 s) and keeps serving.
#   seed_*     the checksum seed is not rsync's guessable time ^ pid << 6.
#   iotimeout_* a daemon's MSG_IO_TIMEOUT: a ferry daemon with a module
#              timeout sends it as rsyncd does, and a ferry client takes a
#              shorter one (evil_daemon.py then goes silent) as rsync does.
#   hosts_*    a malformed "hosts allow/deny" entry (127.0.0.1/33): rsyncd
#              logs "malformed mask in ..." at each connection; ferryd says
#              so with file:line when it loads the config, and admits and
#              refuses exactly as rsyncd.
#   dirlinks_* -K with destination symlinks to directories: one leading out
#              of the destination (../outside, or absolute even to inside)
#              is kept and nothing goes through it (exit 23, "failed to
#              stat ... Too many levels of symbolic links"), one staying
#              inside is followed; locally, and from a server that planted
#              the link in a first run and sends link/ as a directory in a
#              second (evil_daemon.py symlink_planted).
#   rmsrc_*    -R --remove-source-files, where another user swaps an implied
#              directory for a link to a victim's directory between the
#              send and the removal (swap_proxy.py makes the race certain):
#              rsync refuses ("sender failed to secure-open-parent"), the
#              victim's file stays; ferry must do the same.
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317
set -u
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON"
t_setup

EVIL=$_T_LIB_DIR/evil_client.py
MOD=$T/mod
mkdir -p "$MOD"
head -c 300000 /dev/urandom >"$MOD/file"

CONF="
[m]
    path = $MOD
    read only = no
"
t_rsyncd_start rd59 "$CONF" || t_fail rsyncd_start "real rsync daemon did not start"
t_ferryd_start fd59 "$CONF" || t_fail ferryd_start "ferry daemon did not start"

# ------------------------------------------------------------ hash flooding

# evil PORT SCENARIO: run the hostile client; its log in $T/evil.err, the
# result line on stdout, the seconds it took in $T/evil.secs.
evil() {
    local t0 t1
    t0=$(date +%s%N)
    "$PYTHON" "$EVIL" "$1" m "$2" "$T/outside" 2>"$T/evil.err" | tail -n 1
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000000)) >"$T/evil.secs"
}

# The reference takes the crafted sums in its stride: the client is right.
r=$(evil "$RSYNCD_PORT" pull_flood)
t_check flood_rsync_answers [ "$r" = "RESULT complete" ]

r=$(evil "$FERRYD_PORT" pull_flood)
ms=$(cat "$T/evil.secs")
echo "ferry answered the crafted sums in $ms ms: $r"
t_check flood_ferry_answers [ "$r" = "RESULT complete" ]
# Most of this is the client's Python; the unkeyed table took 21 s here.
t_check flood_ferry_fast [ "$ms" -lt 5000 ]
r=$(evil "$FERRYD_PORT" pull_valid)
t_check flood_ferry_still_serves [ "$r" = "RESULT complete" ]

# ------------------------------------------------------------------ seed

# seed_guessable LOG T0 T1: is the seed the client saw (in $T/evil.err)
# time ^ pid << 6 for a pid in the daemon's LOG and a second around
# [T0, T1]? 0 yes, 1 no, 2 no seed seen.
seed_guessable() {
    local log=$1 t0=$2 t1=$3 seed pid t
    seed=$(sed -n 's/^evil_client: seed 0x\([0-9a-f]*\)$/\1/p' "$T/evil.err" | tail -n 1)
    [ -n "$seed" ] || { echo "no seed in the client's log"; return 2; }
    for pid in $(sed -n 's/^.* \[\([0-9]*\)\] .*$/\1/p' "$log" | sort -u); do
        for ((t = t0 - 1; t <= t1 + 1; t++)); do
            if [ $(((t ^ (pid << 6)) & 0xFFFFFFFF)) = $((16#$seed)) ]; then
                echo "seed $seed = time $t ^ pid $pid << 6"
                return 0
            fi
        done
    done
    echo "seed $seed is none of time ^ pid << 6"
    return 1
}

# seed_of PORT LOG: pull once; the status of seed_guessable.
seed_of() {
    local t0 t1 r
    t0=$(date +%s)
    r=$(evil "$1" pull_valid)
    t1=$(date +%s)
    [ "$r" = "RESULT complete" ] || { echo "pull: $r"; return 2; }
    seed_guessable "$2" "$t0" "$t1"
}

# The reference's seed is guessable: this proves the check finds one.
seed_of "$RSYNCD_PORT" "$T/rd59.log"
t_check seed_rsync_is_time_pid [ $? = 0 ]
seed_of "$FERRYD_PORT" "$T/fd59.log"
t_check seed_ferry_is_random [ $? = 1 ]
# --checksum-seed=0 asks for the default: rsyncd's guessable one, ours random
export EVIL_EXTRA_ARG=--checksum-seed=0
seed_of "$RSYNCD_PORT" "$T/rd59.log"
t_check seed0_rsync_is_time_pid [ $? = 0 ]
seed_of "$FERRYD_PORT" "$T/fd59.log"
t_check seed0_ferry_is_random [ $? = 1 ]
t_check seed0_ferry_not_zero [ "$(sed -n 's/^evil_client: seed //p' "$T/evil.err")" != 0x0 ]
unset EVIL_EXTRA_ARG

# ------------------------------------------------------------ io timeout

TCONF="
[m]
    path = $MOD
    timeout = 5
"
t_rsyncd_start rd59t "$TCONF" || t_fail rsyncd_start "real rsync daemon did not start"
RT_PORT=$RSYNCD_PORT
t_ferryd_start fd59t "$TCONF" || t_fail ferryd_start "ferry daemon did not start"
FT_PORT=$FERRYD_PORT

# rsync -vv says when it takes the server's timeout.
told() { # PORT CLIENT
    rm -rf "$T/tdst"
    "$2" -r -vv --timeout=30 "rsync://127.0.0.1:$1/m/" "$T/tdst/" 2>&1 |
        grep -c '^Setting --timeout=5 to match server$'
}
t_check iotimeout_rsyncd_sends [ "$(told "$RT_PORT" "$RSYNC")" = 1 ]
t_check iotimeout_ferryd_sends [ "$(told "$FT_PORT" "$RSYNC")" = 1 ]
t_check iotimeout_ferry_takes_rsyncd [ "$(told "$RT_PORT" "$FERRY")" = 1 ]
# a longer one than --timeout is not taken
longer() {
    rm -rf "$T/tdst"
    "$FERRY" -r -vv --timeout=3 "rsync://127.0.0.1:$FT_PORT/m/" "$T/tdst/" 2>&1 |
        grep -c 'match server'
}
t_check iotimeout_longer_ignored [ "$(longer)" = 0 ]

# A daemon that says 2 s and then goes silent: the client gives up after
# about 2 s with code 30 (the daemon waits 15 s for it to).
EPORT=$(t_free_port)
"$PYTHON" "$_T_LIB_DIR/evil_daemon.py" "$EPORT" io_timeout "$T/outside" 2>"$T/evil_daemon.err" &
t_track_pid $!
t_wait_port "$EPORT" 10 $! || t_fail evil_daemon_start "evil_daemon.py did not listen"
silent() { # CLIENT: "rc ms"
    local t0 t1 rc
    rm -rf "$T/tdst"
    t0=$(date +%s%N)
    "$1" -r --timeout=60 "rsync://127.0.0.1:$EPORT/m/" "$T/tdst/" >"$T/silent.out" 2>&1
    rc=$?
    t1=$(date +%s%N)
    cat "$T/silent.out"
    echo "$rc $(((t1 - t0) / 1000000))" >"$T/silent.res"
}
silent "$RSYNC"
read -r rc ms <"$T/silent.res"
echo "rsync: rc $rc after $ms ms"
t_check iotimeout_rsync_gives_up [ "$rc" = 30 ]
silent "$FERRY"
read -r rc ms <"$T/silent.res"
echo "ferry: rc $rc after $ms ms"
t_check iotimeout_ferry_gives_up [ "$rc" = 30 ]
t_check iotimeout_ferry_within_server_limit [ "$ms" -lt 12000 ]

# ------------------------------------------------------- hosts allow/deny

HCONF="
[m]
    path = $MOD
    hosts allow = 127.0.0.1/33
    hosts deny = 10.0.0.0/8
[n]
    path = $MOD
    hosts allow = 10.0.0.0/8 127.0.0.1/33
"
t_rsyncd_start rd59h "$HCONF" || t_fail rsyncd_start "real rsync daemon did not start"
RH_PORT=$RSYNCD_PORT
t_ferryd_start fd59h "$HCONF" || t_fail ferryd_start "ferry daemon did not start"
FH_PORT=$FERRYD_PORT
cat "$T/fd59h.out"
# the line of each "hosts allow" with the bad entry in the generated config
lines=$(grep -n 'hosts allow = .*127.0.0.1/33' "$T/fd59h.conf" | cut -d: -f1 | tr '\n' ' ')
want=""
for l in $lines; do
    want+="ferry: warning: malformed mask in 127.0.0.1/33 (\"hosts allow\" at $T/fd59h.conf:$l): the entry matches no client"$'\n'
done
t_check hosts_ferryd_warns_at_load [ "$(grep 'malformed' "$T/fd59h.out")"$'\n' = "$want" ]
# m: allow matches nobody, deny does not match 127.0.0.1 -> admitted;
# n: allow only, matches nobody -> refused. rsync first, then ferry.
reach() { # PORT MODULE: exit code of a listing
    "$RSYNC" "rsync://127.0.0.1:$1/$2/" >/dev/null 2>&1
    echo $?
}
r_m=$(reach "$RH_PORT" m)
r_n=$(reach "$RH_PORT" n)
echo "rsyncd: m $r_m, n $r_n"
t_check hosts_rsyncd_logs_mask grep -q 'malformed mask in 127.0.0.1/33' "$T/rd59h.log"
t_check hosts_same_admission_m [ "$(reach "$FH_PORT" m)" = "$r_m" ]
t_check hosts_same_admission_n [ "$(reach "$FH_PORT" n)" = "$r_n" ]

# ------------------------------------------------------- -K out of the dest

KT=$T/k
# kdest NAME: a destination with three directory links
kdest() {
    rm -rf "${KT:?}/$1" "$KT/outside"
    mkdir -p "$KT/$1/real" "$KT/$1/a" "$KT/outside"
    ln -s ../outside "$KT/$1/link"
    ln -s "$KT/$1/real" "$KT/$1/abs"
    ln -s ../real "$KT/$1/a/rel"
}
mkdir -p "$KT/src/link" "$KT/src/abs" "$KT/src/a/rel"
echo escape >"$KT/src/link/f"
echo escape >"$KT/src/abs/f"
echo inside >"$KT/src/a/rel/g"
# klocal CLIENT: the exit code; the destination as it ends in $KT/CLIENT.tree
klocal() {
    local name rc
    name=$(basename "$1")
    kdest "d.$name"
    "$1" -rK "$KT/src/" "$KT/d.$name/" >"$KT/$name.out" 2>&1
    rc=$?
    cat "$KT/$name.out"
    (cd "$KT" && find outside "d.$name" -printf '%y %p %l\n' | sed "s/d\.$name/D/g" | sort) \
        >"$KT/$name.tree"
    echo "$rc"
}
r_rc=$(klocal "$RSYNC" | tail -n 1)
f_rc=$(klocal "$FERRY" | tail -n 1)
cat "$KT/ferry.out"
t_check dirlinks_local_rsync_refuses [ "$r_rc" = 23 ]
t_check dirlinks_local_ferry_refuses [ "$f_rc" = 23 ]
t_check dirlinks_local_nothing_outside [ -z "$(ls -A "$KT/outside")" ]
t_check dirlinks_local_same_tree diff "$KT/rsync.tree" "$KT/ferry.tree"
t_check dirlinks_local_same_errors diff \
    <(grep -o 'failed to stat "[^"]*": .*' "$KT/rsync.out" | sed 's/d\.rsync/D/') \
    <(grep -o 'failed to stat "[^"]*": .*' "$KT/ferry.out" | sed 's/d\.ferry/D/')

# --delete does not reach through the link either
kdelete() {
    kdest "del"
    echo victim >"$KT/outside/v"
    "$1" -rK --delete "$KT/src/" "$KT/del/"
    [ "$(cat "$KT/outside/v")" = victim ]
}
t_check dirlinks_delete_rsync_keeps_outside kdelete "$RSYNC"
t_check dirlinks_delete_ferry_keeps_outside kdelete "$FERRY"

# A hostile server, two runs: a real rsync daemon's module holds the link
# (any server may send one), then evil_daemon.py sends "link" as a
# directory with link/pwned in it.
PMOD=$T/plant
mkdir -p "$PMOD"
ln -s ../outside "$PMOD/link"
t_rsyncd_start rd59k "
[m]
    path = $PMOD
" || t_fail rsyncd_start "real rsync daemon did not start"
KPORT=$RSYNCD_PORT
EKPORT=$(t_free_port)
"$PYTHON" "$_T_LIB_DIR/evil_daemon.py" "$EKPORT" symlink_planted "$KT/outside" \
    2>"$T/evil_planted.err" &
t_track_pid $!
t_wait_port "$EKPORT" 10 $! || t_fail evil_daemon_start "evil_daemon.py did not listen"
# kremote CLIENT: both runs; "exit1 exit2"
kremote() {
    local d rc1 rc2
    d=$KT/r.$(basename "$1")
    rm -rf "$d" "$KT/outside"
    mkdir -p "$d" "$KT/outside"
    "$1" -rl "rsync://127.0.0.1:$KPORT/m/" "$d/" 2>&1
    rc1=$?
    "$1" -rlK "rsync://127.0.0.1:$EKPORT/m/" "$d/" 2>&1
    rc2=$?
    echo "$rc1 $rc2"
}
r_rcs=$(kremote "$RSYNC" | tail -n 1)
echo "rsync: $r_rcs"
t_check dirlinks_remote_rsync_nothing_outside [ -z "$(ls -A "$KT/outside")" ]
kremote "$FERRY" >"$KT/remote.ferry.out"
cat "$KT/remote.ferry.out"
f_rcs=$(tail -n 1 "$KT/remote.ferry.out")
t_check dirlinks_remote_ferry_nothing_outside [ -z "$(ls -A "$KT/outside")" ]
t_check dirlinks_remote_same_exits [ "$f_rcs" = "$r_rcs" ]
t_check dirlinks_remote_link_kept [ -L "$KT/r.ferry/link" ]

# ------------------------------------ -R --remove-source-files through a link

RT=$T/rm
# rmsrc CLIENT: push home/u/./outbox/ over swap_proxy.py with a real rsync
# server; the exit code, then the victim's file (or "gone")
rmsrc() {
    rm -rf "$RT"
    mkdir -p "$RT/home/u/outbox" "$RT/victim" "$RT/dest"
    echo secret >"$RT/victim/precious"
    echo public >"$RT/home/u/outbox/precious" # same size and mtime
    touch -d @1600000000 "$RT/victim/precious" "$RT/home/u/outbox/precious"
    "$1" -aR --remove-source-files --rsync-path="$RSYNC" \
        -e "$PYTHON $_T_LIB_DIR/swap_proxy.py $RT/home/u/outbox ../../victim" \
        "$RT/home/u/./outbox/" "localhost:$RT/dest/" >"$RT.out" 2>&1
    echo "$? $(cat "$RT/victim/precious" 2>/dev/null || echo gone)"
}
r=$(rmsrc "$RSYNC")
cat "$RT.out"
echo "rsync: $r"
t_check rmsrc_rsync_refuses [ "$r" = "23 secret" ]
t_check rmsrc_rsync_says_secure_open_parent grep -q \
    'sender failed to secure-open-parent outbox/precious: Too many levels of symbolic links (40)' \
    "$RT.out"
r=$(rmsrc "$FERRY")
cat "$RT.out"
echo "ferry: $r"
t_check rmsrc_ferry_refuses [ "$r" = "23 secret" ]
t_check rmsrc_ferry_says_secure_open_parent grep -q \
    'sender failed to secure-open-parent outbox/precious: Too many levels of symbolic links (40)' \
    "$RT.out"
t_check rmsrc_ferry_swap_happened grep -q 'swap_proxy: .* is now a link' "$RT.out"

# without the swap the files are removed as usual, by both
rmsrc_plain() {
    rm -rf "$RT"
    mkdir -p "$RT/home/u/outbox/sub" "$RT/dest"
    echo a >"$RT/home/u/outbox/a"
    echo b >"$RT/home/u/outbox/sub/b"
    "$1" -aR --remove-source-files "$RT/home/u/./outbox/" "$RT/dest/" &&
        [ -z "$(find "$RT/home" -type f)" ] && [ -f "$RT/dest/outbox/sub/b" ]
}
t_check rmsrc_plain_rsync rmsrc_plain "$RSYNC"
t_check rmsrc_plain_ferry rmsrc_plain "$FERRY"

t_done
