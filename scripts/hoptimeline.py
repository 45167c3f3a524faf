"""Where one hop's time goes between the processes, from the kernel's own
scheduler events (issue 41: "every microsecond of the hop accounted for").

The nodes' /stats say what each turn spends inside; what they cannot see is
the time between processes: the harness's write waking A, A's send waking
B, B's line waking the harness, and whether each woken one found a core.
`perf sched record` logs every wake-up and every switch with its CPU, so a
post is followed from the harness's write to its read of B's line:

  harness → A on a core   from the wake-up of A (our write) to A running
  A, until it wakes B     A's turn up to its socket write (read, sign, seal, send)
  B on a core             from that wake-up to B running
  B, until it wakes us    B's turn up to its line (read, open, decode, verify, show)
  harness on a core       from B's line to our thread running to read it

Needs root and `perf` (Debian's linux-perf, which `make bench` installs);
without them `record` says why and returns None: the figure is then missing,
not made up. The posts timed here are not the aim's (perf's tracing costs a
little at each switch); they say where the aim's time goes.
"""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections import Counter

SEGMENTS = ("harness → A on a core", "A, until it wakes B", "B on a core", "B, until it wakes us", "harness on a core")
_LINE = re.compile(r"\s*(.+?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+sched:(\w+):\s+(.*)")


def unavailable():
    """Why the timeline cannot be taken here, or None."""
    if os.geteuid() != 0:
        return "needs root for the kernel's scheduler events"
    if shutil.which("perf") is None:
        return "needs perf (Debian's linux-perf)"
    return None


def record(run):
    """Runs `run()` (which posts and waits, on this thread) under `perf sched
    record`; returns the events' text, or None with the reason printed."""
    why = unavailable()
    if why:
        print(f"hop timeline: not taken ({why})")
        return None
    folder = tempfile.mkdtemp(prefix="peernode-hop-timeline-")
    data = os.path.join(folder, "sched.data")
    try:
        perf = subprocess.Popen(["perf", "sched", "record", "-o", data], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        # perf says nothing when it is ready; its file appears once it has opened the events.
        for _ in range(200):
            if os.path.exists(data) and os.path.getsize(data) > 0:
                break
            if perf.poll() is not None:
                print(f"hop timeline: not taken (perf stopped: {perf.stderr.read().decode(errors='replace').strip()[:200]})")
                return None
            time.sleep(0.01)
        run()
        perf.send_signal(signal.SIGINT)
        perf.wait(timeout=60)
        script = subprocess.run(["perf", "script", "-i", data, "-F", "comm,tid,cpu,time,event,trace"],
                                capture_output=True, text=True)
        return script.stdout
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _threads(pid):
    try:
        return {int(t) for t in os.listdir(f"/proc/{pid}/task")}
    except FileNotFoundError:
        return set()


def segments(text, harness, a_pid, b_pid):
    """Each post's five segments in seconds ({name: [values]}) and where each
    woken process ran (Counter), from `perf script`'s text. `harness` is the
    thread that writes and reads; A's and B's threads are found as the ones
    our write wakes and the ones A wakes."""
    a_threads, b_threads = _threads(a_pid), _threads(b_pid)
    events = []
    for line in text.splitlines():
        m = _LINE.match(line)
        if m:
            comm, tid, cpu, t, kind, rest = m.groups()
            events.append((float(t), int(cpu), int(tid), kind, rest))
    woken_by = Counter()
    for t, cpu, tid, kind, rest in events:
        if kind == "sched_waking":
            woken = int(re.search(r" pid=(\d+)", rest).group(1))
            woken_by[(tid, woken)] += 1
    a = next((w for (by, w), _ in woken_by.most_common() if by == harness and w in a_threads), None)
    b = next((w for (by, w), _ in woken_by.most_common() if by == a and w in b_threads), None)
    out = {name: [] for name in SEGMENTS}
    where = Counter()
    if a is None or b is None:
        return out, where
    post = None
    for t, cpu, tid, kind, rest in events:
        if kind == "sched_waking":
            woken = int(re.search(r" pid=(\d+)", rest).group(1))
            if tid == harness and woken == a:
                post = {"write": t, "harness_cpu": cpu}
            elif post and tid == a and woken == b and "a_sent" not in post and "a_runs" in post:
                post.update(a_sent=t, a_cpu=cpu)
            elif post and tid == b and woken == harness and "b_line" not in post and "b_runs" in post:
                post.update(b_line=t, b_cpu=cpu)
        elif kind == "sched_switch" and post:
            running = int(re.search(r"next_pid=(\d+)", rest).group(1))
            if running == a and "a_runs" not in post:
                post.update(a_runs=t, a_ran_on=cpu)
            elif running == b and "a_sent" in post and "b_runs" not in post:
                post.update(b_runs=t, b_ran_on=cpu)
            elif running == harness and "b_line" in post:
                for name, (start, end) in zip(SEGMENTS, (("write", "a_runs"), ("a_runs", "a_sent"), ("a_sent", "b_runs"),
                                                         ("b_runs", "b_line"), ("b_line", None))):
                    out[name].append((t if end is None else post[end]) - post[start])
                where["A on the harness's core" if post["a_ran_on"] == post["harness_cpu"] else "A on the other"] += 1
                where["B on A's core" if post["b_ran_on"] == post["a_cpu"] else "B on the other"] += 1
                where["harness on B's core" if cpu == post["b_cpu"] else "harness on the other"] += 1
                post = None
    return out, where
