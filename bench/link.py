#!/usr/bin/env python3
"""ferry vs rsync over an emulated link (issue 24): `make bench BENCH_LINK=1gbit`.

Usage: bench/link.py --link 1gbit|100mbit|10gbit [--runs N] [--pg-scale N]
                     [--text-mb N] [--mirror-tx N] [--only REGEX] [--no-write]

The link: a network namespace `fb` and a veth pair, fb0 (10.99.0.1, this
side) and fb1 (10.99.0.2, inside the namespace), with a tbf qdisc at the
link's rate on both ends (no added delay: netem is not available). It is
created at the start (a stale one from a killed run is removed first) and
always torn down at the end, also on failure, SIGINT, SIGTERM or SIGHUP.
Needs root (ip, tc); PostgreSQL runs as the `postgres` user.

Cases, each on a PGDATA tree (pgbench -i -s N) and a text tree, with and
without -z: a daemon on 10.99.0.1 serving the tree, the client in the
namespace pulling it into an empty directory; client/daemon pairs
ferry/ferry, ferry/rsync, rsync/ferry, rsync/rsync. Then pg_basebackup
-X stream (plain and --compress=server-zstd) from a postmaster on
10.99.0.1 into the namespace. Then (goal 6) ferry-pg-mirror pushing to a
ferry daemon inside the namespace: a first mirror and re-mirrors, each
after `pgbench -t TX` and a CHECKPOINT, against pg_basebackup
--compress=server-zstd of the same cluster at the same moment (and, with
BENCH_MIRROR_BASELINE="TOOL FERRY", an older ferry-pg-mirror and ferry
into a mirror of their own, for a before/after comparison). The tool runs
as /usr/bin/python3 -I -S TOOL, as its launcher starts itself; its ferry
runs get -z, or --mirror-z=OPTS / BENCH_MIRROR_Z (e.g. --zc=lz4).

Variants alternate A B C D for N runs; figures are medians; ratios are
against rsync/rsync (the same data and compression) in the same run.
Wire bytes: sent + received from --stats, and the bytes fb0 carried
(both directions, with TCP/IP headers) for every case, pg_basebackup too.
Results go to bench/results/<date>-<link>.md.
"""

import argparse
import datetime
import os
import random
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import datasets  # noqa: E402
import measure   # noqa: E402
import run as bench_run  # noqa: E402

# BENCH_NETNS=NAME (default fb) and BENCH_SUBNET=N (default 0, giving
# 10.99.N.0/24) let two runs use separate emulated links at once.
NETNS = os.environ.get("BENCH_NETNS", "fb")
HOST_IF, NS_IF = NETNS + "0", NETNS + "1"
_SUBNET = int(os.environ.get("BENCH_SUBNET", "0"))
HOST_IP, NS_IP = f"10.99.{_SUBNET}.1", f"10.99.{_SUBNET}.2"
# tbf needs a bucket of at least one timer tick's worth of bytes; 256 kB
# (the recipe) is enough up to 1 Gbit/s.
LINKS = {"100mbit": "256kb", "1gbit": "256kb", "10gbit": "2mb"}
PAIRS = [("ferry", "ferry"), ("ferry", "rsync"), ("rsync", "ferry"), ("rsync", "rsync")]
MIRROR_TOOL = os.path.join(REPO, "contrib", "ferry-pg-mirror")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def sh(cmd, check=True, quiet=False):
    return subprocess.run(cmd, check=check, stdout=subprocess.DEVNULL if quiet else None,
                          stderr=subprocess.DEVNULL if quiet else None)


def in_ns(argv):
    return ["ip", "netns", "exec", NETNS] + argv


def as_pg(argv):
    return ["runuser", "-u", "postgres", "--"] + argv if os.getuid() == 0 else argv


# --------------------------------------------------------------------- link

class Link:
    """The veth pair and namespace; a context manager that always removes them."""

    def __init__(self, rate):
        self.rate, self.burst = rate, LINKS[rate]

    def __enter__(self):
        self.teardown()
        try:
            for cmd in (
                    ["ip", "netns", "add", NETNS],
                    ["ip", "link", "add", HOST_IF, "type", "veth", "peer", "name", NS_IF],
                    ["ip", "link", "set", NS_IF, "netns", NETNS],
                    ["ip", "addr", "add", f"{HOST_IP}/24", "dev", HOST_IF],
                    ["ip", "link", "set", HOST_IF, "up"],
                    in_ns(["ip", "addr", "add", f"{NS_IP}/24", "dev", NS_IF]),
                    in_ns(["ip", "link", "set", NS_IF, "up"]),
                    in_ns(["ip", "link", "set", "lo", "up"]),
                    ["tc", "qdisc", "add", "dev", HOST_IF, "root", "tbf", "rate", self.rate,
                     "burst", self.burst, "latency", "20ms"],
                    in_ns(["tc", "qdisc", "add", "dev", NS_IF, "root", "tbf", "rate",
                           self.rate, "burst", self.burst, "latency", "20ms"])):
                sh(cmd)
        except BaseException:
            self.teardown()
            raise
        log(f"link up: {HOST_IF} {HOST_IP} <-> {NETNS}:{NS_IF} {NS_IP}, tbf {self.rate} "
            f"burst {self.burst}")
        return self

    def __exit__(self, *exc):
        self.teardown()
        return False

    @staticmethod
    def teardown():
        # Deleting the namespace deletes fb1 and with it its peer fb0.
        sh(["ip", "netns", "del", NETNS], check=False, quiet=True)
        sh(["ip", "link", "del", HOST_IF], check=False, quiet=True)

    @staticmethod
    def wire_bytes():
        total = 0
        for d in ("rx_bytes", "tx_bytes"):
            with open(f"/sys/class/net/{HOST_IF}/statistics/{d}") as f:
                total += int(f.read())
        return total


def stop_descendants():
    """After an interruption: end what this run started and still runs (a
    daemon, a client), by PID, children first; then reap them."""
    pids = measure.tree_pids(os.getpid())[1:]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in reversed(pids):
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and any(measure.pid_alive(p) for p in pids):
            time.sleep(0.05)
        pids = [p for p in pids if measure.pid_alive(p)]
        if not pids:
            break
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break


def raise_on_signals():
    """SIGTERM/SIGHUP end the run through the finally clauses, as SIGINT does."""
    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(s, handler)


# ----------------------------------------------------------------- servers

def port_open(host, port):
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def free_port(host):
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class LinkServer(measure.Server):
    """measure.Server listening on HOST; ready when HOST:port accepts."""

    def __init__(self, name, make_argv, logpath, host):
        super().__init__(name, make_argv, logpath)
        self.host = host

    def start(self):
        self.rufile = self.logpath + ".rusage"
        for _ in range(5):
            port = free_port(HOST_IP) if self.host == HOST_IP else \
                random.randrange(20000, 60000)
            with open(self.logpath, "ab") as logf:
                proc = subprocess.Popen([measure.HELPER, self.rufile] + self.make_argv(port),
                                        stdin=subprocess.DEVNULL, stdout=logf, stderr=logf)
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and measure.pid_alive(proc.pid):
                if port_open(self.host, port):
                    self.proc, self.port = proc, port
                    return port
                time.sleep(0.02)
            self._kill(proc)
        raise RuntimeError(f"{self.name} did not start; see {self.logpath}")

    def io(self):
        """rchar/wchar of the daemon and the connection processes it reaped."""
        pid = measure.tree_pids(self.proc.pid)[1]
        measure.wait_reaped(pid)
        return read_io(pid)


def read_io(pid):
    out = {}
    with open(f"/proc/{pid}/io") as f:
        for line in f:
            k, v = line.split(":")
            out[k] = int(v)
    return out


def daemon_conf(path, modules, run_dir):
    lines = [f"pid file = {run_dir}/daemon-{os.path.basename(path)}.pid",
             f"lock file = {run_dir}/daemon-{os.path.basename(path)}.lock",
             "use chroot = no", "munge symlinks = no", "max connections = 0"]
    if os.getuid() == 0:
        lines += ["uid = root", "gid = root"]
    for name, mpath, ro in modules:
        lines += ["", f"[{name}]", f"path = {mpath}", f"read only = {'yes' if ro else 'no'}"]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def daemon_server(exe, tool, conf, host, run_dir, ns=False):
    pidfile = None
    with open(conf) as f:
        m = re.search(r"^pid file = (.*)$", f.read(), re.M)
        pidfile = m.group(1) if m else None

    def argv(port):
        if pidfile and os.path.exists(pidfile):
            os.unlink(pidfile)   # rsync refuses to start over an old one
        cmd = [exe, "--daemon", "--no-detach", f"--address={host}", f"--port={port}",
               f"--config={conf}"]
        return in_ns(cmd) if ns else cmd
    return LinkServer(f"{tool} daemon", argv, os.path.join(run_dir, f"{tool}-daemon.log"),
                      host)


class Postmaster(datasets.PgServer):
    """A postmaster that also listens on HOST_IP and lets the namespace in."""

    def __init__(self, bindir, pgdata, sockdir, logfile):
        super().__init__(bindir, pgdata, sockdir, logfile)
        with open(os.path.join(pgdata, "pg_hba.conf"), "a") as f:
            f.write(f"host all all 10.99.{_SUBNET}.0/24 trust\n"
                    f"host replication all 10.99.{_SUBNET}.0/24 trust\n")

    def start(self):
        opts = (f"-p {self.port} -k {self.sockdir} -c listen_addresses={HOST_IP} "
                "-c fsync=off -c synchronous_commit=off -c max_wal_senders=10")
        subprocess.run(self.tool("pg_ctl", "-D", self.pgdata, "-l", self.logfile,
                                 "-o", opts, "-w", "-t", "60", "start"),
                       check=True, stdout=subprocess.DEVNULL)


# -------------------------------------------------------------------- data

def make_text(root, mib, seed=24):
    """Text files (32 KiB..2 MiB, log-uniform) of Zipf-distributed words
    in lines of 4..16; zstd -3 shrinks it about 3x, like source or logs."""
    params = {"kind": "text", "mib": mib, "seed": seed, "v": 1}
    if datasets._cached(root, params):
        return
    log(f"generating text tree: {mib} MiB")
    datasets._fresh_dir(root)
    rng = random.Random(seed)
    letters = "etaoinshrdlcumwfgypbvkjxqz"
    vocab = ["".join(rng.choices(letters, k=rng.randint(2, 10))) for _ in range(20000)]
    weights = [1.0 / (i + 1) for i in range(len(vocab))]
    cum, acc = [], 0.0
    for w in weights:
        acc += w
        cum.append(acc)
    total, n = mib * 1024 * 1024, 0
    base = os.path.join(root, "base")
    while total > 0:
        size = min(total, int(2 ** rng.uniform(15, 21)))
        words = rng.choices(vocab, cum_weights=cum, k=size // 6 + 16)
        out, i = [], 0
        while i < len(words):
            k = rng.randint(4, 16)
            out.append(" ".join(words[i:i + k]))
            i += k
        data = ("\n".join(out) + "\n").encode()[:size]
        d = os.path.join(base, f"d{n % 16:02d}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"f{n:05d}.txt"), "wb") as f:
            f.write(data)
        total -= len(data)
        n += 1
    datasets._settle_times(base, time.time() - 3600)
    datasets._mark_done(root, params)


# ------------------------------------------------------------------- runs

class Bench:
    def __init__(self, args):
        self.args = args
        self.dest_fs = args.dest_fs
        self.root = os.path.abspath(args.bench_dir)
        self.data = os.path.join(self.root, "link-data")
        # destinations (and mirror copies) live here; see --dest-fs
        self.work = (os.path.join("/dev/shm", "ferry-bench-link-work")
                     if args.dest_fs == "tmpfs" else os.path.join(self.root, "link-work"))
        self.run_dir = os.path.join(self.root, "link-run")
        self.dst = os.path.join(self.work, "dst")
        self.ferry = os.path.abspath(os.environ.get("FERRY", os.path.join(REPO, "ferry")))
        self.rsync = shutil.which(os.environ.get("RSYNC", "rsync"))
        self.bindir = datasets.pg_bindir()
        self.python = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) \
            else sys.executable
        for d in (self.data, self.work, self.run_dir):
            os.makedirs(d, exist_ok=True)
        self.rows = []      # (section, data, z, name, [results])
        self.mirror_rows = []

    # ---------------------------------------------------------------- setup

    def datasets(self):
        pg = os.path.join(self.data, f"pgdata-s{self.args.pg_scale}")
        datasets.make_pgdata(pg, self.args.pg_scale, 200)
        text = os.path.join(self.data, f"text-{self.args.text_mb}")
        make_text(text, self.args.text_mb)
        self.trees = {"pgdata": os.path.join(pg, "base"), "text": os.path.join(text, "base")}
        conf = os.path.join(self.run_dir, "src.conf")
        daemon_conf(conf, [(k, v, True) for k, v in self.trees.items()], self.run_dir)
        self.src_conf = conf

    def prepare_dst(self, pg_owned=False):
        if os.path.lexists(self.dst):
            sh(["rm", "-rf", self.dst])
        os.makedirs(self.dst)
        if pg_owned and os.getuid() == 0:
            shutil.chown(self.dst, "postgres", "postgres")
        os.sync()

    # ----------------------------------------------------------- transfers

    def one_pull(self, client, daemon, ds, z):
        self.prepare_dst()
        exe = {"ferry": self.ferry, "rsync": self.rsync}
        server = daemon_server(exe[daemon], daemon, self.src_conf, HOST_IP, self.run_dir)
        port = server.start()
        argv = in_ns([exe[client], "-a", "--stats"] + (["-z"] if z else [])
                     + [f"rsync://{HOST_IP}:{port}/{ds}/", self.dst + "/"])
        w0 = Link.wire_bytes()
        res = measure.run_timed(argv, server=server, outdir=self.run_dir)
        res.link = Link.wire_bytes() - w0
        res.stats = bench_run.parse_stats(res.stdout)
        if res.rc != 0:
            res.ok, res.why = False, f"exit {res.rc}: {res.stderr.strip()[:300]}"
        else:
            p = subprocess.run([self.python, bench_run.TREECMP, self.trees[ds], self.dst,
                                "--max", "5"], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
            res.ok, res.why = p.returncode == 0, p.stdout.strip()[:300]
        return res

    def pulls(self):
        for ds in ("pgdata", "text"):
            for z in (False, True):
                key = f"pull-{ds}{'-z' if z else ''}"
                if self.args.only and not re.search(self.args.only, key):
                    continue
                log(f"== {key} x{self.args.runs}")
                results = {p: [] for p in PAIRS}
                for r in range(self.args.runs):
                    for p in PAIRS:
                        res = self.one_pull(p[0], p[1], ds, z)
                        results[p].append(res)
                        log(f"   {r + 1} {p[0]:5s} <- {p[1]:5s} {res.wall:7.3f}s "
                            f"link {res.link / 1e6:8.1f} MB  "
                            f"{'ok' if res.ok else 'WRONG ' + res.why}")
                for p in PAIRS:
                    self.rows.append(("pull", ds, z, f"{p[0]} client ← {p[1]} daemon",
                                      results[p]))

    # -------------------------------------------------------- pg_basebackup

    def start_primary(self, name):
        copy = os.path.join(self.work, name)
        if os.path.exists(copy):
            sh(["rm", "-rf", copy])
        sh(["cp", "-a", self.trees["pgdata"], copy])
        sock = os.path.join(self.work, "pg-sock")
        os.makedirs(sock, exist_ok=True)
        if os.getuid() == 0:
            shutil.chown(sock, "postgres", "postgres")
        srv = Postmaster(self.bindir, copy, sock, os.path.join(sock, f"{name}.log"))
        srv.start()
        return srv, copy

    def basebackup_argv(self, srv, compress):
        return in_ns(as_pg([os.path.join(self.bindir, "pg_basebackup"), "-h", HOST_IP,
                            "-p", str(srv.port), "-U", "postgres", "-D", self.dst,
                            "-X", "stream", "-c", "fast", "--no-sync", "--no-manifest"]
                           + (["--compress=server-zstd"] if compress else [])))

    def one_basebackup(self, srv, compress):
        self.prepare_dst(pg_owned=True)
        w0 = Link.wire_bytes()
        res = measure.run_timed(self.basebackup_argv(srv, compress), outdir=self.run_dir)
        res.link = Link.wire_bytes() - w0
        res.stats = {}
        res.ok = res.rc == 0 and os.path.exists(os.path.join(self.dst, "PG_VERSION"))
        res.why = "" if res.ok else f"exit {res.rc}: {res.stderr.strip()[:300]}"
        return res

    def basebackups(self):
        if self.args.only and not re.search(self.args.only, "basebackup"):
            return
        log(f"== pg_basebackup x{self.args.runs}")
        srv, copy = self.start_primary("bb-primary")
        results = {False: [], True: []}
        try:
            for r in range(self.args.runs):
                for c in (False, True):
                    res = self.one_basebackup(srv, c)
                    results[c].append(res)
                    log(f"   {r + 1} pg_basebackup{' server-zstd' if c else ''} "
                        f"{res.wall:7.3f}s link {res.link / 1e6:8.1f} MB "
                        f"{'ok' if res.ok else 'FAILED ' + res.why}")
        finally:
            srv.stop()
            sh(["rm", "-rf", copy])
        self.rows.append(("basebackup", "pgdata", False, "pg_basebackup -X stream",
                          results[False]))
        self.rows.append(("basebackup", "pgdata", True,
                          "pg_basebackup -X stream --compress=server-zstd", results[True]))

    # ------------------------------------------------------ PGDATA mirror

    def mirror_tools(self):
        """[(label, tool, ferry, dest)]: this tree's, and the baseline
        BENCH_MIRROR_BASELINE="TOOL FERRY" names (an older version, for a
        before/after comparison in the same run)."""
        tools = []
        if self.args.mirror_baseline:
            tool, ferry = self.args.mirror_baseline.split()
            tools.append(("ferry-pg-mirror (baseline)", os.path.abspath(tool),
                          os.path.abspath(ferry), "mirror-baseline"))
        tools.append(("ferry-pg-mirror", MIRROR_TOOL, self.ferry, "mirror"))
        return tools

    def mirror_once(self, srv, copy, port, z, tool, ferry, dest):
        """ferry-pg-mirror from the primary into the namespace's ferry daemon;
        (wall, link bytes, moved, source rchar, timing lines)."""
        argv = [self.python, "-I", "-S", tool, "--ferry", ferry,
                "--psql", os.path.join(self.bindir, "psql"),
                "--source-conn", f"host={srv.sockdir} port={srv.port} user=postgres "
                                 "dbname=postgres",
                "--pgdata", copy, "--dest", dest, "--via", f"{NS_IP}::dests",
                f"--ferry-option=--port={port}", "--no-sync", "--timing"]
        if z:
            argv += [f"--ferry-option={o}" for o in self.args.mirror_z.split()]
        # The shell reaps the tool and so holds its whole tree's I/O counts.
        script = " ".join(shlex.quote(a) for a in argv) + \
            ' >"$0" 2>&1; rc=$?; cat /proc/$$/io >"$1"; exit $rc'
        out, iof = os.path.join(self.run_dir, "mirror.out"), os.path.join(self.run_dir,
                                                                             "mirror.io")
        w0 = Link.wire_bytes()
        t = time.monotonic()
        p = subprocess.run(["sh", "-c", script, out, iof])
        wall = time.monotonic() - t
        link = Link.wire_bytes() - w0
        with open(out, errors="replace") as f:
            text = f.read()
        if p.returncode != 0:
            raise RuntimeError(f"ferry-pg-mirror exit {p.returncode}: {text[-1500:]}")
        with open(iof) as f:
            rchar = int(re.search(r"^rchar: (\d+)", f.read(), re.M).group(1))
        m = re.search(r"bytes moved: (\d+)", text)
        timing = [ln for ln in text.splitlines() if re.match(r"ferry-pg-mirror: +[0-9.]+ ", ln)]
        return wall, link, int(m.group(1)) if m else None, rchar, timing

    def mirror(self):
        if self.args.only and not re.search(self.args.only, "mirror"):
            return
        log(f"== PGDATA mirror: first + {self.args.runs} re-mirrors after "
            f"pgbench -t {self.args.mirror_tx}")
        dests = os.path.join(self.work, "dests")
        if os.path.exists(dests):
            sh(["rm", "-rf", dests])
        os.makedirs(dests)
        conf = os.path.join(self.run_dir, "dest.conf")
        daemon_conf(conf, [("dests", dests, False)], self.run_dir)
        # As `make install` does: the module compiled once.
        sh([self.python, "-c", "import py_compile, sys; py_compile.compile(sys.argv[1], "
            "doraise=True)", os.path.join(REPO, "contrib", "ferry_pg_mirror.py")])
        srv, copy = self.start_primary("mirror-primary")
        fd = daemon_server(self.ferry, "ferry-dest", conf, NS_IP, self.run_dir, ns=True)
        port = fd.start()
        z = not self.args.mirror_no_z
        try:
            for r in range(self.args.runs + 1):
                phase = "first" if r == 0 else "re-mirror"
                if r:
                    srv.pgbench("-c", "2", "-j", "2", "-t", str(self.args.mirror_tx // 2))
                    srv.psql("CHECKPOINT")
                # Alternating order: the tool that runs second also mirrors
                # what autovacuum wrote after the load.
                tools = self.mirror_tools()
                for label, tool, ferry, dest in (tools if r % 2 else tools[::-1]):
                    os.sync()
                    io0 = read_io(measure.tree_pids(fd.proc.pid)[1])
                    wall, link, moved, rchar, timing = self.mirror_once(
                        srv, copy, port, z, tool, ferry, dest)
                    drchar = fd.io()["rchar"] - io0["rchar"]
                    self.mirror_rows.append((phase, label + (f" ({self.args.mirror_z})" if z
                                                             else ""),
                                             wall, link, moved, rchar, drchar))
                    log(f"   {phase} {label} {wall:7.3f}s link {link / 1e6:7.1f} MB "
                        f"src rchar {rchar / 1e6:7.1f} MB dst rchar {drchar / 1e6:7.1f} MB")
                    for ln in timing:
                        log("      " + ln)
                res = self.one_basebackup(srv, True)
                if not res.ok:
                    raise RuntimeError(f"pg_basebackup: {res.why}")
                self.mirror_rows.append((phase, "pg_basebackup --compress=server-zstd",
                                         res.wall, res.link, None, None, None))
                log(f"   {phase} pg_basebackup server-zstd {res.wall:7.3f}s "
                    f"link {res.link / 1e6:7.1f} MB")
        finally:
            fd.stop()
            srv.stop()
            sh(["rm", "-rf", copy, dests])

    # --------------------------------------------------------------- report

    def report(self, started, load_before):
        mach = bench_run.machine_description()
        a = self.args
        lines = [f"# ferry vs rsync over an emulated {a.link} link ({started:%Y-%m-%d %H:%M} UTC)",
                 ""]
        if a.note:
            lines += [f"**{a.note}**", ""]
        lines += [
            f"- machine: {mach['cpu']}, {mach['cores']} cores, {mach['memory']} RAM, "
            f"kernel {mach['kernel']}; load average {load_before} before, "
            f"{mach['load']} after",
            f"- ferry: {bench_run.version_line(self.ferry)} (git {bench_run.git_rev()}); "
            f"rsync: {bench_run.version_line(self.rsync)}",
            f"- link: veth {HOST_IF}/{NS_IF} + tbf {a.link} (burst {LINKS[a.link]}) on both "
            "ends, no added delay; daemon on this side, client in the namespace, pulling "
            "into an empty directory; warm page cache",
            f"- destination: {bench_run.dest_fs_line(self)}",
            f"- data: pgdata = pgbench -i -s {a.pg_scale} "
            f"({du(self.trees['pgdata']) / 1e6:.0f} MB); text = {a.text_mb} MiB of "
            "Zipf-distributed words in 32 KiB..2 MiB files",
            f"- medians of {a.runs} runs, variants alternating; ratio = wall / rsync←rsync "
            "wall with the same data and -z setting in this run; stats = sent + received "
            "from --stats; link = bytes fb0 carried both ways (with TCP/IP headers)",
            "- pg_basebackup: -X stream -c fast --no-sync --no-manifest, from a postmaster "
            "on a copy of the same pgdata (it also sends the WAL of the backup)",
            "", "| data | -z | client ← daemon | wall s | ratio | stats wire | link bytes "
            "| CPU client/server s | ok |", "|---|---|---|---:|---:|---:|---:|---:|---|"]
        refs = {}
        for sec, ds, z, name, res in self.rows:
            if name == "rsync client ← rsync daemon":
                refs[(ds, z)] = summary(res)
        for sec, ds, z, name, res in self.rows:
            s = summary(res)
            bad = sum(1 for r in res if not r.ok)
            ok = f"{len(res) - bad}/{len(res)}" + (" **WRONG**" if bad else "")
            if s is None:
                lines.append(f"| {ds} | {'-z' if z else ''} | {name} | — | — | — | — | — | {ok} |")
                continue
            ref = refs.get((ds, z))
            rt = s["wall"] / ref["wall"] if ref and ref["wall"] else None
            cpu_s = "—" if s["cpu_s"] is None else f"{s['cpu_s']:.2f}"
            lines.append(
                f"| {ds} | {'-z' if z else ''} | {name} | {s['wall']:.2f} | "
                f"{'' if rt is None else f'{rt:.2f}×'} | {bench_run.fmt_bytes(s['wire'])} | "
                f"{bench_run.fmt_bytes(s['link'])} | {s['cpu_c']:.2f} / {cpu_s} | {ok} |")
        if self.mirror_rows:
            lines += ["", f"## PGDATA mirror (ferry-pg-mirror → ferry daemon in the "
                      f"namespace), re-mirror after pgbench -t {a.mirror_tx}", "",
                      "Both --no-sync. Source/destination read = rchar of the "
                      "ferry-pg-mirror process tree / of the destination daemon and its "
                      "connections (file and socket reads).", "",
                      "| phase | tool | wall s | ratio to pg_basebackup | link bytes | "
                      "moved (--stats) | source read | dest read |",
                      "|---|---|---:|---:|---:|---:|---:|---:|"]
            groups = {}
            for row in self.mirror_rows:
                groups.setdefault((row[0], row[1]), []).append(row)
            for (phase, tool), rows in groups.items():
                wall = statistics.median(r[2] for r in rows)
                bb = groups.get((phase, "pg_basebackup --compress=server-zstd"))
                bbw = statistics.median(r[2] for r in bb) if bb else None
                rt = "" if tool.startswith("pg_") or not bbw else f"{wall / bbw:.2f}×"

                def medb(i):
                    v = [r[i] for r in rows if r[i] is not None]
                    return bench_run.fmt_bytes(statistics.median(v)) if v else "—"
                lines.append(f"| {phase} ({len(rows)}) | {tool} | {wall:.2f} | {rt} | "
                             f"{medb(3)} | {medb(4)} | {medb(5)} | {medb(6)} |")
        wrong = [(name, r.why) for _, _, _, name, res in self.rows for r in res if not r.ok]
        if wrong:
            lines += ["", "## Wrong or failed runs (not counted)", ""]
            lines += [f"- {n}: {w}" for n, w in wrong[:20]]
        return "\n".join(lines) + "\n"


def du(path):
    out = subprocess.run(["du", "-sb", path], stdout=subprocess.PIPE, text=True, check=True)
    return int(out.stdout.split()[0])


def summary(runs):
    s = bench_run.summary(runs)
    if s is not None:
        s["link"] = bench_run.med([r.link for r in runs if r.ok])
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--link", default=os.environ.get("BENCH_LINK"), choices=sorted(LINKS))
    ap.add_argument("--runs", type=int, default=int(os.environ.get("BENCH_RUNS") or 3))
    ap.add_argument("--pg-scale", type=int, default=int(os.environ.get("BENCH_PG_SCALE") or 5))
    ap.add_argument("--text-mb", type=int, default=int(os.environ.get("BENCH_TEXT_MB") or 64))
    ap.add_argument("--mirror-tx", type=int,
                    default=int(os.environ.get("BENCH_MIRROR_TX") or 2000))
    ap.add_argument("--mirror-baseline", default=os.environ.get("BENCH_MIRROR_BASELINE"),
                    metavar="'TOOL FERRY'",
                    help="also run this ferry-pg-mirror with this ferry, to its own mirror")
    ap.add_argument("--mirror-no-z", action="store_true",
                    help="ferry-pg-mirror without -z (default: with -z)")
    ap.add_argument("--mirror-z", default=os.environ.get("BENCH_MIRROR_Z") or "-z",
                    metavar="'OPTS'",
                    help="ferry's compression options for ferry-pg-mirror (default -z; "
                         "e.g. --mirror-z=--zc=lz4 or --mirror-z='-z --zl=1')")
    ap.add_argument("--only", default=os.environ.get("BENCH_ONLY"),
                    help="regex on case keys: pull-pgdata, pull-text-z, basebackup, mirror")
    ap.add_argument("--note", default=os.environ.get("BENCH_NOTE"),
                    help="a line put at the top of the results file")
    ap.add_argument("--bench-dir", default=os.environ.get("BENCH_DIR", "/var/tmp/ferry-bench"))
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--dest-fs", choices=("disk", "tmpfs"),
                    default=os.environ.get("BENCH_DEST_FS", "disk"),
                    help="where destinations are written: under --bench-dir (disk) or "
                    "in /dev/shm (tmpfs: without the file system's create cost)")
    args = ap.parse_args()
    if not args.link:
        sys.exit("bench/link.py: --link (or BENCH_LINK) is one of " + ", ".join(sorted(LINKS)))
    if os.getuid() != 0:
        sys.exit("bench/link.py: needs root (ip netns, tc); PostgreSQL runs as postgres")
    if not datasets.pg_bindir():
        sys.exit("bench/link.py: PostgreSQL not installed (make bench-deps)")
    started = datetime.datetime.utcnow()
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    b = Bench(args)
    if not os.access(b.ferry, os.X_OK) or not b.rsync:
        sys.exit(f"bench/link.py: need {b.ferry} (make) and rsync on PATH")
    measure.HELPER = bench_run.build_helper(b)
    b.datasets()
    raise_on_signals()
    with Link(args.link):
        try:
            b.pulls()
            b.basebackups()
            b.mirror()
        except BaseException:
            stop_descendants()
            raise
        finally:
            if os.path.lexists(b.dst):
                sh(["rm", "-rf", b.dst], check=False)
    text = b.report(started, load_before)
    print(text)
    if not args.no_write:
        suffix = "-tmpfs" if args.dest_fs == "tmpfs" else ""
        path = os.path.join(HERE, "results", f"{started:%Y-%m-%d}-{args.link}{suffix}.md")
        with open(path, "w") as f:
            f.write(text)
        log(f"written: {path}")


if __name__ == "__main__":
    main()
