import Crypto

/// Tree push with lazy repair, in the manner of Plumtree (Leitão, Pereira,
/// Rodrigues 2007) and SSB's EBT, on links of version 4 on. A new envelope
/// goes in full on *eager* links and as an id on *lazy* ones (`ihave`, one
/// message per link per tick). There is one tree per author, as SSB's EBT
/// keeps one per feed: a single tree shared by every author grows deep (the
/// prunes of one author's floods lengthen the paths of another's), while an
/// author's own tree is the tree of first arrivals from where it posts. A
/// link that pushes us only what we already hold or are checking of an
/// author is made lazy for that author, both ends (`prune`). An id
/// announced by a lazy link that has not arrived `graftTimeout` later makes
/// that link eager again for its author (`graft`) and is asked for
/// (`request`), so a broken tree heals where it broke. Every link starts
/// eager for every author, so an author's first envelope floods the
/// overlay; its duplicates prune it down to a tree.
///
/// Nothing depends on the tree being right: the clock exchange on every
/// link still repairs whatever it loses, and what a link pushed is still
/// charged to its push budget.
extension Replicator {
    /// Seconds an announced id may stay missing before its announcer is grafted.
    public static let graftTimeout = 1.0

    /// Authors whose new envelopes go to `link` as ids only (nil: no such link).
    public func lazyAuthors(of link: LinkID) -> Int? { links[link].map { $0.tree ? $0.lazy.count : 0 } }

    /// Whether `author`'s new envelopes go to `link` in full (nil: no such link).
    public func isEager(_ link: LinkID, for author: PublicKey) -> Bool? { links[link].map { !$0.tree || !$0.lazy.contains(author) } }

    /// Authors announced by lazy links and not here yet.
    public var missingCount: Int { missing.count }

    /// After a batch from `link`: what it pushed unasked that we held
    /// already. An author whose pushes in the batch were all duplicates is
    /// pruned on the link (that author's tree reaches us another way).
    /// `crossed` more were answers to a request that a push beat: counted,
    /// never pruned for (on a link to the author itself that would make its
    /// own next posts go as ids).
    mutating func pushedDuplicates(_ link: LinkID, _ pushed: [PublicKey: (count: Int, duplicates: Int)], crossed: Int) -> [Action] {
        let duplicates = pushed.values.reduce(crossed) { $0 + $1.duplicates }
        guard duplicates > 0 else { return [] }
        var actions: [Action] = [.duplicates(link, duplicates)]
        guard var l = links.removeValue(forKey: link) else { return actions }
        defer { links[link] = l }
        guard l.tree else { return actions }
        let pruned = pushed.filter { $0.value.count == $0.value.duplicates && !l.lazy.contains($0.key) }.keys.sorted()
        guard !pruned.isEmpty else { return actions }
        l.lazy.formUnion(pruned)
        actions.append(.send(link, .prune(pruned)))
        return actions
    }

    /// A lazy link announces what it holds: ids past our clock wait
    /// `graftTimeout` for the tree to bring them.
    public mutating func ihaveReceived(_ link: LinkID, entries: [Dependency], now: Double) -> [Action] {
        guard var l = links.removeValue(forKey: link) else { return [] }
        let admitted = admit(entries, over: l.known)
        for e in admitted where e.sequence > l.announced[e.author] {
            l.announced[e.author] = e.sequence
            guard e.sequence > clock[e.author] else { continue }
            let since = missing[e.author]?.since ?? now
            missing[e.author] = (max(missing[e.author]?.sequence ?? 0, e.sequence), since)
        }
        links[link] = l
        let ignoredCount = entries.count - admitted.count
        return ignoredCount > 0 ? [.clockEntriesIgnored(link, ignoredCount)] : []
    }

    /// The peer gets these authors by another way: it gets their ids from
    /// now on. Only authors we hold are taken (a made-up one costs nothing),
    /// and never ourselves: a node is the root of its own tree, so its own
    /// new envelopes always go in full to every neighbour (a prune of it
    /// can only come from a duplicate that crossed with catch-up, and
    /// would make its next post, a /quit reason say, wait for a tick that
    /// may never come).
    public mutating func pruneReceived(_ link: LinkID, authors: [PublicKey]) {
        guard links[link]?.tree == true, var l = links.removeValue(forKey: link) else { return }
        for author in authors where clock[author] > 0 && author != me { l.lazy.insert(author) }
        links[link] = l
    }

    /// The peer missed something of these authors we announced: it gets
    /// their full pushes again (and asks for what it missed).
    public mutating func graftReceived(_ link: LinkID, authors: [PublicKey]) {
        guard var l = links.removeValue(forKey: link) else { return }
        l.lazy.subtract(authors)
        links[link] = l
    }

    /// Once a tick: the ids queued for lazy links go out, and ids still
    /// missing after `graftTimeout` graft a link that announced them.
    mutating func treeTick(now: Double) -> [Action] {
        var actions: [Action] = []
        for id in links.keys.sorted() {
            guard var l = links[id], !l.lazyQueue.isEmpty else { continue }
            let entries = l.lazyQueue.map { Dependency(author: $0.key, sequence: $0.value) }.sorted { $0.author < $1.author }
            l.lazyQueue = [:]
            links[id] = l
            var start = 0
            while start < entries.count {
                let end = min(entries.count, start + GossipMessage.maximumClockEntries)
                actions.append(.send(id, .ihave(Array(entries[start..<end]))))
                start = end
            }
        }
        var grafted: [LinkID: [PublicKey]] = [:]
        for (author, wait) in missing.sorted(by: { $0.key < $1.key }) {
            guard wait.sequence > clock[author] else {
                missing[author] = nil
                continue
            }
            guard now - wait.since >= Self.graftTimeout else { continue }
            let announcers = links.filter { $0.value.announced[author] > clock[author] }.keys.sorted()
            guard let id = announcers.first, var l = links.removeValue(forKey: id) else {
                // Whoever announced it is gone: the clock exchange will find it.
                missing[author] = nil
                continue
            }
            l.known[author] = max(l.known[author], l.announced[author])
            l.lazy.remove(author)
            links[id] = l
            if l.tree { grafted[id, default: []].append(author) }
            // Asked again after another timeout if it still has not come.
            missing[author] = (wait.sequence, now)
        }
        for (id, authors) in grafted.sorted(by: { $0.key < $1.key }) {
            var start = 0
            while start < authors.count {
                let end = min(authors.count, start + GossipMessage.maximumClockEntries)
                actions.append(.send(id, .graft(Array(authors[start..<end]))))
                start = end
            }
        }
        return actions
    }

    /// Authors whose gap a batch filled: what was held past the gap (never
    /// pushed) is announced as ids to every tree link that lacks it, which
    /// asks for it; older links learn it at the next clock exchange.
    mutating func announceFilledGaps(before: [PublicKey: UInt64], pushed: [CarriedEnvelope], except link: LinkID?) -> [Action] {
        var through: [PublicKey: UInt64] = before
        for c in pushed { through[c.envelope.author] = max(through[c.envelope.author] ?? 0, c.envelope.sequence) }
        let filled = before.keys.filter { clock[$0] > (through[$0] ?? 0) }.sorted().map { Dependency(author: $0, sequence: clock[$0]) }
        guard !filled.isEmpty else { return [] }
        var actions: [Action] = []
        for id in links.keys.sorted() where id != link {
            guard let l = links[id], l.tree else { continue }
            let lacking = filled.filter { $0.sequence > l.known[$0.author] }
            if !lacking.isEmpty { actions.append(.send(id, .ihave(lacking))) }
        }
        return actions
    }

    /// `batch` pushed on every link but `except`: in full to links eager for
    /// its authors, as ids at the next tick to lazy ones (tree push); none
    /// is sent what it is known to hold, nor what it is too old to read.
    mutating func push(_ batch: [CarriedEnvelope], except: LinkID?) -> [Action] {
        guard !batch.isEmpty else { return [] }
        var actions: [Action] = []
        let newestVersion = batch.map(\.envelope.version).max() ?? 0
        // Each author's lowest and highest sequence in the batch: whether a link lacks all of
        // it, and what it knows after, are asked per author, not per envelope (a relay's burst
        // pushes hundreds of one author's envelopes to each of 50 links).
        var span: [PublicKey: (low: UInt64, high: UInt64)] = [:]
        for c in batch {
            let s = c.envelope.sequence
            span[c.envelope.author] = span[c.envelope.author].map { (min($0.low, s), max($0.high, s)) } ?? (s, s)
        }
        let travels = batch.allSatisfy { $0.hops < CarriedEnvelope.maximumHops }
        for id in links.keys.sorted() where id != except {
            // Taken out while changed (a copy would copy its clock, per link and push), put back at the end.
            guard var l = links.removeValue(forKey: id) else { continue }
            defer { links[id] = l }
            // Too new for the peer: not sent, and not counted as known to it.
            let readable = newestVersion <= l.envelopeVersion ? batch : batch.filter { $0.envelope.version <= l.envelopeVersion }
            if readable.count < batch.count { actions.append(.heldBack(id, batch.count - readable.count)) }
            // The whole batch when the peer lacks all of it (the usual case): the
            // same array for every such link, which the link layer encodes once.
            let whole = travels && readable.count == batch.count && span.allSatisfy { $0.value.low > l.known[$0.key] }
            let lacking = whole ? readable : readable.filter { $0.envelope.sequence > l.known[$0.envelope.author] && $0.hops < CarriedEnvelope.maximumHops }
            guard !lacking.isEmpty else { continue }
            // Lazy authors' ids go at the next tick (the peer does not hold them yet); the rest in full.
            var full = lacking
            if l.tree && !l.lazy.isEmpty {
                full = []
                for c in lacking {
                    if l.lazy.contains(c.envelope.author) {
                        l.lazyQueue[c.envelope.author] = max(l.lazyQueue[c.envelope.author] ?? 0, c.envelope.sequence)
                    } else {
                        full.append(c)
                    }
                }
            }
            if whole && full.count == batch.count {
                for (author, s) in span { l.known[author] = max(l.known[author], s.high) }
            } else {
                for c in full { l.known[c.envelope.author] = max(l.known[c.envelope.author], c.envelope.sequence) }
            }
            if !full.isEmpty { actions.append(.send(id, .envelopes(full))) }
        }
        return actions
    }
}
