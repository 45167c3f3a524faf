import Foundation
import Glibc
import TestSupport
import Testing

/// `--web`'s page and API from outside: Python `websockets` and
/// `http.client` (Tests/PeerNodeTests/Peers/web_api_check.py) against a
/// node linked to another that speaks --json lines.
@Suite("The web API: who gets in, commands and their limits, a post that reaches a peer and its answer")
struct WebAPITests {
    static let python = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent(".build/peers-venv/bin/python").path
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Peers/web_api_check.py").path

    @Test("token, Origin and Host checked; bad JSON, unknown commands and fields, binary, the size limit and one past, the client limit and one past; a post from the API reaches a --json peer inert and its answer comes back live; web-url --new closes the old token's clients")
    func api() async throws {
        guard FileManager.default.isExecutableFile(atPath: Self.python) else {
            Issue.record("Python with websockets not found at \(Self.python): run `make test`, which installs the test peers")
            return
        }
        let dirs = [TemporaryDirectory(), TemporaryDirectory()]
        let a = try NodeProcess(dir: dirs[0].path, ["--nick", "alice", "--web", "127.0.0.1:0"])
        #expect(await started(a))
        let b = try NodeProcess(dir: dirs[1].path, ["--nick", "bob", "--peer", a.url])
        #expect(await started(b))
        #expect(await linked(a, to: b))
        #expect(await linked(b, to: a))
        let web = await a.wait { $0["type"] == "web" }
        let url = try #require(web?["url"], "no web event: \(a.events.value.prefix(5))")
        // http://127.0.0.1:PORT/#token=HEX
        let afterScheme = url.dropFirst("http://".count)
        let address = String(afterScheme.prefix { $0 != "/" })
        let token = String(url.split(separator: "=").last ?? "")
        #expect(token.count == 64)
        // web-url prints the same address, without a node's help.
        let printed = try await PeerNodeProcess.run(["web-url", "--data-dir", dirs[0].path])
        #expect(printed.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == url, "\(printed.stdout) \(printed.stderr)")

        let check = try Child(Self.python, [Self.script, address, token, PeerNodeProcess.binary, dirs[0].path],
                              environment: ProcessInfo.processInfo.environment.merging(["PYTHONUNBUFFERED": "1"]) { $1 },
                              stdin: .pipe, stdout: .pipe, stderr: .stdout)
        let posted = await eventuallyValue(60) { () -> String?? in
            if let line = check.output.split(separator: "\n").first(where: { $0.hasPrefix("POSTED ") }) { return .some(String(line.dropFirst(7))) }
            return check.isRunning ? nil : .some(nil)
        }
        let id = try #require(posted ?? nil, "the check never posted:\n\(check.output)")
        // Bob sees the post as text, the markup in it as characters.
        let seen = await b.wait { $0["type"] == "message" && $0["id"] == id }
        #expect(seen?["text"] == "<img src=x onerror=alert(1)> from the page", "\(seen ?? [:])")
        b.send("hi page")
        check.send("REPLIED\n")
        let status = await check.exited()
        #expect(status == 0, "\(check.output)")
        #expect(!check.output.contains("FAIL"), "\(check.output)")
        await a.quit()
        await b.quit()
        withExtendedLifetime(dirs) {}
    }

    @Test("--web on an address other machines reach needs --web-allow-remote; a bad --web is a usage error")
    func remoteNeedsConsent() async throws {
        let dir = TemporaryDirectory()
        let refused = try await PeerNodeProcess.run(["--data-dir", dir.path, "--no-discovery", "--web", "0.0.0.0:0"], input: "")
        #expect(refused.status == 2 && refused.stderr.contains("--web-allow-remote"), "\(refused.stderr)")
        let bad = try await PeerNodeProcess.run(["--data-dir", dir.path, "--no-discovery", "--web", "nowhere"], input: "")
        #expect(bad.status == 2 && bad.stderr.contains("--web takes"), "\(bad.stderr)")
        let none = try await PeerNodeProcess.run(["web-url", "--data-dir", dir.path])
        #expect(none.status == 1 && none.stderr.contains("--web"), "\(none.stderr)")
    }
}
