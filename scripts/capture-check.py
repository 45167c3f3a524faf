#!/usr/bin/env python3
"""The wire carries no plaintext: tcpdump captures loopback while two nodes
find each other by multicast (on 127.0.0.1), link, and exchange distinctive
text (a nick, a room name, a room message, a direct message, an invite to
a private room). The capture must hold none of it. To show the capture
saw the traffic at all, it must hold a control text sent in the clear, the WebSocket upgrade (plaintext HTTP by
design, RFC 6455 §4) and discovery datagrams on the multicast port.
Needs root (tcpdump). Prints what it found; exits 1 on a leak.
usage: capture-check.py PEERNODE
"""
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchnodes import JSONNode, pump  # noqa: E402

PEERNODE = os.path.abspath(sys.argv[1])
TCPDUMP = shutil.which("tcpdump") or "/usr/bin/tcpdump"


def fail(why):
    print(f"FAILED: {why}")
    sys.exit(1)


def free_port(kind=socket.SOCK_STREAM):
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if os.geteuid() != 0:
    fail("needs root for tcpdump (CI runs as root)")
tag = secrets.token_hex(6)
canaries = {
    "nick": f"nick{tag}",
    "room": f"#room{tag}",
    "message": f"room message canary {tag}",
    "direct": f"direct message canary {tag}",
    "private room": f"#secret{tag}",
    "private message": f"private room canary {tag}",
}
root = tempfile.mkdtemp(prefix="peernode-capture-")
pcap = os.path.join(root, "lo.pcap")
group_port = free_port(socket.SOCK_DGRAM)
multicast = ["--multicast-if", "127.0.0.1", "--multicast", f"239.255.73.73:{group_port}"]
dump = subprocess.Popen([TCPDUMP, "-i", "lo", "-U", "-s", "0", "-w", pcap], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
# tcpdump says "listening on lo" once it captures.
line = dump.stderr.readline().decode()
if "listening" not in line:
    fail(f"tcpdump did not start: {line!r}")
nodes = []
try:
    a = JSONNode([PEERNODE, "--data-dir", os.path.join(root, "a"), "--json", "--nick", canaries["nick"],
                  "--listen", "127.0.0.1:0", *multicast])
    b = JSONNode([PEERNODE, "--data-dir", os.path.join(root, "b"), "--json", "--nick", "bob",
                  "--listen", "127.0.0.1:0", *multicast])
    nodes = [a, b]
    pump(nodes, lambda: all(any(e.get("type") == "peer_up" for e in n.events) for n in nodes), 30)
    b_id = next(e for e in b.events if e.get("type") == "ready")["id"]
    for n in nodes:
        n.post(f"/join {canaries['room']}")
    time.sleep(0.3)
    a.post(canaries["message"])
    a.post(f"/msg {b_id} {canaries['direct']}")
    a.post(f"/private {canaries['private room']}")
    a.post(f"/invite {b_id} {canaries['private room']}")
    pump(nodes, lambda: any(e.get("type") == "invite" for e in b.events), 30)
    # An invite waits for the user's answer (docs/PROTOCOL.md §14).
    b.post(f"/accept {canaries['private room']}")
    pump(nodes, lambda: any(e.get("type") == "invite_accepted" for e in b.events), 30)
    a.post(canaries["private message"])
    for text in ("message", "direct", "private message"):
        pump(nodes, lambda: any(e.get("text") == canaries[text] for e in b.events), 30)
    # A control: the same kind of text sent in the clear must be found, or the check proves nothing.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.sendto(f"control canary {tag}".encode(), ("127.0.0.1", free_port(socket.SOCK_DGRAM)))
    time.sleep(1)  # a discovery announcement or two more
finally:
    for n in nodes:
        n.stop()
    time.sleep(0.3)
    dump.terminate()
    dump.wait()

with open(pcap, "rb") as f:
    captured = f.read()
udp = subprocess.run([TCPDUMP, "-r", pcap, "-n", f"udp port {group_port}"], capture_output=True, text=True).stdout
datagrams = len([l for l in udp.splitlines() if l.strip()])
shutil.rmtree(root, ignore_errors=True)
print(f"captured {len(captured):,} bytes on lo; {datagrams} discovery datagrams")
if b"Upgrade: websocket" not in captured:
    fail("the capture has no WebSocket upgrade: it did not see the links")
if f"control canary {tag}".encode() not in captured:
    fail("the control text sent in the clear is not in the capture: the capture does not hold whole payloads")
if datagrams == 0:
    fail("the capture has no discovery datagrams")
leaks = [what for what, text in canaries.items() if text.encode() in captured]
if leaks:
    fail(f"plaintext on the wire: {', '.join(leaks)}")
print(f"none of {len(canaries)} canaries ({', '.join(canaries)}) is on the wire")
