import Crypto
import Gossip
@testable import NodeCore
import TestSupport
import Testing

/// The overlay's own bounds, at the limit and one past it.
@Suite("Overlay limits: the outbox and the address book")
struct OverlayLimitTests {
    static func overlay() throws -> Overlay {
        Overlay(me: try SigningKey.generate().publicKey, configuration: Overlay.Configuration(), random: SeededRandom(seed: 1))
    }

    @Test("maximumOutbox messages wait for one peer's link; one more is refused")
    func outbox() throws {
        var o = try Self.overlay()
        let peer = try SigningKey.generate().publicKey
        for _ in 0..<Overlay.maximumOutbox {
            let taken = o.queue(.join(port: 1), for: peer)
            #expect(taken)
        }
        let past = o.queue(.join(port: 1), for: peer)
        #expect(!past, "one past the limit")
        let other = try SigningKey.generate().publicKey
        let own = o.queue(.join(port: 1), for: other)
        #expect(own, "another peer has its own")
    }

    @Test("maximumAddresses are remembered; one more drops the addresses of peers in no view first, and never passes the limit")
    func addresses() throws {
        var o = try Self.overlay()
        var peers: [OverlayPeer] = []
        for i in 0..<Overlay.maximumAddresses {
            let p = OverlayPeer(identity: try SigningKey.generate().publicKey, address: [10, 1, UInt8(i >> 8), UInt8(i & 255)], port: 7733)
            peers.append(p)
            o.learn(p, fromDiscovery: false)
        }
        #expect(o.addresses.count == Overlay.maximumAddresses)
        // One past: none of them is in a view, so they are let go and the new one is kept.
        let extra = OverlayPeer(identity: try SigningKey.generate().publicKey, address: [10, 2, 0, 1], port: 7733)
        o.learn(extra, fromDiscovery: false)
        #expect(o.addresses.count <= Overlay.maximumAddresses)
        #expect(o.addresses[extra.identity] == extra)
        // A full book of peers discovery knows keeps them, and the newcomer is not taken.
        var kept = try Self.overlay()
        for p in peers {
            kept.learn(p, fromDiscovery: true)
            kept.discovered[p.identity] = 0
        }
        kept.learn(extra, fromDiscovery: false)
        #expect(kept.addresses.count == Overlay.maximumAddresses)
        #expect(kept.addresses[extra.identity] == nil)
        // An address from discovery is not replaced by one a peer names.
        let moved = OverlayPeer(identity: peers[0].identity, address: [192, 0, 2, 9], port: 1)
        kept.learn(moved, fromDiscovery: false)
        #expect(kept.addresses[peers[0].identity] == peers[0])
    }
}
