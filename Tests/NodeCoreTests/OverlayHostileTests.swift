import Crypto
import Gossip
import NetworkText
import NodeCore
import TestSupport
import Testing

/// A member that abuses the membership messages, played by one side of the
/// wire sending whatever gossip it likes on its link (`LinkCore.Input.send`).
@Suite("Overlay against a hostile member: every message it sends is counted and bounded")
struct OverlayHostileTests {
    /// Side 1 linked to side 0 by a --peer dial; side 1's link id.
    static func linked(_ wire: inout Wire) -> LinkID? {
        wire.peer(1, dials: 0)
        wire.tick()
        return wire.sides[1].core.table.linkedPeers.first { $0.value == wire.key(0) }?.key
    }

    /// Sides 1…6, each at its own host, join through side 0, which is then
    /// full: their keys, side 0's neighbours.
    static func filled(_ wire: inout Wire) -> Set<PublicKey> {
        for side in 1...6 {
            wire.queue.append((side, .found(wire.key(0), host: Wire.host(0), port: 7733, listening: true)))
            wire.run()
            wire.tick()
        }
        wire.tick(by: 5)
        let honest = Set((1...6).map { wire.key($0) })
        #expect(wire.sides[0].core.overlay.membership.active == honest)
        return honest
    }

    static func madeUp(_ n: Int) throws -> [OverlayPeer] {
        try (0..<n).map { i in OverlayPeer(identity: try SigningKey.generate().publicKey, address: [192, 0, 2, UInt8(i % 250)], port: 7733) }
    }

    @Test("a flood of shuffles full of made-up peers: past the burst they are dropped and counted; the passive view stays within its size")
    func shuffleFlood() throws {
        var wire = try Wire(2, seed: 4)
        let id = try #require(Self.linked(&wire))
        for _ in 0..<200 { wire.input(1, .send(id, .overlay(.shuffle(try Self.madeUp(OverlayMessage.maximumPeers))))) }
        let counters = wire.sides[0].core.counters
        #expect(counters[.overlayLimited] >= 200 - Int(Overlay.messageBurst))
        #expect(counters[.overlayReceived] <= Int(Overlay.messageBurst) + 10)
        #expect(wire.sides[0].core.overlay.membership.passive.count <= Overlay.defaultPassive)
        #expect(wire.sides[0].core.overlay.addresses.count <= Overlay.maximumAddresses)
        // The link itself is not closed for it, and the budget refills.
        #expect(wire.sides[0].closes.isEmpty)
        wire.tick(by: 10)
        wire.input(1, .send(id, .overlay(.shuffle([]))))
        #expect(wire.sides[0].core.counters[.overlayReceived] > counters[.overlayReceived])
        #expect(wire.sides[0].core.counters[.overlayLimited] == counters[.overlayLimited])
    }

    @Test("repeated joins are taken once a minute: the rest are dropped and counted, and nobody is evicted for them")
    func repeatedJoins() throws {
        var wire = try Wire(2, seed: 4)
        let id = try #require(Self.linked(&wire))
        let before = wire.sides[0].core.counters[.overlayJoinsIgnored]
        for _ in 0..<10 { wire.input(1, .send(id, .overlay(.join(port: 7733)))) }
        #expect(wire.sides[0].core.counters[.overlayJoinsIgnored] - before == 10, "side 1's own join came first")
        wire.tick(by: Overlay.joinInterval)
        wire.input(1, .send(id, .overlay(.join(port: 7733))))
        #expect(wire.sides[0].core.counters[.overlayJoinsIgnored] - before == 10)
    }

    @Test("keep is honoured for maximumPinned peers; past it the link is treated as any other, and closed once unclaimed for claimGrace")
    func keepIsBounded() throws {
        var none = Overlay.Configuration()
        none.maximumPinned = 0
        var mesh = Overlay.Configuration()
        mesh.maximumLinks = 0
        var wire = try Wire(2, seed: 6, overlay: none)
        // Side 1 keeps every link it dials and asks for nothing more (the overlay off).
        wire.sides[1].core.configureOverlay(mesh, random: SeededRandom(seed: 1))
        wire.sides[1].core.listens(on: 7733)
        wire.peer(1, dials: 0)
        wire.tick()
        #expect(wire.sides[0].core.counters[.overlayPinnedRefused] == 1)
        #expect(wire.sides[0].core.table.carries(wire.key(1)))
        wire.tick(by: Overlay.claimGrace / 2)
        #expect(wire.sides[0].core.table.carries(wire.key(1)), "within the grace it stays")
        wire.tick(by: Overlay.claimGrace / 2)
        #expect(wire.sides[0].core.counters[.overlayUnclaimedClosed] == 1)
        #expect(wire.sides[0].closes.contains { $0.2 == LinkCore.notNeighbourReason })
    }

    @Test("forwardJoin with a made-up peer costs one dial that fails, and the peer is dropped from both views")
    func madeUpForwardJoin() throws {
        var wire = try Wire(2, seed: 8)
        let id = try #require(Self.linked(&wire))
        let ghost = try Self.madeUp(1)[0]
        // ttl 0: side 0 must link to it.
        wire.input(1, .send(id, .overlay(.forwardJoin(ghost, ttl: 0))))
        let dials = wire.sides[0].effects.filter { if case let .dial(_, host, _) = $0 { host == ghost.host } else { false } }
        #expect(dials.count == 1)
        let m = wire.sides[0].core.overlay.membership
        #expect(!m.active.contains(ghost.identity) && !m.passive.contains(ghost.identity) && m.requested[ghost.identity] == nil)
        // The real neighbour stays.
        #expect(wire.sides[0].core.table.carries(wire.key(1)))
    }

    @Test("a neighbour's forwardJoins naming made-up peers cannot churn a full node's links: each is asked first, and no neighbour is dropped for one that never answers")
    func forwardJoinsCostNoNeighbour() throws {
        var wire = try Wire(7, seed: 14)
        let honest = Self.filled(&wire)
        let id = try #require(wire.sides[1].core.table.linkedPeers.first { $0.value == wire.key(0) }?.key)
        let (closed, down) = (wire.sides[0].closes.count, wire.sides[0].downs.count)
        for round in 0..<10 {
            for ghost in try Self.madeUp(2) { wire.input(1, .send(id, .overlay(.forwardJoin(ghost, ttl: 0)))) }
            wire.tick()
            #expect(wire.sides[0].core.overlay.membership.active == honest, "round \(round)")
        }
        // Not a single link of theirs closed, even for a moment (healing would hide it in the view).
        #expect(wire.sides[0].closes.count == closed && wire.sides[0].downs.count == down,
                "\(wire.sides[0].closes.count - closed) closed, \(wire.sides[0].downs.count - down) down")
    }

    /// Keys from a seed: with keys at random this failed about one run in
    /// six, which is not a flaky test but a limit (docs/RELIABILITY.md): the
    /// identities' joins also make full neighbours drop links at random
    /// (HyParView's forward-join ends at them), and a place that opens so is
    /// taken by whoever asks, one of the identities too.
    @Test("identities behind one address that join a full node one after another push out each other, not its neighbours: after 8 such joins and a minute of healing, the node holds one of them and 5 of its 6 neighbours",
          arguments: [UInt8(1), 2, 3, 4])
    func joinsFromOneAddress(keySeed: UInt8) throws {
        var wire = try Wire(15, seed: 11, keySeed: keySeed)
        let honest = Self.filled(&wire)
        // Sides 7…14 are one machine's identities: their links all come from 10.6.6.6, where they listen.
        for side in 7...14 {
            wire.behindOneAddress(side, host: "10.6.6.6")
            wire.queue.append((side, .found(wire.key(0), host: Wire.host(0), port: 7733, listening: true)))
            wire.run()
            wire.tick()
        }
        for _ in 0..<60 { wire.tick() }
        let active = wire.sides[0].core.overlay.membership.active
        #expect(active.count == 6)
        #expect(active.subtracting(honest).count <= 1, "\(active.subtracting(honest).count) of one address's identities hold places")
        #expect(active.intersection(honest).count >= 5)
    }

    @Test("forwardJoin is taken only from a neighbour: a kept link that is not one is ignored and counted, with no dial")
    func forwardJoinFromNonNeighbour() throws {
        var mesh = Overlay.Configuration()
        mesh.maximumLinks = 0
        var wire = try Wire(2, seed: 12)
        // Side 1 keeps every link it dials and asks for nothing more: side 0 keeps it, not as a neighbour.
        wire.sides[1].core.configureOverlay(mesh, random: SeededRandom(seed: 1))
        wire.sides[1].core.listens(on: 7733)
        wire.peer(1, dials: 0)
        wire.tick()
        let id = try #require(wire.sides[1].core.table.linkedPeers.first { $0.value == wire.key(0) }?.key)
        #expect(!wire.sides[0].core.overlay.membership.active.contains(wire.key(1)))
        let ghost = try Self.madeUp(1)[0]
        wire.input(1, .send(id, .overlay(.forwardJoin(ghost, ttl: 0))))
        #expect(wire.sides[0].core.counters[.overlayForwardJoinDropped] == 1)
        #expect(!wire.sides[0].effects.contains { if case let .dial(_, host, _) = $0 { host == ghost.host } else { false } })
    }

    @Test("forwardJoins naming peers at addresses that never answer: at most maximumDialsInFlight dials on their way; past them forwardJoins are dropped and counted")
    func dialsInFlight() throws {
        var roomy = Overlay.Configuration()
        roomy.maximumLinks = 64
        var wire = try Wire(2, seed: 13, overlay: roomy)
        let id = try #require(Self.linked(&wire))
        let ghosts = try (0..<Int(Overlay.messageBurst) - 4).map { i in
            OverlayPeer(identity: try SigningKey.generate().publicKey, address: [10, 99, 0, UInt8(i + 1)], port: 7733)
        }
        for ghost in ghosts { wire.unanswered.insert(ghost.host) }
        for ghost in ghosts { wire.input(1, .send(id, .overlay(.forwardJoin(ghost, ttl: 0)))) }
        let dialled = Set(wire.sides[0].effects.compactMap { effect -> String? in
            if case let .dial(_, host, _) = effect, host.hasPrefix("10.99.") { return host } else { return nil }
        })
        #expect(dialled.count == Overlay.maximumDialsInFlight)
        #expect(wire.sides[0].core.table.overlayDialsInFlight == Overlay.maximumDialsInFlight)
        #expect(wire.sides[0].core.counters[.overlayForwardJoinDropped] == ghosts.count - Overlay.maximumDialsInFlight)
        #expect(wire.sides[0].core.table.carries(wire.key(1)), "the neighbour stays")
    }
}

