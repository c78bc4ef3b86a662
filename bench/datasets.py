"""Benchmark datasets: generated once under BENCH_DIR/data and cached.

Each dataset lives in its own directory with a params.json written last;
when the parameters of a later run match, the dataset is reused as is.

  pgdata/base, pgdata/changed    a real PostgreSQL PGDATA after `pgbench -i
                                 -s N` and a checkpoint; the copy after a
                                 pgbench load, checkpointed and stopped
  bigfile/base/big.bin           random data
  bigfile/blocks/big.bin         1% of its 4 KiB blocks rewritten at random
  bigfile/insert/big.bin         1 MiB of new data inserted near the front
  smallfiles/base, .../changed   files of 1-64 KiB (log-uniform sizes) in a
                                 3-level tree; the copy has 1% of the files
                                 changed, 1% deleted and 1% added
"""

import glob
import json
import math
import os
import random
import shutil
import socket
import subprocess
import sys
import time

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def sizes_for_scale(scale):
    """Generation parameters for a scale (1.0 = the issue's full sizes)."""
    return {
        "pgbench_scale": max(1, round(50 * scale)),
        "pgbench_transactions": max(200, round(20000 * scale)),
        "bigfile_bytes": max(8 * MIB, int(2 * GIB * scale) // MIB * MIB),
        "smallfiles_count": max(500, round(100000 * scale)),
    }


def _cached(dirpath, params):
    try:
        with open(os.path.join(dirpath, "params.json")) as f:
            return json.load(f) == params
    except (OSError, ValueError):
        return False


def _mark_done(dirpath, params):
    with open(os.path.join(dirpath, "params.json"), "w") as f:
        json.dump(params, f)


def _fresh_dir(path):
    if os.path.exists(path):
        subprocess.run(["rm", "-rf", path], check=True)
    os.makedirs(path)


def _random_bytes(rng, n):
    return rng.randbytes(n)


# ------------------------------------------------------------------ bigfile

def make_bigfile(root, size, seed=1):
    params = {"kind": "bigfile", "bytes": size, "seed": seed, "v": 1}
    if _cached(root, params):
        return
    log(f"generating bigfile: {size / MIB:.0f} MiB")
    _fresh_dir(root)
    rng = random.Random(seed)
    base = os.path.join(root, "base", "big.bin")
    os.makedirs(os.path.dirname(base))
    with open(base, "wb") as f:
        left = size
        while left:
            n = min(left, 8 * MIB)
            f.write(_random_bytes(rng, n))
            left -= n
    _make_bigfile_blocks(root, base, size, rng)
    _make_bigfile_insert(root, base, rng)
    _mark_done(root, params)


def _make_bigfile_blocks(root, base, size, rng):
    """A copy with 1% of its 4 KiB blocks rewritten at random places."""
    path = os.path.join(root, "blocks", "big.bin")
    os.makedirs(os.path.dirname(path))
    shutil.copyfile(base, path)
    nblocks = size // (4 * KIB)
    with open(path, "r+b") as f:
        for blk in rng.sample(range(nblocks), max(1, nblocks // 100)):
            f.seek(blk * 4 * KIB)
            f.write(_random_bytes(rng, 4 * KIB))
    shutil.copystat(base, path)
    os.utime(path, (time.time(), os.stat(base).st_mtime + 1000))


def _make_bigfile_insert(root, base, rng):
    """A copy with 1 MiB inserted at 64 KiB + 123 (not block aligned)."""
    path = os.path.join(root, "insert", "big.bin")
    os.makedirs(os.path.dirname(path))
    at = 64 * KIB + 123
    with open(base, "rb") as src, open(path, "wb") as dst:
        dst.write(src.read(at))
        dst.write(_random_bytes(rng, MIB))
        shutil.copyfileobj(src, dst, 8 * MIB)
    os.utime(path, (time.time(), os.stat(base).st_mtime + 1000))


# --------------------------------------------------------------- smallfiles

def _small_size(rng):
    """1 KiB .. 64 KiB, log-uniform (mean about 15 KiB)."""
    return int(math.exp(rng.uniform(math.log(KIB), math.log(64 * KIB))))


def _leaf_dirs(count):
    fan = max(2, math.ceil((count / 100) ** (1 / 3)))
    return [f"d{a:02d}/e{b:02d}/f{c:02d}"
            for a in range(fan) for b in range(fan) for c in range(fan)]


def make_smallfiles(root, count, seed=2):
    params = {"kind": "smallfiles", "count": count, "seed": seed, "v": 1}
    if _cached(root, params):
        return
    log(f"generating smallfiles: {count} files")
    _fresh_dir(root)
    rng = random.Random(seed)
    base = os.path.join(root, "base")
    leaves = _leaf_dirs(count)
    names = []
    for i in range(count):
        rel = f"{leaves[i % len(leaves)]}/file{i:06d}.dat"
        names.append(rel)
        path = os.path.join(base, rel)
        if i < len(leaves):
            os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(_random_bytes(rng, _small_size(rng)))
    _settle_times(base, 1700000000)
    changed = os.path.join(root, "changed")
    subprocess.run(["cp", "-a", base, changed], check=True)
    _change_smallfiles(changed, names, leaves, count, rng)
    _mark_done(root, params)


def _settle_times(tree, when):
    """Give every entry the same old mtime, so copies are stable."""
    for dirpath, dirnames, filenames in os.walk(tree, topdown=False):
        for name in filenames:
            os.utime(os.path.join(dirpath, name), (when, when))
        os.utime(dirpath, (when, when))


def _change_smallfiles(tree, names, leaves, count, rng):
    """1% changed (one 1 KiB run rewritten, new mtime), 1% deleted, 1% added."""
    pick = rng.sample(names, 2 * max(1, count // 100))
    half = len(pick) // 2
    now = 1700100000
    for rel in pick[:half]:
        path = os.path.join(tree, rel)
        size = os.path.getsize(path)
        with open(path, "r+b") as f:
            f.seek(rng.randrange(0, max(1, size - KIB)))
            f.write(_random_bytes(rng, min(KIB, size)))
        os.utime(path, (now, now))
    for rel in pick[half:]:
        os.unlink(os.path.join(tree, rel))
    for i in range(max(1, count // 100)):
        path = os.path.join(tree, rng.choice(leaves), f"added{i:06d}.dat")
        with open(path, "wb") as f:
            f.write(_random_bytes(rng, _small_size(rng)))
        os.utime(path, (now, now))
    for leaf in leaves:
        os.utime(os.path.join(tree, leaf), (now, now))


# ------------------------------------------------------------------- pgdata

def pg_bindir():
    """Debian's PostgreSQL binaries (newest major), not whatever is on PATH."""
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                  key=lambda d: int(d.split("/")[-2]) if d.split("/")[-2].isdigit() else 0)
    for d in reversed(dirs):
        if all(os.access(os.path.join(d, p), os.X_OK)
               for p in ("initdb", "pg_ctl", "pgbench", "psql", "pg_basebackup")):
            return d
    return None


def _as_pg_user(cmd):
    """Run PostgreSQL tools as `postgres` when we are root (initdb refuses root)."""
    if os.getuid() == 0:
        return ["runuser", "-u", "postgres", "--"] + cmd
    return cmd


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgServer:
    """A private postmaster on a free port with its socket in a private dir."""

    def __init__(self, bindir, pgdata, sockdir, logfile):
        self.bindir, self.pgdata, self.sockdir = bindir, pgdata, sockdir
        self.logfile = logfile
        self.port = _free_port()

    def tool(self, name, *args):
        return _as_pg_user([os.path.join(self.bindir, name), *args])

    def start(self):
        opts = (f"-p {self.port} -k {self.sockdir} -c listen_addresses='' "
                "-c fsync=off -c synchronous_commit=off -c full_page_writes=on")
        subprocess.run(self.tool("pg_ctl", "-D", self.pgdata, "-l", self.logfile,
                                 "-o", opts, "-w", "-t", "60", "start"),
                       check=True, stdout=subprocess.DEVNULL)

    def psql(self, sql):
        subprocess.run(self.tool("psql", "-X", "-q", "-h", self.sockdir, "-p", str(self.port),
                                 "-d", "postgres", "-c", sql),
                       check=True, stdout=subprocess.DEVNULL)

    def pgbench(self, *args):
        subprocess.run(self.tool("pgbench", "-h", self.sockdir, "-p", str(self.port),
                                 *args, "postgres"),
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self):
        subprocess.run(self.tool("pg_ctl", "-D", self.pgdata, "-m", "fast", "-w", "stop"),
                       check=True, stdout=subprocess.DEVNULL)


def _pg_scratch(root):
    """A socket/log dir the postgres user can write."""
    d = os.path.join(root, "sock")
    os.makedirs(d, exist_ok=True)
    if os.getuid() == 0:
        shutil.chown(d, "postgres", "postgres")
    return d


def make_pgdata(root, scale, transactions):
    bindir = pg_bindir()
    params = {"kind": "pgdata", "scale": scale, "tx": transactions,
              "bindir": bindir, "v": 1}
    if _cached(root, params):
        return
    if not bindir:
        raise RuntimeError("PostgreSQL not found under /usr/lib/postgresql/*/bin "
                           "(run `make bench-deps`)")
    log(f"generating pgdata: pgbench -i -s {scale}, then -t {transactions} load")
    _fresh_dir(root)
    if os.getuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    sock = _pg_scratch(root)
    base = os.path.join(root, "base")
    subprocess.run(_as_pg_user([os.path.join(bindir, "initdb"), "-D", base, "-A", "trust",
                                "-U", "postgres", "--no-sync"]),
                   check=True, stdout=subprocess.DEVNULL)
    srv = PgServer(bindir, base, sock, os.path.join(sock, "base.log"))
    srv.start()
    try:
        srv.pgbench("-i", "-q", "-s", str(scale))
        srv.psql("CHECKPOINT")
    finally:
        srv.stop()
    changed = os.path.join(root, "changed")
    subprocess.run(["cp", "-a", base, changed], check=True)
    srv = PgServer(bindir, changed, sock, os.path.join(sock, "changed.log"))
    srv.start()
    try:
        srv.pgbench("-c", "2", "-j", "2", "-t", str(transactions // 2))
        srv.psql("CHECKPOINT")
    finally:
        srv.stop()
    _mark_done(root, params)


def make_all(data_dir, sizes, want_pg=True):
    os.makedirs(data_dir, exist_ok=True)
    if want_pg:
        make_pgdata(os.path.join(data_dir, "pgdata"), sizes["pgbench_scale"],
                    sizes["pgbench_transactions"])
    make_bigfile(os.path.join(data_dir, "bigfile"), sizes["bigfile_bytes"])
    make_smallfiles(os.path.join(data_dir, "smallfiles"), sizes["smallfiles_count"])
