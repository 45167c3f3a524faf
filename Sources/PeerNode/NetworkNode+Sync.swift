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
        for saved in (try? node.store.allPeerClocks()) ?? [] where !online.contains(saved.peer) {
            if let declared = saved.clocks.declared { consider(declared, via: saved.peer, linked: false, seenAt: saved.savedAt) }
        }
        return best.map { Gap(author: $0.key, missing: $0.value.seq - ours[$0.key], via: $0.value.via, linked: $0.value.linked, seenAt: $0.value.seenAt) }
            .sorted { ($0.missing, $0.author) > ($1.missing, $1.author) }
    }

    /// `/sync`: one line when complete, else one line per author we lack messages of.
    func syncLines() -> [String] {
        let gaps = gaps()
        let renderer = Renderer(nicks: node.nicks)
        let held = replicator.clock.entries.values.reduce(0, +)
        let peers = Set(linkedPeers.values).count
        guard !gaps.isEmpty else {
            return ["-- in sync: this node holds everything its peers have announced (\(held) messages from \(replicator.clock.entries.count) authors; \(peers) linked)"]
        }
        let total = gaps.reduce(0) { $0 + $1.missing }
        let now = Node.now()
        return ["-- missing \(total) messages (\(held) held)"] + gaps.prefix(20).map { gap in
            let when = gap.linked ? "linked now" : "last seen \(Self.duration(Double(now &- gap.seenAt) / 1000)) ago"
            return "   missing \(gap.missing) from \(renderer.label(gap.author)), announced by \(renderer.label(gap.via)) (\(when))"
        } + (gaps.count > 20 ? ["   … and \(gaps.count - 20) more authors"] : [])
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
        return best.reduce(0) { $0 + ($1.value - ours[$1.key]) }
    }

    /// The prompt: the catch-up bar when there is one, the room, and where
    /// our last message there has got to (… ✓ ✓✓ read).
    func prompt() -> String {
        let mark = ownMessageState(in: session.room).map { " " + $0.rawValue } ?? ""
        return syncProgress.tag(missing: missingFromLinked) + session.room.value + mark + "> "
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

extension NetworkNode {
    /// Refuses to post while a linked peer holds more of our own messages than
    /// we do (our database was lost or restored from an old backup): a new
    /// post would reuse their sequence numbers and be kept by nobody (a fork).
    /// An identity that has posted before, on a database that holds none of
    /// it, waits for a linked peer's clock before its first post.
    func ensureOwnHistoryIsBack() throws {
        let declared = linkedPeers.keys.compactMap { replicator.declaredClock(of: $0) }
        guard !declared.isEmpty || node.ownHistoryIsKnown else {
            throw NodeError(description: "this identity has posted before, but this database holds none of its messages; "
                + "posting waits until a peer says what you posted, so no sequence number is used twice (no peer is linked yet)")
        }
        let ours = replicator.clock[node.me]
        let theirs = declared.compactMap { $0[node.me] }.max() ?? 0
        guard theirs <= ours else {
            throw NodeError(description: "your earlier messages are still coming back from your peers (\(theirs - ours) to go); try again in a moment")
        }
    }

    /// Once a linked peer declared its clock and holds no more of ours than
    /// we do, this database knows our history: remembered, so a restart
    /// with nobody linked may post.
    func markOwnHistoryKnownIfSafe() {
        guard !node.ownHistoryIsKnown, linkedPeers.keys.contains(where: { replicator.declaredClock(of: $0) != nil }),
              (try? ensureOwnHistoryIsBack()) != nil else { return }
        do { try node.markOwnHistoryKnown() } catch { log.warning("saving that our history is known failed: \(error)") }
    }

    /// The deferred startup nick goes out once a linked peer has declared
    /// its clock and holds no more of our messages than we do.
    func postPendingNickIfSafe() {
        guard pendingNick != nil, linkedPeers.keys.contains(where: { replicator.declaredClock(of: $0) != nil }),
              (try? ensureOwnHistoryIsBack()) != nil else { return }
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

