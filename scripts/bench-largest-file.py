#!/usr/bin/env python3
"""The largest file a person may send (issue 39's limit, 4 GiB), end to end
on loopback: /send's rate and the sender's peak memory; /get's rate, the
receiver's peak memory, and how long a chat line from the sender takes to
show at the receiver meanwhile; then a second receiver killed at 90 % and
started again: how soon it is ready (the chunks it holds are read back).

Usage: bench-largest-file.py PEERNODE [SIZE_MIB]   (default 4095; needs
about 4 × SIZE of free disk beside PEERNODE's build folder)
Not part of `make bench` (minutes, and gigabytes of disk); run by hand.
"""
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchnodes import peak_rss_kib, pump, start_node  # noqa: E402

PEERNODE = os.path.abspath(sys.argv[1])
SIZE = int(sys.argv[2] if len(sys.argv) > 2 else 4095) << 20
WORK = tempfile.mkdtemp(prefix="bench-largest-", dir=os.path.dirname(os.path.dirname(PEERNODE)))


def start(name, *peers):
    return start_node(PEERNODE, os.path.join(WORK, name), name, *peers)


def peak_mb(pid):
    return peak_rss_kib(pid) // 1024


def offered(n):
    pump([n], lambda: any(e.get("type") == "file" for e in n.events), 900)
    return next(e for e in n.events if e.get("type") == "file")["n"]


def main():
    path = os.path.join(WORK, "source.bin")
    block = os.urandom(1 << 20)
    with open(path, "wb") as f:
        for i in range(SIZE >> 20):
            f.write(block[:-8] + i.to_bytes(8, "big"))
    print(f"== the largest file: {SIZE >> 20} MiB on loopback")
    a = start("a")
    b = start("b", a.listen)
    pump([b], lambda: any(e.get("type") == "peer_up" for e in b.events), 30)
    t = time.monotonic()
    a.post("/send " + path)
    number = offered(b)
    pump([a], lambda: any(e.get("type") == "file" for e in a.events), 900)
    print(f"/send: {SIZE / (time.monotonic() - t) / 1e6:.0f} MB/s; the sender's peak RSS {peak_mb(a.proc.pid)} MB")
    into = os.path.join(WORK, "into-b")
    os.makedirs(into)
    os.sync()
    t = time.monotonic()
    b.post(f"/get {number} {into}")
    shown = []
    while not any(e.get("type") in ("file_done", "file_failed") for e in b.events):
        mark, sent = len(b.events), time.monotonic()
        a.post(f"ping {sent}")
        try:
            pump([a, b], lambda: any(e.get("type") == "message" and e.get("text", "").startswith("ping") for e in b.events[mark:]), 60)
        except TimeoutError:
            pass
        shown.append(time.monotonic() - sent)
        time.sleep(0.5)
    took = time.monotonic() - t
    end = next(e for e in b.events if e.get("type") in ("file_done", "file_failed"))
    shown.sort()
    print(f"/get: {SIZE / took / 1e6:.0f} MB/s ({end['type']}); the receiver's peak RSS {peak_mb(b.proc.pid)} MB; "
          f"a chat line meanwhile: median {shown[len(shown) // 2] * 1000:.0f} ms, worst {shown[-1] * 1000:.0f} ms over {len(shown)}")
    # A second receiver, killed at 90 % and started again.
    c = start("c", a.listen)
    pump([c], lambda: any(e.get("type") == "peer_up" for e in c.events), 30)
    number = offered(c)
    into = os.path.join(WORK, "into-c")
    os.makedirs(into)
    c.post(f"/get {number} {into}")
    pump([a, b, c], lambda: any(e.get("type") == "file_progress" and e["bytes"] > int(e["of"]) * 0.9 for e in c.events), 900)
    c.stop()
    os.sync()
    t = time.monotonic()
    again = start("c")
    print(f"killed at 90 % and started again: ready in {(time.monotonic() - t) * 1000:.0f} ms (the chunks held are read back on a worker)")
    for n in (a, b, again):
        n.stop()
    shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
