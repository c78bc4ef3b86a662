#!/usr/bin/env python3
"""A remote shell for tests/interop/59_hardening.sh that swaps a directory
for a symlink at the worst moment of --remove-source-files.

usage: swap_proxy.py DIR TARGET HOST COMMAND...

Runs COMMAND (the server, on this host, through sh as ssh would) with our
stdin, and copies its output to our stdout. Just before the first
MSG_SUCCESS frame ("the receiver has the file: remove yours") reaches the
sending client, DIR is renamed to DIR.orig and replaced by a symlink to
TARGET: the race another user would win by timing, made certain. The
frame is found by its header, 04 00 00 6b (4 bytes, tag 7 + 100); a push
sends the client nothing else that could look like it.
"""
import os
import subprocess
import sys

HEADER = b"\x04\x00\x00\x6b"


def main():
    d, target, cmd = sys.argv[1], sys.argv[2], sys.argv[4:]
    p = subprocess.Popen(["sh", "-c", " ".join(cmd)], stdout=subprocess.PIPE)
    out = sys.stdout.buffer
    tail, swapped = b"", False
    while True:
        chunk = os.read(p.stdout.fileno(), 65536)
        if not chunk:
            break
        if not swapped and HEADER in tail + chunk:
            os.rename(d, d + ".orig")
            os.symlink(target, d)
            swapped = True
            sys.stderr.write("swap_proxy: %s is now a link to %s\n" % (d, target))
        tail = (tail + chunk)[-3:]
        out.write(chunk)
        out.flush()
    sys.exit(p.wait())


if __name__ == "__main__":
    main()
