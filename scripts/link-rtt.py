#!/usr/bin/env python3
"""The link round trip two nodes report in /peers (WebSocket pings on a
Noise link, the least of the last five), on loopback: bench-websocket.sh
prints it beside the WebSocket ping-pong of the same build (issue 15's aim:
within 2x of it).
usage: link-rtt.py PEERNODE  (prints the round trip in microseconds)
"""
import os
import shutil
import sys
import tempfile
import time

from benchnodes import JSONNode, pump, ready

PEERNODE = os.path.abspath(sys.argv[1])
root = tempfile.mkdtemp(prefix="peernode-link-rtt-")
nodes = []
try:
    a = JSONNode([PEERNODE, "--data-dir", os.path.join(root, "a"), "--json", "--no-discovery", "--listen", "127.0.0.1:0"])
    nodes.append(a)
    listen = ready(a)["listen"]
    b = JSONNode([PEERNODE, "--data-dir", os.path.join(root, "b"), "--json", "--no-discovery", "--listen", "127.0.0.1:0",
                  "--peer", "ws://" + listen])
    nodes.append(b)
    ready(b)
    pump(nodes, lambda: any(e["type"] == "peer_up" for e in b.events), 30)
    # Probes go 1, 2 and 3 s after the link is up, then every 10 s.
    deadline = time.monotonic() + 4
    while time.monotonic() < deadline:
        try:
            pump(nodes, lambda: False, 0.2)
        except TimeoutError:
            pass
    mark = len(b.events)
    b.post("/peers")
    pump(nodes, lambda: any(e["type"] == "peer" and "rtt_us" in e for e in b.events[mark:]), 10)
    print(next(e["rtt_us"] for e in b.events[mark:] if e["type"] == "peer" and "rtt_us" in e))
finally:
    for n in nodes:
        n.stop()
    shutil.rmtree(root, ignore_errors=True)
