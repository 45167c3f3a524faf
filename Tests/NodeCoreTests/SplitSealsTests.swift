import Crypto
import Dispatch
import Gossip
@testable import NodeCore
import Synchronization
import Testing

/// A batch forwarded to many links has its seals made on every core
/// (`LinkCore.inParallel`): each link's Noise session stays in order, so every
/// peer opens every message, and the links get what one link after another
/// would have sent them.
@Suite("Seals split across the cores for a fan-out")
struct SplitSealsTests {
    /// How many times the hub split a fan-out's seals.
    final class Splits: Sendable {
        private let count = Mutex(0)
        func add() { count.withLock { $0 += 1 } }
        var value: Int { count.withLock { $0 } }
    }

    /// A hub with `leaves` linked to it by their dials (no overlay: the dialled links only), its seals
    /// split across `cores` jobs on real threads; `runs` counts the splits.
    static func hub(leaves: Int, cores: Int, runs: Splits? = nil) throws -> Wire {
        var mesh = Overlay.Configuration()
        mesh.maximumLinks = 0
        var wire = try Wire(1 + leaves, overlay: mesh)
        if cores > 1 {
            wire.sides[0].core.inParallel = (cores, { count, job in
                runs?.add()
                DispatchQueue.concurrentPerform(iterations: count, execute: job)
            })
        }
        for leaf in 1...leaves { wire.peer(leaf, dials: 0) }
        wire.tick()
        #expect(wire.sides[0].ups.count == leaves, "every leaf linked")
        return wire
    }

    @Test("a hub's own posts and a leaf's posts passed on reach every leaf whole, in order, sealed on two cores")
    func fanOut() throws {
        let runs = Splits()
        var wire = try Self.hub(leaves: 12, cores: 2, runs: runs)
        // Bodies of 6 KB: each push to 12 links (11 passed on) seals past splitSealBytes.
        try wire.post(0, count: 40, bodyBytes: 6_000)
        try wire.post(1, count: 25, bodyBytes: 6_500)
        for leaf in 1...12 {
            #expect(wire.contiguous(leaf, wire.key(0)) == 40, "leaf \(leaf) has the hub's posts")
            #expect(wire.contiguous(leaf, wire.key(1)) == 25, "leaf \(leaf) has leaf 1's posts")
        }
        #expect(wire.sides.allSatisfy { $0.closes.isEmpty }, "no link failed to open a message")
        #expect(runs.value >= 40, "the hub's pushes were split (\(runs.value) splits)")
        // Each leaf was sent each envelope once, whatever the split: as one link after another counts them.
        let sequential = try Self.hub(leaves: 12, cores: 1)
        var one = sequential
        try one.post(0, count: 40, bodyBytes: 6_000)
        try one.post(1, count: 25, bodyBytes: 6_500)
        #expect(wire.sides[0].core.counters[Counter.envelopesSent] == one.sides[0].core.counters[Counter.envelopesSent])
        #expect(wire.sides[0].core.counters[Counter.bytesOut] == one.sides[0].core.counters[Counter.bytesOut])
    }

    @Test("split from sealsSplitFrom links and splitSealBytes in all; one link fewer, or a small batch, sealed on the loop")
    func threshold() throws {
        // A body of B bytes is a link message of about B + 200: 8 links × 8,200 is past 64 KB, 8 × 7,800 under it.
        for (leaves, body, split) in [(LinkCore.sealsSplitFrom - 1, 9_000, false), (LinkCore.sealsSplitFrom, 8_200, true),
                                      (LinkCore.sealsSplitFrom, 7_600, false), (40, 100, false)] {
            let runs = Splits()
            var wire = try Self.hub(leaves: leaves, cores: 2, runs: runs)
            try wire.post(0, count: 3, bodyBytes: body)
            #expect((runs.value > 0) == split, "\(leaves) links, bodies of \(body) bytes")
            for leaf in 1...leaves { #expect(wire.contiguous(leaf, wire.key(0)) == 3) }
        }
    }
}
