"""A peernode in a pseudo-terminal, and its screen as the scripts read it:
bytes as they came, waits with a deadline, and a failure that prints the
screen so far."""
import fcntl
import os
import pty
import select
import struct
import sys
import termios
import time


class Screen:
    def __init__(self):
        self.bytes = b""
        self.fd = None
        self.pid = None

    def fail(self, why):
        sys.stderr.write(f"FAILED: {why}\n--- screen ---\n{self.bytes.decode(errors='replace')}\n")
        sys.exit(1)

    def start(self, argv, rows=50, columns=200):
        """`argv` (a peernode) in a new pseudo-terminal of `rows` × `columns`, colours off."""
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
            os.environ["TERM"] = "xterm"
            os.environ["NO_COLOR"] = "1"
            os.execv(argv[0], argv)

    def read_until(self, needle, timeout=20, start=None):
        """Reads until `needle` appears after `start` (default: the current end); returns what came from there."""
        start = len(self.bytes) if start is None else start
        deadline = time.monotonic() + timeout
        while needle not in self.bytes[start:]:
            left = deadline - time.monotonic()
            if left <= 0:
                self.fail(f"did not see {needle!r}")
            if select.select([self.fd], [], [], left)[0]:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    self.fail(f"terminal closed before {needle!r}")
                self.bytes += chunk
        return self.bytes[start:]

    def type_line(self, text):
        os.write(self.fd, text.encode() + b"\r")

    def mark(self):
        return len(self.bytes)
