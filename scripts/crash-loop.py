#!/usr/bin/env python3
"""Kill -9 loop: a node (or a relay) is killed with SIGKILL at random moments
while messages flow through it, and started again on the same data
directory, CYCLES times. Checks after every kill: the database passes
PRAGMA integrity_check, and every own message the node had reported (its
`message` event) is in it; a relay holds every message whose poster it
told "stored" (a `receipt` event). At the end the network must converge: every
reported message everywhere, each exactly once.

  node:  A (the victim) --peer B; both post all the time.
  relay: A --peer R, C --peer R; R (the victim) is a relay; A and C post.

Prints one JSON line of figures (cycles, messages, lost, duplicates,
integrity failures, seconds to converge) and exits 1 if anything was lost.
usage: crash-loop.py PEERNODE CYCLES node|relay [SEED]
"""
import json
import os
import random
import shutil
import signal
import sqlite3
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchnodes import JSONNode, free_port, pump, ready  # noqa: E402

PEERNODE, CYCLES, MODE = os.path.abspath(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
SEED = int(sys.argv[4]) if len(sys.argv) > 4 else int(time.time())
rng = random.Random(SEED)
# A victim lives this long (seconds) before SIGKILL: from before it is ready to well into traffic.
LIFE = (0.02, 1.2)
# One line to each poster every POST_INTERVAL seconds.
POST_INTERVAL = 0.004


def own_sequences(db_path, author_hex):
    """The victim's view after a kill: integrity and the sequences it holds of `author_hex`."""
    db = sqlite3.connect(db_path)
    try:
        integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
        rows = db.execute("SELECT e.sequence FROM envelopes e JOIN authors a ON e.author = a.rowid WHERE a.key = ?",
                          (bytes.fromhex(author_hex),)).fetchall()
        return integrity, {r[0] for r in rows}
    finally:
        db.close()


def node_command(data, *extra):
    return [PEERNODE, "--data-dir", data, "--json", "--no-discovery", *extra]


def relay_command(data, port):
    return [PEERNODE, "relay", "--data-dir", data, "--no-discovery", "--listen", f"127.0.0.1:{port}"]


def own_reported(node, me):
    """Texts (and sequences) of the node's own messages it reported as stored."""
    return {e["text"]: e["seq"] for e in node.events if e.get("type") == "message" and e.get("author") == me}


root = tempfile.mkdtemp(prefix="peernode-crash-")
figures = {"mode": MODE, "cycles": CYCLES, "seed": SEED, "integrity_failures": 0, "lost_after_kill": 0}
try:
    posters, victim_dir = [], os.path.join(root, "victim")
    if MODE == "node":
        b = JSONNode(node_command(os.path.join(root, "b"), "--nick", "bob", "--listen", "127.0.0.1:0"))
        b_url = "ws://" + ready(b)["listen"]
        posters = [b]
        start_victim = lambda: JSONNode(node_command(victim_dir, "--nick", "alice", "--peer", b_url))
    elif MODE == "relay":
        port = free_port()
        start_victim = lambda: JSONNode(relay_command(victim_dir, port))
        posters = [JSONNode(node_command(os.path.join(root, n), "--nick", n, "--listen", "127.0.0.1:0",
                                         "--peer", f"ws://127.0.0.1:{port}")) for n in ("ann", "cid")]
        for p in posters:
            ready(p)
    else:
        sys.exit("usage: crash-loop.py PEERNODE CYCLES node|relay [SEED]")
    ids = {id(p): next(e for e in p.events if e.get("type") == "ready")["id"] for p in posters}

    victim_id = None
    victim_reported = {}  # text -> seq, over every life of the victim (node mode)
    counter = 0
    for cycle in range(CYCLES):
        victim = start_victim()
        life = rng.uniform(*LIFE)
        born = time.monotonic()
        while time.monotonic() - born < life:
            counter += 1
            for p in posters:
                p.post(f"{p.proc.pid}-{counter}")
            if MODE == "node":
                victim.post(f"victim-{cycle}-{counter}")
            time.sleep(POST_INTERVAL)
            for n in posters + [victim]:
                n.read()
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait()
        victim.read()
        if MODE == "node":
            for e in victim.events:
                if e.get("type") == "ready":
                    victim_id = e["id"]
            if victim_id is None:
                continue  # killed before it said who it is: nothing was reported
            life_reported = own_reported(victim, victim_id)
            victim_reported.update(life_reported)
            integrity, held = own_sequences(os.path.join(victim_dir, "peernode.db"), victim_id)
            figures["lost_after_kill"] += sum(1 for seq in life_reported.values() if seq not in held)
        else:
            db = os.path.join(victim_dir, "peernode.db")
            integrity = "ok"
            if os.path.exists(db):
                held = sqlite3.connect(db)
                integrity = held.execute("PRAGMA integrity_check").fetchone()[0]
                # A poster told "stored" by the relay may count on it: the relay holds it on disk from then on,
                # whatever kills it (it commits what it forwards every few ms, and answers after). The posters
                # also link to each other (the relay passes their addresses on): their receipts are not the relay's.
                for p in posters:
                    p.read()
                told = {e["id"] for p in posters for e in p.events if e.get("type") == "receipt" and e.get("state") == "stored"
                        and e.get("by") not in ids.values()}
                figures["stored_told"] = len(told)
                figures["lost_after_kill"] += sum(1 for i in told
                                                  if held.execute("SELECT 1 FROM envelopes WHERE id = ?", (bytes.fromhex(i),)).fetchone() is None)
                held.close()
        if integrity != "ok":
            figures["integrity_failures"] += 1

    # The last life: everyone converges.
    converge_start = time.monotonic()
    victim = start_victim()
    if MODE == "node":
        ready(victim)
        victim.post("final from the victim")
        posters[0].post("final from bob")
        pump([victim] + posters, lambda: any(e.get("text") == "final from the victim" for e in posters[0].events)
             and any(e.get("text") == "final from bob" for e in victim.events), 120)
        figures["converge_s"] = round(time.monotonic() - converge_start, 2)
        b = posters[0]
        seen_by_b = [e["text"] for e in b.events if e.get("type") == "message" and e.get("author") == victim_id]
        figures["victim_messages_reported"] = len(victim_reported)
        figures["lost_at_peer"] = sum(1 for t in victim_reported if t not in seen_by_b)
        figures["duplicates_at_peer"] = len(seen_by_b) - len(set(seen_by_b))
        b_reported = own_reported(b, ids[id(b)])
        victim.stop()
        integrity, held = own_sequences(os.path.join(victim_dir, "peernode.db"), ids[id(b)])
        figures["peer_messages_reported"] = len(b_reported)
        figures["lost_at_victim"] = sum(1 for seq in b_reported.values() if seq not in held)
        if integrity != "ok":
            figures["integrity_failures"] += 1
    else:
        ann, cid = posters
        ann.post("final from ann")
        cid.post("final from cid")
        pump(posters, lambda: any(e.get("text") == "final from ann" for e in cid.events)
             and any(e.get("text") == "final from cid" for e in ann.events), 120)
        figures["converge_s"] = round(time.monotonic() - converge_start, 2)
        lost = duplicates = reported = 0
        for sender, receiver in ((ann, cid), (cid, ann)):
            sent = own_reported(sender, ids[id(sender)])
            seen = [e["text"] for e in receiver.events if e.get("type") == "message" and e.get("author") == ids[id(sender)]]
            reported += len(sent)
            lost += sum(1 for t in sent if t not in seen)
            duplicates += len(seen) - len(set(seen))
        figures["messages_reported"] = reported
        figures["lost_at_peer"] = lost
        figures["duplicates_at_peer"] = duplicates
        victim.stop()
        db = sqlite3.connect(os.path.join(victim_dir, "peernode.db"))
        if db.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
            figures["integrity_failures"] += 1
        figures["relay_envelopes"] = db.execute("SELECT count(*) FROM envelopes").fetchone()[0]
        db.close()
    for p in posters:
        p.stop()
finally:
    shutil.rmtree(root, ignore_errors=True)

print(json.dumps(figures))
bad = figures["integrity_failures"] + figures["lost_after_kill"] + figures.get("lost_at_peer", 0) \
    + figures.get("lost_at_victim", 0) + figures.get("duplicates_at_peer", 0)
sys.exit(1 if bad else 0)
