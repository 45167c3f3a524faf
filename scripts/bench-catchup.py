#!/usr/bin/env python3
"""Catch-up measured at the receiver alone.

A fresh node (the receiver, a real `peernode --json`) is linked to by a lean
sender (`peernode-bench catch-up-send`) that signed N envelopes before it
linked and answers the node's requests from memory: no storage, no
verification, no replication logic. So the machine's cores are left to the
receiver, and the figure shows what its pipeline (Noise, decode, verify on
both cores, store, JSON out) can do, which `bench-gossip.py`'s catch-up
between two full nodes on two cores cannot.

Prints envelopes/s against the one-core verify ceiling (issue 15's aim:
≥ 1.5×), measured just before and just after each run and averaged: this
machine's speed drifts by a third within minutes, so one measurement at the
start could be far from the run's. Also the cores the receiver used (its
CPU seconds over the wall seconds of the run, from /proc).
usage: bench-catchup.py PEERNODE BENCH_BINARY [N] [RUNS]
"""
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

from benchnodes import JSONNode, cpu_seconds, ready

PEERNODE, BENCH = sys.argv[1], sys.argv[2]
N = int(sys.argv[3]) if len(sys.argv) > 3 else 100_000
RUNS = int(sys.argv[4]) if len(sys.argv) > 4 else 3
# The line each caught-up message prints (the bodies the sender signs).
MARK = b'"text":"catch-up '
def verify_ceiling():
    return float(subprocess.run([BENCH, "verify-ceiling"], check=True, capture_output=True, text=True).stdout)


def run_once(root, index):
    before = verify_ceiling()
    receiver = JSONNode([PEERNODE, "--data-dir", os.path.join(root, f"receiver{index}"), "--json",
                         "--listen", "127.0.0.1:0", "--no-discovery"])
    address = ready(receiver)["listen"]
    sender = subprocess.Popen([BENCH, "catch-up-send", address, str(N)], stderr=subprocess.PIPE)
    try:
        line = sender.stderr.readline()
        if line.strip() != b"linked":
            raise RuntimeError(f"the lean sender did not link: {line!r}")
        start = time.monotonic()
        cpu_start, sender_cpu_start = cpu_seconds(receiver.proc.pid), cpu_seconds(sender.pid)
        # Counting marks in raw chunks: the reader must take as little of the
        # machine as it can from the node it measures.
        fd, got, tail = receiver.proc.stdout.fileno(), 0, b""
        deadline = start + 600
        while got < N and time.monotonic() < deadline:
            readable, _, _ = select.select([fd], [], [], 1)
            if not readable:
                continue
            try:
                chunk = os.read(fd, 1 << 20)
            except BlockingIOError:
                continue
            if not chunk:
                break
            data = tail + chunk
            got += data.count(MARK)
            tail = data[-(len(MARK) - 1):]
        seconds = time.monotonic() - start
        cpu = cpu_seconds(receiver.proc.pid) - cpu_start
        cores = cpu / seconds
        sender_cores = (cpu_seconds(sender.pid) - sender_cpu_start) / seconds
    finally:
        sender.kill()
        sender.wait()
        receiver.stop()
    after = verify_ceiling()
    ceiling = (before + after) / 2
    rate = got / seconds
    print(f"run {index + 1}: {got} of {N} envelopes in {seconds:.2f} s = {rate:,.0f} envelopes/s = "
          f"{rate / ceiling:.2f}x the one-core verify ceiling; receiver used {cores:.2f} cores "
          f"({cpu / max(1, got) * 1e6:.0f} µs of CPU an envelope; one verify alone {1e6 / ceiling:.0f} µs, and version 4 runs need one a run), the lean sender {sender_cores:.2f}; "
          f"ceiling {before:,.0f}/s before, {after:,.0f}/s after")
    return rate / ceiling, rate, got


root = tempfile.mkdtemp(prefix="peernode-bench-catchup-")
try:
    print(f"machine: {os.cpu_count()} cores; the one-core verify ceiling (raw libsodium) is measured around each run")
    results = [run_once(root, i) for i in range(RUNS)]
    ratio, median = (sorted(r[k] for r in results)[len(results) // 2] for k in (0, 1))
    complete = all(got == N for _, _, got in results)
    print(f"receiver-only catch-up: median of {RUNS} runs {median:,.0f} envelopes/s, {ratio:.2f}x the one-core verify ceiling of its run; "
          f"aim (issue 15) ≥ 1.5x: {'met' if ratio >= 1.5 and complete else 'NOT met'}"
          f"{'' if complete else ' (a run did not receive every envelope)'}")
finally:
    shutil.rmtree(root, ignore_errors=True)
