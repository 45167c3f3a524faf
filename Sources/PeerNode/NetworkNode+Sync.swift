import Crypto
import Foundation
import Gossip
import NodeCore

/// History completeness: does this node hold everything its peers have
/// announced? Linked peers' stated clocks count now; peers seen before count
/// with the clock they stated last time (and when that was).
extension NetworkNode {
    typealias Gap = Backlog.Gap

    /// What we lack, per author, and who declared it.
    func gaps() -> [Gap] {
        let now = Node.now()
        var declarations: [Backlog.Declaration] = []
        for (id, remote) in linkedPeers {
            if let declared = replicator.declaredClock(of: id) { declarations.append(.init(peer: remote, clock: declared, linked: true, seenAt: now)) }
        }
        let online = Set(linkedPeers.values)
        // Peers seen before: their saved clocks, or the newer ones not written yet.
        var offline: [PublicKey: (clocks: PeerClocks, seenAt: UInt64)] = [:]
        for saved in (try? node.store.allPeerClocks()) ?? [] { offline[saved.peer] = (saved.clocks, saved.savedAt) }
        for (peer, clocks) in unsavedPeerClocks { offline[peer] = (clocks, now) }
        for (peer, saved) in offline.sorted(by: { $0.key < $1.key }) where !online.contains(peer) {
            if let declared = saved.clocks.declared { declarations.append(.init(peer: peer, clock: declared, linked: false, seenAt: saved.seenAt)) }
        }
        return Backlog.gaps(ours: replicator.clock, declarations: declarations, excluding: blocked.snapshot)
    }

    /// `/sync`: what we lack, who declared it, and the forks recorded.
    func syncReport() throws -> NodeEvent {
        var sequences: [PublicKey: Set<UInt64>] = [:]
        for f in try node.store.forks() { sequences[f.author, default: []].insert(f.sequence) }
        return .sync(SyncReport(
            gaps: gaps(), held: replicator.clock.total, authors: replicator.clock.entries.count, linked: Set(linkedPeers.values).count,
            forks: sequences.keys.sorted().map { (author: $0, sequences: (sequences[$0] ?? []).sorted()) }, now: Node.now(), people: node.people))
    }

    /// Linked peers' announced messages we lack (the catch-up still to do);
    /// cheap enough for every tick (no database).
    var missingFromLinked: UInt64 {
        Backlog.missing(ours: replicator.clock, declared: linkedPeers.keys.compactMap { replicator.declaredClock(of: $0) })
    }

    /// The prompt: the catch-up bar when there is one, the room, and where
    /// our last message there has got to (… ✓ ✓✓ read).
    func prompt() -> String {
        let mark = ownMessageState(in: session.room).map { " " + $0.rawValue } ?? ""
        return syncProgress.tag(missing: missingFromLinked) + session.roomLabel + mark + "> "
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
            count(.ownHistoryClaimIgnored)
            log.warning("\(peer.shortFingerprint) says it holds \(claimed - ours) more of your messages but sent none in \(Int(Self.ownClaimPatience)) s; posting goes on without them")
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

