#!/usr/bin/env python3
"""Per-step timings of ferry-pg-mirror re-mirrors on loopback (issue 24, goal 6).

Usage: bench/pg_remirror_steps.py --pgdata DIR --sock DIR --port N --ferry-port N
           --dests DIR [--tool LABEL=LAUNCHER:FERRY ...] [--rounds N] [--tx N]
           [--ferry-option OPT ...]

Needs a running primary (DIR, socket directory, port; pgbench -i already
done) and a ferry daemon on 127.0.0.1:--ferry-port with a writable module
"dests" whose path is --dests. Each --tool mirrors into its own directory
of the module (the first round is a first mirror, not reported). Every
round: pgbench -c 2 -j 2 -t TX, CHECKPOINT, then each tool once (--no-sync
--timing, run as /usr/bin/python3 -I -S LAUNCHER, as the launcher starts
itself), then pg_basebackup -X stream -c fast --no-sync --no-manifest
--compress=server-zstd into an empty directory. Prints per tool the median
wall time, its ratio to pg_basebackup's median, and the median of every
step --timing reports, plus the time outside the tool's own total
(interpreter start-up, imports, exit).
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

PY = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
STEP = re.compile(r"^ferry-pg-mirror:\s+([0-9.]+)\s+([0-9.]+)\s+(.*)$")
WAL_RANGE = re.compile(r"\s*[0-9A-F]{24}\.\.[0-9A-F]{24}")


def as_pg(argv):
    return ["runuser", "-u", "postgres", "--"] + argv if os.getuid() == 0 else argv


def run_tool(a, launcher, ferry, dest):
    argv = [PY, "-I", "-S", launcher, "--ferry", ferry, "--psql", os.path.join(a.bindir, "psql"),
            "--source-conn", f"host={a.sock} port={a.port} user=postgres dbname=postgres",
            "--pgdata", a.pgdata, "--dest", dest, "--via", "127.0.0.1::dests",
            f"--ferry-option=--port={a.ferry_port}", "--no-sync", "--timing"]
    argv += [f"--ferry-option={o}" for o in a.ferry_option]
    t = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True)
    wall = time.monotonic() - t
    if p.returncode != 0:
        sys.exit(f"{launcher}: exit {p.returncode}: {p.stderr[-1500:]}")
    steps = {}
    for line in p.stderr.splitlines():
        m = STEP.match(line)
        if m:
            name = WAL_RANGE.sub("", m.group(3))
            steps[name] = steps.get(name, 0.0) + float(m.group(2))
    steps["(outside the tool's total)"] = wall - steps.get("total", wall)
    return wall, steps


def basebackup(a):
    dest = os.path.join(a.dests, "..", "bb-steps")
    dest = os.path.abspath(dest)
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    if os.getuid() == 0:
        shutil.chown(dest, "postgres", "postgres")
    argv = as_pg([os.path.join(a.bindir, "pg_basebackup"), "-h", a.sock, "-p", str(a.port),
                  "-U", "postgres", "-D", dest, "-X", "stream", "-c", "fast", "--no-sync",
                  "--no-manifest", "--compress=server-zstd"])
    t = time.monotonic()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - t
    shutil.rmtree(dest, ignore_errors=True)
    return wall


def load(a):
    subprocess.run(as_pg([os.path.join(a.bindir, "pgbench"), "-h", a.sock, "-p", str(a.port),
                          "-c", "2", "-j", "2", "-t", str(a.tx // 2), "postgres"]),
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.run(as_pg([os.path.join(a.bindir, "psql"), "-X", "-q", "-h", a.sock, "-p",
                          str(a.port), "-c", "CHECKPOINT", "postgres"]), check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pgdata", required=True)
    ap.add_argument("--sock", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--ferry-port", type=int, required=True)
    ap.add_argument("--dests", required=True)
    ap.add_argument("--bindir", default="/usr/lib/postgresql/15/bin")
    ap.add_argument("--tool", action="append", required=True, metavar="LABEL=LAUNCHER:FERRY")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--tx", type=int, default=5000)
    ap.add_argument("--ferry-option", action="append", default=[])
    a = ap.parse_args()
    tools = []
    for spec in a.tool:
        label, rest = spec.split("=", 1)
        launcher, ferry = rest.split(":", 1)
        tools.append((label, launcher, ferry, f"steps-{label}"))
    for label, launcher, ferry, dest in tools:      # first mirrors
        run_tool(a, launcher, ferry, dest)
    walls = {t[0]: [] for t in tools}
    steps = {t[0]: {} for t in tools}
    bb = []
    for r in range(a.rounds):
        load(a)
        order = tools if r % 2 == 0 else list(reversed(tools))
        for label, launcher, ferry, dest in order:
            wall, st = run_tool(a, launcher, ferry, dest)
            walls[label].append(wall)
            for k, v in st.items():
                steps[label].setdefault(k, []).append(v)
        bb.append(basebackup(a))
        print(f"round {r + 1}: " + "  ".join(f"{t[0]} {walls[t[0]][-1]:.3f}s" for t in tools)
              + f"  pg_basebackup server-zstd {bb[-1]:.3f}s", file=sys.stderr, flush=True)
    md = statistics.median
    print(f"\npg_basebackup -X stream --compress=server-zstd --no-sync: median {md(bb):.3f} s "
          f"({' '.join(f'{x:.2f}' for x in bb)})\n")
    print("| step (median s) | " + " | ".join(t[0] for t in tools) + " |")
    print("|---|" + "---:|" * len(tools))
    names = []
    for t in tools:
        names += [n for n in steps[t[0]] if n not in names]
    for n in names:
        cells = []
        for t in tools:
            v = steps[t[0]].get(n)
            cells.append(f"{md(v):.3f}" + (f" ({len(v)}/{a.rounds})" if len(v) < a.rounds else "")
                         if v else "—")
        print(f"| {n} | " + " | ".join(cells) + " |")
    print("| **wall** | " + " | ".join(f"**{md(walls[t[0]]):.3f}**" for t in tools) + " |")
    print("| ratio to pg_basebackup server-zstd | "
          + " | ".join(f"{md(walls[t[0]]) / md(bb):.2f}×" for t in tools) + " |")


if __name__ == "__main__":
    main()
