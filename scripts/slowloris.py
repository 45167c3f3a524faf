#!/usr/bin/env python3
"""Slowloris: one host opens many connections to a node and sends nothing
(or half an HTTP request), while two other nodes chat through it.

A listens; B posts to A all the time, and A's delivery latency is measured
before and during the attack. The attacker (from 127.0.0.2, so the chatting
nodes on 127.0.0.1 are another address) opens ATTACK connections. Checks:
A keeps at most the per-address limit of them open (the rest are closed at
once and counted), a new node C can still link during the attack, B's
messages keep arriving, A's memory stays bounded, and the held connections
are closed by the handshake timeout. Prints figures; exits 1 on a failure.
usage: slowloris.py PEERNODE [ATTACK]
"""
import os
import socket
import sys
import tempfile
import shutil
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchnodes import JSONNode, pump, ready, rss_kib, timed_posts  # noqa: E402

PEERNODE = os.path.abspath(sys.argv[1])
ATTACK = int(sys.argv[2]) if len(sys.argv) > 2 else 400
# WebSocketServer.Configuration.defaultMaximumConnectionsPerAddress, and the handshake timeout (s).
PER_ADDRESS, HANDSHAKE_TIMEOUT = 64, 10


def fail(why):
    print(f"FAILED: {why}")
    sys.exit(1)


def latencies(a, b, count, label):
    """B posts `count` messages 20 ms apart; p50 and p99 milliseconds until A reports each."""
    try:
        return timed_posts([a, b], b, a, count, label, timeout=30)
    except TimeoutError:
        fail(f"A did not get all of B's '{label}' messages")


def still_open(sock):
    """True while the node has not closed this connection."""
    sock.setblocking(False)
    try:
        return sock.recv(1) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


root = tempfile.mkdtemp(prefix="peernode-slowloris-")
nodes = []
try:
    a = JSONNode([PEERNODE, "--data-dir", os.path.join(root, "a"), "--json", "--no-discovery", "--listen", "127.0.0.1:0"])
    nodes.append(a)
    port = int(ready(a)["listen"].rsplit(":", 1)[1])
    b = JSONNode([PEERNODE, "--data-dir", os.path.join(root, "b"), "--json", "--no-discovery", "--peer", f"ws://127.0.0.1:{port}"])
    nodes.append(b)
    pump(nodes, lambda: any(e.get("type") == "peer_up" for e in a.events), 20)
    before_p50, before_p99 = latencies(a, b, 50, "before")
    rss_before = rss_kib(a.proc.pid)

    attackers = []
    for i in range(ATTACK):
        s = socket.socket()
        s.bind(("127.0.0.2", 0))
        s.connect(("127.0.0.1", port))
        if i % 2:
            s.send(b"GET /peernode/1 HTTP/1.1\r\nHost: x\r\n")  # half a request, never finished
        attackers.append(s)
    time.sleep(0.5)
    held = sum(1 for s in attackers if still_open(s))
    c = JSONNode([PEERNODE, "--data-dir", os.path.join(root, "c"), "--json", "--no-discovery", "--peer", f"ws://127.0.0.1:{port}"])
    nodes.append(c)
    try:
        pump(nodes, lambda: any(e.get("type") == "peer_up" for e in c.events), 20)
    except TimeoutError:
        fail("a new node could not link during the attack")
    during_p50, during_p99 = latencies(a, b, 50, "during")
    rss_during = rss_kib(a.proc.pid)
    a.post("/stats")
    pump(nodes, lambda: any(e.get("type") == "stats" for e in a.events), 10)
    stats = next(e for e in a.events if e.get("type") == "stats")
    refused = int(stats.get("too_many_connections_from_address", 0))
    time.sleep(HANDSHAKE_TIMEOUT + 2)
    after = sum(1 for s in attackers if still_open(s))
    for s in attackers:
        s.close()

    print(f"attack: {ATTACK} connections from one address; A held {held} (limit {PER_ADDRESS}), refused {refused}; "
          f"{after} still open {HANDSHAKE_TIMEOUT + 2} s later")
    print(f"B→A latency: before p50 {before_p50:.1f} ms, p99 {before_p99:.1f} ms; "
          f"during p50 {during_p50:.1f} ms, p99 {during_p99:.1f} ms")
    print(f"A's RSS: {rss_before / 1024:.1f} MB before, {rss_during / 1024:.1f} MB during")
    if held > PER_ADDRESS:
        fail(f"A held {held} connections from one address, more than {PER_ADDRESS}")
    if refused < ATTACK - PER_ADDRESS:
        fail(f"A counted {refused} refusals, expected at least {ATTACK - PER_ADDRESS}")
    if after:
        fail(f"{after} silent connections outlived the handshake timeout")
    if rss_during > rss_before + 32 * 1024:
        fail("A's memory grew by more than 32 MB under the attack")
    print("slowloris: bounded, refused, timed out; the others kept chatting")
finally:
    for n in nodes:
        n.stop()
    shutil.rmtree(root, ignore_errors=True)
