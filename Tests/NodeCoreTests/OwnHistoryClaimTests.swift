import Crypto
import Gossip
import NodeCore
import TestSupport
import Testing

@Suite("Claims about our own history")
struct OwnHistoryClaimTests {
    let liar: PublicKey
    let honest: PublicKey

    init() throws {
        liar = try SigningKey.generate().publicKey
        honest = try SigningKey.generate().publicKey
    }

    @Test("claims are believed while they bring something; after OwnHistoryGate.patience with nothing, none is; a satisfied claim is forgotten")
    func patience() {
        var w = OwnHistoryClaims()
        let p = OwnHistoryGate.patience
        w.update(claims: [liar: 1_000_000], ours: 3, now: 100, patience: p)
        #expect(w.believes(now: 100 + p - 1, patience: p))
        #expect(!w.believes(now: 100 + p, patience: p), "at the limit: no longer believed")
        #expect(w.disbelieve(liar) && !w.disbelieve(liar), "reported once")
        // Our chain growing (from any peer) is the claim coming true: the wait starts again.
        var v = OwnHistoryClaims()
        v.update(claims: [honest: 50], ours: 3, now: 100, patience: p)
        v.update(claims: [honest: 50], ours: 20, now: 100 + p - 1, patience: p)
        #expect(v.believes(now: 100 + 2 * p - 2, patience: p))
        v.update(claims: [honest: 50], ours: 50, now: 100 + 2 * p - 2, patience: p)
        #expect(v.since == nil, "satisfied: forgotten")
    }

    @Test("one window for the node: new identities claiming later, or the same one leaving and coming back, buy no more time (issue 13, finding 5)")
    func nodeWide() throws {
        var w = OwnHistoryClaims()
        let p = OwnHistoryGate.patience
        let liars = try (0..<3).map { _ in try SigningKey.generate().publicKey }
        w.update(claims: [liars[0]: 1_000_000], ours: 3, now: 0, patience: p)
        w.update(claims: [liars[1]: 2_000_000], ours: 3, now: p - 5, patience: p)  // the first left; a second identity claims
        #expect(!w.believes(now: p, patience: p), "the window began with the first claim")
        w.update(claims: [:], ours: 3, now: p + 1, patience: p)  // all gone for a moment
        w.update(claims: [liars[2]: 9_000], ours: 3, now: p + 2, patience: p)
        #expect(!w.believes(now: p + 3, patience: p), "coming back does not reset the window")
        // A whole window with no claim at all: a later claim is believed again (a real restore may come later).
        w.update(claims: [:], ours: 3, now: p + 3, patience: p)
        w.update(claims: [:], ours: 3, now: 2 * p + 3, patience: p)
        w.update(claims: [honest: 9], ours: 3, now: 2 * p + 4, patience: p)
        #expect(w.believes(now: 2 * p + 5, patience: p))
    }

    @Test("our own new posts are no proof of a claim: after the window they do not make it believed again")
    func ownPostsProveNothing() {
        var w = OwnHistoryClaims()
        let p = OwnHistoryGate.patience
        w.update(claims: [liar: 1_000_000], ours: 3, now: 0, patience: p)
        #expect(!w.believes(now: p, patience: p))
        w.signing(4)
        w.update(claims: [liar: 1_000_000], ours: 4, now: p + 1, patience: p)
        #expect(!w.believes(now: p + 2, patience: p))
        // One of ours arriving from a peer is progress.
        w.update(claims: [liar: 1_000_000], ours: 5, now: p + 3, patience: p)
        #expect(w.believes(now: p + 4, patience: p))
    }
}
