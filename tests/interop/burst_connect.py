#!/usr/bin/env python3
"""Open N rsync-daemon connections to one module at once and classify how
each ends, to see whether a daemon's excess clients get its clean
"@ERROR: max connections" refusal or a TCP reset.

usage: burst_connect.py HOST PORT MODULE N [TIMEOUT_S]

Every client sends its greeting and the module name as soon as it is
connected. A client that is let in ("@RSYNCD: OK") keeps its connection,
and so its max-connections slot, until every client has an outcome; then
all are closed. Prints one line:
    ok=A refused=B reset=C eof=D timeout=E
ok: let in; refused: "@ERROR: max connections"; reset: ECONNRESET or
ECONNREFUSED (a reset from the listener's full queue, or a refusal that
reached the client as a reset); eof: closed with no answer; timeout: no
outcome within TIMEOUT_S (default 60).
Exit status 0 when every client has an outcome other than timeout.
"""
import errno
import selectors
import socket
import sys
import time


class Client:
    def __init__(self, sock):
        self.sock = sock
        self.sent = False
        self.buf = b""
        self.outcome = None


def start(host, port, n):
    sel = selectors.DefaultSelector()
    clients = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        c = Client(s)
        err = s.connect_ex((host, port))
        if err not in (0, errno.EINPROGRESS):
            c.outcome = "reset"
            s.close()
        else:
            sel.register(s, selectors.EVENT_WRITE, c)
        clients.append(c)
    return sel, clients


def on_writable(sel, c, module):
    err = c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    if err:
        c.outcome = "reset" if err in (errno.ECONNRESET, errno.ECONNREFUSED) else "eof"
        sel.unregister(c.sock)
        return
    try:
        c.sock.send(b"@RSYNCD: 32.0 sha512 sha256 sha1 md5 md4\n" + module.encode() + b"\n")
    except (ConnectionResetError, ConnectionRefusedError, BrokenPipeError):
        c.outcome = "reset"
        sel.unregister(c.sock)
        return
    c.sent = True
    sel.modify(c.sock, selectors.EVENT_READ, c)


def outcome_of(buf):
    """The outcome the lines read so far settle, or None."""
    for line in buf.split(b"\n")[:-1]:
        if line.startswith(b"@ERROR: max connections"):
            return "refused"
        if line.startswith(b"@ERROR"):
            return "eof"
        if line.startswith(b"@RSYNCD: OK"):
            return "ok"
    return None


def on_readable(sel, c):
    try:
        data = c.sock.recv(4096)
    except (ConnectionResetError, ConnectionRefusedError):
        c.outcome = outcome_of(c.buf + b"\n") or "reset"
        sel.unregister(c.sock)
        return
    if not data:
        c.outcome = outcome_of(c.buf + b"\n") or "eof"
        sel.unregister(c.sock)
        return
    c.buf += data
    c.outcome = outcome_of(c.buf)
    if c.outcome:
        sel.unregister(c.sock)


def main():
    host, port, module, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    timeout = float(sys.argv[5]) if len(sys.argv) > 5 else 60.0
    sel, clients = start(host, port, n)
    deadline = time.monotonic() + timeout
    while any(c.outcome is None for c in clients):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        for key, ev in sel.select(min(left, 1.0)):
            c = key.data
            if not c.sent:
                on_writable(sel, c, module)
            else:
                on_readable(sel, c)
    counts = {k: 0 for k in ("ok", "refused", "reset", "eof", "timeout")}
    for c in clients:
        counts[c.outcome or "timeout"] += 1
        c.sock.close()
    print(" ".join("%s=%d" % (k, v) for k, v in counts.items()))
    return 0 if counts["timeout"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
