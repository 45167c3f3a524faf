#!/usr/bin/env python3
"""Files on loopback (issue 39): one source to one receiver, beside curl
fetching the same file from Debian's nginx and beside cat to /dev/null (the
disk floor), as ratios; four sources to one receiver; the CPU per MB at the
sender and the receiver; a relay serving 8 receivers at once, its memory.

Usage: bench-files.py PEERNODE [SIZE_MIB]   (default 256)
The ceiling of each stage is measured in the same run by
`peernode-bench files-ceiling` (beside PEERNODE), and the figures are
printed beside it.
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from benchnodes import RefusedPorts, available_mib, cpu_seconds, fetch_file, free_port, machine_seconds, peak_rss_kib, pump, start_node, start_relay, thread_cpu_seconds, warm_memory


PEERNODE = sys.argv[1]
SIZE = int(sys.argv[2] if len(sys.argv) > 2 else 256) << 20
WORK = tempfile.mkdtemp(prefix="bench-files-", dir=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(PEERNODE))), ""))


# The memory touched before the transfers: WARM_FACTOR times the file's size and WARM_EXTRA_MIB more (the run
# keeps about 14 copies of a file's size in the page cache at once, and the swarm and relay phases' files),
# leaving at least WARM_SPARE_MIB of the machine's available memory untouched.
WARM_FACTOR, WARM_EXTRA_MIB, WARM_SPARE_MIB = 14, 2048, 2048


def node(name, *peers):
    return start_node(PEERNODE, os.path.join(WORK, name), name, *peers)


def linked(n, count=1, timeout=30):
    pump([n], lambda: sum(1 for e in n.events if e.get("type") == "peer_up") >= count, timeout)


def offer(n, timeout=120):
    pump([n], lambda: any(e.get("type") == "file" for e in n.events), timeout)
    return next(e for e in n.events if e.get("type") == "file")


def get(nodes, n, number, timeout=600):
    """`/get` on `n`; seconds until its file_done."""
    return fetch_file(nodes, n, number, os.path.join(WORK, "into-" + str(id(n))), timeout)


def mb(seconds):
    return SIZE / seconds / 1e6


def disk_floor(path):
    best = None
    for _ in range(3):
        t = time.monotonic()
        subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)
        best = min(best or 1e9, time.monotonic() - t)
    return best


def http_fetch(path):
    """curl fetching `path` from nginx on loopback into a file: the best of 3 runs, seconds."""
    if not shutil.which("nginx") or not shutil.which("curl"):
        print("nginx or curl missing: `make bench` installs them (scripts/setup-system.sh bench)")
        return None
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    prefix = os.path.join(WORK, "nginx")
    os.makedirs(prefix + "/logs", exist_ok=True)
    conf = os.path.join(prefix, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""worker_processes 1; daemon off; pid {prefix}/nginx.pid; error_log {prefix}/logs/error.log;
events {{ worker_connections 64; }}
http {{ access_log off; sendfile on; tcp_nopush on;
  client_body_temp_path {prefix}; proxy_temp_path {prefix}; fastcgi_temp_path {prefix}; uwsgi_temp_path {prefix}; scgi_temp_path {prefix};
  server {{ listen 127.0.0.1:{port}; root {os.path.dirname(path)}; }} }}
""")
    server = subprocess.Popen(["nginx", "-c", conf, "-p", prefix], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), 0.1).close()
                break
            except OSError:
                time.sleep(0.02)
        best = None
        out = os.path.join(WORK, "curl.out")
        for _ in range(3):
            t = time.monotonic()
            subprocess.run(["curl", "-sf", "-o", out, f"http://127.0.0.1:{port}/{os.path.basename(path)}"], check=True)
            best = min(best or 1e9, time.monotonic() - t)
            if os.path.getsize(out) != SIZE:
                raise SystemExit("FAILED: curl fetched %d bytes, not %d" % (os.path.getsize(out), SIZE))
            os.remove(out)
        return best
    finally:
        server.terminate()
        server.wait()


def main():
    path = os.path.join(WORK, "source.bin")
    with open(path, "wb") as f:
        for _ in range(SIZE >> 20):
            f.write(os.urandom(1 << 20))
    # nginx's workers run as another user: they must be able to read it.
    os.chmod(WORK, 0o755)
    os.chmod(path, 0o644)
    print(f"== files on loopback: {SIZE >> 20} MiB of random bytes")
    # What the run writes into the page cache (the file, each node's chunks and saved copies, the swarm and
    # relay phases), touched once first, and how fast that was printed: memory this VM's host took back is
    # slow to touch, and the first run of a sitting measured four sources at 0.55-0.88x one source (1.08-1.17x
    # in the runs after). The touch alone does not hold such a run to the later figures (0.63x after it, once,
    # the first touch at 0.40 GB/s): a slow first touch here says the run's figures are the machine's moment.
    warm = max(0, min(WARM_FACTOR * (SIZE >> 20) + WARM_EXTRA_MIB, available_mib() - WARM_SPARE_MIB))
    if warm:
        first, again = warm_memory(warm)
        print(f"memory: {warm:,} MiB touched before the transfers, {first:.2f} GB/s the first time, {again:.2f} GB/s again "
              f"(memory the host took back is slower to touch: docs/SCALE.md, \"Memory the host has let go\")")
    bench = os.path.join(os.path.dirname(os.path.abspath(PEERNODE)), "peernode-bench")
    ceiling = subprocess.run([bench, "files-ceiling", WORK], capture_output=True, text=True, check=True).stdout
    print(ceiling.rstrip().rsplit("\n", 1)[0])
    model = ceiling.split("ceiling-receiver-ms ")[1].split()
    receiver_ms, sender_ms = float(model[0]), float(model[2])
    pass_less = {"chunks outside the link's AEAD": float(model[4]), "no plaintext hash": float(model[6]), "both": float(model[8])}
    floor = disk_floor(path)
    print(f"cat to /dev/null (the disk floor): {mb(floor):8.0f} MB/s")
    http = http_fetch(path)
    if http:
        print(f"curl from nginx on loopback:       {mb(http):8.0f} MB/s")

    a = node("a")
    b = node("b", a.listen)
    linked(b)
    started = time.monotonic()
    a.post("/send " + path)
    n = offer(b)["n"]
    pump([a, b], lambda: any(e.get("type") == "file" for e in a.events), 600)
    print(f"/send (read, seal, tree):          {mb(time.monotonic() - started):8.0f} MB/s at the sender")
    # Each measured transfer starts with nothing dirty in the page cache: the kernel's writeback of an
    # earlier phase's files would otherwise take a core in the middle of this one (four sources measured
    # 0.50× one source in a run that had 1.5 GB to write back, 0.95–1.05× after a sync).
    os.sync()
    cpu_a, cpu_b = cpu_seconds(a.proc.pid), cpu_seconds(b.proc.pid)
    threads_before = thread_cpu_seconds(b.proc.pid)
    one = get([a, b], b, n)
    used_a, used_b = cpu_seconds(a.proc.pid) - cpu_a, cpu_seconds(b.proc.pid) - cpu_b
    threads = {t: (name, s - threads_before.get(t, ("", 0))[1]) for t, (name, s) in thread_cpu_seconds(b.proc.pid).items()}
    print(f"one source to one receiver:        {mb(one):8.0f} MB/s   (to /get's file_done: fetched, checked, opened and written)")
    cpu_send, cpu_receive = used_a / (SIZE / 1e6) * 1000, used_b / (SIZE / 1e6) * 1000
    print(f"  CPU per MB: sender {cpu_send:.2f} ms (its ceiling's primitives {sender_ms:.2f} ms), receiver {cpu_receive:.2f} ms (primitives {receiver_ms:.2f} ms)")
    print(f"  the receiver spends {cpu_receive - receiver_ms:.2f} ms/MB beside its primitives; one core's ceiling is {1000 / receiver_ms:.0f} MB/s: {mb(one) / (1000 / receiver_ms):.2f}× of it")
    if http:
        print(f"  ratio to curl from nginx: {http / one:.4f}×   (aim ≥ 0.5×: nginx sends with sendfile and no per-byte work; the receiver's primitives alone allow {(1000 / receiver_ms) / mb(http):.4f}× on one core, both processes' primitives {(2000 / (receiver_ms + sender_ms)) / mb(http):.4f}× on both cores)")
    print(f"  cores busy: {(used_a + used_b) / one:.2f} of 2; the two processes spend {cpu_send + cpu_receive - receiver_ms - sender_ms:.2f} ms/MB beside their primitives")
    # Where the receiver's CPU went, by thread: its loop (link open, framing) and the files worker (leaf hash, writes, open, plain hash).
    loop_id = max((t for t, (name, _) in threads.items() if name == "peernode"), key=lambda t: threads[t][1], default=None)
    loop = threads[loop_id][1] if loop_id else 0
    others = sorted((s for t, (_, s) in threads.items() if t != loop_id), reverse=True)
    worker = others[0] if others else 0
    per = lambda s: s / (SIZE / 1e6) * 1000
    print(f"  by thread: the receiver's loop {per(loop):.2f} ms/MB ({loop / one:.2f} of a core), its busiest other thread (the files worker) {per(worker):.2f} ms/MB ({worker / one:.2f} of a core), the rest {per(sum(others) - worker):.2f}; the sender {cpu_send:.2f} ms/MB ({used_a / one:.2f} of a core)")
    print(f"  what both cores allow at the two processes' CPU per MB: {2000 / (cpu_send + cpu_receive):.0f} MB/s; at their primitives alone {2000 / (receiver_ms + sender_ms):.0f} MB/s")
    if http:
        print("  a pass less (a protocol decision, docs/SCALE.md \"Files\"), the two processes' primitives on both cores: "
              + ", ".join(f"{what} {2000 / ms:.0f} MB/s = {(2000 / ms) / mb(http):.2f}× curl" for what, ms in pass_less.items()))
    print(f"  ratio to the disk floor:  {floor / one:.4f}×   (aim ≥ 150 MB/s)")

    # Three more holders, then a receiver linked to all four.
    holders = [node(f"h{i}", a.listen) for i in range(3)]
    for h in holders:
        linked(h)
        get([a, b] + holders, h, offer(h)["n"])
    r = node("r", a.listen, *[h.listen for h in holders])
    linked(r, 4)
    os.sync()
    sources = [a] + holders
    before = {x.proc.pid: cpu_seconds(x.proc.pid) for x in sources + [r]}
    threads_before, machine_before = thread_cpu_seconds(r.proc.pid), machine_seconds()
    four = get([a, b, r] + holders, r, offer(r)["n"])
    machine = {k: v - machine_before[k] for k, v in machine_seconds().items()}
    print(f"four sources to one receiver:      {mb(four):8.0f} MB/s   ({one / four:.2f}× one source; aim > 1×)")
    # Where it went, as for one source: a run far under one source shows here whether the cores were
    # full (and with what), waiting on the disk, or idle.
    spent = {x.proc.pid: cpu_seconds(x.proc.pid) - before[x.proc.pid] for x in sources + [r]}
    threads = sorted(((name, s - threads_before.get(t, ("", 0))[1]) for t, (name, s) in thread_cpu_seconds(r.proc.pid).items()),
                     key=lambda x: -x[1])
    print(f"  CPU per MB: the four sources {per(sum(spent[x.proc.pid] for x in sources)):.2f} ms in all "
          f"({', '.join(f'{per(spent[x.proc.pid]):.2f}' for x in sources)}), the receiver {per(spent[r.proc.pid]):.2f} ms "
          f"(its busiest threads {', '.join(f'{per(s):.2f}' for _, s in threads[:2])}); the machine's cores over the transfer: "
          f"busy {machine['busy'] / four:.2f}, waiting on the disk {machine['iowait'] / four:.2f}, idle {machine['idle'] / four:.2f} of 2")

    # A room whose members all fetch a file at once, from its author and from each other (a full mesh): asks
    # for chunks on their way wait for them, and no ring of such waits may close (docs/DECISIONS.md).
    swarm_size = 64 << 20
    swarm_path = os.path.join(WORK, "swarm.bin")
    with open(swarm_path, "wb") as f:
        f.write(os.urandom(swarm_size))
    author = node("s-author")
    fetchers = []
    for i in range(5):
        fetchers.append(node(f"s{i}", author.listen, *[x.listen for x in fetchers]))
    everyone = [author] + fetchers
    for x in fetchers:
        linked(x, 5, 60)
    author.post("/send " + swarm_path)
    numbers = [offer(x)["n"] for x in fetchers]
    os.sync()
    marks = [len(x.events) for x in fetchers]
    started = time.monotonic()
    for x, number in zip(fetchers, numbers):
        into = os.path.join(WORK, "swarm-into-" + x.proc.args[2].split("/")[-1])
        os.makedirs(into, exist_ok=True)
        x.post(f"/get {number} {into}")
    ended = lambda x, m: next((e for e in x.events[m:] if e.get("type") in ("file_done", "file_failed")), None)
    pump(everyone, lambda: all(ended(x, m) for x, m in zip(fetchers, marks)), 600)
    ends = [ended(x, m) for x, m in zip(fetchers, marks)]
    waited = waited_out = 0
    for x in fetchers:
        mark = len(x.events)
        x.post("/stats")
        pump(everyone, lambda: any(e.get("type") == "stats" for e in x.events[mark:]), 30)
        stats = next(e for e in x.events[mark:] if e.get("type") == "stats")
        waited, waited_out = waited + stats.get("file_asks_waited", 0), waited_out + stats.get("file_asks_waited_out", 0)
    failed = sum(1 for e in ends if e["type"] != "file_done")
    print(f"five fetching {swarm_size >> 20} MiB at once from its author and each other: all done in {max(e['_t'] for e in ends) - started:.2f} s"
          f" ({5 * swarm_size / (max(e['_t'] for e in ends) - started) / 1e6:.0f} MB/s in all); asks that waited for a chunk on its way {waited}, "
          f"of them answered none after WaitingAsks.patience {waited_out}" + (f"; {failed} FAILED" if failed else ""))
    for x in everyone:
        x.stop()

    # A relay between the sender and 8 receivers that fetch at once. Linked to one relay they would learn each
    # other's addresses from it and link directly: their ports are refused (root) so that the relay serves it all.
    relay, listen, _ = start_relay(PEERNODE, os.path.join(WORK, "relay"), "--max-files", "4G")
    with RefusedPorts([free_port() for _ in range(9)]) as refused:
        ports = iter(refused.ports)
        s = start_node(PEERNODE, os.path.join(WORK, "s"), "s", "ws://" + listen, listen=f"127.0.0.1:{next(ports)}")
        linked(s)
        receivers = [start_node(PEERNODE, os.path.join(WORK, f"c{i}"), f"c{i}", "ws://" + listen, listen=f"127.0.0.1:{next(ports)}")
                     for i in range(8)]
        for c in receivers:
            linked(c)
        s.post("/send " + path)
        numbers = [offer(c)["n"] for c in receivers]
        os.sync()
        started = time.monotonic()
        for c, number in zip(receivers, numbers):
            out = os.path.join(WORK, "relayed-" + c.proc.args[2].split("/")[-1])
            os.makedirs(out, exist_ok=True)
            c.post(f"/get {number} {out}")
        everyone = [s] + receivers
        peak = 0
        while not all(any(e.get("type") in ("file_done", "file_failed") for e in c.events) for c in receivers):
            try:
                pump(everyone, lambda: False, 0.2)
            except TimeoutError:
                pass
            peak = max(peak, peak_rss_kib(relay.pid))
            if time.monotonic() - started > 900:
                raise SystemExit("FAILED: the relay's receivers did not finish in 900 s")
        took = time.monotonic() - started
        failed = [c for c in receivers if any(e.get("type") == "file_failed" for e in c.events)]
        direct = sum(1 for c in receivers for e in c.events if e.get("type") == "peer_up" and e.get("addr", "").split(":")[-1] != listen.split(":")[-1])
        print(f"a relay serving 8 receivers at once: {8 * SIZE / took / 1e6:.0f} MB/s in all; its memory at most {peak / 1024:.0f} MB (aim < 64 MB)"
              + (f"; {len(failed)} failed" if failed else "")
              + ("; the relay their only path (their ports refused)" if refused.refused and direct == 0
                 else f"; NOT through the relay alone: {direct} direct links (not root: iptables could not refuse their ports)"))
        # A picture and a larger file fetched through the relay alone as soon as their offers are seen: the relay
        # fetches each from the sender while it serves it (asks for chunks on their way wait for them).
        for size, what in ((200_000, "a 200 KB picture"), (8 << 20, "8 MiB")):
            small = os.path.join(WORK, f"small-{size}.bin")
            with open(small, "wb") as f:
                f.write(os.urandom(size))
            mark = len(receivers[0].events)
            s.post("/send " + small)
            pump(everyone, lambda: any(e.get("type") == "file" for e in receivers[0].events[mark:]), 60)
            number = next(e for e in receivers[0].events[mark:] if e.get("type") == "file")["n"]
            took = fetch_file(everyone, receivers[0], number, os.path.join(WORK, f"small-out-{size}"))
            print(f"{what} through a relay alone, from /get to file_done: {took * 1000:.0f} ms")
    relay.kill()
    for n in [a, b, r, s] + holders + receivers:
        n.stop()
    shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
