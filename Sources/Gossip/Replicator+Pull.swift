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
    /// How long a link that stalled on an author is not asked for it again
    /// while another link holds it (so a link that never answers cannot
    /// hold the same share back again and again).
    public static let stallMemory = 120.0

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

        /// The sequences it was asked for (some may have come already).
        var span: ClosedRange<UInt64> { min(from, through)...through }

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

    /// Whether every answer `range` was owed came, yet what we hold of its
    /// author stops short of it and nothing of the rest is on its way into
    /// the store: what came was not kept (the store failed, a full disk).
    func answeredNotKept(_ author: PublicKey, _ range: AskedRange) -> Bool {
        let held = clock[author]
        guard range.remaining == 0, held < range.through else { return false }
        return !(held + 1...range.through).contains { pending.contains(Dependency(author: author, sequence: $0)) }
    }

    /// Once the store keeps something again after it failed (`notKept`):
    /// every range answered and not kept is forgotten, so that the next
    /// pull asks for it again instead of waiting out `pullTimeout`. Not
    /// while the store keeps failing: a node on a full disk would ask, fail
    /// and ask again as fast as its links answer. True while a range is
    /// still short of what it was answered with and some of it waits to be
    /// stored (looked at again with the next stored answer).
    mutating func forgetNotKept() -> Bool {
        var waiting = false
        var forget: [(LinkID, PublicKey)] = []
        for (id, l) in links {
            for (author, range) in l.asked where range.remaining == 0 && clock[author] < range.through {
                if answeredNotKept(author, range) { forget.append((id, author)) } else { waiting = true }
            }
        }
        for (id, author) in forget { links[id]?.asked[author] = nil }
        return waiting
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
        // Held here now: no more watching. Still for too long: asked again,
        // of another link that holds it if there is one.
        for (author, range) in l.asked where clock[author] >= range.through || now - range.since >= Self.pullTimeout {
            if clock[author] < range.through { l.stalled[author] = now }
            l.asked[author] = nil
        }
        l.stalled = l.stalled.filter { now - $0.value < Self.stallMemory }
        let owed = outstanding(l)
        // What came and still waits to be verified and stored counts too: a
        // sender faster than this node verifies would otherwise be asked for
        // everything at once, held in memory, and past `pendingLimit` dropped
        // (and asked again only after `pullTimeout`: a 30 s stall).
        let unstoredHere = owed.saturatingAdd(UInt64(unstored))
        var room = min(UInt64(Self.pullWindow).saturatingSubtract(unstoredHere), UInt64(max(0, l.pullTokens.rounded(.down))))
        // Catch-up is bounded by verifying, not by the senders: a few links
        // at a time bring it as fast, and more only add work on both ends.
        if owed == 0, pullingLinks(except: link, now: now) >= Self.maximumPullingLinks { room = 0 }
        var ranges: [GossipRequest] = []
        guard room > 0 else {
            links[link] = l
            return []
        }
        // From the first sequence past what we hold that no link is asked
        // for (this one or another): several neighbours that hold the same
        // history share it out instead of each sending all of it (a node
        // back from a week away on an office LAN links to six that hold
        // what it missed). Authors no other link is asked for come first,
        // so each author's history comes in order from one link where it
        // can (what comes past a gap waits, stored, until the gap fills).
        let elsewhere = inFlight(except: link, now: now)
        var covered = elsewhere
        for (author, range) in l.asked { covered[author, default: []].append(range.span) }
        // Each tick, for every link: with many authors the filter was most
        // of an idle node's work, so it is skipped while it would find nothing.
        let ahead = l.nothingWantedAt == l.known.stamp ? [:] : l.known.entries.filter { $0.value > clock[$0.key] }
        l.nothingWantedAt = ahead.isEmpty ? l.known.stamp : nil
        let wanted = ahead.sorted { (elsewhere[$0.key] == nil ? 0 : 1, $0.key) < (elsewhere[$1.key] == nil ? 0 : 1, $1.key) }
        for (author, theirs) in wanted where room > 0 && ranges.count < GossipMessage.maximumRequests {
            guard let (from, most) = Self.firstUnasked(after: clock[author], upTo: theirs, covered: covered[author] ?? []) else { continue }
            if l.stalled[author] != nil, links.contains(where: { $0.key != link && $0.value.known[author] >= from }) { continue }
            let count = min(most, room)
            ranges.append(GossipRequest(author: author, from: from, count: count))
            var asked = l.asked[author] ?? AskedRange(from: from, through: from, remaining: 0, since: now)
            if asked.remaining == 0 { asked.since = now }
            asked.from = asked.remaining == 0 ? from : min(asked.from, from)
            asked.through = max(asked.through, from + count - 1)
            asked.remaining += count
            l.asked[author] = asked
            l.askedThrough[author] = max(l.askedThrough[author] ?? 0, asked.through)
            covered[author, default: []].append(from...(from + count - 1))
            room -= count
            l.pullTokens -= Double(count)
        }
        links[link] = l
        return ranges.isEmpty ? [] : [.send(link, .request(ranges))]
    }

    /// Links asked for catch-up at once: others wait for one of them to
    /// finish, or to go quiet for `pullSlotTimeout`, before they are asked.
    public static let maximumPullingLinks = 2
    /// A link that was asked and sent nothing for this long no longer holds
    /// one of the `maximumPullingLinks` places (what it was asked for stays
    /// its own until `pullTimeout`), so a link that never answers holds
    /// back the others' catch-up for this long at most.
    public static let pullSlotTimeout = 2.0

    /// Links other than `link` with answers outstanding that asked or
    /// answered within `pullSlotTimeout`.
    func pullingLinks(except link: LinkID, now: Double) -> Int {
        links.reduce(0) { count, entry in
            count + (entry.key != link && entry.value.asked.values.contains { $0.remaining > 0 && now - $0.since < Self.pullSlotTimeout } ? 1 : 0)
        }
    }

    /// The sequences per author asked of links other than `link` and still
    /// expected from them or held past a gap (a range that stalled for
    /// `pullTimeout` no longer counts, so what a silent link owes is asked
    /// of another). Only links with something outstanding are looked at.
    func inFlight(except link: LinkID, now: Double) -> [PublicKey: [ClosedRange<UInt64>]] {
        var out: [PublicKey: [ClosedRange<UInt64>]] = [:]
        for (id, other) in links where id != link && !other.asked.isEmpty {
            for (author, range) in other.asked where clock[author] < range.through && now - range.since < Self.pullTimeout {
                out[author, default: []].append(range.span)
            }
        }
        return out
    }

    /// The first run of sequences after `held` and up to `theirs` that no
    /// range in `covered` holds: where it starts and how long it is.
    static func firstUnasked(after held: UInt64, upTo theirs: UInt64, covered: [ClosedRange<UInt64>]) -> (from: UInt64, count: UInt64)? {
        var from = held &+ 1
        let sorted = covered.sorted { $0.lowerBound < $1.lowerBound }
        var next: UInt64?
        for r in sorted {
            if r.lowerBound <= from {
                if r.upperBound >= from { from = r.upperBound &+ 1 }
            } else {
                next = r.lowerBound
                break
            }
        }
        guard from > held, from <= theirs else { return nil }
        let end = min(theirs, (next ?? UInt64.max) &- 1)
        return (from, end - from + 1)
    }

    /// Asks for more once half the window has been answered (not on every batch).
    mutating func pullWhenHalfAnswered(_ link: LinkID, now: Double) -> [Action] {
        guard let l = links[link], outstanding(l).saturatingAdd(UInt64(unstored)) <= UInt64(Self.pullWindow / 2) else { return [] }
        return pull(link, now: now)
    }
}

extension UInt64 {
    /// `self - other`, or 0 when `other` is larger.
    func saturatingSubtract(_ other: UInt64) -> UInt64 { self > other ? self - other : 0 }
}
