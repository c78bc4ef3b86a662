#!/bin/bash
# tests/check.sh BUILDDIR...
#
# Runs tests/run for each build dir and ends with ONE line of totals,
# "N passed, N failed[, N skipped]". Exits non-zero if anything failed or
# nothing ran at all.

set -u

HERE=$(cd "$(dirname "$0")" && pwd)
PASSED=0 FAILED=0 SKIPPED=0

if [ $# -eq 0 ]; then
    echo "usage: $0 BUILDDIR..." >&2
    exit 2
fi

# Add the counts from tests/run's last line; a run that died before printing
# it counts as one failure, so a broken runner can never look green.
add_counts() {
    local re='^([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?$'
    if [[ $1 =~ $re ]]; then
        PASSED=$((PASSED + BASH_REMATCH[1]))
        FAILED=$((FAILED + BASH_REMATCH[2]))
        SKIPPED=$((SKIPPED + ${BASH_REMATCH[4]:-0}))
    else
        echo "tests/run $2: no summary line (exit status $3)"
        FAILED=$((FAILED + 1))
    fi
}

out=$(mktemp "${TMPDIR:-/tmp}/ferry-check.XXXXXX") || exit 1
trap 'rm -f "$out"' EXIT

for builddir in "$@"; do
    # tee keeps the output live; the copy gives us the last line.
    "$HERE/run" "$builddir" | tee "$out"
    rc=${PIPESTATUS[0]}
    add_counts "$(tail -n 1 "$out")" "$builddir" "$rc"
    echo
done

printf '%d passed, %d failed' "$PASSED" "$FAILED"
[ "$SKIPPED" -eq 0 ] || printf ', %d skipped' "$SKIPPED"
printf '\n'
[ "$FAILED" -eq 0 ] && [ $((PASSED + FAILED)) -gt 0 ]
