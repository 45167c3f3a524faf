import Foundation
import TestSupport
import Testing

@Suite("The terminal UI, typed into through a pseudo-terminal")
struct TerminalTests {
    @Test("prompt; half-typed line redrawn when a message arrives; editing keys; history; Tab; mention bell; inert escapes; Ctrl-C restores the terminal")
    func session() throws {
        let work = TemporaryDirectory()
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Peers/terminal_session.py").path
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        p.arguments = [script, PeerNodeProcess.binary, work.path]
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try launch(p)
        let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "\(output)\n\(errors)")
        #expect(output.contains("Ctrl-C exits 0 and the terminal is restored"), "\(output)")
    }
}
