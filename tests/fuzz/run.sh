#!/bin/bash
# tests/fuzz/run.sh SECONDS NAME... -- `make fuzz-run`: run each fuzzer
# build/fuzz/fuzz_NAME in turn, one process at a time, for SECONDS seconds
# (0: no time limit) or, with FUZZ_RUNS=N in the environment, until it has
# run N inputs (libFuzzer's -runs=N), whichever comes first,
# starting from the committed seeds (tests/fuzz/corpus/NAME, read only)
# and the inputs found by earlier runs (build/fuzz/corpus/NAME, where new
# ones go). A crashing input is written to build/fuzz/artifacts/. Prints
# one line per target with its executions, their rate and the
# corpus size; exits 1 if any target failed.
# FUZZ_FLAGS adds libFuzzer flags (e.g. -rss_limit_mb=4096).

set -u
seconds=$1
shift
limit="-max_total_time=$seconds"
[ -n "${FUZZ_RUNS:-}" ] && limit="$limit -runs=$FUZZ_RUNS"
cd "$(dirname "$0")/../.." || exit 1
out=build/fuzz
mkdir -p "$out/artifacts" "$out/logs"
failed=0
for name in "$@"; do
    bin=$out/fuzz_$name
    log=$out/logs/$name.log
    mkdir -p "$out/corpus/$name"
    # leaks are not hunted here (tests/run's rule: the code base is not
    # leak-clean yet); memory errors, UB, timeouts and OOM are
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} \
    "$bin" $limit -print_final_stats=1 -close_fd_mask=3 \
        -timeout=20 -rss_limit_mb=2560 -artifact_prefix="$out/artifacts/$name-" \
        ${FUZZ_FLAGS:-} "$out/corpus/$name" "tests/fuzz/corpus/$name" >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -n 1)
    corpus=$(ls "$out/corpus/$name" | wc -l)
    if [ "$rc" -eq 0 ]; then
        echo "fuzz_$name: ${execs:-?} executions in ${secs:-?} s (${rate:-?}/s), $corpus inputs in $out/corpus/$name, no crash"
    else
        failed=1
        echo "fuzz_$name: FAILED (exit $rc) after ${execs:-?} executions; see $log"
        grep -m 3 -E 'ERROR|runtime error|SUMMARY|Test unit written' "$log" | sed 's/^/    /'
    fi
done
exit $failed
