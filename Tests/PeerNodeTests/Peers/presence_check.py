#!/usr/bin/env python3
"""Presence across a relay (issue 44): alice and carol each linked only to a
relay named hub (so they are not each other's neighbours), bob linked to
carol. Checks: carol hears alice online, through the relay; the relay's
beacon says relay with its name, and the relay is no member of #general
(it posted nothing); /away reaches carol and her /who (one row per account,
presence and reason); /back too; /quit with a reason reaches carol as gone
and is not a message in anyone's history; a node two hops away (bob) hears it
too. Prints what it checked; exits non-zero on the first failure.
usage: presence_check.py PEERNODE WORKDIR
"""
import json
import os
import select
import subprocess
import sys
import time

from json_peer import JsonPeer

PEERNODE, WORK = sys.argv[1], sys.argv[2]


def fail(why):
    sys.stderr.write(f"FAILED: {why}\n")
    sys.exit(1)


def node(name, *peers):
    args = [PEERNODE, "--data-dir", os.path.join(WORK, name), "--json", "--no-discovery", "--nick", name, "--listen", "127.0.0.1:0"]
    for p in peers:
        args += ["--peer", p]
    n = JsonPeer(args, fail)
    ready = n.wait(lambda e: e.get("type") == "ready", f"{name} ready")
    n.url, n.id = "ws://" + ready["listen"], ready["id"]
    return n


# The relay, its log on a pipe (a few lines): its address from "relay ready".
relay = subprocess.Popen([PEERNODE, "relay", "--data-dir", os.path.join(WORK, "hub"), "--listen", "127.0.0.1:0", "--no-discovery",
                          "--nick", "hub", "--log-format", "json"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
listen, pending, deadline = None, b"", time.monotonic() + 30
while listen is None:
    left = deadline - time.monotonic()
    if left <= 0 or not select.select([relay.stderr], [], [], left)[0]:
        fail("the relay did not say it was ready")
    chunk = os.read(relay.stderr.fileno(), 65536)
    if not chunk:
        fail("the relay stopped before it was ready")
    *lines, pending = (pending + chunk).split(b"\n")
    for line in lines:
        event = json.loads(line)
        if event.get("msg") == "relay ready":
            listen = event["listen"]
hub = "ws://" + listen

carol = node("carol", hub)
# The relay's beacon comes with carol's link, before anyone else's.
carol.wait(lambda e: e.get("type") == "peer_up", "carol's link to the relay")
alice = node("alice", hub)
bob = node("bob", carol.url)


def presence_of(n, who, state, reason=None):
    return n.wait(lambda e: e.get("type") == "presence" and e.get("id") == who and e.get("state") == state
                  and (reason is None or e.get("reason") == reason), f"{who[:8]} {state}", timeout=20)


hub_beacon = carol.wait(lambda e: e.get("type") == "presence" and e.get("state") == "relay", "the relay's beacon", timeout=20)
if hub_beacon.get("nick") != "hub":
    fail(f"the relay's beacon does not carry its name: {hub_beacon}")
print("the relay's beacon says relay, named hub")
presence_of(carol, alice.id, "online")
print("carol hears alice online through the relay (they are not linked)")

alice.say("/away lunch, back at two")
presence_of(carol, alice.id, "away", "lunch, back at two")
presence_of(bob, alice.id, "away", "lunch, back at two")
print("/away reaches carol and bob (two hops, one of them the relay)")
alice.say("hello from alice")
carol.wait(lambda e: e.get("type") == "message" and e.get("text") == "hello from alice", "alice's message")
members = carol.rows("/who", "member")
rows = {m["id"]: m for m in members}
if alice.id not in rows or rows[alice.id].get("presence") != "away" or rows[alice.id].get("reason") != "lunch, back at two":
    fail(f"carol's /who does not show alice away: {members}")
if len(members) != len(rows):
    fail(f"an account has two rows in /who: {members}")
if hub_beacon["id"] in rows:
    fail("the relay is listed as a member of #general")
print("carol's /who: alice away (lunch, back at two); the relay is not a member")

# /who *: everyone online on the network, whatever room: bob too (he never posted where carol reads),
# the relay as a relay with its name, carol herself first.
online = carol.rows("/who *", "online")
by_id = {o["id"]: o for o in online}
if not online or online[0]["id"] != carol.id or online[0]["state"] != "you":
    fail(f"/who * does not start with carol: {online}")
if by_id.get(alice.id, {}).get("presence") != "away" or bob.id not in by_id:
    fail(f"/who * misses alice away or bob: {online}")
if by_id.get(hub_beacon["id"], {}).get("presence") != "relay" or by_id[hub_beacon["id"]].get("nick") != "hub":
    fail(f"/who * does not show the relay by its name: {online}")
print("/who *: everyone online on the network (carol, alice away, bob, the relay hub)")

alice.say("/back")
presence_of(carol, alice.id, "online")
print("/back reaches carol")

alice.say("/quit going home")
presence_of(carol, alice.id, "gone", "going home")
presence_of(bob, alice.id, "gone", "going home")
alice.process.wait(timeout=20)
print("/quit going home reaches carol and bob as gone, with the reason")
carol.say("/history")
head = carol.wait(lambda e: e.get("type") == "history", "the history")
rows = [json.dumps(carol.wait(lambda e: e.get("type") == "history_message", "a history row")) for _ in range(head.get("count", 0))]
if not any("hello from alice" in r for r in rows) or any("going home" in r or "has quit" in r for r in rows):
    fail(f"the history: {rows}")
print("the quit is not a message in the room's history")

for n in (carol, bob):
    n.stop()
relay.kill()
relay.wait()
print("all checked")
