import Crypto
import Foundation
import Gossip
@testable import PeerNode
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

    @Test("a claim is believed while it brings something; after ownClaimPatience with nothing, not; a satisfied claim is forgotten")
    func patience() {
        var w = OwnHistoryClaims()
        let p = NetworkNode.ownClaimPatience
        w.update(claims: [liar: 1_000_000], ours: 3, now: 100)
        #expect(w.believes(liar, now: 100 + p - 1, patience: p))
        #expect(!w.believes(liar, now: 100 + p, patience: p), "at the limit: no longer believed")
        #expect(w.disbelieve(liar) && !w.disbelieve(liar), "reported once")
        // Our chain growing (from any peer) is the claim coming true: the wait starts again.
        var v = OwnHistoryClaims()
        v.update(claims: [honest: 50], ours: 3, now: 100)
        v.update(claims: [honest: 50], ours: 20, now: 100 + p - 1)
        #expect(v.believes(honest, now: 100 + 2 * p - 2, patience: p))
        v.update(claims: [honest: 50], ours: 50, now: 100 + 2 * p - 2)
        #expect(v.since[honest] == nil, "satisfied: forgotten")
    }

    @Test("each peer is judged on its own claim, and a reconnect does not reset it")
    func perPeer() {
        var w = OwnHistoryClaims()
        let p = NetworkNode.ownClaimPatience
        w.update(claims: [liar: 1_000_000], ours: 3, now: 0)
        w.update(claims: [:], ours: 3, now: 10)  // the liar's link drops
        w.update(claims: [liar: 2_000_000, honest: 9], ours: 3, now: p - 5)  // it is back with a new number; an honest peer links
        #expect(!w.believes(liar, now: p, patience: p), "the liar's first claim still counts")
        #expect(w.believes(honest, now: p, patience: p), "the honest peer has its own time")
    }

    @Test("at most OwnHistoryClaims.limit peers are remembered; the oldest claim goes first")
    func limit() throws {
        var w = OwnHistoryClaims()
        for i in 0...OwnHistoryClaims.limit {
            w.update(claims: [try SigningKey.generate().publicKey: 10], ours: 1, now: Double(i))
        }
        #expect(w.since.count == OwnHistoryClaims.limit)
        #expect(!w.since.values.contains(0))
    }
}
