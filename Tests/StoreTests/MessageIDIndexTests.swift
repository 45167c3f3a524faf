import Crypto
import Foundation
import Gossip
@testable import Store
import TestSupport
import Testing

/// The index of messages by id (`Store.indexesMessageIDs`): a node keeps it,
/// a relay drops it (docs/DECISIONS.md, "A relay keeps no index of message ids").
@Suite("The index of message ids")
struct MessageIDIndexTests {
    /// How SQLite would find a delivered envelope by its id: the plan's steps.
    /// Prepared anew each time (a comment of its own): a cached EXPLAIN is
    /// not prepared again when the schema changes, as a query is.
    func lookupPlan(_ store: Store) throws -> [String] {
        let plan = try store.db.statement(
            "EXPLAIN QUERY PLAN /* \(UUID()) */ SELECT bytes FROM envelopes WHERE substr(id, 1, 8) = substr(?1, 1, 8) AND id = ?1 AND delivery IS NOT NULL")
        var steps: [String] = []
        while try plan.step() { steps.append(plan.text(3) ?? "") }
        return steps
    }

    func indexCount(_ store: Store) throws -> Int64 {
        try store.db.integer("SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = '\(Store.messageIDIndex)'")
    }

    @Test("dropped, a lookup by id still finds every message (by a scan) and inserts write no entry; kept again, it is rebuilt over what came meanwhile and used, and it stays through a reopen")
    func droppedAndKept() throws {
        let f = try StoreFixture()
        let a = try ChainAuthor()
        var sent: [Envelope] = []
        do {
            let store = try #require(f.store)
            #expect(try indexCount(store) == 1, "a new store has it (migration 12)")
            let plan = try lookupPlan(store)
            #expect(plan.contains { $0.contains(Store.messageIDIndex) }, "\(plan)")
            sent.append(try a.next("before"))
            _ = try store.insert(sent, receivedAt: 1)

            #expect(try store.indexesMessageIDs(false), "dropped")
            #expect(try indexCount(store) == 0)
            let scan = try lookupPlan(store)
            #expect(!scan.contains { $0.contains(Store.messageIDIndex) }, "\(scan)")
            #expect(try !store.indexesMessageIDs(false), "twice: nothing to drop")
            for i in 0..<20 { sent.append(try a.next("while dropped \(i)")) }
            _ = try store.insert(Array(sent[1...]), receivedAt: 1)
            for e in sent { #expect(try store.delivered(id: e.id)?.envelope.id == e.id) }
            #expect(try store.delivered(id: MessageID(bytes: [UInt8](repeating: 7, count: 32))) == nil)
        }
        try f.reopen()
        let store = try #require(f.store)
        #expect(try indexCount(store) == 0, "dropped stays dropped: no migration makes it again")
        #expect(try store.indexesMessageIDs(true), "made")
        #expect(try !store.indexesMessageIDs(true), "twice: already there")
        #expect(try indexCount(store) == 1)
        let plan = try lookupPlan(store)
        #expect(plan.contains { $0.contains(Store.messageIDIndex) }, "\(plan)")
        // Every entry is there: SQLite's own check of the index against the table.
        #expect(try store.db.text("PRAGMA integrity_check") == "ok")
        for e in sent { #expect(try store.delivered(id: e.id)?.envelope.id == e.id) }
    }
}
