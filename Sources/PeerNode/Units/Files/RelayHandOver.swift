import Crypto
import Gossip

/// A file we offer is handed to the relays we are linked to, so that it
/// can still be fetched once this machine is gone (a relay stores and
/// forwards for machines that come and go; it fetches a file only when
/// asked, docs/PROTOCOL.md §16). Once a relay has stored the offer's
/// envelope (its declared clock holds our sequence), it is asked for the
/// file's first chunk by a want that names the offer: the relay binds the
/// file to that envelope (so a delete of the offer erases its copy too) and
/// fetches it from us. Asked before it holds the envelope, it would bind
/// nothing, and keep a deleted file until `--max-files` made room.
struct RelayHandOver {
    /// Seconds an offer waits for a relay to store it before it is handed
    /// to none: a relay linked later is not told (it fetches when asked).
    static let patience = 60.0
    /// Offers waiting at most; past it the oldest is dropped.
    static let maximumWaiting = 64

    struct Offer {
        let root: [UInt8]
        let size: UInt64
        let envelope: Dependency
        let since: Double
        var handedTo: Set<LinkID> = []
    }

    private(set) var waiting: [Offer] = []

    mutating func offered(root: [UInt8], size: UInt64, as envelope: Dependency, now: Double) {
        waiting.append(Offer(root: root, size: size, envelope: envelope, since: now))
        if waiting.count > Self.maximumWaiting { waiting.removeFirst(waiting.count - Self.maximumWaiting) }
    }

    /// The asks due now: each offer to each relay link (`relays`, with the
    /// sequence of ours each has declared) that holds its envelope and was
    /// not asked yet. Offers past `patience` are forgotten.
    mutating func due(relays: [LinkID: UInt64], now: Double) -> [(LinkID, FileMessage)] {
        waiting.removeAll { now - $0.since >= Self.patience }
        var out: [(LinkID, FileMessage)] = []
        for i in waiting.indices {
            for (link, held) in relays.sorted(by: { $0.key < $1.key })
            where held >= waiting[i].envelope.sequence && !waiting[i].handedTo.contains(link) {
                waiting[i].handedTo.insert(link)
                out.append((link, .want(root: waiting[i].root, size: waiting[i].size, chunks: [0], offer: waiting[i].envelope)))
            }
        }
        return out
    }
}
