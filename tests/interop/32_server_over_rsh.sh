#!/bin/bash
# ferry --server behind a remote shell, REAL rsync as the client
# (rsync -e RSH --rsync-path=FERRY host:path): pulls (ferry sends) and
# pushes (ferry receives) with -a, -aH, --delete and a delta update of a
# 16 MiB file. Run twice: over a private sshd (skipped when sshd cannot
# start) and over a fake ssh that drops the host and runs the command
# locally, so the remote-shell path is tested even without sshd.
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

SRC=$T/src
HL=$T/hl
t_check mktree t_mktree "$SRC" || t_done

# mk_hltree DIR -- see 30_daemon_rsync_client.sh: plain files mixed with
# links to one inode that has another mode and mtime, so that an
# abbreviated hard-link entry sits between two plain files.
mk_hltree() {
    local d=$1/d i
    mkdir -p "$d" || return 1
    for i in $(seq -w 0 19); do echo "plain $i" >"$d/n$i"; done
    echo "linked" >"$d/h00" && chmod 0600 "$d/h00"
    for i in $(seq 1 9); do ln "$d/h00" "$d/h0$i" || return 1; done
    chmod 0644 "$d"/n* && touch -d @1500000000 "$d"/n* && touch -d @1600000000 "$d/h00" &&
        touch -d @1500000000 "$d" "$1"
}
t_check mk_hltree mk_hltree "$HL" || t_done

# The big file for the delta cases, and its 1%-changed version.
BIG=$T/big
make_big() {
    local i
    mkdir -p "$BIG/old" "$BIG/new" && head -c $((16 * 1048576)) /dev/urandom >"$BIG/old/file" &&
        cp "$BIG/old/file" "$BIG/new/file" || return 1
    for i in $(seq 0 15); do
        dd if=/dev/urandom of="$BIG/new/file" bs=10240 count=1 seek=$((i * 102 + 7)) \
            conv=notrunc status=none || return 1
    done
    touch -d @1600000000 "$BIG/old/file" "$BIG/old"
    touch -d @1600003600 "$BIG/new/file" && touch -d @1600000000 "$BIG/new"
}
t_check make_big make_big || t_done

# A remote shell that is no shell at all: skip ssh's options and the host,
# and run the command line here, through sh as sshd would.
t_fakessh "$T/fakessh"

# sshd hands the command a clean environment: carry the sanitizer settings
# (leak checks stay off, as tests/run sets them) to the server side.
RPATH="env ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}"
RPATH+=" UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} $FERRY"

# ------------------------------------------------------------------ helpers

ok_compare() {
    local r=$1
    shift
    ok "$r" && t_compare "$@"
}

stat_bytes() {
    sed -n "s/^$2: \([0-9,]*\) bytes.*/\1/p" "$1.out" | tr -d , | head -n 1
}

# small_delta RUN -- --stats says: little literal data, most of it matched.
small_delta() {
    local lit matched
    lit=$(stat_bytes "$1" "Literal data")
    matched=$(stat_bytes "$1" "Matched data")
    echo "literal $lit matched $matched"
    [ -n "$lit" ] && [ "$lit" -gt 0 ] && [ "$lit" -lt $((16 * 1048576 / 20)) ] &&
        [ "${matched:-0}" -gt $((15 * 1048576)) ]
}

# flip_byte FILE OFFSET -- same size, same mtime, one bit different.
flip_byte() {
    "$PYTHON" -c 'import os, sys
p, off = sys.argv[1], int(sys.argv[2]); st = os.stat(p)
with open(p, "r+b") as f:
    f.seek(off); b = f.read(1); f.seek(off); f.write(bytes([b[0] ^ 1]))
os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))' "$1" "$2"
}

# xfer NAME ARGS... -- real rsync over the current remote shell.
xfer() {
    local name=$1
    shift
    run "$T/$name" "$RSYNC" -e "$RSH" --rsync-path="$RPATH" "$@"
}

# ------------------------------------------------------------------- suite

# suite TAG -- every case over the remote shell in $RSH; remote paths are
# "127.0.0.1:PATH" (the fake shell ignores the host).
suite() {
    local tag=$1 d=$T/$1 r=127.0.0.1:
    mkdir -p "$d"

    xfer "$tag.pull_a" -a "$r$SRC/" "$d/pull_a/"
    t_check "${tag}_pull_a" ok_compare "$T/$tag.pull_a" "$SRC" "$d/pull_a" --nsec --no-hardlinks
    xfer "$tag.pull_aH" -aH "$r$SRC/" "$d/pull_aH/"
    t_check "${tag}_pull_aH" ok_compare "$T/$tag.pull_aH" "$SRC" "$d/pull_aH" --nsec
    xfer "$tag.pull_hl" -aH "$r$HL/" "$d/pull_hl/"
    t_check "${tag}_pull_aH_hlink_attrs" ok_compare "$T/$tag.pull_hl" "$HL" "$d/pull_hl" --nsec

    # --delete on the pulled copy: extras go, the missing come back.
    echo extra >"$d/pull_aH/extra.txt"
    mkdir -p "$d/pull_aH/extradir/x" && echo x >"$d/pull_aH/extradir/x/f"
    rm -f "$d/pull_aH/small.txt"
    xfer "$tag.pull_delete" -aH --delete "$r$SRC/" "$d/pull_aH/"
    t_check "${tag}_pull_delete" ok_compare "$T/$tag.pull_delete" "$SRC" "$d/pull_aH" --nsec

    # -c: a file that differs only in content (same size and mtime).
    "$RSYNC" -aH "$SRC/" "$d/pull_c/" && flip_byte "$d/pull_c/big.bin" 4242
    xfer "$tag.pull_c" -aH -c "$r$SRC/" "$d/pull_c/"
    t_check "${tag}_pull_checksum" ok_compare "$T/$tag.pull_c" "$SRC" "$d/pull_c" --nsec

    # Delta pull: the local copy has the old file, the server the new one.
    "$RSYNC" -a "$BIG/old/" "$d/pull_big/"
    xfer "$tag.pull_delta" -a --stats "$r$BIG/new/" "$d/pull_big/"
    t_check "${tag}_pull_delta" ok_compare "$T/$tag.pull_delta" "$BIG/new" "$d/pull_big" --nsec
    t_check "${tag}_pull_delta_small" small_delta "$T/$tag.pull_delta"

    xfer "$tag.push_a" -a "$SRC/" "$r$d/push_a/"
    t_check "${tag}_push_a" ok_compare "$T/$tag.push_a" "$SRC" "$d/push_a" --nsec --no-hardlinks
    xfer "$tag.push_aH" -aH "$SRC/" "$r$d/push_aH/"
    t_check "${tag}_push_aH" ok_compare "$T/$tag.push_aH" "$SRC" "$d/push_aH" --nsec
    xfer "$tag.push_hl" -aH "$HL/" "$r$d/push_hl/"
    t_check "${tag}_push_aH_hlink_attrs" ok_compare "$T/$tag.push_hl" "$HL" "$d/push_hl" --nsec

    echo extra >"$d/push_aH/extra.txt"
    mkdir -p "$d/push_aH/extradir/x" && echo x >"$d/push_aH/extradir/x/f"
    rm -f "$d/push_aH/small.txt"
    xfer "$tag.push_delete" -aH --delete "$SRC/" "$r$d/push_aH/"
    t_check "${tag}_push_delete" ok_compare "$T/$tag.push_delete" "$SRC" "$d/push_aH" --nsec

    # Delta push: the server has the old file.
    "$RSYNC" -a "$BIG/old/" "$d/push_big/"
    xfer "$tag.push_delta" -a --stats "$BIG/new/" "$r$d/push_big/"
    t_check "${tag}_push_delta" ok_compare "$T/$tag.push_delta" "$BIG/new" "$d/push_big" --nsec
    t_check "${tag}_push_delta_small" small_delta "$T/$tag.push_delta"
}

RSH=$T/fakessh
suite fake

t_sshd_start
case $? in
0)
    t_pass sshd_start
    RSH=$SSH_CMD
    suite ssh
    ;;
2) t_skip ssh "$T_SKIP_REASON" ;;
*) t_skip ssh "sshd did not start (see the log)" ;;
esac

no_reports() {
    local f bad=0
    for f in "$T"/*.err; do
        if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer' "$f"; then
            echo "sanitizer report in $f:"
            grep -m1 -A12 -E 'ERROR: [A-Za-z]*Sanitizer|runtime error' "$f"
            bad=1
        fi
    done
    return "$bad"
}
t_check no_sanitizer_reports no_reports

t_done
