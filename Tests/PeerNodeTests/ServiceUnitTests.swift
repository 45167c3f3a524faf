import Foundation
import TestSupport
import Testing

/// contrib/peernode-relay.service, checked as far as a machine without
/// systemd as PID 1 allows: systemd's own verifier, then the relay started
/// with the unit's command line (paths and port moved into the test's
/// directory) and stopped with the unit's KillSignal.
@Suite("The systemd unit for a relay")
struct ServiceUnitTests {
    static let unit = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../contrib/peernode-relay.service").standardized.path

    @Test("systemd-analyze verify accepts the unit (with the binary where the unit expects it), and its command line starts a relay that SIGTERM stops with 0")
    func unit() async throws {
        let analyzer = "/usr/bin/systemd-analyze"
        try #require(FileManager.default.isExecutableFile(atPath: analyzer),
                     "systemd-analyze is missing: scripts/setup-system.sh test installs Debian's systemd package")
        let text = try String(contentsOfFile: Self.unit, encoding: .utf8)
        let work = TemporaryDirectory()
        let copy = work.path + "/peernode-relay.service"
        try text.replacingOccurrences(of: "/usr/local/bin/peernode", with: PeerNodeProcess.binary)
            .write(toFile: copy, atomically: true, encoding: .utf8)
        let verified = try await runToEnd(analyzer, ["verify", "--man=no", copy])
        // Any complaint (an unknown key, a bad value, a missing binary) fails the test.
        #expect(verified.status == 0 && verified.stderr.isEmpty && verified.stdout.isEmpty, "\(verified.stdout)\(verified.stderr)")

        // Its ExecStart, with the state directory and port moved here.
        let execStart = try #require(text.split(separator: "\n").first { $0.hasPrefix("ExecStart=") })
        var arguments = execStart.dropFirst("ExecStart=".count).split(separator: " ").dropFirst().map(String.init)
        #expect(arguments.first == "relay")
        for (option, value) in [("--data-dir", work.path + "/state"), ("--listen", "127.0.0.1:0"), ("--metrics-listen", "127.0.0.1:0")] {
            let at = try #require(arguments.firstIndex(of: option), "the unit's ExecStart has no \(option)")
            arguments[at + 1] = value
        }
        try FileManager.default.createDirectory(atPath: work.path + "/state", withIntermediateDirectories: true)
        let relay = try RelayProcess(commandLine: arguments + ["--no-discovery", "--log-format", "json"])
        let ready = await relay.ready()
        #expect(ready?["listen"]?.hasPrefix("127.0.0.1:") == true, "\(relay.log.value)")
        #expect(ready?["metrics"]?.hasPrefix("127.0.0.1:") == true, "metrics on loopback: \(relay.log.value)")
        #expect(text.contains("KillSignal=SIGTERM"))
        #expect(await relay.terminate() == 0)
    }
}
