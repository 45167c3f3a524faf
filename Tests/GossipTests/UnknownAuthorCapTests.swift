import Crypto
import Gossip
import Testing

/// Issue 13, finding 4: what a link may declare about authors we hold nothing of is capped.
@Suite("Clock entries for unknown authors")
struct UnknownAuthorCapTests {
    static func ignoredCount(_ actions: [Replicator.Action]) -> Int {
        actions.reduce(0) { if case let .clockEntriesIgnored(_, n) = $1 { return $0 + n } else { return $0 } }
    }

    @Test("a link declares Replicator.maximumUnknownAuthors made-up authors: all taken; one more: refused and counted; authors we hold and ones it declared already are always taken")
    func cap() throws {
        let me = try SigningKey.generate().publicKey
        let held = try SigningKey.generate().publicKey
        var r = Replicator(me: me, clock: VectorClock([held: 5]), random: SystemRandomNumberGenerator())
        _ = r.linkUp(1, now: 0)
        let limit = Replicator.maximumUnknownAuthors
        let made = try (0...limit).map { _ in Dependency(author: try SigningKey.generate().publicKey, sequence: 7) }
        let atLimit = Array(made.prefix(limit)).sorted { $0.author < $1.author }
        #expect(Self.ignoredCount(r.clockReceived(1, entries: atLimit, full: true, now: 0)) == 0)
        #expect(r.declaredClock(of: 1)?.entries.count == limit)
        // One past: a delta with the last made-up author, one already declared, and one we hold.
        let past = [made[limit], Dependency(author: made[0].author, sequence: 9), Dependency(author: held, sequence: 6)]
        let actions = r.clockReceived(1, entries: past.sorted { $0.author < $1.author }, full: false, now: 0)
        #expect(Self.ignoredCount(actions) == 1)
        let declared = try #require(r.declaredClock(of: 1))
        #expect(declared[made[limit].author] == 0 && declared[made[0].author] == 9 && declared[held] == 6)
        #expect(declared.entries.count == limit + 1)
        // A whole clock of twice the cap keeps the cap (the stored answer too).
        let twice = try (0..<(2 * limit)).map { _ in Dependency(author: try SigningKey.generate().publicKey, sequence: 1) }.sorted { $0.author < $1.author }
        #expect(Self.ignoredCount(r.clockReceived(1, entries: twice, full: true, now: 0)) == limit)
        #expect(Self.ignoredCount(r.storedReceived(1, entries: [Dependency(author: try SigningKey.generate().publicKey, sequence: 3)], now: 0)) == 1)
        #expect(r.declaredClock(of: 1)?.entries.count == limit)
    }
}
