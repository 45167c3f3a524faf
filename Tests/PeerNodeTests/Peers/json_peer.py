"""A peernode driven through pipes in --json, for the terminal scripts:
lines in, events out, each wait with a deadline."""
import collections
import json
import os
import select
import subprocess
import time


class JsonPeer:
    def __init__(self, argv, fail):
        """Starts `argv` (a peernode with --json); `fail(why)` ends the script."""
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.fail = fail
        self.lines, self.buffer = [], b""
        # The last events read, whatever they were: said when a wait fails.
        self.recent = collections.deque(maxlen=12)

    def wait(self, match, what, timeout=15):
        """The next event that matches. Output is read with os.read into our
        own buffer: select() on a buffered file object misses lines already
        buffered, and would wait for nothing."""
        out = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout
        while True:
            while self.lines:
                event = json.loads(self.lines.pop(0))
                self.recent.append(event)
                if match(event):
                    return event
            left = deadline - time.monotonic()
            if left <= 0:
                self.fail(f"the --json peer never got {what}; its last events: {list(self.recent)}")
            r, _, _ = select.select([out], [], [], left)
            if r:
                self.buffer += os.read(out, 65536)
                *complete, self.buffer = self.buffer.split(b"\n")
                self.lines.extend(complete)

    def rows(self, command, row_type, timeout=15):
        """The `row_type` events that answer `command`; a /stats sent after it marks their end."""
        self.say(command)
        self.say("/stats")
        found = []
        while True:
            e = self.wait(lambda e: e.get("type") in (row_type, "stats"), f"the answer to {command}", timeout)
            if e["type"] == "stats":
                return found
            found.append(e)

    def say(self, text):
        self.process.stdin.write((text + "\n").encode())
        self.process.stdin.flush()

    def stop(self):
        self.process.kill()
        self.process.wait()
