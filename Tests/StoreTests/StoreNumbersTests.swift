import Crypto
import Foundation
import Gossip
@testable import Store
import TestSupport
import Testing

/// Messages' numbers in their rooms (`StoreNumbers.swift`): what `/history`
/// shows as "(N)" and `/edit N` names.
@Suite("Message numbers")
struct StoreNumbersTests {
    /// Each delivered envelope's number, read from the rows (the copy in memory emptied first).
    func numbersFromRows(_ store: Store) throws -> [MessageID: Int?] {
        store.recentDeliveries.removeAll()
        var out: [MessageID: Int?] = [:]
        for s in try store.delivered(after: 0) { out[s.envelope.id] = try store.number(of: s) }
        return out
    }

    @Test("texts, actions and replies take their room's next number as they are delivered; receipts, edits, reactions and nicks take none; each room counts its own")
    func onlyMessages() throws {
        let f = try StoreFixture()
        let store = try #require(f.store)
        let a = try ChainAuthor(), b = try ChainAuthor()
        let other = RoomID.publicRoom(try RoomName("lunch"), network: testNetwork)
        let one = try a.next("one")
        let receipt = try b.next("r", kind: .receipt)
        let two = try a.next("two", kind: .action)
        let reaction = try b.next("x", kind: .reaction)
        let elsewhere = try b.next("first in #lunch", room: other)
        let edit = try a.next("one, edited", kind: .edit)
        let nick = try b.next("bob", kind: .nick)
        let three = try b.next("three", kind: .reply)
        var fromMemory: [MessageID: Int?] = [:]
        for e in [one, receipt, two, reaction, elsewhere, edit, nick, three] {
            _ = try store.insert([e], receivedAt: 1)
            for s in try store.delivered(after: store.lastDelivery - 1) { fromMemory[s.envelope.id] = s.number }
        }
        let expected: [MessageID: Int?] = [one.id: 1, receipt.id: nil, two.id: 2, reaction.id: nil, elsewhere.id: 1,
                                           edit.id: nil, nick.id: nil, three.id: 3]
        #expect(fromMemory == expected)
        #expect(try numbersFromRows(store) == expected)
        for (n, e) in [(1, one), (2, two), (3, three)] {
            #expect(try store.envelope(numbered: n, in: general)?.envelope.id == e.id)
        }
        #expect(try store.envelope(numbered: 1, in: other)?.envelope.id == elsewhere.id)
        #expect(try store.envelope(numbered: 4, in: general) == nil)
        #expect(try store.envelope(numbered: 0, in: general) == nil)
    }

    @Test("a room's file offers are read through their own index: newest first, each with its number, none of the other messages, no other room's, at most the limit")
    func fileOffers() throws {
        let f = try StoreFixture()
        let store = try #require(f.store)
        let a = try ChainAuthor(), b = try ChainAuthor()
        let other = RoomID.publicRoom(try RoomName("lunch"), network: testNetwork)
        var offers: [Envelope] = []
        for i in 0..<30 {
            _ = try store.insert([try a.next("text \(i)")], receivedAt: 1)
            if i % 10 == 9 {
                let offer = try b.next("offer \(i)", kind: .file)
                offers.append(offer)
                _ = try store.insert([offer, try a.next("receipt", kind: .receipt)], receivedAt: 1)
            }
        }
        _ = try store.insert([try b.next("offer elsewhere", room: other, kind: .file)], receivedAt: 1)
        let found = try store.fileOffers(in: general, limit: 10)
        #expect(found.map(\.envelope.id) == offers.reversed().map(\.id))
        #expect(found.map(\.number) == [33, 22, 11], "the offers' numbers among the room's texts: \(found.map(\.number))")
        #expect(try found.allSatisfy { try store.number(of: $0) == $0.number })
        #expect(try store.fileOffers(in: general, limit: 2).map(\.envelope.id) == [offers[2].id, offers[1].id])
        #expect(try store.fileOffers(in: general, limit: 0).isEmpty)
        #expect(try store.fileOffers(in: other, limit: 10).count == 1)
        #expect(try store.fileOffers(in: RoomID.random(), limit: 10).isEmpty)
        // Through the index, not a scan of the room.
        let plan = try store.db.statement(
            "EXPLAIN QUERY PLAN SELECT bytes FROM envelopes WHERE room = 1 AND kind = \(Kind.file.rawValue) AND number IS NOT NULL ORDER BY number DESC LIMIT 5")
        var steps: [String] = []
        while try plan.step() { steps.append(plan.text(3) ?? "") }
        #expect(steps.contains { $0.contains("envelopes_files") }, "\(steps)")
    }

    @Test("an envelope that waited for what it names is numbered when it is delivered, after what it waited for; numbers go on after a reopen")
    func lateDeliveryAndReopen() throws {
        let f = try StoreFixture()
        let a = try ChainAuthor(), b = try ChainAuthor()
        let first = try a.next("first")
        let answer = try b.next("answer", dependencies: [Dependency(author: a.publicKey, sequence: 1)])
        do {
            let store = try #require(f.store)
            _ = try store.insert([answer], receivedAt: 1)
            #expect(try store.delivered(after: 0).isEmpty)
            _ = try store.insert([first], receivedAt: 1)
            #expect(try numbersFromRows(store) == [first.id: 1, answer.id: 2])
        }
        try f.reopen()
        let store = try #require(f.store)
        let later = try a.next("later")
        _ = try store.insert([later], receivedAt: 1)
        #expect(try numbersFromRows(store)[later.id] == 3)
    }

    @Test("a write that fails gives its number back: the next message takes it, with no gap")
    func failedWrite() throws {
        let f = try StoreFixture()
        let store = try #require(f.store)
        let a = try ChainAuthor()
        _ = try store.insert([try a.next("one")], receivedAt: 1)
        // The second insert fails after its number was taken, and is rolled back.
        try store.db.execute("CREATE TEMP TRIGGER refuse BEFORE INSERT ON main.envelopes WHEN NEW.sequence = 2 BEGIN SELECT RAISE(ABORT, 'refused'); END")
        let two = try a.next("two")
        #expect(throws: SQLiteError.self) { _ = try store.insert([two], receivedAt: 1) }
        try store.db.execute("DROP TRIGGER refuse")
        _ = try store.insert([two], receivedAt: 1)
        #expect(try numbersFromRows(store)[two.id] == 2)
    }

    @Test("an erased message keeps its number, and so does every message after it; a message stored sealed takes the room's next number once its room can be read")
    func erasedAndSealed() throws {
        let f = try StoreFixture()
        let store = try #require(f.store)
        let author = try ChainAuthor()
        let key = SymmetricKey.generate()
        let room = RoomID.random()
        func sign(_ text: String, _ kind: Kind = .text, erases: [UInt64] = []) throws -> Envelope {
            try author.nextSealed(text, kind: kind, key: key, room: room, erases: erases)
        }
        // Not readable yet: stored, delivered, sealed, unnumbered.
        let early = try sign("before the key")
        _ = try store.insert([early], receivedAt: 1)
        #expect(try numbersFromRows(store)[early.id] == .some(nil))
        store.kindOf = { try? SealedBody.open($0, key: key).kind }
        let one = try sign("one"), two = try sign("two"), three = try sign("three")
        _ = try store.insert([one, two, three], receivedAt: 1)
        #expect(try store.fileSealed(in: room) == 1)
        let filed = try numbersFromRows(store)
        #expect(filed[one.id] == 1 && filed[two.id] == 2 && filed[three.id] == 3 && filed[early.id] == 4, "\(filed)")
        let tombstone = try sign("", .tombstone, erases: [3])
        let four = try sign("four")
        _ = try store.insert([tombstone, four], receivedAt: 1)
        let after = try numbersFromRows(store)
        #expect(try store.envelope(numbered: 2, in: room)?.envelope.isPruned == true)
        #expect(after[one.id] == 1 && after[two.id] == 2 && after[three.id] == 3 && after[early.id] == 4 && after[four.id] == 5,
                "\(after)")
        #expect(after[tombstone.id] == .some(nil))
    }
}
