import Crypto
import FuzzSupport
import Gossip
import NetworkText
import NodeCore

// libFuzzer entry: a node's overlay fed membership and tree messages by a
// hostile member. Two real `LinkCore`s are linked by a real Noise handshake
// (the member dials with --peer, so both keep the link); then the input is
// records: one byte picks what happens (0: the member sends a gossip message,
// 1: seconds pass, 2: discovery finds a made-up peer, 3: the member's link
// closes and it dials again), two bytes give a length, then the bytes (for 0,
// a gossip message; those that do not decode are skipped). Properties: every
// view and table the overlay keeps stays within its bound, and the node
// never holds more neighbours than its bound.

let network = NetworkKey.derived(fromName: "fuzz")
let nodeKey = try? SigningKey(seed: [UInt8](repeating: 1, count: 32))
let memberKey = try? SigningKey(seed: [UInt8](repeating: 2, count: 32))

/// The node (side 0) and the member (side 1), and the one connection between them.
struct Pair {
    var cores: [LinkCore]
    var ends: (LinkID, LinkID)? = nil
    var next: LinkID = 1
    var now = 0.0
    var queue: [(Int, LinkCore.Input)] = []

    mutating func run() {
        var head = 0
        while head < queue.count, head < 100_000 {
            let (side, input) = queue[head]
            head += 1
            for effect in cores[side].handle(input, now: now) { perform(effect, at: side) }
            check()
        }
        queue.removeAll()
    }

    func other(_ side: Int, _ id: LinkID) -> (Int, LinkID)? {
        guard let (a, b) = ends else { return nil }
        if side == 0 && id == a { return (1, b) }
        if side == 1 && id == b { return (0, a) }
        return nil
    }

    mutating func perform(_ effect: LinkCore.Effect, at side: Int) {
        switch effect {
        case let .transmit(id, bytes):
            if let (s, there) = other(side, id) { queue.append((s, .received(there, bytes))) }
        case let .close(id, _, reason):
            if let (s, there) = other(side, id) {
                ends = nil
                queue.append((side, .closed(id, reason: PeerText(""))))
                queue.append((s, .closed(there, reason: PeerText(reason))))
            }
        case let .dial(d, host, _):
            // Only the member's dial of the node reaches anyone; every other address leads nowhere.
            guard side == 1, host == "10.0.0.1", ends == nil, let nodeKey, let memberKey,
                  let dialling = try? LinkSession(initiator: true, identity: memberKey, networkKey: network, now: now,
                                                  expectedRemote: cores[1].table.expectedRemote(of: d)),
                  let accepting = try? LinkSession(initiator: false, identity: nodeKey, networkKey: network, now: now)
            else { return queue.append((side, .dialFailed(d))) }
            let (here, there) = (next, next + 1)
            next += 2
            ends = (there, here)
            queue.append((0, .opened(there, dialer: nil, session: accepting, version: .newest, address: "10.0.0.2:40000")))
            queue.append((1, .opened(here, dialer: d, session: dialling, version: .newest, address: "10.0.0.1:7733")))
        case let .up(id, _, _, _):
            queue.append((side, .replicate(id, memory: nil)))
        case .peerDown, .catchUp, .verifyAndStore, .remember, .ownStored, .warning, .typing, .presence, .file:
            break
        }
    }

    /// The node's overlay stays within every bound.
    func check() {
        let o = cores[0].overlay
        let m = o.membership
        invariant(m.active.count <= m.configuration.activeSize, "more neighbours than the bound")
        invariant(m.passive.count <= m.configuration.passiveSize, "a reserve past its size")
        invariant(m.active.isDisjoint(with: m.passive), "a peer both active and passive")
        invariant(o.addresses.count <= Overlay.maximumAddresses, "an address book past its size")
        invariant(o.pinned.count <= o.configuration.maximumPinned + 1, "more kept links than maximumPinned")
        invariant(!m.active.contains(cores[0].me) && !m.passive.contains(cores[0].me), "the node in its own views")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOverlay(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    invariant(nodeKey != nil && memberKey != nil, "the fuzz target's keys could not be made")
    guard let nodeKey, let memberKey else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var node = LinkCore(me: nodeKey.publicKey, clock: VectorClock(), random: SplitMix(seed: 1))
    node.listens(on: 7733)
    var member = LinkCore(me: memberKey.publicKey, clock: VectorClock(), random: SplitMix(seed: 2))
    member.listens(on: 7733)
    member.addPeer(host: "10.0.0.1", port: 7733)
    var pair = Pair(cores: [node, member])
    pair.queue.append((1, .tick))
    pair.run()
    // Otherwise nothing below would reach the node's overlay.
    invariant(pair.cores[0].table.carries(memberKey.publicKey) && pair.cores[0].overlay.pinned.contains(memberKey.publicKey),
              "the member's link did not come up")
    var random = SplitMix(seed: 3)
    var rest = bytes[...]
    while rest.count >= 3 {
        let selector = rest[rest.startIndex] % 4
        let length = Int(rest[rest.startIndex + 1]) << 8 | Int(rest[rest.startIndex + 2])
        let body = Array(rest.dropFirst(3).prefix(length))
        rest = rest.dropFirst(3 + length)
        switch selector {
        case 0:
            guard let (_, memberEnd) = pair.ends, let message = try? GossipMessage.decode(body) else { continue }
            pair.queue.append((1, .send(memberEnd, message)))
        case 1:
            pair.now += Double(body.first ?? 1) / 8
            pair.queue.append((0, .tick))
            pair.queue.append((1, .tick))
        case 2:
            guard let key = try? SigningKey(seed: (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) }) else { continue }
            let host = "192.0.2.\(body.first ?? 1)"
            pair.queue.append((0, .found(key.publicKey, host: host, port: 7733, listening: true)))
        default:
            if let (nodeEnd, memberEnd) = pair.ends {
                pair.ends = nil
                pair.queue.append((0, .closed(nodeEnd, reason: PeerText("gone"))))
                pair.queue.append((1, .closed(memberEnd, reason: PeerText("gone"))))
            }
            pair.now += 31
            pair.queue.append((1, .tick))
        }
        pair.run()
    }
    return 0
}
