#!/usr/bin/env python3
"""Kill -9 loop for a file being fetched: B fetches a file from A and is
killed with SIGKILL at random moments, CYCLES times, then started again on
the same data directory; the fetch goes on by itself at each start (no
`/get` typed again). At the end B must hold the file whole: exactly one
file in the folder it was asked to save into, the file A sent (its
BLAKE2b), no temporary file left beside it, and B's database must pass
PRAGMA integrity_check after every kill.

Prints one JSON line (cycles, chunks fetched per run, seconds to finish,
what the folder held) and exits 1 on any failure.
usage: file-crash-loop.py PEERNODE CYCLES [SIZE_MIB] [SEED]
"""
import json
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchnodes import blake2b, pump, start_node  # noqa: E402

PEERNODE, CYCLES = os.path.abspath(sys.argv[1]), int(sys.argv[2])
SIZE = (int(sys.argv[3]) if len(sys.argv) > 3 else 64) << 20
SEED = int(sys.argv[4]) if len(sys.argv) > 4 else int(time.time())
rng = random.Random(SEED)
# A victim lives this long (seconds) before SIGKILL: from its start to well into the transfer.
LIFE = (0.05, 0.5)



def main():
    work = tempfile.mkdtemp(prefix="file-crash-loop-")
    failures = []
    try:
        source = os.path.join(work, "backup.img")
        with open(source, "wb") as f:
            for _ in range(SIZE >> 20):
                f.write(rng.randbytes(1 << 20))
        want = blake2b(source)
        into = os.path.join(work, "into")
        os.makedirs(into)
        a = start_node(PEERNODE, os.path.join(work, "a"), "alice")
        b_dir = os.path.join(work, "b")
        b = start_node(PEERNODE, b_dir, "bob", a.listen)
        a.post("/send " + source)
        pump([a, b], lambda: any(e.get("type") == "file" for e in b.events), 120)
        n = next(e for e in b.events if e.get("type") == "file")["n"]
        b.post(f"/get {n} {into}")
        fetched = []
        done = None
        for cycle in range(CYCLES):
            life = rng.uniform(*LIFE)
            try:
                pump([a, b], lambda: any(e.get("type") in ("file_done", "file_failed") for e in b.events), life)
            except TimeoutError:
                pass
            done = next((e for e in b.events if e.get("type") in ("file_done", "file_failed")), None)
            if done:
                break
            b.stop()
            fetched.append(max([int(e.get("bytes", 0)) for e in b.events if e.get("type") == "file_progress"] or [0]))
            check = sqlite3.connect(os.path.join(b_dir, "peernode.db")).execute("PRAGMA integrity_check").fetchone()[0]
            if check != "ok":
                failures.append(f"cycle {cycle}: integrity_check says {check}")
            b = start_node(PEERNODE, b_dir, "bob", a.listen)
        started = time.monotonic()
        if not done:
            try:
                pump([a, b], lambda: any(e.get("type") in ("file_done", "file_failed") for e in b.events), 180)
            except TimeoutError:
                failures.append("no file_done within 180 s of the last start")
            done = next((e for e in b.events if e.get("type") in ("file_done", "file_failed")), None)
        finish = time.monotonic() - started
        held = sorted(os.listdir(into))
        if not done or done.get("type") != "file_done":
            failures.append(f"the fetch ended {done}")
        if held != ["backup.img"]:
            failures.append(f"the folder holds {held}, not backup.img alone")
        elif blake2b(os.path.join(into, "backup.img")) != want:
            failures.append("the file saved is not the file sent")
        if done and done.get("hash") and done["hash"] != want:
            failures.append(f"file_done names hash {done['hash']}, the file's is {want}")
        a.stop()
        b.stop()
        print(json.dumps({"cycles": len(fetched), "seed": SEED, "size_mib": SIZE >> 20, "bytes_at_each_kill": fetched,
                          "seconds_after_last_start": round(finish, 2), "folder": held, "failures": failures}))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
