import Crypto
import Gossip
import NetworkText
@testable import NodeCore
import TestSupport
import Testing

/// The overlay on real `LinkCore`s over the simulated wire (Noise and all):
/// bounded links, healing, and tree push, with no socket or clock.
@Suite("Overlay: bounded links and tree push between LinkCores on a wire")
struct OverlayTests {
    /// Each side's linked peers (by side number).
    static func neighbours(_ wire: Wire) -> [Set<Int>] {
        let index = Dictionary(uniqueKeysWithValues: wire.sides.indices.map { (wire.key($0), $0) })
        return wire.sides.map { side in Set(side.core.table.linkedPeers.values.compactMap { index[$0] }) }
    }

    /// Whether the live sides form one connected overlay.
    static func connected(_ wire: Wire) -> Bool {
        let graph = neighbours(wire)
        let live = wire.sides.indices.filter { !wire.down.contains($0) }
        guard let first = live.first else { return true }
        var seen: Set<Int> = [first]
        var todo = [first]
        while let n = todo.popLast() {
            for m in graph[n] where !wire.down.contains(m) && seen.insert(m).inserted { todo.append(m) }
        }
        return seen.count == live.count
    }

    /// Ticks `seconds` times; the most neighbours (the active view, what
    /// `--max-links` bounds) any side held after a tick. Beside them a side
    /// may hold links being set up (docs/SCALE.md, "The bound is on
    /// neighbours"): one it asked over, one kept, or one whose peer has not
    /// claimed it yet, for less than `claimGrace`; any other is recorded.
    static func settle(_ wire: inout Wire, seconds: Int) -> Int {
        var worst = 0
        for _ in 0..<seconds {
            wire.tick()
            for side in wire.sides.indices where !wire.down.contains(side) {
                let core = wire.sides[side].core
                worst = max(worst, core.overlay.membership.active.count)
                for (id, peer) in core.table.linkedPeers where core.overlay.configuration.bounded && !core.overlay.wants(peer) {
                    let since = core.overlay.unclaimed[id] ?? -.infinity
                    #expect(wire.now - since < Overlay.claimGrace, "side \(side) held link \(id), wanted by nobody, since \(since) (now \(wire.now))")
                }
            }
        }
        return worst
    }

    /// `count` sides that discovered each other, settled for 30 s, then
    /// `posts` posts (by sides 0 to `authors` − 1 in turn) whose duplicates
    /// prune the overlay to a tree.
    static func settled(_ count: Int, seed: UInt64, posts: Int, authors: Int) throws -> Wire {
        var wire = try Wire(count, seed: seed)
        wire.keepsEffects = false
        wire.discoverAll()
        _ = settle(&wire, seconds: 30)
        for round in 0..<posts {
            try wire.post(round % authors, count: 1)
            wire.tick()
        }
        return wire
    }

    static func liveDegrees(_ wire: Wire) -> [Int] {
        neighbours(wire).enumerated().filter { !wire.down.contains($0.offset) }.map(\.element.count)
    }

    @Test("20 nodes that all discover each other keep at most 6 neighbours each after every tick (links being set up beside them closed within the grace), stay one overlay, and every post reaches every node")
    func boundedLinks() throws {
        var wire = try Wire(20, seed: 11)
        wire.keepsEffects = false
        wire.discoverAll()
        let worst = Self.settle(&wire, seconds: 40)
        #expect(worst <= Overlay.defaultLinks, "a node held \(worst) neighbours")
        #expect(Self.connected(wire))
        #expect(Self.liveDegrees(wire).min() ?? 0 >= 3, "degrees \(Self.liveDegrees(wire))")
        // Everyone else is known in reserve, up to the passive view's size.
        #expect(wire.sides.allSatisfy { $0.core.overlay.membership.passive.count >= 8 })
        try wire.post(3, count: 5)
        for _ in 0..<3 { wire.tick() }
        for side in wire.sides.indices { #expect(wire.contiguous(side, wire.key(3)) == 5, "side \(side)") }
    }

    @Test("--max-links 3 is the bound; --max-links 0 links every peer found (the full mesh)")
    func theBoundIsASetting() throws {
        var three = Overlay.Configuration()
        three.maximumLinks = 3
        var small = try Wire(12, seed: 2, overlay: three)
        small.keepsEffects = false
        small.discoverAll()
        #expect(Self.settle(&small, seconds: 30) <= 3)
        #expect(Self.connected(small))
        var mesh = Overlay.Configuration()
        mesh.maximumLinks = 0
        var full = try Wire(8, seed: 2, overlay: mesh)
        full.keepsEffects = false
        full.discoverAll()
        _ = Self.settle(&full, seconds: 10)
        #expect(Self.neighbours(full).allSatisfy { $0.count == 7 })
        #expect(full.sides.allSatisfy { $0.core.counters[.overlaySent] == 0 })
    }

    @Test("once the tree has settled, a post is sent in full n − 1 times (a spanning tree), with no duplicate, and ids go the other ways")
    func treePush() throws {
        // The first posts flood; their duplicates prune the overlay to a tree.
        var wire = try Self.settled(16, seed: 5, posts: 8, authors: 4)
        let sentBefore = wire.sides.map { $0.core.counters[.envelopesSent] }
        let duplicatesBefore = wire.sides.map { $0.core.counters[.envelopesDuplicate] }
        let messages = 20
        for i in 0..<messages {
            try wire.post(i % 4, count: 1)
            wire.tick()
        }
        for _ in 0..<3 { wire.tick() }
        for side in wire.sides.indices {
            for author in 0..<4 { #expect(wire.contiguous(side, wire.key(author)) == 7, "side \(side), author \(author)") }
        }
        let sent = zip(wire.sides, sentBefore).map { $0.core.counters[.envelopesSent] - $1 }.reduce(0, +)
        let duplicates = zip(wire.sides, duplicatesBefore).map { $0.core.counters[.envelopesDuplicate] - $1 }.reduce(0, +)
        #expect(sent == messages * 15, "\(sent) full sends for \(messages) messages to 15 others")
        #expect(duplicates == 0)
        #expect(wire.sides.contains { $0.core.counters[.ihaveSent] > 0 })
        #expect(wire.sides.contains { $0.core.counters[.pruneSent] > 0 })
    }

    @Test("4 of 20 killed at once: the survivors heal from their passive views within the bound, and still get every post")
    func healing() throws {
        var wire = try Self.settled(20, seed: 3, posts: 6, authors: 3)
        for side in [2, 7, 11, 16] { wire.kill(side) }
        let worst = Self.settle(&wire, seconds: 15)
        #expect(worst <= Overlay.defaultLinks)
        #expect(Self.connected(wire))
        #expect(Self.liveDegrees(wire).min() ?? 0 >= 3, "degrees \(Self.liveDegrees(wire))")
        #expect(wire.sides.contains { $0.core.counters[.overlayPeerLost] > 0 })
        // The tree broke where the dead were: grafts (or the clock exchange) mend it.
        try wire.post(0, count: 3)
        for _ in 0..<4 { wire.tick() }
        for side in wire.sides.indices where !wire.down.contains(side) { #expect(wire.contiguous(side, wire.key(0)) == 5, "side \(side)") }
    }

    @Test("--peer links stay outside the bound, kept by both ends, and carry everything to everyone")
    func userLinksStay() throws {
        var two = Overlay.Configuration()
        two.maximumLinks = 2
        var wire = try Wire(6, seed: 9, overlay: two)
        wire.keepsEffects = false
        // No discovery at all: side 0 names side 1, and everyone else names side 0.
        wire.peer(0, dials: 1)
        for side in 2..<6 { wire.peer(side, dials: 0) }
        _ = Self.settle(&wire, seconds: 30)
        let graph = Self.neighbours(wire)
        #expect(graph[0].isSuperset(of: [1, 2, 3, 4, 5]), "side 0 keeps every link it was asked for: \(graph[0])")
        #expect(Self.connected(wire))
        #expect(wire.sides[0].core.overlay.pinned.isSuperset(of: [wire.key(1)] + (2..<6).map { wire.key($0) }))
        try wire.post(5, count: 2)
        for _ in 0..<2 { wire.tick() }
        for side in wire.sides.indices { #expect(wire.contiguous(side, wire.key(5)) == 2) }
    }
}
