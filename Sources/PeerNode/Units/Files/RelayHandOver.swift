import Crypto
import Gossip

/// A file we offer is handed to the relays we are linked to, so that it
/// can still be fetched once this machine is gone (a relay stores and
/// forwards for machines that come and go; it fetches a file only when
/// asked, docs/PROTOCOL.md §16). Once a relay has stored the offer's
/// envelope (its declared clock holds the offer's sequence), it is asked
/// for the file's last chunk by a want that names the offer: the relay
/// binds the file to that envelope (so a delete of the offer erases its
/// copy too) and fetches it from us, first chunk first. Asked before it
/// holds the envelope, it would bind nothing, and keep a deleted file
/// until `--max-files` made room.
///
/// A relay that answers with the chunk holds the file (it fetches the last
/// chunk last): it is asked no more, on this link or a later one. One that
/// asks us for chunks of it is fetching it: asked no more on this link,
/// and afresh on its next (a relay that lost the fetch with the link
/// dropped it within a minute). Until one or the other it is asked again,
/// `askAgainFirst` seconds later, twice as long each time up to
/// `askAgainMost`: a relay fetching its most files at once, or one
/// restarted, answers none and fetches nothing. Offers are kept for
/// `patience`, and read back from the store at start, so a relay first
/// linked a day later, after a restart, is still handed them.
struct RelayHandOver {
    /// Seconds an offer is handed to the relays linked after it: a week.
    static let patience = 7 * 86_400.0
    /// Offers kept at most; past it the oldest is dropped.
    static let maximumWaiting = 64
    /// Seconds before a relay that took no file is asked again, the first time.
    static let askAgainFirst = 10.0
    /// The longest wait between two asks of one relay link.
    static let askAgainMost = 600.0

    struct Offer {
        let root: [UInt8]
        let size: UInt64
        let envelope: Dependency
        let since: Double
        /// The relay links asked, and when to ask each again (nil: it took the file).
        var asked: [LinkID: Ask] = [:]
        /// Relays that served its last chunk: they hold it.
        var holders: Set<PublicKey> = []
        var lastChunk: UInt64 { max(FileOffer.chunks(size: size), 1) - 1 }
    }

    /// When a relay link is asked again (nil: it took the file), and the wait that gave it.
    struct Ask: Equatable {
        var next: Double?
        var wait: Double
    }

    private(set) var waiting: [Offer] = []

    /// Our offer of `root`, posted as `envelope` at `now` (after a restart: when it was offered, on this clock).
    mutating func offered(root: [UInt8], size: UInt64, as envelope: Dependency, now: Double) {
        guard !waiting.contains(where: { $0.envelope == envelope }) else { return }
        waiting.append(Offer(root: root, size: size, envelope: envelope, since: now))
        waiting.sort { $0.since < $1.since }
        if waiting.count > Self.maximumWaiting { waiting.removeFirst(waiting.count - Self.maximumWaiting) }
    }

    /// The asks due now: each offer to each relay link (`relays`, with the
    /// relay's key) that holds its envelope (`holds`) and has not taken it,
    /// once, then again as it comes due. Offers past `patience` and links
    /// gone are forgotten.
    mutating func due(relays: [LinkID: PublicKey], holds: (LinkID, Dependency) -> Bool, now: Double) -> [(LinkID, FileMessage)] {
        waiting.removeAll { now - $0.since >= Self.patience }
        var out: [(LinkID, FileMessage)] = []
        for i in waiting.indices {
            waiting[i].asked = waiting[i].asked.filter { relays[$0.key] != nil }
            for (link, relay) in relays.sorted(by: { $0.key < $1.key })
            where !waiting[i].holders.contains(relay) && holds(link, waiting[i].envelope) {
                if let previous = waiting[i].asked[link] {
                    guard let next = previous.next, now >= next else { continue }
                    let wait = min(previous.wait * 2, Self.askAgainMost)
                    waiting[i].asked[link] = Ask(next: now + wait, wait: wait)
                } else {
                    waiting[i].asked[link] = Ask(next: now + Self.askAgainFirst, wait: Self.askAgainFirst)
                }
                out.append((link, .want(root: waiting[i].root, size: waiting[i].size, chunks: [waiting[i].lastChunk], offer: waiting[i].envelope)))
            }
        }
        return out
    }

    /// The relay on `link` asked for chunks of `root`: it is fetching the file.
    mutating func fetching(_ root: [UInt8], on link: LinkID) {
        for i in waiting.indices where waiting[i].root == root && waiting[i].asked[link] != nil {
            waiting[i].asked[link]?.next = nil
        }
    }

    /// The relay `peer` on `link` served chunk `index` of `root`: the last one says it holds the file.
    mutating func served(_ root: [UInt8], index: UInt64, by peer: PublicKey, on link: LinkID) {
        for i in waiting.indices where waiting[i].root == root && waiting[i].asked[link] != nil && index == waiting[i].lastChunk {
            waiting[i].asked[link]?.next = nil
            waiting[i].holders.insert(peer)
        }
    }

    /// The file `root` left this node (its offer deleted): handed to nobody more.
    mutating func forget(_ root: [UInt8]) {
        waiting.removeAll { $0.root == root }
    }
}
