#!/bin/bash
# --link-dest / --compare-dest / --copy-dest in a dry run, compared with
# rsync 3.5.0 line for line (rsync testsuite: itemize):
#  - a destination the dry run did not make: a relative basis dir is taken
#    against where it would be ("../base" beside it), and what the basis
#    dir holds is itemized as in a real run, not as new;
#  - below directories a dry run did not make, the same;
#  - a basis dir that is missing or not a directory is warned about by
#    its absolute name.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC"
t_setup

mkdir -p "$T/src/a/b" "$T/src/c"
echo one >"$T/src/a/b/f1"
echo two >"$T/src/c/f2"
echo three >"$T/src/c/f3"
ln "$T/src/c/f2" "$T/src/c/f4"
chmod 600 "$T/src/c/f3"
"$RSYNC" -a "$T/src/" "$T/base/"
echo changed >"$T/src/c/f3" # differs from the basis

# lines TOOL OPTS... -- the run's output in $T (cwd), without the totals
lines() {
    (cd "$T" && "$@" 2>&1) | grep -Ev '^(total|sent|sending|delta|building)|speedup|^$'
}
# same NAME PREP OPTS... -- PREP (shell) readies $T/dst; the outputs of
# rsync and ferry agree
same() {
    local name=$1 prep=$2 want got
    shift 2
    rm -rf "$T/dst"; eval "$prep"
    want=$(lines "$RSYNC" "$@" src/ dst/)
    rm -rf "$T/dst"; eval "$prep"
    got=$(lines "$FERRY" "$@" src/ dst/)
    if [ "$want" = "$got" ]; then
        t_pass "$name"
    else
        t_fail "$name" "rsync said [$want], ferry said [$got]"
    fi
}

for mode in link compare copy; do
    for v in -i -ii -vv; do
        same "missing_dest_${mode}${v}" : -rtpH "$v" --dry-run --$mode-dest=../base
        same "empty_dest_${mode}${v}" 'mkdir "$T/dst" && touch -d 2000-01-01 "$T/dst"' -rtpH "$v" --dry-run --$mode-dest=../base
    done
done
# the scenario holds: rsync itemizes nothing new here
quiet=$(cd "$T" && "$RSYNC" -rtpH -i --dry-run --link-dest=../base src/ dst/ | grep -c '+++')
t_check rsync_reference_nothing_new test "$quiet" = 1 # only the changed f3

same warn_missing_relative 'mkdir "$T/dst"' -r --link-dest=nonexist
same warn_missing_dry_run : -r --dry-run --compare-dest=../nope
same warn_not_a_dir 'mkdir "$T/dst"' -r --copy-dest=../src/a/b/f1
t_done
