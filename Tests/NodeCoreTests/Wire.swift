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
struct Wire {
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
    /// Link ids, one counter for all sides (a dialler reaches side N at `Wire.host(N)`).
    var nextLink = 1
    var now = 0.0
    /// Inputs still to hand over, in order: (side, input).
    var queue: [(Int, LinkCore.Input)] = []

    /// Whether each side's effects are kept for the test to read (large runs say no).
    var keepsEffects = true
    /// Sides that are gone (killed): dials to them fail, nothing reaches them.
    var down: Set<Int> = []
    /// The host a side's connections come from and where it listens, where
    /// not its own (`Wire.host`): several identities behind one address,
    /// each on a port of its own (`behindOneAddress`).
    var sourceHost: [Int: String] = [:]
    /// Hosts whose dials never answer (a black hole): the dial stays on its way.
    var unanswered: Set<String> = []

    /// `keySeed`: the sides' keys come from it (the same run every time), not at random.
    init(_ count: Int, networks: [NetworkKey]? = nil, seed: UInt64 = 7, keySeed: UInt8? = nil,
         overlay: Overlay.Configuration = Overlay.Configuration()) throws {
        let shared = NetworkKey.generate()
        sides = try (0..<count).map { i in
            let identity = try keySeed.map { try SigningKey(seed: [$0, UInt8(i & 255), UInt8(i >> 8 & 255)] + [UInt8](repeating: 7, count: 29)) }
                ?? SigningKey.generate()
            var core = LinkCore(me: identity.publicKey, clock: VectorClock(), overlay: overlay, random: SeededRandom(seed: seed + UInt64(i)))
            core.listens(on: 7733)
            return Side(core: core, identity: identity, network: networks?[i] ?? shared)
        }
    }

    /// Where side N listens: an IPv4 address, as the overlay names peers.
    static func host(_ side: Int) -> String { "10.\(side >> 16 & 255).\(side >> 8 & 255).\(side & 255)" }

    /// Puts `side` behind `host`: its links come from there, and it listens
    /// there on a port of its own (7733 + side), as one machine's identities do.
    mutating func behindOneAddress(_ side: Int, host: String) {
        sourceHost[side] = host
        sides[side].core.listens(on: UInt16(7733 + side))
    }

    /// The side listening at `host`:`port`.
    func side(at host: String, port: UInt16) -> Int? {
        sourceHost.first { $0.value == host && sides[$0.key].core.overlay.configuration.port == port }?.key ?? Wire.side(at: host)
    }

    static func side(at host: String) -> Int? {
        let parts = host.split(separator: ".").compactMap { Int($0) }
        guard parts.count == 4, parts[0] == 10 else { return nil }
        return parts[1] << 16 | parts[2] << 8 | parts[3]
    }

    func key(_ side: Int) -> PublicKey { sides[side].identity.publicKey }

    /// Discovery on every side hears every other side that is not down.
    mutating func discoverAll() {
        for a in sides.indices where !down.contains(a) {
            for b in sides.indices where b != a && !down.contains(b) {
                queue.append((a, .found(key(b), host: Wire.host(b), port: 7733, listening: true)))
            }
        }
        run()
    }

    /// Side `side` dies at once: its connections close at the other ends only.
    mutating func kill(_ side: Int) {
        down.insert(side)
        for ends in connections where ends.contains(where: { $0.side == side }) {
            for end in ends where end.side != side { queue.append((end.side, .closed(end.id, reason: PeerText("")))) }
        }
        connections.removeAll { $0.contains { $0.side == side } }
        run()
    }

    mutating func input(_ side: Int, _ input: LinkCore.Input) {
        queue.append((side, input))
        run()
    }

    /// Hands every queued input over and does every effect, until quiet.
    mutating func run() {
        var steps = 0
        while !queue.isEmpty {
            steps += 1
            if steps > 20_000_000 {
                Issue.record("the wire never went quiet")
                return
            }
            let (side, input) = queue.removeFirst()
            if down.contains(side) { continue }
            let effects = sides[side].core.handle(input, now: now)
            if keepsEffects { sides[side].effects += effects }
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
        case let .dial(d, host, port):
            if unanswered.contains(host) { return }
            guard let target = self.side(at: host, port: port), target < sides.count, down.contains(target) == false else {
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
            queue.append((target, .opened(there, dialer: nil, session: accepting, version: .newest, address: "\(sourceHost[side] ?? Wire.host(side)):40000")))
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
        case .remember, .ownStored, .warning, .typing, .presence, .file:
            break
        }
    }

    func contiguous(_ side: Int, _ author: PublicKey) -> UInt64 {
        var n: UInt64 = 0
        while sides[side].stored[author]?[n + 1] != nil { n += 1 }
        return n
    }

    /// Signs and stores `count` posts of `side`'s own and tells its core.
    /// `bodyBytes`: each body that long (else "post N").
    mutating func post(_ side: Int, count: Int, bodyBytes: Int? = nil) throws {
        let room = RoomID.publicRoom(.general, network: .derived(fromName: "wire"))
        for _ in 0..<count {
            let sequence = contiguous(side, key(side)) + 1
            let previous = sides[side].stored[key(side)]?[sequence - 1]?.id ?? .zero
            let e = try Envelope.sign(by: sides[side].identity, sequence: sequence, previous: previous, dependencies: [],
                                      timestamp: 1_000 + sequence, room: room, kind: .text,
                                      body: bodyBytes.map { [UInt8](repeating: 0x61, count: $0) } ?? Array("post \(sequence)".utf8))
            sides[side].stored[key(side), default: [:]][sequence] = e
            input(side, .posted(e))
        }
    }

    /// Side `from` dials side `to` (a `--peer`), at the next tick.
    mutating func peer(_ from: Int, dials to: Int) {
        sides[from].core.addPeer(host: Wire.host(to), port: 7733)
    }

    mutating func tick(by seconds: Double = 1) {
        now += seconds
        for side in sides.indices where !down.contains(side) { queue.append((side, .tick)) }
        run()
    }
}

