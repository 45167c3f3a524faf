import Crypto

/// The clock messages a replicator sends: whole, as changes since a clock
/// the peer holds, or split when too large for one message; and what a
/// node remembers of a peer's clocks between links.
extension Replicator {
    func entries(of clock: VectorClock) -> [Dependency] {
        clock.entries.map { Dependency(author: $0.key, sequence: $0.value) }.sorted { $0.author < $1.author }
    }

    /// Our entries that differ from `earlier` (an author gone from our clock
    /// is sent as 0, which clears it).
    func changes(since earlier: VectorClock) -> [Dependency] {
        var out = entries(of: clock).filter { $0.sequence != earlier[$0.author] }
        for author in earlier.entries.keys where clock[author] == 0 { out.append(Dependency(author: author, sequence: 0)) }
        return out.sorted { $0.author < $1.author }
    }

    func fullClock() -> [GossipMessage] {
        split(entries(of: clock), first: { .clock(entries: $0, full: true) })
    }

    func messages(since base: VectorClock) -> [GossipMessage] {
        let digest = ClockDigest(base)
        return split(changes(since: base), first: { .clockSince(base: digest, entries: $0) })
    }

    /// A clock too large for one message: the first part as `first`, the rest
    /// as deltas, which the receiver applies on top (together: the same clock).
    func split(_ entries: [Dependency], first: ([Dependency]) -> GossipMessage) -> [GossipMessage] {
        let size = GossipMessage.maximumClockEntries
        var out = [first(Array(entries.prefix(size)))]
        var start = size
        while start < entries.count {
            out.append(.clock(entries: Array(entries[start..<min(entries.count, start + size)]), full: false))
            start += size
        }
        return out
    }
}

/// What one node remembers of a peer between links: the last clock each
/// side declared to the other. Only a hint: a mismatch costs one full clock.
public struct PeerClocks: Equatable, Sendable {
    /// The last clock this node declared to the peer.
    public var sent: VectorClock
    /// The last clock the peer declared to this node, if it can be rebuilt.
    public var declared: VectorClock?

    public init(sent: VectorClock, declared: VectorClock?) {
        self.sent = sent
        self.declared = declared
    }
}
