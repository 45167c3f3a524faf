#!/usr/bin/env python3
"""Files from several sources on an emulated LAN (issue 39): what a second,
third and fourth holder of a file bring when each sends no faster than a
machine's link allows.

On loopback (`bench-files.py`) one source already keeps both cores busy, so
four sources cannot be faster there. Here each node is its own network
namespace on the lab's bridge (`scripts/netlab`), and each source's link
sends at most RATE megabits a second (a token bucket, `tc tbf`, on its
interface: a laptop on Wi-Fi, a machine on a 100 Mbit port). The receiver's
link is not limited. Measured: one source to a receiver, then a fresh
receiver linked to four holders, each `/get` to its `file_done` (fetched,
every chunk checked, opened and written), in MB/s and as a ratio.

Usage: bench-files-lan.py PEERNODE [SIZE_MIB] [RATE_MBIT]   (default 64, 200)
Needs root (network namespaces), as the lab tests do.
"""
import os
import shutil
import subprocess
import sys
import tempfile

from benchnodes import JSONNode, fetch_file, pump, ready

PEERNODE = os.path.abspath(sys.argv[1])
SIZE = int(sys.argv[2] if len(sys.argv) > 2 else 64) << 20
RATE_MBIT = int(sys.argv[3] if len(sys.argv) > 3 else 200)
NETLAB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "netlab")
LAB = {**os.environ, "NETLAB_PREFIX": "pnfiles"}
SOURCES = 4
RECEIVER_HOST = SOURCES + 1


def lab(*args):
    subprocess.run([NETLAB, *map(str, args)], env=LAB, check=True, stdout=subprocess.DEVNULL)


def node(host, name, work, *peers):
    """A node in lab host `host`, listening on its own address; returned once ready."""
    args = [NETLAB, "exec", str(host), PEERNODE, "--data-dir", os.path.join(work, name),
            "--listen", f"10.213.0.{host}:0", "--no-discovery", "--json", "--nick", name]
    for p in peers:
        args += ["--peer", p]
    n = JSONNode(args, env=LAB)
    n.listen = "ws://" + ready(n)["listen"]
    return n


def linked(n, count, timeout=30):
    pump([n], lambda: sum(1 for e in n.events if e.get("type") == "peer_up") >= count, timeout)


def offer(n, timeout=120):
    pump([n], lambda: any(e.get("type") == "file" for e in n.events), timeout)
    return next(e for e in n.events if e.get("type") == "file")["n"]


def get(nodes, n, work, timeout=600):
    """`/get` of the file offered to `n`; seconds until its file_done."""
    return fetch_file(nodes, n, offer(n), os.path.join(work, "into-" + str(id(n))), timeout)


def mb(seconds):
    return SIZE / seconds / 1e6


def main():
    if os.geteuid() != 0:
        sys.exit("bench-files-lan: NOT MEASURED: needs root for the namespace lab (network namespaces, tc)")
    work = tempfile.mkdtemp(prefix="bench-files-lan-")
    nodes = []
    try:
        lab("up", RECEIVER_HOST)
        for host in range(1, SOURCES + 1):
            # The source's link: RATE Mbit/s out, a queue of at most 50 ms.
            subprocess.run([NETLAB, "exec", str(host), "tc", "qdisc", "replace", "dev", "veth0", "root", "tbf",
                            "rate", f"{RATE_MBIT}mbit", "burst", "256k", "latency", "50ms"], env=LAB, check=True)
        path = os.path.join(work, "source.bin")
        with open(path, "wb") as f:
            for _ in range(SIZE >> 20):
                f.write(os.urandom(1 << 20))
        limit = RATE_MBIT / 8
        print(f"== files on an emulated LAN: {SIZE >> 20} MiB, each source's link at most {RATE_MBIT} Mbit/s ({limit:.0f} MB/s), the receiver's not limited")

        a = node(1, "a", work)
        r1 = node(RECEIVER_HOST, "r1", work, a.listen)
        nodes += [a, r1]
        linked(r1, 1)
        a.post("/send " + path)
        pump([a], lambda: any(e.get("type") == "file" for e in a.events), 600)
        os.sync()
        one = get(nodes, r1, work)
        print(f"one source to one receiver:   {mb(one):6.1f} MB/s   ({mb(one) / limit:.2f}× one source's link)")

        # The first receiver goes (it holds the file, in the receiver's own namespace: a fifth source, unlimited).
        r1.stop()
        nodes.remove(r1)
        # Three more holders, each fetching it first; then a fresh receiver linked to all four.
        holders = [node(h, f"h{h}", work, a.listen) for h in range(2, SOURCES + 1)]
        nodes += holders
        for h in holders:
            linked(h, 1)
            get(nodes, h, work)
        r4 = node(RECEIVER_HOST, "r4", work, a.listen, *[h.listen for h in holders])
        nodes.append(r4)
        linked(r4, SOURCES)
        os.sync()
        four = get(nodes, r4, work)
        print(f"four sources to one receiver: {mb(four):6.1f} MB/s   ({one / four:.2f}× one source; {mb(four) / limit:.2f}× one source's link; "
              f"aim (issue 39) four sources faster than one: {'met' if four < one else 'NOT met'})")
    finally:
        for n in nodes:
            n.stop()
        lab("down")
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
