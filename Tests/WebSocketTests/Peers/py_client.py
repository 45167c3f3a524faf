"""Python `websockets` as a client against a peernode WebSocket server.

Usage: py_client.py URL  (the server echoes every message; "close:CODE:REASON"
makes it close with that code). Prints one line per case and exits non-zero
if any case failed.
"""
import asyncio
import sys

import websockets
from websockets.exceptions import ConnectionClosed, InvalidStatus

URL = sys.argv[1]
BASE = URL.rsplit("/", 1)[0]
SIZES = [0, 125, 126, 65535, 65536, 1 << 20]
failures = []


def check(name, condition, detail=""):
    print(("ok " if condition else "FAIL ") + name + ("" if condition else " " + detail), flush=True)
    if not condition:
        failures.append(name)


async def main():
    async with websockets.connect(URL, subprotocols=["peernode.1"], max_size=None) as ws:
        check("subprotocol", ws.subprotocol == "peernode.1", str(ws.subprotocol))
        for size in SIZES:
            data = bytes((i * 7) & 0xFF for i in range(size))
            await ws.send(data)
            check(f"binary {size}", await ws.recv() == data)
            text = "é" * (size // 2) + "x" * (size % 2)
            await ws.send(text)
            check(f"text {size}", await ws.recv() == text)
        # Fragmented: an iterable is sent as one message in several frames.
        await ws.send(["frag", "mented ", "€uro"])
        check("fragmented text", await ws.recv() == "fragmented €uro")
        await ws.send([b"\x00\x01", b"", b"\x02" * 70000])
        check("fragmented binary", await ws.recv() == b"\x00\x01" + b"\x02" * 70000)
        pong = await ws.ping(b"are you there")
        await asyncio.wait_for(pong, 5)
        check("ping answered", True)
        # The server closes with a code of our choosing.
        await ws.send("close:4002:server says bye")
        try:
            await asyncio.wait_for(ws.recv(), 5)
            check("server close code", False, "no close")
        except ConnectionClosed as e:
            check("server close code", e.rcvd is not None and e.rcvd.code == 4002 and e.rcvd.reason == "server says bye", str(e))
    # The client closes with a code; the test reads what the server saw.
    async with websockets.connect(URL, subprotocols=["peernode.1"]) as ws:
        await ws.close(code=4001, reason="client says bye")
        check("client close code sent", ws.close_code == 4001, str(ws.close_code))
    # A refused handshake: an unknown path.
    try:
        async with websockets.connect(BASE + "/nowhere"):
            check("refused handshake", False, "accepted")
    except InvalidStatus as e:
        check("refused handshake", e.response.status_code == 404, str(e))


asyncio.run(main())
sys.exit(1 if failures else 0)
