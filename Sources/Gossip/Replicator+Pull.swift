import Crypto

/// Catch-up that the receiver asks for. What a link has shown it holds (its
/// declared clock, and envelopes it sent past a gap) and we lack is asked
/// for with `request` messages, at most `pullWindow` envelopes outstanding
/// per link and no faster than the pull budget refills (`pullBudget`). An
/// envelope that answers a request is free; anything else a link sends
/// spends its push budget. So what one link can make this node store is
/// bounded by time (both budgets), whatever it claims to hold.
extension Replicator {
    /// Envelopes asked for and not yet received that one link may have at once.
    public static let pullWindow = 8_192
    /// A link that sent nothing we asked for in this long is asked again
    /// from where we are (it may not hold what it declared).
    public static let pullTimeout = 30.0

    /// What we asked one link for, for one author, and it has not sent yet.
    struct AskedRange {
        /// The lowest sequence still expected.
        var from: UInt64
        /// The highest sequence asked for.
        var through: UInt64
        /// Envelopes in `from...through` still to come: each answers one.
        var remaining: UInt64
        /// When we last asked or were answered: a range that stays still
        /// for `pullTimeout` is forgotten and asked again from our clock
        /// (the link did not send it, or what it sent was not stored).
        var since: Double

        /// Takes `sequence` as an answer if it is in the range and one is
        /// still owed (a sender may interleave a push, so any order is taken,
        /// but never more answers than were asked for).
        mutating func answer(_ sequence: UInt64, now: Double) -> Bool {
            guard remaining > 0, sequence >= from, sequence <= through else { return false }
            remaining -= 1
            since = now
            return true
        }
    }

    /// Envelopes asked of `link` that have not come yet.
    func outstanding(_ link: Link) -> UInt64 {
        link.asked.values.reduce(0) { $0.saturatingAdd($1.remaining) }
    }

    /// Asks `link` for what it holds and we lack, within its window and budget.
    mutating func pull(_ link: LinkID, now: Double) -> [Action] {
        guard var l = links[link] else { return [] }
        l.pullTokens = min(pullBudget.burst, l.pullTokens + max(0, now - l.pullRefilledAt) * pullBudget.perSecond)
        l.pullRefilledAt = now
        // Held here now: no more watching. Still for too long: asked again.
        l.asked = l.asked.filter { author, range in
            clock[author] < range.through && now - range.since < Self.pullTimeout
        }
        var room = min(UInt64(Self.pullWindow).saturatingSubtract(outstanding(l)), UInt64(max(0, l.pullTokens.rounded(.down))))
        var ranges: [GossipRequest] = []
        guard room > 0 else {
            links[link] = l
            return []
        }
        // From past what we hold, or past what is on its way or being stored.
        let (held, asked) = (clock, l.asked)
        let start = { (author: PublicKey) in max(held[author], asked[author]?.through ?? 0) &+ 1 }
        let wanted = l.known.entries.filter { $0.value >= start($0.key) }.sorted { $0.key < $1.key }
        for (author, theirs) in wanted where room > 0 && ranges.count < GossipMessage.maximumRequests {
            let from = start(author)
            let count = min(theirs - from + 1, room)
            ranges.append(GossipRequest(author: author, from: from, count: count))
            var asked = l.asked[author] ?? AskedRange(from: from, through: from, remaining: 0, since: now)
            if asked.remaining == 0 { asked.from = from; asked.since = now }
            asked.through = from + count - 1
            asked.remaining += count
            l.asked[author] = asked
            l.askedThrough[author] = max(l.askedThrough[author] ?? 0, asked.through)
            room -= count
            l.pullTokens -= Double(count)
        }
        links[link] = l
        return ranges.isEmpty ? [] : [.send(link, .request(ranges))]
    }

    /// Asks for more once half the window has been answered (not on every batch).
    mutating func pullWhenHalfAnswered(_ link: LinkID, now: Double) -> [Action] {
        guard let l = links[link], outstanding(l) <= UInt64(Self.pullWindow / 2) else { return [] }
        return pull(link, now: now)
    }
}

extension UInt64 {
    /// `self - other`, or 0 when `other` is larger.
    func saturatingSubtract(_ other: UInt64) -> UInt64 { self > other ? self - other : 0 }
}
