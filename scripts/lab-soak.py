#!/usr/bin/env python3
"""Soak in the namespace lab (needs root): HOSTS nodes, one per network
namespace, find each other by multicast and post all the time while a driver
cuts and restores hosts, takes interfaces down, adds delay and loss (tc netem,
or iptables and NFQUEUE where the kernel has no netem) and restarts nodes
(SIGTERM or SIGKILL), for SECONDS. Then every fault is healed and the nodes
must converge: every node's database holds the same envelopes with the same
causal times (so the same order everywhere), every message an author
reported is there, nothing is recorded as a fork, and each author's messages
were delivered in sequence order on every node.
Prints one JSON line of figures; exits 1 on a failure.
usage: lab-soak.py PEERNODE [HOSTS] [SECONDS] [SEED]
"""
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchnodes import JSONNode, pump  # noqa: E402

PEERNODE = os.path.abspath(sys.argv[1])
HOSTS = int(sys.argv[2]) if len(sys.argv) > 2 else 8
SECONDS = float(sys.argv[3]) if len(sys.argv) > 3 else 180
SEED = int(sys.argv[4]) if len(sys.argv) > 4 else int(time.time())
NETLAB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "netlab")
PREFIX = "pnsoak"
rng = random.Random(SEED)
env = dict(os.environ, NETLAB_PREFIX=PREFIX)


def fail(why, figures=None):
    print(json.dumps(figures or {}))
    print(f"FAILED: {why}")
    sys.exit(1)


def netlab(*args):
    subprocess.run([NETLAB, *map(str, args)], env=env, check=True, stdout=subprocess.DEVNULL)


if os.geteuid() != 0:
    fail("needs root for network namespaces (CI runs as root)")
root = tempfile.mkdtemp(prefix="peernode-labsoak-")
nodes = {}
reported = {}   # author id -> {seq: text} for every life of every node
ids = {}


def start(i):
    node = JSONNode(["ip", "netns", "exec", f"{PREFIX}{i}", PEERNODE, "--data-dir", os.path.join(root, f"n{i}"), "--json",
                     "--nick", f"host{i}", "--listen", f"10.213.0.{i}:7733"])
    nodes[i] = node
    return node


def collect(i):
    node = nodes[i]
    node.read()
    for e in node.events:
        if e.get("type") == "ready":
            ids[i] = e["id"]
        if e.get("type") == "message" and ids.get(i) and e.get("author") == ids[i]:
            reported.setdefault(ids[i], {})[e["seq"]] = e["text"]


figures = {"hosts": HOSTS, "seconds": SECONDS, "seed": SEED, "posts": 0, "cuts": 0, "restarts": 0, "kills": 0}
try:
    netlab("up", HOSTS)
    # Delay and loss: tc netem where the kernel has it; else iptables drops at
    # random and NFQUEUE hands packets to a delaying reader (scripts/netlab impair).
    probe = subprocess.run([NETLAB, "impair", "1", "1", "0"], env=env, capture_output=True, text=True)
    if probe.returncode != 0:
        fail(f"cannot add delay and loss: {probe.stderr.strip()}", figures)
    figures["impairment"] = probe.stdout.strip()
    netlab("impair", 1, "off")
    for i in range(1, HOSTS + 1):
        start(i)
    pump(list(nodes.values()), lambda: all(any(e.get("type") == "ready" for e in n.events) for n in nodes.values()), 30)
    # Each toggled fault: the hosts it is on now, how to apply it, how to heal it, its counter.
    faults = {
        "cut": (set(), lambda h: ("cut", h), lambda h: ("restore", h), "cuts"),
        "ifdown": (set(), lambda h: ("ifdown", h), lambda h: ("ifup", h), "ifdown"),
        "impair": (set(), lambda h: ("impair", h, rng.randint(10, 150), rng.randint(0, 15)), lambda h: ("impair", h, "off"), "impaired"),
    }
    begin = time.monotonic()
    next_fault = begin + 2
    kinds = []
    counter = 0
    while time.monotonic() - begin < SECONDS:
        counter += 1
        for i, node in nodes.items():
            if rng.random() < 0.3 and node.proc.poll() is None:
                try:
                    node.post(f"h{i} says {counter}")
                    figures["posts"] += 1
                except BrokenPipeError:
                    pass
        if time.monotonic() >= next_fault:
            next_fault = time.monotonic() + rng.uniform(1, 4)
            host = rng.randint(1, HOSTS)
            # Every kind of fault once per round, in a random order: even a short soak sees each.
            if not kinds:
                kinds = rng.sample(["cut", "ifdown", "impair", "restart"], 4)
            fault = kinds.pop()
            if fault in faults:
                # A fault in place on that host is healed; otherwise it is applied.
                active, apply, heal, figure = faults[fault]
                if host in active:
                    netlab(*heal(host))
                    active.discard(host)
                else:
                    netlab(*apply(host))
                    active.add(host)
                    figures[figure] = figures.get(figure, 0) + 1
            else:
                collect(host)
                how = rng.choice([signal.SIGTERM, signal.SIGKILL])
                nodes[host].proc.send_signal(how)
                nodes[host].proc.wait()
                collect(host)
                figures["restarts"] += 1
                figures["kills"] += how == signal.SIGKILL
                start(host)
        for i in nodes:
            collect(i)
        time.sleep(0.1)

    # Heal everything, then wait for each node's final message to reach all.
    last_fault = time.monotonic()
    for active, _, heal, _ in faults.values():
        for host in active:
            netlab(*heal(host))
    pump(list(nodes.values()), lambda: all(any(e.get("type") == "ready" for e in n.events) for n in nodes.values()), 30)
    for i in nodes:
        collect(i)
    for i, node in nodes.items():
        node.post(f"final from host {i}")
    finals = {f"final from host {i}" for i in nodes}
    try:
        pump(list(nodes.values()), lambda: all(finals <= {e.get("text") for e in n.events} for n in nodes.values()), 180)
    except TimeoutError:
        fail("the nodes did not converge within 180 s of the last fault", figures)
    figures["converge_s"] = round(time.monotonic() - last_fault, 2)
    for i in nodes:
        collect(i)

    def snapshot(i):
        db = sqlite3.connect(f"file:{os.path.join(root, f'n{i}', 'peernode.db')}?mode=ro", uri=True)
        try:
            rows = db.execute("SELECT a.key, e.sequence, e.id, e.causal_time, e.delivery FROM envelopes e "
                              "JOIN authors a ON e.author = a.rowid").fetchall()
            forks = db.execute("SELECT count(*) FROM forks").fetchone()[0]
        finally:
            db.close()
        return rows, forks

    # Receipts and the last acknowledgements still travel after the finals: the
    # databases must become identical while the nodes run.
    deadline = time.monotonic() + 120
    while True:
        for n in nodes.values():
            n.read()
        snaps = {i: snapshot(i) for i in nodes}
        views = {i: {(key, seq, bytes(mid), causal) for key, seq, mid, causal, _ in rows} for i, (rows, _) in snaps.items()}
        if all(v == views[1] for v in views.values()):
            break
        if time.monotonic() > deadline:
            sizes = {i: len(v) for i, v in views.items()}
            fail(f"the databases did not become identical within 120 s: {sizes}", figures)
        time.sleep(0.5)
    figures["identical_s"] = round(time.monotonic() - last_fault, 2)
    for i, (rows, forks) in snaps.items():
        if forks:
            fail(f"host {i} recorded {forks} forks", figures)
        undelivered = [r for r in rows if r[3] is None]
        if undelivered:
            fail(f"host {i} holds {len(undelivered)} envelopes it could not deliver", figures)
        by_author = {}
        for key, seq, _, _, delivery in rows:
            by_author.setdefault(key, []).append((seq, delivery))
        for key, pairs in by_author.items():
            deliveries = [d for _, d in sorted(pairs)]
            if deliveries != sorted(deliveries):
                fail(f"host {i} delivered {key.hex()[:8]}'s messages out of sequence order", figures)
    first = views[1]
    for node in nodes.values():
        node.proc.stdin.close()
    for i, node in nodes.items():
        node.proc.wait(timeout=30)
        db = sqlite3.connect(os.path.join(root, f"n{i}", "peernode.db"))
        integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
        db.close()
        if integrity != "ok":
            fail(f"host {i}: integrity_check {integrity}", figures)
    held = {(key.hex(), seq) for key, seq, _, _ in first}
    lost = [(a, s) for a, seqs in reported.items() for s in seqs if (a, s) not in held]
    figures["envelopes"] = len(first)
    figures["messages_reported"] = sum(len(s) for s in reported.values())
    figures["lost"] = len(lost)
    if lost:
        fail(f"{len(lost)} reported messages are missing", figures)
finally:
    for node in nodes.values():
        if node.proc.poll() is None:
            node.stop()
    subprocess.run([NETLAB, "down"], env=env)
    shutil.rmtree(root, ignore_errors=True)
print(json.dumps(figures))
print("lab soak: identical histories, nothing lost, no forks, causal order everywhere")
