#!/bin/bash
# The sender's block search must not go quadratic when the receiver's
# basis is made of many identical blocks (issue: 40,000 identical blocks
# must finish in seconds). Real rsync is the receiver; ferry --server sends
# over a fake remote shell. The bound below is generous: a quadratic
# search takes minutes here, the linear one a fraction of a second.
set -u
. "$(dirname "$0")/lib.sh"
t_setup
t_require python3 rsync

cat >"$T/fakessh" <<'SH'
#!/bin/bash
while [ "${1:0:1}" = "-" ]; do [ "$1" = "-l" ] && shift; shift; done
shift
eval "exec $*"
SH
chmod +x "$T/fakessh"

mkdir -p "$T/src" "$T/dst"
python3 - "$T" <<'PY'
import os, sys
t = sys.argv[1]
blk = os.urandom(700)
open(f"{t}/src/same", "wb").write(blk * 40000 + b"tail")
open(f"{t}/dst/same", "wb").write(blk * 40000)
PY
touch -d '2001-01-01' "$T/dst/same"

start=$(date +%s)
timeout 60 rsync -a --no-W -B 700 --stats -e "$T/fakessh" --rsync-path="$FERRY" \
    "localhost:$T/src/" "$T/dst/" >"$T/out" 2>"$T/err"
rc=$?
took=$(( $(date +%s) - start ))
cat "$T/out" "$T/err"
if [ $rc -eq 0 ]; then t_pass identical_blocks_rc; else t_fail identical_blocks_rc "exit $rc"; fi
t_check identical_blocks_result cmp "$T/src/same" "$T/dst/same"
if [ "$took" -le 20 ]; then
    t_pass identical_blocks_fast
else
    t_fail identical_blocks_fast "took $took s"
fi
lit=$(sed -n 's/^Literal data: \([0-9,]*\) bytes/\1/p' "$T/out" | tr -d ,)
if [ -n "$lit" ] && [ "$lit" -le 1000 ]; then
    t_pass identical_blocks_matched
else
    t_fail identical_blocks_matched "literal data ${lit:-?}"
fi
t_done
