#!/bin/bash
# The closing line of a failed run, as rsync's log_exit() prints it:
# "rsync error: <what> (code N) at file(line) [role=version]", a warning for
# code 24. ferry's says "ferry error:" and names its own source; what failed,
# the code and the role must be rsync's, run for run.
set -u
. "$(dirname "$0")/lib.sh"
t_setup
t_require rsync

mkdir -p "$T/src" "$T/mod"
echo a >"$T/src/a"
echo b >"$T/src/b"
echo c >"$T/mod/ok"
echo d >"$T/mod/unreadable"
chmod 000 "$T/mod/unreadable"
# as root the module drops to nobody, for whom the file is unreadable too
ids=""
[ "$(id -u)" = 0 ] && ids=$'uid = nobody\ngid = nogroup'
t_rsyncd_start rd "[m]
path = $T/mod
$ids" || t_fail rsyncd_start "no daemon"
DEAD=$(t_free_port)

# closing BIN ARGS...: the exit code and the normalized closing lines
closing() {
    local bin=$1
    shift
    "$bin" "$@" >/dev/null 2>"$T/err"
    echo "rc $?"
    sed -nE 's/^(rsync|ferry) (error|warning): (.*) at [^ ]+\([0-9]+\) \[([A-Za-z]+)=[^]]*\]$/\2: \3 [\4]/p' \
        "$T/err"
}

same() { # NAME ARGS...
    local name=$1 r f
    shift
    r=$(closing "$RSYNC" "$@" | sed "s|$T|T|g")
    f=$(closing "$FERRY" "$@" | sed "s|$T|T|g")
    echo "$name: rsync: $r / ferry: $f"
    if [ "$r" = "$f" ] && [ -n "$r" ]; then t_pass "$name"; else t_fail "$name" "rsync '$r', ferry '$f'"; fi
}

same usage_unknown_option --no-such-option "$T/src/" "$T/d1/"
same usage_bad_size --max-size=foo "$T/src/" "$T/d1/"
same usage_no_args
same local_missing_source -a "$T/nonexistent/" "$T/d2/"
same pull_connect_refused -a "rsync://127.0.0.1:$DEAD/m/" "$T/d3/"
same pull_unknown_module -a "rsync://127.0.0.1:$RSYNCD_PORT/nomod/" "$T/d4/"
same pull_unreadable_file -a "rsync://127.0.0.1:$RSYNCD_PORT/m/" "$T/d5/"
same push_connect_refused -a "$T/src/" "rsync://127.0.0.1:$DEAD/m/"
mkdir -p "$T/d6" && for i in 1 2 3; do echo x >"$T/d6/extra$i"; done
cp -a "$T/d6" "$T/d6b"
r=$(closing "$RSYNC" -a --delete --max-delete=1 "$T/src/" "$T/d6/")
f=$(closing "$FERRY" -a --delete --max-delete=1 "$T/src/" "$T/d6b/")
echo "max_delete: rsync: $r / ferry: $f"
if [ "$r" = "$f" ]; then t_pass max_delete; else t_fail max_delete "rsync '$r', ferry '$f'"; fi
# a run that succeeds ends without one
f=$(closing "$FERRY" -a "$T/src/" "$T/d7/")
t_check success_no_line test "$f" = "rc 0"
t_done
