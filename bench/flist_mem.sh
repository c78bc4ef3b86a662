#!/bin/bash
# Peak RSS of a file list: ferry against rsync, each client measured alone.
#
#   bench/flist_mem.sh [FERRY]          (default build/release/ferry)
#
# Builds a tree of FILES empty files in DIRS directories (default
# 1,000,000 in 1000, under BENCH_DIR or /var/tmp), starts one real rsync
# daemon on a free loopback port as the peer of every run, and measures
# the client's peak RSS (bench/rusage_run, the largest of the client's
# processes) for:
#   recv-noinc   pull -a --no-inc-recursive -n   (client is the receiver)
#   recv-inc     pull -a -n                      (incremental recursion)
#   send-noinc   push -a --no-inc-recursive -n   (client is the sender)
#   send-inc     push -a -n
#   list-inc     pull -r --list-only             (listing client, inc)
#   list-noinc   pull -r --list-only --no-inc-recursive
#   recv-real    pull -a into an empty directory (a real run)
# CASES="recv-noinc send-noinc" picks some; SKIP_RSYNC=1 measures ferry only. Not part of make check: it
# takes minutes and needs ~1M free inodes.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
FERRY=${1:-$here/build/release/ferry}
RSYNC=${RSYNC:-/usr/bin/rsync}
FILES=${FILES:-1000000}
DIRS=${DIRS:-1000}
BENCH_DIR=${BENCH_DIR:-/var/tmp}
CASES=${CASES:-recv-noinc recv-inc send-noinc send-inc list-inc list-noinc recv-real}

work=$BENCH_DIR/flist_mem.$FILES.$DIRS
mkdir -p "$work"
runner=$work/rusage_run
cc -O2 -o "$runner" "$here/bench/rusage_run.c"

if [ ! -e "$work/src.done" ]; then
	rm -rf "$work/src"
	mkdir -p "$work/src"
	per=$((FILES / DIRS))
	(cd "$work/src" && for ((d = 0; d < DIRS; d++)); do
		mkdir "d$d"
		(cd "d$d" && seq -f "f%g" 0 $((per - 1)) | xargs touch)
	done)
	touch "$work/src.done"
fi

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$work/up"
cat >"$work/rsyncd.conf" <<EOF
use chroot = no
[src]
path = $work/src
read only = yes
[up]
path = $work/up
read only = no
EOF
"$RSYNC" --daemon --no-detach --port="$port" --address=127.0.0.1 \
	--config="$work/rsyncd.conf" --log-file=/dev/null &
daemon=$!
trap 'kill $daemon 2>/dev/null || true' EXIT
for _ in $(seq 50); do
	(exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null && break
	sleep 0.1
done

url=rsync://127.0.0.1:$port

# run TOOL CASE: prints the peak RSS in MB of one client run
measure() {
	local tool=$1 case=$2 out=$work/rusage.out dst=$work/dst
	local args
	rm -rf "$dst" && mkdir -p "$dst"
	case $case in
	recv-noinc) args=(-a -n --no-inc-recursive "$url/src/" "$dst/") ;;
	recv-inc) args=(-a -n "$url/src/" "$dst/") ;;
	send-noinc) args=(-a -n --no-inc-recursive "$work/src/" "$url/up/") ;;
	send-inc) args=(-a -n "$work/src/" "$url/up/") ;;
	list-inc) args=(-r --list-only "$url/src/") ;;
	list-noinc) args=(-r --list-only --no-inc-recursive "$url/src/") ;;
	recv-real) args=(-a "$url/src/" "$dst/") ;;
	*) echo "unknown case $case" >&2; return 2 ;;
	esac
	"$runner" "$out" "$tool" "${args[@]}" >/dev/null
	awk '{printf "%.1f", $4 / 1024}' "$out"
}

printf '%-12s %10s %10s   (%s entries, %s dirs)\n' case ferry_MB rsync_MB "$FILES" "$DIRS"
for c in $CASES; do
	f=$(measure "$FERRY" "$c")
	r=-
	[ -n "${SKIP_RSYNC:-}" ] || r=$(measure "$RSYNC" "$c")
	printf '%-12s %10s %10s\n' "$c" "$f" "$r"
done
rm -rf "$work/dst"
