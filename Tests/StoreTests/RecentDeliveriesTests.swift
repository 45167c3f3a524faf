import Crypto
import Gossip
@testable import Store
import TestSupport
import Testing

/// `Store.delivered(after:limit:)` hands out what it has just delivered from
/// memory (`RecentDeliveries`); it must hand out exactly what the rows hold.
@Suite("Recent deliveries held in memory")
struct RecentDeliveriesTests {
    /// What `delivered(after:)` gives, then the same read from the rows (the copy emptied first).
    func bothWays(_ store: Store, after: Int64, limit: Int = 10_000) throws -> (memory: [StoredEnvelope], rows: [StoredEnvelope]) {
        let memory = try store.delivered(after: after, limit: limit)
        store.recentDeliveries.removeAll()
        return (memory, try store.delivered(after: after, limit: limit))
    }

    @Test("handed out from memory as the rows hold them: in order, out-of-order arrivals delivered late, limits, nothing new")
    func matchesRows() throws {
        let f = try StoreFixture()
        let store = try #require(f.store)
        let a = try ChainAuthor(), b = try ChainAuthor()
        var shown: Int64 = 0
        for round in 0..<5 {
            let a1 = try a.next("a \(round)", timestamp: UInt64(10 * round))
            let b1 = try b.next("b \(round)", timestamp: UInt64(10 * round + 1), dependencies: [Dependency(author: a.publicKey, sequence: a1.sequence)])
            let a2 = try a.next("a' \(round)", timestamp: UInt64(10 * round + 2))
            // b's first names a's: sent ahead of it, it waits and is delivered with it.
            _ = try store.insert([b1], receivedAt: 1)
            _ = try store.insert([a1, a2], receivedAt: 1)
            let (memory, rows) = try bothWays(store, after: shown)
            #expect(memory == rows && memory.count == 3)
            #expect(Set(memory.map(\.envelope.id)) == [a1.id, b1.id, a2.id])
            shown = try #require(memory.last).delivery
        }
        #expect(try store.delivered(after: shown).isEmpty)
        // A limit, and reading on from where it stopped.
        for i in 0..<6 { _ = try store.insert([try a.next("more \(i)")], receivedAt: 1) }
        let first = try store.delivered(after: shown, limit: 4)
        #expect(first.count == 4)
        let (memory, rows) = try bothWays(store, after: try #require(first.last).delivery)
        #expect(memory == rows && memory.count == 2)
    }

    @Test("a store that holds none (a relay's) keeps none and hands out from the rows what one that holds them would")
    func holdsNone() throws {
        let holding = try StoreFixture(), bare = try StoreFixture()
        let held = try #require(holding.store), relay = try #require(bare.store)
        relay.holdsRecentDeliveries = false
        let a = try ChainAuthor(), b = try ChainAuthor()
        let a1 = try a.next("a 1", timestamp: 1)
        let b1 = try b.next("b 1", timestamp: 2, dependencies: [Dependency(author: a.publicKey, sequence: a1.sequence)])
        let a2 = try a.next("a 2", timestamp: 3)
        for store in [held, relay] {
            // Delivered on insert (a1, a2) and later, when what it names comes (b1).
            _ = try store.insert([b1], receivedAt: 1)
            _ = try store.insert([a1, a2], receivedAt: 1)
        }
        #expect(held.recentDeliveries.count == 3)
        #expect(relay.recentDeliveries.count == 0)
        #expect(try relay.delivered(after: 0) == held.delivered(after: 0))
        #expect(try relay.delivered(after: 1, limit: 1).map(\.envelope.id) == held.delivered(after: 1, limit: 1).map(\.envelope.id))
        // Turned off later, what it held goes.
        held.holdsRecentDeliveries = false
        #expect(held.recentDeliveries.count == 0)
    }

    @Test("an erasure empties the copy: the erased message is handed out pruned, as its row holds it")
    func erasureEmptiesIt() throws {
        let f = try StoreFixture()
        let store = try #require(f.store)
        let author = try ChainAuthor()
        let key = SymmetricKey.generate()
        let room = RoomID.random()
        let original = try author.nextSealed("a distinctive secret", key: key, room: room)
        let tombstone = try author.nextSealed("", kind: .tombstone, key: key, room: room, erases: [1])
        // Both in one write, before anyone read the first.
        _ = try store.insert([original, tombstone], receivedAt: 1)
        let delivered = try store.delivered(after: 0)
        #expect(delivered.count == 2)
        #expect(delivered.first?.envelope.isPruned == true && delivered.first?.envelope.id == original.id)
    }

    @Test("RecentDeliveries.maximumCount held, one past it pushes out the oldest (then the rows are read)")
    func countLimit() throws {
        let a = try ChainAuthor()
        let e = try a.next("x")
        var recent = RecentDeliveries()
        let limit = RecentDeliveries.maximumCount
        for n in 1...limit { recent.append(StoredEnvelope(envelope: e, causalTime: 0, delivery: Int64(n))) }
        #expect(recent.count == limit)
        #expect(recent.take(after: 0, limit: .max, newest: Int64(limit))?.count == limit)
        recent.append(StoredEnvelope(envelope: e, causalTime: 0, delivery: Int64(limit + 1)))
        #expect(recent.count == limit)
        #expect(recent.take(after: 0, limit: .max, newest: Int64(limit + 1)) == nil)
        #expect(recent.take(after: 1, limit: .max, newest: Int64(limit + 1))?.count == limit)
    }

    @Test("RecentDeliveries.maximumBytes held, one byte past it pushes out the oldest; a gap in the numbers empties it")
    func byteLimitAndGap() throws {
        let a = try ChainAuthor()
        let e = try a.next(String(repeating: "x", count: 1_000))
        let size = e.encoded.count
        let fit = RecentDeliveries.maximumBytes / size
        var recent = RecentDeliveries()
        for n in 1...fit { recent.append(StoredEnvelope(envelope: e, causalTime: 0, delivery: Int64(n))) }
        #expect(recent.count == fit)
        recent.append(StoredEnvelope(envelope: e, causalTime: 0, delivery: Int64(fit + 1)))
        #expect(recent.count == fit)
        #expect(recent.take(after: 0, limit: .max, newest: Int64(fit + 1)) == nil)
        recent.append(StoredEnvelope(envelope: e, causalTime: 0, delivery: Int64(fit + 5)))
        #expect(recent.count == 1)
        #expect(recent.take(after: Int64(fit + 4), limit: .max, newest: Int64(fit + 5))?.count == 1)
    }
}
