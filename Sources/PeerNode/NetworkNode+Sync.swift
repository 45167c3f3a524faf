import Crypto
import Foundation
import Gossip

/// History completeness: does this node hold everything its peers have
/// announced? Linked peers' stated clocks count now; peers seen before count
/// with the clock they stated last time (and when that was).
extension NetworkNode {
    struct Gap {
        let author: PublicKey
        let missing: UInt64
        /// The peer that announced the most of it, whether it is linked, and when it was last heard.
        let via: PublicKey
        let linked: Bool
        let seenAt: UInt64
    }

    /// What we lack, per author, and who announced it.
    func gaps() -> [Gap] {
        let ours = replicator.clock
        var best: [PublicKey: (seq: UInt64, via: PublicKey, linked: Bool, seenAt: UInt64)] = [:]
        func consider(_ clock: VectorClock, via peer: PublicKey, linked: Bool, seenAt: UInt64) {
            for (author, seq) in clock.entries where seq > ours[author] && !blocked.contains(author) {
                if let current = best[author], current.seq >= seq && (current.linked || !linked) { continue }
                best[author] = (seq, peer, linked, seenAt)
            }
        }
        let now = Node.now()
        for (id, remote) in linkedPeers {
            if let declared = replicator.declaredClock(of: id) { consider(declared, via: remote, linked: true, seenAt: now) }
        }
        let online = Set(linkedPeers.values)
        // Peers seen before: their saved clocks, or the newer ones not written yet.
        var offline: [PublicKey: (clocks: PeerClocks, seenAt: UInt64)] = [:]
        for saved in (try? node.store.allPeerClocks()) ?? [] { offline[saved.peer] = (saved.clocks, saved.savedAt) }
        for (peer, clocks) in unsavedPeerClocks { offline[peer] = (clocks, now) }
        for (peer, saved) in offline.sorted(by: { $0.key < $1.key }) where !online.contains(peer) {
            if let declared = saved.clocks.declared { consider(declared, via: peer, linked: false, seenAt: saved.seenAt) }
        }
        return best.map { Gap(author: $0.key, missing: $0.value.seq - ours[$0.key], via: $0.value.via, linked: $0.value.linked, seenAt: $0.value.seenAt) }
            .sorted { ($0.missing, $0.author) > ($1.missing, $1.author) }
    }

    /// All the gaps together; saturating, since peers choose the numbers.
    static func totalMissing(_ gaps: [Gap]) -> UInt64 { gaps.reduce(0) { $0.saturatingAdd($1.missing) } }

    /// `/sync`: one line when complete, else one line per author we lack messages of.
    func syncLines() -> [String] {
        let gaps = gaps()
        let renderer = Renderer(nicks: node.nicks)
        let held = replicator.clock.total
        let peers = Set(linkedPeers.values).count
        let forks = forkLines(renderer)
        guard !gaps.isEmpty else {
            return ["-- in sync: this node holds everything its peers have announced (\(held) messages from \(replicator.clock.entries.count) authors; \(peers) linked)"] + forks
        }
        let total = Self.totalMissing(gaps)
        let now = Node.now()
        return ["-- missing \(total) messages (\(held) held)"] + gaps.prefix(20).map { gap in
            let when = gap.linked ? "linked now" : "last seen \(Self.duration(Double(now &- gap.seenAt) / 1000)) ago"
            return "   missing \(gap.missing) from \(renderer.label(gap.author)), announced by \(renderer.label(gap.via)) (\(when))"
        } + (gaps.count > 20 ? ["   … and \(gaps.count - 20) more authors"] : []) + forks
    }

    /// Forks recorded, one line per author (at most 20).
    func forkLines(_ renderer: Renderer) -> [String] {
        let forks = (try? node.store.forks()) ?? []
        guard !forks.isEmpty else { return [] }
        var sequences: [PublicKey: [UInt64]] = [:]
        for f in forks { sequences[f.author, default: []].append(f.sequence) }
        let authors = sequences.keys.sorted()
        return ["-- ⚠ \(authors.count) author\(authors.count == 1 ? "" : "s") signed two different messages at one number (a copied key or a restored backup); the first held is kept:"]
            + authors.prefix(20).map { a in "   \(renderer.label(a)) at \(Set(sequences[a] ?? []).sorted().prefix(8).map(String.init).joined(separator: ", "))" }
            + (authors.count > 20 ? ["   … and \(authors.count - 20) more"] : [])
    }

    /// Linked peers' announced messages we lack (the catch-up still to do);
    /// cheap enough for every tick (no database).
    var missingFromLinked: UInt64 {
        let ours = replicator.clock
        var best: [PublicKey: UInt64] = [:]
        for id in linkedPeers.keys {
            for (author, seq) in (replicator.declaredClock(of: id) ?? VectorClock()).entries where seq > ours[author] {
                best[author] = max(best[author] ?? 0, seq)
            }
        }
        return best.reduce(0) { $0.saturatingAdd($1.value - ours[$1.key]) }
    }

    /// The prompt: the catch-up bar when there is one, the room, and where
    /// our last message there has got to (… ✓ ✓✓ read).
    func prompt() -> String {
        let mark = ownMessageState(in: session.room).map { " " + $0.rawValue } ?? ""
        return syncProgress.tag(missing: missingFromLinked) + session.roomLabel + mark + "> "
    }
}

/// The progress of a catch-up, for the prompt: `[sync ▓▓▓▓░░░░ 45%]`.
struct SyncProgress {
    /// The largest backlog seen since the catch-up began.
    private(set) var start: UInt64 = 0
    static let barWidth = 8
    /// Below this many missing messages no bar is shown (a live message in flight is no catch-up).
    static let threshold: UInt64 = 50

    /// The prompt tag for `missing` still to fetch, or "" when there is none worth showing.
    mutating func tag(missing: UInt64) -> String {
        guard missing >= Self.threshold else {
            start = 0
            return ""
        }
        start = max(start, missing)
        let done = Double(start - missing) / Double(start)
        let filled = Int((done * Double(Self.barWidth)).rounded(.down))
        return "[sync " + String(repeating: "▓", count: filled) + String(repeating: "░", count: Self.barWidth - filled)
            + " \(Int(done * 100))%] "
    }
}

/// Claims by linked peers to hold more of our own messages than we do. One
/// patience window for the whole node, not one per claimant: identities
/// are free, so a window per identity let a peer with many of them hold
/// our posts for ever. While claims go unproven (none of our messages
/// arrives) for `NetworkNode.ownClaimPatience`, no claim is believed; our
/// chain growing is the proof that restarts the window. The window is
/// forgotten only after as long again with no claim at all, so leaving and
/// coming back does not buy a new one.
struct OwnHistoryClaims {
    /// When the current unproven period began (nil: no claim outstanding).
    private(set) var since: Double?
    /// Our own clock entry at the last update (nil before the first: where we start is no progress).
    private var ours: UInt64?
    private var progressAt = -Double.infinity
    /// The highest sequence we signed ourselves: our chain growing up to it proves nothing.
    private var signedUpTo: UInt64 = 0
    /// When a claim above ours was last seen.
    private var lastClaimAt = 0.0
    /// Peers told they are not believed, each reported once (at most `limit`).
    private(set) var disbelieved: Set<PublicKey> = []
    static let limit = 4_096

    /// Called on every tick with each linked peer's claim and our own clock.
    mutating func update(claims: [PublicKey: UInt64], ours: UInt64, now: Double, patience: Double) {
        if let before = self.ours, ours != before, ours > signedUpTo { progressAt = now }
        self.ours = ours
        if claims.values.contains(where: { $0 > ours }) {
            lastClaimAt = now
            if since == nil { since = now }
        } else if let since, progressAt >= since || now - max(lastClaimAt, since) >= patience {
            // Claims came true, or none for a whole window: a later one gets a fresh window.
            self.since = nil
            disbelieved = []
        }
    }

    /// We are about to sign our envelope `sequence`.
    mutating func signing(_ sequence: UInt64) { signedUpTo = max(signedUpTo, sequence) }

    /// Whether claims still stand: none unproven for `patience` seconds.
    func believes(now: Double, patience: Double) -> Bool {
        guard let since else { return true }
        return now - max(since, progressAt) < patience
    }

    mutating func disbelieve(_ peer: PublicKey) -> Bool {
        guard disbelieved.count < Self.limit else { return false }
        return disbelieved.insert(peer).inserted
    }
}

extension NetworkNode {
    /// A peer's claim to hold more of our messages is believed this long
    /// without any of them arriving.
    static let ownClaimPatience = 30.0

    /// Each linked peer's declared sequence for us (empty until a linked
    /// peer has declared its clock).
    var ownClaims: [PublicKey: UInt64] {
        var out: [PublicKey: UInt64] = [:]
        for (id, remote) in linkedPeers {
            if let claimed = replicator.declaredClock(of: id)?[node.me] { out[remote] = max(out[remote] ?? 0, claimed) }
        }
        return out
    }

    /// On each tick: is each claim about our history coming true?
    func watchOwnClaims(now: Double) {
        let claims = ownClaims
        let ours = replicator.clock[node.me]
        ownClaimsWatch.update(claims: claims, ours: ours, now: now, patience: Self.ownClaimPatience)
        guard !ownClaimsWatch.believes(now: now, patience: Self.ownClaimPatience) else { return }
        for (peer, claimed) in claims where claimed > ours && ownClaimsWatch.disbelieve(peer) {
            count("own_history_claim_ignored")
            log.warning("\(peer.shortFingerprint) says it holds \(claimed > ours ? claimed - ours : 0) more of your messages but sent none in \(Int(Self.ownClaimPatience)) s; posting goes on without them")
        }
    }

    /// Refuses to post while a linked peer holds more of our own messages than
    /// we do (our database was lost or restored from an old backup): a new
    /// post would reuse their sequence numbers and be kept by nobody (a fork).
    /// An identity that has posted before, on a database that holds none of
    /// it, waits for a linked peer's clock before its first post.
    func ensureOwnHistoryIsBack() throws {
        let claims = ownClaims
        guard !claims.isEmpty || node.ownHistoryIsKnown else {
            throw NodeError(description: "this identity has posted before, but this database holds none of its messages; "
                + "posting waits until a peer says what you posted, so no sequence number is used twice (no peer is linked yet)")
        }
        let ours = replicator.clock[node.me]
        let now = monotonic()
        let theirs = ownClaimsWatch.believes(now: now, patience: Self.ownClaimPatience) ? claims.values.max() ?? 0 : 0
        guard theirs <= ours else {
            throw NodeError(description: "your earlier messages are still coming back from your peers (\(theirs - ours) to go); try again in a moment")
        }
    }

    /// Once a linked peer declared its clock and holds no more of ours than
    /// we do, this database knows our history: remembered, so a restart
    /// with nobody linked may post.
    func markOwnHistoryKnownIfSafe() {
        // Not known yet, so the check passes only once a linked peer has declared.
        guard !node.ownHistoryIsKnown, (try? ensureOwnHistoryIsBack()) != nil else { return }
        do { try node.markOwnHistoryKnown() } catch { log.warning("saving that our history is known failed: \(error)") }
    }

    /// The deferred startup nick goes out once a linked peer has declared
    /// its clock and holds no more of our messages than we do.
    func postPendingNickIfSafe() {
        guard pendingNick != nil, !ownClaims.isEmpty, (try? ensureOwnHistoryIsBack()) != nil else { return }
        postPendingNick()
    }

    /// Posts the pending nick now, unless our history brought back the same one.
    func postPendingNick() {
        guard let nick = pendingNick else { return }
        pendingNick = nil
        guard node.nick != nick else { return }
        do {
            let e = try node.post(nick, kind: .nick, in: session.room)
            perform(replicator.localPost(e))
            showDeliveries()
        } catch {
            log.warning("could not post the nick \(nick): \(error)")
        }
    }
}

