#!/usr/bin/env python3
"""A scripted, hostile rsync client for tests/interop/34_daemon_malicious_client.sh.

usage: evil_client.py PORT MODULE SCENARIO [OUTSIDE] [OUTDIR]

Connects to a daemon on 127.0.0.1:PORT and plays SCENARIO against MODULE,
speaking protocol 32 as docs/protocol.md describes it
(sections 3, 5, 6, 7, 8 and 9): greeting "@RSYNCD: 32.0 ...", module line,
NUL-separated arguments, compat flags, checksum lists (we offer one name),
the seed, and from there multiplexed data both ways. Then either

  a pushing sender (client sender): a crafted file list, then a minimal
  sender loop answering the daemon's requests with literal data; or
  a pulling receiver (client generator): the daemon's file list is read,
  one request per regular file is sent with a crafted sum head, and the
  replies are read; received file data goes to OUTDIR/recv.<ndx>.

The handshake scenarios (trickle_*, garbage_*) break the protocol before
any of that. OUTSIDE is an absolute directory outside the module that
crafted names and symlinks aim at.

The last stdout line is the outcome, one of
  RESULT complete <detail>  the session reached its goodbye, no error seen
  RESULT error <detail>     the daemon reported an error (@ERROR line,
                            MSG_ERROR*, MSG_ERROR_EXIT, an io_error) or
                            closed the connection before the goodbye
  RESULT hang <detail>      the daemon neither answered nor closed within
                            the scenario's time limit
(scenario "hold_*" also prints "holding" once it is idling). The exit status
is 0 for every outcome; the calling test decides what it expects. Progress
goes to stderr.

The byte encoders and the reply helpers are shared with evil_daemon.py,
which plays the opposite role.
"""
import hashlib
import os
import socket
import stat
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import evil_daemon as ed  # noqa: E402  (encoders, Conn, reply helpers)

TIMEOUT = 15  # seconds: a daemon silent for this long "hangs"
TRICKLE_LIMIT = 10  # seconds of trickling after which a daemon "hangs"
GREETING = b"@RSYNCD: 32.0 sha512 sha256 sha1 md5 md4\n"
CAPS = b"e.LsfxCvu"  # no 'i': one flat file list (section 5.2)

CF_VARINT_FLIST_FLAGS = 0x080

MSG_ERROR_XFER, MSG_INFO, MSG_ERROR, MSG_WARNING = 1, 2, 3, 4
MSG_IO_ERROR, MSG_IO_TIMEOUT, MSG_NOOP = 22, 33, 42
MSG_ERROR_EXIT, MSG_NO_SEND = 86, 102

XMIT_SAME_MODE, XMIT_SAME_NAME, XMIT_LONG_NAME = 0x0002, 0x0020, 0x0040
XMIT_SAME_TIME, XMIT_HLINKED, XMIT_HLINK_FIRST = 0x0080, 0x0200, 0x1000
XMIT_MOD_NSEC = 0x2000

ITEM_TRANSFER = ed.ITEM_TRANSFER
DIGEST_LEN = {b"md5": 16, b"md4": 16, b"xxh64": 8, b"xxh3": 8, b"xxh128": 16, b"sha1": 20}
FILE_DATA = ed.FILE_DATA


def log(msg):
    sys.stderr.write("evil_client: %s\n" % msg)
    sys.stderr.flush()


class Hang(Exception):
    """The daemon said nothing for TIMEOUT seconds."""


class DaemonError(Exception):
    """The daemon refused or failed in a way it told us about."""


# ------------------------------------------------------------- decoders

def leading_ones(ch):
    n = 0
    while n < 8 and ch & (0x80 >> n):
        n += 1
    return n


class Client(ed.Conn):
    """evil_daemon's Conn seen from the other end: it also records the
    daemon's error messages and tells a silent daemon from a closed one."""

    def __init__(self, sock):
        super().__init__(sock)
        self.errors = []  # texts of error messages and error exits
        self.csum = b"md5"

    def _recv(self):
        try:
            chunk = self.sock.recv(65536)
        except socket.timeout:
            raise Hang("no data for %d s" % TIMEOUT)
        except OSError as e:
            raise ed.PeerGone(str(e))
        if not chunk:
            raise ed.PeerGone("EOF")
        self.raw += chunk

    def read(self, n):
        if not self.mux_in:
            return self.raw_read(n)
        while len(self.data) < n:
            hdr = struct.unpack("<I", self.raw_read(4))[0]
            tag, length = (hdr >> 24) - ed.MPLEX_BASE, hdr & 0xFFFFFF
            payload = self.raw_read(length)
            if tag == ed.MSG_DATA:
                self.data += payload
            else:
                self.message(tag, payload)
        out, self.data = self.data[:n], self.data[n:]
        return out

    def message(self, tag, payload):
        log("daemon message %d: %r" % (tag, payload[:300]))
        if tag in (MSG_ERROR_XFER, MSG_ERROR):
            self.errors.append(payload.decode(errors="replace").strip())
        elif tag == MSG_IO_ERROR:
            self.errors.append("MSG_IO_ERROR %r" % payload)
        elif tag == MSG_NO_SEND:
            self.errors.append("MSG_NO_SEND %r" % payload)
        elif tag == MSG_ERROR_EXIT:
            # Section 6.4: acknowledge with an empty one, then it is over.
            code = struct.unpack("<i", payload)[0] if len(payload) == 4 else None
            self.errors.append("error exit %s" % code)
            try:
                self.send_msg(MSG_ERROR_EXIT, b"")
            except ed.PeerGone:
                pass
            raise ed.PeerGone("daemon error exit %s" % code)

    def read_varint(self):
        """io.c: read_varint (section 2.2)."""
        ch = self.read(1)[0]
        extra = leading_ones(ch)
        if extra > 4:
            raise DaemonError("bad varint lead byte %#x" % ch)
        if extra == 0:
            return ch
        low = self.read(extra)
        return int.from_bytes(low + bytes([ch & ((1 << (8 - extra)) - 1)]), "little")

    def read_varlong(self, min_bytes):
        """io.c: read_varlong (section 2.3)."""
        head = self.read(min_bytes)
        ch, low = head[0], head[1:]
        extra = leading_ones(ch)
        if extra == 0:
            return int.from_bytes(low + bytes([ch]), "little")
        if min_bytes - 1 + extra > 8:
            raise DaemonError("bad varlong lead byte %#x" % ch)
        rest = self.read(extra)
        return int.from_bytes(low + rest + bytes([ch & ((1 << (8 - extra)) - 1)]), "little")


# ------------------------------------------------------------ handshake

def connect(port):
    sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    sock.settimeout(TIMEOUT)
    return Client(sock)


def module_request(c, module):
    """Greetings and the module line up to "@RSYNCD: OK" (section 3)."""
    c.send_raw(GREETING)
    line = c.read_line()
    log("daemon greeting %r" % line)
    if not line.startswith(b"@RSYNCD: "):
        raise DaemonError("not a greeting: %r" % line)
    c.send_raw(module + b"\n")
    while True:
        line = c.read_line()
        if line.startswith(b"@ERROR"):
            raise DaemonError(line.decode(errors="replace"))
        if line == b"@RSYNCD: OK":
            return
        if line.startswith(b"@RSYNCD: "):
            raise DaemonError("unexpected %r" % line)


def setup(c, module, args, csum=b"md5"):
    """Module, arguments, compat flags, checksum negotiation, seed
    (sections 3.6 and 5.1); afterwards both directions are multiplexed."""
    module_request(c, module)
    c.send_raw(b"".join(a + b"\0" for a in args) + b"\0")
    flags = c.read_varint()
    log("compat flags %#x" % flags)
    if flags & CF_VARINT_FLIST_FLAGS:
        c.send_raw(ed.vstring(csum))
        log("daemon checksums %r" % c.read_vstring())
    c.csum = csum
    seed = c.read_int()
    log("seed %#x" % (seed & 0xFFFFFFFF))
    c.mux_in = True
    return flags


# ---------------------------------------------------------------- push

def push_session(c, module, entries):
    """A client sender: arguments without --sender, the file list, then
    the daemon's requests answered with FILE_DATA (every regular file in
    our lists has that content)."""
    setup(c, module, [b"--server", b"-rlt" + CAPS, b".", module + b"/"])
    # No filter list: a pushing client sends one only for --delete (section 7).
    c.send(b"".join(entries) + ed.flist_end())
    log("file list sent")
    phase = 0
    while True:
        req = ed.read_request(c)
        if req["ndx"] == ed.NDX_DONE:
            phase += 1
            if phase > 2:
                break
            c.send_ndx(ed.NDX_DONE)
            continue
        log("request ndx %d iflags %#x head %s" % (req["ndx"], req["iflags"], req.get("head")))
        if req["iflags"] & ITEM_TRANSFER:
            ed.valid_reply(c, req, FILE_DATA)
        else:
            c.send(ed.reply_header(c, req))
    c.send_ndx(ed.NDX_DONE)
    goodbye(c)


def goodbye(c):
    """main.c: read_final_goodbye for protocol >= 31: NDX_DONE, echo it,
    NDX_DONE again."""
    if c.read_ndx() != ed.NDX_DONE:
        raise DaemonError("no goodbye")
    c.send_ndx(ed.NDX_DONE)
    if c.read_ndx() != ed.NDX_DONE:
        raise DaemonError("no final goodbye")


def push_entries(name, outside):
    """The crafted file lists; every one starts with the module root "."."""
    d, f, ln = stat.S_IFDIR | 0o755, stat.S_IFREG | 0o644, stat.S_IFLNK | 0o777
    size = len(FILE_DATA)
    root = [ed.flist_entry(b".", d, 4096)]
    rel = outside.lstrip(b"/")
    lists = {
        "push_valid": [ed.flist_entry(b"pushed_ok", f, size)],
        "push_dotdot": [ed.flist_entry(b"../escape_dotdot", f, size)],
        "push_dotdot_inner": [ed.flist_entry(b"sub", d, 4096),
                              ed.flist_entry(b"sub/../../escape_inner", f, size)],
        "push_absolute": [ed.flist_entry(outside + b"/escape_abs", f, size)],
        # A symlink to / and a file "through" it into OUTSIDE.
        "push_symlink_root": [ed.flist_entry(b"x", ln, 1, link=b"/"),
                              ed.flist_entry(b"x/" + rel + b"/escape_link", f, size)],
        # The same with a relative target that climbs out of the module.
        "push_symlink_rel": [ed.flist_entry(b"y", ln, 10, link=b"../outside"),
                             ed.flist_entry(b"y/escape_rel", f, size)],
    }
    return root + lists[name]


# ---------------------------------------------------------------- pull

def read_flist(c):
    """The daemon's file list for -rlt without -o -g -D -H -c
    (section 8.3): names, sizes, modes."""
    files, prev_name, prev_mode = [], b"", 0
    while True:
        flags = c.read_varint()
        if flags == 0:
            io_error = c.read_varint()
            if io_error:
                c.errors.append("flist io_error %d" % io_error)
            return files
        l1 = c.read(1)[0] if flags & XMIT_SAME_NAME else 0
        l2 = c.read_varint() if flags & XMIT_LONG_NAME else c.read(1)[0]
        if l1 > len(prev_name) or l1 + l2 >= 4096:
            raise DaemonError("bad name lengths %d+%d" % (l1, l2))
        name = prev_name[:l1] + c.read(l2)
        if flags & XMIT_HLINKED and not flags & XMIT_HLINK_FIRST:
            raise DaemonError("hard-link entry without -H")
        size = c.read_varlong(3)
        if not flags & XMIT_SAME_TIME:
            c.read_varlong(4)
        if flags & XMIT_MOD_NSEC:
            c.read_varint()
        mode = prev_mode if flags & XMIT_SAME_MODE else c.read_int() & 0xFFFFFFFF
        if stat.S_ISLNK(mode):
            c.read(c.read_varint())
        files.append((name, mode, size))
        prev_name, prev_mode = name, mode


def sum_head(count, blength, s2length, remainder, nsums):
    """A sum head and nsums block sums (zeros: their values do not matter)."""
    return ed.sum_head(count, blength, s2length, remainder) + \
        (ed.int32(0) + b"\0" * max(s2length, 0)) * nsums


PULL_HEADS = {
    # (count, blength, s2length, remainder, sums sent)
    "pull_valid": (0, 0, 0, 0, 0),
    "pull_s2length": (1, 700, 64, 0, 1),           # > every digest (CVE-2024-12084)
    "pull_s2length_xxh64": (1, 700, 16, 0, 1),     # > xxh64's 8 (CVE-2024-12085)
    "pull_blength_zero": (4, 0, 2, 0, 4),
    "pull_blength_huge": (1, (1 << 17) + 1, 2, 0, 1),
    "pull_count_negative": (-1, 700, 2, 0, 0),
    "pull_count_huge": (0x7FFFFFFF, 700, 2, 0, 0),
    "pull_remainder": (1, 700, 2, 701, 1),
    "pull_escape_dotdot": (0, 0, 0, 0, 0),
    "pull_escape_passwd": (0, 0, 0, 0, 0),
    "pull_escape_deep": (0, 0, 0, 0, 0),
    "hold_count_large": (1 << 26, 700, 2, 0, 1000),  # 400 MB of sums announced
    "pull_flood": (1 << 18, 700, 2, 0, 1 << 18),    # crafted to collide (flood_sums)
}


def old_unmix32(x):
    """The inverse of the fixed mixer ferry's block index once used
    (issue 22): weak sums whose mix has its low 19 bits below 32 all
    start in the first 32 slots of an unkeyed table of 2^19."""
    m = 0xFFFFFFFF
    x ^= x >> 16
    x = (x * pow(0x846CA68B, -1, 1 << 32)) & m
    x ^= (x >> 15) ^ (x >> 30)
    x = (x * pow(0x7FEB352D, -1, 1 << 32)) & m
    x ^= x >> 16
    return x


def flood_sums(count, blength, s2length, remainder, nsums):
    """A sum head and nsums distinct weak sums crafted to collide, with
    equal (zero) strong sums."""
    return ed.sum_head(count, blength, s2length, remainder) + b"".join(
        struct.pack("<I", old_unmix32(((i >> 5) + 1) << 19 | (i & 31))) + b"\0" * s2length for i in range(nsums))


def pull_path(name, module):
    return {
        "pull_escape_dotdot": module + b"/../outside/secret.txt",
        "pull_escape_passwd": module + b"/../../etc/passwd",
        "pull_escape_deep": module + b"/" + b"../" * 12 + b"etc/passwd",
    }.get(name, module + b"/file")


def pull_session(c, module, name, outdir):
    """A client generator + receiver for the files of one path argument
    (section 9.8's minimal order)."""
    csum = b"xxh64" if name.endswith("xxh64") else b"md5"
    # EVIL_EXTRA_ARG: one more server option, e.g. --checksum-seed=0
    extra = [os.environ["EVIL_EXTRA_ARG"].encode()] if os.environ.get("EVIL_EXTRA_ARG") else []
    setup(c, module, [b"--server", b"--sender", b"-rlt" + CAPS] + extra
          + [b".", pull_path(name, module)], csum)
    c.send(ed.int32(0))  # empty filter list
    files = read_flist(c)
    log("file list: %r" % files)
    count, blength, s2length, remainder, nsums = PULL_HEADS[name]
    # Requests name sorted positions; a one-entry list needs no sorting.
    wanted = [i for i, (_, mode, _) in enumerate(files) if stat.S_ISREG(mode)]
    if len(files) > 1:
        raise DaemonError("expected at most one entry, got %d" % len(files))
    sums = flood_sums if name == "pull_flood" else sum_head
    for ndx in wanted:
        c.send(c.ndx_out.encode(ndx) + struct.pack("<H", ITEM_TRANSFER)
               + sums(count, blength, s2length, remainder, nsums))
    if name.startswith("hold_"):
        print("holding", flush=True)
        time.sleep(3)
        raise DaemonError("we gave up on purpose after announcing %d sums" % count)
    c.send_ndx(ed.NDX_DONE)  # A
    read_replies(c, outdir)
    c.send_ndx(ed.NDX_DONE)  # B
    c.send_ndx(ed.NDX_DONE)  # C
    read_replies(c, outdir)
    if c.read_ndx() != ed.NDX_DONE:
        raise DaemonError("no third NDX_DONE")
    stats = [c.read_varlong(3) for _ in range(5)]
    log("stats %r" % stats)
    c.send_ndx(ed.NDX_DONE)  # D
    if c.read_ndx() != ed.NDX_DONE:
        raise DaemonError("no NDX_DONE after D")
    c.send_ndx(ed.NDX_DONE)  # E


def read_replies(c, outdir):
    """Replies until the daemon's next NDX_DONE; literal data only, since
    we never offer a basis."""
    while True:
        ndx = c.read_ndx()
        if ndx == ed.NDX_DONE:
            return
        iflags = c.read_u16()
        if iflags & ed.ITEM_BASIS_TYPE_FOLLOWS:
            c.read(1)
        if iflags & ed.ITEM_XNAME_FOLLOWS:
            c.read_vstring()
        if not iflags & ITEM_TRANSFER:
            continue
        head = [c.read_int() for _ in range(4)]
        data = b""
        while True:
            t = c.read_int()
            if t == 0:
                break
            if t < 0 or t > 1 << 24:
                raise DaemonError("token %d without a basis" % t)
            data += c.read(t)
        digest = c.read(DIGEST_LEN[c.csum])
        log("reply ndx %d head %r: %d bytes" % (ndx, head, len(data)))
        if c.csum == b"md5" and digest != hashlib.md5(data).digest():
            raise DaemonError("whole-file checksum mismatch")
        if outdir:
            with open(os.path.join(outdir, "recv.%d" % ndx), "wb") as f:
                f.write(data)


# ------------------------------------------------------------ handshake

def trickle(c, module):
    """The greeting one byte a second: the daemon must cut us off."""
    start = time.monotonic()
    c.sock.settimeout(1)
    for b in GREETING + module + b"\n":
        try:
            c.sock.sendall(bytes([b]))
            chunk = c.sock.recv(4096)
        except socket.timeout:
            chunk = None
        except OSError as e:  # a reset counts as closing on us
            raise ed.PeerGone("closed after %.1f s (%s)" % (time.monotonic() - start, e))
        if chunk == b"":
            raise ed.PeerGone("closed after %.1f s" % (time.monotonic() - start))
        if chunk:
            log("daemon said %r" % chunk)
        if time.monotonic() - start > TRICKLE_LIMIT:
            raise Hang("still open after %.1f s of trickling" % (time.monotonic() - start))
    raise Hang("the whole greeting trickled in over %.1f s" % (time.monotonic() - start))


def drain(c):
    """Read whatever the daemon says until it closes; @ERROR lines count."""
    while True:
        c._recv()
        for line in c.raw.split(b"\n"):
            if line.startswith(b"@ERROR") and line.decode(errors="replace") not in c.errors:
                c.errors.append(line.decode(errors="replace"))
        c.raw = c.raw[-8192:]


def garbage(c, module, name):
    junk = bytes((i * 97 + 13) & 0xFF for i in range(65536))
    if name == "garbage_greeting":
        c.send_raw(b"\x16\x03\x01\x02\x00" + junk[:200] + b"\n")
    elif name == "garbage_line":  # a valid greeting, then a 64 KiB binary "line"
        c.send_raw(GREETING)
        c.send_raw(junk)
    elif name == "garbage_args":  # accepted module, then endless unterminated args
        module_request(c, module)
        c.send_raw(junk.replace(b"\0", b"x"))
    elif name == "garbage_mux":  # valid setup, then junk instead of frames
        setup(c, module, [b"--server", b"--sender", b"-rlt" + CAPS, b".", module + b"/"])
        c.send_raw(junk)
    drain(c)


# ---------------------------------------------------------------- main

def run(port, module, name, outside, outdir):
    c = connect(port)
    try:
        if name.startswith("push_"):
            push_session(c, module, push_entries(name, outside))
        elif name.startswith(("pull_", "hold_")):
            pull_session(c, module, name, outdir)
        elif name == "trickle":
            trickle(c, module)
        elif name.startswith("garbage_"):
            garbage(c, module, name)
        else:
            sys.exit("unknown scenario %r" % name)
    except Hang as e:
        return "hang %s" % e
    except (ed.PeerGone, DaemonError) as e:
        return "error %s; messages: %s" % (e, " | ".join(c.errors) or "none")
    finally:
        c.sock.close()
    if c.errors:
        return "error at the end; messages: %s" % " | ".join(c.errors)
    return "complete"


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    port, module, name = int(sys.argv[1]), sys.argv[2].encode(), sys.argv[3]
    outside = (sys.argv[4] if len(sys.argv) > 4 else "/tmp/outside").encode()
    outdir = sys.argv[5] if len(sys.argv) > 5 else None
    log("scenario %s against port %d module %r" % (name, port, module))
    print("RESULT " + run(port, module, name, outside, outdir), flush=True)


if __name__ == "__main__":
    main()
