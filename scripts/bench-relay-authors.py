#!/usr/bin/env python3
"""A relay's memory on a LAN with many authors (docs/SCALE.md).

A relay and LINKS real nodes that all hold one message of each of AUTHORS
authors (`peernode-bench make-store`), every node linked to the relay with
`--peer`. A link keeps its clocks of every author on both ends, so the
relay's memory grows with links × authors: printed is its resident memory
before any link and once all are up and their clocks exchanged, the growth
per link, and one node's memory beside it.
usage: bench-relay-authors.py PEERNODE BENCH_BINARY AUTHORS LINKS
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchnodes import JSONNode, cpu_seconds, pump, ready, rss_kib, start_relay  # noqa: E402

PEERNODE, BENCH = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
AUTHORS, LINKS = int(sys.argv[3]), int(sys.argv[4])
# Seconds after the last link is up: clock exchanges, per-peer clock writes, and each
# node indexing the messages it started with for search (500 a tick).
SETTLE = 30
# Seconds of idle links over which CPU is measured.
IDLE = 10
# Seconds the links may take to come up.
WAIT = int(os.environ.get("BENCH_LINK_WAIT", "120"))


root = tempfile.mkdtemp(prefix="peernode-bench-relay-authors-")
nodes, relay = [], None
try:
    source = os.path.join(root, "source")
    subprocess.run([BENCH, "make-store", source, str(AUTHORS), str(AUTHORS)], check=True, stdout=subprocess.DEVNULL)
    # Copies made before any node runs on the store, so each gets an identity of its own.
    for name in ["relay"] + [f"n{i}" for i in range(LINKS)]:
        shutil.copytree(source, os.path.join(root, name))
    relay, listen, _ = start_relay(PEERNODE, os.path.join(root, "relay"))
    time.sleep(2)
    before = rss_kib(relay.pid)
    for i in range(LINKS):
        n = JSONNode([PEERNODE, "--data-dir", os.path.join(root, f"n{i}"), "--json", "--no-discovery",
                      "--listen", "127.0.0.1:0", "--peer", "ws://" + listen])
        ready(n, 60)
        nodes.append(n)
    started = time.monotonic()
    try:
        pump(nodes, lambda: all(any(e.get("type") == "peer_up" for e in n.events) for n in nodes), WAIT)
    except TimeoutError:
        up = sum(1 for n in nodes if any(e.get("type") == "peer_up" for e in n.events))
        sys.exit(f"bench-relay-authors: {up} of {LINKS} links up after {WAIT} s (the relay's log: {os.path.join(root, 'relay', 'bench.log')})")
    linking = time.monotonic() - started
    time.sleep(SETTLE)
    after = rss_kib(relay.pid)
    # CPU while idle: nothing is posted, only the clock exchanges and ticks run.
    cpu_before = cpu_seconds(relay.pid), sum(cpu_seconds(n.proc.pid) for n in nodes)
    time.sleep(IDLE)
    relay_cores = (cpu_seconds(relay.pid) - cpu_before[0]) / IDLE
    node_cores = (sum(cpu_seconds(n.proc.pid) for n in nodes) - cpu_before[1]) / IDLE / LINKS
    node = rss_kib(nodes[0].proc.pid)
    print(f"relay with {AUTHORS:,} authors held: {before / 1024:.1f} MB before any link, {after / 1024:.1f} MB with {LINKS} "
          f"nodes linked ({(after - before) / max(1, LINKS):,.0f} KiB a link); one of the nodes: {node / 1024:.1f} MB; "
          f"the last link was up {linking:.1f} s after the last node was ready; idle, nothing posted: the relay used "
          f"{relay_cores:.3f} of a core, a node {node_cores:.3f}")
finally:
    for n in nodes:
        n.stop()
    if relay:
        relay.kill()
        relay.wait()
    if not os.environ.get("BENCH_KEEP"):
        shutil.rmtree(root, ignore_errors=True)
