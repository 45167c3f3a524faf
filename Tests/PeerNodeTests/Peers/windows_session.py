#!/usr/bin/env python3
"""Windows at the terminal (issue 44), as an irssi user expects them: alice
in a pseudo-terminal, bob driven by pipes in --json.

Checks: a fresh node catching up prints one line of counts and the open
window's last 20 rows, not the whole history; a message in another room is
not printed in the open window but goes to the act list; a direct message
rings the bell, is not printed, and is on the act list as a window numbered
after the rooms; /switch N and /window N open rooms and conversations; a
window entered with more news than it shows says how many came and shows
its last 20; a --peer that does not answer is said once. Prints what it checked; exits non-zero with the screen so far
on the first failure.
usage: windows_session.py PEERNODE WORKDIR
"""
import os
import re
import select
import sys
import time

from json_peer import JsonPeer
from pty_screen import Screen

PEERNODE, WORK = sys.argv[1], sys.argv[2]
screen = Screen()
fail = screen.fail


def lines_of(text):
    """Message lines shown: each `<bob·…> TEXT` row's text."""
    return [row.split(b"> ", 1)[1].strip() for row in text.split(b"\n") if b"<bob" in row and b"> " in row]


b = JsonPeer([PEERNODE, "--data-dir", os.path.join(WORK, "b"), "--json", "--no-discovery", "--nick", "bob",
              "--listen", "127.0.0.1:0"], lambda why: fail(why))
ready = b.wait(lambda e: e.get("type") == "ready", "ready")
for i in range(1, 1001):
    b.say(f"old {i}")
b.wait(lambda e: e.get("type") == "message" and e.get("text") == "old 1000", "its 1,000th message", timeout=120)

screen.start([PEERNODE, "--data-dir", os.path.join(WORK, "a"), "--no-discovery", "--nick", "alice",
                        "--listen", "127.0.0.1:0", "--peer", "ws://" + ready["listen"], "--peer", "ws://127.0.0.1:1"])

# Catch-up: one line of counts, then the last 20 rows of #general (old 981 … old 1000), not 1,000 rows.
summary = screen.read_until(b"old 1000", start=0, timeout=60)
if b"-- 1000 messages came in while catching up: #general 1000; the last 20 here below, /history N for more" not in summary:
    fail("no catch-up line counting 1,000 messages in #general")
shown = lines_of(summary)
if shown != [f"old {i}".encode() for i in range(981, 1001)]:
    fail(f"the catch-up showed {shown!r}, not old 981 … old 1000")
print("a fresh node catching up 1,000 messages: one line of counts and the last 20 rows")


# Bob hears alice (her nick and her key for direct messages come before her line).
screen.type_line("hi bob")
b.wait(lambda e: e.get("type") == "message" and e.get("text") == "hi bob", "alice's line")

# alice opens #dev; bob writes in #general: not printed in #dev's window, on the act list.
mark = screen.mark()
screen.type_line("/join #dev")
screen.read_until(b"#dev> ", start=mark)
mark = screen.mark()
b.say("news in general")
# #general is 1 in /rooms (the newest message), #dev 2.
screen.read_until(b"[Act: 1] #dev> ", start=mark)
if b"news in general" in screen.bytes[mark:]:
    fail("a message of #general was printed in #dev's window")
print("a message in another room goes to the act list, not into the open window")

# A direct message: the bell, not printed, on the act list as window 3 (after the two rooms), marked *.
mark = screen.mark()
b.say("/msg alice psst, for you alone")
screen.read_until(b"[Act: 1,3*] #dev> ", start=mark)
if b"\x07" not in screen.bytes[mark:]:
    fail("a direct message in a closed window did not ring the bell")
if b"for you alone" in screen.bytes[mark:]:
    fail("a direct message was printed in #dev's window")
print("a direct message rings the bell and waits in its own window: [Act: 1,3*]")

mark = screen.mark()
screen.type_line("/switch 1")
screen.read_until(b"news in general", start=mark)
screen.read_until(b"[Act: 3*] #general", start=mark)
mark = screen.mark()
screen.type_line("/window 3")
screen.read_until(b"psst, for you alone", start=mark)
screen.read_until(b"\x1b[K@bob", start=mark)
print("/switch 1 and /window 3 open the room and the conversation, each with its lines")

# 25 messages in #general while the conversation is open: none printed; entering #general says how many.
mark = screen.mark()
for i in range(1, 26):
    b.say(f"burst {i}")
screen.read_until(b"[Act: 1] @bob", start=mark)
b.wait(lambda e: e.get("type") == "message" and e.get("text") == "burst 25", "its burst")
# The act list shows the first; wait until alice holds all 25.
deadline = time.monotonic() + 20
while time.monotonic() < deadline:
    mark2 = screen.mark()
    screen.type_line("/rooms")
    listing = screen.read_until(b"direct conversations", start=mark2)
    if b"25 unread" in listing:
        break
else:
    fail("alice's /rooms never counted 25 unread in #general")
# (/rooms previews the last message; a message row is `[hh:mm] #general <bob…> …`.)
if any(b"] #general <bob" in row and b"burst" in row for row in screen.bytes[mark:].split(b"\n")):
    fail("a #general message was printed in the conversation's window")
mark = screen.mark()
screen.type_line("/window 1")
entered = screen.read_until(b"burst 25", start=mark)
if b"-- 25 new messages came here while you were elsewhere: the last 20 below, /history N for more" not in entered:
    fail("entering #general did not say 25 new messages came")
shown = lines_of(entered)
if shown[-20:] != [f"burst {i}".encode() for i in range(6, 26)] or b"burst 5" in shown:
    fail(f"entering #general showed {shown!r}, not its last 20")
print("entering a window with 25 new messages says so and shows the last 20")

# An invite to a private room whose name alice already has (a public #secret): /accept opens it under
# another name, the prompt says which invite it was, and the next line goes to the private room.
mark = screen.mark()
screen.type_line("/join #secret")
screen.read_until(b"#secret> ", start=mark)
b.say("/private #secret")
b.say("/invite alice #secret")
mark = screen.mark()
screen.read_until(b"/accept #secret", start=mark)
screen.type_line("/accept #secret")
screen.read_until(b"#secret-2 (invited as #secret)> ", start=mark)
screen.type_line("for the private room only")
heard = b.wait(lambda e: e.get("type") == "message" and e.get("text") == "for the private room only", "alice's line")
if heard.get("room") != "#secret":
    fail(f"alice's line after /accept went to {heard.get('room')}, not bob's private #secret")
print("/accept of a renamed private room opens it, the prompt says '#secret-2 (invited as #secret)', the next line lands there")

# Tab completes a nick learned while alice typed nothing (the completer follows nick changes).
mark = screen.mark()
b.say("/nick zebrafish")
screen.read_until(b"is now known as zebrafish", start=mark)
mark = screen.mark()
os.write(screen.fd, b"zebr\t")
screen.read_until(b"zebrafish", start=mark)
os.write(screen.fd, b"\x03")  # Ctrl-C clears the typed line
screen.read_until(b"\x1b[K#secret-2", start=mark)
print("Tab completes a nick heard a moment ago, with nothing typed since")

# What alice sends to bob from another window prints where she typed it (as irssi echoes a /msg).
mark = screen.mark()
screen.type_line("/msg zebrafish a word from elsewhere")
screen.read_until(b"a word from elsewhere", start=mark)
b.wait(lambda e: e.get("type") == "message" and e.get("text") == "a word from elsewhere", "alice's direct message")
print("a direct message typed in another window prints there")

# A --peer that never answers is said once in the chat, not at each redial: wait for a third attempt.
deadline = time.monotonic() + 30
while True:
    mark = screen.mark()
    screen.type_line("/stats")
    stats = screen.read_until(b"-- stats:", start=mark)
    stats = screen.read_until(b"\n", start=mark + stats.index(b"-- stats:"))
    tried = re.search(rb"websocket_handshake_failed=(\d+)", stats)
    if tried and int(tried.group(1)) >= 3:
        break
    if time.monotonic() > deadline:
        fail(f"the --peer to 127.0.0.1:1 was not tried three times: {stats!r}")
    select.select([], [], [], 0.5)
failures = screen.bytes.count(b"-- cannot link to 127.0.0.1:1 (--peer)")
if failures != 1:
    fail(f"a --peer that does not answer was said {failures} times")
print("a --peer that does not answer is said once, not at each redial")

os.write(screen.fd, b"\x03")
_, status = os.waitpid(screen.pid, 0)
b.stop()
if os.WEXITSTATUS(status) != 0:
    fail(f"alice exited {status}")
print("all checked")
