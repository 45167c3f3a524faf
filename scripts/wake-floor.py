#!/usr/bin/env python3
"""The least round trip between two idle processes on this machine: one
byte over a socketpair, one every 0.2 s, so each side sleeps between (as
two nodes do between /peers probes), against the same back to back. Prints
"COLD HOT" (microseconds, the least of each). A probe between idle nodes
pays two wake-ups that a ping-pong under load does not (docs/SCALE.md).
usage: wake-floor.py
"""
import os
import socket
import time

a, b = socket.socketpair()
pid = os.fork()
if pid == 0:
    a.close()
    while True:
        data = b.recv(64)
        if not data:
            os._exit(0)
        b.send(data)
b.close()


def least(count, gap):
    best = float("inf")
    for _ in range(count):
        if gap:
            time.sleep(gap)
        start = time.perf_counter()
        a.send(b"x")
        a.recv(64)
        best = min(best, time.perf_counter() - start)
    return best * 1e6


hot = least(2000, 0)
cold = least(25, 0.2)
a.close()
os.waitpid(pid, 0)
print(f"{cold:.0f} {hot:.0f}")
