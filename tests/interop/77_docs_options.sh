#!/usr/bin/env bash
# The man pages and the code agree (docs_check.py): every long option of
# `ferry --help` and `ferry --daemon --help` has an entry in man/ferry.1,
# every option an entry documents is one ferry accepts, and the config
# parser's parameters and man/ferryd.conf.5's entries are the same set.
. "$(dirname "$0")/lib.sh"
t_require "$PYTHON"
t_setup
t_check docs_match "$PYTHON" "$FERRY_SRC/tests/interop/docs_check.py" "$FERRY" \
    "$FERRY_SRC/man/ferry.1" "$FERRY_SRC/man/ferryd.conf.5"
t_done
