import CSQLite
import Crypto
import Glibc
import Gossip

extension Store {
    // MARK: causal delivery

    /// Delivers every envelope whose author's previous envelope and whose
    /// dependencies are delivered, repeating until nothing more is ready.
    /// `batch` holds envelopes already in memory, to skip reading them back.
    func deliverPending(batch: [Envelope]) throws {
        var inMemory: [PublicKey: [UInt64: Envelope]] = [:]
        for e in batch { inMemory[e.author, default: [:]][e.sequence] = e }
        var progress = true
        while progress {
            progress = false
            for key in undeliveredAuthors {
                while var st = authors[key], st.delivered < st.contiguous {
                    let sequence = st.delivered + 1
                    guard let e = try inMemory[key]?[sequence] ?? loadEnvelope(st.rowid, sequence) else { break }
                    guard let causal = try causalTime(of: e, after: st) else { break }
                    lastDelivery += 1
                    let number = try writeDelivery(author: st.rowid, sequence: sequence, causal: causal)
                    recentDeliveries.append(StoredEnvelope(envelope: e, causalTime: causal, delivery: lastDelivery, number: number))
                    st.delivered = sequence
                    st.lastCausalTime = causal
                    setAuthor(key, st)
                    dirtyAuthors.insert(key)
                    progress = true
                }
            }
        }
    }

    /// max(timestamp, causal time of the author's previous + 1, of each
    /// dependency + 1), or nil while a dependency is not delivered. Every node
    /// computes the same value, so room order is the same everywhere.
    func causalTime(of e: Envelope, after st: AuthorState) throws -> Int64? {
        var causal = Int64(clamping: min(e.timestamp, wallClock().saturatingAdd(Self.maximumFutureSkew)))
        if e.sequence > 1 { causal = max(causal, st.lastCausalTime &+ 1) }
        for d in e.dependencies {
            guard let other = authors[d.author], other.delivered >= d.sequence else { return nil }
            if other.delivered == d.sequence {
                causal = max(causal, other.lastCausalTime &+ 1)
                continue
            }
            let s = try db.statement("SELECT causal_time FROM envelopes WHERE author = ?1 AND sequence = ?2")
                .bind(1, other.rowid).bind(2, Int64(clamping: d.sequence))
            guard let dependencyTime = try s.single({ $0.int64(0) }) else { return nil }
            causal = max(causal, dependencyTime &+ 1)
        }
        return causal < 0 ? Int64.max : causal
    }
}
