#!/usr/bin/env python3
"""Many real nodes on one machine (docs/SCALE.md, "With real processes").

N nodes find each other by loopback multicast (--multicast-if 127.0.0.1) on
a group port of their own; once their links have settled, one node posts a
round of short lines (not counted: each author's first envelope floods once
and prunes its tree), then another, and the script reports for the second
links per node, full envelopes sent per message (all nodes, from /stats;
the receivers' delivered receipts are envelopes too, and counted),
duplicates, ids, delivery to all, and the memory per node. Then it kills a quarter of the nodes at once (SIGKILL),
another node posts, and it reports whether every survivor still gets every
message, how long the last one took, and the links per node after healing.

usage: bench-overlay.py PEERNODE [N ...] [--max-links K] [--check]
  several N: one run each (e.g. 12 24 32 64); --max-links 0 is the full mesh.
  --check: exit 1 unless every message reached every live node, no node held
  more neighbours than the bound, and the survivors form one overlay (what the
  test suite asserts). Links still being set up (`asked`: our neighbour
  request waits for its answer; `unclaimed`: the peer has not said what it
  wants, closed within 5 s) are outside the bound and reported beside it: a
  node below the bound keeps asking peers from its reserve, and a full peer
  holds the asking link for a moment before it refuses.
"""
import os
import random
import shutil
import signal
import sys
import tempfile
import time

from benchnodes import JSONNode, pump, rss_kib, ready

args = sys.argv[1:]
CHECK = "--check" in args
args = [a for a in args if a != "--check"]
MAX_LINKS = None
if "--max-links" in args:
    i = args.index("--max-links")
    MAX_LINKS = int(args[i + 1])
    del args[i:i + 2]
PEERNODE = os.path.abspath(args[0])
SIZES = [int(a) for a in args[1:]] or [12, 24, 32, 64]
MESSAGES = 20
BOUND = 6 if MAX_LINKS is None else MAX_LINKS


class Node(JSONNode):
    def __init__(self, data, group, extra):
        super().__init__([PEERNODE, "--data-dir", data, "--json", "--listen", "127.0.0.1:0",
                          "--multicast", group, "--multicast-if", "127.0.0.1", *extra])
        self.id = None
        self.views = []
        self.neighbours = 0

    def answer(self, nodes, command, kind, timeout=30):
        """Sends a command and returns the events of its answer (the first of `kind` and what follows it)."""
        mark = len(self.events)
        self.post(command)
        pump(nodes, lambda: any(e["type"] == kind for e in self.events[mark:]), timeout)
        start = next(i for i in range(mark, len(self.events)) if self.events[i]["type"] == kind)
        return self.events[start:]

    def stats(self, nodes):
        return self.answer(nodes, "/stats", "stats")[0]

    def in_sync(self, nodes):
        """Whether the node holds everything its peers announced (/sync)."""
        return self.answer(nodes, "/sync", "sync")[0].get("complete") == "yes"

    def linked(self, nodes):
        """The ids of the peers linked now, from /peers."""
        mark = len(self.events)
        self.post("/peers")

        def rows():
            head = next((i for i in range(mark, len(self.events)) if self.events[i]["type"] == "peers"), None)
            if head is None:
                return None
            got = [e for e in self.events[head + 1:] if e["type"] == "peer"]
            return got if len(got) >= int(self.events[head]["rows"]) else None

        pump(nodes, lambda: rows() is not None, 30)
        linked = {r["id"] for r in rows() if r["state"] == "linked"}
        self.views = sorted(r.get("view", "?") for r in rows() if r["state"] == "linked")
        self.neighbours = sum(1 for v in self.views if v == "neighbour")
        self.events = self.events[:mark] + [e for e in self.events[mark:] if e["type"] not in ("peer", "peers")]
        return linked

    def has(self, author, text):
        return any(e["type"] == "message" and e["author"] == author and e["text"] == text for e in self.events)


def connected(graph, live):
    live = list(live)
    if not live:
        return True
    seen, stack = {live[0]}, [live[0]]
    while stack:
        a = stack.pop()
        for b in graph.get(a, ()):
            if b in graph and b not in seen:
                seen.add(b)
                stack.append(b)
    return len(seen) == len(live)


def settle(nodes, seconds=90):
    """Waits until the links stop changing (and form one overlay); returns each node's linked peers."""
    deadline = time.monotonic() + seconds
    previous = None
    while True:
        graph = {n.id: n.linked(nodes) for n in nodes}
        if graph == previous and connected(graph, graph.keys()) and all(graph.values()):
            return graph
        if time.monotonic() > deadline:
            return graph
        previous = graph
        time.sleep(3)


def changed(a, b):
    """How many links (pairs of nodes) are in one graph and not the other."""
    def pairs(g):
        return {frozenset((x, y)) for x, ys in g.items() for y in ys}
    return len(pairs(a) ^ pairs(b))


def totals(nodes, keys):
    out = {k: 0 for k in keys}
    for n in nodes:
        s = n.stats(nodes)
        for k in keys:
            out[k] += int(s.get(k, 0))
    return out


def post_all(nodes, sender, label, count, timeout):
    started = time.monotonic()
    for i in range(count):
        sender.post(f"{label} {i}")
        time.sleep(0.05)
    texts = [f"{label} {i}" for i in range(count)]
    try:
        pump(nodes, lambda: all(n.has(sender.id, t) for n in nodes for t in texts), timeout)
    except TimeoutError:
        pass
    missing = sum(1 for n in nodes for t in texts if not n.has(sender.id, t))
    return missing, time.monotonic() - started


def neighbours_text(nodes):
    if MAX_LINKS == 0:
        return ""
    counts = [n.neighbours for n in nodes]
    return f" (neighbours max {max(counts)}, min {min(counts)})"


def report_over(nodes, graph, when):
    """Names the nodes above the bound, with the view of each link (transient ones are outside it)."""
    for n in nodes:
        if MAX_LINKS != 0 and len(graph[n.id]) > BOUND:
            print(f"  {len(graph[n.id])} links{when} at {n.id[:8]}: {', '.join(n.views)}")


KEYS = ["envelopes_sent", "envelopes_duplicate", "ihave_sent", "bytes_out", "prune_sent", "graft_sent", "envelopes_requested"]
failures = []
for size in SIZES:
    root = tempfile.mkdtemp(prefix="peernode-bench-overlay-")
    group = f"239.255.73.73:{random.randint(20000, 60000)}"
    extra = [] if MAX_LINKS is None else ["--max-links", str(MAX_LINKS)]
    nodes = []
    try:
        for i in range(size):
            nodes.append(Node(os.path.join(root, f"n{i}"), group, extra))
        for n in nodes:
            n.id = ready(n, 60)["id"]
        graph = settle(nodes)
        degrees = [len(v) for v in graph.values()]
        report_over(nodes, graph, "")
        # A first round, not counted: each author's first envelope (the
        # sender's, and every receiver's delivered receipts) floods once and
        # prunes the links to that author's tree.
        post_all(nodes, nodes[0], "warm", MESSAGES, 60)
        time.sleep(3)
        # And whatever a node still catches up on (a receipt it lacks) ends
        # before the measured round, instead of counting in it.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not all(n.in_sync(nodes) for n in nodes):
            time.sleep(1)
        for n in nodes:
            n.read()
        at_start = {n.id: set(n.linked(nodes)) for n in nodes}
        before = totals(nodes, KEYS)
        missing, took = post_all(nodes, nodes[0], "hello", MESSAGES, 60)
        time.sleep(2)
        for n in nodes:
            n.read()
        after = totals(nodes, KEYS)
        at_end = {n.id: set(n.linked(nodes)) for n in nodes}
        per = {k: (after[k] - before[k]) / MESSAGES for k in KEYS}
        rss = sorted(rss_kib(n.proc.pid) for n in nodes)
        bound = "full mesh" if MAX_LINKS == 0 else f"--max-links {BOUND}"
        print(f"{size} nodes ({bound}): links per node max {max(degrees)}, min {min(degrees)}, mean {sum(degrees) / len(degrees):.1f}"
              f"{neighbours_text(nodes)}; "
              f"one overlay: {'yes' if connected(graph, graph.keys()) else 'NO'}")
        print(f"  per message: {per['envelopes_sent']:.1f} full envelopes sent (all nodes; a spanning tree: {size - 1}), "
              f"{per['envelopes_duplicate']:.1f} duplicates, {per['ihave_sent']:.1f} id messages, {per['bytes_out'] / 1024:.1f} KiB on the wire, "
              f"{per['prune_sent']:.1f} prunes, {per['graft_sent']:.1f} grafts, "
              f"{per['envelopes_requested']:.1f} envelopes asked for; "
              f"links that changed: {changed(graph, at_start)} from settling to the round, {changed(at_start, at_end)} during it")
        print(f"  delivered to all: {'yes' if missing == 0 else f'NO, {missing} missing'} ({MESSAGES} messages in {took:.2f} s); "
              f"memory per node: median {rss[len(rss) // 2] / 1024:.1f} MiB, max {rss[-1] / 1024:.1f} MiB")
        if missing:
            failures.append(f"{size} nodes: {missing} (message, node) pairs missing")
        if MAX_LINKS != 0 and max(n.neighbours for n in nodes) > BOUND:
            failures.append(f"{size} nodes: a node held {max(n.neighbours for n in nodes)} neighbours")
        # A quarter killed at once (never the next sender).
        dead = random.sample(nodes[2:], size // 4)
        for n in dead:
            n.proc.send_signal(signal.SIGKILL)
            n.proc.wait()
        live = [n for n in nodes if n not in dead]
        missing, took = post_all(live, nodes[1], "after", MESSAGES, 60)
        time.sleep(10)
        for n in live:
            n.read()
        graph = {n.id: n.linked(live) for n in live}
        degrees = [len(v) for v in graph.values()]
        report_over(live, graph, " after the kill")
        print(f"  {len(dead)} killed at once: delivered to every survivor: {'yes' if missing == 0 else f'NO, {missing} missing'} "
              f"(all {MESSAGES} in {took:.2f} s); 10 s later links per node max {max(degrees)}, min {min(degrees)}{neighbours_text(live)}, "
              f"one overlay: {'yes' if connected(graph, graph.keys()) else 'NO'}")
        if missing:
            failures.append(f"{size} nodes after the kill: {missing} (message, node) pairs missing")
        if MAX_LINKS != 0 and max(n.neighbours for n in live) > BOUND:
            failures.append(f"{size} nodes after the kill: a node held {max(n.neighbours for n in live)} neighbours")
        if not connected(graph, graph.keys()):
            failures.append(f"{size} nodes after the kill: the survivors are not one overlay")
    finally:
        for n in nodes:
            if n.proc.poll() is None:
                n.stop()
        shutil.rmtree(root, ignore_errors=True)

if CHECK and failures:
    sys.exit("bench-overlay: " + "; ".join(failures))
