import Foundation
import TestSupport
import Testing

@Suite("The terminal UI, typed into through a pseudo-terminal")
struct TerminalTests {
    @Test("prompt; half-typed line redrawn when a message arrives; editing keys; history; Tab; mention bell; inert escapes; prompt marks (read, …, ✓); Ctrl-C and a crash signal restore the terminal")
    func session() async throws {
        let result = try await Self.run("terminal_session.py")
        let output = result.stdout
        #expect(result.status == 0, "\(output)\n\(result.stderr)")
        #expect(output.contains("Ctrl-C exits 0 and the terminal is restored"), "\(output)")
        #expect(output.contains("a crash signal (SIGSEGV) restores the terminal"), "\(output)")
    }

    /// Runs a script of Peers/ that drives nodes in pseudo-terminals: the
    /// node's binary and a work directory as its arguments.
    static func run(_ script: String) async throws -> (status: Int32, stdout: String, stderr: String) {
        let work = TemporaryDirectory()
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Peers/" + script).path
        let result = try await runToEnd("/usr/bin/python3", [path, PeerNodeProcess.binary, work.path])
        withExtendedLifetime(work) {}
        return (result.status, result.stdout, result.stderr)
    }
}
