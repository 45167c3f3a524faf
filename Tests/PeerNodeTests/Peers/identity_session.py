#!/usr/bin/env python3
"""Who is who at the terminal (issue 44): alice in a pseudo-terminal, two
other identities that both call themselves bob, driven by pipes in --json.
Checks: the bob seen first keeps a clean label and the newcomer carries the
mark (bob⚠·fp), on alice's screen; /block takes the label exactly as the
screen shows it, and the blocked bob's next line is not shown while the
first bob's is; `/edit 1` with no text is refused, and nothing is edited.
Prints what it checked; exits non-zero with the screen so far on the first
failure.
usage: identity_session.py PEERNODE WORKDIR
"""
import fcntl
import os
import pty
import select
import struct
import sys
import termios
import time

from json_peer import JsonPeer

PEERNODE, WORK = sys.argv[1], sys.argv[2]
screen = b""


def fail(why):
    sys.stderr.write(f"FAILED: {why}\n--- screen ---\n{screen.decode(errors='replace')}\n")
    sys.exit(1)


def read_until(fd, needle, timeout=20, start=None):
    global screen
    start = len(screen) if start is None else start
    deadline = time.monotonic() + timeout
    while needle not in screen[start:]:
        left = deadline - time.monotonic()
        if left <= 0:
            fail(f"did not see {needle!r}")
        if select.select([fd], [], [], left)[0]:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                fail(f"terminal closed before {needle!r}")
            screen += chunk
    return screen[start:]


def json_node(name, *peers):
    args = [PEERNODE, "--data-dir", os.path.join(WORK, name), "--json", "--no-discovery", "--nick", "bob", "--listen", "127.0.0.1:0"]
    for p in peers:
        args += ["--peer", p]
    n = JsonPeer(args, fail)
    ready = n.wait(lambda e: e.get("type") == "ready", f"{name} ready")
    n.url = "ws://" + ready["listen"]
    return n


first = json_node("first")
first.say("first bob here")
fp1 = first.wait(lambda e: e.get("type") == "message" and e.get("text") == "first bob here", "its line")["fp"]

pid, a = pty.fork()
if pid == 0:
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    os.environ["TERM"] = "xterm"
    os.environ["NO_COLOR"] = "1"
    os.execv(PEERNODE, [PEERNODE, "--data-dir", os.path.join(WORK, "a"), "--no-discovery", "--nick", "alice",
                        "--listen", "127.0.0.1:0", "--peer", first.url])
read_until(a, f"<bob·{fp1}> first bob here".encode(), start=0)

second = json_node("second", first.url)
second.say("second bob here")
fp2 = second.wait(lambda e: e.get("type") == "message" and e.get("text") == "second bob here", "its line")["fp"]
read_until(a, f"<bob⚠·{fp2}> second bob here".encode(), start=0)
mark = len(screen)
first.say("still the first bob")
read_until(a, f"<bob·{fp1}> still the first bob".encode(), start=mark)
print("the bob seen first keeps a clean label; the newcomer carries the mark (bob⚠·fp)")


def type_line(text):
    os.write(a, text.encode() + b"\r")


mark = len(screen)
type_line(f"/block bob⚠·{fp2}")
read_until(a, f"-- blocked bob⚠·{fp2}".encode(), start=mark)
mark = len(screen)
second.say("after the block")
second.wait(lambda e: e.get("type") == "message" and e.get("text") == "after the block", "its own line")
first.say("the first bob after the block")
read_until(a, b"the first bob after the block", start=mark)
if b"after the block" in screen[mark:].replace(b"the first bob after the block", b""):
    fail("the blocked bob's line was shown")
print("/block takes the label as the screen shows it; the blocked bob's next line is not shown, the first bob's is")

mark = len(screen)
type_line("hello both")
first.wait(lambda e: e.get("type") == "message" and e.get("text") == "hello both", "alice's line")
type_line("/edit 1")
read_until(a, b"error: /edit 1 needs the new text after the number", start=mark)
type_line("/history 3")
read_until(a, b"hello both", start=mark + screen[mark:].index(b"error: /edit 1"))
first.say("/stats")
first.wait(lambda e: e.get("type") == "stats", "its stats")
if any(e for e in first.lines if b'"edit"' in e):
    fail("an edit reached the first bob")
print("/edit 1 with no text is refused; nothing is edited")

os.write(a, b"\x03")
os.waitpid(pid, 0)
first.stop()
second.stop()
print("all checked")
