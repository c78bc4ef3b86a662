#!/bin/bash
# contrib/ferry_pg_mirror.py: the scan for files written within an earlier
# run's sync window (the same-mtime problem, see ferry-pg-mirror(1)), and
# the margin around that window. No PostgreSQL needed: files with set
# modification times stand in for a data directory.
# - recent_files: exactly the regular files with lo <= mtime <= hi, the
#   filter rules applied (anchored and not), excluded directories not
#   entered, links skipped;
# - mtime_margin: the fine margin (more than a tick of the coarse clock
#   file times come from) only where the file system is local and the
#   files carry sub-second times; whole-second times or an unknown file
#   system get the wide one.

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$PYTHON"
t_setup

D=$T/pgdata
mkdir -p "$D/base/5" "$D/pg_stat_tmp" "$D/pg_wal" "$D/global" "$D/base/5/pgsql_tmp"

# mk REL MTIME_NS -- a file of a few bytes with that modification time.
mk() { printf 'x' >"$D/$1" && touch -d "@${2:0:10}.${2:10}" "$D/$1"; }
# Times in nanoseconds: the window is [1700000010.0, 1700000020.0] (a
# float mtime is good to about a microsecond: the outside ones miss by 1 ms).
mk base/5/before 1700000009999000000
mk base/5/at_lo 1700000010000000000
mk base/5/inside 1700000015123456789
mk base/5/at_hi 1700000020000000000
mk base/5/after 1700000020001000000
mk base/5/t3_16384 1700000015000000000
mk base/5/pg_internal.init 1700000015000000000
mk base/5/pgsql_tmp/x 1700000015000000000
mk pg_stat_tmp/global.stat 1700000015000000000
mk pg_wal/000000010000000000000001 1700000015000000000
mk global/pg_control 1700000015000000001
mk PG_VERSION 1700000015000000000
ln -s inside "$D/base/5/link_inside"
touch -h -d @1700000015 "$D/base/5/link_inside"

PYCHECK=$T/check.py
cat >"$PYCHECK" <<'EOF'
import os, sys
sys.path.insert(0, os.path.join(os.environ["FERRY_SRC"], "contrib"))
import ferry_pg_mirror as m

root = sys.argv[2]
excl = m.PG_EXCLUDES + m.MIRROR_OWN_EXCLUDES
what = sys.argv[1]
if what == "window":
    got = sorted(m.recent_files(root, 1700000010.0, 1700000020.0, excl))
    want = sorted(["base/5/at_lo", "base/5/inside", "base/5/at_hi", "PG_VERSION"])
    print("got ", got)
    print("want", want)
    sys.exit(got != want)
if what == "sizes":
    got = sorted(m.recent_files(root, float("-inf"), float("inf"), excl, sizes=True))
    print(got)
    sys.exit(got != sorted((1, r) for r in [
        "base/5/before", "base/5/at_lo", "base/5/inside", "base/5/at_hi",
        "base/5/after", "PG_VERSION"]))
if what == "margin":
    want = m.fine_mtime_margin() if sys.argv[3] == "fine" else m.MTIME_MARGIN
    print(m.fs_type(root), m.mtime_margin([root]), "want", want)
    sys.exit(m.mtime_margin([root]) != want)
if what == "fine_margin":
    # more than one tick of the clock file times come from, under the cap
    tick = __import__("time").clock_getres(m.CLOCK_REALTIME_COARSE)
    got = m.fine_mtime_margin()
    print("coarse tick", tick, "margin", got)
    sys.exit(not (tick < got <= m.FINE_MTIME_MARGIN))
if what == "margin_unknown_fs":
    m.fs_type = lambda path: "nfs4"
    print(m.mtime_margin([root]))
    sys.exit(m.mtime_margin([root]) != m.MTIME_MARGIN)
sys.exit(2)
EOF
export FERRY_SRC

t_check window_bounds_and_rules "$PYTHON" "$PYCHECK" window "$D"
t_check all_files_with_sizes "$PYTHON" "$PYCHECK" sizes "$D"

# global/pg_control has a sub-second mtime: on a local file system with
# such times the margin is the fine one. Which file system $T is on is
# this machine's business, so the expectation follows from its type.
fine_expected() {
    local fs
    fs=$(stat -f -c %T "$D")
    case $fs in
    ext2/ext3 | ext4 | xfs | btrfs | tmpfs | zfs | f2fs | overlayfs) echo fine ;;
    *) echo wide ;;
    esac
}
t_check margin_sub_second "$PYTHON" "$PYCHECK" margin "$D" "$(fine_expected)"
t_check margin_unknown_fs "$PYTHON" "$PYCHECK" margin_unknown_fs "$D"
t_check margin_fine_above_tick "$PYTHON" "$PYCHECK" fine_margin "$D"

# Whole-second times everywhere it looks (pg_control, PG_VERSION, the
# directory): the wide margin, whatever the file system.
touch -d @1700000015 "$D/global/pg_control" "$D/PG_VERSION" "$D"
t_check margin_whole_seconds "$PYTHON" "$PYCHECK" margin "$D" wide

t_done
