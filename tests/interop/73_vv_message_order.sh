#!/bin/bash
# -vv: the generator's "X is uptodate" lines come out ahead of the name of
# an earlier file that is transferred, because rsync's messages leave
# before the data still buffered (the file's request, and so its name,
# follows once the generator flushes at the end of the list). Compared
# with rsync 3.5.0 line for line: a local copy (the receiving half is
# ferry's server side), ferry's server side under a real rsync client,
# and a real rsync server under a ferry client (rsync testsuite: itemize).
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC"
t_setup
t_fakessh "$T/fakessh"

mkdir -p "$T/src/foo" "$T/base/foo"
for n in a b c d; do
    head -c 20000 /dev/urandom >"$T/src/foo/$n"
    cp -p "$T/src/foo/$n" "$T/base/foo/$n"
done
ln "$T/src/foo/a" "$T/src/foo/e"
ln "$T/base/foo/a" "$T/base/foo/e"
# b changes: content and size, an older mtime
head -c 30000 /dev/urandom >"$T/src/foo/b"
touch -d 2001-01-01 "$T/src/foo/b"

# names TAG CLIENT [ARGS...] -- the run's file lines, in order
names() {
    local tag=$1 dst
    shift
    rm -rf "$T/$tag"
    cp -a "$T/base" "$T/$tag"
    if [ "${REMOTE:-}" ]; then dst="host:$T/$tag/"; else dst="$T/$tag/"; fi
    "$@" -vvrlH "$T/src/" "$dst" >"$T/$tag.out" 2>&1 || { cat "$T/$tag.out"; return 1; }
    grep -E '^foo/' "$T/$tag.out"
}
names rsync_local "$RSYNC" >"$T/want" || t_fail rsync_reference "rsync failed"
cat "$T/want"
check() { # TAG CLIENT [ARGS...]
    names "$@" >"$T/got" && diff "$T/want" "$T/got"
}
# the scenario holds: the changed file is named after the later ones
last_is_b() { [ "$(tail -n 1 "$T/want")" = foo/b ] && [ "$(wc -l <"$T/want")" -ge 4 ]; }
t_check rsync_names_changed_file_last last_is_b
t_check local_copy_order check local "$FERRY"
REMOTE=1 t_check ferry_server_order check srv "$RSYNC" -e "$T/fakessh" --rsync-path="$FERRY"
REMOTE=1 t_check ferry_client_rsync_server_order check cli "$FERRY" -e "$T/fakessh" --rsync-path="$RSYNC"
t_done
