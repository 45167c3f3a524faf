import Crypto
import Gossip
import Testing

@Suite("The push budget: a link that floods is dropped, nothing is lost")
struct PushBudgetTests {
    static func pushes(_ a: Author, _ sequences: ClosedRange<UInt64>) throws -> [CarriedEnvelope] {
        var previous = MessageID.zero
        return try sequences.map { s in
            let e = try a.envelope(s, previous: previous)
            previous = e.id
            return CarriedEnvelope(hops: 0, envelope: e)
        }
    }

    @Test("pushes beyond the declared clock spend the budget: at the burst taken, one past drops the link; it refills over time; catch-up within the declared clock is free")
    func budget() throws {
        let me = try SigningKey.generate().publicKey
        let a = try Author()
        var r = Replicator(me: me, clock: VectorClock(), random: SystemRandomNumberGenerator())
        r.pushBudget = (burst: 3, perSecond: 1)
        _ = r.linkUp(1, now: 0)
        // The peer declares it holds 2 of a's: those two are catch-up, free.
        _ = r.clockReceived(1, entries: [Dependency(author: a.key.publicKey, sequence: 2)], full: true)
        let all = try Self.pushes(a, 1...8)
        var actions = r.envelopesReceived(1, Array(all[0..<5]), now: 0)  // 2 free + 3 pushes: at the burst
        #expect(actions == [.verifyAndStore(1, Array(all[0..<5]))])
        // Half a second later half a token has come back: not enough for one more.
        actions = r.envelopesReceived(1, [all[5]], now: 0.5)
        #expect(actions == [.pushesLimited(1, 1)])
        #expect(r.knownClock(of: 1) == nil, "the link is dropped")

        // A new link refills: one push per second after the burst.
        _ = r.linkUp(2, now: 10)
        _ = r.clockReceived(2, entries: [], full: true)
        let b = try Author()
        let more = try Self.pushes(b, 1...5)
        #expect(r.envelopesReceived(2, Array(more[0..<3]), now: 10) == [.verifyAndStore(2, Array(more[0..<3]))])
        #expect(r.envelopesReceived(2, [more[3]], now: 11) == [.verifyAndStore(2, [more[3]])])
        #expect(r.envelopesReceived(2, [more[4]], now: 11) == [.pushesLimited(2, 1)])
    }

    @Test("a link whose clock is not known yet spends no budget for undeclaredGrace seconds, then does")
    func grace() throws {
        let me = try SigningKey.generate().publicKey
        var r = Replicator(me: me, clock: VectorClock(), random: SystemRandomNumberGenerator())
        r.pushBudget = (burst: 1, perSecond: 0)
        _ = r.linkUp(1, now: 0)
        let early = try Self.pushes(try Author(), 1...4)
        #expect(r.envelopesReceived(1, early, now: Replicator.undeclaredGrace - 0.001) == [.verifyAndStore(1, early)])
        let late = try Self.pushes(try Author(), 1...2)
        #expect(r.envelopesReceived(1, late, now: Replicator.undeclaredGrace) == [.verifyAndStore(1, [late[0]]), .pushesLimited(1, 1)])
    }
}
