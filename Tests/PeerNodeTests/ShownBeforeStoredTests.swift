import Foundation
import TestSupport
import Testing

/// A message that continues its author's chain is shown before the store's
/// transaction that keeps it (docs/DECISIONS.md, "Shown before stored"):
/// the line must be the one the store then delivers, once, numbered as
/// `/history` numbers it; everything that reads the store about it (an
/// edit, a reaction, a delete) waits for the store and still finds it.
@Suite("Messages shown before they are stored")
struct ShownBeforeStoredTests {
    @Test("live messages are shown ahead of their store, each once, numbered as /history numbers them; an edit, a reaction and a delete that follow land on them; nothing is shown twice")
    func liveMessagesShownAhead() async throws {
        let (_, a, b) = try await aliceAndBob()
        // Each line comes alone on a live link, so is shown before its store; under load one may share a
        // batch with alice's nick or a receipt, or come while an earlier batch is still being stored, and
        // then waits for the store with what follows it. So lines go on (up to `spare` more) until two were
        // shown ahead: load costs lines, not the verdict.
        var texts = try await sendShownAhead(from: a, to: b, ["one", "two", "three", "four"], until: 2)
        a.send("/edit 2 two, edited")
        let edit = await b.wait { $0["type"] == "edit" }
        let two = b.events.value.first { $0["type"] == "message" && $0["text"] == "two" }
        #expect(edit?["original"] == two?["id"] && edit?["text"] == "two, edited", "\(String(describing: edit))")
        a.send("/react 3 👍")
        #expect(await b.wait { $0["type"] == "reaction" && $0["reaction"] == "👍" && $0["count"] == "1" } != nil, "\(b.recent(3))")
        a.send("/delete 1")
        let one = b.events.value.first { $0["type"] == "message" && $0["text"] == "one" }
        #expect(await b.wait { $0["type"] == "delete" && $0["id"] == one?["id"] } != nil, "\(b.recent(3))")
        // After an edit, a reaction and a delete have been stored, a live line is shown ahead again.
        let before = await shownAhead(b)
        texts += try await sendShownAhead(from: a, to: b, ["five"], until: before + 1)

        // Each line once, numbered 1…N in the order shown, as bob's /history has them.
        let lines = b.events.value.filter { $0["type"] == "message" && $0["author"] == a.id }
        #expect(lines.compactMap { $0["text"] } == texts, "\(lines)")
        #expect(lines.compactMap { $0["n"] } == (1...texts.count).map(String.init), "\(lines)")
        let mark = b.events.value.count
        b.send("/history \(texts.count + 5)")
        let history = await eventuallyValue(30) { () -> [[String: String]]? in
            let rows = b.events.value.dropFirst(mark).filter { $0["type"] == "history_message" }
            return rows.count >= texts.count - 1 ? rows : nil
        } ?? []
        let numbered = Dictionary(history.compactMap { row in row["n"].map { ($0, row["text"] ?? "") } }, uniquingKeysWith: { first, _ in first })
        #expect(numbered["2"] == "two, edited" && numbered["3"] == "three" && numbered["4"] == "four", "\(history)")
        for (i, text) in texts.enumerated().dropFirst(4) { #expect(numbered["\(i + 1)"] == text, "\(history)") }
        let stats = await b.stats()
        #expect(stats?["shown_again"] == nil || stats?["shown_again"] == "0", "\(stats ?? [:])")
        await a.quit(); await b.quit()
    }

    /// Lines that may be spent beyond those asked for, waiting for one to be shown ahead.
    static let spare = 12

    /// Sends `texts` from `a`, each once `b` showed the one before; then
    /// more (`more 1`, `more 2`, …, at most `spare`) until `b` has shown
    /// `count` ahead of their store (fails the test if it never does).
    /// Every line sent, in order.
    func sendShownAhead(from a: NodeProcess, to b: NodeProcess, _ texts: [String], until count: Int) async throws -> [String] {
        var sent: [String] = []
        var next = texts[...]
        var extra = 0
        while true {
            let text = next.popFirst() ?? "more \(sent.count + 1)"
            a.send(text)
            sent.append(text)
            try #require(await b.wait { $0["type"] == "message" && $0["text"] == text } != nil, "\(b.recent(3))")
            guard next.isEmpty else { continue }
            if await shownAhead(b) >= count { return sent }
            extra += 1
            guard extra <= Self.spare else {
                Issue.record("bob showed fewer than \(count) lines ahead of their store in \(sent.count) sent")
                return sent
            }
        }
    }

    /// Bob's `shown_ahead` counter now.
    func shownAhead(_ b: NodeProcess) async -> Int { Int(await b.stats()?["shown_ahead"] ?? "") ?? 0 }

    @Test("a catch-up shows every message once, in order, numbered 1…N as /history numbers them (its large batches after their store, as before)")
    func catchUpOnce() async throws {
        let dirs = (0..<2).map { _ in TemporaryDirectory() }
        let a = try NodeProcess(dir: dirs[0].path, ["--nick", "alice"])
        #expect(await started(a))
        let count = 300
        for i in 1...count { a.send("line \(i)") }
        #expect(await a.wait { $0["type"] == "message" && $0["text"] == "line \(count)" } != nil)
        // An edit in the middle of the history: the run shown ahead stops at it, the store shows the rest.
        a.send("/edit 150 line 150, edited")
        #expect(await a.wait { $0["type"] == "edit" } != nil)
        for i in count + 1...count + 20 { a.send("line \(i)") }
        #expect(await a.wait { $0["type"] == "message" && $0["text"] == "line \(count + 20)" } != nil)

        let b = try NodeProcess(dir: dirs[1].path, ["--nick", "bob", "--peer", a.url])
        #expect(await started(b))
        #expect(await b.wait(timeout: 60) { $0["type"] == "message" && $0["text"] == "line \(count + 20)" } != nil, "\(b.recent(3))")
        let lines = b.events.value.filter { $0["type"] == "message" && $0["author"] == a.id }
        #expect(lines.count == count + 20, "\(lines.count) lines")
        #expect(lines.compactMap { $0["n"] } == (1...count + 20).map(String.init))
        #expect(lines.compactMap { $0["text"] } == (1...count + 20).map { "line \($0)" })
        let stats = await b.stats()
        #expect(stats?["shown_again"] == nil || stats?["shown_again"] == "0", "\(stats ?? [:])")
        await a.quit(); await b.quit()
    }

    @Test("a small batch after a link comes back (a message and a reply to it, bob away meanwhile): the reply quotes it, each shown once and numbered")
    func replyBesideWhatItAnswers() async throws {
        let (dirs, a, b) = try await aliceAndBob()
        a.send("before")
        #expect(await b.wait { $0["type"] == "message" && $0["text"] == "before" } != nil)
        await b.quit()
        a.send("the question")
        #expect(await a.wait { $0["type"] == "message" && $0["text"] == "the question" } != nil)
        a.send("/reply 2 the answer")
        #expect(await a.wait { $0["type"] == "message" && $0["text"] == "the answer" } != nil)
        // Bob back: the two come in one small batch, shown before their store; the reply after what it answers.
        let back = try NodeProcess(dir: dirs[1].path, ["--nick", "bob", "--peer", a.url])
        #expect(await started(back))
        let answer = await back.wait { $0["type"] == "message" && $0["text"] == "the answer" }
        #expect(answer?["reply_to_state"] == "here" && answer?["reply_to_text"] == "the question" && answer?["n"] == "3", "\(back.recent(4))")
        let question = back.events.value.filter { $0["type"] == "message" && $0["text"] == "the question" }
        #expect(question.count == 1 && question.first?["n"] == "2", "\(question)")
        let stats = await back.stats()
        #expect((Int(stats?["shown_ahead"] ?? "") ?? 0) >= 1, "\(stats ?? [:]) \(back.recent(12))")
        await a.quit(); await back.quit()
    }
}
