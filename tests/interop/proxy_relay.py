#!/usr/bin/env python3
"""A loopback TCP relay that starts each connection to the daemon with a
PROXY protocol header naming a made-up client, like a load balancer would.

usage: proxy_relay.py LISTEN_PORT_FILE TARGET_PORT v1|v2|garbage CLIENT_ADDR
Writes the port it listens on to LISTEN_PORT_FILE; serves until killed.
"""
import ipaddress
import socket
import struct
import sys
import threading


def header(kind, client, target_port):
    ip = ipaddress.ip_address(client)
    if kind == "v1":
        fam = "TCP4" if ip.version == 4 else "TCP6"
        dst = "127.0.0.1" if ip.version == 4 else "::1"
        return f"PROXY {fam} {client} {dst} 40000 {target_port}\r\n".encode()
    if kind == "v2":
        sig = b"\r\n\r\n\x00\r\nQUIT\n"
        if ip.version == 4:
            body = ip.packed + ipaddress.ip_address("127.0.0.1").packed
            body += struct.pack("!HH", 40000, target_port)
            return sig + bytes([0x21, 0x11]) + struct.pack("!H", len(body)) + body
        body = ip.packed + ipaddress.ip_address("::1").packed
        body += struct.pack("!HH", 40000, target_port)
        return sig + bytes([0x21, 0x21]) + struct.pack("!H", len(body)) + body
    return b"PROXY TCP4 not-an-address\r\n"


def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def serve(conn, target_port, hdr):
    up = socket.create_connection(("127.0.0.1", target_port))
    up.sendall(hdr)
    threading.Thread(target=pump, args=(conn, up), daemon=True).start()
    pump(up, conn)


def main():
    port_file, target, kind, client = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(8)
    with open(port_file, "w") as f:
        f.write(str(lsock.getsockname()[1]))
    hdr = header(kind, client, target)
    while True:
        conn, _ = lsock.accept()
        threading.Thread(target=serve, args=(conn, target, hdr), daemon=True).start()


if __name__ == "__main__":
    main()
