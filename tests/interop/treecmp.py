#!/usr/bin/env python3
"""Compare two directory trees the way rsync -aH should leave them.

Usage: treecmp.py A B [--nsec] [--no-times] [--no-dir-times]
                      [--no-link-times] [--no-perms] [--no-owner]
                      [--no-group] [--no-hardlinks] [--max N]

Checks, for every path under A and B (the roots included): file type,
regular-file content byte for byte, symlink targets, permission bits,
mtimes (whole seconds, or nanoseconds with --nsec), owner and group
numbers, device numbers, and which paths share an inode (hard-link
groups). Prints the first differences (lines start with two spaces, never
with PASS/FAIL/SKIP) and exits 1 if any; 0 if equal, 2 on usage errors.
"""

import argparse
import os
import stat
import sys

CHUNK = 1 << 20


def show(path):
    """Printable form of a bytes path: newlines and bad UTF-8 escaped."""
    if not path:
        return "."
    text = path.decode("utf-8", "backslashreplace")
    return text.encode("unicode_escape").decode("ascii") if not text.isprintable() else text


def scan(root):
    """Map relative bytes path -> lstat result, for root and all below it."""
    entries = {b"": os.lstat(root)}
    stack = [b""]
    while stack:
        rel = stack.pop()
        with os.scandir(os.path.join(root, rel) if rel else root) as it:
            for ent in it:
                sub = os.path.join(rel, ent.name) if rel else ent.name
                st = ent.stat(follow_symlinks=False)
                entries[sub] = st
                if stat.S_ISDIR(st.st_mode):
                    stack.append(sub)
    return entries


def kind(mode):
    for test, name in ((stat.S_ISREG, "file"), (stat.S_ISDIR, "dir"),
                       (stat.S_ISLNK, "symlink"), (stat.S_ISFIFO, "fifo"),
                       (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "chardev"),
                       (stat.S_ISBLK, "blockdev")):
        if test(mode):
            return name
    return "unknown"


def first_content_diff(pa, pb):
    """Offset of the first differing byte, or None if the files are equal."""
    with open(pa, "rb") as fa, open(pb, "rb") as fb:
        offset = 0
        while True:
            ca, cb = fa.read(CHUNK), fb.read(CHUNK)
            if ca != cb:
                n = min(len(ca), len(cb))
                i = next((k for k in range(n) if ca[k] != cb[k]), n)
                return offset + i
            if not ca:
                return None
            offset += len(ca)


def compare_entry(opts, rel, pa, pb, sa, sb):
    """List of difference descriptions for one path present in both trees."""
    ka, kb = kind(sa.st_mode), kind(sb.st_mode)
    if ka != kb:
        return [f"type {ka} != {kb}"]
    diffs = []
    if ka == "file":
        if sa.st_size != sb.st_size:
            diffs.append(f"size {sa.st_size} != {sb.st_size}")
        else:
            off = first_content_diff(pa, pb)
            if off is not None:
                diffs.append(f"content differs at byte {off}")
    elif ka == "symlink":
        ta, tb = os.readlink(pa), os.readlink(pb)
        if ta != tb:
            diffs.append(f"symlink target {show(ta)!r} != {show(tb)!r}")
    elif ka in ("chardev", "blockdev") and sa.st_rdev != sb.st_rdev:
        diffs.append(f"rdev {sa.st_rdev:#x} != {sb.st_rdev:#x}")

    # Linux ignores symlink permission bits, so comparing them is noise.
    if opts.perms and ka != "symlink":
        ma, mb = stat.S_IMODE(sa.st_mode), stat.S_IMODE(sb.st_mode)
        if ma != mb:
            diffs.append(f"mode {ma:04o} != {mb:04o}")
    if opts.owner and sa.st_uid != sb.st_uid:
        diffs.append(f"uid {sa.st_uid} != {sb.st_uid}")
    if opts.group and sa.st_gid != sb.st_gid:
        diffs.append(f"gid {sa.st_gid} != {sb.st_gid}")
    diffs += compare_times(opts, ka, sa, sb)
    return diffs


def compare_times(opts, ka, sa, sb):
    if not opts.times or (ka == "dir" and not opts.dir_times) \
            or (ka == "symlink" and not opts.link_times):
        return []
    ta, tb = sa.st_mtime_ns, sb.st_mtime_ns
    if opts.nsec:
        if ta != tb:
            return [f"mtime {ta // 10**9}.{ta % 10**9:09d} != {tb // 10**9}.{tb % 10**9:09d}"]
    elif ta // 10**9 != tb // 10**9:
        return [f"mtime {ta // 10**9} != {tb // 10**9}"]
    return []


def link_groups(entries):
    """Set of hard-link groups (frozensets of paths) with 2+ members here."""
    by_inode = {}
    for rel, st in entries.items():
        if not stat.S_ISDIR(st.st_mode) and st.st_nlink > 1:
            by_inode.setdefault((st.st_dev, st.st_ino), set()).add(rel)
    return {frozenset(g) for g in by_inode.values() if len(g) > 1}


def compare(opts):
    a, b = os.fsencode(opts.a), os.fsencode(opts.b)
    ea, eb = scan(a), scan(b)
    diffs = []
    for rel in sorted(ea.keys() | eb.keys()):
        if rel not in eb:
            diffs.append(f"only in A: {show(rel)}")
        elif rel not in ea:
            diffs.append(f"only in B: {show(rel)}")
        else:
            pa = os.path.join(a, rel) if rel else a
            pb = os.path.join(b, rel) if rel else b
            for d in compare_entry(opts, rel, pa, pb, ea[rel], eb[rel]):
                diffs.append(f"{show(rel)}: {d}")
    if opts.hardlinks:
        ga, gb = link_groups(ea), link_groups(eb)
        for g in sorted(ga - gb, key=sorted):
            diffs.append("hard-link group only in A: " + ", ".join(show(p) for p in sorted(g)))
        for g in sorted(gb - ga, key=sorted):
            diffs.append("hard-link group only in B: " + ", ".join(show(p) for p in sorted(g)))
    return diffs


def parse_args(argv):
    p = argparse.ArgumentParser(description="Compare two trees like rsync -aH.")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--nsec", action="store_true", help="compare mtime nanoseconds")
    p.add_argument("--no-times", dest="times", action="store_false")
    p.add_argument("--no-dir-times", dest="dir_times", action="store_false")
    p.add_argument("--no-link-times", dest="link_times", action="store_false")
    p.add_argument("--no-perms", dest="perms", action="store_false")
    p.add_argument("--no-owner", dest="owner", action="store_false")
    p.add_argument("--no-group", dest="group", action="store_false")
    p.add_argument("--no-hardlinks", dest="hardlinks", action="store_false")
    p.add_argument("--max", type=int, default=20, help="differences to print")
    return p.parse_args(argv)


def main(argv):
    opts = parse_args(argv)
    for root in (opts.a, opts.b):
        if not os.path.isdir(root):
            print(f"  treecmp: not a directory: {root}")
            return 2
    diffs = compare(opts)
    if not diffs:
        return 0
    print(f"  treecmp {opts.a} {opts.b}: {len(diffs)} difference(s)")
    for d in diffs[:opts.max]:
        print("  " + d)
    if len(diffs) > opts.max:
        print(f"  ... and {len(diffs) - opts.max} more")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
