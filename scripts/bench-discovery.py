#!/usr/bin/env python3
"""Discovery benchmark in the namespace lab (needs root, like the lab tests).

- mesh time: 8 nodes started at once in 8 namespaces, discovery only; the
  time from starting them until every node has reported a link to each of
  the 7 others (peer_up), p50 and p95 over several runs (includes process
  start);
- idle traffic: datagrams each node sends per minute once the mesh is up,
  from its own counters (/stats) over a measured interval.
usage: bench-discovery.py PEERNODE [RUNS] [IDLE_SECONDS]
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from benchnodes import JSONNode, pump

PEERNODE = os.path.abspath(sys.argv[1])
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 7
IDLE = float(sys.argv[3]) if len(sys.argv) > 3 else 30
HOSTS = 8
NETLAB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "netlab")
ENV = dict(os.environ, NETLAB_PREFIX=f"pnb{os.getpid() % 100000}x")


def netlab(*args):
    result = subprocess.run([NETLAB, *map(str, args)], env=ENV, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"bench-discovery: scripts/netlab {' '.join(map(str, args))} failed: {result.stderr.strip()}")


class Node(JSONNode):
    def __init__(self, host, data):
        super().__init__([NETLAB, "exec", str(host), PEERNODE, "--data-dir", data, "--json"], env=ENV)

    def peers(self):
        return {e["id"] for e in self.events if e["type"] == "peer_up"}

    def stats(self, nodes):
        self.post("/stats")
        pump(nodes, lambda: any(e["type"] == "stats" for e in self.events))
        stats = [e for e in self.events if e["type"] == "stats"][-1]
        self.events = [e for e in self.events if e["type"] != "stats"]
        return stats


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round((len(values) - 1) * p)))]


netlab("up", HOSTS)
root = tempfile.mkdtemp(prefix="peernode-bench-discovery-")
try:
    times, idle_rates = [], []
    for run in range(RUNS):
        dirs = [os.path.join(root, f"r{run}n{i}") for i in range(HOSTS)]
        start = time.monotonic()
        nodes = [Node(i + 1, dirs[i]) for i in range(HOSTS)]
        try:
            pump(nodes, lambda: all(any(e["type"] == "ready" for e in n.events) for n in nodes))
            ids = {next(e["id"] for e in n.events if e["type"] == "ready") for n in nodes}
            pump(nodes, lambda: all(len(n.peers()) == HOSTS - 1 for n in nodes))
            times.append(time.monotonic() - start)
            if run == 0:
                before = [n.stats(nodes) for n in nodes]
                t0 = time.monotonic()
                pump(nodes, lambda: False if time.monotonic() - t0 < IDLE else True, timeout=IDLE + 5)
                after = [n.stats(nodes) for n in nodes]
                elapsed = time.monotonic() - t0
                for b, a in zip(before, after):
                    sent = sum(a.get(k, 0) - b.get(k, 0) for k in ("discovery_announce_sent", "discovery_query_sent"))
                    idle_rates.append(sent / elapsed * 60)
        finally:
            for n in nodes:
                n.stop()
    print(f"discovery: {HOSTS} nodes in {HOSTS} namespaces, discovery only, {RUNS} runs: full mesh ({HOSTS - 1} links each) "
          f"after p50 {percentile(times, 0.5) * 1000:.0f} ms, p95 {percentile(times, 0.95) * 1000:.0f} ms "
          f"(max {max(times) * 1000:.0f} ms; from process start)")
    print(f"discovery idle traffic: {sum(idle_rates) / len(idle_rates):.1f} datagrams per minute per node "
          f"(measured over {IDLE:.0f} s on a full mesh; one interface each)")
    print(f"aims: p95 ≤ 1 s: {'met' if percentile(times, 0.95) <= 1 else 'NOT met'} ({percentile(times, 0.95):.2f} s)")
finally:
    shutil.rmtree(root, ignore_errors=True)
    netlab("down")
