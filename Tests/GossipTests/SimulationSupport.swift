import Crypto
import Gossip
import TestSupport

/// An in-memory store with the same rules as the SQLite one: contiguous clock,
/// envelopes past a gap kept, causal delivery recorded in order.
final class MemoryStore {
    private(set) var envelopes: [PublicKey: [UInt64: Envelope]] = [:]
    private(set) var contiguous = VectorClock()
    private(set) var delivered = VectorClock()
    private(set) var deliveryOrder: [Envelope] = []
    private var sentClock = VectorClock()

    /// Inserts; returns the envelopes that were new and the clock entries that moved.
    func insert(_ batch: [Envelope]) -> (inserted: [Envelope], clock: [Dependency]) {
        var inserted: [Envelope] = []
        var moved: Set<PublicKey> = []
        for e in batch {
            if envelopes[e.author]?[e.sequence] != nil { continue }  // duplicate (or a fork: first kept)
            envelopes[e.author, default: [:]][e.sequence] = e
            inserted.append(e)
            while envelopes[e.author]?[contiguous[e.author] + 1] != nil {
                contiguous[e.author] += 1
                moved.insert(e.author)
            }
        }
        deliver()
        return (inserted, moved.map { Dependency(author: $0, sequence: contiguous[$0]) })
    }

    private func deliver() {
        var progress = true
        while progress {
            progress = false
            for author in envelopes.keys {
                while let next = envelopes[author]?[delivered[author] + 1], next.dependencies.allSatisfy({ delivered.covers($0) }) {
                    delivered[author] += 1
                    deliveryOrder.append(next)
                    progress = true
                }
            }
        }
    }

    func range(_ author: PublicKey, from: UInt64, through: UInt64) -> [Envelope] {
        guard from <= through else { return [] }
        return (from...through).compactMap { envelopes[author]?[$0] }
    }

    /// What the next own post names as dependencies (as `Store` does).
    func dependencies(for author: PublicKey) -> [Dependency] {
        let deps = delivered.advances(since: sentClock, excluding: author)
        for d in deps { sentClock[d.author] = d.sequence }
        return deps
    }

    var ids: [Dependency: MessageID] {
        var out: [Dependency: MessageID] = [:]
        for (author, bySeq) in envelopes { for (seq, e) in bySeq { out[Dependency(author: author, sequence: seq)] = e.id } }
        return out
    }
}
