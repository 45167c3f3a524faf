import Crypto
import Gossip
import NodeCore
import Testing

@Suite("Backlog: what peers declared that we lack, summed without a trap")
struct BacklogTests {
    @Test("a gap names the peer that declared the most (a linked one on a tie); blocked authors are left out; the prompt's sum is the linked part of /sync's")
    func gaps() throws {
        let (a, b, blocked) = (try SigningKey.generate().publicKey, try SigningKey.generate().publicKey, try SigningKey.generate().publicKey)
        let (p, q, old) = (try SigningKey.generate().publicKey, try SigningKey.generate().publicKey, try SigningKey.generate().publicKey)
        let ours = VectorClock([a: 5])
        let linked: [Backlog.Declaration] = [
            .init(peer: p, clock: VectorClock([a: 8, blocked: 100]), linked: true, seenAt: 10),
            .init(peer: q, clock: VectorClock([a: 9, b: 2]), linked: true, seenAt: 10),
        ]
        let earlier = Backlog.Declaration(peer: old, clock: VectorClock([a: 50, b: 2]), linked: false, seenAt: 1)
        let gaps = Backlog.gaps(ours: ours, declarations: linked + [earlier], excluding: [blocked])
        // a: the earlier peer declared most (50), so it is named; b: a tie goes to the linked peer.
        #expect(gaps == [Backlog.Gap(author: a, missing: 45, via: old, linked: false, seenAt: 1),
                         Backlog.Gap(author: b, missing: 2, via: q, linked: true, seenAt: 10)])
        #expect(Backlog.total(gaps) == 47)
        let linkedOnly = Backlog.gaps(ours: ours, declarations: linked, excluding: [blocked])
        #expect(linkedOnly.first == Backlog.Gap(author: a, missing: 4, via: q, linked: true, seenAt: 10))
        #expect(Backlog.missing(ours: ours, declared: linked.map(\.clock)) == 4 + 100 + 2)
        // Only an earlier peer knows of an author: it is named, as not linked.
        let c = try SigningKey.generate().publicKey
        let only = Backlog.gaps(ours: ours, declarations: [.init(peer: old, clock: VectorClock([c: 3]), linked: false, seenAt: 7)])
        #expect(only == [Backlog.Gap(author: c, missing: 3, via: old, linked: false, seenAt: 7)])
    }

    @Test("clocks at 2^64-1 (saved by an earlier version) sum to at most 2^64-1, and the prompt's bar still draws")
    func saturating() throws {
        let authors = try (0..<3).map { _ in try SigningKey.generate().publicKey }
        let huge = VectorClock(Dictionary(uniqueKeysWithValues: authors.map { ($0, UInt64.max) }))
        let peer = try SigningKey.generate().publicKey
        let gaps = Backlog.gaps(ours: VectorClock(), declarations: [.init(peer: peer, clock: huge, linked: true, seenAt: 0)])
        #expect(Backlog.total(gaps) == UInt64.max)
        #expect(Backlog.missing(ours: VectorClock(), declared: [huge, huge]) == UInt64.max)
        var progress = SyncProgress()
        #expect(progress.tag(missing: UInt64.max).hasPrefix("[sync ░░░░░░░░ 0%]"))
        #expect(progress.tag(missing: UInt64.max / 2).hasPrefix("[sync ▓▓▓▓░░░░ 50%]"))
    }
}
