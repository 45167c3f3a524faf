import Crypto
import Gossip

/// Catch-up on one link (stored envelopes a peer's clock lacks, or asked
/// for), paced by the socket: at most `window` bytes wait unsent at a time,
/// and the next batch is read from the store once the socket has taken
/// half of them. A catch-up of a million envelopes thus costs a window of
/// memory, not the whole history, and the send-queue limit is left to find
/// peers that stopped reading. Pure: the shell reads and sends what `next`
/// asks for and reports it with `took`.
public struct CatchUpQueue: Sendable {
    /// Bytes of catch-up that may wait unsent on one link.
    public static let window = 1 << 20

    /// One author's stored envelopes still to send.
    public struct Range: Equatable, Sendable {
        public let author: PublicKey
        public var next: UInt64
        public var through: UInt64
        /// Envelopes read from the store at a time: as many as fitted in one
        /// batch message last time (large bodies make it fewer), at most
        /// `Replicator.batchSize`.
        public var perRead = Replicator.batchSize
        /// Queued ahead of the others (`add(…, first:)`).
        public var first = false
    }

    /// What the shell should do next.
    public enum Step: Equatable, Sendable {
        /// Nothing queued.
        case idle
        /// The window is full: call `next` again once fewer than `below` bytes wait unsent.
        case wait(below: Int)
        /// Read up to `count` of `author`'s envelopes from `from` on, send
        /// what fits in one batch message, then call `took`.
        case read(author: PublicKey, from: UInt64, count: Int)
    }

    /// At most one range per author.
    public private(set) var ranges: [Range] = []

    public init() {}

    public var isEmpty: Bool { ranges.isEmpty }

    /// Queues `from...through` of `author`, merged with what is already
    /// queued for that author into one range covering both: a gap request
    /// for a range on its way adds nothing, and a peer that asks for many
    /// scattered ranges while not reading cannot grow the queue.
    /// `first`: the author's range goes before every range not so marked
    /// (after those that were): a revoker's chain, so a node catching up
    /// holds the revocation before the revoked device's posts past its
    /// limit arrive, and does not show them first.
    public mutating func add(author: PublicKey, from: UInt64, through: UInt64, first: Bool = false) {
        guard from <= through else { return }
        if let i = ranges.firstIndex(where: { $0.author == author }) {
            ranges[i].next = min(ranges[i].next, from)
            ranges[i].through = max(ranges[i].through, through)
        } else if first {
            // Not before the range being sent (its read may be on its way).
            let at = ranges.isEmpty ? 0 : (ranges.dropFirst().firstIndex { !$0.first } ?? ranges.count)
            var range = Range(author: author, next: from, through: through)
            range.first = true
            ranges.insert(range, at: at)
        } else {
            ranges.append(Range(author: author, next: from, through: through))
        }
    }

    /// `unsent`: bytes waiting on the link now.
    public func next(unsent: Int) -> Step {
        guard let range = ranges.first else { return .idle }
        guard unsent < Self.window else { return .wait(below: Self.window / 2) }
        return .read(author: range.author, from: range.next, count: Int(min(UInt64(range.perRead), range.through - range.next + 1)))
    }

    /// The read asked for by `next`: `read` envelopes came from the store,
    /// the first `sent` of them went out (one batch message), the last of
    /// those at `last`. `chainEnds`: the peer cannot read the next one (an
    /// older link version), so the rest of the chain is never sent there.
    public mutating func took(read: Int, sent: Int, last: UInt64?, chainEnds: Bool) {
        guard !ranges.isEmpty else { return }
        // Done when the store has nothing more in the range (no `+ 1` past the last sequence there can be).
        if !chainEnds, let last, last < ranges[0].through {
            ranges[0].next = last + 1
            // Fewer next time if they did not all fit; more again once they do.
            ranges[0].perRead = sent < read ? max(1, sent) : min(Replicator.batchSize, ranges[0].perRead * 2)
        } else {
            ranges.removeFirst()
        }
    }
}
