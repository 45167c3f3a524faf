import Crypto
import Gossip
import Store
import TestSupport
import Testing

@Suite("Room history, causal delivery, unread counts")
struct StoreHistoryTests {
    @Test("nothing is delivered before what it depends on; the room is in causal order")
    func causal() throws {
        let fixture = try StoreFixture()
        let store = try #require(fixture.store)
        let alice = try ChainAuthor()
        let bob = try ChainAuthor()
        // Alice's clock is ahead: her question has a later timestamp than Bob's answer.
        let question = try alice.next("question?", timestamp: 10_000)
        let answer = try bob.next("answer", timestamp: 5_000, dependencies: [Dependency(author: alice.publicKey, sequence: 1)])
        _ = try store.insert([answer], receivedAt: 1)
        #expect(try store.history(of: general, limit: 10).isEmpty)
        #expect(try store.undeliveredCount() == 1)
        _ = try store.insert([question], receivedAt: 2)
        let history = try store.history(of: general, limit: 10).map(\.envelope)
        #expect(history == [question, answer])
        // Causal time lifts the answer past its question.
        #expect(try store.history(of: general, limit: 10).map(\.causalTime) == [10_000, 10_001])
    }

    @Test("concurrent messages order by timestamp, then id; the same on every node")
    func concurrent() throws {
        let alice = try ChainAuthor()
        let bob = try ChainAuthor()
        let carol = try ChainAuthor()
        let messages = [
            try alice.next("a1", timestamp: 300), try bob.next("b1", timestamp: 100),
            try carol.next("c1", timestamp: 200), try alice.next("a2", timestamp: 150),
            try carol.next("c2", timestamp: 200),
        ]
        var orders: [[MessageID]] = []
        for permutation in [messages, messages.reversed(), messages.shuffled()] {
            let fixture = try StoreFixture()
            let store = try #require(fixture.store)
            for e in permutation { _ = try store.insert([e], receivedAt: 1) }
            orders.append(try store.history(of: general, limit: 10).map(\.envelope.id))
        }
        #expect(orders[0] == orders[1] && orders[1] == orders[2])
        let byKey = Dictionary(uniqueKeysWithValues: messages.map { ($0.id, $0) })
        let times = orders[0].compactMap { byKey[$0]?.timestamp }
        // a2 comes after a1 (its chain), lifted to 301; the rest by timestamp.
        #expect(times == [100, 200, 200, 300, 150])
    }

    @Test("history pages walk backwards with a cursor")
    func pages() throws {
        let fixture = try StoreFixture()
        let store = try #require(fixture.store)
        let alice = try ChainAuthor()
        let chain = try (1...25).map { try alice.next("m\($0)", timestamp: UInt64($0)) }
        _ = try store.insert(chain, receivedAt: 1)
        let last = try store.history(of: general, limit: 10)
        #expect(last.map(\.envelope) == Array(chain[15..<25]))
        let first = try #require(last.first)
        let before = try store.history(of: general, limit: 10, before: HistoryCursor(causalTime: first.causalTime, id: first.envelope.id))
        #expect(before.map(\.envelope) == Array(chain[5..<15]))
    }

    @Test("unread counts others' text and actions after the read mark; rooms list most recent first")
    func unread() throws {
        let fixture = try StoreFixture()
        let store = try #require(fixture.store)
        let me = try ChainAuthor()
        let bob = try ChainAuthor()
        let random = RoomID.publicRoom(try RoomName("#random"), network: testNetwork)
        try store.registerRoom(general, name: "#general")
        try store.registerRoom(random, name: "#random")
        _ = try store.insert([bob.next("1", timestamp: 10), bob.next("2", timestamp: 20),
                              bob.next("joins", timestamp: 30, kind: .join)], receivedAt: 1)
        _ = try store.insertOwn(me.next("mine", timestamp: 40), at: 2)
        #expect(try store.unreadCount(of: general, me: me.publicKey) == 2)
        try store.markRead(general)
        #expect(try store.unreadCount(of: general, me: me.publicKey) == 0)
        _ = try store.insert([bob.next("in random", timestamp: 50, room: random)], receivedAt: 3)
        let rooms = try store.roomSummaries(me: me.publicKey)
        #expect(rooms.map(\.name) == ["#random", "#general"])
        #expect(rooms.map(\.unread) == [1, 0])
        #expect(rooms.first?.last?.envelope.body == Array("in random".utf8))
    }
}
