import Foundation
import TestSupport
import Testing

// What the web suites share: Alice serving the page, Bob linked to her at
// the --json lines, and the Python test peers that check them.

enum WebPeers {
    /// The virtualenv `make test` fills with Python `websockets`.
    static let python = repository + "/.build/peers-venv/bin/python"

    /// The checkout this test file is in.
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    /// Where the web suites leave their screenshots and what each check said (.build).
    static let logDirectory = repository + "/.build"

    static let chromium = "/usr/bin/chromium"

    /// True (and a recorded issue naming them) when any of `programs` is not
    /// there: a web test without its peers fails loudly, never passes.
    static func missing(_ programs: [String]) -> Bool {
        let absent = programs.filter { !FileManager.default.isExecutableFile(atPath: $0) }
        guard !absent.isEmpty else { return false }
        Issue.record("\(absent.joined(separator: " and ")) missing: run `make test`, which installs the test peers")
        return true
    }

    /// A peer script of Tests/PeerNodeTests/Peers, started with its stdin
    /// and stdout piped (stderr joins stdout).
    /// Whether a check started by `start` printed the line `word` within
    /// `timeout` seconds (false at once if it ended without).
    static func said(_ check: Child, _ word: String, timeout: Double = 90) async -> Bool {
        await eventuallyValue(timeout) { () -> Bool? in
            if check.output.split(separator: "\n").contains(where: { $0 == word }) { return true }
            return check.isRunning ? nil : false
        } == true
    }

    static func start(_ script: String, _ arguments: [String]) throws -> Child {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Peers/" + script).path
        return try Child(python, [path] + arguments,
                         environment: ProcessInfo.processInfo.environment.merging(["PYTHONUNBUFFERED": "1"]) { $1 },
                         stdin: .pipe, stdout: .pipe, stderr: .stdout)
    }
}

/// Alice with `--web` on a free port and Bob dialling her, both up and
/// linked; the page's URL and what is in it.
struct PageAndPeer {
    let dirs: [TemporaryDirectory]
    let a: NodeProcess
    let b: NodeProcess
    /// http://127.0.0.1:PORT/#token=HEX
    let url: String
    /// "127.0.0.1:PORT"
    let address: String
    let token: String

    init() async throws {
        dirs = [TemporaryDirectory(), TemporaryDirectory()]
        a = try NodeProcess(dir: dirs[0].path, ["--nick", "alice", "--web", "127.0.0.1:0"])
        #expect(await started(a))
        b = try NodeProcess(dir: dirs[1].path, ["--nick", "bob", "--peer", a.url])
        #expect(await started(b))
        #expect(await linked(a, to: b))
        #expect(await linked(b, to: a))
        let alice = a
        url = try #require(await a.wait { $0["type"] == "web" }?["url"], "no web event: \(alice.events.value.prefix(5))")
        address = String(url.dropFirst("http://".count).prefix { $0 != "/" })
        token = String(url.split(separator: "=").last ?? "")
    }
}
