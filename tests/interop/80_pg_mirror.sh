#!/bin/bash
# contrib/ferry-pg-mirror against a real PostgreSQL (Debian's packages),
# started on private ports and a private socket dir, stopped by PID.
# Under a running pgbench load: a first and a second (delta) mirror, each
# started as a server that must finish recovery, pass pg_amcheck, keep the
# pgbench invariants and hold the marker row written right before
# pg_backup_stop (and a table in a tablespace); the excluded files are
# absent; a running mirror and a source that cannot be reached are
# refused; a failed pg_backup_stop leaves the mirror unstartable and
# marked incomplete; --standby streams from the primary; a ferry daemon
# module (with --parallel 2) and ssh as destinations; a re-mirror sends
# again a file written during the earlier run's sync, but not what that
# run's checkpoint wrote before it.
# As root the clusters run as the "postgres" user the package created.
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$PYTHON"
t_setup

if [ ! -x "$FERRY" ]; then
    t_skip "$(_t_script_name)" "ferry binary not found: $FERRY"
    t_done
fi

# The newest Debian PostgreSQL (/usr/lib/postgresql/N/bin) wins over PATH.
PGBIN=""
while IFS= read -r d; do
    [ -x "$d/initdb" ] && [ -x "$d/pgbench" ] && PGBIN=$d
done < <(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V)
if [ -z "$PGBIN" ] && command -v initdb >/dev/null && command -v pgbench >/dev/null; then
    PGBIN=$(dirname "$(command -v initdb)")
fi
if [ -z "$PGBIN" ] || [ ! -x "$PGBIN/psql" ]; then
    t_skip "$(_t_script_name)" "PostgreSQL server binaries not found (apt-get install postgresql postgresql-contrib)"
    t_done
fi
TOOL=$FERRY_SRC/contrib/ferry-pg-mirror
SCALE=2

# As root the clusters run as postgres; otherwise as ourselves.
PG=$T/pg
mkdir -p "$PG"
if [ "$(id -u)" = 0 ]; then
    if ! id postgres >/dev/null 2>&1; then
        t_skip "$(_t_script_name)" "running as root and there is no postgres user to run the clusters"
        t_done
    fi
    chmod 711 "$T"
    chown postgres: "$PG"
    as_pg() { runuser -u postgres -- "$@"; }
else
    as_pg() { "$@"; }
fi
chmod 700 "$PG"

P1=$(t_free_port) P2=$(t_free_port) P3=$(t_free_port)
# The server started after the crash stop gets a port of its own: until
# the killed postmaster is reaped (by whatever this machine's PID 1 is) it
# still holds P2's socket lock file, and a new postmaster refuses it.
P4=$(t_free_port)
SRC=$PG/src
CONN="host=$PG port=$P1 user=postgres dbname=postgres"

# q PORT SQL -- one value (or rows) from the cluster on PORT.
q() { "$PGBIN/psql" -X -Atq -h "$PG" -p "$1" -U postgres -d postgres -c "$2"; }

# pg_start DATADIR PORT [LOG] -- start a cluster, track its postmaster.
pg_start() {
    local data=$1 port=$2 log=${3:-$1.log} pid
    as_pg "$PGBIN/pg_ctl" -D "$data" -l "$log" -w -t 60 \
        -o "-p $port -k $PG -c listen_addresses='' -c fsync=off" start >/dev/null || {
        echo "pg_start $data: failed; log:"
        tail -n 20 "$log"
        return 1
    }
    pid=$(head -n 1 "$data/postmaster.pid")
    t_track_pid "$pid"
    echo "started $data on port $port, pid $pid"
}

# pg_stop DATADIR [crash] -- fast shutdown (SIGINT) of the postmaster named
# in DATADIR/postmaster.pid, by its PID; "crash" kills it (SIGKILL), which
# leaves the pid file behind. Its children notice and exit by themselves.
pg_stop() {
    local data=$1 sig=INT pid _
    [ "${2:-fast}" = crash ] && sig=KILL
    pid=$(head -n 1 "$data/postmaster.pid" 2>/dev/null) || return 0
    kill -"$sig" "$pid" 2>/dev/null
    for _ in $(seq 100); do
        t_pid_alive "$pid" || break
        sleep 0.1
    done
    t_pid_alive "$pid" && kill -KILL "$pid"
    _t_untrack_pid "$pid"
    ! t_pid_alive "$pid"
}

# mirror OUT ARGS... -- run the tool; OUT.out/.err/.rc get its results.
mirror() {
    local out=$1 t0=$EPOCHREALTIME
    shift
    echo "--- ferry-pg-mirror $*"
    "$PYTHON" "$TOOL" --ferry "$FERRY" --psql "$PGBIN/psql" "$@" >"$out.out" 2>"$out.err" </dev/null
    echo $? >"$out.rc"
    echo "--- exit $(cat "$out.rc") after $(awk "BEGIN { printf \"%.1f\", $EPOCHREALTIME - $t0 }") s"
    cat "$out.out"
    tail -n 5 "$out.err"
}

rc_is() {
    [ "$(cat "$1.rc")" = "$2" ] && return 0
    echo "exit $(cat "$1.rc"), expected $2"
    cat "$1.err"
    return 1
}

err_says() {
    grep -q -- "$2" "$1.err" && return 0
    echo "stderr lacks '$2':"
    cat "$1.err"
    return 1
}

# -------------------------------------------------------------- source

setup_source() {
    as_pg "$PGBIN/initdb" -D "$SRC" -A trust -U postgres --no-sync >"$PG/initdb.log" 2>&1 || {
        tail -n 20 "$PG/initdb.log"
        return 1
    }
    pg_start "$SRC" "$P1" || return 1
    as_pg mkdir -m 700 "$PG/ts1" || return 1
    q "$P1" "CREATE TABLESPACE ts1 LOCATION '$PG/ts1'" &&
        q "$P1" "CREATE TABLE ts_tab TABLESPACE ts1 AS SELECT g FROM generate_series(1, 10000) g" &&
        q "$P1" "CREATE TABLE ferry_marker (id serial PRIMARY KEY, tag text NOT NULL)" &&
        "$PGBIN/pgbench" -i -q -s "$SCALE" -h "$PG" -p "$P1" -U postgres postgres >"$PG/pgbench-init.log" 2>&1 || {
        tail -n 20 "$PG/pgbench-init.log"
        return 1
    }
    # Things a base backup leaves out, planted where PostgreSQL puts them.
    DBOID=$(q "$P1" "SELECT oid FROM pg_database WHERE datname = 'postgres'")
    as_pg mkdir -p "$SRC/base/pgsql_tmp" &&
        as_pg touch "$SRC/base/pgsql_tmp/pgsql_tmp999.0" "$SRC/base/$DBOID/t3_999999" \
            "$SRC/base/$DBOID/t3_999999_fsm" "$SRC/pg_stat_tmp/junk.tmp" \
            "$SRC/pg_notify/0000" "$SRC/pg_serial/0000" "$SRC/pg_snapshots/junk"
}
t_check setup_source setup_source || t_done
TSOID=$(q "$P1" "SELECT oid FROM pg_tablespace WHERE spcname = 'ts1'")

"$PGBIN/pgbench" -n -c 4 -j 2 -T 600 -h "$PG" -p "$P1" -U postgres postgres >"$PG/pgbench.log" 2>&1 &
LOAD_PID=$!
t_track_pid "$LOAD_PID"
sleep 2

marker_cmd() {
    printf '%q ' "$PGBIN/psql" -X -Atq -h "$PG" -p "$P1" -U postgres -d postgres \
        -c "INSERT INTO ferry_marker (tag) VALUES ('$1')"
}

# --------------------------------------------------------- checks

excluded_absent() {
    local m=$1 bad=0 f d
    for f in postmaster.pid postmaster.opts base/pgsql_tmp "base/$DBOID/t3_999999" \
        "base/$DBOID/t3_999999_fsm" pg_stat_tmp/junk.tmp pg_notify/0000 pg_serial/0000 \
        pg_snapshots/junk global/pg_internal.init "base/$DBOID/pg_internal.init" \
        standby.signal recovery.signal tablespace_map; do
        if [ -e "$m/$f" ]; then echo "excluded $f is in the mirror"; bad=1; fi
    done
    for d in pg_replslot pg_dynshmem pg_notify pg_serial pg_snapshots pg_stat_tmp \
        pg_subtrans pg_wal/archive_status pg_tblspc; do
        [ -d "$m/$d" ] || { echo "directory $d missing from the mirror"; bad=1; }
    done
    [ -z "$(ls -A "$m/pg_replslot")" ] || { echo "pg_replslot not empty"; bad=1; }
    [ -z "$(ls -A "$m/pg_wal/archive_status")" ] || { echo "archive_status not empty"; bad=1; }
    f=$(find "$m/pg_wal" -maxdepth 1 -type f | grep -cvE '/[0-9A-F]{24}$|\.history$')
    [ "$f" = 0 ] || { echo "pg_wal has $f files that are not WAL segments"; bad=1; }
    if [ ! -f "$m/backup_label" ] || [ ! -f "$m/global/pg_control" ]; then
        echo "no backup_label/pg_control"
        bad=1
    fi
    grep -q '^status = complete' "$m/ferry-pg-mirror.state" || { echo "state not complete"; bad=1; }
    return $bad
}

# The tablespace sits inside the mirror; pg_tblspc/<oid> is a relative link.
tablespace_inline() {
    local m=$1
    [ "$(readlink "$m/pg_tblspc/$TSOID")" = "../ferry-pg-mirror.tablespaces/$TSOID" ] &&
        [ -n "$(ls -A "$m/ferry-pg-mirror.tablespaces/$TSOID/")" ] && return 0
    ls -la "$m/pg_tblspc" "$m/ferry-pg-mirror.tablespaces"
    return 1
}

# server_checks DATADIR PORT MARKER -- the mirror runs as a server: it left
# recovery, is consistent, and holds what the source committed.
server_checks() {
    local m=$1 port=$2 marker=$3 v bad=0
    v=$(q "$port" "SELECT pg_is_in_recovery()")
    [ "$v" = f ] || { echo "still in recovery: $v"; bad=1; }
    grep -q "consistent recovery state reached" "$m.log" || { echo "no consistency in the log"; bad=1; }
    v=$(q "$port" "SELECT count(*) FROM pgbench_accounts")
    [ "$v" = $((SCALE * 100000)) ] || { echo "pgbench_accounts has $v rows"; bad=1; }
    v=$(q "$port" "SELECT (SELECT coalesce(sum(delta), 0) FROM pgbench_history) || ' ' ||
        (SELECT sum(abalance) FROM pgbench_accounts) || ' ' ||
        (SELECT sum(bbalance) FROM pgbench_branches) || ' ' ||
        (SELECT sum(tbalance) FROM pgbench_tellers)")
    echo "history/accounts/branches/tellers sums: $v"
    # shellcheck disable=SC2086
    set -- $v
    { [ "$1" = "$2" ] && [ "$1" = "$3" ] && [ "$1" = "$4" ]; } || { echo "sums differ"; bad=1; }
    v=$(q "$port" "SELECT count(*) FROM pgbench_history")
    echo "pgbench_history rows: $v"
    [ "$v" -gt 0 ] || { echo "no pgbench transactions in the mirror"; bad=1; }
    v=$(q "$port" "SELECT count(*) FROM ferry_marker WHERE tag = '$marker'")
    [ "$v" = 1 ] || { echo "marker $marker: $v rows"; bad=1; }
    v=$(q "$port" "SELECT count(*), sum(g) FROM ts_tab")
    [ "$v" = "10000|50005000" ] || { echo "ts_tab: $v"; bad=1; }
    return $bad
}

amcheck() {
    "$PGBIN/pg_amcheck" --install-missing -h "$PG" -p "$1" -U postgres --all --heapallindexed
}

# ------------------------------------------------------ first mirror

M=$PG/mirror
R=$T/run1
mirror "$R" --source-conn "$CONN" --pgdata "$SRC" --dest "$M" -v \
    --before-stop-command "$(marker_cmd first)"
t_check first_mirror rc_is "$R" 0
t_check first_summary grep -qE 'files changed: [0-9]+ transferred.*bytes moved: [0-9]+' "$R.out"
t_check first_excluded_absent excluded_absent "$M"
t_check first_tablespace_inline tablespace_inline "$M"
# durable by default, and the block sums kept for the next run
t_check first_fsync grep -q -- "--fsync" "$R.err"
t_check first_sums_cache python3 "$(dirname "$0")/sumcache_tool.py" "$M/ferry-pg-mirror.sums" list
FIRST_BYTES=$(sed -n 's/.*bytes moved: \([0-9]*\).*/\1/p' "$R.out")

if t_check first_server_start pg_start "$M" "$P2"; then
    t_check first_server_consistent server_checks "$M" "$P2" first
    t_check first_server_amcheck amcheck "$P2"
    # A mirror that runs as a server is refused, and left alone.
    mirror "$T/busy" --source-conn "$CONN" --pgdata "$SRC" --dest "$M"
    t_check refuse_running_dest rc_is "$T/busy" 3
    t_check refuse_running_dest_message err_says "$T/busy" "is a running cluster"
    t_check refuse_running_dest_untouched grep -q "^status = complete" "$M/ferry-pg-mirror.state"
    # A crash: the pid file stays behind, stale.
    t_check first_server_stop pg_stop "$M" crash
fi
t_check stale_pidfile_left test -f "$M/postmaster.pid"

# ------------------------------------------------------ delta mirror

sleep 1
R=$T/run2
mirror "$R" --source-conn "$CONN" --pgdata "$SRC" --dest "$M" -v \
    --before-stop-command "$(marker_cmd second)"
t_check delta_mirror rc_is "$R" 0
t_check delta_stale_pidfile_removed test ! -e "$M/postmaster.pid"
t_check delta_excluded_absent excluded_absent "$M"
DELTA_BYTES=$(sed -n 's/.*bytes moved: \([0-9]*\).*/\1/p' "$R.out")
echo "bytes moved: first $FIRST_BYTES, delta $DELTA_BYTES"
delta_smaller() { [ "$DELTA_BYTES" -lt "$FIRST_BYTES" ] && grep -qE 'matched [1-9]' "$R.out"; }
t_check delta_moves_less delta_smaller

kill -TERM "$LOAD_PID" 2>/dev/null
wait "$LOAD_PID" 2>/dev/null
_t_untrack_pid "$LOAD_PID"
tail -n 3 "$PG/pgbench.log"

if t_check delta_server_start pg_start "$M" "$P4"; then
    t_check delta_server_consistent server_checks "$M" "$P4" second
    t_check delta_server_marker_first server_checks "$M" "$P4" first
    t_check delta_server_amcheck amcheck "$P4"
    t_check delta_server_stop pg_stop "$M"
fi

# ------------------------------------------ quiet re-mirror: fixed costs

# With the load stopped, a re-mirror has little to send. The last WAL
# segment holds the WAL up to the stop LSN and zeros after it (as
# pg_basebackup -X stream writes it), where the source's segment goes on
# with the switch record pg_backup_stop wrote there, so under -z the tail
# costs nothing even in a recycled segment. The files in the earlier run's
# time window are sent again as a delta against the kept block sums, not
# compared by --checksum (which read both copies whole): PG_VERSION stands
# for a file written while the first run synced (its mtime set by a ferry
# wrapper right after the data sync), and what the first run's own
# checkpoint wrote before the sync is not sent again when the margin is the
# fine one (a local file system with sub-second times). The mirror then
# starts and holds everything.
P5=$(t_free_port)
Q=$PG/quiet
TOUCHING_FERRY=$T/ferry-touching
# shellcheck disable=SC2016
printf '#!/bin/sh\n%q "$@"\nrc=$?\ncase " $* " in *" --delete-excluded "*) touch %q ;; esac\nexit $rc\n' \
    "$FERRY" "$SRC/PG_VERSION" >"$TOUCHING_FERRY"
chmod +x "$TOUCHING_FERRY"
FERRY_REAL=$FERRY
FERRY=$TOUCHING_FERRY
mirror "$T/quiet1" --source-conn "$CONN" --pgdata "$SRC" --dest "$Q" -v
FERRY=$FERRY_REAL
t_check quiet_first_mirror rc_is "$T/quiet1" 0
mirror "$T/quiet2" --source-conn "$CONN" --pgdata "$SRC" --dest "$Q" -vv \
    --before-stop-command "$(marker_cmd quiet)"
t_check quiet_remirror rc_is "$T/quiet2" 0
# bytes_at FILE OFFSET -- 64 bytes of FILE from OFFSET, in hex.
bytes_at() { od -An -tx1 -v -j "$2" -N 64 "$1" | tr -d ' \n'; }
quiet_wal_zero_tail() {
    local stop seg hi lo off name m s
    stop=$(sed -n 's/^stop_lsn = //p' "$Q/ferry-pg-mirror.state")
    name=$(find "$Q/pg_wal" -maxdepth 1 -type f -name '0*' | sort | tail -n 1)
    seg=$(stat -c %s "$SRC/pg_wal/$(basename "$name")")
    hi=$((16#${stop%/*})) lo=$((16#${stop#*/}))
    off=$(((hi * 4294967296 + lo) % seg))
    [ "$off" = 0 ] && { echo "stop $stop on a segment boundary: no tail"; return 0; }
    m=$(bytes_at "$name" "$off")
    s=$(bytes_at "$SRC/pg_wal/$(basename "$name")" "$off")
    echo "stop $stop, offset $off in $(basename "$name") (size $(stat -c %s "$name") of $seg)"
    echo "mirror: $m"
    echo "source: $s"
    [ "$(stat -c %s "$name")" = "$seg" ] && [ "$m" = "$(printf '0%.0s' $(seq 128))" ] &&
        [ "$s" != "$m" ]
}
t_check quiet_wal_zero_tail quiet_wal_zero_tail
quiet_verify_by_delta() {
    local line
    line=$(grep 'verify data directory: ' "$T/quiet2.err" | head -n 1)
    grep 'files modified during earlier runs' "$T/quiet2.err"
    [ -z "$line" ] && { echo "PG_VERSION, touched in the first run's window, not verified"; return 1; }
    echo "$line"
    case $line in *--checksum\ *) return 1 ;; esac
    case $line in *--ignore-times*--sums-cache=*) return 0 ;; esac
    return 1
}
t_check quiet_verify_by_delta quiet_verify_by_delta
# Only what was written in the window: with the fine margin, not what the
# first run's checkpoint wrote before its sync (pg_backup_start's forced
# checkpoint always rewrites pg_logical/replorigin_checkpoint).
quiet_verify_few() {
    local files
    grep 'modification-time margin' "$T/quiet1.err"
    files=$(sed -n 's/^ferry-pg-mirror: verify: //p' "$T/quiet2.err")
    echo "verified again: $files"
    case " $files " in *" PG_VERSION "*) ;; *) return 1 ;; esac
    grep -q 'margin of the sync window: 0\.0[0-9]* s' "$T/quiet1.err" || {
        echo "(wide margin on this file system: checkpoint files not checked)"
        return 0
    }
    case " $files " in *" pg_logical/replorigin_checkpoint "*) return 1 ;; esac
}
t_check quiet_verify_few quiet_verify_few
if t_check quiet_server_start pg_start "$Q" "$P5"; then
    t_check quiet_server_consistent server_checks "$Q" "$P5" quiet
    t_check quiet_server_amcheck amcheck "$P5"
    t_check quiet_server_stop pg_stop "$Q"
fi

# ------------------------------------------------------------ standby

S=$PG/standby
R=$T/run3
mirror "$R" --source-conn "$CONN" --pgdata "$SRC" --dest "$S" --standby
t_check standby_mirror rc_is "$R" 0
t_check standby_signal test -f "$S/standby.signal"
t_check standby_conninfo grep -q "^primary_conninfo = 'host=$PG port=$P1" "$S/postgresql.auto.conf"

wait_for() {
    local port=$1 sql=$2 want=$3 v _
    for _ in $(seq 150); do
        v=$(q "$port" "$sql" 2>/dev/null)
        [ "$v" = "$want" ] && return 0
        sleep 0.2
    done
    echo "waited 30 s for '$sql' = '$want', last: '$v'"
    return 1
}
if t_check standby_start pg_start "$S" "$P3"; then
    t_check standby_in_recovery wait_for "$P3" "SELECT pg_is_in_recovery()" t
    t_check standby_streaming wait_for "$P3" "SELECT status FROM pg_stat_wal_receiver" streaming
    q "$P1" "INSERT INTO ferry_marker (tag) VALUES ('after-standby')"
    t_check standby_sees_new_row wait_for "$P3" \
        "SELECT count(*) FROM ferry_marker WHERE tag = 'after-standby'" 1
    t_check standby_stop pg_stop "$S"
fi

# ----------------------------------------------------------- bad cases

R=$T/bad-src
mirror "$R" --source-conn "host=$PG port=1 user=postgres" --pgdata "$SRC" --dest "$PG/never"
t_check source_unreachable rc_is "$R" 4
t_check source_unreachable_message err_says "$R" "cannot connect to the source"
t_check source_unreachable_dest_untouched test ! -e "$PG/never"

R=$T/bad-bs
mirror "$R" --pgdata "$SRC" --dest "$PG/never" --block-size 1000
t_check bad_block_size rc_is "$R" 2

# pg_backup_stop fails: the session is killed just before it. The standby
# mirror (complete until now) must end up marked incomplete, unstartable.
KILL_SQL="SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'ferry-pg-mirror'"
R=$T/bad-stop
mirror "$R" --source-conn "$CONN" --pgdata "$SRC" --dest "$S" \
    --before-stop-command "$(printf '%q ' "$PGBIN/psql" -X -Atq -h "$PG" -p "$P1" -U postgres -d postgres -c "$KILL_SQL")"
t_check backup_stop_fails rc_is "$R" 5
t_check backup_stop_fails_message err_says "$R" "left marked incomplete"
t_check backup_stop_fails_no_pg_control test ! -e "$S/global/pg_control"
t_check backup_stop_fails_no_label test ! -e "$S/backup_label"
t_check backup_stop_fails_state grep -q '^status = incomplete' "$S/ferry-pg-mirror.state"
refuses_to_start() {
    if as_pg "$PGBIN/pg_ctl" -D "$S" -l "$S.bad.log" -w -t 10 \
        -o "-p $P3 -k $PG -c listen_addresses=''" start >/dev/null 2>&1; then
        pg_stop "$S"
        echo "the incomplete mirror started"
        return 1
    fi
    grep pg_control "$S.bad.log"
}
t_check backup_stop_fails_unstartable refuses_to_start

# ------------------------------------------------ daemon module, ssh

MOD=$PG/module
mkdir -p "$MOD" && chown --reference="$PG" "$MOD"
if t_ferryd_start fd80 "
[pgm]
    path = $MOD
    read only = no
"; then
    R=$T/daemon
    mirror "$R" --source-conn "$CONN" --pgdata "$SRC" --dest mirror --via 127.0.0.1::pgm \
        --ferry-option=--port="$FERRYD_PORT" --parallel 2 \
        --before-stop-command "$(marker_cmd daemon)"
    t_check daemon_mirror rc_is "$R" 0
    t_check daemon_excluded_absent excluded_absent "$MOD/mirror"
    t_check daemon_tablespace_inline tablespace_inline "$MOD/mirror"
    if t_check daemon_server_start pg_start "$MOD/mirror" "$P2"; then
        t_check daemon_server_consistent server_checks "$MOD/mirror" "$P2" daemon
        mirror "$T/daemon-busy" --source-conn "$CONN" --pgdata "$SRC" --dest mirror \
            --via 127.0.0.1::pgm --ferry-option=--port="$FERRYD_PORT"
        t_check daemon_refuse_pidfile rc_is "$T/daemon-busy" 3
        t_check daemon_server_stop pg_stop "$MOD/mirror"
    fi
    t_ferryd_stop
else
    t_fail daemon_start "ferry daemon did not start"
fi

# An rsync daemon as the receiver: it refuses --sums-cache, and the data
# sync runs again without it. Without chroot, rsync keeps a received link's
# ".." only as deep as the link lies: the tablespace links must survive.
RMOD=$PG/rmodule
mkdir -p "$RMOD" && chown --reference="$PG" "$RMOD"
if t_rsyncd_start rd80 "
[pgr]
    path = $RMOD
    read only = no
    use chroot = no
"; then
    R=$T/rsyncd
    mirror "$R" --source-conn "$CONN" --pgdata "$SRC" --dest mirror --via 127.0.0.1::pgr \
        --ferry-option=--port="$RSYNCD_PORT" -v --before-stop-command "$(marker_cmd rsyncd)"
    t_check rsyncd_mirror rc_is "$R" 0
    t_check rsyncd_no_cache err_says "$R" "receiver is not ferry"
    t_check rsyncd_excluded_absent excluded_absent "$RMOD/mirror"
    t_check rsyncd_tablespace_inline tablespace_inline "$RMOD/mirror"
    if t_check rsyncd_server_start pg_start "$RMOD/mirror" "$P2"; then
        t_check rsyncd_server_consistent server_checks "$RMOD/mirror" "$P2" rsyncd
        t_check rsyncd_server_stop pg_stop "$RMOD/mirror"
    fi
    t_rsyncd_stop
else
    t_fail rsyncd_start "rsync daemon did not start"
fi

t_sshd_start
case $? in
0)
    R=$T/ssh
    mirror "$R" --source-conn "$CONN" --pgdata "$SRC" --dest "$PG/sshmirror" --via 127.0.0.1 \
        --rsh "$SSH_CMD" --ferry-option=--rsync-path="$FERRY" \
        --before-stop-command "$(marker_cmd ssh)"
    t_check ssh_mirror rc_is "$R" 0
    t_check ssh_excluded_absent excluded_absent "$PG/sshmirror"
    if t_check ssh_server_start pg_start "$PG/sshmirror" "$P2"; then
        t_check ssh_server_consistent server_checks "$PG/sshmirror" "$P2" ssh
        t_check ssh_server_stop pg_stop "$PG/sshmirror"
    fi
    ;;
2) t_skip ssh "$T_SKIP_REASON" ;;
*) t_skip ssh "sshd did not start (see the log)" ;;
esac

# ------------------------------------- timing, tablespaces dropped

# --timing prints each step; the steps that overlap (probe and session,
# mark-incomplete and pg_backup_start) are all there.
R=$T/timing
mirror "$R" --source-conn "$CONN" --pgdata "$SRC" --dest "$M" --timing --no-sync -v
t_check timing_mirror rc_is "$R" 0
t_check no_sync_no_fsync bash -c '! grep -q -- "--fsync" "$1"' _ "$R.err"
timing_lines() {
    local s
    for s in "ferry: probe destination|start psql" "SQL pg_backup_start" \
        "ferry: mark mirror incomplete" "ferry: sync data directory" "SQL pg_backup_stop" \
        "ferry: copy WAL" "ferry: commit backup_label" " total$"; do
        grep -qE "$s" "$R.err" || { echo "no timing line for '$s'"; return 1; }
    done
}
t_check timing_lines timing_lines

# A tablespace dropped on the source disappears from the mirror; once
# neither side has one, the tablespace runs are skipped.
q "$P1" "DROP TABLE ts_tab" && q "$P1" "DROP TABLESPACE ts1"
R=$T/nots1
mirror "$R" --source-conn "$CONN" --pgdata "$SRC" --dest "$M" -v
t_check tablespace_dropped_mirror rc_is "$R" 0
no_tablespaces() {
    [ -z "$(ls -A "$M/pg_tblspc")" ] && [ -z "$(ls -A "$M/ferry-pg-mirror.tablespaces")" ] &&
        return 0
    ls -la "$M/pg_tblspc" "$M/ferry-pg-mirror.tablespaces"
    return 1
}
t_check tablespace_dropped_gone no_tablespaces
t_check tablespace_dropped_runs grep -q "tablespace links:" "$R.err"
R=$T/nots2
mirror "$R" --source-conn "$CONN" --pgdata "$SRC" --dest "$M" -v
t_check tablespace_none_mirror rc_is "$R" 0
t_check tablespace_none_skipped err_says "$R" "no tablespaces in the source or the mirror"
skipped_runs() { ! grep -q "tablespace links" "$1.err" || { cat "$1.err"; return 1; }; }
t_check tablespace_none_no_runs skipped_runs "$R"
if t_check tablespace_none_start pg_start "$M" "$P2"; then
    v=$(q "$P2" "SELECT count(*) FROM ferry_marker WHERE tag = 'after-standby'")
    t_check tablespace_none_data test "$v" = 1
    t_check tablespace_none_stop pg_stop "$M"
fi

t_check source_stop pg_stop "$SRC"
t_done
