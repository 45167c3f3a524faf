import Foundation
import Glibc
import TestSupport
import Testing

/// A log file that cannot be written (a full disk): said once on standard
/// error, and the log's lines kept there meanwhile; the relay runs on.
@Suite("A log file that cannot be written")
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
}
