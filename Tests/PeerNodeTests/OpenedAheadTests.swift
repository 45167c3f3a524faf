import Crypto
import Gossip
@testable import PeerNode
import Testing

/// Bodies opened for the store's kind column, kept for the show that
/// follows (`OpenedAhead`): never for an envelope pruned since, never
/// more than `OpenedAhead.limit`, nothing after a clear.
@Suite("Bodies opened once on the way in")
struct OpenedAheadTests {
    let key: SigningKey
    let room = RoomID.random()
    let body = [UInt8](repeating: 7, count: SealedBody.smallestBucket + SymmetricKey.overhead)

    init() throws { key = try SigningKey.generate() }

    func post(_ sequence: UInt64, previous: MessageID = .zero, erases: [UInt64] = []) throws -> Envelope {
        try Envelope.sign(by: key, sequence: sequence, previous: previous, dependencies: [], timestamp: sequence, room: room,
                          erases: erases, body: body)
    }

    func opened(_ text: String) -> OpenedEnvelope { OpenedEnvelope(kind: .text, content: Array(text.utf8), peer: nil) }

    @Test("taken once by the id it was kept for; an envelope erased since (pruned) is never answered from it")
    func takenOnceNotPruned() throws {
        var ahead = OpenedAhead()
        let first = try post(1)
        let second = try post(2, previous: first.id)
        ahead.keep(opened("one"), for: first)
        ahead.keep(opened("two"), for: second)
        #expect(ahead.take(second)?.content == Array("two".utf8))
        #expect(ahead.take(second) == nil)
        let erasing = try post(3, previous: second.id, erases: [1])
        let pruned = try #require(first.pruned(by: erasing))
        #expect(ahead.take(pruned) == nil)
        // Taken out all the same: the whole body is not kept for a later ask.
        #expect(ahead.take(first) == nil && ahead.count == 0)
    }

    @Test("at the limit all are kept; one past it drops the others; a clear keeps nothing")
    func bounded() throws {
        var ahead = OpenedAhead()
        var previous = MessageID.zero
        var posts: [Envelope] = []
        for sequence in 1...UInt64(OpenedAhead.limit + 1) {
            let e = try post(sequence, previous: previous)
            previous = e.id
            posts.append(e)
        }
        for e in posts.prefix(OpenedAhead.limit) { ahead.keep(opened("x"), for: e) }
        #expect(ahead.count == OpenedAhead.limit)
        ahead.keep(opened("last"), for: posts[OpenedAhead.limit])
        #expect(ahead.count == 1 && ahead.take(posts[0]) == nil)
        ahead.keep(opened("again"), for: posts[0])
        ahead.clear()
        #expect(ahead.count == 0 && ahead.take(posts[0]) == nil && ahead.take(posts[OpenedAhead.limit]) == nil)
    }
}
