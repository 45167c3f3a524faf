import Foundation
import Glibc
import TestSupport
import Testing

/// A log file or standard output that cannot be written (a full disk): the
/// log's failure said once on standard error, its lines kept there; a stdout
/// that fails stops the node with exit 1, one its reader closed with exit 0.
@Suite("A log file or stdout that cannot be written")
struct LogFileTests {
    @Test("a relay whose --log-file is full says so once on stderr, logs there instead, and stops cleanly")
    func fullLogFile() async throws {
        let dir = TemporaryDirectory()
        let lines = Locked<[String]>([])
        let relay = try Child(PeerNodeProcess.binary, ["relay", "--data-dir", dir.path, "--listen", "127.0.0.1:0", "--no-discovery",
                                                       "--metrics-listen", "127.0.0.1:0", "--log-file", "/dev/full"],
                              stdin: .null, stdout: .null, stderr: .pipe, onLine: { line in lines.withLock { $0.append(line) } })
        let ready = await eventually(30) { lines.value.contains { $0.contains("relay ready") } }
        #expect(ready, "\(lines.value)")
        relay.signal(SIGTERM)
        #expect(await relay.exited(within: 30) == 0)
        let said = lines.value.filter { $0.contains("writing the log file /dev/full failed") }
        #expect(said.count == 1, "\(lines.value)")
        #expect(lines.value.contains { $0.contains("info stopped") }, "the lines after it went to stderr too: \(lines.value)")
    }

    @Test("a --json node whose stdout is full stops with exit 1 and says why; one whose reader closed stdout stops with exit 0")
    func fullStdout() async throws {
        let dir = TemporaryDirectory()
        let node = "'\(PeerNodeProcess.binary)' --data-dir '\(dir.path)' --json --no-discovery --listen 127.0.0.1:0"
        // Standard input stays open (a process substitution bash does not wait for): only stdout ends the run.
        let full = try await runToEnd("/bin/bash", ["-c", "\(node) < <(echo hello; exec sleep 30 2>/dev/null) > /dev/full"])
        #expect(full.status == 1 && full.stderr.contains("writing standard output failed"), "\(full.status): \(full.stderr)")
        // The reader takes one byte and goes: the node's next line meets EPIPE, as `yes | head` does.
        // A line asked for every tenth of a second: a node that had written all it had before the reader
        // left (a loaded machine starts `head` late) still has a next line, not 30 s of silence.
        let asking = "(echo hello; while echo /stats 2>/dev/null; do sleep 0.1; done)"
        let closed = try await runToEnd("/bin/bash", ["-c", "\(node) < <\(asking) | head -c 1 > /dev/null; echo \"node: ${PIPESTATUS[0]}\""])
        #expect(closed.stdout.contains("node: 0") && closed.stderr.contains("standard output was closed"), "\(closed.stdout) \(closed.stderr)")
    }
}
