import Gossip

/// The envelopes delivered most recently, in delivery order, as they were
/// written: what `Store.delivered(after:limit:)` hands out without reading
/// back and decoding the rows it has just written. During a catch-up the
/// node shows every envelope it stores, and the read back was a tenth of its
/// loop's time.
///
/// Only ever an unbroken run of delivery numbers ending at the newest. Any
/// change to a row it may hold (an erasure's pruning) and any failed write
/// empties it, and the rows are read instead: it is a copy, never the record.
struct RecentDeliveries {
    /// Bytes of envelopes held at most (large bodies push out the oldest).
    static let maximumBytes = 2 << 20
    /// Envelopes held at most: a node that never reads them (a relay) keeps
    /// only this many.
    static let maximumCount = 4_096

    private var entries: [StoredEnvelope] = []
    /// Entries before this one were handed out or pushed out (kept until
    /// they are half the array, then removed at once).
    private var head = 0
    private var bytes = 0

    var count: Int { entries.count - head }

    mutating func append(_ delivered: StoredEnvelope) {
        if let last = entries.last, last.delivery &+ 1 != delivered.delivery { removeAll() }
        entries.append(delivered)
        bytes += delivered.envelope.encoded.count
        while count > Self.maximumCount || (bytes > Self.maximumBytes && count > 1) { dropFirst() }
    }

    mutating func removeAll() {
        entries.removeAll(keepingCapacity: true)
        head = 0
        bytes = 0
    }

    /// Those delivered after `after`, at most `limit`, if held from the one
    /// right after it; nil when they must be read from the rows. Forgets
    /// those up to `after`: the node reads forwards.
    mutating func take(after: Int64, limit: Int, newest: Int64) -> [StoredEnvelope]? {
        while head < entries.count, entries[head].delivery <= after { dropFirst() }
        if after == newest { return [] }
        guard head < entries.count, entries[head].delivery == after &+ 1, limit > 0 else { return nil }
        return Array(entries[head..<(limit >= count ? entries.count : head + limit)])
    }

    private mutating func dropFirst() {
        bytes -= entries[head].envelope.encoded.count
        head += 1
        if head == entries.count {
            removeAll()
        } else if head >= 64, head * 2 >= entries.count {
            entries.removeFirst(head)
            head = 0
        }
    }
}
