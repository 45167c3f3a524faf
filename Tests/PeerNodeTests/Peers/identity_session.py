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
import os
import sys

from json_peer import JsonPeer
from pty_screen import Screen

PEERNODE, WORK = sys.argv[1], sys.argv[2]
screen = Screen()
fail = screen.fail


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

screen.start([PEERNODE, "--data-dir", os.path.join(WORK, "a"), "--no-discovery", "--nick", "alice",
              "--listen", "127.0.0.1:0", "--peer", first.url])
read_until = screen.read_until
type_line = screen.type_line
read_until(f"<bob·{fp1}> first bob here".encode(), start=0)

second = json_node("second", first.url)
second.say("second bob here")
fp2 = second.wait(lambda e: e.get("type") == "message" and e.get("text") == "second bob here", "its line")["fp"]
read_until(f"<bob⚠·{fp2}> second bob here".encode(), start=0)
mark = screen.mark()
first.say("still the first bob")
read_until(f"<bob·{fp1}> still the first bob".encode(), start=mark)
print("the bob seen first keeps a clean label; the newcomer carries the mark (bob⚠·fp)")


mark = screen.mark()
type_line(f"/block bob⚠·{fp2}")
read_until(f"-- blocked bob⚠·{fp2}".encode(), start=mark)
mark = screen.mark()
second.say("after the block")
second.wait(lambda e: e.get("type") == "message" and e.get("text") == "after the block", "its own line")
first.say("the first bob after the block")
read_until(b"the first bob after the block", start=mark)
if b"after the block" in screen.bytes[mark:].replace(b"the first bob after the block", b""):
    fail("the blocked bob's line was shown")
print("/block takes the label as the screen shows it; the blocked bob's next line is not shown, the first bob's is")

mark = screen.mark()
type_line("hello both")
first.wait(lambda e: e.get("type") == "message" and e.get("text") == "hello both", "alice's line")
type_line("/edit 1")
read_until(b"error: /edit 1 needs the new text after the number", start=mark)
type_line("/history 3")
read_until(b"hello both", start=mark + screen.bytes[mark:].index(b"error: /edit 1"))
first.say("/stats")
first.wait(lambda e: e.get("type") == "stats", "its stats")
if any(e for e in first.lines if b'"edit"' in e):
    fail("an edit reached the first bob")
print("/edit 1 with no text is refused; nothing is edited")

os.write(screen.fd, b"\x03")
os.waitpid(screen.pid, 0)
first.stop()
second.stop()
print("all checked")
