import Foundation
import TestSupport
import Testing

/// Direct conversations in `/rooms` (and the API's `rooms`, which lists them the same way).
@Suite("Direct conversations in /rooms")
struct ConversationListTests {
    /// Tries at the race the premise needs (below).
    static let attempts = 6

    @Test("a conversation whose only message came in an earlier run, stopped before its receipt went, is in /rooms after a restart")
    func earlierRunNoReceipt() async throws {
        // The premise is a race: alice's delivered receipt goes at her next once-a-second tick, and she is
        // killed before it only if the message, its indexing and the kill fall in one tick. A run where the
        // receipt went would test nothing (alice wrote in the conversation), so it is tried again, a few times.
        var dirs: [TemporaryDirectory] = []
        var premise = false, bob = ""
        for _ in 0..<Self.attempts where !premise {
            let (tried, a, b) = try await aliceAndBob()
            dirs = tried
            bob = b.id
            b.send("/msg \(a.id) a word before you go")
            #expect(await a.wait { $0["type"] == "message" && $0["kind"] == "dm" && $0["text"] == "a word before you go" } != nil,
                    "\(a.recent(4))")
            // Indexed now, so the next run has no reason to open it before /rooms.
            a.send("/search before")
            #expect(await a.wait { $0["type"] == "search" && $0["count"] == "1" } != nil, "\(a.recent(4))")
            await a.kill()
            _ = await b.quit()
            premise = !b.events.value.contains { $0["type"] == "receipt" && $0["by"] == a.id && $0["state"] != "stored" }
        }
        #expect(premise, "the premise: alice sent no receipt, so she never wrote in the conversation (\(Self.attempts) tries)")
        let again = try NodeProcess(dir: dirs[0].path, ["--nick", "alice"])
        #expect(await started(again))
        again.send("/rooms")
        #expect(await again.wait { $0["type"] == "conversation" && $0["with"] == bob } != nil, "\(again.recent(6))")
        _ = await again.quit()
        withExtendedLifetime(dirs) {}
    }
}

/// What `/history`, `/search`, `/mentions` and `/rooms` answer in `--json` (they printed nothing there before).
@Suite("Listing commands answer scripts")
struct ScriptAnswerTests {
    @Test("in --json: /history N gives its head and the last N messages with their numbers, oldest first; /search, /mentions and /rooms a head with the count, then rows")
    func listings() async throws {
        let dir = TemporaryDirectory()
        let a = try NodeProcess(dir: dir.path, ["--nick", "alice", "--no-discovery"])
        #expect(await started(a))
        a.send("hello there")
        a.send("/me waves")
        #expect(await a.wait { $0["type"] == "message" && $0["kind"] == "action" } != nil)
        a.send("/history 5")
        #expect(await a.wait { $0["type"] == "history" && $0["room"] == "#general" && $0["count"] == "2" } != nil, "\(a.recent(4))")
        let rows = a.events.value.filter { $0["type"] == "history_message" }
        #expect(rows.map { $0["text"] ?? "" } == ["hello there", "waves"] && rows.map { $0["n"] ?? "" } == ["1", "2"], "\(rows)")
        a.send("/history 1")
        #expect(await a.wait { $0["type"] == "history" && $0["count"] == "1" } != nil)
        #expect(a.events.value.last { $0["type"] == "history_message" }?["text"] == "waves")
        a.send("/search hello")
        #expect(await a.wait { $0["type"] == "search" && $0["text"] == "hello" && $0["count"] == "1" } != nil, "\(a.recent(4))")
        #expect(await a.wait { $0["type"] == "found" && $0["text"] == "hello there" && $0["n"] == "1" } != nil, "\(a.recent(4))")
        a.send("/mentions")
        #expect(await a.wait { $0["type"] == "mentions" && $0["count"] == "0" } != nil, "\(a.recent(4))")
        a.send("/rooms")
        #expect(await a.wait { $0["type"] == "rooms" && $0["count"] == "1" } != nil, "\(a.recent(4))")
        #expect(await a.wait { $0["type"] == "conversation" && $0["room"] == "#general" && $0["last_text"] == "waves" } != nil, "\(a.recent(4))")
        // A command with no event of its own says what the terminal says, as a notice.
        a.send("/join #lunch")
        #expect(await a.wait { $0["type"] == "notice" && ($0["text"] ?? "").contains("#lunch") } != nil, "\(a.recent(4))")
        _ = await a.quit()
    }
}
