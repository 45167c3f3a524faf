import Crypto
import FuzzSupport
import Gossip

// libFuzzer entry: the replicator fed gossip messages by hostile peers. The
// input is records: one byte picks the link (0–2; 3 takes the link down and
// up again, 4 lets 3 seconds pass), two bytes give a length, then a gossip
// message. Envelopes are stored as if their signatures held (a fuzzer cannot
// sign), so the replicator's state moves as it would under a peer that lies
// only in its clocks, requests and sequence numbers. Properties: the clock
// only moves forward and never past what is stored; we only send what we hold,
// only to links that are up.

/// A tiny deterministic generator, so a crash input replays the same way.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

let me = (try? PublicKey(bytes: [UInt8](repeating: 0x11, count: 32)))

/// What the simulated store holds: author → sequences.
struct Held {
    var sequences: [PublicKey: Set<UInt64>] = [:]
    func contiguous(_ author: PublicKey) -> UInt64 {
        var n: UInt64 = 0
        while sequences[author]?.contains(n + 1) == true { n += 1 }
        return n
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGossip(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    invariant(me != nil, "the fuzz target's key could not be made")
    guard let me else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var held = Held()
    held.sequences[me] = [1, 2, 3]
    var replicator = Replicator(me: me, clock: VectorClock([me: 3]), random: SplitMix(state: 1))
    var up: Set<LinkID> = []
    var now = 0.0
    var queue: [Replicator.Action] = []
    for link in 0..<3 {
        up.insert(link)
        queue += replicator.linkUp(link, now: now)
    }
    var rest = bytes[...]
    while rest.count >= 3 {
        let selector = Int(rest[rest.startIndex]) % 5
        let length = Int(rest[rest.startIndex + 1]) << 8 | Int(rest[rest.startIndex + 2])
        let body = Array(rest.dropFirst(3).prefix(length))
        rest = rest.dropFirst(3 + length)
        switch selector {
        case 3:
            let link = body.first.map { Int($0) % 3 } ?? 0
            replicator.linkDown(link)
            // Either version: the peer asks for its catch-up (2) or is sent it (1).
            queue += replicator.linkUp(link, now: now, version: body.count > 1 && body[1] & 1 == 1 ? .v1 : .v2)
            up.insert(link)
        case 4:
            now += 3
            queue += replicator.tick(now: now)
        default:
            guard up.contains(selector), let message = try? GossipMessage.decode(body) else { continue }
            switch message {
            case let .clock(entries, full): queue += replicator.clockReceived(selector, entries: entries, full: full, now: now)
            case let .envelopes(batch): queue += replicator.envelopesReceived(selector, batch, now: now)
            case let .request(ranges): queue += replicator.requestReceived(selector, ranges: ranges)
            case let .clockSince(base, entries): queue += replicator.clockSinceReceived(selector, base: base, entries: entries, now: now)
            case .fullClockWanted: queue += replicator.fullClockWanted(selector)
            case let .stored(entries): queue += replicator.storedReceived(selector, entries: entries, now: now)
            }
        }
        // The shell's side: perform every action, as the node does.
        while !queue.isEmpty {
            let action = queue.removeFirst()
            switch action {
            case let .send(link, _):
                invariant(up.contains(link), "a message for a link that is down")
            case let .sendStored(link, author, from, through):
                invariant(up.contains(link), "stored envelopes for a link that is down")
                invariant(from >= 1 && from <= through && through <= replicator.clock[author], "offered envelopes that are not held")
            case let .verifyAndStore(link, batch):
                var inserted: [CarriedEnvelope] = []
                for c in batch where held.sequences[c.envelope.author, default: []].insert(c.envelope.sequence).inserted {
                    inserted.append(c)
                }
                let authors = Set(batch.map(\.envelope.author))
                let newClock = authors.map { Dependency(author: $0, sequence: held.contiguous($0)) }
                queue += replicator.stored(from: up.contains(link) ? link : nil, checked: batch, inserted: inserted, invalid: 0,
                                           newClock: newClock, now: now)
            case let .disconnect(link, _), let .pushesLimited(link, _):
                up.remove(link)
                replicator.linkDown(link)
            case .remember, .clockEntriesIgnored:
                break
            }
        }
        // What a hostile link declares flows through every summary of it (what
        // /sync, /peers, the prompt and /stats compute): none may trap, and the
        // authors it may declare that we hold nothing of stay bounded.
        for link in up {
            let declared = replicator.declaredClock(of: link) ?? VectorClock()
            let known = replicator.knownClock(of: link) ?? VectorClock()
            _ = declared.count(beyond: replicator.clock)
            _ = replicator.clock.count(beyond: known)
            _ = known.count(beyond: replicator.clock)
            _ = declared.total
            _ = declared.entries.values.reduce(UInt64(0)) { $0.saturatingAdd($1) }
            let unknown = declared.entries.keys.filter { replicator.clock[$0] == 0 }.count
            invariant(unknown <= Replicator.maximumUnknownAuthors, "a link declared more unknown authors than the cap")
        }
        for (author, sequence) in replicator.clock.entries {
            invariant(sequence == held.contiguous(author), "the clock is not what the store holds")
        }
    }
    return 0
}
