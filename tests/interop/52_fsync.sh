#!/bin/bash
# --fsync: every file the receiver writes is fsync'ed before the transfer
# is reported done -- a temporary file before its rename, a file updated
# in place (--inplace, whose fsync runs beside the next file's transfer)
# before the end of its phase, so before the client exits. Checked with
# strace on a local copy and on a ferry daemon receiving a push.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require strace "$PYTHON"
t_setup

SRC=$T/src DST=$T/dst
mkdir -p "$SRC/sub" "$T/mod"
head -c 3000000 /dev/urandom >"$SRC/big"
head -c 5000 /dev/urandom >"$SRC/sub/small"
echo same >"$SRC/same"
touch -d @1600000000 "$SRC/big" "$SRC/sub/small" "$SRC/same"
"$FERRY" -a "$SRC/" "$DST/" || t_fail setup "first copy failed"

# change FILE: 4 bytes in place and a new mtime
change() {
    printf 'ZZZZ' | dd of="$1" bs=1 seek="${2:-1000}" conv=notrunc 2>/dev/null
    touch -d "@$3" "$1"
}

# synced TRACE FILE...: each FILE (a path under the destination) was fsync'ed
synced() {
    local trace=$1 f
    shift
    for f in "$@"; do
        grep -E "fsync\([0-9]+<[^>]*/$f>\)" "$trace" >/dev/null || { echo "no fsync of $f"; return 1; }
    done
}

# --inplace: the files changed in place are synced, no other file is
change "$SRC/big" 1000 1600000100
change "$SRC/sub/small" 10 1600000100
strace -f -y -e trace=fsync -o "$T/t1" "$FERRY" -a --inplace --no-whole-file --fsync \
    "$SRC/" "$DST/" >"$T/o1" 2>&1
t_check inplace_rc test $? -eq 0
t_check inplace_same t_compare "$SRC" "$DST"
t_check inplace_synced synced "$T/t1" big sub/small
if grep -q "/same>" "$T/t1"; then t_fail inplace_only_changed "an unchanged file was synced"; else t_pass inplace_only_changed; fi

# a temporary file is synced before it is renamed into place
change "$SRC/big" 2000 1600000200
strace -f -y -e trace=fsync,rename,renameat,renameat2 -o "$T/t2" "$FERRY" -a --fsync \
    "$SRC/" "$DST/" >"$T/o2" 2>&1
t_check temp_rc test $? -eq 0
t_check temp_same t_compare "$SRC" "$DST"
sync_before_rename() {
    "$PYTHON" - "$1" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
synced = [i for i, l in enumerate(lines) if re.search(r"fsync\(\d+<[^>]*/\.big\.[^>]*>\)", l)]
renamed = [i for i, l in enumerate(lines) if re.search(r"rename.*\.big\.", l)]
sys.exit(0 if synced and renamed and synced[0] < renamed[0] else 1)
PY
}
t_check temp_synced_before_rename sync_before_rename "$T/t2"

# a push to a ferry daemon, in place: its fsyncs all end before the client does
cat >"$T/straced-ferry" <<EOS
#!/bin/sh
exec strace -f -tt -y -e trace=fsync -o "$T/t3" "$FERRY" "\$@"
EOS
chmod +x "$T/straced-ferry"
REAL_FERRY=$FERRY
FERRY=$T/straced-ferry
t_ferryd_start fd "[m]
path = $T/mod
read only = no
use chroot = no"
started=$?
FERRY=$REAL_FERRY
if [ "$started" -ne 0 ]; then
    t_fail daemon_start "no daemon"
else
    "$FERRY" -a --inplace --no-whole-file "$SRC/" "rsync://127.0.0.1:$FERRYD_PORT/m/d/" >/dev/null 2>&1
    change "$SRC/big" 3000 1600000300
    change "$SRC/sub/small" 30 1600000300
    : >"$T/t3"
    "$FERRY" -a --inplace --no-whole-file --fsync "$SRC/" \
        "rsync://127.0.0.1:$FERRYD_PORT/m/d/" >"$T/o3" 2>&1
    rc=$?
    done_at=$(date +%H:%M:%S.%N)
    t_check push_rc test "$rc" -eq 0
    t_check push_same t_compare "$SRC" "$T/mod/d"
    t_check push_synced synced "$T/t3" d/big d/sub/small
    synced_before() {
        "$PYTHON" - "$1" "$2" <<'PY'
import re, sys
def secs(t):
    h, m, s = t.split(":")
    return int(h) * 3600 + int(m) * 60 + float(s[:15])
end = secs(sys.argv[2])
times = [secs(l.split()[1]) for l in open(sys.argv[1]) if "fsync(" in l and "/d/" in l]
sys.exit(0 if times and max(times) <= end else 1)
PY
    }
    t_check push_synced_before_client_exit synced_before "$T/t3" "$done_at"
    # the daemon runs under strace: stop it, then strace ends with it
    dpid=$(cat "$T/fd.pid" 2>/dev/null)
    [ -n "$dpid" ] && kill "$dpid" 2>/dev/null
    for _ in $(seq 50); do t_pid_alive "$FERRYD_PID" || break; sleep 0.1; done
    t_ferryd_stop
fi
t_done
