import Foundation
import Glibc
import TestSupport
import Testing

/// `--web`'s page and API from outside: Python `websockets` and
/// `http.client` (Tests/PeerNodeTests/Peers/web_api_check.py) against a
/// node linked to another that speaks --json lines.
@Suite("The web API: who gets in, commands and their limits, a post that reaches a peer and its answer")
struct WebAPITests {
    @Test("token, Origin and Host checked; bad JSON, unknown commands and fields, binary, the size limit and one past, the client limit and one past; a post from the API reaches a --json peer inert and its answer comes back live; web-url --new closes the old token's clients")
    func api() async throws {
        if WebPeers.missing([WebPeers.python]) { return }
        let pair = try await PageAndPeer()
        let (dirs, a, b, url, address, token) = (pair.dirs, pair.a, pair.b, pair.url, pair.address, pair.token)
        #expect(token.count == 64)
        // web-url prints the same address, without a node's help.
        let printed = try await PeerNodeProcess.run(["web-url", "--data-dir", dirs[0].path])
        #expect(printed.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == url, "\(printed.stdout) \(printed.stderr)")

        // A room Bob posts in before Alice joins it: her node holds it sealed until she does.
        for line in ["/join #later", "posted before joining", "/join #general"] { b.send(line) }
        let bob = b.id
        let early = await b.wait { $0["type"] == "message" && $0["author"] == bob && $0["text"] == "posted before joining" }
        let earlyID = try #require(early?["id"])
        #expect(await b.wait { $0["type"] == "receipt" && $0["id"] == earlyID && $0["state"] == "stored" } != nil, "Alice never stored it")
        let check = try WebPeers.start("web_api_check.py", [address, token, PeerNodeProcess.binary, dirs[0].path])
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
        // What each check said, to read after a run.
        try? check.output.write(toFile: WebPeers.logDirectory + "/web-api.log", atomically: true, encoding: .utf8)
        #expect(status == 0, "\(check.output)")
        #expect(!check.output.contains("FAIL"), "\(check.output)")
        await a.quit()
        await b.quit()
        withExtendedLifetime(dirs) {}
    }

    @Test("the example bot of docs/API.md, run as written, answers a peer's !ping with pong")
    func exampleBot() async throws {
        if WebPeers.missing([WebPeers.python]) { return }
        let doc = try String(contentsOfFile: WebPeers.repository + "/docs/API.md", encoding: .utf8)
        let section = try #require(doc.range(of: "## An example bot"), "docs/API.md has no example bot")
        let rest = doc[section.upperBound...]
        let start = try #require(rest.range(of: "```python\n")), end = try #require(rest.range(of: "\n```", range: start.upperBound..<rest.endIndex))
        let dir = TemporaryDirectory()
        let bot = dir.path + "/bot.py"
        try String(rest[start.upperBound..<end.lowerBound]).write(toFile: bot, atomically: true, encoding: .utf8)
        let pair = try await PageAndPeer()
        let running = try Child(WebPeers.python, [bot, pair.url], stdin: .pipe, stdout: .pipe, stderr: .stdout)
        let alice = pair.a.id
        // The bot is connected once its hello came; a first !ping may be
        // sent before that, so ask again until it answers.
        var pong: [String: String]?
        for _ in 0..<15 where pong == nil && running.isRunning {
            pair.b.send("!ping")
            pong = await pair.b.wait(timeout: 2) { $0["type"] == "message" && $0["author"] == alice && $0["text"] == "pong" }
        }
        #expect(pong?["room"] == "#general", """
            no pong: \(running.output)
            alice's node: \(pair.a.child.exitStatus.map { "ended with status \($0)" } ?? "running"), last events: \(pair.a.recent(8))
            its log: \(pair.a.log.suffix(3_000))
            """)
        running.signal(SIGTERM)
        await pair.a.quit()
        await pair.b.quit()
        withExtendedLifetime((dir, pair.dirs)) {}
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
