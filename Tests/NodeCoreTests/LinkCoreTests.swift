import Crypto
import Gossip
import NetworkText
import NodeCore
import TestSupport
import Testing

/// Two or more `LinkCore`s and the wire between them, with no socket, thread
/// or clock: a dial of one is a connection accepted by the other, bytes one
/// transmits are received by the other in order, a close at one end is a
/// close at both, and each side's "store" is a dictionary. Time moves only
/// when a test says so.
private struct Wire {
    struct Side {
        var core: LinkCore
        let identity: SigningKey
        let network: NetworkKey
        var stored: [PublicKey: [UInt64: Envelope]] = [:]
        var effects: [LinkCore.Effect] = []
        var ups: [(LinkID, PublicKey, announce: Bool, nick: String?)] = []
        var downs: [PublicKey] = []
        var closes: [(LinkID, LinkCore.Closing, String)] = []
    }

    var sides: [Side]
    /// An open connection: its link id at each end (side, id).
    var connections: [[(side: Int, id: LinkID)]] = []
    /// Link ids, one counter for all sides (a dialler reaches side N at host "side-N").
    var nextLink = 1
    var now = 0.0
    /// Inputs still to hand over, in order: (side, input).
    var queue: [(Int, LinkCore.Input)] = []

    init(_ count: Int, networks: [NetworkKey]? = nil, seed: UInt64 = 7) throws {
        let shared = NetworkKey.generate()
        sides = try (0..<count).map { i in
            let identity = try SigningKey.generate()
            return Side(core: LinkCore(me: identity.publicKey, clock: VectorClock(), random: SeededRandom(state: seed + UInt64(i))),
                        identity: identity, network: networks?[i] ?? shared)
        }
    }

    func key(_ side: Int) -> PublicKey { sides[side].identity.publicKey }

    mutating func input(_ side: Int, _ input: LinkCore.Input) {
        queue.append((side, input))
        run()
    }

    /// Hands every queued input over and does every effect, until quiet.
    mutating func run() {
        var steps = 0
        while !queue.isEmpty {
            steps += 1
            if steps > 100_000 {
                Issue.record("the wire never went quiet")
                return
            }
            let (side, input) = queue.removeFirst()
            let effects = sides[side].core.handle(input, now: now)
            sides[side].effects += effects
            for effect in effects { perform(effect, at: side) }
        }
    }

    func other(of side: Int, on id: LinkID) -> (side: Int, id: LinkID)? {
        for ends in connections where ends.contains(where: { $0.side == side && $0.id == id }) {
            return ends.first { !($0.side == side && $0.id == id) }
        }
        return nil
    }

    mutating func perform(_ effect: LinkCore.Effect, at side: Int) {
        switch effect {
        case let .transmit(id, bytes):
            if let there = other(of: side, on: id) { queue.append((there.side, .received(there.id, bytes))) }
        case let .close(id, closing, reason):
            sides[side].closes.append((id, closing, reason))
            if let there = other(of: side, on: id) {
                connections.removeAll { $0.contains { $0.side == side && $0.id == id } }
                queue.append((side, .closed(id, reason: PeerText(""))))
                queue.append((there.side, .closed(there.id, reason: PeerText(reason))))
            }
        case let .dial(d, host, _):
            guard let target = Int(host.dropFirst("side-".count)), target < sides.count else {
                queue.append((side, .dialFailed(d)))
                return
            }
            let here = nextLink, there = nextLink + 1
            nextLink += 2
            connections.append([(side, here), (target, there)])
            let expected = sides[side].core.table.expectedRemote(of: d)
            // Failing to make a session is the shell's (it refuses the link); here it cannot fail.
            guard let dialling = try? LinkSession(initiator: true, identity: sides[side].identity, networkKey: sides[side].network,
                                                  now: now, expectedRemote: expected, nick: "side\(side)"),
                  let accepting = try? LinkSession(initiator: false, identity: sides[target].identity, networkKey: sides[target].network,
                                                   now: now, nick: "side\(target)") else { return }
            queue.append((target, .opened(there, dialer: nil, session: accepting, version: .newest, address: "side-\(side)")))
            queue.append((side, .opened(here, dialer: d, session: dialling, version: .newest, address: host)))
        case let .up(id, remote, announce, nick):
            sides[side].ups.append((id, remote, announce, nick))
            queue.append((side, .replicate(id, memory: nil)))
        case let .peerDown(remote, _):
            sides[side].downs.append(remote)
        case let .catchUp(id, author, from, through):
            let chain = sides[side].stored[author] ?? [:]
            let batch = (from...through).compactMap { chain[$0] }.map { CarriedEnvelope(hops: 0, envelope: $0) }
            if !batch.isEmpty { queue.append((side, .send(id, .envelopes(batch)))) }
        case let .verifyAndStore(id, batch):
            var inserted: [CarriedEnvelope] = []
            var valid = 0
            for carried in batch where (try? carried.envelope.verifySignature()) != nil {
                valid += 1
                if sides[side].stored[carried.envelope.author]?[carried.envelope.sequence] == nil {
                    sides[side].stored[carried.envelope.author, default: [:]][carried.envelope.sequence] = carried.envelope
                    inserted.append(carried)
                }
            }
            let clock = Set(batch.map(\.envelope.author)).map { Dependency(author: $0, sequence: contiguous(side, $0)) }
            queue.append((side, .stored(from: id, checked: batch, inserted: inserted, invalid: batch.count - valid, newClock: clock)))
        case .remember, .ownStored, .warning:
            break
        }
    }

    func contiguous(_ side: Int, _ author: PublicKey) -> UInt64 {
        var n: UInt64 = 0
        while sides[side].stored[author]?[n + 1] != nil { n += 1 }
        return n
    }

    /// Signs and stores `count` posts of `side`'s own and tells its core.
    mutating func post(_ side: Int, count: Int) throws {
        let room = RoomID.publicRoom(.general, network: .derived(fromName: "wire"))
        for _ in 0..<count {
            let sequence = contiguous(side, key(side)) + 1
            let previous = sides[side].stored[key(side)]?[sequence - 1]?.id ?? .zero
            let e = try Envelope.sign(by: sides[side].identity, sequence: sequence, previous: previous, dependencies: [],
                                      timestamp: 1_000 + sequence, room: room, kind: .text, body: Array("post \(sequence)".utf8))
            sides[side].stored[key(side), default: [:]][sequence] = e
            input(side, .posted(e))
        }
    }

    /// Side `from` dials side `to` (a `--peer`), at the next tick.
    mutating func peer(_ from: Int, dials to: Int) {
        sides[from].core.addPeer(host: "side-\(to)", port: 7733)
    }

    mutating func tick(by seconds: Double = 1) {
        now += seconds
        for side in sides.indices { queue.append((side, .tick)) }
        run()
    }
}

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
        var wire = try Wire(3)
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
        wire.sides[0].core.addPeer(host: "side-9", port: 7733)
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
