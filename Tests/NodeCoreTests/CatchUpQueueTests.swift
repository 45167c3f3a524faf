import Crypto
import Gossip
import NodeCore
import Testing

@Suite("Catch-up queue (pure)")
struct CatchUpQueueTests {
    @Test("one range per author: a second request merges into it; an empty range adds nothing")
    func merge() throws {
        let a = try SigningKey.generate().publicKey, b = try SigningKey.generate().publicKey
        var q = CatchUpQueue()
        q.add(author: a, from: 10, through: 20)
        q.add(author: a, from: 5, through: 12)
        q.add(author: a, from: 30, through: 40)
        q.add(author: b, from: 3, through: 2)
        #expect(q.ranges.count == 1 && q.ranges[0].next == 5 && q.ranges[0].through == 40)
        q.add(author: b, from: 1, through: 1)
        #expect(q.ranges.map(\.author) == [a, b])
    }

    @Test("reads while less than the window waits unsent, at the window waits for half of it")
    func window() throws {
        let a = try SigningKey.generate().publicKey
        var q = CatchUpQueue()
        #expect(q.next(unsent: 0) == .idle)
        q.add(author: a, from: 1, through: 1_000)
        #expect(q.next(unsent: CatchUpQueue.window - 1) == .read(author: a, from: 1, count: Replicator.batchSize))
        #expect(q.next(unsent: CatchUpQueue.window) == .wait(below: CatchUpQueue.window / 2))
    }

    @Test("a read that did not all fit in one message asks for fewer next time, then doubles back; the range ends at its end, at a store gap, or where the peer's version stops")
    func pacing() throws {
        let a = try SigningKey.generate().publicKey
        var q = CatchUpQueue()
        q.add(author: a, from: 1, through: 1_000)
        q.took(read: Replicator.batchSize, sent: 10, last: 10, chainEnds: false)
        #expect(q.next(unsent: 0) == .read(author: a, from: 11, count: 10))
        q.took(read: 10, sent: 10, last: 20, chainEnds: false)
        #expect(q.next(unsent: 0) == .read(author: a, from: 21, count: 20))
        q.took(read: 20, sent: 20, last: 1_000, chainEnds: false)
        #expect(q.isEmpty, "reached through")
        q.add(author: a, from: 1, through: 1_000)
        q.took(read: 0, sent: 0, last: nil, chainEnds: false)
        #expect(q.isEmpty, "the store had nothing more")
        q.add(author: a, from: 1, through: 1_000)
        q.took(read: 5, sent: 2, last: 2, chainEnds: true)
        #expect(q.isEmpty, "an older peer reads no further")
        q.add(author: a, from: 1, through: 3)
        #expect(q.next(unsent: 0) == .read(author: a, from: 1, count: 3), "never past through")
    }

    @Test("a revoker's range goes first: ahead of the others but not of the one being sent, in the order they came among themselves")
    func revokersFirst() throws {
        let (a, b, r1, r2) = (try SigningKey.generate().publicKey, try SigningKey.generate().publicKey,
                              try SigningKey.generate().publicKey, try SigningKey.generate().publicKey)
        var q = CatchUpQueue()
        q.add(author: a, from: 1, through: 5)
        q.add(author: b, from: 1, through: 5)
        q.add(author: r1, from: 1, through: 2, first: true)
        q.add(author: r2, from: 1, through: 2, first: true)
        #expect(q.ranges.map(\.author) == [a, r1, r2, b], "the range on its way stays first")
        var empty = CatchUpQueue()
        empty.add(author: r1, from: 1, through: 2, first: true)
        empty.add(author: a, from: 1, through: 2)
        empty.add(author: r2, from: 1, through: 2, first: true)
        #expect(empty.ranges.map(\.author) == [r1, r2, a])
    }
}
