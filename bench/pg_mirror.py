#!/usr/bin/env python3
"""PGDATA mirror benchmark (issue 9): ferry-pg-mirror vs pg_basebackup vs rsync.

Usage: bench/pg_mirror.py [--scale N] [--tx N] [--bench-dir DIR] [--variants LIST]
                          [--rounds N]

One primary cluster (pgbench -i -s SCALE, cached pristine under BENCH_DIR and
copied for each run). Every tool writes into a destination on this machine
over loopback: ferry-pg-mirror into a ferry daemon module (--via), rsync
-a --delete with pg_basebackup's excludes into an rsync daemon module (the
transfer only: no pg_backup_start/stop around it, so it is a lower bound
for a correct rsync recipe), pg_basebackup -X stream -c fast into an empty
directory (with and without --no-sync). Then `pgbench -t TX` of load, and
each tool again: the mirrors re-sync against their previous copy,
pg_basebackup copies everything again. Wall seconds and bytes moved (ferry
and rsync: sent + received from --stats; pg_basebackup: the size of what it
wrote). After the load a CHECKPOINT, so that no tool's own checkpoint
writes out the load's dirty buffers for the tools after it. One round each (a re-mirror changes its destination), run one
after the other; the load average is printed.

Variants of the re-mirror (--variants, comma separated): ferry (defaults),
ferry-nosync (--no-sync, to compare with pg_basebackup --no-sync and rsync,
which do not sync either; it makes its own first mirror too), ferry-p2
(--parallel 2), ferry-b0 (-B 0: ferry's default block size), ferry-W (-W);
each extra variant starts from a copy of the first ferry mirror, made by a
local ferry that also keeps the copy's block sums (a plain copy has new
inodes, for which the first mirror's sums cache is not valid).

The tool runs as /usr/bin/python3 -I -S TOOL when there is one, as its
launcher starts itself.
"""

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import datasets  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "contrib"))
import ferry_pg_mirror  # noqa: E402

TOOL = os.path.join(REPO, "contrib", "ferry-pg-mirror")
TOOL_PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
# pg_basebackup's exclusions as rsync rules (as contrib/ferry-pg-mirror has them).
RSYNC_EXCLUDES = ["/postmaster.pid", "/postmaster.opts", "/pg_replslot/*", "/pg_dynshmem/*",
                  "/pg_notify/*", "/pg_serial/*", "/pg_snapshots/*", "/pg_stat_tmp/*",
                  "/pg_subtrans/*", "pgsql_tmp*", "pg_internal.init", "/pg_wal/*"]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def du_bytes(path):
    out = subprocess.run(["du", "-sb", path], stdout=subprocess.PIPE, text=True, check=True)
    return int(out.stdout.split()[0])


def stats_bytes(text):
    total = 0
    for key in ("Total bytes sent", "Total bytes received"):
        for m in re.finditer(rf"^{key}: ([\d,]+)", text, re.M):
            total += int(m.group(1).replace(",", ""))
    return total


def pg_moved(text):
    """ferry-pg-mirror's summary line: 'bytes moved: N'."""
    m = re.search(r"bytes moved: (\d+)", text)
    return int(m.group(1)) if m else None


class Daemon:
    def __init__(self, exe, conf, port, logfile):
        self.proc = subprocess.Popen([exe, "--daemon", "--no-detach", "--address=127.0.0.1",
                                      f"--port={port}", f"--config={conf}"],
                                     stdout=open(logfile, "ab"), stderr=subprocess.STDOUT)
        self.port = port
        # Wait until it accepts connections (a loaded machine can take more
        # than a fixed half second, and the first run would be refused).
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError(f"{exe} --daemon did not start on port {port}")
                time.sleep(0.1)

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


class Bench:
    def __init__(self, args):
        self.args = args
        self.root = os.path.abspath(args.bench_dir)
        self.bindir = datasets.pg_bindir()
        if not self.bindir:
            sys.exit("PostgreSQL not installed (make bench-deps)")
        self.ferry = os.path.abspath(os.environ.get("FERRY", os.path.join(REPO, "ferry")))
        self.rsync = shutil.which("rsync")
        self.pristine = os.path.join(self.root, f"pristine-s{args.scale}")
        self.primary = os.path.join(self.root, "primary")
        self.sock = os.path.join(self.root, "sock")
        self.dests = os.path.join(self.root, "dests")
        self.rows = []

    # -------------------------------------------------------------- setup

    def pg_owned(self, path):
        if os.getuid() == 0:
            shutil.chown(path, "postgres", "postgres")

    def make_pristine(self):
        done = os.path.join(self.pristine, "PG_VERSION")
        if os.path.exists(done):
            return
        log(f"initdb + pgbench -i -s {self.args.scale} (cached in {self.pristine})")
        if os.path.exists(self.pristine):
            sh(["rm", "-rf", self.pristine])
        sh(datasets._as_pg_user([os.path.join(self.bindir, "initdb"), "-D", self.pristine,
                                 "-A", "trust", "-U", "postgres", "--no-sync"]),
           stdout=subprocess.DEVNULL)
        srv = datasets.PgServer(self.bindir, self.pristine, self.sock,
                                os.path.join(self.sock, "init.log"))
        srv.start()
        t = time.monotonic()
        srv.pgbench("-i", "-q", "-s", str(self.args.scale))
        srv.psql("CHECKPOINT")
        log(f"  pgbench -i: {time.monotonic() - t:.1f} s")
        srv.stop()

    def start_primary(self):
        if os.path.exists(self.primary):
            sh(["rm", "-rf", self.primary])
        sh(["cp", "-a", self.pristine, self.primary])
        self.srv = datasets.PgServer(self.bindir, self.primary, self.sock,
                                     os.path.join(self.sock, "primary.log"))
        self.srv.start()
        self.conn = f"host={self.sock} port={self.srv.port} user=postgres dbname=postgres"

    def start_daemons(self):
        if os.path.exists(self.dests):
            sh(["rm", "-rf", self.dests])
        os.makedirs(self.dests)
        conf = os.path.join(self.root, "daemon.conf")
        lines = ["use chroot = no", "max connections = 0",
                 f"pid file = {self.root}/daemon.pid", f"lock file = {self.root}/daemon.lock"]
        if os.getuid() == 0:
            lines += ["uid = root", "gid = root"]
        lines += ["", "[dests]", f"path = {self.dests}", "read only = no", ""]
        with open(conf, "w") as f:
            f.write("\n".join(lines))
        port = datasets._free_port()
        self.fd = Daemon(self.ferry, conf, port, os.path.join(self.root, "ferryd.log"))
        if os.path.exists(f"{self.root}/daemon.pid"):
            os.unlink(f"{self.root}/daemon.pid")
        self.rd = Daemon(self.rsync, conf, datasets._free_port(),
                         os.path.join(self.root, "rsyncd.log"))

    # --------------------------------------------------------------- tools

    def timed(self, argv, **kw):
        t = time.monotonic()
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           **kw)
        wall = time.monotonic() - t
        if p.returncode != 0:
            log(p.stdout[-2000:])
            raise RuntimeError(f"{argv[0]} exit {p.returncode}")
        return wall, p.stdout

    def ferry_mirror(self, name, extra):
        dest = name
        os.makedirs(os.path.join(self.dests, dest), exist_ok=True)
        argv = [TOOL_PYTHON, "-I", "-S", TOOL, "--ferry", self.ferry,
                "--psql", os.path.join(self.bindir, "psql"), "--source-conn", self.conn,
                "--pgdata", self.primary, "--dest", dest, "--via", "127.0.0.1::dests",
                f"--ferry-option=--port={self.fd.port}", "--timing", *extra]
        wall, out = self.timed(argv)
        for line in out.splitlines():
            if "timing" in line or re.match(r"ferry-pg-mirror: +[0-9.]+ +[0-9.]+ ", line):
                log("    " + line)
        return wall, pg_moved(out), out

    def rsync_mirror(self):
        dest = os.path.join(self.dests, "rsync")
        os.makedirs(dest, exist_ok=True)
        argv = [self.rsync, "-a", "--delete", "--stats",
                *[f"--exclude={e}" for e in RSYNC_EXCLUDES],
                self.primary + "/", f"rsync://127.0.0.1:{self.rd.port}/dests/rsync/"]
        wall, out = self.timed(argv)
        return wall, stats_bytes(out), out

    def basebackup(self, sync):
        dest = os.path.join(self.dests, "bb")
        if os.path.exists(dest):
            sh(["rm", "-rf", dest])
        os.makedirs(dest)
        self.pg_owned(dest)
        os.sync()
        argv = datasets._as_pg_user([os.path.join(self.bindir, "pg_basebackup"),
                                     "-h", self.sock, "-p", str(self.srv.port), "-U", "postgres",
                                     "-D", dest, "-X", "stream", "-c", "fast", "--no-manifest"]
                                    + ([] if sync else ["--no-sync"]))
        wall, out = self.timed(argv)
        return wall, du_bytes(dest), out

    def copy_mirror(self, src, dst):
        """A copy of a mirror with its own valid block-sum cache."""
        sh([self.ferry, "-a", "--no-whole-file", "-B", str(ferry_pg_mirror.DEFAULT_BLOCK_SIZE),
            f"--checksum-seed={ferry_pg_mirror.SUMS_SEED}",
            f"--sums-cache={ferry_pg_mirror.SUMS_FILE}",
            f"--exclude=/{ferry_pg_mirror.SUMS_FILE}", src + "/", dst + "/"])

    # ---------------------------------------------------------------- run

    def record(self, phase, tool, wall, moved):
        self.rows.append((phase, tool, wall, moved, os.getloadavg()[0]))
        log(f"  {phase:10} {tool:28} {wall:8.2f} s  {moved or 0:>14,} B  "
            f"load {os.getloadavg()[0]:.2f}")

    def phase(self, name, first):
        variants = self.args.variants.split(",")
        os.sync()
        w, b, _ = self.ferry_mirror("ferry", [])
        self.record(name, "ferry-pg-mirror", w, b)
        for v in variants:
            if v == "ferry":
                continue
            extra = {"ferry-p2": ["--parallel", "2"], "ferry-b0": ["-B", "0"],
                     "ferry-W": ["-W"], "ferry-nosync": ["--no-sync"]}[v]
            if first and v != "ferry-nosync":
                continue  # the variants start from a copy of the first mirror
            os.sync()
            w, b, _ = self.ferry_mirror(v, extra)
            self.record(name, f"ferry-pg-mirror {' '.join(extra)}", w, b)
        os.sync()
        w, b, _ = self.rsync_mirror()
        self.record(name, "rsync -a --delete", w, b)
        for sync in (True, False):
            os.sync()
            w, b, _ = self.basebackup(sync)
            self.record(name, "pg_basebackup" + ("" if sync else " --no-sync"), w, b)

    def run(self):
        os.makedirs(self.root, exist_ok=True)
        os.makedirs(self.sock, exist_ok=True)
        self.pg_owned(self.root)
        self.pg_owned(self.sock)
        self.make_pristine()
        # As `make install` does: the tool's module compiled once, so no
        # run pays for compiling it (PYTHONDONTWRITEBYTECODE would keep
        # Python from saving it itself).
        subprocess.run([TOOL_PYTHON, "-c", "import py_compile, sys; "
                        "py_compile.compile(sys.argv[1], doraise=True)",
                        os.path.join(REPO, "contrib", "ferry_pg_mirror.py")], check=True)
        self.start_primary()
        self.start_daemons()
        try:
            log(f"first mirror (scale {self.args.scale}, {du_bytes(self.primary):,} B PGDATA)")
            self.phase("first", True)
            for v in self.args.variants.split(","):
                if v not in ("ferry", "ferry-nosync"):  # those two made their own
                    self.copy_mirror(os.path.join(self.dests, "ferry"),
                                     os.path.join(self.dests, v))
            for r in range(self.args.rounds):
                log(f"pgbench -t {self.args.tx}")
                t = time.monotonic()
                self.srv.pgbench("-t", str(self.args.tx))
                log(f"  pgbench: {time.monotonic() - t:.1f} s")
                # Every tool then starts from the same flushed state; otherwise
                # the first one's fast checkpoint writes out the load's dirty
                # buffers and the tools after it find nothing left to write.
                t = time.monotonic()
                self.srv.psql("CHECKPOINT")
                log(f"  checkpoint: {time.monotonic() - t:.2f} s")
                self.phase("re-mirror" if self.args.rounds == 1 else f"re-mirror {r + 1}",
                            False)
        finally:
            self.fd.stop()
            self.rd.stop()
            self.srv.stop()
        self.report()

    def report(self):
        print(f"\n# PGDATA mirror: pgbench -s {self.args.scale}, re-mirror after "
              f"pgbench -t {self.args.tx}\n")
        print(f"- {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
              f"{os.cpu_count()} cores, load average at each run in the table")
        print("- loopback; mirrors into daemon modules; page cache warm\n")
        print("| phase | tool | wall s | bytes moved | load |")
        print("|---|---|---:|---:|---:|")
        for phase, tool, wall, moved, load in self.rows:
            print(f"| {phase} | {tool} | {wall:.2f} | {moved or 0:,} | {load:.2f} |")
        walls = {(p, t): w for p, t, w, _, _ in self.rows}
        # several re-mirror rounds: each tool's median wall time
        rounds = {}
        for p, t, w, _, _ in self.rows:
            if p.startswith("re-mirror "):
                rounds.setdefault(t, []).append(w)
        if rounds:
            print(f"\nMedian of {self.args.rounds} re-mirror rounds:\n")
            print("| tool | median wall s | all |")
            print("|---|---:|---|")
            for t, ws in rounds.items():
                walls[("re-mirror", t)] = statistics.median(ws)
                print(f"| {t} | {statistics.median(ws):.2f} | "
                      f"{', '.join(f'{w:.2f}' for w in ws)} |")
        pairs = [("ferry-pg-mirror", "pg_basebackup"),
                 ("ferry-pg-mirror --no-sync", "pg_basebackup --no-sync"),
                 ("ferry-pg-mirror", "rsync -a --delete"),
                 ("ferry-pg-mirror --no-sync", "rsync -a --delete")]
        print()
        for phase in ("first", "re-mirror"):
            for ours, theirs in pairs:
                if (phase, ours) in walls and (phase, theirs) in walls:
                    print(f"- {phase}: {ours} is {walls[(phase, theirs)] / walls[(phase, ours)]:.1f}x "
                          f"as fast as {theirs}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=int, default=100)
    ap.add_argument("--tx", type=int, default=5000)
    ap.add_argument("--bench-dir", default=os.path.join(
        os.environ.get("BENCH_DIR", "/var/tmp/ferry-bench"), "pgmirror"))
    ap.add_argument("--variants", default="ferry,ferry-nosync")
    ap.add_argument("--rounds", type=int, default=1,
                    help="re-mirror rounds, each after its own pgbench load (medians "
                         "compared when more than one)")
    Bench(ap.parse_args()).run()


if __name__ == "__main__":
    main()
