import Crypto
import Gossip
import Testing

@Suite("The push budget: what a link sends unasked is charged, whatever it declared; a link that floods is dropped, nothing is lost")
struct PushBudgetTests {
    static func pushes(_ a: Author, _ sequences: ClosedRange<UInt64>) throws -> [CarriedEnvelope] {
        var previous = MessageID.zero
        return try sequences.map { s in
            let e = try a.envelope(s, previous: previous)
            previous = e.id
            return CarriedEnvelope(hops: 0, envelope: e)
        }
    }

    @Test("envelopes asked for are free; the rest spend the budget: at the burst taken, one past drops the link; it refills over time")
    func budget() throws {
        let me = try SigningKey.generate().publicKey
        let a = try Author()
        var r = Replicator(me: me, clock: VectorClock(), random: SystemRandomNumberGenerator())
        r.pushBudget = (burst: 3, perSecond: 1)
        r.pullBudget = (burst: 3, perSecond: 1)
        _ = r.linkUp(1, now: 0)
        // The peer declares 2 of a's: we ask for them, so those two are free.
        let asked = r.clockReceived(1, entries: [Dependency(author: a.key.publicKey, sequence: 2)], full: true, now: 0)
        #expect(requests(asked) == [GossipRequest(author: a.key.publicKey, from: 1, count: 2)])
        let all = try Self.pushes(a, 1...8)
        var actions = r.envelopesReceived(1, Array(all[0..<5]), now: 0)  // 2 asked + 3 pushes: at the burst
        #expect(actions.first == .verifyAndStore(1, Array(all[0..<5])))
        #expect(!actions.contains { if case .pushesLimited = $0 { true } else { false } })
        // Half a second later half a token has come back: not enough for one more.
        actions = r.envelopesReceived(1, [all[5]], now: 0.5)
        #expect(actions == [.pushesLimited(1, 1)])
        #expect(r.knownClock(of: 1) == nil, "the link is dropped")

        // A new link refills: one push per second after the burst.
        _ = r.linkUp(2, now: 10)
        _ = r.clockReceived(2, entries: [], full: true, now: 10)
        let b = try Author()
        let more = try Self.pushes(b, 1...5)
        #expect(r.envelopesReceived(2, Array(more[0..<3]), now: 10) == [.verifyAndStore(2, Array(more[0..<3]))])
        #expect(r.envelopesReceived(2, [more[3]], now: 11) == [.verifyAndStore(2, [more[3]])])
        #expect(r.envelopesReceived(2, [more[4]], now: 11) == [.pushesLimited(2, 1)])
    }

    @Test("finding 3: declaring a large clock of one's own buys nothing: what it then sends unasked is charged, and a link that never declared is charged from its first envelope")
    func declaredIsNotFree() throws {
        let me = try SigningKey.generate().publicKey
        let a = try Author()
        var r = Replicator(me: me, clock: VectorClock(), random: SystemRandomNumberGenerator())
        r.pushBudget = (burst: 3, perSecond: 0)
        r.pullBudget = (burst: 3, perSecond: 0)
        _ = r.linkUp(1, now: 0)
        // It declares 3,000 of its own; we ask for the first three only (the pull budget).
        let asked = r.clockReceived(1, entries: [Dependency(author: a.key.publicKey, sequence: 3_000)], full: true, now: 0)
        #expect(requests(asked) == [GossipRequest(author: a.key.publicKey, from: 1, count: 3)])
        let all = try Self.pushes(a, 1...10)
        // 3 asked + 3 pushes (the burst) are taken; the seventh drops the link.
        let actions = r.envelopesReceived(1, Array(all[0..<7]), now: 0)
        #expect(actions == [.verifyAndStore(1, Array(all[0..<6])), .pushesLimited(1, 1)])

        // No clock at all: no grace either.
        _ = r.linkUp(2, now: 100)
        let b = try Self.pushes(try Author(), 1...4)
        #expect(r.envelopesReceived(2, b, now: 100) == [.verifyAndStore(2, Array(b[0..<3])), .pushesLimited(2, 1)])
    }
}
