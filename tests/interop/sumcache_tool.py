#!/usr/bin/env python3
"""Read and doctor a --sums-cache file (format: proto/delta/sumcache.c) for
tests/interop/45_sums_cache.sh.

  sumcache_tool.py FILE list              path and block count of each entry
  sumcache_tool.py FILE spoil PATH        overwrite PATH's strong sums
  sumcache_tool.py FILE lie ROOT FROM TO  give TO (a file under ROOT, as it
                                          is now) the sums of FROM's entry
"""
import os
import struct
import sys

MAGIC = b"FERRYSUMS1\n"


def load(name):
    data = open(name, "rb").read()
    assert data[:11] == MAGIC, "bad magic"
    ctype, order, s2, zero, seed, n = struct.unpack_from("<BBBBiI", data, 11)
    off = 11 + 12
    entries = []
    for _ in range(n):
        (plen,) = struct.unpack_from("<H", data, off)
        off += 2
        path = data[off:off + plen].decode()
        off += plen
        key = struct.unpack_from("<QQqqIqIii", data, off)
        off += struct.calcsize("<QQqqIqIii")
        count = key[-1]
        weak = data[off:off + 4 * count]
        off += 4 * count
        strong = data[off:off + s2 * count]
        off += s2 * count
        entries.append([path, list(key), weak, strong])
    assert off == len(data), "trailing bytes"
    return (ctype, order, s2, zero, seed), entries


def save(name, head, entries):
    out = bytearray(MAGIC)
    out += struct.pack("<BBBBiI", *head, len(entries))
    for path, key, weak, strong in entries:
        p = path.encode()
        out += struct.pack("<H", len(p)) + p
        out += struct.pack("<QQqqIqIii", *key) + weak + strong
    with open(name, "wb") as f:
        f.write(out)


def main():
    name, cmd = sys.argv[1], sys.argv[2]
    head, entries = load(name)
    if cmd == "list":
        for path, key, _, _ in entries:
            print(path, key[-1])
        return
    if cmd == "spoil":
        for e in entries:
            if e[0] == sys.argv[3]:
                e[3] = bytes(b ^ 0x5A for b in e[3])
        save(name, head, entries)
        return
    if cmd == "lie":
        root, src, dst = sys.argv[3:6]
        e = next(e for e in entries if e[0] == src)
        st = os.lstat(os.path.join(root, dst))
        key = [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns // 10**9,
               st.st_mtime_ns % 10**9, st.st_ctime_ns // 10**9, st.st_ctime_ns % 10**9,
               e[1][7], e[1][8]]
        entries = [x for x in entries if x[0] != dst] + [[dst, key, e[2], e[3]]]
        save(name, head, entries)
        return
    sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
