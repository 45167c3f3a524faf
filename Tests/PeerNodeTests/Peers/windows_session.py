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
for i in range(1, 31):
    b.say(f"old {i}")
b.wait(lambda e: e.get("type") == "message" and e.get("text") == "old 30", "its 30th message")

pid, a = pty.fork()
if pid == 0:
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    os.environ["TERM"] = "xterm"
    os.environ["NO_COLOR"] = "1"
    os.execv(PEERNODE, [PEERNODE, "--data-dir", os.path.join(WORK, "a"), "--no-discovery", "--nick", "alice",
                        "--listen", "127.0.0.1:0", "--peer", "ws://" + ready["listen"], "--peer", "ws://127.0.0.1:1"])

# Catch-up: one line of counts, then the last 20 rows of #general (old 11 … old 30), not 30 rows.
summary = read_until(a, b"old 30", start=0)
if b"-- 30 messages came in while catching up: #general 30; the last 20 here below, /history N for more" not in summary:
    fail("no catch-up line counting 30 messages in #general")
shown = lines_of(summary)
if shown != [f"old {i}".encode() for i in range(11, 31)]:
    fail(f"the catch-up showed {shown!r}, not old 11 … old 30")
print("a fresh node's catch-up: one line of counts and the last 20 rows, not 30")


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

# A --peer that never answers is said once in the chat, not at each redial.
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
