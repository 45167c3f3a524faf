#!/usr/bin/env python3
"""Types into a peernode running in a pseudo-terminal and reads its screen.

A second node (B, --json, driven through pipes) is linked to the one in the
terminal (A). Checks: the prompt; a message arriving while a line is half
typed is printed above and the half line is drawn again; line editing keys;
Tab completion; a mention and a direct message ring the bell; a 10,000-byte line arrives as
three messages cut on word boundaries, and a long edit is refused; a
multi-line paste asks before it sends, one of more than 1,000 lines is refused; Ctrl-L and /clear clear the screen; the prompt's mark on our last
message (read, local only, stored); Ctrl-C clears a typed line, and on an
empty one quits with exit code 0 and the
terminal settings as they were; so does a crash signal (then dies of it). Prints what it checked; exits non-zero
with the screen so far on the first failure.
usage: terminal_session.py PEERNODE WORKDIR
"""
import os
import pty
import select
import subprocess
import sys
import termios
import time

from checks import scratch
from json_peer import JsonPeer

PEERNODE, WORK = sys.argv[1], sys.argv[2]
screen = b""


def fail(why):
    sys.stderr.write(f"FAILED: {why}\n--- screen ---\n{screen.decode(errors='replace')}\n")
    sys.exit(1)


def read_until(fd, needle, timeout=15, start=None):
    """Reads the terminal until `needle` (bytes) appears after `start` (default: the
    current end); returns what came from there."""
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
                chunk = os.read(fd, 4096)
            except OSError:
                fail(f"terminal closed before {needle!r}")
            if not chunk:
                fail(f"terminal closed before {needle!r}")
            screen += chunk
    return screen[start:]


b = JsonPeer([PEERNODE, "--data-dir", os.path.join(WORK, "b"), "--json", "--no-discovery", "--nick", "bob",
              "--listen", "127.0.0.1:0"], lambda why: fail(why))
b_wait = b.wait
ready = b_wait(lambda e: e.get("type") == "ready", "ready")
url = "ws://" + ready["listen"]

def start_a():
    """Node A in a new pseudo-terminal: its pid, the master side, and the
    terminal settings it found."""
    pid, master = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "xterm"
        os.environ["SWIFT_BACKTRACE"] = "enable=no"
        os.environ.pop("NO_COLOR", None)
        os.execv(PEERNODE, [PEERNODE, "--data-dir", os.path.join(WORK, "a"), "--no-discovery", "--nick", "alice",
                            "--listen", "127.0.0.1:0", "--peer", url])
    return pid, master, termios.tcgetattr(master)


def check_restored(master, before, after_what):
    now = termios.tcgetattr(master)
    if now[3] != before[3] or now[0] != before[0]:
        fail(f"terminal not restored after {after_what}: lflag {before[3]:#x} -> {now[3]:#x}, iflag {before[0]:#x} -> {now[0]:#x}")


pid, master, before = start_a()

read_until(master, b"#general> ")
print("prompt shown")
# From the start of the screen: the report may have come in the same read as the prompt.
read_until(master, b"linked to", start=0)
print("link reported")


b_says = b.say


def b_heard(text, timeout=15):
    b_wait(lambda e: e.get("type") == "message" and e.get("text") == text, repr(text), timeout)


# A half-typed line survives a message arriving above it.
os.write(master, b"hel")
read_until(master, b"hel")
mark = len(screen)
b_says("hello alice")
after = read_until(master, b"hello alice")
# After the message line, the prompt and the half-typed "hel" come again.
redrawn = read_until(master, b"#general> hel", start=screen.index(b"hello alice", mark))
print("half-typed line redrawn after an incoming message")
if b"\x07" not in after + redrawn:
    fail("a mention of alice did not ring the bell")
print("mention rang the bell")
mark = len(screen)
b_says("/msg alice psst, a word for you alone")
# Its window (the conversation, numbered after the one room) is not open: the bell rings and the
# act list names it as one that speaks to us; the line itself waits in its window (windows_session.py).
read_until(master, b"\x07", start=mark)
read_until(master, b"[Act: 2*] #general", start=mark)
if b"a word for you alone" in screen[mark:]:
    fail("a direct message printed in #general's window")
print("a direct message rings the bell and goes to the act list, as a mention elsewhere does")
hello = b_wait(lambda e: e.get("type") == "message" and e.get("text") == "hello alice", "its own message")
b_wait(lambda e: e.get("type") == "receipt" and e.get("id") == hello["id"] and e.get("state") == "read", "a read receipt")
print("a person at the terminal sends read receipts: B got 'read' for its message")

# Editing: Left Left X Enter turns "hel" into "hXel"; Home, Ctrl-K, Ctrl-W, Backspace too.
os.write(master, b"\x1b[D\x1b[DX\r")
b_heard("hXel")
print("left arrow and insert: B got 'hXel'")
# B shows it and says so in a receipt: the prompt marks our last message delivered.
read_until(master, "#general ✓✓> ".encode())
print("the prompt marks our last message delivered (✓✓) once B's receipt arrives")
os.write(master, b"one two three\x17\x17four\x01\x1b[C\x1b[C\x1b[Cx\x05!\r")
b_heard("onex four!")
print("Ctrl-W, Home (Ctrl-A), Right, End (Ctrl-E): B got 'onex four!'")
os.write(master, b"drop this\x01\x0bkept\x7f\x7fpt\r")
b_heard("kept")
print("Ctrl-K and Backspace: B got 'kept'")

# History: Up first offers our last message to edit, then the lines typed before.
mark = len(screen)
os.write(master, b"\x1b[A")
read_until(master, b"/edit kept", start=mark)
os.write(master, b"\x1b[A\r")
time.sleep(0.3)
b_heard("kept")
print("Up offers /edit with our last message, then recalls the last line")

# The direct message waits in its window: /window 2 opens it (the prompt names bob), the act list empties.
mark = len(screen)
os.write(master, b"/window 2\r")
read_until(master, b"a word for you alone", start=mark)
read_until(master, b"\x1b[K@bob", start=mark)
mark = len(screen)
os.write(master, b"/window 1\r")
read_until(master, b"\x1b[K#general", start=mark)
print("/window 2 opens the conversation with the direct message in it; /window 1 goes back")

# Tab completion of a command.
os.write(master, b"/jo\t")
read_until(master, b"/join ")
os.write(master, b"#random\r")
read_until(master, b"#random> ")
print("Tab completed /join; the prompt follows the room")

# The act list: news in another room shows before the prompt by its /rooms
# number (#general is 1: the newest message), * once one names us.
b_says("plain news")
read_until(master, b"[Act: 1] #random> ")
print("a message in another room puts it in the act list: [Act: 1]")
b_says("alice, this one is for you")
read_until(master, b"[Act: 1*] #random> ")
print("a message naming us marks it: [Act: 1*]")
mark = len(screen)
os.write(master, b"/rooms\r")
read_until(master, b"names you", start=mark)
print("/rooms says which room names us")
mark = len(screen)
os.write(master, b"/mentions\r")
listing = read_until(master, b"this one is for you", start=mark)
if b"2 messages name alice" not in listing or b"hello alice" not in listing:
    fail("/mentions did not list the two messages that named alice")
print("/mentions lists the messages that named us")
mark = len(screen)
os.write(master, b"/switch 1\r")
# The prompt is drawn again at the start of a cleared line: no act list before the room now.
read_until(master, b"\x1b[K#general ", start=mark)
print("opening the room takes it off the act list")
os.write(master, b"thanks bob\r")
b_wait(lambda e: e.get("type") == "message" and e.get("text") == "thanks bob" and e.get("mention") == "yes", "a message marked as naming bob")
print("--json marks a message that names its reader (mention: yes)")

# A line longer than one message (4,000 bytes) is posted as several, cut on word boundaries: nothing is lost.
long_line = " ".join(f"word{i}" for i in range(1400))
parts, rest = [], long_line
while len(rest) > 4000:
    cut = rest.rindex(" ", 0, 4001)
    parts.append(rest[:cut])
    rest = rest[cut + 1:]
parts.append(rest)
if len(long_line) < 10_000 or len(parts) != 3:
    fail(f"the long line is {len(long_line)} bytes in {len(parts)} parts")
def paste(data):
    """Writes `data` as a paste arrives, a KB at a time, reading the screen meanwhile
    (the node redraws the line as it grows; a full pty would stop it)."""
    global screen
    pending = data
    while pending:
        readable, writable, _ = select.select([master], [master], [], 5)
        if not readable and not writable:
            fail("the terminal took no more of the pasted line")
        if readable:
            screen += os.read(master, 65536)
        if writable:
            pending = pending[os.write(master, pending[:1024]):]


paste(long_line.encode() + b"\r")
for part in parts:
    b_wait(lambda e, part=part: e.get("type") == "message" and e.get("text") == part, "a part of the long line")
print("a 10,000-byte line arrives whole, as three messages cut on word boundaries")
mark = len(screen)
paste(b"/edit " + b"y" * 4001 + b"\r")
read_until(master, b"an edit replaces one message, at most 4000 bytes", start=mark)
print("an edit longer than one message is refused, saying why")

# A paste of several lines (bracketed paste, which the node turns on) sends nothing until the person says y;
# a tab inside it stays in the text (a typed Tab completes).
if b"\x1b[?2004h" not in screen:
    fail("bracketed paste mode was not turned on")
mark = len(screen)
paste(b"\x1b[200~first pasted\rsecond\tpasted\rthird\x1b[201~")
read_until(master, b"paste 3 lines into #general? y sends them", start=mark)
# What B printed for half a second, kept for the waits below: none of the pasted lines yet.
deadline = time.monotonic() + 0.5
while time.monotonic() < deadline:
    r, _, _ = select.select([b.process.stdout.fileno()], [], [], 0.05)
    if r:
        b.buffer += os.read(b.process.stdout.fileno(), 65536)
        *complete, b.buffer = b.buffer.split(b"\n")
        b.lines.extend(complete)
if any(b"first pasted" in line for line in b.lines):
    fail("a pasted line was sent before the person said y")
os.write(master, b"y\r")
# The tab travels as a tab; --json shows it as every control from the network is shown, inert.
got = [b_wait(lambda e, text=text: e.get("type") == "message" and e.get("text", "").replace("\t", "^I") == text, f"the pasted line {text!r}")
       for text in ("first pasted", "second^Ipasted", "third")]
print(f"  (the tab arrived as {got[1]['text']!r})")
print("a 3-line paste asks first, then sends its lines in order, a tab kept")
mark = len(screen)
paste(b"\x1b[200~not this\rnor this\x1b[201~")
read_until(master, b"paste 2 lines into #general?", start=mark)
os.write(master, b"n\r")
read_until(master, b"the pasted lines were dropped", start=mark)
print("answered otherwise, a paste is dropped")

# A paste's lines are bounded (TerminalSession.maximumPastedLines, 1,000): at the limit it asks as any paste;
# one line more is refused whole, said, and nothing of it is sent.
mark = len(screen)
paste(b"\x1b[200~" + b"\r".join(b"at the limit %d" % i for i in range(1000)) + b"\x1b[201~")
read_until(master, b"paste 1000 lines into #general?", start=mark)
os.write(master, b"n\r")
read_until(master, b"the pasted lines were dropped", start=mark)
mark = len(screen)
paste(b"\x1b[200~" + b"\r".join(b"past the limit %d" % i for i in range(1001)) + b"\x1b[201~")
read_until(master, b"a paste of 1001 lines is more than 1000: nothing was sent", start=mark)
os.write(master, b"after the long paste\r")
sent_of_paste = []


def after_long_paste(e):
    # A's messages come in the order it sent them: any line of the paste would come before this one.
    if e.get("type") == "message" and e.get("text", "").startswith("past the limit"):
        sent_of_paste.append(e["text"])
    return e.get("type") == "message" and e.get("text") == "after the long paste"


b_wait(after_long_paste, "the line typed after the long paste")
if sent_of_paste:
    fail(f"{len(sent_of_paste)} lines of the paste past the limit were sent")
print("a paste of 1,000 lines asks; one of 1,001 is refused whole and said, and typing goes on")

# A file dropped on the terminal: the terminal pastes its quoted path; Enter asks before anything goes.
dropped_dir = scratch("peernode-drop-")
dropped = os.path.join(dropped_dir, "q3 report.txt")
with open(dropped, "wb") as f:
    f.write(b"the numbers for Q3\n" * 100)
mark = len(screen)
paste(b"\x1b[200~'" + dropped.encode() + b"' \x1b[201~\r")
# (The question is folded at the terminal's width: its start is looked for.)
read_until(master, b"-- send q3 report.txt (1.9 kB) here as a file?", start=mark)
os.write(master, b"y\r")
b_wait(lambda e: e.get("type") == "file" and e.get("name") == "q3 report.txt" and e.get("size") == 1900, "the dropped file's offer")
mark = len(screen)
paste(b"\x1b[200~'" + dropped.encode() + b"' \x1b[201~\r")
read_until(master, b"here as a file?", start=mark)
os.write(master, b"t\r")
b_wait(lambda e: e.get("type") == "message" and e.get("text", "").strip() == "'" + dropped + "'", "the dropped path posted as words")
mark = len(screen)
paste(b"\x1b[200~" + dropped.replace(" ", "\\ ").encode() + b"\x1b[201~\r")
read_until(master, b"here as a file?", start=mark)
os.write(master, b"\r")
read_until(master, b"the dropped file was not sent", start=mark)
print("a file dropped on the terminal (its path pasted) asks first: y sends the file, t posts the words, else nothing")
# Two files dropped at once: the terminal pastes both paths; one question, and y offers each.
second = os.path.join(dropped_dir, "notes.txt")
with open(second, "wb") as f:
    f.write(b"minutes\n" * 50)
mark = len(screen)
paste(b"\x1b[200~'" + dropped.encode() + b"' '" + second.encode() + b"' \x1b[201~\r")
read_until(master, b"-- send these 2 files here, each as a file?", start=mark)
os.write(master, b"y\r")
b_wait(lambda e: e.get("type") == "file" and e.get("name") == "notes.txt" and e.get("size") == 400, "the second dropped file's offer")
mark = len(screen)
paste(b"\x1b[200~'" + dropped.encode() + b"' '" + second.encode() + b"' \x1b[201~\r")
read_until(master, b"each as a file?", start=mark)
os.write(master, b"\r")
read_until(master, b"the dropped files were not sent", start=mark)
print("two files dropped at once ask once: y offers each, anything else sends nothing")
# DroppedFiles.maximumFiles (32) at once, and one past it: said, and nothing goes.
many = []
for i in range(33):
    many.append(os.path.join(dropped_dir, f"m{i}.txt"))
    with open(many[-1], "wb") as f:
        f.write(b"x")
quoted = lambda paths: b" ".join(b"'" + p.encode() + b"'" for p in paths)
mark = len(screen)
paste(b"\x1b[200~" + quoted(many[:32]) + b" \x1b[201~\r")
read_until(master, b"-- send these 32 files here, each as a file?", start=mark)
os.write(master, b"n\r")
read_until(master, b"the dropped files were not sent", start=mark)
mark = len(screen)
paste(b"\x1b[200~" + quoted(many) + b" \x1b[201~\r")
read_until(master, b"-- 33 files dropped at once: at most 32 go together; nothing was sent", start=mark)
print("32 files dropped at once are asked about; 33 are refused, nothing sent")
# A folder dropped: not sent, said, and its path goes to the room only if t is answered.
folder = os.path.join(dropped_dir, "holiday photos")
os.makedirs(folder)
mark = len(screen)
paste(b"\x1b[200~'" + folder.encode() + b"' \x1b[201~\r")
read_until(master, b"-- holiday photos is a folder, and a folder is not sent", start=mark)
os.write(master, b"\r")
read_until(master, b"nothing was sent or posted", start=mark)
print("a folder dropped is not sent, and its path is not posted unasked")

# A nick change names the person as the screen did before: bob·fp, not the fingerprint alone.
mark = len(screen)
b_says("/nick robert")
changed = read_until(master, b"is now known as robert", start=mark)
if "bob·".encode() not in changed.split(b"is now known as robert")[0][-80:]:
    fail("the nick change did not name bob·fp")
b_says("/nick bob")
read_until(master, b"is now known as bob", start=mark)
print("a nick change names the person by their earlier label (bob·fp is now known as robert)")
os.write(master, b"/switch #random\r")
read_until(master, b"#random> ")

# Terminal escape sequences from the network are shown inert.
b_says("/join #random")
time.sleep(0.3)
b_says("evil \x1b]0;owned\x07 \x1b[2J end")
shown = read_until(master, b"end")
if b"\x1b]0;owned" in shown or b"\x1b[2J" in shown:
    fail("an escape sequence from the network reached the terminal")
print("escape sequences from the network are inert")

# The prompt's mark follows our last message: read, then local only, then stored.
b_says("/set receipts on")
time.sleep(0.3)
os.write(master, b"read me\r")
b_heard("read me")
read_until(master, "#random read> ".encode())
print("the prompt says 'read' once B (now sending read receipts) has shown it")
b.stop()
time.sleep(1)
os.write(master, b"alone now\r")
read_until(master, "#random …> ".encode())
print("with nobody linked, the prompt marks our last message local only (…)")
# B's identity comes back as a relay: it stores (and acknowledges) but shows nothing, so sends no receipts.
relay = subprocess.Popen([PEERNODE, "relay", "--data-dir", os.path.join(WORK, "b"), "--no-discovery", "--listen", ready["listen"]],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
read_until(master, "#random ✓> ".encode(), timeout=45)
print("a relay takes it: the prompt marks it stored (✓)")
relay.terminate()
relay.wait()

# Ctrl-L clears the screen and draws the prompt again, the half-typed line kept.
mark = len(screen)
os.write(master, b"kept\x0c")
read_until(master, b"\x1b[H\x1b[2J", start=mark)
read_until(master, b"kept", start=mark)
os.write(master, b"\x15")  # Ctrl-U: the line emptied again
print("Ctrl-L clears the screen and redraws the prompt with the line")
mark = len(screen)
os.write(master, b"/clear\r")
read_until(master, b"\x1b[H\x1b[2J", start=mark)
read_until(master, b"\x1b[K#random", start=mark + screen[mark:].index(b"\x1b[H\x1b[2J"))
print("/clear does the same")
# Ctrl-C on a half-typed line clears it and the node goes on; on an empty line it quits: exit 0, terminal settings back.
mark = len(screen)
os.write(master, b"half a thought")
read_until(master, b"half a thought", start=mark)
mark = len(screen)
os.write(master, b"\x03")
read_until(master, "#random ✓> ".encode(), start=mark)
os.write(master, b"typed after\r")
# Posted and shown as a message line (the prompt's echo never ends in a line break): the node went on.
read_until(master, b"typed after\r\r\n", start=mark)
if os.waitpid(pid, os.WNOHANG) != (0, 0):
    fail("Ctrl-C on a typed line stopped the node")
if b"half a thoughttyped after" in screen[mark:]:
    fail("the cleared line was sent with the next one")
print("Ctrl-C on a typed line clears it; the node goes on")
os.write(master, b"\x03")
_, status = os.waitpid(pid, 0)
if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
    fail(f"Ctrl-C did not exit cleanly (status {status})")
check_restored(master, before, "Ctrl-C")
# What it wrote last, read now that it is gone: bracketed paste turned off with the rest.
while True:
    r, _, _ = select.select([master], [], [], 0.2)
    if not r:
        break
    try:
        chunk = os.read(master, 65536)
    except OSError:
        break
    if not chunk:
        break
    screen += chunk
if b"\x1b[?2004l" not in screen:
    fail("bracketed paste mode was not turned off at the exit")
print("Ctrl-C exits 0 and the terminal is restored")

# A crash signal: the handler puts the terminal back, then dies of the signal as it would have.
pid, master, before = start_a()
read_until(master, b"#general> ")
os.kill(pid, 11)  # SIGSEGV
_, status = os.waitpid(pid, 0)
if not os.WIFSIGNALED(status) or os.WTERMSIG(status) != 11:
    fail(f"SIGSEGV did not end the node by that signal (status {status})")
check_restored(master, before, "SIGSEGV")
print("a crash signal (SIGSEGV) restores the terminal, then ends the node by that signal")
