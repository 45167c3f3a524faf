import Crypto
import Gossip

/// A file we offer is handed to the relays we are linked to, so that it
/// can still be fetched once this machine is gone (a relay stores and
/// forwards for machines that come and go; it fetches a file only when
/// asked, docs/PROTOCOL.md §16). Once a relay has stored the offer's
/// envelope (its declared clock holds the offer's sequence), it is asked
/// for the file's first chunk by a want that names the offer: the relay
/// binds the file to that envelope (so a delete of the offer erases its
/// copy too) and fetches it from us. Asked before it holds the envelope, it
/// would bind nothing, and keep a deleted file until `--max-files` made room.
///
/// The relay has taken the file when it answers with a chunk (it holds
/// it) or asks us for chunks of it (it is fetching it). Until then it is
/// asked again, `askAgainFirst` seconds later, twice as long each time up
/// to `askAgainMost`: a relay fetching its most files at once, or one
/// restarted, answers none and fetches nothing. Each new link to a relay
/// is asked afresh (a relay that lost a fetch with the link has dropped it
/// within a minute). Offers are kept for `patience`, and read back from
/// the store at start, so a relay first linked a day later, after a
/// restart, is still handed them.
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
    }

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

    /// The asks due now: each offer to each relay link that holds its
    /// envelope (`holds`) and has not taken it, once, then again as it
    /// comes due. Offers past `patience` and links gone are forgotten.
    mutating func due(relays: [LinkID], holds: (LinkID, Dependency) -> Bool, now: Double) -> [(LinkID, FileMessage)] {
        waiting.removeAll { now - $0.since >= Self.patience }
        let up = Set(relays)
        var out: [(LinkID, FileMessage)] = []
        for i in waiting.indices {
            waiting[i].asked = waiting[i].asked.filter { up.contains($0.key) }
            for link in relays.sorted() where holds(link, waiting[i].envelope) {
                if let previous = waiting[i].asked[link] {
                    guard let next = previous.next, now >= next else { continue }
                    let wait = min(previous.wait * 2, Self.askAgainMost)
                    waiting[i].asked[link] = Ask(next: now + wait, wait: wait)
                } else {
                    waiting[i].asked[link] = Ask(next: now + Self.askAgainFirst, wait: Self.askAgainFirst)
                }
                out.append((link, .want(root: waiting[i].root, size: waiting[i].size, chunks: [0], offer: waiting[i].envelope)))
            }
        }
        return out
    }

    /// The relay on `link` answered a chunk of `root` or asked for some: it took the file.
    mutating func taken(_ root: [UInt8], on link: LinkID) {
        for i in waiting.indices where waiting[i].root == root && waiting[i].asked[link] != nil {
            waiting[i].asked[link]?.next = nil
        }
    }

    /// The file `root` left this node (its offer deleted): handed to nobody more.
    mutating func forget(_ root: [UInt8]) {
        waiting.removeAll { $0.root == root }
    }
}
