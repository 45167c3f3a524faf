#!/usr/bin/env python3
"""Presence on five nodes (issue 44's proof): n1…n5 with --max-links 1, each
linked to the one before it by --peer: a line, n1 and n5 four hops apart, so
what one says reaches most others only through other nodes. (Found by
multicast instead, one link each settles into pairs, which a change reaches
only as links move, some 30 s later: docs/DECISIONS.md, "Presence".)
Checks: every node's /who shows all five online within a few seconds; /away
on n3 and n5's /quit with a reason come to show in every other node's /who;
no presence text is in any node's files (it is never stored). Prints what it checked; exits
non-zero on the first failure.
usage: presence_five.py PEERNODE WORKDIR
"""
import os
import sys
import time

from json_peer import JsonPeer

PEERNODE, WORK = sys.argv[1], sys.argv[2]
COUNT = 5
# A change crosses the line in well under a second; it is given a minute on a loaded machine.
SETTLE = 60


def fail(why):
    sys.stderr.write(f"FAILED: {why}\n")
    sys.exit(1)


nodes = []
for i in range(COUNT):
    args = [PEERNODE, "--data-dir", os.path.join(WORK, f"n{i + 1}"), "--json", "--no-discovery", "--nick", f"n{i + 1}",
            "--listen", "127.0.0.1:0", "--max-links", "1"]
    if nodes:
        args += ["--peer", nodes[-1].url]
    n = JsonPeer(args, fail)
    ready = n.wait(lambda e: e.get("type") == "ready", f"n{i + 1} ready")
    n.url, n.id, n.name = "ws://" + ready["listen"], ready["id"], f"n{i + 1}"
    nodes.append(n)
ids = {n.id for n in nodes}


def who(n):
    """n's /who rows, by id."""
    return {e["id"]: e for e in n.rows("/who", "member")}


def until(what, test, timeout=20):
    deadline = time.monotonic() + timeout
    while True:
        result = test()
        if result:
            return result
        if time.monotonic() > deadline:
            fail(what)


started = time.monotonic()
for n in nodes:
    def everyone_online(n=n):
        rows = who(n)
        return set(rows) == ids and all(r["presence"] == "online" for r in rows.values())
    until(f"{n.name}'s /who never showed all five online: {who(n)}", everyone_online)
print(f"every node's /who shows all five online (within {time.monotonic() - started:.1f} s of the last start)")

# n3 goes away and n5 quits, one after the other; every other node's /who must come to say so
# (polled: what it holds, whatever order the beacons took).
nodes[2].say("/away in a meeting")
nodes[4].say("/quit gone for the day")
for n in nodes[:2] + nodes[3:4]:
    def told(n=n):
        rows = who(n)
        away, gone = rows.get(nodes[2].id, {}), rows.get(nodes[4].id, {})
        return (away.get("presence") == "away" and away.get("reason") == "in a meeting"
                and gone.get("presence") == "gone" and gone.get("reason") == "gone for the day")
    until(f"{n.name}'s /who never showed n3 away and n5 gone: {who(n)}", told, timeout=SETTLE)
nodes[4].process.wait(timeout=20)
print("/away on n3 and /quit on n5 (with its reason) are seen in every other node's /who")

for n in nodes[:4]:
    n.stop()
for i in range(COUNT):
    folder = os.path.join(WORK, f"n{i + 1}")
    for root, _, files in os.walk(folder):
        for name in files:
            with open(os.path.join(root, name), "rb") as f:
                data = f.read()
            if b"gone for the day" in data or b"in a meeting" in data:
                fail(f"presence text is stored in {os.path.join(root, name)}")
print("no presence text in any node's files")
print("all checked")
