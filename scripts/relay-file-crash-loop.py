#!/usr/bin/env python3
"""Kill -9 loop for a relay fetching a file handed to it: alice, linked to
a relay, offers a file of SIZE MiB; the relay is handed it and fetches it,
and is killed with SIGKILL at a random point of each fetch, CYCLES times,
then started again on the same data directory and port. At the end the
relay must hold the file whole (its tree written) and its sealed chunks
must be alice's byte for byte, with nothing else left in its files folder
(no half-erased leftover), and after every kill the part the relay held
must have been erased at its start (`kept_part` counts the starts that
kept it). What it checks: a relay erases at start what it
was fetching (`Files.eraseUnfinished`), alice hands the file over again on
her next link (`RelayHandOver`), and nothing a kill leaves behind stays.

Prints one JSON line and exits 1 on any failure.
usage: relay-file-crash-loop.py PEERNODE CYCLES [SIZE_MIB] [SEED]
"""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchnodes import blake2b, free_port, pump, start_node  # noqa: E402

PEERNODE, CYCLES = os.path.abspath(sys.argv[1]), int(sys.argv[2])
SIZE_MIB = int(sys.argv[3]) if len(sys.argv) > 3 else 160
SEED = int(sys.argv[4]) if len(sys.argv) > 4 else int(time.time())
rng = random.Random(SEED)
work = tempfile.mkdtemp(prefix="relay-file-crash-loop-", dir="/var/tmp")
port = free_port()


def start_relay():
    return subprocess.Popen([PEERNODE, "relay", "--data-dir", os.path.join(work, "relay"), "--listen", f"127.0.0.1:{port}",
                             "--no-discovery", "--max-per-address", "1000", "--log-format", "json"],
                            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "relay.log"), "a"))



def idle(node, seconds):
    """Reads what alice says for `seconds` (her output must not fill its pipe)."""
    try:
        pump([node], lambda: False, seconds)
    except Exception:
        pass


def inode(path):
    """The file's inode number, or None when there is none by that name."""
    try:
        return os.stat(path).st_ino
    except FileNotFoundError:
        return None


relay = start_relay()
alice = None
result = {"seed": SEED, "cycles": CYCLES, "size_mib": SIZE_MIB, "kills": 0}
try:
    time.sleep(1)
    alice = start_node(PEERNODE, os.path.join(work, "alice"), "alice", f"ws://127.0.0.1:{port}")
    pump([alice], lambda: any(e.get("type") == "presence" and e.get("state") == "relay" for e in alice.events), 60)
    source = os.path.join(work, "source.bin")
    with open(source, "wb") as f:
        for _ in range(SIZE_MIB):
            f.write(os.urandom(1 << 20))
    alice.post("/send " + source)
    pump([alice], lambda: any(e.get("type") == "file" for e in alice.events), 300)
    root = next(e for e in alice.events if e.get("type") == "file")["root"]
    chunks = os.path.join(work, "relay", "files", root)
    for _ in range(CYCLES):
        # Somewhere in the fetch: once the relay's chunk file has reached a random size.
        target = rng.randint(1, max(1, SIZE_MIB * 3 // 4)) << 20
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not os.path.exists(chunks + ".tree"):
            if os.path.exists(chunks) and os.path.getsize(chunks) >= target:
                break
            time.sleep(0.005)
        if os.path.exists(chunks + ".tree"):
            break  # it finished before this kill: the loop ends here
        held = inode(chunks)
        relay.kill()
        relay.wait()
        result["kills"] += 1
        relay = start_relay()
        # The next kill is in the next fetch: first the part this one held must go (erased at start: moved
        # aside and overwritten, so a chunk file by that name again is a new file, fetched anew).
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and held is not None and inode(chunks) == held:
            time.sleep(0.005)
        if held is not None and inode(chunks) == held:
            result["kept_part"] = result.get("kept_part", 0) + 1
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not os.path.exists(chunks + ".tree"):
        idle(alice, 0.1)
    result["whole"] = os.path.exists(chunks + ".tree")
    result["identical"] = result["whole"] and blake2b(chunks) == blake2b(os.path.join(work, "alice", "files", root))
    result["left"] = sorted(n for n in os.listdir(os.path.join(work, "relay", "files")) if not n.startswith(root))
    ok = result["whole"] and result["identical"] and not result["left"] and result["kills"] > 0 and not result.get("kept_part")
finally:
    relay.kill()
    if alice:
        alice.proc.kill()
    shutil.rmtree(work, ignore_errors=True)
print(json.dumps(result))
sys.exit(0 if ok else 1)
