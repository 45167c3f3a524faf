import Crypto
import Foundation
import Gossip
@testable import PeerNode
@testable import Store
import TestSupport
import Testing

/// Failures are heard (issue 40, first part): a store read or write that
/// fails where the caller cannot throw is counted and said, never taken
/// for "not found" in silence.
@Suite("Store failures reach the user", .serialized)
struct StoreFailureTests {
    let life = MessageLifeRulesTests()
    let bob = try! SigningKey.generate()  // test input

    @Test("the same failure recurring (a write on every tick on a full disk) is said once, then again at repeatAfter, not one second before; other words at once; each one counted")
    func saidOnceAMinute() {
        let failures = StoreFailures()
        var clock = 100.0
        failures.now = { clock }
        let full = StoreError.directory(path: "/data", operation: "writing", errno: 28)
        failures.failed("writing the search index", full)
        let first = failures.take()
        #expect(first != nil)
        clock += StoreFailures.repeatAfter - 1
        failures.failed("writing the search index", full)
        #expect(failures.take() == nil, "the same words, within repeatAfter")
        failures.failed("reading a file's chunk map", full)
        #expect(failures.take()?.hasPrefix("the database failed (reading a file's chunk map)") == true, "other words at once")
        failures.failed("writing the search index", full)
        #expect(failures.take() == nil, "words taking turns are each said once a minute (a full disk fails the store, the clock save and the index in turn)")
        clock += 1
        failures.failed("writing the search index", full)
        #expect(failures.take() == first, "said again at repeatAfter")
        #expect(failures.count == 5)
    }

    @Test("at most StoreFailures.maximumRemembered different words are held back: with that many said, the oldest may be said again; with one fewer, not")
    func rememberedAtTheLimit() {
        let full = StoreError.directory(path: "/data", operation: "writing", errno: 28)
        for extra in [0, 1] {
            let failures = StoreFailures()
            var clock = 100.0
            failures.now = { clock }
            for i in 0..<(StoreFailures.maximumRemembered - 1 + extra) {
                failures.failed("saving the clock of peer \(i)", full)
                #expect(failures.take() != nil)
                clock += 0.01
            }
            failures.failed("writing the search index", full)
            #expect(failures.take() != nil)
            failures.failed("saving the clock of peer 0", full)
            #expect((failures.take() != nil) == (extra == 1), "\(StoreFailures.maximumRemembered - 1 + extra) remembered before")
        }
    }

    @Test("a failing read of edits and a failing write of a reaction: each counted (store_read_failed) and kept to be said once, with what was being done; the message shows as first written")
    func inProcess() throws {
        let dir = TemporaryDirectory()
        let node = try life.node(dir)
        _ = try node.join(life.name)
        let steps: [(Kind, [UInt8], [UInt64])] = [(.text, Array("first words".utf8), [])]
        let original = try life.chain(bob, on: node, steps)[0]
        _ = try node.store.insert([original], receivedAt: 1)
        let opened = try #require(node.open(original))
        #expect(node.storeFailures.count == 0 && node.storeFailures.take() == nil)

        // The edits table gone under the node: the read throws.
        try node.store.db.execute("DROP TABLE edits")
        node.store.db.resetStatements()
        let shown = node.messageLife.currentText(of: original, opened: opened)
        #expect(shown.text.unsanitized == "first words" && !shown.edited)
        #expect(node.storeFailures.count == 1)
        let said = node.storeFailures.take() ?? ""
        #expect(said.hasPrefix("the database failed (reading a message's edits): "), "\(said)")
        #expect(node.storeFailures.take() == nil, "said once")

        // A reaction whose write fails is not applied, and that is said.
        try node.store.db.execute("DROP TABLE reactions")
        node.store.db.resetStatements()
        let reaction = try life.chain(bob, on: node, after: [original],
                                      [(.reaction, try Reaction(target: MessageRef(original), reaction: "👍").encoded, [])])[0]
        #expect(node.reactions.accept(reaction, try #require(node.open(reaction))) == nil)
        #expect(node.storeFailures.count >= 2)
        #expect((node.storeFailures.take() ?? "").contains("recording a reaction"))
    }

    @Test("a running node whose reactions table, then edits table, is dropped under it: /history says the database failed, as an error event; /edit fails with the database's words; /stats counts both")
    func runningNode() async throws {
        let (dirs, a, b) = try await aliceAndBob()
        a.send("a line to list")
        #expect(await b.wait { $0["type"] == "message" && $0["text"] == "a line to list" } != nil)
        let dropped = try await runToEnd("/usr/bin/sqlite3", [dirs[1].path + "/peernode.db", "DROP TABLE reactions;"], combined: true)
        #expect(dropped.status == 0, "\(dropped.stdout)")
        b.send("/history 5")
        let error = await b.wait { $0["type"] == "error" && ($0["error"] ?? "").hasPrefix("the database failed (reading") }
        #expect(error != nil, "\(b.recent(6))")
        #expect(await counterAtLeast(b, "store_read_failed", 1), "\(b.recent(4))")

        // A command over a failing store fails with the database's words and is counted; nothing is posted.
        b.send("bob's line")
        #expect(await a.wait { $0["type"] == "message" && $0["text"] == "bob's line" } != nil)
        let droppedEdits = try await runToEnd("/usr/bin/sqlite3", [dirs[1].path + "/peernode.db", "DROP TABLE edits;"], combined: true)
        #expect(droppedEdits.status == 0, "\(droppedEdits.stdout)")
        b.send("/edit changed words")
        let refused = await b.wait { $0["type"] == "error" && ($0["error"] ?? "").hasPrefix("the database failed (reading a message's edits): ") }
        #expect(refused != nil, "\(b.recent(6))")
        #expect(await counterAtLeast(b, "store_read_failed", 2), "\(b.recent(4))")
        for n in [a, b] { _ = await n.quit() }
    }
}
