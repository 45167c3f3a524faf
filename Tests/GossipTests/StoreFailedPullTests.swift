import Crypto
import Gossip
import Testing

/// What a link sent and this node's store did not keep (a full disk) is
/// asked for again at once, not after `Replicator.pullTimeout`.
@Suite("What the store did not keep is asked for again")
struct StoreFailedPullTests {
    @Test("a range answered in full and not stored is not asked again while the store keeps failing; once it keeps something, at once, not after the pull timeout")
    func askedAgain() throws {
        let a = try Author()
        var r = Replicator(me: try SigningKey.generate().publicKey, clock: VectorClock(), random: SystemRandomNumberGenerator())
        _ = r.linkUp(1, now: 0)
        let asked = requests(r.clockReceived(1, entries: [Dependency(author: a.key.publicKey, sequence: 5)], full: true, now: 0))
        #expect(asked == [GossipRequest(author: a.key.publicKey, from: 1, count: 5)])
        let e = try PushBudgetTests.pushes(a, 1...6)
        let answers = Array(e[0..<5])
        _ = r.envelopesReceived(1, answers, now: 1)
        // The store failed: nothing inserted, the clock did not move. Not asked again at once (a full
        // disk would ask and fail as fast as the link answers), nor at the ticks after.
        var again = requests(r.stored(from: 1, checked: answers, inserted: [], invalid: 0, newClock: [], now: 2))
        for second in 3...10 { again += requests(r.tick(now: Double(second))) }
        #expect(again.isEmpty)
        // The store keeps the next one (past the gap): the range is asked for again at once.
        _ = r.envelopesReceived(1, [e[5]], now: 11)
        again = requests(r.stored(from: 1, checked: [e[5]], inserted: [e[5]], invalid: 0,
                                  newClock: [Dependency(author: a.key.publicKey, sequence: 0)], now: 11))
        #expect(again.first?.author == a.key.publicKey && again.first?.from == 1, "\(again)")
        // Answered and stored this time: nothing more is asked.
        _ = r.envelopesReceived(1, answers, now: 12)
        _ = r.stored(from: 1, checked: answers, inserted: answers, invalid: 0, newClock: [Dependency(author: a.key.publicKey, sequence: 6)], now: 12)
        #expect(requests(r.tick(now: 13)).isEmpty)
    }

    @Test("pushed envelopes that were not stored are asked for when the next one comes past the gap")
    func pushedThenGap() throws {
        let a = try Author()
        var r = Replicator(me: try SigningKey.generate().publicKey, clock: VectorClock(), random: SystemRandomNumberGenerator())
        _ = r.linkUp(1, now: 0)
        _ = r.clockReceived(1, entries: [], full: true, now: 0)
        let e = try PushBudgetTests.pushes(a, 1...4)
        _ = r.envelopesReceived(1, Array(e[0..<3]), now: 1)
        _ = r.stored(from: 1, checked: Array(e[0..<3]), inserted: [], invalid: 0, newClock: [], now: 1)
        _ = r.envelopesReceived(1, [e[3]], now: 2)
        let asked = requests(r.stored(from: 1, checked: [e[3]], inserted: [e[3]], invalid: 0,
                                      newClock: [Dependency(author: a.key.publicKey, sequence: 0)], now: 2))
        #expect(asked == [GossipRequest(author: a.key.publicKey, from: 1, count: 4)])
    }
}
