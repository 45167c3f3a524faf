import Crypto

/// Author → highest *contiguous* sequence held. Missing authors are 0.
public struct VectorClock: Equatable, Sendable {
    public private(set) var entries: [PublicKey: UInt64]

    public init(_ entries: [PublicKey: UInt64] = [:]) {
        self.entries = entries.filter { $0.value > 0 }
    }

    public subscript(author: PublicKey) -> UInt64 {
        get { entries[author] ?? 0 }
        set { entries[author] = newValue == 0 ? nil : newValue }
    }

    /// True when this clock holds `dependency` (and so everything before it
    /// from that author).
    public func covers(_ dependency: Dependency) -> Bool {
        self[dependency.author] >= dependency.sequence
    }

    /// How many envelopes this clock holds that `other` does not: the sum,
    /// over authors, of how far this clock is ahead.
    public func count(beyond other: VectorClock) -> UInt64 {
        entries.reduce(0) { $0 + ($1.value > other[$1.key] ? $1.value - other[$1.key] : 0) }
    }

    /// The entries of `self` that are ahead of `earlier`: what an author names
    /// as dependencies of its next envelope (what changed since the last one).
    public func advances(since earlier: VectorClock, excluding author: PublicKey) -> [Dependency] {
        entries.compactMap { key, seq in
            key != author && seq > earlier[key] ? Dependency(author: key, sequence: seq) : nil
        }.sorted { $0.author < $1.author }
    }
}
