import Crypto
import Gossip
import NodeCore
import Testing

private func key() throws -> PublicKey { try SigningKey.generate().publicKey }
private func room(_ n: UInt8) throws -> RoomID { try RoomID(bytes: [UInt8](repeating: n, count: RoomID.byteCount)) }

@Suite("Receipt ledger (pure)")
struct ReceiptLedgerTests {
    @Test("what was shown is owed once per room and interval: delivered always, read only for the open room with read receipts on; own messages and non-messages owe nothing")
    func owed() throws {
        let me = try key(), alice = try key()
        let general = try room(1), other = try room(2)
        var ledger = ReceiptLedger(me: me, sendsRead: true)
        ledger.shown(author: alice, sequence: 3, in: general, isMessage: true, current: true)
        ledger.shown(author: alice, sequence: 2, in: general, isMessage: true, current: true)  // lower: no change
        ledger.shown(author: alice, sequence: 9, in: other, isMessage: true, current: false)
        ledger.shown(author: me, sequence: 5, in: general, isMessage: true, current: true)
        ledger.shown(author: alice, sequence: 10, in: general, isMessage: false, current: true)
        let due = ledger.due(now: 100)
        let inGeneral = due.filter { $0.room == general }.map(\.receipt)
        #expect(inGeneral == [Receipt(state: .delivered, marks: [Dependency(author: alice, sequence: 3)]),
                              Receipt(state: .read, marks: [Dependency(author: alice, sequence: 3)])])
        #expect(due.filter { $0.room == other }.map(\.receipt) == [Receipt(state: .delivered, marks: [Dependency(author: alice, sequence: 9)])])
        #expect(ledger.due(now: 100).isEmpty, "paid")
        // Within the interval a new debt waits; at the interval it goes.
        ledger.shown(author: alice, sequence: 4, in: general, isMessage: true, current: false)
        #expect(ledger.due(now: 100 + ReceiptLedger.interval - 0.01).isEmpty)
        #expect(ledger.due(now: 100 + ReceiptLedger.interval).map(\.receipt) == [Receipt(state: .delivered, marks: [Dependency(author: alice, sequence: 4)])])
        // Read receipts off: only delivered.
        ledger.sendsRead = false
        ledger.shown(author: alice, sequence: 5, in: other, isMessage: true, current: true)
        #expect(ledger.due(now: 200).map(\.receipt.state) == [.delivered])
    }

    @Test("more authors than one receipt holds go in further receipts, at the limit and one past it, in author order")
    func manyAuthors() throws {
        let general = try room(1)
        var ledger = ReceiptLedger(me: try key())
        let authors = try (0...Receipt.maximumMarks).map { _ in try key() }
        for a in authors { ledger.shown(author: a, sequence: 1, in: general, isMessage: true, current: true) }
        let due = ledger.due(now: 0)
        #expect(due.map(\.receipt.marks.count) == [Receipt.maximumMarks, 1])
        let named = due.flatMap(\.receipt.marks).map(\.author)
        #expect(named == authors.sorted())
        #expect(due.allSatisfy { Receipt.decode($0.receipt.encoded) == $0.receipt })
    }

    @Test("stored: the first peer to store each of ours reports it once; receipts report each peer's new range per state")
    func ours() throws {
        let me = try key(), bob = try key(), carol = try key()
        let general = try room(1), other = try room(2)
        var ledger = ReceiptLedger(me: me)
        #expect(ledger.stored(through: 3) == 1...3)
        #expect(ledger.stored(through: 3) == nil && ledger.stored(through: 2) == nil)
        #expect(ledger.stored(through: 5) == 4...5)
        let delivered5 = Receipt(state: .delivered, marks: [Dependency(author: bob, sequence: 1), Dependency(author: me, sequence: 5)])
        #expect(ledger.arrived(delivered5, from: bob, in: general)! == (Receipt.State.delivered, 1...5))
        #expect(ledger.arrived(delivered5, from: bob, in: general) == nil, "nothing new")
        #expect(ledger.arrived(delivered5, from: carol, in: general)! == (Receipt.State.delivered, 1...5), "each peer its own")
        #expect(ledger.arrived(delivered5, from: bob, in: other)! == (Receipt.State.delivered, 1...5), "each room its own")
        #expect(ledger.arrived(Receipt(state: .read, marks: [Dependency(author: me, sequence: 2)]), from: bob, in: general)! == (Receipt.State.read, 1...2))
        #expect(ledger.arrived(Receipt(state: .read, marks: [Dependency(author: bob, sequence: 9)]), from: bob, in: general) == nil, "not about us")
        #expect(ledger.arrived(delivered5, from: me, in: general) == nil, "our own receipt")
    }

    @Test("the prompt's mark: local, stored (a clock, any receipt or a store), delivered and read when every linked member says so")
    func mark() throws {
        let me = try key(), bob = try key(), carol = try key()
        let general = try room(1)
        var ledger = ReceiptLedger(me: me)
        #expect(ledger.state(in: general, linked: [bob], claims: [:]) == nil, "nothing posted")
        ledger.posted(4, in: general)
        #expect(ledger.state(in: general, linked: [bob], claims: [bob: 3]) == .local)
        #expect(ledger.state(in: general, linked: [bob], claims: [bob: 4]) == .stored)
        _ = ledger.arrived(Receipt(state: .delivered, marks: [Dependency(author: me, sequence: 4)]), from: bob, in: general)
        _ = ledger.arrived(Receipt(state: .delivered, marks: [Dependency(author: me, sequence: 3)]), from: carol, in: general)
        #expect(ledger.state(in: general, linked: [bob, carol], claims: [:]) == .stored, "carol has not shown it")
        #expect(ledger.state(in: general, linked: [bob], claims: [:]) == .delivered, "carol not linked: not counted")
        _ = ledger.arrived(Receipt(state: .read, marks: [Dependency(author: me, sequence: 4)]), from: bob, in: general)
        #expect(ledger.state(in: general, linked: [bob], claims: [:]) == .read)
        ledger.posted(5, in: general)
        #expect(ledger.state(in: general, linked: [bob], claims: [:]) == .local)
        _ = ledger.stored(through: 5)
        #expect(ledger.state(in: general, linked: [], claims: [:]) == .stored)
    }
}
