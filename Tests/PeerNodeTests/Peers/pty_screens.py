"""What each pseudo-terminal of a terminal script printed, read with
deadlines: a needle (bytes, or a compiled pattern) is waited for after a
mark, so a check never matches what an earlier step printed."""
import os
import re
import select
import time


class Screens:
    def __init__(self, fail):
        """`fail(why)` ends the script (it may show `text`)."""
        self.text = {}
        self.fail = fail

    def read_until(self, name, fd, needle, timeout=20, start=None):
        """Reads `name`'s terminal until `needle` appears after `start` (default:
        its current end); returns the match, or what came from `start`."""
        start = len(self.text[name]) if start is None else start
        deadline = time.monotonic() + timeout
        while True:
            seen = self.text[name][start:]
            found = needle.search(seen) if isinstance(needle, re.Pattern) else (needle in seen)
            if found:
                return found if isinstance(needle, re.Pattern) else seen
            left = deadline - time.monotonic()
            if left <= 0:
                self.fail(f"{name} did not show {needle!r}")
            r, _, _ = select.select([fd], [], [], left)
            if r:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    chunk = b""
                if not chunk:
                    self.fail(f"{name}'s terminal closed before {needle!r}")
                self.text[name] += chunk
