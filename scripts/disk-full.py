#!/usr/bin/env python3
"""Disk full, and a data directory that turns read-only, under a running node
(needs root: the data directory is a small tmpfs mounted for the test).

A (data on the tmpfs) is linked to B. The tmpfs is filled to the last byte;
A posts (refused, with an error that says the disk is full) and B posts
(A cannot store it yet). Space comes back: A posts again, B's message
arrives, nothing is lost, the database passes PRAGMA integrity_check, and A
never crashed. Then a read-only data directory at start: a clear error.
Prints what it checked; exits 1 with the reason on the first failure.
usage: disk-full.py PEERNODE
"""
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchnodes import JSONNode, cpu_seconds, pump, start_relay  # noqa: E402

PEERNODE = os.path.abspath(sys.argv[1])
# Room for the key, a fresh database and its WAL; small enough to fill at once.
TMPFS_SIZE = "4m"
# What a store could not keep is asked for again at once once there is room (Replicator.answeredNotKept);
# well under the 30 s pull timeout it once waited for.
RECOVERY_SECONDS = 10


def fail(why):
    print(f"FAILED: {why}")
    for n in nodes:
        print("--- last events of", n.proc.pid, [{k: v for k, v in e.items() if k != "_t"} for e in n.events[-6:]])
    sys.exit(1)


def wait_for(nodes, match, what, timeout=30):
    try:
        pump(nodes, match, timeout)
    except TimeoutError:
        fail(f"timed out waiting for {what}")


def idle(nodes, seconds):
    """Reads the nodes' output for `seconds`, waiting for nothing in particular."""
    try:
        pump(nodes, lambda: False, seconds)
    except TimeoutError:
        pass


def said_twice(lines):
    """A line that occurs more than once in `lines` (None if none does)."""
    return next((line for line in set(lines) if lines.count(line) > 1), None)


def text_seen(node, text):
    return any(e.get("type") == "message" and e.get("text") == text for e in node.events)


def errors(node):
    return [e["error"] for e in node.events if e.get("type") == "error"]


def fill(path):
    """Writes until the filesystem refuses (ENOSPC), down to the last byte."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    for size in (65536, 4096, 1):
        try:
            while True:
                os.write(fd, b"\0" * size)
        except OSError:
            pass
    os.close(fd)


if os.geteuid() != 0:
    fail("needs root, to mount a tmpfs (CI runs as root)")
root = tempfile.mkdtemp(prefix="peernode-diskfull-")
mount = os.path.join(root, "small")
os.makedirs(mount)
subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE}", "tmpfs", mount], check=True)
mounts = [mount]
nodes = []
relays = []
try:
    data = os.path.join(mount, "a")
    b = JSONNode([PEERNODE, "--data-dir", os.path.join(root, "b"), "--json", "--no-discovery", "--nick", "bob",
                  "--listen", "127.0.0.1:0"])
    nodes.append(b)
    wait_for([b], lambda: any(e.get("type") == "ready" for e in b.events), "B ready")
    url = "ws://" + next(e for e in b.events if e.get("type") == "ready")["listen"]
    a = JSONNode([PEERNODE, "--data-dir", data, "--json", "--no-discovery", "--nick", "alice", "--peer", url])
    nodes.append(a)
    wait_for(nodes, lambda: any(e.get("type") == "peer_up" for e in a.events), "A linked to B")
    a.post("before the disk filled")
    wait_for(nodes, lambda: text_seen(b, "before the disk filled"), "B to get A's first message")

    # Full: A's post is refused with a clear reason; B's message cannot be stored yet.
    filler = os.path.join(mount, "filler")
    fill(filler)
    # The error that answers the post is the one looked for: something of
    # B's arriving just as the disk filled may be refused (and said) first.
    before = len(errors(a))
    a.post("while full")
    refusal = lambda: next((e for e in errors(a)[before:] if "full" in e.lower()), None)
    try:
        pump(nodes, refusal, 30)
    except TimeoutError:
        fail(f"no error from A that says the disk is full; its errors since the post: {errors(a)[before:]!r}")
    reason = refusal()
    print(f"a post on a full disk is refused: {reason!r}")
    b.post("sent while A is full")
    try:
        pump(nodes, lambda: text_seen(a, "sent while A is full"), 2)
        fail("A reported a message it could not have stored")
    except TimeoutError:
        pass
    if a.proc.poll() is not None:
        fail(f"A exited on a full disk (status {a.proc.returncode})")
    print("B's message is not reported by A while its disk is full, and A keeps running")

    # Space again: A resumes by itself.
    os.remove(filler)
    a.post("after space came back")
    wait_for(nodes, lambda: text_seen(b, "after space came back"), "B to get A's post after space came back")
    wait_for(nodes, lambda: text_seen(a, "sent while A is full"), "A to get B's message once it has space", 60)
    if text_seen(b, "while full"):
        fail("the refused post was sent after all")
    print("space back: A posts again and gets B's message from while it was full")

    a.proc.stdin.close()
    a.proc.wait(timeout=20)
    if a.proc.returncode != 0:
        fail(f"A did not exit cleanly at the end (status {a.proc.returncode})")
    db = sqlite3.connect(os.path.join(data, "peernode.db"))
    integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
    db.close()
    if integrity != "ok":
        fail(f"integrity_check: {integrity}")
    print("the database passes integrity_check; A exits 0")

    # Read-only at start (a filesystem with files open for writing cannot be
    # remounted read-only, so this is checked with A stopped): a clear error.
    subprocess.run(["mount", "-o", "remount,ro", mount], check=True)
    for command in ([PEERNODE, "--data-dir", data, "--no-discovery"],
                    [PEERNODE, "relay", "--data-dir", data, "--no-discovery", "--listen", "127.0.0.1:0"]):
        r = subprocess.run(command, input=b"must not be posted\n", capture_output=True, timeout=20)
        said = r.stderr.decode(errors="replace").strip()
        if r.returncode != 1 or "read-only" not in said.lower():
            fail(f"{command[1]} on a read-only data directory: status {r.returncode}, said {said!r}")
    print(f"a read-only data directory is refused at start: {said!r}")
    subprocess.run(["mount", "-o", "remount,rw", mount], check=True)

    # A file fetched onto the full disk: the fetch stops at the first chunk it cannot keep, said once
    # (file_failed, with why), and A goes on (it once asked again for every chunk as fast as the link,
    # each failure said, a core busy on each side and the chat stalled).
    a = JSONNode([PEERNODE, "--data-dir", data, "--json", "--no-discovery", "--nick", "alice", "--peer", url])
    nodes.append(a)
    wait_for(nodes, lambda: any(e.get("type") == "peer_up" for e in a.events), "A linked to B again")
    big = os.path.join(root, "big.bin")
    with open(big, "wb") as f:
        f.write(os.urandom(3 * int(TMPFS_SIZE.rstrip("m")) << 20))
    b.post("/send " + big)
    wait_for(nodes, lambda: any(e.get("type") == "file" for e in a.events), "A to see B's file offered")
    number = next(e for e in a.events if e.get("type") == "file")["n"]
    into = os.path.join(root, "into")
    os.makedirs(into)
    mark = len(a.events)
    a.post(f"/get {number} {into}")
    wait_for(nodes, lambda: any(e.get("type") in ("file_failed", "file_done") for e in a.events[mark:]), "the /get onto a full disk to end")
    end = next(e for e in a.events[mark:] if e.get("type") in ("file_failed", "file_done"))
    if end["type"] != "file_failed" or "space" not in end.get("reason", ""):
        fail(f"a /get onto a full disk did not fail saying so: {end}")
    used = cpu_seconds(a.proc.pid)
    idle(nodes, 2)
    used = cpu_seconds(a.proc.pid) - used
    said = [e for e in a.events[mark:] if e.get("type") in ("error", "file_failed") and "chunk" in str(e)]
    if len(said) > 2:
        fail(f"the failed chunk was said {len(said)} times: {said[:4]}")
    repeated = said_twice(errors(a)[-20:])
    if repeated:
        fail(f"the same failure said again within seconds: {repeated!r}")
    if used > 0.5:
        fail(f"A used {used:.2f} s of CPU in the 2 s after the fetch stopped (asking again for what it cannot keep?)")
    mark = len(a.events)
    a.post("/help")
    wait_for(nodes, lambda: len(a.events) > mark, "A to answer a command after the failed fetch")
    print(f"a /get onto a full disk stops, said once: {end['reason']!r}; A idles ({used:.2f} s of CPU in 2 s) and answers")

    # As a person runs it (text, not --json) on the full disk while B talks: each failure is said once,
    # on its output, not again on stderr beside it, nor again with each batch that comes (the store, a
    # peer's clock and a receipt failed in turn, a line each per batch, on stderr under the prompt).
    a.stop()
    fill(os.path.join(mount, "filler-2"))
    out, err = (open(os.path.join(root, name), "w+") for name in ("text-out", "text-err"))
    person = subprocess.Popen([PEERNODE, "--data-dir", data, "--no-discovery", "--nick", "alice", "--peer", url],
                              stdin=subprocess.PIPE, stdout=out, stderr=err)
    wait_for(nodes, lambda: sum(e.get("type") == "peer_up" for e in b.events) >= 3, "A (as text) linked to B")
    for i in range(6):
        b.post(f"while A is full, {i}")
        idle(nodes, 0.5)
    person.stdin.write(b"a post on the full disk\n")
    person.stdin.flush()
    idle(nodes, 3)
    person.stdin.close()
    person.wait(timeout=20)
    out.seek(0)
    err.seek(0)
    text = out.read().splitlines()
    shown = [line for line in text if line.startswith("error: ")]
    # Who it is and on which network, whatever the disk says (the greeting was once all replaced by one bare error).
    if not any(line.startswith("peernode: alice·") for line in text):
        fail(f"A (as text) did not greet on a full disk: {text[:4]}")
    logged = err.read().splitlines()
    if not any("full" in line for line in shown):
        fail(f"A (as text) said nothing of the full disk: {shown}")
    twice = said_twice(shown)
    if twice:
        fail(f"A (as text) said the same failure {shown.count(twice)} times: {twice!r}; all it said: {shown}")
    again = [line for line in logged if any(line.removeprefix("peernode: ") in said for said in shown)]
    if again:
        fail(f"A (as text) also said on stderr what its output says: {again[:3]}")
    flood = said_twice(logged)
    if flood:
        fail(f"A (as text) said on stderr {logged.count(flood)} times: {flood!r}")
    print(f"as text on a full disk: {len(shown)} error lines, each once; stderr {len(logged)} lines (what its stop could not record), none of them again")

    # A relay on the full disk. Its COMMITs run on a thread of their own (Store.insertCommittingElsewhere):
    # one that fails there is not answered as stored, and what it held comes again once there is room.
    relay_mount = os.path.join(root, "small-relay")
    os.makedirs(relay_mount)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE}", "tmpfs", relay_mount], check=True)
    mounts.append(relay_mount)
    relay, relay_listen, _ = start_relay(PEERNODE, os.path.join(relay_mount, "relay"))
    relays.append(relay)
    relay_url = "ws://" + relay_listen
    ann = JSONNode([PEERNODE, "--data-dir", os.path.join(root, "ann"), "--json", "--no-discovery", "--nick", "ann", "--peer", relay_url])
    cid = JSONNode([PEERNODE, "--data-dir", os.path.join(root, "cid"), "--json", "--no-discovery", "--nick", "cid", "--peer", relay_url])
    nodes += [ann, cid]
    wait_for(nodes, lambda: all(any(e.get("type") == "peer_up" for e in n.events) for n in (ann, cid)), "ann and cid linked to the relay")
    ann.post("before the relay filled")
    wait_for(nodes, lambda: text_seen(cid, "before the relay filled"), "cid to get ann's first message through the relay")
    def envelopes(database):
        """(author, sequence) of every envelope a database holds (read while its node runs: WAL)."""
        db = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
        try:
            return set(db.execute("SELECT a.key, e.sequence FROM envelopes e JOIN authors a ON a.rowid = e.author"))
        finally:
            db.close()
    ann_db, relay_db = os.path.join(root, "ann", "peernode.db"), os.path.join(relay_mount, "relay", "peernode.db")
    fill(os.path.join(relay_mount, "filler"))
    sent = [f"to a full relay, {i}" for i in range(5)]
    for text in sent:
        ann.post(text)
    idle(nodes, 2)
    if relay.poll() is not None:
        fail(f"the relay exited on a full disk (status {relay.returncode})")
    missing = len(envelopes(ann_db) - envelopes(relay_db))
    if missing == 0:
        fail("the relay stored everything on a full disk: this part checks nothing")
    print(f"a relay on a full disk: {missing} of ann's envelopes not stored while it is full")
    waited = time.monotonic()
    os.remove(os.path.join(relay_mount, "filler"))
    sent.append("after the relay has room")
    ann.post(sent[-1])
    wait_for(nodes, lambda: all(text_seen(cid, text) for text in sent), f"cid to get all of ann's messages through the relay within {RECOVERY_SECONDS} s of space coming back",
             RECOVERY_SECONDS)

    try:
        pump(nodes, lambda: envelopes(ann_db) <= envelopes(relay_db), max(0.1, RECOVERY_SECONDS - (time.monotonic() - waited)))
    except TimeoutError:
        fail(f"the relay misses {len(envelopes(ann_db) - envelopes(relay_db))} of ann's envelopes {RECOVERY_SECONDS} s after space came back")
    relay.terminate()
    if relay.wait(timeout=20) != 0:
        fail(f"the relay did not stop cleanly after its full disk (status {relay.returncode})")
    db = sqlite3.connect(relay_db)
    integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
    db.close()
    if integrity != "ok":
        fail(f"the relay's integrity_check: {integrity}")
    print(f"a relay on a full disk keeps running; once there is room it holds all {len(envelopes(ann_db))} of ann's envelopes "
          f"({time.monotonic() - waited:.1f} s after), integrity_check ok")
finally:
    for n in nodes:
        if n.proc.poll() is None:
            n.stop()
    for r in relays:
        if r.poll() is None:
            r.kill()
            r.wait()
    for m in mounts:
        subprocess.run(["umount", m])
    shutil.rmtree(root, ignore_errors=True)
print("disk full and read-only: no crash, nothing lost")
