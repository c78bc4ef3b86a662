#!/usr/bin/env python3
"""ferry vs rsync benchmark (issue 8). `make bench` / `make bench-quick`.

Usage: bench/run.py [--quick] [--scale S] [--rounds N] [--only REGEX]
                    [--bench-dir DIR] [--dest-fs disk|tmpfs] [--no-write]
                    [--perf KEY]

Environment: BENCH_DIR (default /var/tmp/ferry-bench; datasets cached per
scale), BENCH_SCALE (1.0 = the issue's full sizes: 2 GiB bigfile, 100,000
small files, pgbench -s 50), BENCH_ROUNDS, BENCH_DEST_FS (--dest-fs), FERRY (default ./ferry), RSYNC
(default rsync). --perf KEY runs scenario KEY's ferry variant once under
`perf record` (client and daemon) and prints the top symbols of each side.

Every scenario runs its variants (ferry, rsync, ...) alternately, A B A B,
for the given number of rounds, each with the same preparation (not timed):
a fresh or pre-filled destination, `sync`, then a fresh server. Caches are
warm: the datasets were read by the preparation or a previous run. A run
whose result tree differs from its source (tools/treecmp: type, content,
mode, owner, group, mtime) is flagged WRONG and left out of the medians.
"""

import argparse
import datetime
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import datasets  # noqa: E402
import measure   # noqa: E402

TREECMP = os.path.join(REPO, "tests", "interop", "treecmp.py")
CIPHERS = ["aes128-gcm@openssh.com", "chacha20-poly1305@openssh.com", "aes128-ctr"]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# -------------------------------------------------------------- environment

class Env:
    """Paths, tools and the servers a run uses."""

    def __init__(self, args):
        self.bench_dir = os.path.abspath(args.bench_dir)
        # One cache per scale, so quick and full runs do not evict each other.
        self.data = os.path.join(self.bench_dir, f"data-{args.scale:g}")
        # The destinations (and the push module) live under work. On
        # "tmpfs" it is in /dev/shm: the tools' own CPU cost, without the
        # file system's (see --dest-fs).
        self.dest_fs = args.dest_fs
        self.work = (os.path.join("/dev/shm", "ferry-bench-work") if args.dest_fs == "tmpfs"
                     else os.path.join(self.bench_dir, "work"))
        self.run_dir = os.path.join(self.bench_dir, "run")
        self.dst = os.path.join(self.work, "dst")
        self.ferry = os.path.abspath(os.environ.get("FERRY", os.path.join(REPO, "ferry")))
        self.rsync = shutil.which(os.environ.get("RSYNC", "rsync"))
        self.python = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) \
            else sys.executable
        for d in (self.work, self.run_dir):
            os.makedirs(d, exist_ok=True)
        self.conf = os.path.join(self.run_dir, "daemon.conf")
        self._write_daemon_conf()
        self.ssh = None

    def _write_daemon_conf(self):
        lines = [
            f"pid file = {self.run_dir}/daemon.pid",
            f"lock file = {self.run_dir}/daemon.lock",
            f"log file = {self.run_dir}/daemon.log",
            "use chroot = no",
            "munge symlinks = no",
            "max connections = 0",
        ]
        if os.getuid() == 0:
            lines += ["uid = root", "gid = root"]
        lines += ["", "[data]", f"path = {self.data}", "read only = yes",
                  "", "[work]", f"path = {self.work}", "read only = no", ""]
        with open(self.conf, "w") as f:
            f.write("\n".join(lines))

    def daemon(self, tool):
        exe = self.ferry if tool == "ferry" else self.rsync
        # rsync writes its pid file and refuses to start if one exists.
        pidfile = os.path.join(self.run_dir, "daemon.pid")

        def argv(port):
            if os.path.exists(pidfile):
                os.unlink(pidfile)
            return [exe, "--daemon", "--no-detach", "--address=127.0.0.1",
                    f"--port={port}", f"--config={self.conf}"]
        return measure.Server(f"{tool} daemon", argv,
                              os.path.join(self.run_dir, f"{tool}-daemon.out"))


class Sshd:
    """A private sshd on 127.0.0.1 with generated host and client keys."""

    def __init__(self, env):
        self.dir = os.path.join(env.run_dir, "ssh")
        self.exe = shutil.which("sshd") or "/usr/sbin/sshd"
        if not (os.access(self.exe, os.X_OK) and shutil.which("ssh")
                and shutil.which("ssh-keygen")):
            raise RuntimeError("sshd, ssh or ssh-keygen not installed")
        if os.path.exists(self.dir):
            shutil.rmtree(self.dir)
        os.makedirs(self.dir, mode=0o700)
        for key in ("host_key", "client_key"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C",
                            f"ferry-bench-{key}", "-f", os.path.join(self.dir, key)],
                           check=True)
        shutil.copy(os.path.join(self.dir, "client_key.pub"),
                    os.path.join(self.dir, "authorized_keys"))
        if os.getuid() == 0 and not os.path.isdir("/run/sshd"):
            os.makedirs("/run/sshd", mode=0o755)
        self.known_hosts = os.path.join(self.dir, "known_hosts")
        self.config = os.path.join(self.dir, "sshd_config")
        with open(self.config, "w") as f:
            f.write(f"""ListenAddress 127.0.0.1
HostKey {self.dir}/host_key
PidFile none
AuthorizedKeysFile {self.dir}/authorized_keys
UsePAM no
StrictModes no
PermitRootLogin yes
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
LogLevel ERROR
""")
        subprocess.run([self.exe, "-t", "-f", self.config], check=True)
        self.server = measure.Server("sshd", self._argv,
                                     os.path.join(env.run_dir, "sshd.log"),
                                     post_start=self._pin_host_key)

    def _argv(self, port):
        return [self.exe, "-D", "-e", "-f", self.config, "-o", f"Port={port}"]

    def _pin_host_key(self, server):
        with open(os.path.join(self.dir, "host_key.pub")) as f:
            key = " ".join(f.read().split()[:2])
        with open(self.known_hosts, "w") as f:
            f.write(f"[127.0.0.1]:{server.port} {key}\n")

    def rsh(self, port, cipher):
        """-e command: plain ssh options that ferry's built-in client honours."""
        return (f"ssh -p {port} -i {self.dir}/client_key -c {cipher} "
                f"-o UserKnownHostsFile={self.known_hosts} -o StrictHostKeyChecking=yes")


# ---------------------------------------------------------------- scenarios

class Variant:
    """One side of a comparison: a tool and how to run it.

    argv(env, port) builds the command; server(env) gives the Server to
    start per run (or None); check says whether the result tree must equal
    the source.
    """

    def __init__(self, name, argv, server=None, check=True, tool=None):
        self.name, self.argv, self.server, self.check = name, argv, server, check
        self.tool = tool or name


class Scenario:
    def __init__(self, key, title, dataset, src, prefill, variants, target=None,
                 stats=True):
        self.key, self.title, self.dataset = key, title, dataset
        self.src = src            # source tree (for the correctness check)
        self.prefill = prefill    # tree copied into dst before each run, or None
        self.variants = variants
        self.target = target      # target id, see TARGETS
        self.stats = stats
        self.label = dataset      # shown in the table
        self.runs = {v.name: [] for v in variants}
        self.skipped = None


def rsync_like(tool, opts, src_url, dst_url):
    def argv(env, port):
        exe = env.ferry if tool == "ferry" else env.rsync
        return [exe, *opts, "--stats",
                src_url(env, port), dst_url(env, port)]
    return argv


def daemon_url(module_path):
    return lambda env, port: f"rsync://127.0.0.1:{port}/{module_path}"


def local_path(path_fn):
    return lambda env, port: path_fn(env)


def pair(opts, src_url, dst_url):
    return [Variant("ferry", rsync_like("ferry", opts, src_url, dst_url),
                    server=lambda env: env.daemon("ferry")),
            Variant("rsync", rsync_like("rsync", opts, src_url, dst_url),
                    server=lambda env: env.daemon("rsync"))]


def local_pair(opts, src_path):
    dst = local_path(lambda env: env.dst + "/")
    return [Variant("ferry", rsync_like("ferry", opts, local_path(src_path), dst)),
            Variant("rsync", rsync_like("rsync", opts, local_path(src_path), dst))]


DATASETS = {
    "pgdata": ("pgdata/base", "pgdata/changed"),
    "bigfile": ("bigfile/base", "bigfile/blocks"),
    "smallfiles": ("smallfiles/base", "smallfiles/changed"),
}


def data_path(rel):
    return lambda env: os.path.join(env.data, rel)


def pull_scenarios():
    out = []
    for ds, (base, _) in DATASETS.items():
        out.append(Scenario(
            f"pull-{ds}", "daemon pull, empty dest", ds, data_path(base), None,
            pair(["-a"], daemon_url(f"data/{base}/"), local_path(lambda e: e.dst + "/")),
            target="pull-pgdata" if ds == "pgdata" else
            ("rss-small" if ds == "smallfiles" else None)))
    return out


def push_scenarios():
    return [Scenario(
        f"push-{ds}", "daemon push, empty dest", ds, data_path(base), None,
        pair(["-a"], local_path(lambda e, b=base: os.path.join(e.data, b) + "/"),
             daemon_url("work/dst/")),
        target="rss-small" if ds == "smallfiles" else None)
        for ds, (base, _) in DATASETS.items()]


def resync_scenarios():
    out = []
    for ds, (base, _) in DATASETS.items():
        out.append(Scenario(
            f"nochange-{ds}", "no-change re-sync", ds, data_path(base), data_path(base),
            pair(["-a", "--delete"], daemon_url(f"data/{base}/"),
                 local_path(lambda e: e.dst + "/")),
            target="nochange-small" if ds == "smallfiles" else
            None))
    changed = [("pgdata", "pgdata/changed", "pgdata/base"),
               ("bigfile", "bigfile/blocks", "bigfile/base"),
               ("bigfile-insert", "bigfile/insert", "bigfile/base"),
               ("smallfiles", "smallfiles/changed", "smallfiles/base")]
    for csum in (False, True):
        for ds, new, old in changed:
            opts = ["-a", "--delete"] + (["-c"] if csum else [])
            tgt = None
            if ds == "bigfile" and not csum:
                tgt = "changed-big"
            elif ds == "smallfiles" and not csum:
                tgt = "rss-small"
            out.append(Scenario(
                f"changed{'-c' if csum else ''}-{ds}",
                "changed re-sync" + (" -c" if csum else ""), ds.split("-")[0],
                data_path(new), data_path(old),
                pair(opts, daemon_url(f"data/{new}/"), local_path(lambda e: e.dst + "/")),
                target=tgt))
            if ds == "bigfile-insert":
                out[-1].label = "bigfile +1 MiB at front"
            elif ds == "bigfile":
                out[-1].label = "bigfile 1% blocks"
    return out


def compress_scenarios(env, bwlimit_ok):
    out = [Scenario("z-pull-pgdata", "-z daemon pull, empty dest", "pgdata",
                    data_path("pgdata/base"), None,
                    pair(["-a", "-z"], daemon_url("data/pgdata/base/"),
                         local_path(lambda e: e.dst + "/"))),
           Scenario("z-changed-bigfile", "-z changed re-sync", "bigfile",
                    data_path("bigfile/blocks"), data_path("bigfile/base"),
                    pair(["-a", "-z"], daemon_url("data/bigfile/blocks/"),
                         local_path(lambda e: e.dst + "/")))]
    s = Scenario("z-bwlimit-pull-pgdata", "-z --bwlimit=50000 daemon pull", "pgdata",
                 data_path("pgdata/base"), None,
                 pair(["-a", "-z", "--bwlimit=50000"], daemon_url("data/pgdata/base/"),
                      local_path(lambda e: e.dst + "/")))
    if not bwlimit_ok:
        s.skipped = "ferry refuses --bwlimit (not supported yet)"
    out.append(s)
    return out


def ssh_scenarios(env):
    out = []
    for cipher in CIPHERS:
        variants = []
        for name, tool, mode in (("ferry-builtin", "ferry", "builtin"),
                                 ("ferry-spawn", "ferry", "spawn"),
                                 ("rsync", "rsync", None)):
            def argv(env, port, tool=tool, mode=mode, cipher=cipher):
                rsh = env.ssh.rsh(port, cipher)
                if tool == "ferry":
                    return [env.ferry, "-a", "--stats", f"--ssh={mode}", "-e", rsh,
                            f"--rsync-path={env.ferry}",
                            f"127.0.0.1:{env.data}/pgdata/base/", env.dst + "/"]
                return [env.rsync, "-a", "--stats", "-e", rsh,
                        f"--rsync-path={env.rsync}",
                        f"127.0.0.1:{env.data}/pgdata/base/", env.dst + "/"]
            variants.append(Variant(name, argv, server=lambda env: env.ssh.server,
                                    tool=tool))
        out.append(Scenario(f"ssh-{cipher.split('@')[0]}", f"ssh pull ({cipher})", "pgdata",
                            data_path("pgdata/base"), None, variants))
    return out


def local_scenarios():
    return [Scenario(f"local-{ds}", "local copy, empty dest", ds, data_path(base), None,
                     local_pair(["-a"], lambda e, b=base: os.path.join(e.data, b) + "/"))
            for ds, (base, _) in DATASETS.items()]


def baseline_scenarios(env, pg_ok):
    out = []
    for ds, (base, _) in DATASETS.items():
        src = os.path.join(env.data, base)
        q = shlex.quote
        variants = [
            Variant("cat", lambda env, port, s=src: ["sh", "-c",
                    f"find {q(s)} -type f -print0 | xargs -0 cat >/dev/null"], check=False),
            Variant("tar|tar", lambda env, port, s=src: ["sh", "-c",
                    f"tar -C {q(s)} -cf - . | tar -C {q(env.dst)} -xpf -"]),
            Variant("cp -a", lambda env, port, s=src: ["cp", "-a", "-T", s, env.dst]),
        ]
        if ds == "pgdata" and pg_ok:
            variants.append(Variant("pg_basebackup", pg_basebackup_argv,
                                    server=lambda env: env.pg_server, check=False))
        out.append(Scenario(f"base-{ds}", "baselines", ds, data_path(base), None, variants,
                            stats=False))
    return out


def pg_basebackup_argv(env, port):
    cmd = [os.path.join(datasets.pg_bindir(), "pg_basebackup"), "-h", env.pg_sock,
           "-p", str(port), "-U", "postgres", "-D", env.dst, "-X", "none",
           "-c", "fast", "--no-sync", "--no-manifest"]
    return ["runuser", "-u", "postgres", "--"] + cmd if os.getuid() == 0 else cmd


class PgBaseServer:
    """The postmaster for pg_basebackup, on a private copy of pgdata/base.

    Started once (not per run): the baseline's figures are the
    pg_basebackup client and the server's walsender is not separated out,
    so its server CPU column stays empty.
    """

    def __init__(self, env):
        self.copy = os.path.join(env.work, "pg-basebackup-src")
        if os.path.exists(self.copy):
            subprocess.run(["rm", "-rf", self.copy], check=True)
        subprocess.run(["cp", "-a", os.path.join(env.data, "pgdata", "base"), self.copy],
                       check=True)
        sock = os.path.join(env.work, "pg-sock")
        os.makedirs(sock, exist_ok=True)
        if os.getuid() == 0:
            shutil.chown(sock, "postgres", "postgres")
        env.pg_sock = sock
        self.srv = datasets.PgServer(datasets.pg_bindir(), self.copy, sock,
                                     os.path.join(sock, "pg.log"))
        self.srv.start()
        self.proc = None
        self.port = self.srv.port

    def start(self):
        return self.port

    def stop(self):
        return None

    def close(self):
        self.srv.stop()
        subprocess.run(["rm", "-rf", self.copy], check=True)


# -------------------------------------------------------------------- runs

def prepare(env, sc):
    if os.path.lexists(env.dst):
        subprocess.run(["rm", "-rf", env.dst], check=True)
    if sc.prefill:
        subprocess.run(["cp", "-a", "-T", sc.prefill(env), env.dst], check=True)
    else:
        os.makedirs(env.dst)
        if os.getuid() == 0 and sc.dataset == "pgdata":
            # pg_basebackup runs as postgres and needs to write dst.
            shutil.chown(env.dst, "postgres", "postgres")
    os.sync()


STAT_RE = {
    "sent": re.compile(r"^Total bytes sent: ([\d,]+)", re.M),
    "received": re.compile(r"^Total bytes received: ([\d,]+)", re.M),
    "literal": re.compile(r"^Literal data: ([\d,]+)", re.M),
}


def parse_stats(text):
    out = {}
    for k, rx in STAT_RE.items():
        m = rx.search(text)
        if m:
            out[k] = int(m.group(1).replace(",", ""))
    return out


def check_tree(env, src):
    p = subprocess.run([env.python, TREECMP, src, env.dst, "--max", "5"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.returncode == 0, p.stdout.strip().replace("\n", " | ")[:300]


def run_variant(env, sc, v):
    prepare(env, sc)
    server = v.server(env) if v.server else None
    port = server.start() if server else None
    res = measure.run_timed(v.argv(env, port), server=server, outdir=env.run_dir)
    res.stats = parse_stats(res.stdout) if sc.stats else {}
    if res.rc != 0:
        res.ok, res.why = False, f"exit {res.rc}: {res.stderr.strip()[:300]}"
    elif v.check:
        res.ok, res.why = check_tree(env, sc.src(env))
    else:
        res.ok = True
    return res


def run_scenario(env, sc, rounds):
    log(f"== {sc.key}: {sc.title} [{sc.dataset}] x{rounds}")
    for r in range(rounds):
        for v in sc.variants:
            res = run_variant(env, sc, v)
            sc.runs[v.name].append(res)
            flag = "ok" if res.ok else "WRONG " + res.why
            log(f"   {r + 1} {v.name:14s} {res.wall:8.3f}s  {flag}")
    if os.path.lexists(env.dst):
        subprocess.run(["rm", "-rf", env.dst], check=True)


# ----------------------------------------------------------------- figures

def med(values):
    values = [x for x in values if x is not None]
    return statistics.median(values) if values else None


def summary(runs):
    good = [r for r in runs if r.ok]
    if not good:
        return None
    wire = [r.stats.get("sent", 0) + r.stats.get("received", 0)
            if "sent" in r.stats else None for r in good]
    return {
        "n": len(good), "bad": len(runs) - len(good),
        "wall": med([r.wall for r in good]),
        "cpu_c": med([r.cpu["client"] for r in good]),
        "cpu_s": med([r.cpu["server"] for r in good]),
        "rss_c": med([r.rss["client"] for r in good]),
        "rss_s": med([r.rss["server"] for r in good]),
        "wire": med(wire),
        "literal": med([r.stats.get("literal") for r in good]),
    }


def fmt_s(x):
    return "—" if x is None else f"{x:.3f}" if x < 10 else f"{x:.2f}"


def fmt_mib(kib):
    return "—" if kib is None else f"{kib / 1024:.1f}"


def fmt_bytes(n):
    if n is None:
        return "—"
    for unit, div in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= div:
            return f"{n / div:.2f} {unit}"
    return f"{n} B"


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


TARGETS = {
    "pull-pgdata": "wall ≤ 0.7× rsync and ≤ 1.2× tar|tar",
    "nochange-small": "wall ≤ 0.5× rsync",
    "changed-big": "wall ≤ 0.6× rsync, literal ≤ rsync",
    "rss-small": "peak RSS each side ≤ rsync",
}


SHORT_TARGET = {
    "pull-pgdata": "wall ≤ 0.7×, ≤ 1.2× tar",
    "nochange-small": "wall ≤ 0.5×",
    "changed-big": "wall ≤ 0.6×, literal ≤",
    "rss-small": "RSS ≤ rsync",
}


def judge(sc, f, r, baselines):
    """(text, met) for the scenario's target, or (None, None)."""
    if not sc.target or f is None or r is None:
        return None, None
    t = sc.target
    rw = ratio(f["wall"], r["wall"])
    if t == "pull-pgdata":
        tar = baselines.get(("pgdata", "tar|tar"))
        tr = ratio(f["wall"], tar["wall"]) if tar else None
        met = rw <= 0.7 and (tr is not None and tr <= 1.2)
        return (f"{TARGETS[t]}: {rw:.2f}×, "
                f"{'n/a' if tr is None else f'{tr:.2f}'}× tar|tar"), met
    if t == "nochange-small":
        return f"{TARGETS[t]}: {rw:.2f}×", rw <= 0.5
    if t == "changed-big":
        lit_ok = (f["literal"] is not None and r["literal"] is not None
                  and f["literal"] <= r["literal"])
        return (f"{TARGETS[t]}: {rw:.2f}×, literal "
                f"{fmt_bytes(f['literal'])} vs {fmt_bytes(r['literal'])}"), \
            rw <= 0.6 and lit_ok
    if t == "rss-small":
        c = ratio(f["rss_c"], r["rss_c"])
        s = ratio(f["rss_s"], r["rss_s"])
        met = c is not None and c <= 1.0 and (s is None or s <= 1.0)
        return (f"{TARGETS[t]}: client {c:.2f}×"
                + ("" if s is None else f", server {s:.2f}×")), met
    return None, None


def machine_description():
    def read(path):
        try:
            with open(path) as f:
                return f.read()
        except OSError:
            return ""
    cpu = re.search(r"^model name\s*:\s*(.*)$", read("/proc/cpuinfo"), re.M)
    mem = re.search(r"^MemTotal:\s*(\d+)", read("/proc/meminfo"), re.M)
    return {
        "host": platform.node(),
        "cpu": cpu.group(1) if cpu else platform.processor(),
        "cores": os.cpu_count(),
        "memory": f"{int(mem.group(1)) / 1048576:.1f} GiB" if mem else "?",
        "kernel": platform.release(),
        "load": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


def version_line(exe):
    try:
        out = subprocess.run([exe, "--version"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True).stdout
        return out.splitlines()[0].strip()
    except OSError:
        return "?"


def git_rev():
    p = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return p.stdout.strip() or "?"


def dest_fs_line(env):
    if env.dest_fs == "tmpfs":
        return (f"{env.work} (tmpfs: the tools' own cost, without the disk "
                "file system's; --dest-fs=tmpfs)")
    return (f"{env.work} (the disk's file system, emptied with rm -rf before every run; "
            "on ext4 the just-deleted inodes make every create scan past them, "
            "a cost both tools pay)")


def report(env, args, scenarios, sizes, started, load_before, skipped):
    mach = machine_description()
    lines = [f"# ferry vs rsync benchmark — {args.mode} "
             f"({started:%Y-%m-%d %H:%M} UTC)", ""]
    lines += [
        f"- machine: {mach['cpu']}, {mach['cores']} cores, {mach['memory']} RAM, "
        f"kernel {mach['kernel']}, host {mach['host']}",
        f"- load average: {load_before} before, {mach['load']} after",
        f"- ferry: {version_line(env.ferry)} (git {git_rev()}); "
        f"rsync: {version_line(env.rsync)}",
        f"- scale {args.scale}: pgbench -s {sizes['pgbench_scale']} "
        f"(+ {sizes['pgbench_transactions']} transactions for the changed copy), "
        f"bigfile {sizes['bigfile_bytes'] / 1048576:.0f} MiB, "
        f"smallfiles {sizes['smallfiles_count']} files",
        f"- {args.rounds} rounds per scenario, variants alternating A B A B; "
        "figures are medians of correct runs; warm page cache; loopback",
        f"- destination: {dest_fs_line(env)}",
        "- wall/CPU in seconds; CPU and peak RSS (MiB) are client / server side "
        "(server = daemon listener + per-connection processes, or sshd + remote "
        "--server); wire = total bytes sent + received from --stats",
        "",
    ]
    baselines = {}
    for sc in scenarios:
        if sc.key.startswith("base-"):
            for v in sc.variants:
                s = summary(sc.runs[v.name])
                if s:
                    baselines[(sc.dataset, v.name)] = s

    lines += ["## ferry vs rsync", "",
              "| scenario | data | tool | wall | ratio | CPU c/s | RSS c/s | wire "
              "| literal | ok | target |",
              "|---|---|---|---:|---:|---:|---:|---:|---:|---|---|"]
    targets = []
    for sc in scenarios:
        if sc.key.startswith("base-") or sc.skipped:
            continue
        sums = {v.name: summary(sc.runs[v.name]) for v in sc.variants}
        ref = sums.get("rsync")
        ferry_name = sc.variants[0].name
        text, met = judge(sc, sums.get(ferry_name), ref, baselines)
        if text:
            targets.append((sc, text, met))
        for i, v in enumerate(sc.variants):
            s = sums[v.name]
            runs = sc.runs[v.name]
            bad = sum(1 for r in runs if not r.ok)
            okcol = f"{len(runs) - bad}/{len(runs)}" + (" **WRONG**" if bad else "")
            first = i == 0
            tgt = ""
            if first and text:
                tgt = SHORT_TARGET[sc.target] + (": met" if met else ": **not met**")
            if s is None:
                lines.append(f"| {sc.title if first else ''} | {sc.label if first else ''} "
                             f"| {v.name} | — | — | — | — | — | — | {okcol} | {tgt} |")
                continue
            rt = ratio(s["wall"], ref["wall"]) if ref and v.name != "rsync" else None
            lines.append(
                f"| {sc.title if first else ''} | {sc.label if first else ''} | {v.name} "
                f"| {fmt_s(s['wall'])} | {'' if rt is None else f'{rt:.2f}×'} "
                f"| {fmt_s(s['cpu_c'])} / {fmt_s(s['cpu_s'])} "
                f"| {fmt_mib(s['rss_c'])} / {fmt_mib(s['rss_s'])} "
                f"| {fmt_bytes(s['wire'])} | {fmt_bytes(s['literal'])} | {okcol} | {tgt} |")
    lines += ["", "## Baselines (same run)", "",
              "| data | tool | wall | CPU | peak RSS | ok | ferry pull / this |",
              "|---|---|---:|---:|---:|---|---:|"]
    for sc in scenarios:
        if not sc.key.startswith("base-"):
            continue
        pull = next((summary(s.runs["ferry"]) for s in scenarios
                     if s.key == f"pull-{sc.dataset}"), None)
        for v in sc.variants:
            s = summary(sc.runs[v.name])
            runs = sc.runs[v.name]
            okcol = f"{sum(r.ok for r in runs)}/{len(runs)}" + \
                ("" if v.check else " (no tree check)")
            if s is None:
                lines.append(f"| {sc.dataset} | {v.name} | — | — | — | {okcol} | |")
                continue
            rt = ratio(pull["wall"], s["wall"]) if pull else None
            lines.append(f"| {sc.dataset} | {v.name} | {fmt_s(s['wall'])} "
                         f"| {fmt_s(s['cpu_c'])} | {fmt_mib(s['rss_c'])} | {okcol} "
                         f"| {'' if rt is None else f'{rt:.2f}×'} |")
    lines += ["", "## Targets (issue 8)", ""]
    for sc, text, met in targets:
        lines.append(f"- {sc.title}, {sc.label}: {text} — "
                     f"{'**met**' if met else '**not met**'}")
    if skipped:
        lines += ["", "## Skipped", ""]
        lines += [f"- {k}: {why}" for k, why in skipped]
    wrong = [(sc, v.name, r) for sc in scenarios for v in sc.variants
             for r in sc.runs[v.name] if not r.ok]
    if wrong:
        lines += ["", "## Wrong or failed runs (not counted)", ""]
        lines += [f"- {sc.key} {name}: {r.why}" for sc, name, r in wrong[:30]]
    return "\n".join(lines) + "\n"


# -------------------------------------------------------------------- main

def profile(env, sc, outdir):
    """Run sc's first variant (ferry) once with `perf record` on the client
    and on the server process tree; print the top symbols of each side."""
    os.makedirs(outdir, exist_ok=True)
    v = sc.variants[0]
    prepare(env, sc)
    server = v.server(env) if v.server else None
    port = server.start() if server else None
    perf = ["perf", "record", "-q", "-e", "cpu-clock", "-F", "4000", "-g"]
    srv_perf = None
    if server is not None and server.proc is not None:
        daemon_pid = measure.tree_pids(server.proc.pid)[1]
        # -p follows the per-connection children the daemon forks.
        srv_perf = subprocess.Popen(perf + ["-o", os.path.join(outdir, "server.data"),
                                            "-p", str(daemon_pid)])
        time.sleep(0.5)
    cli = subprocess.run(perf + ["-o", os.path.join(outdir, "client.data"), "--"]
                         + v.argv(env, port), stdout=subprocess.DEVNULL)
    if srv_perf:
        measure.wait_reaped(daemon_pid)
        srv_perf.send_signal(2)
        srv_perf.wait()
    if server:
        server.stop()
    print(f"# perf profile: {sc.key} {v.name} (client exit {cli.returncode})")
    for side in ("client", "server"):
        data = os.path.join(outdir, f"{side}.data")
        if not os.path.exists(data):
            continue
        rep = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children",
                              "--sort", "comm,dso,symbol", "-g", "none",
                              "--percent-limit", "1.5"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        print(f"\n## {side}\n")
        print("\n".join(l for l in rep.stdout.splitlines()
                        if l.strip() and not l.startswith("#")))


def build_helper(env):
    """Compile bench/rusage_run.c into the run directory (once per source change)."""
    src = os.path.join(HERE, "rusage_run.c")
    exe = os.path.join(env.run_dir, "rusage_run")
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
        subprocess.run([os.environ.get("CC", "cc"), "-O2", "-Wall", "-Wextra", "-Werror",
                        "-o", exe, src], check=True)
    return exe


def probe_ferry(env, opt):
    """True unless ferry refuses opt as unsupported."""
    p = subprocess.run([env.ferry, opt, "--list-only", "/nonexistent-ferry-bench"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return "not supported" not in p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--scale", type=float, default=None)
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--only", default=None, help="regex on scenario keys")
    ap.add_argument("--bench-dir", default=os.environ.get("BENCH_DIR", "/var/tmp/ferry-bench"))
    ap.add_argument("--no-write", action="store_true", help="do not write bench/results")
    ap.add_argument("--dest-fs", choices=("disk", "tmpfs"),
                    default=os.environ.get("BENCH_DEST_FS", "disk"),
                    help="where destinations are written: under --bench-dir (disk) "
                    "or in /dev/shm (tmpfs: the CPU-bound case)")
    ap.add_argument("--perf", metavar="KEY", help="profile scenario KEY's ferry run with perf")
    args = ap.parse_args()
    args.mode = "quick" if args.quick else "full"
    if args.scale is None:
        args.scale = float(os.environ.get("BENCH_SCALE") or (0.02 if args.quick else 1.0))
    if args.rounds is None:
        args.rounds = int(os.environ.get("BENCH_ROUNDS") or 3)
    started = datetime.datetime.utcnow()
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    env = Env(args)
    measure.HELPER = build_helper(env)
    if not os.access(env.ferry, os.X_OK) or not env.rsync:
        sys.exit(f"bench: need {env.ferry} (make) and rsync on PATH")
    sizes = datasets.sizes_for_scale(args.scale)
    pg_ok = datasets.pg_bindir() is not None
    skipped = []
    if not pg_ok:
        skipped.append(("pgdata", "PostgreSQL not installed (make bench-deps)"))
    datasets.make_all(env.data, sizes, want_pg=pg_ok)

    scenarios = (baseline_scenarios(env, pg_ok) + pull_scenarios() + push_scenarios()
                 + resync_scenarios()
                 + compress_scenarios(env, probe_ferry(env, "--bwlimit=50000"))
                 + ssh_scenarios(env) + local_scenarios())
    if not pg_ok:
        scenarios = [s for s in scenarios if s.dataset != "pgdata"]
    if args.only:
        scenarios = [s for s in scenarios if re.search(args.only, s.key)]
    if args.perf:
        scenarios = [s for s in scenarios if s.key == args.perf]
        if not scenarios:
            sys.exit(f"bench: no scenario {args.perf}")
    need_ssh = any(s.key.startswith("ssh-") for s in scenarios)
    if need_ssh:
        try:
            env.ssh = Sshd(env)
        except (RuntimeError, subprocess.CalledProcessError) as e:
            for s in scenarios:
                if s.key.startswith("ssh-"):
                    s.skipped = f"no sshd: {e}"
    need_pg_bb = any(s.key == "base-pgdata" for s in scenarios)
    env.pg_server = PgBaseServer(env) if need_pg_bb and pg_ok else None
    if args.perf:
        try:
            profile(env, scenarios[0], os.path.join(env.run_dir, "perf"))
        finally:
            if env.pg_server:
                env.pg_server.close()
        return
    try:
        for sc in scenarios:
            if sc.skipped:
                skipped.append((sc.key, sc.skipped))
                log(f"== {sc.key}: SKIP {sc.skipped}")
                continue
            run_scenario(env, sc, args.rounds)
    finally:
        if env.pg_server:
            env.pg_server.close()
    text = report(env, args, scenarios, sizes, started,
                  load_before, skipped)
    print(text)
    if not args.no_write:
        outdir = os.path.join(HERE, "results")
        os.makedirs(outdir, exist_ok=True)
        default_scale = 0.02 if args.quick else 1.0
        suffix = "" if args.scale == default_scale else f"-s{args.scale:g}"
        if args.dest_fs == "tmpfs":
            suffix += "-tmpfs"
        path = os.path.join(outdir, f"{started:%Y-%m-%d}-{args.mode}{suffix}.md")
        with open(path, "w") as f:
            f.write(text)
        log(f"written: {path}")


if __name__ == "__main__":
    main()
