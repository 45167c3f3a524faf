import Crypto

/// Tree push with lazy repair, in the manner of Plumtree (Leitão, Pereira,
/// Rodrigues 2007) and SSB's EBT, on links of version 4 on. A new envelope
/// goes in full on *eager* links and as an id on *lazy* ones (`ihave`, one
/// message per link per tick). A link that pushes us only what we already
/// hold or are checking is made lazy, both ends (`prune`). An id announced
/// by a lazy link that has not arrived `graftTimeout` later makes that link
/// eager again (`graft`) and is asked for (`request`), so a broken tree
/// heals where it broke. Every link starts eager, so at first the overlay
/// floods; duplicates prune it down to a tree.
///
/// Nothing depends on the tree being right: the clock exchange on every
/// link still repairs whatever it loses, and what a link pushed is still
/// charged to its push budget.
extension Replicator {
    /// Seconds an announced id may stay missing before its announcer is grafted.
    public static let graftTimeout = 1.0

    /// Whether new envelopes go to `link` in full (nil: no such link).
    public func isEager(_ link: LinkID) -> Bool? { links[link].map { !$0.tree || $0.eager } }

    /// Authors announced by lazy links and not here yet.
    public var missingCount: Int { missing.count }

    /// After a batch from `link`: what it pushed unasked that we held
    /// already. A batch of pushes that were all duplicates prunes the link.
    mutating func pushedDuplicates(_ link: LinkID, pushed: Int, duplicates: Int) -> [Action] {
        guard duplicates > 0 else { return [] }
        var actions: [Action] = [.duplicates(link, duplicates)]
        if var l = links[link], l.tree, l.eager, duplicates == pushed {
            l.eager = false
            links[link] = l
            actions.append(.send(link, .prune))
        }
        return actions
    }

    /// A lazy link announces what it holds: ids past our clock wait
    /// `graftTimeout` for the tree to bring them.
    public mutating func ihaveReceived(_ link: LinkID, entries: [Dependency], now: Double) -> [Action] {
        guard var l = links[link] else { return [] }
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

    /// The peer has what we push by another way: it gets ids from now on.
    public mutating func pruneReceived(_ link: LinkID) {
        guard var l = links[link], l.tree else { return }
        l.eager = false
        links[link] = l
    }

    /// The peer missed something we announced: it gets full pushes again
    /// (and asks for what it missed).
    public mutating func graftReceived(_ link: LinkID) {
        guard var l = links[link] else { return }
        l.eager = true
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
        var grafted: Set<LinkID> = []
        for (author, wait) in missing.sorted(by: { $0.key < $1.key }) {
            guard wait.sequence > clock[author] else {
                missing[author] = nil
                continue
            }
            guard now - wait.since >= Self.graftTimeout else { continue }
            let announcers = links.filter { $0.value.announced[author] > clock[author] }.keys.sorted()
            guard let id = announcers.first, var l = links[id] else {
                // Whoever announced it is gone: the clock exchange will find it.
                missing[author] = nil
                continue
            }
            l.known[author] = max(l.known[author], l.announced[author])
            l.eager = true
            links[id] = l
            if l.tree, grafted.insert(id).inserted { actions.append(.send(id, .graft)) }
            // Asked again after another timeout if it still has not come.
            missing[author] = (wait.sequence, now)
        }
        return actions
    }
}
