import Crypto
import Synchronization

/// Where each clock's `stamp` comes from: one count for the process.
private let clockStamps = Atomic<UInt64>(0)

/// Author → highest *contiguous* sequence held. Missing authors are 0.
public struct VectorClock: Equatable, Sendable {
    public private(set) var entries: [PublicKey: UInt64]
    /// Changes whenever the clock does (taken from a count for the whole
    /// process, so two clocks made apart never share one): a clock with the
    /// stamp seen before is the clock seen before, without comparing every
    /// author. Copies share it until either changes.
    public private(set) var stamp: UInt64

    public init(_ entries: [PublicKey: UInt64] = [:]) {
        self.entries = entries.filter { $0.value > 0 }
        stamp = Self.nextStamp()
    }

    public subscript(author: PublicKey) -> UInt64 {
        get { entries[author] ?? 0 }
        set {
            entries[author] = newValue == 0 ? nil : newValue
            stamp = Self.nextStamp()
        }
    }

    private static func nextStamp() -> UInt64 {
        clockStamps.wrappingAdd(1, ordering: .relaxed).newValue
    }

    /// The same entries, whatever the stamps.
    public static func == (a: VectorClock, b: VectorClock) -> Bool { a.entries == b.entries }

    /// True when this clock holds `dependency` (and so everything before it
    /// from that author).
    public func covers(_ dependency: Dependency) -> Bool {
        self[dependency.author] >= dependency.sequence
    }

    /// How many envelopes this clock holds that `other` does not: the sum,
    /// over authors, of how far this clock is ahead.
    /// Saturating: a clock a peer declared may name any sequence.
    public func count(beyond other: VectorClock) -> UInt64 {
        entries.reduce(0) { $0.saturatingAdd($1.value > other[$1.key] ? $1.value - other[$1.key] : 0) }
    }

    /// How many envelopes this clock names in all (saturating).
    public var total: UInt64 { entries.values.reduce(0) { $0.saturatingAdd($1) } }

    /// The entries of `self` that are ahead of `earlier`: what an author names
    /// as dependencies of its next envelope (what changed since the last one).
    public func advances(since earlier: VectorClock, excluding author: PublicKey) -> [Dependency] {
        entries.compactMap { key, seq in
            key != author && seq > earlier[key] ? Dependency(author: key, sequence: seq) : nil
        }.sorted { $0.author < $1.author }
    }
}

extension UInt64 {
    /// `self + other`, or `UInt64.max` where that would overflow: for sums
    /// over numbers a peer chose (docs/PROTOCOL.md §8, "Numbers from the network").
    public func saturatingAdd(_ other: UInt64) -> UInt64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }
}
