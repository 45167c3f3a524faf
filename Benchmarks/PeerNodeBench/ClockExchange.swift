import Crypto
import Foundation
import Gossip

// Bytes of the clock exchange when a link comes up, measured by running two
// replicator cores against each other through the real message codec and
// counting what each side sends. "On the wire" adds, per link message, the
// chunk flag (1), the Noise tag (16) and the WebSocket frame header (2 or 4,
// plus a 4-byte mask from the dialler): exactly what a link adds.

struct ClockExchangeCost {
    var gossipBytes = 0
    var wireBytes = 0
    var messages = 0
    var fullClockWanted = false
}

/// Link-level bytes for one gossip message of `size` bytes sent by the dialler or not.
func wireBytes(gossip size: Int, dialler: Bool) -> Int {
    GossipChunker.chunks([UInt8](repeating: 0, count: size)).reduce(0) { total, chunk in
        let noise = chunk.count + 16
        let header = (noise <= 125 ? 2 : 4) + (dialler ? 4 : 0)
        return total + noise + header
    }
}

/// Runs the clock exchange of a link coming up between `a` (dialler) and `b`.
func exchangeClocks(_ a: inout Replicator, _ b: inout Replicator, memoryA: PeerClocks?, memoryB: PeerClocks?)
    -> (a: ClockExchangeCost, b: ClockExchangeCost, rememberedA: PeerClocks?, rememberedB: PeerClocks?) {
    var costs = [ClockExchangeCost(), ClockExchangeCost()]
    var remembered: [PeerClocks?] = [nil, nil]
    var queue: [(from: Int, GossipMessage)] = []
    func take(_ actions: [Replicator.Action], from side: Int) {
        for action in actions {
            switch action {
            case let .send(_, m):
                // Asking for catch-up is not part of the clock exchange's cost.
                if case .request = m { continue }
                let size = m.encoded.count
                costs[side].gossipBytes += size
                costs[side].wireBytes += wireBytes(gossip: size, dialler: side == 0)
                costs[side].messages += 1
                if m == .fullClockWanted { costs[side].fullClockWanted = true }
                queue.append((side, m))
            case let .remember(_, clocks):
                remembered[side] = clocks
            default:
                break
            }
        }
    }
    take(a.linkUp(1, now: 0, memory: memoryA), from: 0)
    take(b.linkUp(1, now: 0, memory: memoryB), from: 1)
    while !queue.isEmpty {
        let (from, m) = queue.removeFirst()
        let to = 1 - from
        func deliver(_ r: inout Replicator) -> [Replicator.Action] {
            switch m {
            case let .clock(entries, full): return r.clockReceived(1, entries: entries, full: full, now: 0)
            case let .clockSince(base, entries): return r.clockSinceReceived(1, base: base, entries: entries, now: 0)
            case .fullClockWanted: return r.fullClockWanted(1)
            case .envelopes, .request, .stored, .overlay, .ihave, .prune, .graft, .typing, .presence, .file: return []
            }
        }
        take(to == 0 ? deliver(&a) : deliver(&b), from: to)
    }
    a.linkDown(1)
    b.linkDown(1)
    return (costs[0], costs[1], remembered[0], remembered[1])
}

func clockExchangeBenchmark(authors count: Int) throws {
    print("")
    print("clock exchange on link-up, \(count) authors known on both sides, nothing missing (bytes each side sends)")
    let keys = try (0..<count).map { _ in try SigningKey.generate().publicKey }
    var random = SystemRandomNumberGenerator()
    let clock = VectorClock(Dictionary(uniqueKeysWithValues: keys.map { ($0, UInt64.random(in: 1...5000, using: &random)) }))
    let me = try SigningKey.generate().publicKey, peer = try SigningKey.generate().publicKey
    var a = Replicator(me: me, clock: clock, random: SystemRandomNumberGenerator())
    var b = Replicator(me: peer, clock: clock, random: SystemRandomNumberGenerator())

    func line(_ name: String, _ cost: (a: ClockExchangeCost, b: ClockExchangeCost, rememberedA: PeerClocks?, rememberedB: PeerClocks?)) {
        let perAuthor = Double(cost.a.gossipBytes) / Double(count)
        print(name.padding(toLength: 44, withPad: " ", startingAt: 0)
              + String(format: "%7d B gossip  %7d B wire  (%.2f B/author)  %d+%d messages%@", cost.a.gossipBytes, cost.a.wireBytes, perAuthor,
                       cost.a.messages, cost.b.messages, cost.a.fullClockWanted || cost.b.fullClockWanted ? "  (full clock asked for)" : ""))
    }
    let first = exchangeClocks(&a, &b, memoryA: nil, memoryB: nil)
    line("first contact", first)
    let again = exchangeClocks(&a, &b, memoryA: first.rememberedA, memoryB: first.rememberedB)
    line("reconnect, nothing changed", again)
    // Ten authors moved on at both sides alike while apart.
    var moved = clock
    for k in keys.prefix(10) { moved[k] += 3 }
    a = Replicator(me: me, clock: moved, random: SystemRandomNumberGenerator())
    b = Replicator(me: peer, clock: moved, random: SystemRandomNumberGenerator())
    let ten = exchangeClocks(&a, &b, memoryA: again.rememberedA, memoryB: again.rememberedB)
    line("reconnect, 10 authors changed", ten)
    // The peer lost its memory: one round trip and a full clock.
    let lost = exchangeClocks(&a, &b, memoryA: ten.rememberedA, memoryB: nil)
    line("reconnect, peer lost what it remembered", lost)
    let firstPerAuthor = Double(first.a.gossipBytes) / Double(count)
    print(String(format: "aims: first contact ≤ ~40 B/author: %@ (%.1f); reconnect in proportion to the authors that changed: %@ (%d B for 0, %d B for 10)",
                 firstPerAuthor <= 40 ? "met" : "NOT met", firstPerAuthor,
                 again.a.gossipBytes < 64 && ten.a.gossipBytes < again.a.gossipBytes + 10 * 43 ? "met" : "NOT met",
                 again.a.gossipBytes, ten.a.gossipBytes))
}
