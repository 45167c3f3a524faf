#!/usr/bin/env python3
"""A direct conversation at the terminal (`/query`), as irssi users keep
one open: alice in a pseudo-terminal, bob driven by pipes in --json.
Alice opens her conversation with bob: the prompt names him, his direct
message shows, her plain lines go to him, /history numbers both sides,
/reply, /react, Up-then-/edit and /delete act on the conversation (bob's
JSON shows each with "to"), her typing reaches him as typing "with" her,
/rooms lists the conversation (open: *), /me is a direct action, room
commands are refused with the reason, and /part closes the conversation, back
to #general where a line goes to the room again. Prints what it checked;
exits non-zero with the screen so far on the first failure.
usage: query_session.py PEERNODE WORKDIR
"""
import fcntl
import os
import pty
import re
import struct
import sys
import termios

from json_peer import JsonPeer
from pty_screens import Screens

PEERNODE, WORK = sys.argv[1], sys.argv[2]
def fail(why):
    sys.stderr.write(f"FAILED: {why}\n--- alice ---\n{screens.text.get('alice', b'').decode(errors='replace')}\n")
    sys.exit(1)


screens = Screens(fail)
screens.text["alice"] = b""


def read_until(fd, needle, timeout=20, start=None):
    return screens.read_until("alice", fd, needle, timeout, start)


def screen_end():
    return len(screens.text["alice"])


b = JsonPeer([PEERNODE, "--data-dir", os.path.join(WORK, "b"), "--json", "--no-discovery", "--nick", "bob",
              "--listen", "127.0.0.1:0"], lambda why: fail(why))
ready = b.wait(lambda e: e.get("type") == "ready", "ready")
bob = ready["id"]
pid, a = pty.fork()
if pid == 0:
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 200, 0, 0))
    os.environ["TERM"] = "xterm"
    os.environ["NO_COLOR"] = "1"
    os.execv(PEERNODE, [PEERNODE, "--data-dir", os.path.join(WORK, "a"), "--no-discovery", "--nick", "alice",
                        "--listen", "127.0.0.1:0", "--peer", "ws://" + ready["listen"]])
read_until(a, b"#general> ", start=0)
read_until(a, b"linked to", start=0)
read_until(a, b"is now known as bob", start=0)
up = b.wait(lambda e: e.get("type") == "peer_up", "alice's link")
alice = up["id"]


def type_line(text):
    mark = screen_end()
    os.write(a, text.encode() + b"\r")
    return mark


mark = type_line("/query bob")
read_until(a, b"--- your conversation with bob", start=mark)
read_until(a, re.compile(rb"@bob\S*> "), start=mark)
print("/query bob: the prompt names bob, the conversation's history is shown")

mark = screen_end()
b.say(f"/msg {alice} lunch at noon?")
read_until(a, re.compile(rb"\*bob\S* \xe2\x86\x92 alice\S*\* lunch at noon\?"), start=mark)
lunch = b.wait(lambda e: e.get("type") == "message" and e.get("text") == "lunch at noon?", "its own message")
mark = type_line("sure, where?")
line = b.wait(lambda e: e.get("type") == "message" and e.get("text") == "sure, where?", "alice's plain line")
if line.get("kind") != "dm" or line.get("author") != alice:
    fail(f"a plain line in the query did not come as alice's direct message: {line}")
print("bob's direct message shows; alice's plain line goes to bob as a direct message")

mark = type_line("/history 5")
number = read_until(a, re.compile(rb"\((\d+)\) \[\d\d:\d\d\] \*bob\S* \xe2\x86\x92 alice\S*\* lunch at noon\?"), start=mark).group(1).decode()
read_until(a, re.compile(rb"\(\d+\) \[\d\d:\d\d\] \*alice\S* \xe2\x86\x92 bob\S*\* sure, where\?"), start=mark)
print(f"/history numbers both sides of the conversation (bob's is ({number}))")

mark = type_line(f"/reply {number} the usual place")
reply = b.wait(lambda e: e.get("type") == "message" and e.get("text") == "the usual place", "alice's reply")
if reply.get("reply_to") != lunch["id"]:
    fail(f"the reply does not name bob's message: {reply}")
mark = type_line(f"/react {number} 👍")
b.wait(lambda e: e.get("type") == "reaction" and e.get("target") == lunch["id"] and e.get("to") and e.get("state") == "on",
       "alice's reaction in the conversation")
print("/reply and /react act on the conversation's message N; bob gets both")

mark = screen_end()
os.write(a, b"\x1b[A")
read_until(a, b"/edit the usual place", start=mark)
os.write(a, b"\x17\x17corner\r")
read_until(a, b"the corner (edited)", start=mark)
b.wait(lambda e: e.get("type") == "edit" and e.get("original") == reply["id"] and e.get("text") == "the corner" and e.get("to"),
       "alice's edit in the conversation")
mark = type_line("/delete")
read_until(a, b"deleted a message", start=mark)
b.wait(lambda e: e.get("type") == "delete" and e.get("id") == reply["id"] and e.get("to"), "alice's delete")
print("Up offers /edit with her last message in the conversation; /edit and /delete reach bob")

os.write(a, b"typ")
typing = b.wait(lambda e: e.get("type") == "typing", "alice typing")
if typing.get("with") != alice:
    fail(f"typing in the query is not typing in the conversation: {typing}")
os.write(a, b"\x15")  # Ctrl-U: the half line goes
print("typing in the query reaches bob as typing with alice")

mark = screen_end()
b.say(f"/msg {alice} still there?")
read_until(a, b"still there?", start=mark)
mark = type_line("/rooms")
read_until(a, b"-- direct conversations (/query WHO opens one):", start=mark)
read_until(a, re.compile(rb"\*2\. @bob\S*  \[\d\d:\d\d\] <bob\S*> still there\?"), start=mark)
print("/rooms lists the conversation, marked open, with nothing unread: what showed in it was read")

mark = type_line("/me waves")
read_until(a, re.compile(rb"\*alice\S* \xe2\x86\x92 bob\S*\* \* alice\S* waves"), start=mark)
waved = b.wait(lambda e: e.get("type") == "message" and e.get("text") == "waves", "alice's action")
if waved.get("kind") != "dm" or waved.get("action") != "yes":
    fail(f"/me in the query did not come as a direct action: {waved}")
print("/me in the conversation is a direct action (\"action\":\"yes\" in bob's JSON)")
mark = type_line("/kick bob")
read_until(a, b"/kick is about a room, and your conversation with bob", start=mark)
print("room commands (/kick) in a conversation are refused with the reason")

mark = type_line("/part")
read_until(a, b"-- closed your conversation with bob", start=mark)
read_until(a, b"#general> ", start=mark)
mark = type_line("back in the room")
room = b.wait(lambda e: e.get("type") == "message" and e.get("text") == "back in the room", "alice's room line")
if room.get("room") != "#general":
    fail(f"after /part a line did not go to #general: {room}")
print("/part closes the conversation; the next line goes to #general")

os.write(a, b"\x03")
os.waitpid(pid, 0)

# After a restart (nothing mapped in memory), /rooms still finds the conversation.
pid, a = pty.fork()
if pid == 0:
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 200, 0, 0))
    os.environ["TERM"] = "xterm"
    os.environ["NO_COLOR"] = "1"
    os.execv(PEERNODE, [PEERNODE, "--data-dir", os.path.join(WORK, "a"), "--no-discovery", "--listen", "127.0.0.1:0"])
mark = screen_end()
read_until(a, b"#general> ", start=mark)
mark = type_line("/rooms")
read_until(a, re.compile(rb" 2\. @bob\S*  \[\d\d:\d\d\] <"), start=mark)
print("after a restart, /rooms lists the conversation")
os.write(a, b"\x03")
os.waitpid(pid, 0)
b.stop()
print("all checked")
