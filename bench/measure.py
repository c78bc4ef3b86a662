"""Running one timed command, and measuring the processes on each side.

Every measured process runs under bench/rusage_run.c (HELPER), a tiny
program that forks it, reaps it with wait4() and writes its rusage to a
file; Python itself is never the direct parent, because Linux would carry
the harness's own RSS high-water mark into the tool's ru_maxrss.

Client side: the rusage of the command includes every descendant it waited
for (rsync's forked generator/receiver, a spawned ssh, ferry's local-copy
receiver).

Server side: a fresh server process (rsync/ferry daemon, or sshd) is started
for every run and stopped after it; we wait until it has reaped all of its
children (the per-connection processes), send SIGTERM and collect its
rusage. That covers the listener plus every per-connection
process (and, for sshd, the sshd session processes and the remote
`--server`, since the whole chain is reaped inside it). The listener's own
share is the same idle accept loop for both tools.

Peak RSS: ru_maxrss is the largest single process of a tree, which
undercounts a tool that splits itself into several processes. A sampler
thread therefore also sums the PSS (/proc/PID/smaps_rollup) of every live
process in each tree every 20 ms; the figure reported is the larger of the
sampled peak sum and ru_maxrss.
"""

import os
import signal
import socket
import subprocess
import threading
import time

HELPER = None  # path of the compiled rusage_run, set by run.py


def read_rusage(path):
    """(wait status, cpu seconds, maxrss KiB) from rusage_run's file."""
    with open(path) as f:
        status, utime, stime, maxrss = f.read().split()
    return int(status), float(utime) + float(stime), int(maxrss)


def tree_pids(root):
    """root and all its live descendants, from /proc/PID/task/TID/children."""
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return out


def pss_kib(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


class TreeSampler(threading.Thread):
    """Peak of the summed PSS of each watched process tree."""

    def __init__(self, interval=0.02):
        """Roots are rusage_run helpers: their own (tiny) PSS is not counted."""
        super().__init__(daemon=True)
        self.interval = interval
        self.roots = {}
        self.peak = {}
        self.stop_event = threading.Event()

    def watch(self, name, pid):
        self.roots[name] = pid
        self.peak.setdefault(name, 0)

    def run(self):
        while not self.stop_event.is_set():
            for name, pid in list(self.roots.items()):
                total = sum(pss_kib(p) for p in tree_pids(pid)[1:])
                if total > self.peak[name]:
                    self.peak[name] = total
            self.stop_event.wait(self.interval)

    def finish(self):
        self.stop_event.set()
        self.join()
        return self.peak


def port_open(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pid_alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def has_children(pid):
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                if f.read().strip():
                    return True
    except OSError:
        pass
    return False


def wait_reaped(pid, timeout=20):
    """Wait until pid has no children left (its connections are done)."""
    deadline = time.monotonic() + timeout
    while has_children(pid) and time.monotonic() < deadline:
        time.sleep(0.01)


class Server:
    """A server process started per run: argv is built for a given port."""

    def __init__(self, name, make_argv, logpath, post_start=None):
        self.name, self.make_argv, self.logpath = name, make_argv, logpath
        self.post_start = post_start
        self.proc = None
        self.port = None

    def start(self):
        self.rufile = self.logpath + ".rusage"
        for _ in range(5):
            port = free_port()
            log = open(self.logpath, "ab")
            argv = [HELPER, self.rufile] + self.make_argv(port)
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=log)
            log.close()
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and pid_alive(proc.pid):
                if port_open(port):
                    self.proc, self.port = proc, port
                    if self.post_start:
                        self.post_start(self)
                    return port
                time.sleep(0.01)
            self._kill(proc)
        raise RuntimeError(f"{self.name} did not start; see {self.logpath}")

    def _kill(self, proc):
        if pid_alive(proc.pid):
            proc.send_signal(signal.SIGTERM)
            for _ in range(200):
                if not pid_alive(proc.pid):
                    break
                time.sleep(0.01)
            else:
                # Our own tree only: the helper and what it started.
                for pid in reversed(tree_pids(proc.pid)):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
        _, status, _ = os.wait4(proc.pid, 0)
        proc.returncode = status

    def stop(self):
        """Stop after the per-connection children are reaped: (cpu, maxrss)."""
        proc, self.proc = self.proc, None
        server_pids = tree_pids(proc.pid)[1:2]
        if server_pids:
            wait_reaped(server_pids[0])
        self._kill(proc)
        _, cpu, maxrss = read_rusage(self.rufile)
        return cpu, maxrss


class Result:
    def __init__(self):
        self.wall = 0.0
        self.cpu = {"client": 0.0, "server": None}
        self.rss = {"client": 0, "server": None}   # KiB
        self.rc = None
        self.stdout = ""
        self.stderr = ""
        self.ok = False
        self.why = ""


def run_timed(argv, server=None, env=None, outdir="/tmp"):
    """Run argv and measure it; server, if given, is already started and is
    stopped here after the client ends (its stop() gives its rusage)."""
    res = Result()
    sampler = TreeSampler()
    if server and server.proc:
        sampler.watch("server", server.proc.pid)
    outp, errp = os.path.join(outdir, "client.out"), os.path.join(outdir, "client.err")
    rufile = os.path.join(outdir, "client.rusage")
    with open(outp, "wb") as out, open(errp, "wb") as err:
        t0 = time.monotonic()
        proc = subprocess.Popen([HELPER, rufile] + argv, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=err, env=env)
        sampler.watch("client", proc.pid)
        sampler.start()
        _, status, _ = os.wait4(proc.pid, 0)
        res.wall = time.monotonic() - t0
        proc.returncode = status
    status, res.cpu["client"], client_maxrss = read_rusage(rufile)
    res.rc = os.waitstatus_to_exitcode(status)
    sru = server.stop() if server else None
    peak = sampler.finish()
    res.rss["client"] = max(client_maxrss, peak.get("client", 0))
    if sru is not None:
        res.cpu["server"], server_maxrss = sru
        res.rss["server"] = max(server_maxrss, peak.get("server", 0))
    with open(outp, errors="replace") as f:
        res.stdout = f.read()
    with open(errp, errors="replace") as f:
        res.stderr = f.read()
    return res
