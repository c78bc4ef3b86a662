#!/bin/bash
# The fuzz seed corpora (issue 22): capture them afresh from real rsync
# 3.5.0 (tests/fuzz/make_corpus.py: batch files, a remote-shell pull, a
# client talking to rsync --daemon through a relay) and check that the
# capture still has the shapes the harnesses expect, that it names the
# same targets and seeds as the committed tests/fuzz/corpus/, and that
# every harness runs over it cleanly (test_fuzz_replay of this build).
# Check functions are called through t_check, which shellcheck cannot see.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC" "$PYTHON" setfacl setfattr
[ "$(id -u)" = 0 ] || { t_skip 58_fuzz_corpus "needs root (device nodes, chown)"; exit 0; }
REPLAY=$(dirname "$FERRY")/tests/test_fuzz_replay
[ -x "$REPLAY" ] || { t_skip 58_fuzz_corpus "$REPLAY not built"; exit 0; }
t_setup

CORPUS=$T/corpus
t_check capture "$PYTHON" "$FERRY_SRC/tests/fuzz/make_corpus.py" "$CORPUS"

# The same targets and seed names as the committed corpus. Inputs found
# by fuzzing are committed only: crash inputs (crash-*) and the ones a
# -merge=1 kept for new coverage, which libFuzzer names by their SHA-1.
same_names() {
    diff <(cd "$FERRY_SRC/tests/fuzz/corpus" && find . -type f ! -name 'crash-*' |
               grep -Ev '/[0-9a-f]{40}$' | sort) \
         <(cd "$CORPUS" && find . -type f | sort)
}
t_check same_seed_names same_names

# What rsync's client said to the daemon: greeting, module, auth reply.
daemon_shape() {
    local f=$CORPUS/daemon/pull_auth
    head -n 1 "$f" | grep -q '^@RSYNCD: 32\.0 ' &&
        sed -n 2p "$f" | grep -qx mod &&
        sed -n 3p "$f" | grep -q '^alice [A-Za-z0-9+/]\{20,\}$'
}
t_check daemon_capture_shape daemon_shape

# The batch files: stream flags, then protocol N as the name says.
batch_shape() {
    local f p
    for f in "$CORPUS"/batch/p*; do
        p=${f##*/p}
        p=${p%%_*}
        [ "$(od -An -tu4 -j4 -N4 "$f" | tr -d ' ')" = "$p" ] || { echo "bad: $f"; return 1; }
    done
}
t_check batch_capture_shape batch_shape

# The remote-shell capture: frames of data (tag 7) from the start.
mux_shape() {
    [ "$(od -An -tu1 -j4 -N1 "$CORPUS/mux/rsh_a" | tr -d ' ')" = 7 ]
}
t_check mux_capture_shape mux_shape

t_check replay_fresh_capture env FUZZ_CORPUS="$CORPUS" "$REPLAY"
t_done
