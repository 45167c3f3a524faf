"""Shared by the benchmark scripts: peernode processes in --json mode whose
output is read only by `pump`, on the caller's thread (one select() over all
of them), so the harness adds no thread hand-offs of its own."""
import hashlib
import json
import os
import select
import signal
import socket
import statistics
import subprocess
import time

# A process started from the Swift test runner inherits a signal mask with
# SIGHUP, SIGINT, SIGTERM and others blocked, and passes it on to its own
# children: `terminate()` would then never reach them. Start from none blocked.
signal.pthread_sigmask(signal.SIG_SETMASK, [])


class JSONNode:
    """A process printing one JSON object per line; each event gets `_t`,
    the monotonic time at which its line could first be read."""

    def __init__(self, command, env=None):
        self.events, self.buffer = [], b""
        self.proc = subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=open(os.environ["BENCH_STDERR"], "a") if os.environ.get("BENCH_STDERR") else subprocess.DEVNULL)
        os.set_blocking(self.proc.stdout.fileno(), False)

    def read(self):
        stamp = time.monotonic()
        try:
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
        except BlockingIOError:
            return
        self.buffer += chunk
        *lines, self.buffer = self.buffer.split(b"\n")
        for line in lines:
            event = json.loads(line)
            event["_t"] = stamp
            self.events.append(event)

    def post(self, text):
        self.proc.stdin.write((text + "\n").encode())
        self.proc.stdin.flush()

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def pump(nodes, done, timeout=60):
    """Reads every node's output until `done()` holds; TimeoutError after `timeout` s."""
    deadline = time.monotonic() + timeout
    by_fd = {n.proc.stdout.fileno(): n for n in nodes}
    while not done():
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no matching event")
        readable, _, _ = select.select(list(by_fd), [], [], left)
        for fd in readable:
            by_fd[fd].read()


def _status_kib(pid, field):
    """A field of /proc/PID/status in KiB (VmRSS, VmHWM), 0 once the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except FileNotFoundError:
        pass
    return 0


def rss_kib(pid):
    """Resident memory of a process, in KiB (0 once it is gone)."""
    return _status_kib(pid, "VmRSS")


def peak_rss_kib(pid):
    """The highest resident memory the process has had so far (VmHWM), in KiB (0 once it is gone)."""
    return _status_kib(pid, "VmHWM")


def start_node(peernode, data, nick, *peers, listen="127.0.0.1:0"):
    """A node in --json mode on loopback with no discovery, data in `data`,
    linked by --peer to each of `peers` (ws:// URLs): returned once it is
    ready, its URL in `.listen`."""
    args = [peernode, "--data-dir", data, "--listen", listen, "--no-discovery", "--json", "--nick", nick]
    for p in peers:
        args += ["--peer", p]
    n = JSONNode(args)
    n.listen = "ws://" + ready(n)["listen"]
    return n


def ready(node, timeout=20):
    """Waits for the node's `ready` event and returns it."""
    pump([node], lambda: any(e.get("type") == "ready" for e in node.events), timeout)
    return next(e for e in node.events if e.get("type") == "ready")


def blake2b(path):
    """BLAKE2b-256 of a file's bytes, as the node names a file (hex)."""
    h = hashlib.blake2b(digest_size=32)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def free_port():
    """A TCP port free on loopback now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RefusedPorts:
    """New connections to these loopback ports refused (iptables, root) while
    in use: nodes that listen on them cannot be dialled by one another, so
    a relay they all dial is their only path. `refused` is False (and
    nothing changed) where iptables cannot be used."""

    def __init__(self, ports):
        self.ports = ports
        self.refused = os.geteuid() == 0 and all(self._rule("-I", p) for p in ports)

    @staticmethod
    def _rule(action, port):
        return subprocess.run(["iptables", action, "OUTPUT", "-p", "tcp", "-d", "127.0.0.1", "--dport", str(port), "--syn", "-j", "REJECT"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0

    def __enter__(self):
        return self

    def __exit__(self, *_):
        for p in self.ports:
            self._rule("-D", p)


def fetch_file(nodes, n, number, into, timeout=600):
    """`/get NUMBER INTO` on `n`, pumping `nodes`: seconds until its
    file_done (a file_failed ends the benchmark, named)."""
    os.makedirs(into, exist_ok=True)
    mark = len(n.events)
    started = time.monotonic()
    n.post(f"/get {number} {into}")
    pump(nodes, lambda: any(e.get("type") in ("file_done", "file_failed") for e in n.events[mark:]), timeout)
    end = next(e for e in n.events[mark:] if e.get("type") in ("file_done", "file_failed"))
    if end["type"] != "file_done":
        raise SystemExit("FAILED: " + str(end))
    return end["_t"] - started


def p50_p99(sent, got):
    """Milliseconds from `sent[text]` to `got[text]` (monotonic seconds): median and 99th percentile."""
    values = sorted((got[t] - sent[t]) * 1000 for t in sent)
    return statistics.median(values), values[max(0, int(len(values) * 0.99) - 1)]


def timed_posts(nodes, sender, receiver, count, label, gap=0.02, timeout=60):
    """The sender posts `count` texts `gap` s apart; returns the p50 and p99
    milliseconds until the receiver reports each (TimeoutError if it does not)."""
    sent = {}
    for i in range(count):
        text = f"{label} {i}"
        sent[text] = time.monotonic()
        sender.post(text)
        end = time.monotonic() + gap
        while time.monotonic() < end:
            for n in nodes:
                n.read()
            time.sleep(0.001)
    pump(nodes, lambda: all(any(e.get("text") == t for e in receiver.events) for t in sent), timeout)
    return p50_p99(sent, {e["text"]: e["_t"] for e in receiver.events if e.get("text") in sent})


def _stat_cpu(text):
    """User plus system CPU seconds from the text of a /proc stat file."""
    fields = text.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """User plus system CPU seconds the process has used so far (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        return _stat_cpu(f.read())


def machine_seconds():
    """The machine's CPU seconds so far from /proc/stat, all cores summed: busy (user, nice, system,
    irq, softirq), idle and iowait. Their change over a transfer says whether its cores were full,
    waiting on the disk, or idle."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:8]]
    tick = os.sysconf("SC_CLK_TCK")
    user, nice, system, idle, iowait, irq, softirq = fields
    return {"busy": (user + nice + system + irq + softirq) / tick, "idle": idle / tick, "iowait": iowait / tick}


def thread_cpu_seconds(pid):
    """(name, CPU seconds: user plus system) of each thread of the process so far, by thread id.
    The node's event loop is a thread named like the program; Dispatch's workers have other names."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                text = f.read()
        except OSError:
            continue  # the thread ended between the listing and the read
        out[int(tid)] = (text.split("(", 1)[1].rsplit(")", 1)[0], _stat_cpu(text))
    return out


def warm_memory(mib):
    """Touches `mib` MiB of fresh memory twice, freeing it after each: (GB/s the first time, GB/s again).

    This machine is a virtual machine that reports the guest's free pages to its host (virtio-balloon
    free page reporting), and the host backs a page again only when it is next touched: memory unused
    for a while (between two sittings, say) is some three times slower to touch the first time
    (docs/SCALE.md, "Memory the host has let go"). A benchmark that writes gigabytes into the page
    cache would time that instead of itself, in its first run only. Freed, the pages touched here
    stay backed for minutes and are what the kernel hands out next."""
    import mmap
    block, size, rates = bytes(1 << 20), mib << 20, []
    for _ in range(2):
        area = mmap.mmap(-1, size)
        started = time.monotonic()
        for offset in range(0, size, 1 << 20):
            area[offset:offset + (1 << 20)] = block
        rates.append(size / (time.monotonic() - started) / 1e9)
        area.close()
    return rates


def available_mib():
    """MemAvailable from /proc/meminfo, in MiB."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) >> 10
    return 0


def start_relay(peernode, data, *extra):
    """A relay on loopback with no discovery, its per-address limit lifted
    (every benchmark peer comes from 127.0.0.1); returns the process, its
    listen address and the seconds until it logged "relay ready". Its log
    goes to a file in its data directory: a pipe nobody reads would fill
    and stop it."""
    started = time.monotonic()
    os.makedirs(data, mode=0o700, exist_ok=True)
    log = os.path.join(data, "bench.log")
    relay = subprocess.Popen([peernode, "relay", "--data-dir", data, "--listen", "127.0.0.1:0", "--no-discovery",
                              "--max-per-address", "1000", "--log-format", "json", *extra],
                             stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    with open(log) as f:
        pending = ""
        while time.monotonic() - started < 120 and relay.poll() is None:
            pending += f.read()
            *lines, pending = pending.split("\n")
            for line in lines:
                event = json.loads(line)
                if event.get("msg") == "relay ready":
                    return relay, event["listen"], time.monotonic() - started
            time.sleep(0.005)
    relay.kill()
    raise RuntimeError(f"the relay did not start (its log: {log})")
