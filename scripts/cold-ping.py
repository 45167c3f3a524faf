#!/usr/bin/env python3
"""A WebSocket ping to a server that was idle: the least round trip of 25
pings sent 0.2 s apart, in microseconds (raw socket, masked ping frame,
TCP_NODELAY). bench-websocket.sh puts the /peers round trip (a probe
between two idle nodes) beside it: the back-to-back ping-pong never sleeps.
usage: cold-ping.py PORT
"""
import base64
import os
import socket
import sys
import time

port = int(sys.argv[1])
s = socket.create_connection(("127.0.0.1", port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
key = base64.b64encode(os.urandom(16)).decode()
s.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
          f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
head = b""
while b"\r\n\r\n" not in head:
    chunk = s.recv(4096)
    if not chunk:
        sys.exit("cold-ping: the server closed during the handshake")
    head += chunk
if b" 101 " not in head.split(b"\r\n")[0]:
    sys.exit(f"cold-ping: no upgrade: {head.split(chr(13).encode())[0]!r}")


def ping_frame():
    mask = os.urandom(4)
    return bytes([0x89, 0x80 | 4]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(b"cold"))


best = float("inf")
for _ in range(25):
    time.sleep(0.2)
    frame = ping_frame()
    start = time.perf_counter()
    s.sendall(frame)
    if not s.recv(64):
        sys.exit("cold-ping: the server closed")
    best = min(best, time.perf_counter() - start)
s.close()
print(f"{best * 1e6:.0f}")
