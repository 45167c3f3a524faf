import Foundation
import TestSupport
import Testing

/// `--json` tells the backlog from live messages (issue 44: a `!ping` bot answered every old `!ping` at its first start).
@Suite("The end of the backlog in --json")
struct CaughtUpTests {
    @Test("a fresh node's catch-up: the history comes tagged backlog, then caught_up once, then live messages untagged")
    func backlogThenLive() async throws {
        let dirs = (0..<2).map { _ in TemporaryDirectory() }
        let a = try NodeProcess(dir: dirs[0].path, ["--nick", "alice"])
        #expect(await started(a))
        for i in 1...3 { a.send("!ping \(i)") }
        #expect(await a.wait { $0["text"] == "!ping 3" } != nil)
        #expect(!a.events.value.contains { $0["text"]?.hasPrefix("!ping") == true && $0["backlog"] != nil }, "our own posts are never backlog")
        let b = try NodeProcess(dir: dirs[1].path, ["--nick", "bot", "--peer", a.url])
        #expect(await started(b))
        let caught = await b.wait(timeout: 30) { $0["type"] == "caught_up" }
        #expect(caught != nil && Int(caught?["held"] ?? "") ?? 0 >= 3, "\(b.recent(6))")
        let events = b.events.value
        let end = try #require(events.firstIndex { $0["type"] == "caught_up" })
        let old = events.filter { $0["text"]?.hasPrefix("!ping") == true }
        #expect(old.count == 3 && old.allSatisfy { $0["backlog"] == "yes" }, "\(old)")
        #expect(events.prefix(end).filter { $0["text"]?.hasPrefix("!ping") == true }.count == 3, "the backlog comes before caught_up")
        a.send("!ping live")
        let live = await b.wait { $0["text"] == "!ping live" }
        #expect(live != nil && live?["backlog"] == nil, "\(live ?? [:])")
        #expect(b.events.value.filter { $0["type"] == "caught_up" }.count == 1, "said once")
        await a.quit(); await b.quit()
        withExtendedLifetime(dirs) {}
    }
}
