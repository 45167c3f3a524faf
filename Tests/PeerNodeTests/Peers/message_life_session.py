#!/usr/bin/env python3
"""The life of a message at the terminal (issue 17): two nodes in
pseudo-terminals (alice, carol) linked through a third driven by pipes in
--json (bob). Alice numbers bob's message with /history, answers it with
/reply, reacts and takes it back, lists who reacted, edits her reply from
Up at the empty prompt and deletes it; carol types without pressing Enter and alice's prompt says so, then
stops saying so. Bob's JSON shows each of them arriving. Prints what it
checked; exits non-zero with the screen so far on the first failure.
usage: message_life_session.py PEERNODE WORKDIR
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
    shown = "\n".join(f"--- {name} ---\n{s.decode(errors='replace')}" for name, s in screens.text.items())
    sys.stderr.write(f"FAILED: {why}\n{shown}\n")
    sys.exit(1)


screens = Screens(fail)
read_until = screens.read_until


b = JsonPeer([PEERNODE, "--data-dir", os.path.join(WORK, "b"), "--json", "--no-discovery", "--nick", "bob",
              "--listen", "127.0.0.1:0"], lambda why: fail(why))
b_wait = b.wait
ready = b_wait(lambda e: e.get("type") == "ready", "ready")
url = "ws://" + ready["listen"]


def start(name):
    pid, master = pty.fork()
    if pid == 0:
        # Wide enough that no checked line wraps.
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 200, 0, 0))
        os.environ["TERM"] = "xterm"
        os.environ["NO_COLOR"] = "1"
        os.execv(PEERNODE, [PEERNODE, "--data-dir", os.path.join(WORK, name), "--no-discovery", "--nick", name,
                            "--listen", "127.0.0.1:0", "--peer", url])
    screens.text[name] = b""
    return pid, master


a_pid, a = start("alice")
c_pid, c = start("carol")
for name, fd in (("alice", a), ("carol", c)):
    read_until(name, fd, b"#general> ", start=0)
    read_until(name, fd, b"linked to", start=0)
print("alice and carol at their prompts, linked to bob")


b_says = b.say


b_says("lunch at noon?")
lunch = b_wait(lambda e: e.get("type") == "message" and e.get("text") == "lunch at noon?", "its own message")
read_until("alice", a, b"lunch at noon?", start=0)
mark = len(screens.text["alice"])
os.write(a, b"/history 5\r")
number = read_until("alice", a, re.compile(rb"\((\d+)\) \[\d\d:\d\d\] #general <bob\S*> lunch at noon\?"), start=mark).group(1).decode()
print(f"/history numbers bob's message: ({number})")

mark = len(screens.text["alice"])
os.write(a, f"/reply {number} sure, the usual place\r".encode())
read_until("alice", a, re.compile(rb'<alice\S*> \[re bob\S*: "lunch at noon\?"\] sure, the usual place'), start=mark)
reply = b_wait(lambda e: e.get("kind") == "reply", "the reply")
if reply.get("reply_to") != lunch["id"] or reply.get("reply_to_text") != "lunch at noon?":
    fail(f"the reply's reference is wrong: {reply}")
print("/reply shows a one-line quote; bob's JSON names the message answered")

mark = len(screens.text["alice"])
os.write(a, f"/react {number} 👍\r".encode())
read_until("alice", a, "reacted 👍 to bob".encode(), start=mark)
b_wait(lambda e: e.get("type") == "reaction" and e.get("state") == "on" and e.get("target") == lunch["id"], "the reaction")
mark = len(screens.text["alice"])
os.write(a, b"/history 5\r")
read_until("alice", a, "lunch at noon?  [👍 1]".encode(), start=mark)
mark = len(screens.text["alice"])
os.write(a, f"/reactions {number}\r".encode())
read_until("alice", a, re.compile("👍 1: alice".encode()), start=mark)
print("/react shows at once and as a count in /history; /reactions says who")
mark = len(screens.text["alice"])
os.write(a, f"/react {number} 👍\r".encode())
read_until("alice", a, "took back 👍 on bob".encode(), start=mark)
b_wait(lambda e: e.get("type") == "reaction" and e.get("state") == "off", "the reaction taken back")
print("the same /react again takes it back")

# Up at the empty prompt offers the last message to edit: two words off, two on.
mark = len(screens.text["alice"])
os.write(a, b"\x1b[A")
read_until("alice", a, b"/edit sure, the usual place", start=mark)
os.write(a, b"\x17\x17corner place\r")
read_until("alice", a, b"sure, the corner place (edited)", start=mark)
b_wait(lambda e: e.get("type") == "edit" and e.get("original") == reply["id"] and e.get("text") == "sure, the corner place", "the edit")
print("Up offers /edit with the last message; the edit shows (edited); bob gets it")
mark = len(screens.text["alice"])
os.write(a, b"/versions\r")
read_until("alice", a, re.compile(rb"2 versions of alice\S*'s message, oldest first:\r*\n  \[\d\d:\d\d\] sure, the usual place\r*\n  \[\d\d:\d\d\] sure, the corner place \(edit 1\)"), start=mark)
print("/versions lists what it said before the edit")

# Carol types without pressing Enter: alice's prompt says so, then stops saying so.
mark = len(screens.text["alice"])
os.write(c, b"hel")
read_until("alice", a, re.compile(rb"\(carol\S* is typing\xe2\x80\xa6\) #general"), start=mark)
b_wait(lambda e: e.get("type") == "typing" and e.get("nick") == "carol", "carol's typing")
print("carol typing shows in alice's prompt and in bob's JSON")
mark = len(screens.text["alice"])
read_until("alice", a, b"\x1b[K#general", start=mark, timeout=20)
print("and is gone a few seconds after she stopped")
os.write(c, b"lo\r")
read_until("alice", a, b"<carol", start=mark)

mark = len(screens.text["alice"])
os.write(a, "/history 3\r".encode())
read_until("alice", a, b"the corner place (edited)", start=mark)
mark = len(screens.text["alice"])
os.write(a, b"/delete\r")
read_until("alice", a, b"alice", start=mark)
read_until("alice", a, b"deleted a message", start=mark)
b_wait(lambda e: e.get("type") == "delete" and e.get("id") == reply["id"], "the delete")
print("/delete erases the reply for bob too")

for pid, fd in ((a_pid, a), (c_pid, c)):
    os.write(fd, b"\x03")
    os.waitpid(pid, 0)
b.stop()
print("all checked")
