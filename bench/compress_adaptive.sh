#!/bin/bash
# Measures (not a test) what -z costs on loopback, ferry against rsync:
# daemon pulls of each DATASET directory, whole-file into an empty
# destination, four variants run alternately ROUNDS times (ferry, ferry -z,
# rsync, rsync -z; the machine is shared, so medians); then, on a
# --bwlimit link, the bytes ferry -z and rsync -z receive.
#
# usage: bench/compress_adaptive.sh FERRY ROUNDS BWLIMIT DATASET...
# Prints one line per run and a summary with medians and the load average.
set -u
FERRY=$1 ROUNDS=$2 BWLIMIT=$3
shift 3
W=$(mktemp -d /tmp/zbench.XXXXXX)
trap 'kill "$FPID" "$RPID" 2>/dev/null; rm -rf "$W"' EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
conf=""
for d in "$@"; do
    conf+="[$(basename "$d")]
    path = $d
    use chroot = no
    read only = yes
    uid = root
    gid = root
"
done
echo "$conf" >"$W/d.conf"
FP=$(free_port)
RP=$(free_port)
"$FERRY" --daemon --no-detach --address=127.0.0.1 --port="$FP" --config="$W/d.conf" &
FPID=$!
rsync --daemon --no-detach --address=127.0.0.1 --port="$RP" --config="$W/d.conf" &
RPID=$!
sleep 1

# one VARIANT MODULE EXTRA... -- prints wall seconds and bytes received
one() {
    local v=$1 m=$2 bin port t0 t1
    shift 2
    case $v in ferry*) bin=$FERRY port=$FP ;; *) bin=rsync port=$RP ;; esac
    rm -rf "$W/dst"
    t0=$(date +%s.%N)
    "$bin" -a --stats "$@" "rsync://127.0.0.1:$port/$m/" "$W/dst/" >"$W/out" 2>&1 ||
        { echo "FAILED: $v $m" >&2; cat "$W/out" >&2; }
    t1=$(date +%s.%N)
    local got
    got=$(sed -n 's/^Total bytes received: \([0-9,]*\).*/\1/p' "$W/out" | tr -d ,)
    echo "$(echo "$t1 - $t0" | bc) $got"
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

for d in "$@"; do
    m=$(basename "$d")
    for v in ferry ferry_z rsync rsync_z; do : >"$W/$m.$v"; done
    for r in $(seq 1 "$ROUNDS"); do
        for v in ferry ferry_z rsync rsync_z; do
            z=()
            case $v in *_z) z=(-z) ;; esac
            res=$(one "$v" "$m" "${z[@]}")
            echo "$res" >>"$W/$m.$v"
            echo "$m round $r $v: ${res% *} s, ${res#* } bytes; load $(cut -d' ' -f1-3 /proc/loadavg)"
        done
    done
    echo "== $m: medians over $ROUNDS rounds"
    for v in ferry ferry_z rsync rsync_z; do
        printf '  %-8s %8.2f s  %s bytes\n' "$v" "$(cut -d' ' -f1 "$W/$m.$v" | median)" \
            "$(cut -d' ' -f2 "$W/$m.$v" | median)"
    done
    f=$(cut -d' ' -f1 "$W/$m.ferry" | median)
    fz=$(cut -d' ' -f1 "$W/$m.ferry_z" | median)
    r=$(cut -d' ' -f1 "$W/$m.rsync" | median)
    rz=$(cut -d' ' -f1 "$W/$m.rsync_z" | median)
    echo "  ferry -z costs $(echo "scale=1; ($fz - $f) * 100 / $f" | bc)% over ferry; rsync -z costs $(echo "scale=1; ($rz - $r) * 100 / $r" | bc)% over rsync"
done
if [ "$BWLIMIT" != 0 ]; then
    for d in "$@"; do
        m=$(basename "$d")
        a=$(one ferry_z "$m" -z --bwlimit="$BWLIMIT")
        b=$(one rsync_z "$m" -z --bwlimit="$BWLIMIT")
        echo "== $m at --bwlimit=$BWLIMIT: ferry -z ${a#* } bytes in ${a% *} s, rsync -z ${b#* } bytes in ${b% *} s"
    done
fi
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
