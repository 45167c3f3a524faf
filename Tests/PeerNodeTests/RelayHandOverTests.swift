import Crypto
import Gossip
@testable import PeerNode
import Testing

/// Offers of ours handed to the relays we are linked to (`RelayHandOver`).
@Suite("Files handed to relays")
struct RelayHandOverTests {
    let me = try! PublicKey(bytes: [UInt8](repeating: 0xA, count: 32))  // test input
    let relay = try! PublicKey(bytes: [UInt8](repeating: 0xB, count: 32))  // test input
    let other = try! PublicKey(bytes: [UInt8](repeating: 0xC, count: 32))  // test input
    let root = [UInt8](repeating: 7, count: 32)

    /// Links 1, 2… holding our envelopes up to the sequence given.
    func holding(_ held: [LinkID: UInt64]) -> (LinkID, Dependency) -> Bool {
        { link, offer in (held[link] ?? 0) >= offer.sequence }
    }

    @Test("a relay is asked for the last chunk, naming the offer, once it has declared the offer's envelope; each relay link once until due again")
    func onceStored() {
        var h = RelayHandOver()
        h.offered(root: root, size: 100_000, as: Dependency(author: me, sequence: 5), now: 0)
        #expect(h.due(relays: [1: relay], holds: holding([1: 4]), now: 1).isEmpty, "the relay does not hold the offer yet")
        let due = h.due(relays: [1: relay, 2: other], holds: holding([1: 5, 2: 3]), now: 2)
        #expect(due.count == 1 && due[0].0 == 1)
        #expect(due.first?.1 == .want(root: root, size: 100_000, chunks: [1], offer: Dependency(author: me, sequence: 5)), "100,000 bytes: chunks 0 and 1")
        #expect(h.due(relays: [1: relay], holds: holding([1: 5]), now: 3).isEmpty, "asked once")
        #expect(h.due(relays: [1: relay, 2: other], holds: holding([1: 5, 2: 5]), now: 4).map(\.0) == [2])
    }

    @Test("""
        a relay that takes no file (no chunk, no ask) is asked again askAgainFirst seconds later, twice as long each \
        time up to askAgainMost; one that asks for chunks is asked no more on that link, and afresh on its next
        """)
    func askedAgain() {
        var h = RelayHandOver()
        h.offered(root: root, size: 1, as: Dependency(author: me, sequence: 1), now: 0)
        let all = holding([1: 1, 2: 1, 3: 1])
        var t = 0.0
        #expect(h.due(relays: [1: relay], holds: all, now: t).count == 1)
        var wait = RelayHandOver.askAgainFirst
        for _ in 0..<8 {
            #expect(h.due(relays: [1: relay], holds: all, now: t + wait - 0.5).isEmpty, "not before \(wait) s")
            #expect(h.due(relays: [1: relay], holds: all, now: t + wait).count == 1, "again after \(wait) s")
            t += wait
            wait = min(wait * 2, RelayHandOver.askAgainMost)
        }
        #expect(wait == RelayHandOver.askAgainMost)
        h.fetching(root, on: 1)
        #expect(h.due(relays: [1: relay], holds: all, now: t + 10 * RelayHandOver.askAgainMost).isEmpty, "fetching: not asked again")
        h.fetching(root, on: 2)  // a link never asked: nothing
        #expect(h.due(relays: [1: relay, 2: other], holds: all, now: t + 11 * RelayHandOver.askAgainMost).map(\.0) == [2])
        // Link 1 went down; the relay's next link (3) is asked, and link 1 is forgotten.
        #expect(h.due(relays: [2: other, 3: relay], holds: all, now: t + 11 * RelayHandOver.askAgainMost + 1).map(\.0) == [3])
        #expect(h.waiting.first?.asked.keys.sorted() == [2, 3])
    }

    @Test("a relay that serves the last chunk holds the file: asked no more on any link; one that serves another chunk is not taken for a holder")
    func servedLast() {
        var h = RelayHandOver()
        h.offered(root: root, size: 200_000, as: Dependency(author: me, sequence: 1), now: 0)
        let all = holding([1: 1, 2: 1, 3: 1])
        #expect(h.due(relays: [1: relay, 2: other], holds: all, now: 0).count == 2)
        h.served(root, index: 0, by: other, on: 2)
        h.served(root, index: 3, by: relay, on: 1)
        #expect(h.waiting.first?.holders == [relay])
        // Both links go down and both come back: the holder is not asked, the other is.
        #expect(h.due(relays: [3: relay, 4: other], holds: holding([3: 1, 4: 1]), now: 1).map(\.0) == [4])
        h.served(root, index: 3, by: other, on: 9)  // on a link never asked: nothing
        #expect(h.waiting.first?.holders == [relay])
    }

    @Test("an offer is kept patience seconds, not one more; at most maximumWaiting, the oldest dropped past it; one offered twice is kept once; a deleted one is forgotten")
    func bounded() {
        var h = RelayHandOver()
        h.offered(root: root, size: 1, as: Dependency(author: me, sequence: 1), now: 0)
        #expect(h.due(relays: [:], holds: holding([:]), now: RelayHandOver.patience - 0.5).isEmpty && h.waiting.count == 1)
        #expect(h.due(relays: [:], holds: holding([:]), now: RelayHandOver.patience).isEmpty && h.waiting.isEmpty)
        for s in 1...RelayHandOver.maximumWaiting { h.offered(root: root, size: 1, as: Dependency(author: me, sequence: UInt64(s)), now: Double(s)) }
        #expect(h.waiting.count == RelayHandOver.maximumWaiting && h.waiting.first?.envelope.sequence == 1)
        h.offered(root: root, size: 1, as: Dependency(author: me, sequence: 65), now: 65)
        #expect(h.waiting.count == RelayHandOver.maximumWaiting && h.waiting.first?.envelope.sequence == 2)
        h.offered(root: root, size: 1, as: Dependency(author: me, sequence: 65), now: 66)
        #expect(h.waiting.count == RelayHandOver.maximumWaiting, "the same offer again is kept once")
        // Read back at start with an older time: it takes its place by age, the oldest still first out.
        h.offered(root: root, size: 1, as: Dependency(author: me, sequence: 100), now: 2.5)
        #expect(h.waiting.count == RelayHandOver.maximumWaiting && h.waiting.first?.envelope.sequence == 100, "\(h.waiting.prefix(2).map(\.envelope.sequence))")
        h.offered(root: root, size: 1, as: Dependency(author: me, sequence: 101), now: 0.5)
        #expect(h.waiting.first?.envelope.sequence == 100, "older than all kept: dropped at once")
        h.forget(root)
        #expect(h.waiting.isEmpty)
    }
}
