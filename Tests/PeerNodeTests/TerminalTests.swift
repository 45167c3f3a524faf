import Foundation
import TestSupport
import Testing

@Suite("The terminal UI, typed into through a pseudo-terminal")
struct TerminalTests {
    @Test("prompt; half-typed line redrawn when a message arrives; editing keys; history; Tab; mention bell; inert escapes; files dropped (one, then two at once) asked before they go; a paste of 1,001 lines refused; prompt marks (read, …, ✓); Ctrl-C and a crash signal restore the terminal")
    func session() async throws {
        let result = try await Self.run("terminal_session.py")
        let output = result.stdout
        #expect(result.status == 0, "\(output)\n\(result.stderr)")
        #expect(output.contains("Ctrl-C exits 0 and the terminal is restored"), "\(output)")
        #expect(output.contains("a crash signal (SIGSEGV) restores the terminal"), "\(output)")
        #expect(output.contains("two files dropped at once ask once: y offers each, anything else sends nothing"), "\(output)")
        #expect(output.contains("32 files dropped at once are asked about; 33 are refused, nothing sent"), "\(output)")
        #expect(output.contains("a folder dropped is not sent, and its path is not posted unasked"), "\(output)")
        #expect(output.contains("a paste of 1,000 lines asks; one of 1,001 is refused whole and said, and typing goes on"), "\(output)")
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

@Suite("Windows at the terminal: a room or conversation each, the act list, bounded backlog")
struct WindowsTests {
    @Test("a fresh node's catch-up prints counts and the last 20 rows; other rooms and direct messages go to the act list; /switch and /window open them; entering says how many came")
    func windows() async throws {
        let result = try await TerminalTests.run("windows_session.py")
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("all checked"), "\(result.stdout)")
    }
}

@Suite("Presence: who is online network-wide, away, quit, a relay's name")
struct PresenceTests {
    @Test("through a relay and two hops: online, /away with a reason, /who per account, /back, /quit with a reason (not history); the relay's beacon names it and it is no room's member")
    func presence() async throws {
        let result = try await TerminalTests.run("presence_check.py")
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("all checked"), "\(result.stdout)")
    }

    @Test("five nodes in a line with --max-links 1: every /who shows all five online; /away seen everywhere; a /quit shows as gone with its reason; nothing of it in any node's files")
    func five() async throws {
        let result = try await TerminalTests.run("presence_five.py")
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("all checked"), "\(result.stdout)")
    }
}

@Suite("Who is who at the terminal: the newcomer's mark, /block with the screen's label, /edit N alone")
struct IdentityScreenTests {
    @Test("two identities named bob: the first keeps a clean label, the newcomer carries ⚠; /block bob⚠·fp as shown hides the right one; /edit 1 alone is refused")
    func identities() async throws {
        let result = try await TerminalTests.run("identity_session.py")
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("all checked"), "\(result.stdout)")
    }
}
