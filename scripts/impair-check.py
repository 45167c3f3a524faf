#!/usr/bin/env python3
"""Checks the lab's delay and loss (scripts/netlab impair) on two hosts: the
round trip of a TCP echo grows by the delay set on one side, 100% loss lets
no datagram through, and `off` restores both. Needs root. Prints one JSON
line of figures; exits 1 on a failure."""
import json
import os
import subprocess
import sys

NETLAB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "netlab")
env = dict(os.environ, NETLAB_PREFIX="pnimpair")
ECHO = """
import socket, sys, time
mode = sys.argv[1]
if mode == "tcp-server":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("10.213.0.2", 9100)); s.listen()
    print("ready", flush=True)
    while True:
        c, _ = s.accept()
        while (d := c.recv(64)):
            c.sendall(d)
elif mode == "udp-server":
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("10.213.0.1", 9101)); s.settimeout(3)
    print("ready", flush=True)
    n = 0
    try:
        while True:
            s.recv(64); n += 1
    except socket.timeout:
        print(n, flush=True)
elif mode == "tcp-rtt":
    c = socket.create_connection(("10.213.0.2", 9100), timeout=10)
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    times = []
    for _ in range(5):
        t = time.monotonic(); c.sendall(b"x"); c.recv(1); times.append((time.monotonic() - t) * 1000)
    print(round(min(times), 1))
elif mode == "udp-send":
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for _ in range(50):
        s.sendto(b"x", ("10.213.0.1", 9101)); time.sleep(0.01)
"""


def lab(*args):
    return subprocess.run([NETLAB, *map(str, args)], env=env, check=True, capture_output=True, text=True).stdout.strip()


def on(host, mode):
    return ["ip", "netns", "exec", f"pnimpair{host}", sys.executable, "-c", ECHO, mode]


def rtt():
    return float(subprocess.run(on(1, "tcp-rtt"), capture_output=True, text=True, check=True, timeout=30).stdout)


def datagrams_through():
    # Loss is set on host 1: datagrams from host 2 to it are what it loses.
    server = subprocess.Popen(on(1, "udp-server"), stdout=subprocess.PIPE, text=True)
    server.stdout.readline()
    subprocess.run(on(2, "udp-send"), check=True, timeout=30)
    return int(server.stdout.readline())


if os.geteuid() != 0:
    print("FAILED: needs root for network namespaces (CI runs as root)")
    sys.exit(1)
figures = {}
server = None
try:
    lab("up", 2)
    server = subprocess.Popen(on(2, "tcp-server"), stdout=subprocess.PIPE, text=True)
    server.stdout.readline()
    figures["rtt_ms"] = rtt()
    figures["method"] = lab("impair", 1, 80, 0)
    figures["rtt_delayed_ms"] = rtt()
    lab("impair", 1, "off")
    figures["rtt_after_off_ms"] = rtt()
    lab("impair", 1, 0, 100)
    figures["datagrams_through_at_100pct_loss"] = datagrams_through()
    lab("impair", 1, 0, 30)
    figures["datagrams_through_at_30pct_loss"] = datagrams_through()
    lab("impair", 1, "off")
    figures["datagrams_through_after_off"] = datagrams_through()
finally:
    if server:
        server.kill()
    subprocess.run([NETLAB, "down"], env=env)
print(json.dumps(figures))
problems = []
if not 75 <= figures.get("rtt_delayed_ms", 0) <= 400:
    problems.append("80 ms of delay did not show in the round trip")
if figures.get("rtt_after_off_ms", 999) > 20:
    problems.append("the delay stayed after off")
if figures.get("datagrams_through_at_100pct_loss", 1) != 0:
    problems.append("datagrams got through at 100% loss")
if not 10 <= figures.get("datagrams_through_at_30pct_loss", 0) <= 48:
    problems.append("30% loss did not drop about 30%")
if figures.get("datagrams_through_after_off", 0) != 50:
    problems.append("datagrams were lost after off")
if problems:
    print("FAILED: " + "; ".join(problems))
    sys.exit(1)
print("impair: delay and loss applied and removed")
