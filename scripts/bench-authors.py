#!/usr/bin/env python3
"""One hop on a LAN with many authors (docs/SCALE.md): two nodes that both
hold one message of each of AUTHORS authors, linked on loopback, and the
time from a post at A to its delivery at B (500 posts; the author's fsync
and the pipes included, as in bench-gossip.py's chain). The per-message
work that grew with the authors (a link's clocks copied, a post's
dependencies read from every author) shows here and not with few authors.
usage: bench-authors.py PEERNODE BENCH_BINARY AUTHORS
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchnodes import JSONNode, pump, ready  # noqa: E402

PEERNODE, BENCH, AUTHORS = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), int(sys.argv[3])
POSTS = 500


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


root = tempfile.mkdtemp(prefix="peernode-bench-authors-")
nodes = []
try:
    source = os.path.join(root, "source")
    subprocess.run([BENCH, "make-store", source, str(AUTHORS), str(AUTHORS)], check=True, stdout=subprocess.DEVNULL)
    for name in ("a", "b"):
        shutil.copytree(source, os.path.join(root, name))

    def start(name, *extra):
        n = JSONNode([PEERNODE, "--data-dir", os.path.join(root, name), "--json", "--no-discovery", "--nick", name,
                      "--listen", "127.0.0.1:0", *extra])
        event = ready(n, 60)
        n.id, n.url = event["id"], "ws://" + event["listen"]
        nodes.append(n)
        return n

    a = start("a")
    b = start("b", "--peer", a.url)
    pump(nodes, lambda: any(e.get("type") == "peer_up" for e in b.events), 60)
    time.sleep(1)
    latencies = []
    for i in range(POSTS):
        text = f"ping {i}"
        sent = time.monotonic()
        a.post(text)
        pump(nodes, lambda: any(e.get("text") == text for e in b.events), 30)
        latencies.append(next(e["_t"] for e in b.events if e.get("text") == text) - sent)
        for n in nodes:
            n.events = [e for e in n.events if e.get("type") != "message"]
        time.sleep(0.002)
    print(f"one hop with {AUTHORS:,} authors held: p50 {percentile(latencies, 0.5) * 1000:.2f} ms, "
          f"p99 {percentile(latencies, 0.99) * 1000:.2f} ms (post at A to delivery at B, {POSTS} posts)")
    # A's first posts name the authors it has not named yet, 256 at a time
    # (Envelope.maximumDependencies): the rest are ordinary posts.
    settled = latencies[-(POSTS - 50):]
    print(f"  the last {len(settled)} (past the posts that name every author): p50 {percentile(settled, 0.5) * 1000:.2f} ms, "
          f"p99 {percentile(settled, 0.99) * 1000:.2f} ms")
finally:
    for n in nodes:
        n.stop()
    shutil.rmtree(root, ignore_errors=True)
