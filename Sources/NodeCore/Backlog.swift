import Crypto
import Gossip

/// What this node lacks of what its peers declared, and who declared it: the
/// numbers behind `/sync`, the prompt's catch-up bar, `--json`'s sync event
/// and `/metrics`. Pure, and saturating wherever it adds: peers choose the
/// numbers (issue 13, finding 1), and a clock saved by an earlier version
/// may hold any 64-bit value.
public enum Backlog {
    /// One author we lack messages of.
    public struct Gap: Equatable, Sendable {
        public let author: PublicKey
        public let missing: UInt64
        /// The peer that declared the most of it, whether it is linked, and when it was last heard.
        public let via: PublicKey
        public let linked: Bool
        public let seenAt: UInt64

        public init(author: PublicKey, missing: UInt64, via: PublicKey, linked: Bool, seenAt: UInt64) {
            self.author = author
            self.missing = missing
            self.via = via
            self.linked = linked
            self.seenAt = seenAt
        }
    }

    /// A clock a peer declared: now, on a link, or the last time it was linked.
    public struct Declaration: Sendable {
        public let peer: PublicKey
        public let clock: VectorClock
        public let linked: Bool
        public let seenAt: UInt64

        public init(peer: PublicKey, clock: VectorClock, linked: Bool, seenAt: UInt64) {
            self.peer = peer
            self.clock = clock
            self.linked = linked
            self.seenAt = seenAt
        }
    }

    /// What we lack, per author, and who declared it (a linked peer before
    /// one seen earlier); authors in `excluding` (blocked) are left out.
    /// Largest first.
    public static func gaps(ours: VectorClock, declarations: [Declaration], excluding: Set<PublicKey> = []) -> [Gap] {
        var best: [PublicKey: (sequence: UInt64, from: Declaration)] = [:]
        for d in declarations {
            for (author, seq) in d.clock.entries where seq > ours[author] && !excluding.contains(author) {
                if let current = best[author], current.sequence >= seq && (current.from.linked || !d.linked) { continue }
                best[author] = (seq, d)
            }
        }
        return best.map { author, b in
            Gap(author: author, missing: b.sequence - ours[author], via: b.from.peer, linked: b.from.linked, seenAt: b.from.seenAt)
        }
        .sorted { ($0.missing, $0.author) > ($1.missing, $1.author) }
    }

    /// All the gaps together.
    public static func total(_ gaps: [Gap]) -> UInt64 { gaps.reduce(0) { $0.saturatingAdd($1.missing) } }

    /// What linked peers declared beyond `ours`, the most any of them holds
    /// per author: the catch-up still to do. Cheap enough for every tick.
    public static func missing(ours: VectorClock, declared: [VectorClock]) -> UInt64 {
        var best: [PublicKey: UInt64] = [:]
        for clock in declared {
            for (author, seq) in clock.entries where seq > ours[author] {
                best[author] = max(best[author] ?? 0, seq)
            }
        }
        return best.reduce(0) { $0.saturatingAdd($1.value - ours[$1.key]) }
    }
}

/// The progress of a catch-up, for the prompt: `[sync ▓▓▓▓░░░░ 45%]`.
public struct SyncProgress: Sendable {
    /// The largest backlog seen since the catch-up began.
    public private(set) var start: UInt64 = 0
    public static let barWidth = 8
    /// Below this many missing messages no bar is shown (a live message in flight is no catch-up).
    public static let threshold: UInt64 = 50

    public init() {}

    /// The prompt tag for `missing` still to fetch, or "" when there is none worth showing.
    public mutating func tag(missing: UInt64) -> String {
        guard missing >= Self.threshold else {
            start = 0
            return ""
        }
        start = max(start, missing)
        return "[sync " + Self.bar(done: Double(start - missing) / Double(start)) + "] "
    }

    /// A share done (0…1) as the prompt draws it: `▓▓▓▓░░░░ 45%` (a file's transfer too).
    public static func bar(done: Double) -> String {
        let done = min(1, max(0, done))
        let filled = Int((done * Double(barWidth)).rounded(.down))
        return String(repeating: "▓", count: filled) + String(repeating: "░", count: barWidth - filled) + " \(Int(done * 100))%"
    }
}
