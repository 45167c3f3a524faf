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
    """Reads the terminal until `needle` appears after `start` (default: the current end)."""
    global screen
    start = len(screen) if start is None else start
    deadline = time.monotonic() + timeout
    while needle not in screen[start:]:
        left = deadline - time.monotonic()
        if left <= 0:
            fail(f"did not see {needle!r}")
        r, _, _ = select.select([fd], [], [], left)
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                fail(f"terminal closed before {needle!r}")
            if not chunk:
                fail(f"terminal closed before {needle!r}")
            screen += chunk
    return screen[start:]


def lines_of(text):
    """Message lines shown: each `<bob·…> TEXT` row's text."""
    return [row.split(b"> ", 1)[1].strip() for row in text.split(b"\n") if b"<bob" in row and b"> " in row]


b = JsonPeer([PEERNODE, "--data-dir", os.path.join(WORK, "b"), "--json", "--no-discovery", "--nick", "bob",
              "--listen", "127.0.0.1:0"], lambda why: fail(why))
ready = b.wait(lambda e: e.get("type") == "ready", "ready")
for i in range(1, 1001):
    b.say(f"old {i}")
b.wait(lambda e: e.get("type") == "message" and e.get("text") == "old 1000", "its 1,000th message", timeout=120)

pid, a = pty.fork()
if pid == 0:
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    os.environ["TERM"] = "xterm"
    os.environ["NO_COLOR"] = "1"
    os.execv(PEERNODE, [PEERNODE, "--data-dir", os.path.join(WORK, "a"), "--no-discovery", "--nick", "alice",
                        "--listen", "127.0.0.1:0", "--peer", "ws://" + ready["listen"], "--peer", "ws://127.0.0.1:1"])

# Catch-up: one line of counts, then the last 20 rows of #general (old 981 … old 1000), not 1,000 rows.
summary = read_until(a, b"old 1000", start=0, timeout=60)
if b"-- 1000 messages came in while catching up: #general 1000; the last 20 here below, /history N for more" not in summary:
    fail("no catch-up line counting 1,000 messages in #general")
shown = lines_of(summary)
if shown != [f"old {i}".encode() for i in range(981, 1001)]:
    fail(f"the catch-up showed {shown!r}, not old 981 … old 1000")
print("a fresh node catching up 1,000 messages: one line of counts and the last 20 rows")


def type_line(text):
    os.write(a, text.encode() + b"\r")


# Bob hears alice (her nick and her key for direct messages come before her line).
type_line("hi bob")
b.wait(lambda e: e.get("type") == "message" and e.get("text") == "hi bob", "alice's line")

# alice opens #dev; bob writes in #general: not printed in #dev's window, on the act list.
mark = len(screen)
type_line("/join #dev")
read_until(a, b"#dev> ", start=mark)
mark = len(screen)
b.say("news in general")
# #general is 1 in /rooms (the newest message), #dev 2.
read_until(a, b"[Act: 1] #dev> ", start=mark)
if b"news in general" in screen[mark:]:
    fail("a message of #general was printed in #dev's window")
print("a message in another room goes to the act list, not into the open window")

# A direct message: the bell, not printed, on the act list as window 3 (after the two rooms), marked *.
mark = len(screen)
b.say("/msg alice psst, for you alone")
read_until(a, b"[Act: 1,3*] #dev> ", start=mark)
if b"\x07" not in screen[mark:]:
    fail("a direct message in a closed window did not ring the bell")
if b"for you alone" in screen[mark:]:
    fail("a direct message was printed in #dev's window")
print("a direct message rings the bell and waits in its own window: [Act: 1,3*]")

mark = len(screen)
type_line("/switch 1")
read_until(a, b"news in general", start=mark)
read_until(a, b"[Act: 3*] #general", start=mark)
mark = len(screen)
type_line("/window 3")
read_until(a, b"psst, for you alone", start=mark)
read_until(a, b"\x1b[K@bob", start=mark)
print("/switch 1 and /window 3 open the room and the conversation, each with its lines")

# 25 messages in #general while the conversation is open: none printed; entering #general says how many.
mark = len(screen)
for i in range(1, 26):
    b.say(f"burst {i}")
read_until(a, b"[Act: 1] @bob", start=mark)
b.wait(lambda e: e.get("type") == "message" and e.get("text") == "burst 25", "its burst")
# The act list shows the first; wait until alice holds all 25.
deadline = time.monotonic() + 20
while time.monotonic() < deadline:
    mark2 = len(screen)
    type_line("/rooms")
    listing = read_until(a, b"direct conversations", start=mark2)
    if b"25 unread" in listing:
        break
else:
    fail("alice's /rooms never counted 25 unread in #general")
# (/rooms previews the last message; a message row is `[hh:mm] #general <bob…> …`.)
if any(b"] #general <bob" in row and b"burst" in row for row in screen[mark:].split(b"\n")):
    fail("a #general message was printed in the conversation's window")
mark = len(screen)
type_line("/window 1")
entered = read_until(a, b"burst 25", start=mark)
if b"-- 25 new messages came here while you were elsewhere: the last 20 below, /history N for more" not in entered:
    fail("entering #general did not say 25 new messages came")
shown = lines_of(entered)
if shown[-20:] != [f"burst {i}".encode() for i in range(6, 26)] or b"burst 5" in shown:
    fail(f"entering #general showed {shown!r}, not its last 20")
print("entering a window with 25 new messages says so and shows the last 20")

# An invite to a private room whose name alice already has (a public #secret): /accept opens it under
# another name, the prompt says which invite it was, and the next line goes to the private room.
mark = len(screen)
type_line("/join #secret")
read_until(a, b"#secret> ", start=mark)
b.say("/private #secret")
b.say("/invite alice #secret")
mark = len(screen)
read_until(a, b"/accept #secret", start=mark)
type_line("/accept #secret")
read_until(a, b"#secret-2 (invited as #secret)> ", start=mark)
type_line("for the private room only")
heard = b.wait(lambda e: e.get("type") == "message" and e.get("text") == "for the private room only", "alice's line")
if heard.get("room") != "#secret":
    fail(f"alice's line after /accept went to {heard.get('room')}, not bob's private #secret")
print("/accept of a renamed private room opens it, the prompt says '#secret-2 (invited as #secret)', the next line lands there")

# Tab completes a nick learned while alice typed nothing (the completer follows nick changes).
mark = len(screen)
b.say("/nick zebrafish")
read_until(a, b"is now known as zebrafish", start=mark)
mark = len(screen)
os.write(a, b"zebr\t")
read_until(a, b"zebrafish", start=mark)
os.write(a, b"\x03")  # Ctrl-C clears the typed line
read_until(a, b"\x1b[K#secret-2", start=mark)
print("Tab completes a nick heard a moment ago, with nothing typed since")

# What alice sends to bob from another window prints where she typed it (as irssi echoes a /msg).
mark = len(screen)
type_line("/msg zebrafish a word from elsewhere")
read_until(a, b"a word from elsewhere", start=mark)
b.wait(lambda e: e.get("type") == "message" and e.get("text") == "a word from elsewhere", "alice's direct message")
print("a direct message typed in another window prints there")

# A --peer that never answers is said once in the chat, not at each redial: wait for a third attempt.
import re
deadline = time.monotonic() + 30
while True:
    mark = len(screen)
    type_line("/stats")
    stats = read_until(a, b"-- stats:", start=mark)
    stats = read_until(a, b"\n", start=mark + stats.index(b"-- stats:"))
    tried = re.search(rb"websocket_handshake_failed=(\d+)", stats)
    if tried and int(tried.group(1)) >= 3:
        break
    if time.monotonic() > deadline:
        fail(f"the --peer to 127.0.0.1:1 was not tried three times: {stats!r}")
    select.select([], [], [], 0.5)
failures = screen.count(b"-- cannot link to 127.0.0.1:1 (--peer)")
if failures != 1:
    fail(f"a --peer that does not answer was said {failures} times")
print("a --peer that does not answer is said once, not at each redial")

os.write(a, b"\x03")
_, status = os.waitpid(pid, 0)
b.stop()
if os.WEXITSTATUS(status) != 0:
    fail(f"alice exited {status}")
print("all checked")
