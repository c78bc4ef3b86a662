#!/bin/bash
# --info=progress2 (rsync's whole-transfer line) and --json (ferry's JSON
# lines for scripts), locally and pulling from a real rsync daemon.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON"
t_setup

SRC=$T/src
mkdir -p "$SRC/sub"
head -c 2000000 /dev/urandom >"$SRC/big"
echo a >"$SRC/sub/a"

# The last \r-separated field of the output: the final progress2 line.
last_line() { tr '\r' '\n' <"$1" | grep -v '^$' | tail -1; }

check_progress2() {
    "$FERRY" -a --info=progress2 "$SRC/" "$T/p2/" >"$T/p2.out" || return 1
    "$RSYNC" -a --info=progress2 "$SRC/" "$T/r2/" >"$T/r2.out" || return 1
    local re='^ +[0-9,]+ +100% +[0-9.]+[kMG]B/s +[0-9]+:[0-9]{2}:[0-9]{2} \(xfr#2, to-chk=0/4\)$'
    last_line "$T/p2.out" | grep -Eq "$re" || { echo "ferry: $(last_line "$T/p2.out")"; return 1; }
    last_line "$T/r2.out" | grep -Eq "$re" || { echo "rsync: $(last_line "$T/r2.out")"; return 1; }
    # no per-file names with progress2 alone
    ! grep -q "sub/a" "$T/p2.out"
}
t_check info_progress2_like_rsync check_progress2

check_json() { # OUT
    "$PYTHON" - "$1" <<'EOF'
import json, sys
events = [json.loads(line) for line in open(sys.argv[1])]
kinds = [e["event"] for e in events]
assert kinds[0] == "start" and kinds[-2:] == ["stats", "end"], kinds
assert events[-1]["exit_code"] == 0, events[-1]
st = events[-2]
assert st["exit_code"] == 0 and st["files_transferred"] == 2, st
assert st["total_size"] == 2000002, st
items = {e["name"]: e["change"] for e in events if e["event"] == "item"}
assert items.get("big", "").startswith(">f+++"), items
prog = [e for e in events if e["event"] == "progress"]
assert prog and prog[-1]["percent"] == 100.0, prog
EOF
}

check_json_local() {
    "$FERRY" -a --json "$SRC/" "$T/j1/" >"$T/j1.out" || return 1
    check_json "$T/j1.out" && t_compare "$SRC" "$T/j1"
}
t_check json_local check_json_local

t_rsyncd_start pj_rsyncd "[m]
    path = $SRC" || { t_fail rsyncd_start; t_done; }

check_json_pull() {
    "$FERRY" -a --json "rsync://127.0.0.1:$RSYNCD_PORT/m/" "$T/j2/" >"$T/j2.out" || return 1
    check_json "$T/j2.out" && t_compare "$SRC" "$T/j2"
}
t_check json_pull_from_rsyncd check_json_pull

check_json_failure() {
    "$FERRY" -a --json "$SRC/missing" "$T/j3/" >"$T/j3.out" 2>/dev/null
    [ $? = 23 ] && "$PYTHON" -c '
import json, sys
e = [json.loads(l) for l in open(sys.argv[1])][-2:]
assert [x["event"] for x in e] == ["stats", "end"], e
assert e[0]["exit_code"] == 23 and e[1]["exit_code"] == 23, e
assert e[1]["error"] == "RERR_PARTIAL", e' "$T/j3.out"
}
t_check json_reports_exit_code check_json_failure

t_done
