import Crypto
import Gossip
@testable import PeerNode
import Testing

/// Offers of ours handed to the relays we are linked to (`RelayHandOver`).
@Suite("Files handed to relays")
struct RelayHandOverTests {
    let me = try! PublicKey(bytes: [UInt8](repeating: 0xA, count: 32))  // test input
    let root = [UInt8](repeating: 7, count: 32)

    @Test("a relay is asked for the first chunk, naming the offer, once it has declared the offer's envelope; once per relay link")
    func onceStored() {
        var h = RelayHandOver()
        h.offered(root: root, size: 100_000, as: Dependency(author: me, sequence: 5), now: 0)
        #expect(h.due(relays: [1: 4], now: 1).isEmpty, "the relay does not hold the offer yet")
        let due = h.due(relays: [1: 5, 2: 3], now: 2)
        #expect(due.count == 1 && due[0].0 == 1)
        #expect(due.first?.1 == .want(root: root, size: 100_000, chunks: [0], offer: Dependency(author: me, sequence: 5)))
        #expect(h.due(relays: [1: 5], now: 3).isEmpty, "asked once")
        #expect(h.due(relays: [1: 5, 2: 5], now: 4).map(\.0) == [2])
    }

    @Test("an offer waits patience seconds for a relay to store it, not one more; at most maximumWaiting wait, the oldest dropped past it")
    func bounded() {
        var h = RelayHandOver()
        h.offered(root: root, size: 1, as: Dependency(author: me, sequence: 1), now: 0)
        #expect(h.due(relays: [:], now: RelayHandOver.patience - 0.5).isEmpty && h.waiting.count == 1)
        #expect(h.due(relays: [:], now: RelayHandOver.patience).isEmpty && h.waiting.isEmpty)
        for s in 1...RelayHandOver.maximumWaiting { h.offered(root: root, size: 1, as: Dependency(author: me, sequence: UInt64(s)), now: 0) }
        #expect(h.waiting.count == RelayHandOver.maximumWaiting && h.waiting.first?.envelope.sequence == 1)
        h.offered(root: root, size: 1, as: Dependency(author: me, sequence: 65), now: 0)
        #expect(h.waiting.count == RelayHandOver.maximumWaiting && h.waiting.first?.envelope.sequence == 2)
    }
}
