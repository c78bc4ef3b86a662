#!/usr/bin/env python3
"""A scripted, hostile rsync daemon for tests/interop/14_malicious_daemon.sh.

usage: evil_daemon.py PORT SCENARIO [OUTSIDE]

Listens on 127.0.0.1:PORT and serves one connection after another (until it
is killed) as a protocol-32 daemon sender, following
docs/protocol.md sections 3, 5, 6, 8 and 9:

  greeting "@RSYNCD: 32.0 sha512 sha256 sha1 md5 md4", module line, "@RSYNCD:
  OK", the client's NUL-separated arguments up to the empty one, compat
  flags, checksum lists (we offer only "md5"), the seed; from here our output
  is multiplexed; the client's filter list; a file list; then a minimal
  sender loop (requests -> replies, NDX_DONE phases, statistics, goodbye).

SCENARIO decides what is crafted (see SCENARIOS below). OUTSIDE is an
absolute directory outside the client's destination that crafted names and
symlinks point at (default /tmp/outside).

Every socket operation has a timeout, so a stuck peer cannot hold the
daemon. After the crafted part the daemon half-closes its side (the client
sees EOF right after the crafted bytes), drains the client's input until it
closes, and goes back to accept(). Progress goes to stderr.
"""
import hashlib
import socket
import struct
import sys

TIMEOUT = 20  # seconds, every socket operation
GREETING = b"@RSYNCD: 32.0 sha512 sha256 sha1 md5 md4\n"

# compat flags (section 5.2): CF_SAFE_FLIST | CF_CHKSUM_SEED_FIX |
# CF_VARINT_FLIST_FLAGS | CF_ID0_NAMES. No CF_INC_RECURSE: one flat list.
COMPAT_FLAGS = 0x008 | 0x020 | 0x080 | 0x100

MSG_DATA, MSG_INFO, MSG_IO_TIMEOUT, MSG_ERROR_EXIT = 0, 2, 33, 86
MPLEX_BASE = 7
NDX_DONE = -1

# xflags (section 8.2)
XMIT_TOP_DIR = 0x0001
XMIT_EXTENDED_FLAGS = 0x0004
XMIT_LONG_NAME = 0x0040

# item flags (rsync.h)
ITEM_BASIS_TYPE_FOLLOWS = 1 << 11
ITEM_XNAME_FOLLOWS = 1 << 12
ITEM_TRANSFER = 1 << 15

S_IFREG, S_IFDIR, S_IFLNK = 0o100000, 0o040000, 0o120000
MTIME = 1600000000
CHUNK = 32768  # rsync's largest literal run

FILE_DATA = b"valid file data from the evil daemon\n" * 40


def log(msg):
    sys.stderr.write("evil_daemon: %s\n" % msg)
    sys.stderr.flush()


class PeerGone(Exception):
    """The client closed the connection (or timed out)."""


# ------------------------------------------------------------ encoders

def varint(v):
    """io.c: write_varint (section 2.2): k leading 1-bits = k extra bytes."""
    v &= 0xFFFFFFFF
    for k in range(5):
        if k == 4 or v < 1 << (7 * (k + 1)):
            break
    if k == 0:
        return bytes([v])
    if k == 4:
        return b"\xf0" + struct.pack("<I", v)
    prefix = (0xFF << (8 - k)) & 0xFF  # k one-bits
    return bytes([prefix | (v >> (8 * k))]) + v.to_bytes(8, "little")[:k]


def varlong(v, min_bytes):
    """io.c: write_varlong (section 2.3): min_bytes-1 low bytes always."""
    b = v.to_bytes(8, "little")
    cnt = 8
    while cnt > min_bytes and b[cnt - 1] == 0:
        cnt -= 1
    bit = 1 << (7 - cnt + min_bytes)
    if b[cnt - 1] >= bit:
        cnt += 1
        first = (~(bit - 1)) & 0xFF
    elif cnt > min_bytes:
        first = (b[cnt - 1] | ~(bit * 2 - 1)) & 0xFF
    else:
        first = b[cnt - 1]
    return bytes([first]) + b[: cnt - 1]


def int32(v):
    return struct.pack("<i", v)


def vstring(s):
    assert len(s) < 0x80
    return bytes([len(s)]) + s


class NdxWriter:
    """io.c: write_ndx (section 2.5), one state per stream direction."""

    def __init__(self):
        self.prev_pos, self.prev_neg = -1, 1

    def encode(self, ndx):
        if ndx == NDX_DONE:
            return b"\x00"
        out = b""
        if ndx >= 0:
            diff, self.prev_pos = ndx - self.prev_pos, ndx
        else:
            out = b"\xff"
            ndx = -ndx
            diff, self.prev_neg = ndx - self.prev_neg, ndx
        if 0 < diff < 0xFE:
            return out + bytes([diff])
        if diff < 0 or diff > 0x7FFF:
            return out + bytes([0xFE, (ndx >> 24) | 0x80, ndx & 0xFF, (ndx >> 8) & 0xFF,
                                (ndx >> 16) & 0xFF])
        return out + bytes([0xFE, diff >> 8, diff & 0xFF])


def flist_entry(name, mode, size=0, link=None):
    """One file-list entry (flist.c: send_file_entry, section 8.3), every
    field sent in full (no XMIT_SAME_*), for a client run with -rlt (no -o,
    -g, -D, -H, -c): xflags, l2 + name, size, mtime, mode, [link target]."""
    flags = XMIT_TOP_DIR if name == b"." else 0
    if len(name) > 255:
        flags |= XMIT_LONG_NAME
    if flags == 0:
        flags = XMIT_EXTENDED_FLAGS  # a zero varint would end the list
    out = varint(flags)
    out += varint(len(name)) if flags & XMIT_LONG_NAME else bytes([len(name)])
    out += name
    out += varlong(size, 3) + varlong(MTIME, 4) + int32(mode)
    if link is not None:  # -l and a symlink: varint30 length + target
        out += varint(len(link)) + link
    return out


def flist_end():
    """End marker with CF_VARINT_FLIST_FLAGS: flags 0, then io_error 0."""
    return varint(0) + varint(0)


# ------------------------------------------------------------- streams

class Conn:
    def __init__(self, sock):
        self.sock = sock
        self.raw = b""        # unparsed bytes from the client
        self.data = b""       # demultiplexed MSG_DATA bytes
        self.mux_in = False   # client output is multiplexed (protocol >= 30)
        self.ndx_out = NdxWriter()
        self.in_prev_pos, self.in_prev_neg = -1, 1

    # -- raw input
    def _recv(self):
        try:
            chunk = self.sock.recv(65536)
        except OSError as e:
            raise PeerGone(str(e))
        if not chunk:
            raise PeerGone("EOF")
        self.raw += chunk

    def raw_read(self, n):
        while len(self.raw) < n:
            self._recv()
        out, self.raw = self.raw[:n], self.raw[n:]
        return out

    def read_line(self):
        while b"\n" not in self.raw:
            if len(self.raw) > 4096:
                raise PeerGone("line too long")
            self._recv()
        line, self.raw = self.raw.split(b"\n", 1)
        return line.rstrip(b"\r")

    # -- logical input (demultiplexed once mux_in is set)
    def read(self, n):
        if not self.mux_in:
            return self.raw_read(n)
        while len(self.data) < n:
            hdr = struct.unpack("<I", self.raw_read(4))[0]
            tag, length = hdr >> 24, hdr & 0xFFFFFF
            payload = self.raw_read(length)
            if tag == MPLEX_BASE + MSG_DATA:
                self.data += payload
                continue
            log("client message %d: %r" % (tag - MPLEX_BASE, payload[:200]))
            if tag == MPLEX_BASE + MSG_ERROR_EXIT:
                # The client gave up and waits for us to go (section 6.4).
                raise PeerGone("client sent MSG_ERROR_EXIT")
        out, self.data = self.data[:n], self.data[n:]
        return out

    def read_int(self):
        return struct.unpack("<i", self.read(4))[0]

    def read_u16(self):
        return struct.unpack("<H", self.read(2))[0]

    def read_vstring(self):
        n = self.read(1)[0]
        if n & 0x80:
            n = (n & 0x7F) << 8 | self.read(1)[0]
        return self.read(n)

    def read_ndx(self):
        """io.c: read_ndx (section 2.5)."""
        b = self.read(1)[0]
        if b == 0:
            return NDX_DONE
        neg = b == 0xFF
        if neg:
            b = self.read(1)[0]
        prev = self.in_prev_neg if neg else self.in_prev_pos
        if b == 0xFE:
            x = self.read(2)
            if x[0] & 0x80:
                y = self.read(2)
                num = (x[0] & 0x7F) << 24 | x[1] | y[0] << 8 | y[1] << 16
            else:
                num = (x[0] << 8 | x[1]) + prev
        else:
            num = b + prev
        if neg:
            self.in_prev_neg = num
            return -num
        self.in_prev_pos = num
        return num

    # -- output
    def send_raw(self, b):
        try:
            self.sock.sendall(b)
        except OSError as e:
            raise PeerGone(str(e))

    def send_msg(self, code, payload, length=None):
        """A multiplexed frame: LE uint32 ((7 + code) << 24 | len), payload.
        `length` lets a scenario lie about the payload size."""
        n = len(payload) if length is None else length
        self.send_raw(struct.pack("<I", (MPLEX_BASE + code) << 24 | n) + payload)

    def send(self, b):
        """Stream data, in MSG_DATA frames of at most 32 KiB."""
        for i in range(0, len(b), CHUNK):
            self.send_msg(MSG_DATA, b[i:i + CHUNK])

    def send_ndx(self, ndx):
        self.send(self.ndx_out.encode(ndx))

    def finish(self):
        """Half-close, then drain until the client closes (bounded)."""
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        try:
            while True:
                self._recv()
                if len(self.raw) > 1 << 20:
                    self.raw = b""
        except PeerGone as e:
            log("client gone (%s)" % e)


# ------------------------------------------------------------ scenarios

def reply_header(c, req):
    """Echo a request's ndx, iflags, basis type and xname (sender.c:
    write_ndx_and_attrs)."""
    out = c.ndx_out.encode(req["ndx"]) + struct.pack("<H", req["iflags"])
    if req["iflags"] & ITEM_BASIS_TYPE_FOLLOWS:
        out += bytes([req["ftype"]])
    if req["iflags"] & ITEM_XNAME_FOLLOWS:
        out += vstring(req["xname"])
    return out


def sum_head(count, blength, s2length, remainder):
    return int32(count) + int32(blength) + int32(s2length) + int32(remainder)


def literal_tokens(data, run=CHUNK):
    out = b""
    for i in range(0, len(data), run):
        out += int32(len(data[i:i + run])) + data[i:i + run]
    return out


def valid_reply(c, req, data):
    """A correct reply: header, the sum head echoed, the whole file as
    literal data, end token, MD5 of the data (negotiated md5, section 9.4)."""
    c.send(reply_header(c, req) + sum_head(*req["head"]) + literal_tokens(data)
           + int32(0) + hashlib.md5(data).digest())


def crafted(body):
    """A reply: the echoed header followed by `body`, then EOF."""
    def reply(c, req):
        c.send(reply_header(c, req) + body)
        return "stop"
    return reply


def one_file(reply, name=b"file", data=FILE_DATA):
    """A valid list (".", one regular file) and a crafted reply for it."""
    return {
        "flist": [flist_entry(b".", S_IFDIR | 0o755, 4096),
                  flist_entry(name, S_IFREG | 0o644, len(data))],
        "files": {1: data},
        "reply": {1: reply},
    }


def scenarios(outside):
    null_head = sum_head(0, 0, 0, 0)
    s = {}
    # (a) a name with a ".." component: refused while reading the list.
    s["dotdot"] = {"flist": [flist_entry(b".", S_IFDIR | 0o755, 4096),
                             flist_entry(b"../escape", S_IFREG | 0o644, 10)]}
    s["dotdot_inner"] = {"flist": [flist_entry(b".", S_IFDIR | 0o755, 4096),
                                   flist_entry(b"sub/../../escape", S_IFREG | 0o644, 10)]}
    # (b) an absolute name (no --relative).
    s["absolute"] = {"flist": [flist_entry(b".", S_IFDIR | 0o755, 4096),
                               flist_entry(outside + b"/abs_file", S_IFREG | 0o644, 10)]}
    # (c) a symlink to a directory outside, then a file "through" it. The
    # list is valid on its own; the receiver must not follow the link when
    # it creates link/pwned. Requests are answered with valid data.
    s["symlink_dir"] = {
        "flist": [flist_entry(b".", S_IFDIR | 0o755, 4096),
                  flist_entry(b"link", S_IFLNK | 0o777, len(outside), link=outside),
                  flist_entry(b"link/pwned", S_IFREG | 0o644, len(FILE_DATA))],
        "files": {2: FILE_DATA},
    }
    # (c') a file whose parent directory is not in the list at all.
    s["missing_parent"] = {
        "flist": [flist_entry(b".", S_IFDIR | 0o755, 4096),
                  flist_entry(b"nodir/pwned", S_IFREG | 0o644, len(FILE_DATA))],
        "files": {1: FILE_DATA},
    }
    # (c'') "link" sent as a real directory while the destination already
    # has a symlink "link" -> outside (planted by the test): the receiver
    # must replace the symlink, not write through it.
    s["symlink_planted"] = {
        "flist": [flist_entry(b".", S_IFDIR | 0o755, 4096),
                  flist_entry(b"link", S_IFDIR | 0o755, 4096),
                  flist_entry(b"link/pwned", S_IFREG | 0o644, len(FILE_DATA))],
        "files": {2: FILE_DATA},
    }
    # (d) sum head s2length 64 > md5's 16 (CVE-2024-12084 class).
    s["s2length"] = one_file(crafted(sum_head(0, 0, 64, 0)))
    # (e) block length 128 KiB + 1 (MAX_BLOCK_SIZE is 128 KiB for >= 30).
    s["blength"] = one_file(crafted(sum_head(1, (1 << 17) + 1, 2, 0)))
    # (e') a negative block count.
    s["count_negative"] = one_file(crafted(sum_head(-1, 700, 2, 0)))
    # (f) a literal token of 0x7fffffff bytes, then 64 KiB and EOF.
    s["huge_literal"] = one_file(crafted(null_head + int32(0x7FFFFFFF) + b"A" * 65536))
    # (f') a valid file sent as ONE 17 MiB literal run: any positive length
    # is legal (section 9.6), so this must succeed.
    big = bytes(range(256)) * (17 * 4096)
    s["big_literal_valid"] = one_file(
        lambda c, req: valid_reply_one_run(c, req, big), data=big)
    # (g) block index == count (1), and block index 2^31-1 (token INT32_MIN),
    # after an echoed sum head of one 700-byte block.
    s["block_index"] = one_file(crafted(sum_head(1, 700, 2, 0) + int32(-2)))
    s["block_index_min"] = one_file(crafted(sum_head(1, 700, 2, 0) + int32(-0x80000000)))
    # (i) a reply naming file index 2 of a 2-entry list, and a negative index.
    s["ndx_out_of_range"] = one_file(lambda c, req: reply_bad_ndx(c, req, 2))
    s["ndx_negative"] = one_file(lambda c, req: reply_bad_ndx(c, req, -50))
    # (i') a transfer reply for the directory "." (index 0).
    s["ndx_directory"] = one_file(lambda c, req: reply_bad_ndx(c, req, 0))
    # (j) the connection ends in the middle of the file's literal data.
    s["truncated"] = one_file(crafted(null_head + int32(1000) + FILE_DATA[:500]))
    # (j') ... and right after the last token, before the file checksum.
    s["truncated_sum"] = one_file(crafted(null_head + literal_tokens(FILE_DATA) + int32(0)
                                          + hashlib.md5(FILE_DATA).digest()[:7]))
    # (l) a flat list of HUGE_FLIST regular files (64_max_alloc.sh): the
    # receiver's file-list storage grows past any small --max-alloc.
    s["huge_flist"] = {"flist_gen": huge_flist}
    # The control: everything valid. Must succeed.
    s["valid"] = one_file(None)
    # (h) an MSG_INFO frame claiming 0xFFFFFF bytes, sent before the list.
    s["big_message"] = {"early": lambda c: c.send_msg(MSG_INFO, b"x" * 100, 0xFFFFFF)}
    # (k) MSG_IO_TIMEOUT of 2 s (a module's "timeout", main.c:
    # start_server), then silence: the client must give up after 2 s.
    s["io_timeout"] = {"early": lambda c: silent_after_timeout(c, 2)}
    return s


HUGE_FLIST = 1000000


def huge_flist():
    """"." then HUGE_FLIST empty files, in 32 KiB-sized batches."""
    yield flist_entry(b".", S_IFDIR | 0o755, 4096)
    batch = []
    for i in range(HUGE_FLIST):
        batch.append(flist_entry(b"f%07d" % i, S_IFREG | 0o644, 0))
        if len(batch) == 1600:
            yield b"".join(batch)
            batch = []
    yield b"".join(batch)


def silent_after_timeout(c, secs):
    c.send_msg(MSG_IO_TIMEOUT, int32(secs))
    c.sock.settimeout(15)
    try:
        while True:
            c._recv()
    except PeerGone as e:
        log("client gave up (%s)" % e)


def valid_reply_one_run(c, req, data):
    c.send(reply_header(c, req) + sum_head(*req["head"]) + int32(len(data)) + data
           + int32(0) + hashlib.md5(data).digest())


def reply_bad_ndx(c, req, ndx):
    bad = dict(req, ndx=ndx)
    c.send(reply_header(c, bad) + sum_head(0, 0, 0, 0) + literal_tokens(FILE_DATA)
           + int32(0) + hashlib.md5(FILE_DATA).digest())
    return "stop"


# ------------------------------------------------------------- session

def read_request(c):
    """A generator request (section 9.2): ndx, iflags, [type], [xname],
    [sum head + block sums]."""
    ndx = c.read_ndx()
    if ndx == NDX_DONE:
        return {"ndx": ndx}
    req = {"ndx": ndx, "iflags": c.read_u16(), "ftype": 0x80, "xname": b""}
    if req["iflags"] & ITEM_BASIS_TYPE_FOLLOWS:
        req["ftype"] = c.read(1)[0]
    if req["iflags"] & ITEM_XNAME_FOLLOWS:
        req["xname"] = c.read_vstring()
    if req["iflags"] & ITEM_TRANSFER:
        head = tuple(c.read_int() for _ in range(4))
        count, _, s2length, _ = head
        c.read(count * (4 + s2length))
        req["head"] = head
    return req


def sender_loop(c, sc):
    """sender.c: send_files, then the end of the run (section 9.8)."""
    phase, max_phase = 0, 2
    while True:
        req = read_request(c)
        if req["ndx"] == NDX_DONE:
            phase += 1
            log("NDX_DONE %d" % phase)
            if phase > max_phase:
                break
            c.send_ndx(NDX_DONE)
            continue
        log("request ndx %d iflags %#x head %s" % (req["ndx"], req["iflags"], req.get("head")))
        if not req["iflags"] & ITEM_TRANSFER:
            c.send(reply_header(c, req))  # report-only: echo
            continue
        reply = sc.get("reply", {}).get(req["ndx"])
        if reply:
            if reply(c, req) == "stop":
                return
            continue
        valid_reply(c, req, sc.get("files", {}).get(req["ndx"], FILE_DATA))
    c.send_ndx(NDX_DONE)
    # statistics: total read, written, size, flist build and xfer time
    c.send(b"".join(varlong(0, 3) for _ in range(5)))
    # goodbye: NDX_DONE (D) -> one more NDX_DONE, then the final one (E)
    if c.read_ndx() == NDX_DONE:
        c.send_ndx(NDX_DONE)
        c.read_ndx()
    log("run complete")


def session(c, sc):
    c.send_raw(GREETING)
    log("client greeting %r" % c.read_line())
    log("module %r" % c.read_line())
    c.send_raw(b"@RSYNCD: OK\n")
    args = []
    while True:  # NUL-terminated arguments, ended by an empty one
        while b"\0" not in c.raw:
            c._recv()
        arg, c.raw = c.raw.split(b"\0", 1)
        if not arg:
            break
        args.append(arg)
    log("args %r" % args)
    c.send_raw(varint(COMPAT_FLAGS))
    c.send_raw(vstring(b"md5"))  # our checksum list; then read the client's
    log("client checksums %r" % c.read_vstring())
    c.send_raw(int32(0x12345678))  # checksum seed
    c.mux_in = True
    while True:  # the filter list: int32 length + rule, until 0
        n = c.read_int()
        if n == 0:
            break
        log("filter rule %r" % c.read(n))
    if "early" in sc:
        sc["early"](c)
        return
    if "flist_gen" in sc:
        for chunk in sc["flist_gen"]():
            c.send(chunk)
        c.send(flist_end())
    else:
        c.send(b"".join(sc["flist"]) + flist_end())
    log("file list sent")
    sender_loop(c, sc)


def main():
    port, name = int(sys.argv[1]), sys.argv[2]
    outside = (sys.argv[3] if len(sys.argv) > 3 else "/tmp/outside").encode()
    sc = scenarios(outside).get(name)
    if sc is None:
        sys.exit("unknown scenario %r; known: %s" % (name, " ".join(scenarios(outside))))
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(4)
    log("scenario %s on port %d" % (name, port))
    while True:
        sock, _ = ls.accept()
        sock.settimeout(TIMEOUT)
        c = Conn(sock)
        try:
            session(c, sc)
        except PeerGone as e:
            log("client gone early (%s)" % e)
        c.finish()
        sock.close()


if __name__ == "__main__":
    main()
