import Gossip

/// Asks for chunks a file being fetched here has not got yet, held until
/// they come (docs/PROTOCOL.md §16, "On the link"): a node in the middle of
/// a fetch, a relay above all, would otherwise answer "none" and be asked
/// again only after the asker's `FileFetch.lackFirst`, so whoever fetched
/// through it trailed it by a quarter of a second at every turn. Held, an
/// ask is answered with its chunk as soon as the chunk has come and
/// verified; one whose chunk has not come within `patience`, or whose fetch
/// ends, is answered none (the asker then asks elsewhere, long before its
/// own `FileFetch.wantTimeout`). Only a chunk the fetch here has asked of
/// another peer waits, and, where that peer fetches the file too, only for
/// an asker whose key is below it (`Files.answer`): no ring of waits closes.
///
/// Pure: the node answers what it returns. Bounded per link
/// (`perLink`): asks past that are answered none at once, as before.
struct WaitingAsks {
    /// Chunks one link may have waiting here at once (four asks of
    /// `FileFetch.perLink`); more are answered none.
    static let perLink = 64
    /// Seconds an ask waits for its chunk before it is answered none (looked
    /// at every half of it, so within half as long again): a chunk asked of
    /// a peer that holds it comes in milliseconds on a LAN (16 chunks, a
    /// megabyte, are in flight from each peer: 80 ms at 100 Mbit/s).
    static let patience = 0.5

    struct Ask: Equatable {
        let link: LinkID
        let index: UInt64
        let since: Double
    }

    /// Asks by file, in the order they came.
    private(set) var asks: [[UInt8]: [Ask]] = [:]
    /// Asks held per link.
    private(set) var held: [LinkID: Int] = [:]

    var isEmpty: Bool { asks.isEmpty }
    /// Chunk asks held since start (`file_asks_waited`), and those answered
    /// none after `patience` (`file_asks_waited_out`), for `/stats`.
    private(set) var waitedCount = 0
    private(set) var waitedOutCount = 0

    /// Holds the asks of `link` for `chunks` of `root`, as many as its room
    /// takes (an ask already held is not held twice); returns those it did
    /// not hold, to be answered none.
    mutating func hold(_ root: [UInt8], chunks: [UInt64], on link: LinkID, now: Double) -> [UInt64] {
        var refused: [UInt64] = []
        var list = asks[root] ?? []
        var count = held[link] ?? 0
        for index in chunks {
            if list.contains(where: { $0.link == link && $0.index == index }) { continue }
            guard count < Self.perLink else {
                refused.append(index)
                continue
            }
            list.append(Ask(link: link, index: index, since: now))
            count += 1
            waitedCount &+= 1
        }
        if !list.isEmpty { asks[root] = list }
        if count > 0 { held[link] = count }
        return refused
    }

    /// Chunk `index` of `root` has come: the links that asked for it, no longer held.
    mutating func came(_ root: [UInt8], index: UInt64) -> [LinkID] {
        take(root) { $0.index == index }.map(\.link)
    }

    /// The fetch of `root` ended (whole, or stopped): every ask of it, by link, no longer held.
    mutating func ended(_ root: [UInt8]) -> [(link: LinkID, chunks: [UInt64])] {
        Self.byLink(take(root) { _ in true })
    }

    /// Asks that have waited `patience` or longer, by file and link, no longer held.
    mutating func expired(now: Double) -> [(root: [UInt8], link: LinkID, chunks: [UInt64])] {
        var out: [(root: [UInt8], link: LinkID, chunks: [UInt64])] = []
        for root in Array(asks.keys) {
            let old = take(root) { now - $0.since >= Self.patience }
            waitedOutCount &+= old.count
            out += Self.byLink(old).map { (root, $0.link, $0.chunks) }
        }
        return out
    }

    /// `link` went down: its asks are dropped (nobody to answer).
    mutating func dropped(_ link: LinkID) {
        guard held[link] != nil else { return }
        for root in Array(asks.keys) { _ = take(root) { $0.link == link } }
    }

    /// Takes `root`'s asks that `which` picks out, keeping the counts true.
    private mutating func take(_ root: [UInt8], _ which: (Ask) -> Bool) -> [Ask] {
        guard var list = asks[root] else { return [] }
        let taken = list.filter(which)
        guard !taken.isEmpty else { return [] }
        list.removeAll(where: which)
        asks[root] = list.isEmpty ? nil : list
        for ask in taken {
            let left = (held[ask.link] ?? 1) - 1
            held[ask.link] = left > 0 ? left : nil
        }
        return taken
    }

    private static func byLink(_ taken: [Ask]) -> [(link: LinkID, chunks: [UInt64])] {
        var order: [LinkID] = []
        var chunks: [LinkID: [UInt64]] = [:]
        for ask in taken {
            if chunks[ask.link] == nil { order.append(ask.link) }
            chunks[ask.link, default: []].append(ask.index)
        }
        return order.map { ($0, chunks[$0, default: []].sorted()) }
    }
}
