#!/bin/bash
# Filter diagnostics, compared with rsync 3.5.0 line for line and by exit
# status (rsync testsuite: filter-merge-content-echo):
#  - --debug=FILTER traces each rule added, "[client] add_rule(- x)", and
#    at level 1 only one ending in whitespace, with rsync's CAUTION; a
#    rule read from a file shows where it is from, never its text;
#  - a rule too long is dropped with "discarding over-long filter", the
#    user's own in full, a file's by its place; the transfer goes on;
#  - a per-directory merge name that fits alone but not on the directory
#    ("merge-file name overflows", "cannot add local filter rules in
#    long-named directory"), exit 23, and the name never shown when a
#    file gave it.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON"
t_setup

mkdir -p "$T/src/sub/deeper"
echo x >"$T/src/f"
echo y >"$T/src/sub/f"
printf -- '- *.tmp \n+ keep\n' >"$T/src/.rsync-filter"
printf -- '- old\n' >"$T/src/sub/.rsync-filter"

# out TOOL ARGS... -- stdout and stderr, the program's name and the
# "at FILE(LINE) [ROLE=VERSION]" tail normalised, then "rc=N"
out() {
    local tool=$1 rc
    shift
    rm -rf "$T/dst"
    mkdir -p "$T/dst"
    (cd "$T" && "$tool" "$@" 2>&1)
    rc=$?
    echo "rc=$rc"
}
norm() {
    sed -E -e 's/^ferry/rsync/' -e 's/ at [a-z0-9_.]+\([0-9]+\) \[([A-Za-z]+)=[^]]*\]/ at X [\1]/'
}
same() { # NAME ARGS... (KEEP: a grep -E pattern for the lines compared)
    local name=$1 want got
    shift
    want=$(out "$RSYNC" "$@" | norm | grep -E "${KEEP:-.}")
    got=$(out "$FERRY" "$@" | norm | grep -E "${KEEP:-.}")
    if [ "$want" = "$got" ]; then
        t_pass "$name"
    else
        t_fail "$name" "rsync said [$want], ferry said [$got]"
        printf 'rsync:\n%s\nferry:\n%s\n' "$want" "$got" | cut -c1-300
    fi
}

same trace_level1_caution --debug=FILTER1 -r -F '--filter=- my-own-rule ' src/ dst/
# (only the add_rule lines: ferry has not rsync's other FILTER2 traces)
KEEP='add_rule|^rc=' same trace_level2 --debug=FILTER2 -r -F --delete '--filter=- arg ' -f-C src/ dst/
long=$("$PYTHON" -c 'print("ARGLONG-" + "Q" * 4300)')
same overlong_argument -r "--filter=- $long" src/ dst/
"$PYTHON" -c 'print("- " + "L" * 6000); print("- " + "M" * 4200); print("- fine")' >"$T/rules"
same overlong_merge_lines -r --filter=". $T/rules" src/ dst/

# a per-dir merge name that fits alone (< 4096) but not on the transfer's
# directory, "$T/src/" (rsync's dirbuf): 4 bytes over
pad=$((4096 - ${#T} - 5 + 4 - 13))
name="sub/DEFERRED-$("$PYTHON" -c "print('Q' * $pad)")"
printf ': %s\n' "$name" >"$T/src/.rsync-filter"
reached() { out "$RSYNC" -r -F src/ dst/ | grep -q 'merge-file name overflows'; }
t_check rsync_reference_overflows reached
same deferred_name_overflows_from_file -r -F src/ dst/
hidden() { ! out "$FERRY" -r -F src/ dst/ | grep -q DEFERRED; }
t_check deferred_name_not_shown hidden
printf -- '- *.tmp\n' >"$T/src/.rsync-filter"
same deferred_name_overflows_argument -r "--filter=: $name" src/ dst/
t_done
