import Foundation
import TestSupport
import Testing

@Suite("The terminal UI, typed into through a pseudo-terminal")
struct TerminalTests {
    @Test("prompt; half-typed line redrawn when a message arrives; editing keys; history; Tab; mention bell; inert escapes; prompt marks (read, …, ✓); Ctrl-C and a crash signal restore the terminal")
    func session() async throws {
        let work = TemporaryDirectory()
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Peers/terminal_session.py").path
        let result = try await runToEnd("/usr/bin/python3", [script, PeerNodeProcess.binary, work.path])
        let output = result.stdout
        #expect(result.status == 0, "\(output)\n\(result.stderr)")
        #expect(output.contains("Ctrl-C exits 0 and the terminal is restored"), "\(output)")
        #expect(output.contains("a crash signal (SIGSEGV) restores the terminal"), "\(output)")
    }
}
