"""ferry-pg-mirror: keep a consistent base-backup mirror of a live PostgreSQL
data directory, synced by ferry (delta against the previous mirror).

One psql session (a coprocess) stays open from pg_backup_start to
pg_backup_stop, as a non-exclusive backup requires. The mirror is first
marked invalid (global/pg_control and backup_label removed, state file says
"incomplete"), then synced, and only after pg_backup_stop and the WAL copy
succeeded are backup_label and pg_control written into it: a mirror that
PostgreSQL can start is always a complete backup. See ferry-pg-mirror(1).

Python 3 standard library only; ferry and psql are run as programs. The
command is the small launcher contrib/ferry-pg-mirror, which imports this
module so that Python keeps its compiled form (compiling it anew took
40 ms of every run).
"""

import argparse
import base64
import fnmatch
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

PROG = "ferry-pg-mirror"
STATE_FILE = "ferry-pg-mirror.state"
TBLSPC_MAP_COPY = "ferry-pg-mirror.tablespace_map"
TBLSPC_DIR = "ferry-pg-mirror.tablespaces"
# The mirror's block sums, kept by ferry's receiver for the next run (ferry
# --sums-cache); they are only valid for the same checksum seed.
SUMS_FILE = "ferry-pg-mirror.sums"
SUMS_SEED = 20260
PAGE_SIZE = 8192
MAX_BLOCK_SIZE = 131072          # rsync's MAX_BLOCK_SIZE for protocol >= 30
DEFAULT_BLOCK_SIZE = 8192        # one PostgreSQL page; see the man page
# Seconds of slack around the window of a run's data transfers (see
# mtime_margin): whole-second (or 2 s) timestamps, or a file system whose
# times come from another machine's clock, need the wide one; a local file
# system with sub-second times stamps files from the kernel's coarse clock,
# which trails time.time() by less than one tick (fine_mtime_margin).
MTIME_MARGIN = 2.0
FINE_MTIME_MARGIN = 0.05         # the most a fine margin may be
CLOCK_REALTIME_COARSE = 5        # Linux <time.h>; Python's time module lacks it
# Local file systems whose times come from this kernel's clock; sub-second
# precision is checked on the files themselves (ext4 with 128-byte inodes
# keeps whole seconds).
LOCAL_FS_TYPES = {"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "zfs", "f2fs",
                  "bcachefs", "overlay", "jfs", "reiserfs", "nilfs2"}
MAX_STATE_BYTES = 65536

# Exit codes (documented in the man page).
EXIT_FAIL = 1
EXIT_USAGE = 2
EXIT_DEST_REFUSED = 3
EXIT_SOURCE = 4
EXIT_BACKUP = 5

# What pg_basebackup leaves out (PostgreSQL basebackup.c excludeDirContents
# and excludeFiles), as ferry filter rules anchored at the data directory.
# Directories whose contents are skipped are still created in the mirror.
PG_EXCLUDES = [
    "/postmaster.pid",
    "/postmaster.opts",
    "/postgresql.auto.conf.tmp",
    "/pg_replslot/*",
    "/pg_dynshmem/*",
    "/pg_notify/*",
    "/pg_serial/*",
    "/pg_snapshots/*",
    "/pg_stat_tmp/*",
    "/pg_subtrans/*",
    "pgsql_tmp*",
    "pg_internal.init",
    "/standby.signal",
    "/recovery.signal",
    "/backup_label",
    "/backup_label.old",
    "/tablespace_map",
    # temporary relations: t<backendid>_<relfilenode>[_fork][.segment]
    "/base/*/t[0-9]*_[0-9]*",
]
# Handled by other steps of the mirror: WAL (copied after the stop),
# pg_control (written last), tablespaces (synced one by one), our files.
MIRROR_OWN_EXCLUDES = [
    "/pg_wal",
    "/global/pg_control",
    "/pg_tblspc/*",
    "/ferry-pg-mirror.*",
]
# Inside a tablespace directory (PG_<version>_<catversion>/<dboid>/...).
TBLSPC_EXCLUDES = [
    "pgsql_tmp*",
    "pg_internal.init",
    "/*/*/t[0-9]*_[0-9]*",
]


class MirrorError(Exception):
    """A failure that ends the run; code is the process exit status."""

    def __init__(self, message, code=EXIT_FAIL):
        super().__init__(message)
        self.code = code


# ------------------------------------------------------------------ output

class Log:
    """Messages on stderr; verbosity from -v. With --timing, every step's
    start and wall time are kept and printed at the end (see timing())."""

    def __init__(self, verbose, timing=False):
        self.verbose = verbose
        self.timing = timing
        self.t0 = time.monotonic()
        self.steps = []          # (name, start offset, seconds)
        self.steps_lock = threading.Lock()

    def step(self, name):
        """Context manager timing one step of the run."""
        return _Step(self, name)

    def report_timing(self):
        if not self.timing:
            return
        total = time.monotonic() - self.t0
        print(f"{PROG}: timing (start offset, wall seconds):", file=sys.stderr)
        for name, start, secs in self.steps:
            print(f"{PROG}:   {start:7.3f} {secs:7.3f}  {name}", file=sys.stderr)
        print(f"{PROG}:   {0:7.3f} {total:7.3f}  total", file=sys.stderr, flush=True)

    def info(self, msg):
        if self.verbose >= 1:
            print(f"{PROG}: [{time.monotonic() - self.t0:6.1f}s] {msg}",
                  file=sys.stderr, flush=True)

    def debug(self, msg):
        if self.verbose >= 2:
            print(f"{PROG}: {msg}", file=sys.stderr, flush=True)

    @staticmethod
    def warn(msg):
        print(f"{PROG}: warning: {msg}", file=sys.stderr, flush=True)


class _Step:
    def __init__(self, log, name):
        self.log, self.name = log, name

    def __enter__(self):
        self.start = time.monotonic()
        return self

    def __exit__(self, *exc):
        end = time.monotonic()
        with self.log.steps_lock:
            self.log.steps.append((self.name, self.start - self.log.t0, end - self.start))
        return False


class Background:
    """FN(*ARGS) in a thread; join() returns its result or raises its
    exception. Used to overlap steps that do not depend on each other (a
    ferry run to the destination and a query to the source)."""

    def __init__(self, fn, *args):
        self.result = None
        self.error = None
        self.thread = threading.Thread(target=self._run, args=(fn, args), daemon=True)
        self.thread.start()

    def _run(self, fn, args):
        try:
            self.result = fn(*args)
        except BaseException as e:    # re-raised in the caller's thread
            self.error = e

    def join(self):
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.result


# ------------------------------------------------------------ psql session

class PsqlSession:
    """One psql process kept open; queries are written to its stdin and each
    is followed by an \\echo marker, so we know where its output ends and
    whether it failed (psql's ERROR variable)."""

    MARK = "@@ferry-pg-mirror-end@@"

    def __init__(self, psql, conninfo, log):
        with log.step("start psql"):
            self._start(psql, conninfo, log)

    def _start(self, psql, conninfo, log):
        self.log = log
        self.stderr_lines = []
        cmd = [psql, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=0"]
        if conninfo:
            cmd += ["-d", conninfo]
        env = dict(os.environ)
        env.setdefault("PGAPPNAME", PROG)
        log.debug("starting " + " ".join(shlex.quote(c) for c in cmd))
        try:
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True, bufsize=1, env=env)
        except OSError as e:
            raise MirrorError(f"cannot run psql ({psql}): {e.strerror}", EXIT_SOURCE)
        self.stderr_thread = threading.Thread(target=self._drain_stderr, daemon=True)
        self.stderr_thread.start()

    def _drain_stderr(self):
        for line in self.proc.stderr:
            line = line.rstrip("\n")
            self.stderr_lines.append(line)
            self.log.debug("psql: " + line)

    def last_stderr(self, n=3):
        return " / ".join(self.stderr_lines[-n:]) or "(no message)"

    def query(self, sql, what):
        """Run one SQL statement; return its rows as lists of '|'-separated
        fields. Raises MirrorError naming WHAT on an SQL error or if psql died."""
        self.log.debug(f"SQL: {sql}")
        with self.log.step(f"SQL {what}"):
            return self._query(sql, what)

    def _query(self, sql, what):
        try:
            self.proc.stdin.write(f"{sql};\n\\echo {self.MARK} :ERROR\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self._died(what)
        rows = []
        while True:
            line = self.proc.stdout.readline()
            if not line:
                self._died(what)
            line = line.rstrip("\n")
            if line.startswith(self.MARK):
                if line.split()[-1] != "false":
                    time.sleep(0.05)   # let the stderr thread catch up
                    raise MirrorError(f"{what} failed: {self.last_stderr()}")
                return rows
            rows.append(line.split("|"))

    def value(self, sql, what):
        rows = self.query(sql, what)
        if len(rows) != 1 or not rows[0]:
            raise MirrorError(f"{what}: expected one row, got {len(rows)}")
        return rows[0][0]

    def _died(self, what):
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self.stderr_thread.join(timeout=2)
        raise MirrorError(f"{what} failed: the session to the source ended: "
                          f"{self.last_stderr()}")

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# ---------------------------------------------------------------- WAL math

def parse_lsn(text):
    hi, lo = text.strip().split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


def format_lsn(lsn):
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def wal_file_name(tli, segno, seg_size):
    """XLogFileName() of PostgreSQL's xlog_internal.h."""
    per_xlogid = 0x100000000 // seg_size
    return f"{tli:08X}{segno // per_xlogid:08X}{segno % per_xlogid:08X}"


def wal_segments(tli, start_lsn, stop_lsn, seg_size):
    """Names of the segments holding WAL from start_lsn up to stop_lsn (the
    end of the backup-end record; a stop exactly on a boundary needs only the
    segment before it)."""
    first = start_lsn // seg_size
    last = max(first, (stop_lsn - 1) // seg_size)
    return [wal_file_name(tli, s, seg_size) for s in range(first, last + 1)]


def parse_label(labelfile):
    """START WAL LOCATION and START TIMELINE from a backup_label text."""
    m = re.search(r"^START WAL LOCATION: ([0-9A-F]+/[0-9A-F]+) \(file ([0-9A-F]{24})\)",
                  labelfile, re.M)
    t = re.search(r"^START TIMELINE: ([0-9]+)", labelfile, re.M)
    if not m or not t:
        raise MirrorError("backup_label from the server lacks START WAL LOCATION "
                          "or START TIMELINE")
    return parse_lsn(m.group(1)), m.group(2), int(t.group(1))


# ----------------------------------------------------------------- state

def parse_state(text):
    state = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith("#"):
            k, v = line.split("=", 1)
            state[k.strip()] = v.strip()
    return state


def format_state(fields):
    lines = ["# ferry-pg-mirror state: do not edit. 'status = complete' means the",
             "# mirror holds a full base backup (backup_label, WAL, pg_control)."]
    lines += [f"{k} = {v}" for k, v in fields.items()]
    return "\n".join(lines) + "\n"


def float_or_none(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


# ------------------------------------------------------------- destination

class Dest:
    """Where the mirror lives: a local path, DEST inside a daemon module
    (--via host::module) or DEST on an ssh host (--via host)."""

    def __init__(self, dest, via):
        self.via = via
        if not via:
            self.kind = "local"
            self.path = os.path.abspath(dest)
            self.base = self.path
        elif "::" in via:
            self.kind = "daemon"
            host, module = via.split("::", 1)
            if not host or not module or "/" in module:
                raise MirrorError(f"--via {via}: expected host::module", EXIT_USAGE)
            inner = dest.strip("/")
            self.base = f"{host}::{module}" + (f"/{inner}" if inner and inner != "." else "")
            self.path = dest
        else:
            self.kind = "ssh"
            if "/" in via:
                raise MirrorError(f"--via {via}: expected an ssh host or host::module",
                                  EXIT_USAGE)
            self.base = f"{via}:{dest}"
            self.path = dest

    def target(self, sub=""):
        """ferry's name for directory SUB of the mirror (with a trailing /)."""
        return self.base.rstrip("/") + "/" + (sub.strip("/") + "/" if sub else "")

    def describe(self):
        return self.path if self.kind == "local" else self.base


# ------------------------------------------------------------ ferry runs

STAT_KEYS = {
    "Number of regular files transferred": "files",
    "Number of created files": "created",
    "Number of deleted files": "deleted",
    "Total bytes sent": "sent",
    "Total bytes received": "received",
    "Literal data": "literal",
    "Matched data": "matched",
    "Total file size": "size",
}


def parse_stats(output):
    stats = {}
    for line in output.splitlines():
        if ":" not in line:
            continue
        key, val = line.split(":", 1)
        name = STAT_KEYS.get(key.strip())
        if name:
            m = re.match(r"\s*([0-9,]+)", val)
            if m:
                stats[name] = int(m.group(1).replace(",", ""))
    return stats


class Ferry:
    """Runs ferry with the options every run shares, sums the --stats."""

    # 24: some files vanished (a table dropped while we copied) -- harmless,
    # the WAL replay recreates or removes what changed.
    OK_CODES = (0, 24)

    def __init__(self, args, log):
        self.exe = args.ferry
        self.log = log
        self.common = []
        if args.rsh:
            self.common += ["-e", args.rsh]
        for opt in args.ferry_option:
            self.common.append(opt)
        self.show_progress = args.progress
        self.totals = {k: 0 for k in STAT_KEYS.values()}
        self.runs = 0
        self.lock = threading.Lock()   # --parallel runs report from threads

    def run(self, phase, opts, sources, dest, passthrough=False, allow_missing=False):
        """Run one ferry; returns (exit code, output). Raises on failure
        unless allow_missing and ferry exited 23 (source absent)."""
        with self.log.step(f"ferry: {phase}"):
            return self._run(phase, opts, sources, dest, passthrough, allow_missing)

    def _run(self, phase, opts, sources, dest, passthrough, allow_missing):
        cmd = [self.exe] + self.common + opts + ["--stats"] + sources + [dest]
        self.log.info(f"{phase}: {' '.join(shlex.quote(c) for c in cmd)}")
        try:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        except OSError as e:
            raise MirrorError(f"{phase}: cannot run {self.exe}: {e.strerror}")
        err_chunks = []
        err_thread = threading.Thread(
            target=lambda: err_chunks.append(proc.stderr.read()), daemon=True)
        err_thread.start()
        out = bytearray()
        show = passthrough and (self.show_progress or self.log.verbose >= 2)
        while True:
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            out += chunk
            if show:
                sys.stderr.buffer.write(chunk)
                sys.stderr.flush()
        rc = proc.wait()
        err_thread.join()
        text = out.decode(errors="replace")
        err = b"".join(err_chunks).decode(errors="replace").strip()
        if err:
            self.log.debug(f"{phase}: ferry stderr: {err}")
        if rc not in self.OK_CODES:
            if allow_missing and rc == 23:
                return rc, err
            raise MirrorError(f"{phase}: ferry exited {rc}: {err or '(no message)'}")
        stats = parse_stats(text)
        with self.lock:
            for k, v in stats.items():
                self.totals[k] += v
            self.runs += 1
        self.log.info(f"{phase}: {stats.get('files', 0)} files transferred, "
                      f"{stats.get('sent', 0) + stats.get('received', 0)} bytes moved")
        return rc, text


# ----------------------------------------------------------- the mirror

class Mirror:
    def __init__(self, args):
        self.args = args
        self.log = Log(args.verbose, args.timing)
        self.src = os.path.abspath(args.pgdata)
        self.dest = Dest(args.dest, args.via)
        self.ferry = Ferry(args, self.log)
        self.work = tempfile.mkdtemp(prefix="ferry-pg-mirror.")
        self.session = None
        self.src_stat = None
        self.prev_state = {}
        self.stale_pidfile = False
        self.new_mirror = False
        self.seg_size = 0
        self.server_version = 0
        self.in_recovery = False
        self.dest_has_tblspc = True   # until probe_dest knows better
        self.mtime_margin = MTIME_MARGIN   # until the source's file systems are known
        self.sums_cache = []          # ferry options of the block-sum cache, once in use

    # ------------------------------------------------------------ helpers

    def stage_dir(self, name, like):
        """A fresh local directory with the mode/owner/mtime of LIKE, so that
        ferry -a gives the mirror's directory the source's attributes."""
        path = os.path.join(self.work, name)
        os.makedirs(path)
        self.copy_attrs(like, path)
        return path

    def copy_attrs(self, like, path):
        st = os.stat(like)
        os.chmod(path, st.st_mode & 0o7777)
        if os.geteuid() == 0:
            os.chown(path, st.st_uid, st.st_gid)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))

    def stage_file(self, path, data, mode=0o600):
        """Write a file for the mirror owned like the data directory (when we
        run as root, so the cluster's user can read it in the mirror)."""
        if isinstance(data, str):
            data = data.encode()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        os.chmod(path, mode)
        if os.geteuid() == 0:
            os.chown(path, self.src_stat.st_uid, self.src_stat.st_gid)

    def transfer_opts(self, checksum=None):
        """-a with the delta settings every data transfer shares. --inplace
        writes only the changed blocks (and needs no second copy of a 1 GiB
        segment); it is safe here because the mirror is marked invalid for
        as long as files are being rewritten. Local mirrors use the delta
        algorithm too (rsync and ferry default to whole files locally)."""
        opts = ["-a", "--inplace",
                "--whole-file" if self.args.whole_file else "--no-whole-file"]
        opts += self.sync_opts()
        if self.args.block_size:
            opts.append(f"--block-size={self.args.block_size}")
        if self.args.checksum if checksum is None else checksum:
            opts.append("--checksum")
        return opts

    def sync_opts(self):
        """As pg_basebackup: what a run writes is on disk before the next
        step, so pg_control, written last, never reaches the disk ahead of
        the data it vouches for (--no-sync: leave it to the kernel)."""
        return [] if self.args.no_sync else ["--fsync"]

    def block_opts(self):
        return self.transfer_opts() + ["--delete"]

    # ------------------------------------------------------------ checks

    def check_source_dir(self):
        if not os.path.isfile(os.path.join(self.src, "PG_VERSION")):
            raise MirrorError(f"--pgdata {self.src}: not a PostgreSQL data directory "
                              "(no PG_VERSION)", EXIT_USAGE)
        if not os.access(os.path.join(self.src, "global", "pg_control"), os.R_OK):
            raise MirrorError(f"--pgdata {self.src}: cannot read global/pg_control "
                              "(run as the cluster's owner or root)", EXIT_USAGE)
        self.src_stat = os.stat(self.src)
        if self.dest.kind == "local":
            d = os.path.realpath(self.dest.path)
            s = os.path.realpath(self.src)
            if d == s or d.startswith(s + "/") or s.startswith(d + "/"):
                raise MirrorError(f"--dest {self.dest.path} overlaps the source data "
                                  f"directory {self.src}", EXIT_USAGE)

    def probe_dest(self):
        """Read the mirror's postmaster.pid and state file; refuse a running
        cluster. A local pid file is checked for a live postgres process; a
        remote one cannot be checked, so any remote pid file refuses."""
        if self.dest.kind == "local":
            root = self.dest.path
        else:
            # The mirror's pg_tblspc entries and tablespace directories come
            # along (links as links, directories empty) so that the
            # tablespace runs can be skipped when neither side has any.
            root = os.path.join(self.work, "probe")
            os.makedirs(root)
            rc, _ = self.ferry.run(
                "probe destination",
                ["-rl", "--include=/postmaster.pid", f"--include=/{STATE_FILE}",
                 "--include=/global/", "--include=/pg_tblspc/", "--include=/pg_tblspc/*",
                 f"--include=/{TBLSPC_DIR}/", f"--include=/{TBLSPC_DIR}/*", "--exclude=*"],
                [self.dest.target()], root + "/", allow_missing=True)
            if rc == 23:
                self.log.info("destination does not exist yet: first mirror")
        pidfile = os.path.join(root, "postmaster.pid")
        statefile = os.path.join(root, STATE_FILE)
        self.new_mirror = not os.path.isdir(os.path.join(root, "global"))
        self.dest_has_tblspc = any(nonempty_dir(os.path.join(root, d))
                                   for d in ("pg_tblspc", TBLSPC_DIR))
        if os.path.exists(pidfile):
            self.check_pidfile(pidfile)
        if os.path.exists(statefile):
            with open(statefile, "rb") as f:
                self.prev_state = parse_state(f.read(MAX_STATE_BYTES).decode(errors="replace"))
        self.log.info(f"destination {self.dest.describe()}: "
                      + ("new mirror" if self.new_mirror else
                         f"previous mirror, status {self.prev_state.get('status', 'unknown')}"))

    def check_pidfile(self, pidfile):
        with open(pidfile, "rb") as f:
            first = f.read(64).decode(errors="replace").split("\n", 1)[0].strip()
        if self.dest.kind != "local":
            raise MirrorError(
                f"destination {self.dest.describe()} contains postmaster.pid (pid {first}): "
                "a server may be running on the mirror, which cannot be checked remotely; "
                "stop it, or remove postmaster.pid if no server runs there",
                EXIT_DEST_REFUSED)
        pid = int(first) if first.isdigit() else 0
        if pid > 0 and pid_is_postgres(pid):
            raise MirrorError(
                f"destination {self.dest.path} is a running cluster (postmaster pid {pid} "
                "is alive): stop that server before mirroring into it", EXIT_DEST_REFUSED)
        self.log.info(f"destination has a stale postmaster.pid (pid {first} not running); "
                      "it will be removed")
        self.stale_pidfile = True

    # ----------------------------------------------------------- session

    def open_session(self):
        self.session = PsqlSession(self.args.psql, self.args.source_conn, self.log)
        try:
            self.server_version = int(self.session.value(
                "SELECT current_setting('server_version_num')", "connecting to the source"))
        except MirrorError as e:
            raise MirrorError(f"cannot connect to the source cluster "
                              f"({self.args.source_conn or 'libpq defaults'}): "
                              f"{self.session.last_stderr()}", EXIT_SOURCE) from e
        if self.server_version < 100000:
            raise MirrorError(f"source server version {self.server_version} is older "
                              "than 10, which is not supported", EXIT_SOURCE)
        row = self.session.query(
            "SELECT setting, unit FROM pg_settings WHERE name = 'wal_segment_size'",
            "reading wal_segment_size")[0]
        self.seg_size = int(row[0]) * (8192 if row[1] == "8kB" else 1)
        if self.seg_size <= 0 or self.seg_size & (self.seg_size - 1):
            raise MirrorError(f"unexpected wal_segment_size {row}")
        self.in_recovery = self.session.value("SELECT pg_is_in_recovery()",
                                              "checking recovery state") == "t"
        self.check_data_directory()
        self.log.info(f"source: PostgreSQL {self.server_version}, wal_segment_size "
                      f"{self.seg_size}" + (", a standby" if self.in_recovery else ""))

    def check_data_directory(self):
        """Guard against syncing one cluster while backing up another."""
        try:
            datadir = self.session.value("SELECT current_setting('data_directory')",
                                         "reading data_directory")
        except MirrorError as e:
            Log.warn(f"cannot check the server's data_directory ({e}); "
                     "trusting --pgdata")
            return
        if os.path.realpath(datadir) != os.path.realpath(self.src):
            raise MirrorError(f"--pgdata {self.src} is not the data directory of the "
                              f"connected server ({datadir})", EXIT_USAGE)

    def reserve_wal(self):
        """A temporary physical slot keeps the backup's WAL in pg_wal until we
        have copied it (it goes away with the session)."""
        if self.args.no_slot:
            return
        slot = f"ferry_pg_mirror_{os.getpid()}"
        try:
            self.session.query(
                f"SELECT pg_create_physical_replication_slot('{slot}', true, true)",
                "creating a temporary replication slot")
            self.log.info(f"WAL reserved by temporary slot {slot}")
        except MirrorError as e:
            Log.warn(f"{e}; WAL is not reserved, a checkpoint during a long sync may "
                     "remove segments the mirror needs")

    def backup_start(self):
        label = self.args.label.replace("'", "''")
        if self.server_version >= 150000:
            sql = f"SELECT pg_backup_start('{label}', true)"
        else:
            sql = f"SELECT pg_start_backup('{label}', true, false)"
        lsn = parse_lsn(self.session.value(sql, "pg_backup_start"))
        self.log.info(f"backup started at {format_lsn(lsn)}")
        return lsn

    def backup_stop(self):
        enc = "current_setting('server_encoding')"
        fields = (f"lsn, translate(encode(convert_to(labelfile, {enc}), 'base64'), E'\\n', ''), "
                  f"translate(encode(convert_to(coalesce(spcmapfile, ''), {enc}), 'base64'), "
                  "E'\\n', '')")
        if self.server_version >= 150000:
            sql = f"SELECT {fields} FROM pg_backup_stop(false)"
        else:
            sql = f"SELECT {fields} FROM pg_stop_backup(false, false)"
        rows = self.session.query(sql, "pg_backup_stop")
        if len(rows) != 1 or len(rows[0]) != 3:
            raise MirrorError(f"pg_backup_stop returned {rows!r}")
        lsn = parse_lsn(rows[0][0])
        labelfile = base64.b64decode(rows[0][1])
        spcmap = base64.b64decode(rows[0][2])
        self.log.info(f"backup stopped at {format_lsn(lsn)}")
        return lsn, labelfile, spcmap

    # ------------------------------------------------------------ phases

    def invalidate_mirror(self, run_start):
        """Before any data file changes: remove the mirror's pg_control,
        backup_label and signal files, and record 'incomplete', so that an
        interrupted or failed run leaves a mirror PostgreSQL refuses to start
        (no pg_control) rather than a silently inconsistent one."""
        prev_since = float_or_none(self.prev_state.get("verify_since"))
        since = min(prev_since, run_start) if prev_since is not None else run_start
        if self.new_mirror:
            since = run_start
        inv = os.path.join(self.work, "invalidate")
        os.makedirs(os.path.join(inv, "global"), mode=0o700)
        os.chmod(inv, 0o700)
        self.stage_file(os.path.join(inv, STATE_FILE), format_state({
            "status": "incomplete",
            "started": time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(run_start)),
            "source": self.src,
            "verify_since": f"{since:.3f}",
            "verify_until": "open",
        }))
        rules = [f"--include=/{STATE_FILE}", "--include=/global/",
                 "--include=/global/pg_control", "--include=/backup_label",
                 "--include=/backup_label.old", "--include=/tablespace_map",
                 f"--include=/{TBLSPC_MAP_COPY}",
                 "--include=/standby.signal", "--include=/recovery.signal"]
        if self.stale_pidfile:
            rules.append("--include=/postmaster.pid")
        rules.append("--exclude=*")
        # The deletions come first and the state file's fsync then commits
        # them with it (a journalling file system's log is written in
        # order), before any data file changes.
        self.ferry.run("mark mirror incomplete",
                       ["-r", "--delete-before", "--ignore-times"] + self.sync_opts() + rules,
                       [inv + "/"], self.dest.target())

    def sync_data(self):
        excludes = PG_EXCLUDES + MIRROR_OWN_EXCLUDES
        # --delete-excluded also clears what a server run on the mirror left
        # (postmaster.opts, pg_internal.init, pg_stat_tmp, slots...); the
        # parts other steps own are protected instead.
        opts = self.block_opts() + ["--delete-excluded"]
        opts += [f"--exclude={p}" for p in excludes]
        opts += [f"--filter=P {p}" for p in MIRROR_OWN_EXCLUDES]
        if self.args.progress:
            opts.append("--progress")
        if self.args.verbose >= 3:
            opts.append("-v")
        if self.args.parallel > 1:
            self.parallel_prefill(excludes)
        cache = [] if self.args.no_sums_cache else [f"--checksum-seed={SUMS_SEED}",
                                                    f"--sums-cache={SUMS_FILE}"]
        self.sums_cache = cache
        try:
            self.ferry.run("sync data directory", opts + cache, [self.src + "/"],
                           self.dest.target(), passthrough=True)
        except MirrorError as e:
            # An rsync receiver (a daemon, or over ssh) refuses the option
            # before it changes anything: sync again without it.
            if not cache or "--sums-cache" not in str(e):
                raise
            self.sums_cache = []
            self.log.info("the mirror's receiver is not ferry: no block-sum cache")
            self.ferry.run("sync data directory", opts, [self.src + "/"],
                           self.dest.target(), passthrough=True)

    def tablespaces(self):
        """{oid: directory} of pg_tblspc, following the links."""
        result = {}
        tdir = os.path.join(self.src, "pg_tblspc")
        if not os.path.isdir(tdir):
            return result
        for name in sorted(os.listdir(tdir)):
            if not name.isdigit():
                continue
            path = os.path.realpath(os.path.join(tdir, name))
            if os.path.isdir(path):
                result[name] = path
            else:
                Log.warn(f"pg_tblspc/{name} does not lead to a directory; skipped")
        return result

    def sync_tablespaces(self, spaces):
        """Tablespaces live inside the mirror, in ferry-pg-mirror.tablespaces/
        <oid>/, and the mirror's pg_tblspc/<oid> are relative links to them
        (PostgreSQL 15 refuses anything but links in pg_tblspc). The mirror is
        thus self-contained and a local mirror never points into the
        source's tablespaces. Tablespaces gone from the source are removed."""
        if not spaces and not self.dest_has_tblspc:
            self.log.info("no tablespaces in the source or the mirror")
            return spaces
        # The links go from the mirror's root, as pg_tblspc/<oid>: a daemon
        # module without chroot (rsync's and ferry's) keeps a received
        # link's ".." only as far as the link lies below the transfer's root.
        links_root = os.path.join(self.work, "tblspc-links")
        links = os.path.join(links_root, "pg_tblspc")
        dirs = os.path.join(self.work, "tblspc-dirs")
        os.makedirs(links)
        os.makedirs(dirs)
        self.copy_attrs(self.src, links_root)
        self.copy_attrs(os.path.join(self.src, "pg_tblspc"), links)
        self.copy_attrs(os.path.join(self.src, "pg_tblspc"), dirs)
        for oid, path in spaces.items():
            os.symlink(f"../{TBLSPC_DIR}/{oid}", os.path.join(links, oid))
            os.makedirs(os.path.join(dirs, oid))
            self.copy_attrs(path, os.path.join(dirs, oid))
            if os.geteuid() == 0:
                os.lchown(os.path.join(links, oid), self.src_stat.st_uid, self.src_stat.st_gid)
        attrs = "-pgot" if os.geteuid() == 0 else "-pt"
        self.ferry.run("tablespace directories", ["-d", "--delete", attrs],
                       [dirs + "/"], self.dest.target(TBLSPC_DIR))
        self.ferry.run("tablespace links",
                       ["-rl", "--delete", attrs, "--include=/pg_tblspc/",
                        "--include=/pg_tblspc/*", "--exclude=*"],
                       [links_root + "/"], self.dest.target())
        opts = self.block_opts() + [f"--exclude={p}" for p in TBLSPC_EXCLUDES]
        for oid, path in spaces.items():
            self.ferry.run(f"sync tablespace {oid} ({path})", opts, [path + "/"],
                           self.dest.target(f"{TBLSPC_DIR}/{oid}"), passthrough=True)
        return spaces

    def scan_recent(self, spaces):
        """Close the same-mtime window: a file written in the same clock tick
        just after a previous run read it keeps its size and mtime, so the
        quick check would skip it forever. Finds the files whose mtime lies
        in the window of the previous unverified runs; verify_recent then
        compares them by content. Runs alongside the data sync, but only after
        pg_backup_start: a file deleted after the scan was deleted inside
        the backup, and WAL replay removes it. Returns [(mirror prefix,
        source root, [relative paths])]."""
        since = float_or_none(self.prev_state.get("verify_since"))
        until = float_or_none(self.prev_state.get("verify_until"))
        if self.new_mirror or self.args.checksum:
            return []
        if since is None:
            since = 0.0   # history unknown: compare everything once
        if until is None:
            until = time.time()
        margin = self.mtime_margin
        lo, hi = since - margin, until + margin
        roots = [("", self.src, PG_EXCLUDES + MIRROR_OWN_EXCLUDES)]
        roots += [(f"{TBLSPC_DIR}/{oid}", path, TBLSPC_EXCLUDES)
                  for oid, path in spaces.items()]
        found = []
        for prefix, root, excl in roots:
            with self.log.step(f"scan {prefix or 'data directory'} for files to verify"):
                files = recent_files(root, lo, hi, excl)
            if files:
                found.append((prefix, root, files))
        return found

    def verify_recent(self, found):
        for prefix, root, files in found:
            rules = include_rules(files)
            rfile = os.path.join(self.work, f"verify-{prefix.replace('/', '_') or 'data'}")
            with open(rfile, "w") as f:
                f.write("\n".join(rules) + "\n")
            if prefix == "" and self.sums_cache:
                # A delta against the mirror's kept block sums: the sender
                # reads each file once, the receiver only the blocks that
                # differ (--checksum read both copies whole).
                opts = self.transfer_opts(checksum=False) + ["--ignore-times"] + \
                    self.sums_cache
            else:
                opts = self.transfer_opts(checksum=True)
            opts.append(f"--include-from={rfile}")
            self.log.info(f"verify {len(files)} files modified during earlier runs")
            self.log.debug("verify: " + " ".join(files))
            self.ferry.run(f"verify {prefix or 'data directory'}", opts, [root + "/"],
                           self.dest.target(prefix))

    def parallel_prefill(self, excludes):
        """--parallel N: split the regular files (largest first, into N sets of
        about equal bytes) over N concurrent ferry runs without --delete; the
        single main run that follows then only deletes and catches up."""
        files = recent_files(self.src, float("-inf"), float("inf"), excludes, sizes=True)
        buckets = [[0, []] for _ in range(self.args.parallel)]
        for size, rel in sorted(files, reverse=True):
            b = min(buckets, key=lambda x: x[0])
            b[0] += size
            b[1].append(rel)
        procs = []
        for i, (_, rels) in enumerate(buckets):
            if not rels:
                continue
            rfile = os.path.join(self.work, f"parallel-{i}")
            with open(rfile, "w") as f:
                f.write("\n".join(include_rules(rels)) + "\n")
            opts = self.transfer_opts() + [f"--include-from={rfile}"]
            t = threading.Thread(target=self._parallel_one, args=(i, opts, procs))
            t.start()
            procs.append(t)
        for t in procs:
            t.join()
        if getattr(self, "_parallel_error", None):
            raise self._parallel_error

    def _parallel_one(self, i, opts, procs):
        try:
            self.ferry.run(f"parallel part {i + 1}/{self.args.parallel}", opts,
                           [self.src + "/"], self.dest.target())
        except MirrorError as e:
            self._parallel_error = e

    def stage_pg_control(self, fin):
        """Copy pg_control inside the backup window; it reaches the mirror
        last, in the commit step."""
        src = os.path.join(self.src, "global", "pg_control")
        gdir = os.path.join(fin, "global")
        os.makedirs(gdir)
        self.copy_attrs(os.path.join(self.src, "global"), gdir)
        dst = os.path.join(gdir, "pg_control")
        shutil.copy2(src, dst)
        if os.geteuid() == 0:
            st = os.stat(src)
            os.chown(dst, st.st_uid, st.st_gid)

    def copy_wal(self, labelfile, stop_lsn):
        label = labelfile.decode(errors="replace")
        start_lsn, start_file, tli = parse_label(label)
        segs = wal_segments(tli, start_lsn, stop_lsn, self.seg_size)
        if segs[0] != start_file:
            raise MirrorError(f"computed first WAL segment {segs[0]} but backup_label "
                              f"says {start_file}")
        wal_dir = os.path.join(self.src, "pg_wal")
        missing = [s for s in segs if not os.path.isfile(os.path.join(wal_dir, s))]
        if missing:
            raise MirrorError(f"WAL segment(s) {', '.join(missing)} needed by the backup "
                              f"are not in {wal_dir} (removed by a checkpoint? run with "
                              "a replication slot: do not pass --no-slot)", EXIT_BACKUP)
        stage = self.stage_wal(wal_dir, segs, stop_lsn)
        # The stage holds exactly the mirror's pg_wal: links to the source's
        # segments and history files (-L sends their contents), and the last
        # segment cut at the stop point, whose zero tail costs next to
        # nothing under -z (a recycled segment's old WAL did).
        # --ignore-times: the mirror may hold a segment of this name from the
        # run before (on a standby, pg_backup_start does not switch
        # segments); a segment always has the same size, and what was added
        # to it since may carry the same mtime second. (A --fuzzy basis for
        # the zero tail, tried, made the receiver read three times the
        # segment and cost more than it saved at 1 Gbit/s.)
        self.ferry.run(f"copy WAL {segs[0]}..{segs[-1]}",
                       self.transfer_opts(checksum=False)
                       + ["-L", "--ignore-times", "--delete"],
                       [stage + "/"], self.dest.target("pg_wal"))
        return segs

    def stage_wal(self, wal_dir, segs, stop_lsn):
        """A directory laid out as the mirror's pg_wal: links to the needed
        segments and the history files, an empty archive_status, and, from
        a primary, the last segment holding only the WAL up to stop_lsn, the
        rest zeros (a hole), as pg_basebackup -X stream writes it: replay
        ends at the first invalid record after the backup-end record, and
        what follows in the source's segment is newer WAL or, in a recycled
        segment, old WAL nobody replays. From a standby the whole segment
        (there the stop point is only the last replayed record)."""
        stage = self.stage_dir("wal", wal_dir)
        for name in sorted(os.listdir(wal_dir)):
            if name.endswith(".history") or name in segs[:-1]:
                os.symlink(os.path.join(wal_dir, name), os.path.join(stage, name))
        if os.path.isdir(os.path.join(wal_dir, "archive_status")):
            self.stage_dir(os.path.join("wal", "archive_status"),
                           os.path.join(wal_dir, "archive_status"))
        last = os.path.join(wal_dir, segs[-1])
        if self.in_recovery:
            os.symlink(last, os.path.join(stage, segs[-1]))
            self.copy_attrs(wal_dir, stage)
            return stage
        keep = stop_lsn - (stop_lsn - 1) // self.seg_size * self.seg_size
        with open(last, "rb") as f:
            head = f.read(keep)
        if len(head) != keep:
            raise MirrorError(f"WAL segment {last} is shorter than the backup's stop "
                              f"point {format_lsn(stop_lsn)}", EXIT_BACKUP)
        path = os.path.join(stage, segs[-1])
        self.stage_file(path, head)
        with open(path, "r+b") as f:
            f.truncate(self.seg_size)
        st = os.stat(last)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        self.copy_attrs(wal_dir, stage)
        return stage

    def standby_files(self, fin):
        self.stage_file(os.path.join(fin, "standby.signal"), "")
        conf = os.path.join(self.src, "postgresql.auto.conf")
        try:
            with open(conf, encoding="utf-8", errors="surrogateescape") as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            lines = []
        lines = [ln for ln in lines
                 if not re.match(r"\s*primary_(conninfo|slot_name)\s*=", ln)]
        conninfo = self.args.primary_conninfo or self.default_primary_conninfo()
        lines.append("# written by ferry-pg-mirror --standby")
        lines.append(f"primary_conninfo = '{pg_conf_quote(conninfo)}'")
        if self.args.primary_slot:
            lines.append(f"primary_slot_name = '{pg_conf_quote(self.args.primary_slot)}'")
        self.stage_file(os.path.join(fin, "postgresql.auto.conf"),
                        ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"))

    def default_primary_conninfo(self):
        if self.args.source_conn and "=" in self.args.source_conn:
            return self.args.source_conn
        row = self.session.query(
            "SELECT coalesce(host(inet_server_addr()), "
            "split_part(current_setting('unix_socket_directories'), ',', 1)), "
            "current_setting('port'), current_user", "reading connection settings")[0]
        return f"host={row[0].strip()} port={row[1]} user={row[2]} application_name=ferry_mirror"

    def commit(self, fin, labelfile, spcmap, start_lsn, stop_lsn, segs, run_start, window):
        """The last write: backup_label, pg_control and the state 'complete'.
        WINDOW is (start, end) of the data transfers: only a file written
        while they read it can hide a change behind an unchanged mtime, so
        the next run verifies the files modified in it (see scan_recent)."""
        self.stage_file(os.path.join(fin, "backup_label"), labelfile)
        if spcmap.strip():
            # Informational only: as tablespace_map PostgreSQL would point
            # the mirror's pg_tblspc links back at the source's paths.
            self.stage_file(os.path.join(fin, TBLSPC_MAP_COPY), spcmap)
        if self.args.standby:
            self.standby_files(fin)
        self.stage_file(os.path.join(fin, STATE_FILE), format_state({
            "status": "complete",
            "started": time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(run_start)),
            "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "source": self.src,
            "start_lsn": format_lsn(start_lsn),
            "stop_lsn": format_lsn(stop_lsn),
            "wal": f"{segs[0]}..{segs[-1]}",
            "standby": "yes" if self.args.standby else "no",
            "verify_since": f"{window[0]:.3f}",
            "verify_until": f"{window[1]:.3f}",
        }))
        self.ferry.run("commit backup_label and pg_control",
                       ["-a", "--ignore-times"] + self.sync_opts(),
                       [fin + "/"], self.dest.target())

    # --------------------------------------------------------------- run

    def run(self):
        t0 = time.monotonic()
        self.check_source_dir()
        self.connect_and_probe()
        run_start = time.time()
        # Marking the mirror incomplete needs only the destination, the fast
        # checkpoint of pg_backup_start only the source: both run at once,
        # and both are done before the first data file is touched.
        invalidate = Background(self.invalidate_mirror, run_start)
        try:
            start_lsn = self.backup_start()
            checkpoint_end = time.time()
        finally:
            invalidate.join()
        spaces = self.tablespaces()
        self.mtime_margin = mtime_margin([self.src] + list(spaces.values()))
        self.log.info(f"modification-time margin of the sync window: {self.mtime_margin} s")
        scan = Background(self.scan_recent, spaces)
        # On a file system with fine times the window starts a margin after
        # the backup's checkpoint ended (mostly already past, behind the
        # mark-incomplete run): what the checkpoint wrote is then read a
        # clock tick later, a later write gets a later mtime, and the next
        # run need not send it again. (With whole-second times the wait
        # would cost more than sending those files again.)
        if self.mtime_margin <= FINE_MTIME_MARGIN:
            time.sleep(max(0.0, checkpoint_end + self.mtime_margin - time.time()))
        sync_start = time.time()
        self.sync_data()
        self.sync_tablespaces(spaces)
        self.verify_recent(scan.join())
        fin = self.stage_dir("commit", self.src)
        self.stage_pg_control(fin)
        sync_end = time.time()
        if self.args.before_stop_command:
            self.log.info(f"running --before-stop-command: {self.args.before_stop_command}")
            rc = subprocess.call(self.args.before_stop_command, shell=True)
            if rc != 0:
                Log.warn(f"--before-stop-command exited {rc}")
        try:
            stop_lsn, labelfile, spcmap = self.backup_stop()
        except MirrorError as e:
            raise MirrorError(f"{e}; the mirror at {self.dest.describe()} is left "
                              "marked incomplete (no pg_control, no backup_label) and is "
                              "not a usable backup", EXIT_BACKUP) from e
        segs = self.copy_wal(labelfile, stop_lsn)
        self.commit(fin, labelfile, spcmap, start_lsn, stop_lsn, segs, run_start,
                    (sync_start, sync_end))
        with self.log.step("close the session"):
            self.session.close()
        self.summary(time.monotonic() - t0, start_lsn, stop_lsn, segs, spaces)

    def connect_and_probe(self):
        """The destination probe (a ferry run when it is remote) and the
        source session's start run at the same time. A refused destination
        is reported first, as when the probe ran alone; the temporary slot
        goes away with the session."""
        probe = Background(self.probe_dest)
        session_error = None
        try:
            self.open_session()
            self.reserve_wal()
        except MirrorError as e:
            session_error = e
        probe.join()
        if session_error:
            raise session_error

    def summary(self, elapsed, start_lsn, stop_lsn, segs, spaces):
        t = self.ferry.totals
        moved = t["sent"] + t["received"]
        print(f"{PROG}: mirror of {self.src} at {self.dest.describe()} complete")
        print(f"  backup {format_lsn(start_lsn)} .. {format_lsn(stop_lsn)}, "
              f"{len(segs)} WAL segment(s) {segs[0]}..{segs[-1]}, "
              f"{len(spaces)} tablespace(s)")
        print(f"  files changed: {t['files']} transferred, {t['deleted']} deleted; "
              f"bytes moved: {moved} (sent {t['sent']}, received {t['received']}; "
              f"literal {t['literal']}, matched {t['matched']}); "
              f"block size {self.args.block_size or 'ferry default'}")
        print(f"  time: {elapsed:.1f} s in {self.ferry.runs} ferry runs", flush=True)

    def cleanup(self):
        if self.session:
            self.session.close()
        shutil.rmtree(self.work, ignore_errors=True)


# ------------------------------------------------------------- utilities

def pid_is_postgres(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return True   # alive and unknown: assume the worst
    # "pid (comm) state ...": a zombie is a dead postmaster not yet reaped.
    comm = stat[stat.find("(") + 1:stat.rfind(")")]
    state = stat[stat.rfind(")") + 2:][:1]
    return state != "Z" and comm.startswith(("postgres", "postmaster"))


def pg_conf_quote(value):
    return value.replace("\\", "\\\\").replace("'", "''")


def rule_matches(rule, rel, name):
    """Our filter rules as ferry applies them: an anchored rule ('/a/*')
    matches the path segment by segment ('*' never crosses '/'), any other
    rule matches the base name."""
    if rule.startswith("/"):
        pat = rule[1:].split("/")
        parts = rel.split("/")
        return len(pat) == len(parts) and all(
            fnmatch.fnmatchcase(r, q) for r, q in zip(parts, pat))
    return fnmatch.fnmatchcase(name, rule)


def recent_files(root, lo, hi, excludes, sizes=False):
    """Regular files under ROOT (relative paths) not excluded by EXCLUDES and
    with lo <= mtime <= hi; with sizes, (size, path) pairs. The mtime test
    comes first: most files fail it, and the rules are the costly part."""
    out = []
    stack = [("", root)]
    while stack:
        reldir, path = stack.pop()
        try:
            entries = list(os.scandir(path))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for e in entries:
            rel = f"{reldir}/{e.name}" if reldir else e.name
            try:
                if e.is_dir(follow_symlinks=False):
                    if not any(rule_matches(r, rel, e.name) for r in excludes):
                        stack.append((rel, e.path))
                    continue
                if not e.is_file(follow_symlinks=False):
                    continue
                st = e.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            if lo <= st.st_mtime <= hi and not any(rule_matches(r, rel, e.name)
                                                   for r in excludes):
                out.append((st.st_size, rel) if sizes else rel)
    return out


def fs_type(path):
    """The file-system type (/proc/self/mountinfo) PATH lies on, or None."""
    try:
        dev = os.stat(path).st_dev
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    want = f"{os.major(dev)}:{os.minor(dev)}"
    for line in lines:
        fields = line.split()
        if len(fields) > 3 and fields[2] == want and " - " in line:
            return line.split(" - ", 1)[1].split()[0]
    return None


def has_subsecond_times(root):
    """True if files PostgreSQL writes under ROOT carry sub-second mtimes."""
    for rel in ("global/pg_control", "PG_VERSION", "."):
        try:
            if os.stat(os.path.join(root, rel)).st_mtime_ns % 1_000_000_000:
                return True
        except OSError:
            continue
    return False


def fine_mtime_margin():
    """Two ticks of the coarse clock file times come from, plus 5 ms (13 ms
    at HZ=250): one tick covers the error, the rest is slack. MTIME_MARGIN
    if that would exceed FINE_MTIME_MARGIN."""
    try:
        tick = time.clock_getres(CLOCK_REALTIME_COARSE)
    except (OSError, ValueError):
        return FINE_MTIME_MARGIN
    margin = round(max(0.01, 2 * tick + 0.005), 3)
    return margin if margin <= FINE_MTIME_MARGIN else MTIME_MARGIN


def mtime_margin(roots):
    """Seconds by which a file's mtime may trail the moment it was written,
    for all of ROOTS: fine_mtime_margin() on local file systems that keep
    sub-second times, else MTIME_MARGIN."""
    for root in roots:
        if fs_type(root) not in LOCAL_FS_TYPES or not has_subsecond_times(root):
            return MTIME_MARGIN
    return fine_mtime_margin()


def nonempty_dir(path):
    try:
        return bool(os.listdir(path))
    except (FileNotFoundError, NotADirectoryError):
        return False


def glob_escape(name):
    return re.sub(r"([\[\]*?\\])", r"\\\1", name)


def include_rules(rels):
    """ferry filter rules selecting exactly the files RELS (and their parent
    directories)."""
    dirs = set()
    for rel in rels:
        parts = rel.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            dirs.add("/".join(parts[:i]))
    rules = [f"+ /{glob_escape(d)}/" for d in sorted(dirs)]
    rules += [f"+ /{glob_escape(r)}" for r in sorted(rels)]
    rules.append("- *")
    return rules


# ------------------------------------------------------------------ main

def parse_args(argv):
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Mirror a live PostgreSQL data directory as a consistent base "
                    "backup, synced by ferry (see ferry-pg-mirror(1)).")
    p.add_argument("--source-conn", default="", metavar="CONNINFO",
                   help="libpq connection string for the source (default: libpq defaults)")
    p.add_argument("--pgdata", required=True, metavar="SRC",
                   help="the source cluster's data directory (local)")
    p.add_argument("--dest", required=True, metavar="DEST",
                   help="the mirror directory (local, or inside --via)")
    p.add_argument("--via", metavar="HOST::MODULE|HOST",
                   help="mirror to a ferry/rsync daemon module or an ssh host")
    p.add_argument("--rsh", "-e", metavar="COMMAND", help="ferry's -e for --via HOST")
    p.add_argument("--standby", action="store_true",
                   help="write standby.signal and primary_conninfo")
    p.add_argument("--primary-conninfo", metavar="CONNINFO",
                   help="primary_conninfo for --standby (default: derived from the session)")
    p.add_argument("--primary-slot", metavar="NAME", help="primary_slot_name for --standby")
    p.add_argument("--checksum", action="store_true",
                   help="compare every file by content (ferry --checksum)")
    p.add_argument("--parallel", type=int, default=1, metavar="N",
                   help="split the data files over N concurrent ferry runs")
    p.add_argument("--whole-file", "-W", action="store_true",
                   help="copy changed files whole instead of by delta")
    p.add_argument("--block-size", "-B", type=int, default=DEFAULT_BLOCK_SIZE, metavar="BYTES",
                   help=f"delta block size, a multiple of {PAGE_SIZE} (default {DEFAULT_BLOCK_SIZE}; "
                        "0: ferry's default, about the square root of the file size)")
    p.add_argument("--label", default="ferry-pg-mirror", help="backup label")
    p.add_argument("--ferry", default=os.environ.get("FERRY", "ferry"), metavar="PATH",
                   help="the ferry program (default: $FERRY or ferry on PATH)")
    p.add_argument("--psql", default="psql", metavar="PATH", help="the psql program")
    p.add_argument("--ferry-option", action="append", default=[], metavar="OPT",
                   help="extra option for every ferry run (e.g. --password-file=F)")
    p.add_argument("--before-stop-command", metavar="CMD",
                   help="shell command run right before pg_backup_stop")
    p.add_argument("--no-sync", action="store_true",
                   help="do not wait for the mirror's data to reach the disk (faster, "
                        "but an OS crash may leave a broken mirror that looks complete)")
    p.add_argument("--no-sums-cache", action="store_true",
                   help="do not keep the mirror's block sums for the next run")
    p.add_argument("--no-slot", action="store_true",
                   help="do not reserve WAL with a temporary replication slot")
    p.add_argument("--progress", action="store_true", help="show ferry's progress")
    p.add_argument("--timing", action="store_true",
                   help="print the wall time of every step on stderr at the end")
    p.add_argument("-v", "--verbose", action="count", default=0,
                   help="say what is done (-vv: also ferry's and psql's output)")
    args = p.parse_args(argv)
    bs = args.block_size
    if bs < 0 or bs % PAGE_SIZE or bs > MAX_BLOCK_SIZE:
        p.error(f"--block-size {bs}: must be a multiple of {PAGE_SIZE} "
                f"up to {MAX_BLOCK_SIZE}, or 0 for ferry's own choice")
    if not 1 <= args.parallel <= 32:
        p.error("--parallel: N must be 1..32")
    return args


def main(argv):
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    mirror = None
    try:
        mirror = Mirror(args)
        try:
            mirror.run()
        finally:
            mirror.log.report_timing()
        return 0
    except MirrorError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return e.code
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; the mirror is left marked incomplete", file=sys.stderr)
        return 130
    finally:
        if mirror:
            mirror.cleanup()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
