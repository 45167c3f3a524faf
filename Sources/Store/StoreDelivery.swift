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
                    if holdsRecentDeliveries { recentDeliveries.append(StoredEnvelope(envelope: e, causalTime: causal, delivery: lastDelivery, number: number)) }
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
    /// `state` gives an author's state (`authors`, or a preview's own).
    func causalTime(of e: Envelope, after st: AuthorState, state: (PublicKey) -> AuthorState? = { _ in nil }) throws -> Int64? {
        var causal = Int64(clamping: min(e.timestamp, wallClock().saturatingAdd(Self.maximumFutureSkew)))
        if e.sequence > 1 { causal = max(causal, st.lastCausalTime &+ 1) }
        for d in e.dependencies {
            guard let other = state(d.author) ?? authors[d.author], other.delivered >= d.sequence else { return nil }
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

extension Store {
    // MARK: what an insert will deliver

    /// The leading run of `envelopes` that `insert(_:receivedAt:)` of the
    /// same envelopes, called next, delivers as it inserts them: each
    /// continues its author's chain (nothing held past it), its author has
    /// nothing undelivered, its dependencies are delivered here or earlier
    /// in the run, and it neither erases nor is erased by the batch. Given in order with the delivery
    /// number, causal time and message number the insert will give it. Reads
    /// only: the node shows these before the transaction that stores them
    /// (docs/DECISIONS.md, "Shown before stored").
    public func deliveredOnInsert(_ envelopes: [Envelope]) throws -> [StoredEnvelope] {
        var scratch: [PublicKey: AuthorState] = [:]
        var numbers: [RoomID: Int] = [:]
        var out: [StoredEnvelope] = []
        // What the batch erases is delivered pruned: never told with its words.
        var erased: Set<Dependency> = []
        for e in envelopes { for s in e.erases { erased.insert(Dependency(author: e.author, sequence: s)) } }
        for e in envelopes {
            guard e.erases.isEmpty, !erased.contains(Dependency(author: e.author, sequence: e.sequence)) else { break }
            let st = scratch[e.author] ?? authors[e.author]
                ?? AuthorState(rowid: 0, contiguous: 0, delivered: 0, highest: 0, lastCausalTime: 0, contiguousID: nil)
            guard e.sequence == st.highest &+ 1, st.highest == st.contiguous, st.delivered == st.contiguous,
                  // (Where the last id is not in memory, after a start say, `chainEnd` reads it once and keeps it.)
                  e.sequence == 1 || e.previous == st.contiguousID ?? chainEnd(of: e.author)?.id,
                  // Far enough from the future-skew bound that the insert's clock orders it the same.
                  e.timestamp <= wallClock().saturatingAdd(Self.maximumFutureSkew / 2) else { break }
            guard let causal = try causalTime(of: e, after: st, state: { scratch[$0] }) else { break }
            var number: Int?
            if Self.isNumbered(kindColumn(e)) {
                let last = try numbers[e.room] ?? roomRows[e.room].map(lastNumber(room:)) ?? 0
                number = last + 1
                numbers[e.room] = last + 1
            }
            out.append(StoredEnvelope(envelope: e, causalTime: causal, delivery: lastDelivery + Int64(out.count) + 1, number: number))
            var next = st
            next.contiguous = e.sequence
            next.highest = e.sequence
            next.delivered = e.sequence
            next.contiguousID = e.id
            next.lastCausalTime = causal
            scratch[e.author] = next
        }
        return out
    }
}
