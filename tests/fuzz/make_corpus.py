#!/usr/bin/env python3
"""Regenerate the seed corpora under tests/fuzz/corpus/ (issue 22).

    tests/fuzz/make_corpus.py [CORPUS_DIR]

Real rsync 3.5.0 traffic where the bytes come from a session:
  batch, flist  rsync --write-batch of a small tree (protocols 28-32, with
                -H, -A, -X, -c, -z), and the server's stream of a remote-shell
                pull (incremental recursion) cut after the protocol set-up;
  mux           that server-to-client stream, frames as they came;
  daemon        what rsync's client sends an rsync daemon (greeting, module,
                auth response, arguments), through a logging relay
                (docs/protocol.md 14.3);
  daemon_client what the rsync daemon answers in those sessions;
  token_*       the streams rsync sent, from tests/unit/test_token_rsync.c;
  config        the rsyncd.conf the capture ran with, and variations.
The others (sums, proxy, filter, wildmatch, filesfrom, xattr, acl) are
written here by hand from the wire layouts. Each file starts with the
harness's option bytes where the harness takes some (see its header).
Needs root (devices, ACLs), rsync, setfacl and setfattr.
"""
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "corpus")
MAX_SEED = 16384


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data[:MAX_SEED])


def i32(v):
    return struct.pack("<i", v)


def extra_bytes(b):
    for lim, n in ((0x80, 0), (0xC0, 1), (0xE0, 2), (0xF0, 3), (0xF8, 4), (0xFC, 5)):
        if b < lim:
            return n
    return 6


def read_varint(buf, pos):
    """rsync's varint at pos: (value, next pos)."""
    n = extra_bytes(buf[pos])
    raw = bytearray(buf[pos + 1:pos + 1 + n])
    raw.append(buf[pos] & ((1 << (8 - n)) - 1) if n else buf[pos])
    raw += b"\0" * (5 - len(raw))
    return struct.unpack("<I", bytes(raw[:4]))[0], pos + 1 + n


def varint(v):
    """rsync's write_varint (values below 2^28 are enough here)."""
    b = struct.pack("<I", v)
    cnt = 4
    while cnt > 1 and b[cnt - 1] == 0:
        cnt -= 1
    bit = 1 << (8 - cnt)
    top = b[cnt - 1]
    if top >= bit:
        return bytes([(~(bit - 1)) & 0xFF]) + b[:cnt]
    if cnt > 1:
        return bytes([top | ((~(bit * 2 - 1)) & 0xFF)]) + b[:cnt - 1]
    return bytes([top])


def compat_byte(cf):
    """fuzz_flist.c's third option byte for rsync's compat flags."""
    bits = ((1 << 0, 0x01), (1 << 7, 0x02), (1 << 8, 0x04), (1 << 3, 0x08), (1 << 1, 0x10))
    return sum(ours for theirs, ours in bits if cf & theirs)


def flist_opts(protocol, opts, cf):
    p = (protocol - 27) | (0x40 if "A" in opts else 0) | (0x80 if "X" in opts else 0)
    a = 0x01 if "H" in opts else 0
    a |= 0x02 | 0x04 | 0x08 | 0x10  # -a: -o -g -D -l
    a |= 0x20 if "c" in opts else 0
    return bytes([p, a, compat_byte(cf)])


def make_tree(root):
    src = os.path.join(root, "src")
    os.makedirs(os.path.join(src, "sub/deeper/deepest"))
    os.makedirs(os.path.join(src, "empty"))
    for i, size in enumerate((0, 1, 100, 700, 3000)):
        with open(os.path.join(src, f"file{i}.txt"), "wb") as f:
            f.write(bytes((j * 7 + i) & 0xFF for j in range(size)))
    with open(os.path.join(src, "sub/deeper/deepest/leaf"), "w") as f:
        f.write("leaf\n")
    with open(os.path.join(src, "sub/a b\nc"), "w") as f:
        f.write("odd name\n")
    os.symlink("file1.txt", os.path.join(src, "link"))
    os.symlink("../nowhere", os.path.join(src, "sub/dangling"))
    os.link(os.path.join(src, "file2.txt"), os.path.join(src, "sub/hard"))
    os.mkfifo(os.path.join(src, "fifo"))
    os.mknod(os.path.join(src, "null"), 0o20666, os.makedev(1, 3))
    os.chown(os.path.join(src, "file3.txt"), 65534, 65534)
    subprocess.run(["setfattr", "-n", "user.test", "-v", "value", os.path.join(src, "file1.txt")])
    subprocess.run(["setfattr", "-n", "user.big", "-v", "x" * 300, os.path.join(src, "file2.txt")])
    subprocess.run(["setfacl", "-m", "u:nobody:r,g:nogroup:rw", os.path.join(src, "file3.txt")])
    subprocess.run(["setfacl", "-d", "-m", "u:nobody:rx", os.path.join(src, "sub")])
    return src


def batch_header(data):
    """(protocol, compat flags, offset of the file list) of a batch file."""
    protocol = struct.unpack("<i", data[4:8])[0]
    pos, cf = 8, 0
    if protocol >= 30:
        cf, pos = read_varint(data, pos)
    return protocol, cf, pos + 4


def capture_batches(root, src):
    variants = [("a", 28), ("aH", 29), ("a", 30), ("aHAX", 30), ("aH", 31), ("aAX", 31),
                ("a", 32), ("aHc", 32), ("aHAX", 32), ("az", 32), ("aHc", 28)]
    for opts, protocol in variants:
        name = f"p{protocol}_{opts}"
        dst = os.path.join(root, "dst_" + name)
        b = os.path.join(root, name + ".batch")
        subprocess.run(["rsync", "-" + opts, f"--protocol={protocol}", "--write-batch=" + b,
                        src + "/", dst + "/"], check=True, stdout=subprocess.DEVNULL)
        data = open(b, "rb").read()
        put("batch", name, data)
        proto, cf, start = batch_header(data)
        put("flist", "batch_" + name, flist_opts(proto, opts, cf) + data[start:])


def split_server_stream(data, negotiated_strings):
    """A remote-shell server's output: (compat flags, frames after the seed)."""
    pos = 4  # its protocol version
    cf, pos = read_varint(data, pos)
    for _ in range(negotiated_strings):
        n = data[pos]
        if n & 0x80:
            n = (n & 0x7F) << 8 | data[pos + 1]
            pos += 1
        pos += 1 + n
    return cf, data[pos + 4:]


def demux(frames):
    out, pos = bytearray(), 0
    while pos + 4 <= len(frames):
        hdr = struct.unpack("<I", frames[pos:pos + 4])[0]
        n, tag = hdr & 0xFFFFFF, hdr >> 24
        if tag == 7:
            out += frames[pos + 4:pos + 4 + n]
        pos += 4 + n
    return bytes(out)


def capture_rsh(root, src):
    """A pull over a "remote shell" that copies the server's output."""
    for opts in ("a", "aHAX", "aHc"):
        log = os.path.join(root, f"rsh_{opts}.out")
        rsh = os.path.join(root, "rsh.sh")
        with open(rsh, "w") as f:
            f.write(f'#!/bin/sh\nshift\n"$@" | tee {log}\n')
        os.chmod(rsh, 0o755)
        dst = os.path.join(root, "rdst_" + opts)
        subprocess.run(["rsync", "-" + opts, "-e", rsh, "x:" + src + "/", dst + "/"], check=True,
                       stdout=subprocess.DEVNULL)
        data = open(log, "rb").read()
        cf, frames = split_server_stream(data, 1)
        put("flist", "rsh_inc_" + opts, flist_opts(32, opts, cf) + demux(frames))
        put("mux", "rsh_" + opts, bytes([0x10 | 5 << 5]) + frames)
        put("mux", "rsh_client_" + opts, bytes([5 << 5]) + frames)


def relay_once(listen, target_port, log, back):
    """docs/protocol.md 14.3: one connection, both directions kept."""
    listen.settimeout(30)
    try:
        cli, _ = listen.accept()
    except OSError:
        return
    cli.settimeout(30)
    up = socket.create_connection(("127.0.0.1", target_port), timeout=30)

    def pump(a, b, keep):
        while True:
            try:
                data = a.recv(65536)
            except OSError:
                break
            if not data:
                break
            if keep is not None:
                keep.append(data)
            b.sendall(data)
        try:
            b.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    t = threading.Thread(target=pump, args=(up, cli, back))
    t.start()
    pump(cli, up, log)
    t.join()
    cli.close()
    up.close()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def capture_daemon(root, src):
    secrets = os.path.join(root, "secrets")
    with open(secrets, "w") as f:
        f.write("alice:secret\n")
    os.chmod(secrets, 0o600)
    conf = os.path.join(root, "rsyncd.conf")
    text = (f"use chroot = no\nlog file = {root}/rsyncd.log\npid file = {root}/rsyncd.pid\n"
            f"[mod]\n path = {src}\n auth users = alice\n secrets file = {secrets}\n"
            f" read only = yes\n uid = root\n gid = root\n"
            f"[open]\n path = {root}/open\n read only = no\n uid = root\n gid = root\n"
            f" comment = an open module\n")
    os.makedirs(os.path.join(root, "open"))
    with open(conf, "w") as f:
        f.write(text)
    put("config", "rsyncd_capture.conf", text.encode())
    port = free_port()
    daemon = subprocess.Popen(["rsync", "--daemon", "--no-detach", f"--config={conf}",
                               "--address=127.0.0.1", f"--port={port}"])
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                break
            except OSError:
                threading.Event().wait(0.05)
        runs = [
            ("pull_auth", ["rsync", "-a", "rsync://alice@127.0.0.1:{p}/mod/", root + "/d1/"]),
            ("pull_auth_p29", ["rsync", "-a", "--protocol=29",
                               "rsync://alice@127.0.0.1:{p}/mod/", root + "/d2/"]),
            ("push_secluded", ["rsync", "-a", "-s", "--delete", "--exclude=*.o",
                               src + "/", "rsync://127.0.0.1:{p}/open/"]),
            ("list", ["rsync", "rsync://127.0.0.1:{p}/"]),
            ("pull_early_input", ["rsync", "-a", "--early-input=" + secrets,
                                  "rsync://127.0.0.1:{p}/open/", root + "/d3/"]),
        ]
        for name, argv in runs:
            lport = free_port()
            listen = socket.create_server(("127.0.0.1", lport))
            log, back = [], []
            t = threading.Thread(target=relay_once, args=(listen, port, log, back))
            t.start()
            env = dict(os.environ, RSYNC_PASSWORD="secret")
            subprocess.run([a.replace("{p}", str(lport)) for a in argv], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
            t.join()
            listen.close()
            put("daemon", name, b"".join(log))
            # fuzz_daemon_client.c's option byte: the listing or "mod"
            put("daemon_client", name, bytes([0x01 if name == "list" else 0x08]) +
                b"".join(back))
    finally:
        daemon.terminate()
        daemon.wait()


def c_array(text, name):
    body = re.search(r"\b" + name + r"\[\d*\] = \{(.*?)\};", text, re.S).group(1)
    return bytes(int(x, 16) for x in re.findall(r"0x[0-9a-fA-F]+", body))


def token_seeds():
    text = open(os.path.join(HERE, "..", "unit", "test_token_rsync.c")).read()
    # option bytes: protocol 32, 16 blocks, a block length near 700
    opt = bytes([5, 16, 22])
    for alg in ("zstd", "lz4", "zlibx", "zlib"):
        a, b = c_array(text, f"cap_{alg}_a"), c_array(text, f"cap_{alg}_b")
        put("token_" + alg, "rsync_a", opt + a)
        put("token_" + alg, "rsync_ab", opt + a + b)
    big = bytes([3, 2, 255])
    put("token_zlib", "rsync_big_p30", big + c_array(text, "cap_zlib_big_p30"))
    put("token_zlib", "rsync_big_p31", bytes([4, 2, 255]) + c_array(text, "cap_zlib_big_p31"))
    plain = i32(5) + b"hello" + i32(-1) + i32(-2) + i32(3) + b"abc" + i32(-16) + i32(0)
    put("token_plain", "literal_blocks", opt + plain + i32(2) + b"xy" + i32(0))
    put("token_plain", "empty", opt + i32(0))


def sums_seeds():
    # first byte: protocol (low 3 bits, 27 + n % 6) and checksum (>> 3)
    def head(count, blen, s2, rem):
        return i32(count) + i32(blen) + i32(s2) + i32(rem)

    sums = b"".join(i32(0x10001 * i) + bytes([i] * 16) for i in range(8))
    put("sums", "md5_8_blocks", bytes([5 | 2 << 3]) + head(8, 700, 16, 300) + sums)
    put("sums", "md4_short", bytes([1 | 0 << 3]) + head(8, 700, 2, 0) +
        b"".join(i32(i) + bytes([i, i]) for i in range(8)))
    put("sums", "dup_weak", bytes([5 | 4 << 3]) + head(6, 512, 8, 12) +
        b"".join(i32(7) + bytes([i & 1] * 8) for i in range(6)))
    put("sums", "empty", bytes([5]) + head(0, 0, 0, 0))
    put("sums", "bad_remainder", bytes([5]) + head(1, 8, 2, 9))


def proxy_seeds():
    greeting = b"@RSYNCD: 32.0 sha512 sha256 sha1 md5 md4\n"
    put("proxy", "v1_tcp4", b"PROXY TCP4 192.0.2.1 198.51.100.2 56324 873\r\n" + greeting)
    put("proxy", "v1_tcp6", b"PROXY TCP6 2001:db8::1 2001:db8::2 56324 873\r\n" + greeting)
    put("proxy", "v1_unknown", b"PROXY UNKNOWN\r\n" + greeting)
    sig = b"\r\n\r\n\x00\r\nQUIT\n"
    v4 = bytes([192, 0, 2, 1, 198, 51, 100, 2]) + struct.pack(">HH", 56324, 873)
    put("proxy", "v2_tcp4", sig + bytes([0x21, 0x11]) + struct.pack(">H", len(v4)) + v4 + greeting)
    v6 = bytes(range(16)) + bytes(range(16, 32)) + struct.pack(">HH", 1, 873)
    tlv = bytes([0x04, 0x00, 0x03]) + b"abc"
    put("proxy", "v2_tcp6_tlv", sig + bytes([0x21, 0x21]) +
        struct.pack(">H", len(v6) + len(tlv)) + v6 + tlv + greeting)
    put("proxy", "v2_local", sig + bytes([0x20, 0x00, 0, 0]) + greeting)


def filter_seeds():
    rules = [b"- *.o", b"+ /dir/", b"-! keep", b"P protected", b"H hidden", b"S shown",
             b"R risk", b": .rsync-filter", b"dir-merge,- .gitignore", b"- /abs/**/x",
             b"-p perishable", b"-x user.*", b"+ ***", b"!"]
    wire = b"".join(i32(len(r)) + r for r in rules) + i32(0)
    put("filter", "wire_p32_receiver", bytes([0x01 | 5 << 5]) + wire)
    put("filter", "wire_p32_sender", bytes([0x03 | 5 << 5]) + wire)
    put("filter", "wire_p28_old", bytes([0x03 | 1 << 5]) + i32(5) + b"- *.o" + i32(6) +
        b"+ dir/" + i32(0))
    text = b"\n".join(r for r in rules if r != b"!") + b"\nsub/dir/x.o"
    put("filter", "text_rules", bytes([0]) + text)
    put("filter", "text_old_prefixes", bytes([0x02]) + b"- *.bak\n+ *.c\nfoo bar\nsrc/a.c")
    put("filter", "text_word_split", bytes([0x40]) + b"- a b c\n+ d/ - e\nd/e")


def wildmatch_seeds():
    pairs = [(b"*.c", b"src/a.c"), (b"**/x", b"a/b/x"), (b"[a-z]*[!0-9]", b"abc9x"),
             (b"a\\*b", b"a*b"), (b"[[:alpha:]][[:digit:]]", b"a1"), (b"***", b"a/b"),
             (b"foo/**/bar/", b"foo/a/b/bar/"), (b"?", b"/"), (b"[]-]", b"-"),
             (b"*a*a*a*a*a*a*a*a*b", b"a" * 60)]
    for i, (p, t) in enumerate(pairs):
        put("wildmatch", f"pair{i}", bytes([i % 5]) + p + b"\0" + t)


def filesfrom_seeds():
    put("filesfrom", "peer_names", bytes([0x01 | 0x0C]) +
        b"a.txt\0dir/sub/\0../up\0/abs/path\0./dot/./x\0\0")
    put("filesfrom", "peer_relative", bytes([0x01 | 0x0C | 0x10 | 0x20]) +
        b"dir/./keep\0a//b\0..\0\0")
    put("filesfrom", "local_lines", bytes([0x0C]) +
        b"# comment\n; also\n\nfile one\r\ndir/\n../../etc/passwd\n")
    put("filesfrom", "local_from0", bytes([0x02 | 0x0C]) + b"a\0b c\0\0d\n")
    put("filesfrom", "local_tiny_buffer", bytes([0x04]) + b"long name here\nx\n")


def xattr_seeds():
    # first byte: -X, not root, protocol 32 (b >> 4 = 2)
    opt = bytes([2 << 4])
    def item(name, value):
        return varint(len(name) + 1) + varint(len(value)) + name + b"\0" + value

    full = varint(0) + varint(2) + item(b"user.test", b"value") + item(b"user.b", b"")
    abbrev = varint(0) + varint(1) + varint(len(b"user.big") + 1) + varint(300) + \
        b"user.big\0" + bytes(16)
    reuse = varint(1) + varint(2)
    put("xattr", "sets", opt + full + abbrev + reuse + varint(0) + varint(0))
    put("xattr", "values", opt + abbrev + varint(1) + varint(300) + b"x" * 300 + varint(0))
    put("xattr", "root_names", bytes([0x03 | 2 << 4]) + varint(0) + varint(2) +
        item(b"user.x", b"1") + item(b"rsync.%stat", b"100644 0,0 0:0") + varint(0))


def acl_seeds():
    # racl: varint ndx+1 (0 = new), then flags byte with XMIT_* bits and the
    # fields they announce (acls.c: recv_rsync_acl)
    opt = bytes([0x02, 2 << 4])
    user_obj, group_obj, mask, other, name_list = 0x01, 0x02, 0x04, 0x08, 0x10
    ida_list = varint(2) + varint(65534) + varint(4 << 2 | 0) + varint(0) + \
        varint(6 << 2 | 1 | 2) + bytes([6]) + b"nobody"
    new = varint(0) + bytes([user_obj | group_obj | mask | other | name_list]) + \
        varint(7) + varint(5) + varint(5) + varint(4) + ida_list
    put("acl", "new_then_reuse", opt + new + varint(1) + varint(1) + varint(0) + bytes([0]))
    put("acl", "minimal", bytes([0, 2 << 4]) + (varint(0) + bytes([0])) * 4)
    put("acl", "dirs_default", bytes([0xFF, 2 << 4]) + new + new + varint(1) + varint(2))


def config_seeds():
    put("config", "globals_modules", b"""# rsyncd.conf
uid = nobody
gid = nogroup
use chroot = yes
max connections = 4
syslog facility = local5
pid file = /var/run/rsyncd.pid
motd file = /etc/motd
&include /nonexistent.d

[ftp]
        path = /home/ftp
        comment = ftp export area
        read only = yes
        exclude = *.tmp \\
                  *.bak
        hosts allow = 10.0.0.0/8 *.example.com
        hosts deny = *
        refuse options = delete* checksum
        dont compress = *.gz *.zip
        log format = %t %a %m %f %b
        auth users = tridge, susan:ro, @staff:rw
        secrets file = /etc/rsyncd.secrets

[cvs]
        path = /data/cvs/%RSYNC_USER_NAME%
        pre-xfer exec = /bin/echo %RSYNC_USER_NAME%
        timeout = 600
        numeric ids = unset
        munge symlinks = yes
""")
    put("config", "odd_lines", b"[global]\n port=8873\n; comment\n[ spaced  name ]\npath=/x/\n"
        b"no equals here\n[m2]\nlist = maybe\nmax verbosity = 99999999999\n")


def main():
    root = tempfile.mkdtemp(prefix="ferry-corpus.")
    try:
        src = make_tree(root)
        capture_batches(root, src)
        capture_rsh(root, src)
        capture_daemon(root, src)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    token_seeds()
    sums_seeds()
    proxy_seeds()
    filter_seeds()
    wildmatch_seeds()
    filesfrom_seeds()
    xattr_seeds()
    acl_seeds()
    config_seeds()


if __name__ == "__main__":
    main()
