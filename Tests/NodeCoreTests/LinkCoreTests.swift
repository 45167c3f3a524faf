import Crypto
import Gossip
import NetworkText
import NodeCore
import TestSupport
import Testing

@Suite("LinkCore: links, sessions and replication as events, two cores on a wire")
struct LinkCoreTests {
    @Test("a dial becomes a Noise link: each side sees the other up once, with the nick it claimed; bytes are counted")
    func linkUp() throws {
        var wire = try Wire(2)
        wire.peer(1, dials: 0)
        wire.tick()
        #expect(wire.sides[0].ups.map(\.1) == [wire.key(1)])
        #expect(wire.sides[1].ups.map(\.1) == [wire.key(0)])
        #expect(wire.sides[0].ups.first?.announce == true && wire.sides[0].ups.first?.nick == "side1")
        #expect(wire.sides[1].ups.first?.nick == "side0")
        let (a, b) = (wire.sides[0].core.counters, wire.sides[1].core.counters)
        #expect(a[.bytesIn] > 0 && a[.bytesIn] == b[.bytesOut])
        #expect(b[.bytesIn] > 0 && b[.bytesIn] == a[.bytesOut])
        #expect(wire.sides.allSatisfy { $0.closes.isEmpty })
    }

    @Test("a post goes to the linked peer and is verified and stored there; the author hears that it is stored")
    func postTravels() throws {
        var wire = try Wire(2)
        wire.peer(1, dials: 0)
        wire.tick()
        try wire.post(0, count: 1)
        #expect(wire.contiguous(1, wire.key(0)) == 1)
        #expect(wire.sides[0].effects.contains(.ownStored(1, by: wire.key(1))))
        #expect(wire.sides[0].core.counters[.envelopesSent] == 1)
    }

    @Test("history from before the link is caught up through the shell's store (catchUp), in order, on a chain of three")
    func catchUpOverTwoHops() throws {
        // No overlay: the --peer links are the only ones (a chain).
        var mesh = Overlay.Configuration()
        mesh.maximumLinks = 0
        var wire = try Wire(3, overlay: mesh)
        try wire.post(0, count: 300)
        wire.peer(1, dials: 0)
        wire.peer(2, dials: 1)
        for _ in 0..<5 { wire.tick() }
        #expect(wire.sides[0].effects.contains { if case .catchUp = $0 { return true } else { return false } })
        #expect(wire.contiguous(1, wire.key(0)) == 300)
        #expect(wire.contiguous(2, wire.key(0)) == 300)
        #expect(wire.sides[2].ups.map(\.1) == [wire.key(1)], "side 2 links to side 1 only")
    }

    @Test("another network key: the handshake fails at message 1, the link closes with 1008, counted and logged")
    func wrongNetwork() throws {
        var wire = try Wire(2, networks: [.generate(), .generate()])
        wire.peer(1, dials: 0)
        wire.tick()
        #expect(wire.sides[0].ups.isEmpty && wire.sides[1].ups.isEmpty)
        #expect(wire.sides[0].core.counters[.wrongNetworkKey] == 1)
        #expect(wire.sides[0].closes.map(\.1) == [.policyViolation])
        #expect(wire.sides[0].effects.contains { if case let .warning(_, reason) = $0 { return reason == "wrong_network_key" } else { return false } })
    }

    @Test("both dial each other at once: one link survives the tie-break, the loser closes with 1000 'duplicate link', and nobody sees the peer go down")
    func duplicateLinks() throws {
        var wire = try Wire(2)
        wire.peer(0, dials: 1)
        wire.peer(1, dials: 0)
        wire.tick()
        for _ in 0..<10 { wire.tick() }
        // Both ends decide alike, so each closes (at most) the same one of the two.
        for side in wire.sides {
            #expect(side.closes.count <= 1 && side.closes.allSatisfy { $0.1 == .normal && $0.2 == LinkCore.duplicateReason }, "\(side.closes)")
        }
        #expect(wire.sides.contains { !$0.closes.isEmpty })
        #expect(wire.connections.count == 1)
        #expect(wire.sides[0].downs.isEmpty && wire.sides[1].downs.isEmpty)
        #expect(wire.sides[0].core.table.linkedPeers.count == 1 && wire.sides[1].core.table.linkedPeers.count == 1)
        try wire.post(1, count: 2)
        #expect(wire.contiguous(0, wire.key(1)) == 2)
    }

    @Test("blocking a linked peer closes its link with 1008 'blocked'; the peer is shown down; the dialler tries again after its backoff")
    func block() throws {
        var wire = try Wire(2)
        wire.peer(1, dials: 0)
        wire.tick()
        wire.input(1, .blocked(wire.key(0)))
        #expect(wire.sides[1].closes.map(\.2) == ["blocked"])
        #expect(wire.sides[1].downs == [wire.key(0)])
        #expect(wire.sides[0].downs == [wire.key(1)])
        #expect(wire.sides[1].core.table.linkedPeers.isEmpty)
    }

    @Test("a dial to nowhere fails and is tried again with backoff (0.5 s, then 1 s, within ±25 %)")
    func dialFailsAndBacksOff() throws {
        var wire = try Wire(1)
        wire.sides[0].core.addPeer(host: Wire.host(9), port: 7733)
        wire.tick()
        let dialsAfter = { (w: Wire) in w.sides[0].effects.filter { if case .dial = $0 { return true } else { return false } }.count }
        #expect(dialsAfter(wire) == 1)
        wire.tick(by: 0.3)
        #expect(dialsAfter(wire) == 1, "not before 0.375 s")
        wire.tick(by: 0.4)
        #expect(dialsAfter(wire) == 2, "by 0.625 s")
    }

    @Test("bytes that are not a Noise message on an established link close it (transport decrypt failed), counted")
    func garbageAfterHandshake() throws {
        var wire = try Wire(2)
        wire.peer(1, dials: 0)
        wire.tick()
        let id = try #require(wire.sides[0].ups.first?.0)
        wire.input(0, .received(id, [0xFF, 0x00, 0x13]))
        #expect(wire.sides[0].core.counters[.transportDecryptFailed] == 1)
        #expect(wire.sides[0].closes.map(\.1) == [.policyViolation])
        #expect(wire.sides[0].downs == [wire.key(1)])
    }
}
