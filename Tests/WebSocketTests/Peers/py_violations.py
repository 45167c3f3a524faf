"""Protocol violations sent as raw bytes to a peernode WebSocket server.

Usage: py_violations.py PORT [CASE...] (default: every case). For each case: a correct opening handshake,
then the bad bytes, then read until the server's close frame. Prints
"CASE CODE" (or "CASE none" when the server closed without a close frame).
"""
import base64
import os
import socket
import struct
import sys

PORT = int(sys.argv[1])


def frame(opcode, payload=b"", fin=True, rsv=0, mask=True, length=None):
    head = bytes([(0x80 if fin else 0) | rsv | opcode])
    n = len(payload) if length is None else length
    m = 0x80 if mask else 0
    if n <= 125:
        head += bytes([m | n])
    elif n <= 0xFFFF:
        head += bytes([m | 126]) + struct.pack(">H", n)
    else:
        head += bytes([m | 127]) + struct.pack(">Q", n)
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def connect():
    s = socket.create_connection(("127.0.0.1", PORT), timeout=5)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET /peernode/1 HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
               f"Sec-WebSocket-Protocol: peernode.1\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(1)
        if not chunk:
            raise RuntimeError("handshake failed")
        head += chunk
    assert head.startswith(b"HTTP/1.1 101"), head
    return s


def read_exact(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def close_code(s):
    """Reads server frames until a close frame; returns its code."""
    while True:
        h = read_exact(s, 2)
        if h is None:
            return "none"
        n = h[1] & 0x7F
        if n == 126:
            n = struct.unpack(">H", read_exact(s, 2))[0]
        elif n == 127:
            n = struct.unpack(">Q", read_exact(s, 8))[0]
        payload = read_exact(s, n) or b""
        if h[1] & 0x80:
            return "masked-server-frame"
        if h[0] & 0x0F == 0x8:
            return str(struct.unpack(">H", payload[:2])[0]) if len(payload) >= 2 else "empty"


CASES = {
    "unmasked": frame(0x1, b"hi", mask=False),
    "rsv1": frame(0x1, b"hi", rsv=0x40),
    "rsv3": frame(0x2, b"hi", rsv=0x10),
    "opcode3": frame(0x3, b""),
    "opcode11": frame(0xB, b""),
    "fragmented-ping": frame(0x9, b"x", fin=False),
    "long-ping": frame(0x9, b"x" * 126),
    "lone-continuation": frame(0x0, b"x"),
    "nested-message": frame(0x1, b"a", fin=False) + frame(0x1, b"b"),
    "bad-utf8": frame(0x1, b"\xc3\x28"),
    "bad-utf8-fragments": frame(0x1, b"\xe2\x82", fin=False) + frame(0x0, b"\x28"),
    "too-big-declared": frame(0x2, b"", length=(1 << 20) + 1)[:14],
    "close-1-byte": frame(0x8, b"\x03"),
    "close-1005": frame(0x8, b"\x03\xed"),
    "close-bad-reason": frame(0x8, b"\x03\xe8\xff"),
    "text-on-binary-link": frame(0x1, b"hello"),
}

for name in sys.argv[2:] or list(CASES):
    data = CASES[name]
    s = connect()
    s.sendall(data)
    try:
        print(name, close_code(s), flush=True)
    except (socket.timeout, ConnectionResetError) as e:
        print(name, "error", e, flush=True)
    s.close()
