import Crypto
import Gossip

/// Fetching files from the swarm (docs/PROTOCOL.md §16, "Fetching"), as a
/// pure core: which chunks to ask which linked peer for, what a bad chunk
/// or a "not held" answer does, when an unanswered ask is given to
/// another. The shell checks each chunk against the tree, writes it, and
/// sends the asks this returns; time comes in as an argument.
///
/// Each transfer asks every linked peer that may hold the file, at most
/// `perLink` chunks outstanding on each, lowest chunks first, dealt round
/// the links one at a time (so every peer serves a share); a peer that
/// says it does not hold some is left alone for `lackFirst`, twice as long
/// after each further "none" with no chunk between, at most `lackMemory`
/// (a relay asked for a file it lacks fetches it; what it has asked its
/// sources for, it holds the ask for, the rest it answers none and has a
/// moment later); a peer that serves a chunk that does not verify is
/// asked nothing more for that file (`file_bad_chunk`); an ask unanswered
/// for `wantTimeout` goes back to be asked of another.
public struct FileFetch: Sendable {
    /// Chunks asked of one peer and not yet answered, per file: 16 × 64 KB is
    /// a megabyte in flight on each link, enough to keep loopback busy.
    public static let perLink = 16
    /// Seconds an asked chunk may go unanswered before another peer is asked.
    public static let wantTimeout = 15.0
    /// Seconds a peer that said it lacks a file is first left alone: a
    /// relay that lacks it starts fetching it when asked, and serves what
    /// it holds while it fetches (docs/PROTOCOL.md §16), so its asker is
    /// not made to wait out `lackMemory` for a file it could have at once.
    /// A quarter of a second: a relay holds the first chunks well within it
    /// on a LAN, and a picture through a relay is not a second late. Each
    /// further "none" with no chunk from that peer between doubles the wait.
    public static let lackFirst = 0.25
    /// The longest a peer that keeps saying it lacks a file (or left an
    /// ask unanswered for `wantTimeout`) is left alone.
    public static let lackMemory = 10.0
    /// Files fetched at once; more wait their turn.
    public static let maximumTransfers = 8
    /// Seconds a transfer with a place may go without a chunk before it
    /// gives the place to one waiting behind it: from then on it is only
    /// probed (one chunk asked of each link at a time, each peer's "none"
    /// backing off as usual) until a chunk comes, when it counts for a
    /// place again. So files nobody serves now (their author gone, or
    /// offers a member made up for `--auto-get` to take) keep no place from
    /// a file somebody does serve.
    public static let stalledAfter = 30.0

    public enum Action: Equatable, Sendable {
        /// Ask `link` for these chunks of `root`.
        case want(LinkID, root: [UInt8], chunks: [UInt64])
        /// `root` is complete.
        case complete([UInt8])
    }

    struct Transfer: Sendable {
        let chunks: UInt64
        /// Chunks neither held nor asked for, highest first: the lowest is
        /// taken from the end (a 4 GiB file has 67,109 chunks; taking them
        /// from the front moved all the others each time).
        var missing: [UInt64]
        var asked: [UInt64: (peer: PublicKey, link: LinkID, at: Double)] = [:]
        /// Peers that said they lack the file: since when, and how long they are left alone.
        var lacking: [PublicKey: (since: Double, wait: Double)] = [:]
        var bad: Set<PublicKey> = []
        var left: UInt64
        /// When the transfer started or last took a chunk in.
        var lastChunk: Double = 0
        /// When it first had a place among the `maximumTransfers` (nil: it waits its turn).
        var placedAt: Double?

        /// It had a place and took no chunk in for `seconds` since it got it or since its last chunk.
        func idle(for seconds: Double, now: Double) -> Bool {
            placedAt.map { now - max($0, lastChunk) >= seconds } ?? false
        }
    }

    private(set) var transfers: [[UInt8]: Transfer] = [:]
    /// Transfers in the order they were started (the first `maximumTransfers` run).
    private var order: [[UInt8]] = []

    public init() {}

    public var roots: [[UInt8]] { order }

    /// Whether `root` is being fetched.
    public func fetches(_ root: [UInt8]) -> Bool { transfers[root] != nil }

    /// Whether `root` waits its turn behind `maximumTransfers` others (it never had a place yet).
    public func waitsItsTurn(_ root: [UInt8]) -> Bool { transfers[root].map { $0.placedAt == nil } ?? false }

    /// Whether chunk `index` of `root` was asked of `peer` and not answered yet.
    public func asked(_ root: [UInt8], index: UInt64, of peer: PublicKey) -> Bool {
        transfers[root]?.asked[index]?.peer == peer
    }

    /// The peer chunk `index` of `root` is asked of now, if any.
    public func askedOf(_ root: [UInt8], index: UInt64) -> PublicKey? {
        transfers[root]?.asked[index]?.peer
    }

    /// The peers dropped for `root` because a chunk they sent did not verify, in key order.
    public func badPeers(_ root: [UInt8]) -> [PublicKey] { transfers[root].map { $0.bad.sorted() } ?? [] }

    /// Whether any of `links` may still be asked for `root` (not dropped for a bad chunk).
    public func canAsk(_ root: [UInt8], links: [LinkID: PublicKey]) -> Bool {
        guard let t = transfers[root] else { return false }
        return links.values.contains { !t.bad.contains($0) }
    }

    /// Chunks of `root` still to come.
    public func left(_ root: [UInt8]) -> UInt64? { transfers[root]?.left }

    /// Starts fetching `root` (`chunks` in all), of which `held` are here already.
    public mutating func start(_ root: [UInt8], chunks: UInt64, held: (UInt64) -> Bool, now: Double = 0) {
        guard transfers[root] == nil else { return }
        let missing = (0..<chunks).reversed().filter { !held($0) }
        // With fewer than `maximumTransfers` before it, it has a place at once (else `assign` gives it one in turn).
        transfers[root] = Transfer(chunks: chunks, missing: missing, left: UInt64(missing.count), lastChunk: now,
                                   placedAt: order.count < Self.maximumTransfers ? now : nil)
        order.append(root)
    }

    /// Stops fetching `root` (erased, or given up).
    public mutating func cancel(_ root: [UInt8]) {
        transfers[root] = nil
        order.removeAll { $0 == root }
    }

    /// Chunk `index` of `root` came from `peer`, checked: `valid` when it
    /// verified against the tree (the shell then wrote it). A chunk nobody
    /// asked for is ignored.
    public mutating func received(_ root: [UInt8], index: UInt64, from peer: PublicKey, valid: Bool,
                                  links: [LinkID: PublicKey], now: Double) -> [Action] {
        guard transfers[root]?.asked[index]?.peer == peer else { return [] }
        let left = update(root) { t -> UInt64 in
            t.asked[index] = nil
            if valid {
                t.left -= 1
                t.lastChunk = now
                // It serves this file (a relay fetching it, say): its next "none" waits `lackFirst` again.
                t.lacking[peer] = nil
            } else {
                t.bad.insert(peer)
                // What else it was asked for goes to the others.
                for (i, a) in t.asked where a.peer == peer {
                    t.asked[i] = nil
                    t.missing.append(i)
                }
                t.missing.append(index)
                t.missing.sort(by: >)
            }
            return t.left
        }
        if left == 0 {
            cancel(root)
            // A transfer waiting its turn may start now.
            return [.complete(root)] + assign(links: links, now: now)
        }
        return assign(links: links, now: now)
    }

    /// `peer` does not hold these chunks of `root`.
    public mutating func lacking(_ root: [UInt8], chunks: [UInt64], from peer: PublicKey, links: [LinkID: PublicKey], now: Double) -> [Action] {
        guard transfers[root] != nil else { return [] }
        update(root) { t in
            for i in chunks where t.asked[i]?.peer == peer {
                t.asked[i] = nil
                t.missing.append(i)
            }
            t.missing.sort(by: >)
            t.lacking[peer] = (now, t.lacking[peer].map { min(Self.lackMemory, $0.wait * 2) } ?? Self.lackFirst)
        }
        return assign(links: links, now: now)
    }

    /// The transfers that had a place and took no chunk in for `seconds`
    /// (nobody linked holds them, or nobody answers); not one still
    /// waiting its turn behind others.
    public func stalled(for seconds: Double, now: Double) -> [[UInt8]] {
        order.filter { root in transfers[root]?.idle(for: seconds, now: now) ?? false }
    }

    /// A link went down: what it was asked for goes to the others.
    public mutating func linkDown(_ link: LinkID, links: [LinkID: PublicKey], now: Double) -> [Action] {
        for root in order {
            update(root) { t in
                for (i, a) in t.asked where a.link == link {
                    t.asked[i] = nil
                    t.missing.append(i)
                }
                t.missing.sort(by: >)
            }
        }
        return assign(links: links, now: now)
    }

    /// Once a second: asks unanswered too long go back, and every link with room is asked.
    public mutating func tick(links: [LinkID: PublicKey], now: Double) -> [Action] {
        for root in order {
            update(root) { t in
                for (i, a) in t.asked where now - a.at >= Self.wantTimeout {
                    t.asked[i] = nil
                    t.missing.append(i)
                    t.lacking[a.peer] = (now, Self.lackMemory)
                }
                t.missing.sort(by: >)
            }
        }
        return assign(links: links, now: now)
    }

    /// Gives every link (`links`: those that speak files, by peer) room up
    /// to `perLink` outstanding chunks of each transfer with a place (the
    /// first `maximumTransfers` in the order they were started, of those
    /// not idle for `stalledAfter`), and room for one of each stalled one.
    public mutating func assign(links: [LinkID: PublicKey], now: Double) -> [Action] {
        var out: [Action] = []
        var places = Self.maximumTransfers
        for root in order {
            out += update(root) { t -> [Action] in
                let room: Int
                if t.idle(for: Self.stalledAfter, now: now) {
                    room = 1
                } else if places > 0 {
                    places -= 1
                    if t.placedAt == nil { t.placedAt = now }
                    room = Self.perLink
                } else {
                    return []
                }
                return t.missing.isEmpty ? [] : Self.deal(&t, root: root, links: links, room: room, now: now)
            } ?? []
        }
        return out
    }

    /// Deals `t`'s missing chunks, lowest first, round the links with room
    /// (`room` chunks outstanding on each at most).
    private static func deal(_ t: inout Transfer, root: [UInt8], links: [LinkID: PublicKey], room: Int, now: Double) -> [Action] {
        let usable = links.filter { !t.bad.contains($0.value) }.sorted { $0.key < $1.key }
        // A peer that said it lacks the file is asked again only once its wait is over.
        let candidates = usable.filter { t.lacking[$0.value].map { now - $0.since >= $0.wait } ?? true }
        var wants: [LinkID: [UInt64]] = [:]
        var load: [LinkID: Int] = [:]
        for (_, a) in t.asked { load[a.link, default: 0] += 1 }
        var progress = true
        while !t.missing.isEmpty, progress {
            progress = false
            for (link, peer) in candidates where load[link, default: 0] < room && wants[link, default: []].count < FileMessage.maximumIndices {
                guard let index = t.missing.popLast() else { break }
                t.asked[index] = (peer, link, now)
                wants[link, default: []].append(index)
                load[link, default: 0] += 1
                progress = true
            }
        }
        return wants.sorted(by: { $0.key < $1.key }).map { .want($0.key, root: root, chunks: $0.value.sorted()) }
    }

    /// Runs `body` on `root`'s transfer, taken out of the table meanwhile so
    /// that its arrays are changed in place, not copied (nil: no such transfer).
    @discardableResult
    private mutating func update<R>(_ root: [UInt8], _ body: (inout Transfer) -> R) -> R? {
        guard var t = transfers.removeValue(forKey: root) else { return nil }
        let result = body(&t)
        transfers[root] = t
        return result
    }
}
