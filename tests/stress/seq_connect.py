#!/usr/bin/env python3
"""Make N sequential module-listing connections to an rsync daemon, each
one the whole exchange a real client has: greeting, an empty module name,
the listing up to "@RSYNCD: EXIT", close.

usage: seq_connect.py PORT N
Prints "ok=A bad=B"; exit status 0 when every connection was answered
with a listing that names at least one module.
"""
import socket
import sys


def one(port):
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(b"@RSYNCD: 32.0 sha1 md5\n\n")
        buf = b""
        while b"@RSYNCD: EXIT\n" not in buf:
            got = s.recv(65536)
            if not got:
                return False
            buf += got
        lines = buf.split(b"\n")
        return lines[0].startswith(b"@RSYNCD: ") and len(lines) > 3


def main():
    port, n = int(sys.argv[1]), int(sys.argv[2])
    ok = bad = 0
    for _ in range(n):
        try:
            if one(port):
                ok += 1
            else:
                bad += 1
        except OSError:
            bad += 1
    print("ok=%d bad=%d" % (ok, bad))
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
