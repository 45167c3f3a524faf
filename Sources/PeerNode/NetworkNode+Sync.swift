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
        for saved in readLogged("the saved clocks of peers", { try node.store.allPeerClocks() }) ?? [] { offline[saved.peer] = (saved.clocks, saved.savedAt) }
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
        let mark = ownMessageState(in: session.openRoomID).map { " " + $0.rawValue } ?? ""
        return activity.line(order: roomOrder) + syncProgress.tag(missing: missingFromLinked) + typingLine() + session.roomLabel + mark + "> "
    }
}

/// The own-history gate (`OwnHistoryGate`, pure) fed with the linked
/// peers' claims; its effects done here.
extension NetworkNode {
    /// Each linked peer's declared sequence for us (empty until a linked
    /// peer has declared its clock).
    var ownClaims: [PublicKey: UInt64] {
        var out: [PublicKey: UInt64] = [:]
        for (id, remote) in linkedPeers {
            if let claimed = replicator.declaredClock(of: id)?[node.me] { out[remote] = max(out[remote] ?? 0, claimed) }
        }
        return out
    }

    /// Why a post of ours must wait now (nil: it may go).
    func ownHistoryRefusal(now: Double) -> OwnHistoryGate.Refusal? {
        ownHistory.refusal(known: node.ownDurability.historyIsKnown, claims: ownClaims, ours: replicator.clock[node.me], now: now)
    }

    /// Throws while our own history may still be elsewhere (every post of ours passes here).
    func ensureOwnHistoryIsBack() throws(OwnHistoryGate.Refusal) {
        if let refusal = ownHistoryRefusal(now: monotonic()) { throw refusal }
        // Let through while not known: a linked peer has said (as the tick would record).
        if !node.ownDurability.historyIsKnown { ownHistoryKnown() }
    }

    /// This database knows our history now: saved, so the next start does not wait.
    func ownHistoryKnown() {
        do { try node.ownDurability.markKnown() } catch { log.warning("saving that our history is known failed: \(error)") }
    }

    /// On each tick: claims that came to nothing, our history known, the waiting nick.
    func tickOwnHistory(now: Double) {
        let effects = ownHistory.tick(known: node.ownDurability.historyIsKnown, claims: ownClaims, ours: replicator.clock[node.me], now: now)
        for effect in effects {
            switch effect {
            case let .disbelieved(peer, missing):
                count(.ownHistoryClaimIgnored)
                log.warning("\(peer.shortFingerprint) says it holds \(missing) more of your messages but sent none in \(Int(OwnHistoryGate.patience)) s; posting goes on without them")
            case .historyKnown:
                ownHistoryKnown()
            case .waitedAlone:
                log.warning("this machine stopped while peernode ran, and no linked peer has said what you posted in \(Int(OwnHistoryGate.patience)) s: posting goes on")
                ownHistoryKnown()
            case let .postNick(nick):
                post(nick: nick)
            }
        }
    }

    /// Posts the nick that waited, unless our history brought back the same one.
    func post(nick: String) {
        guard node.nick != nick else { return }
        do {
            sendOwn(try node.post(nick, kind: .nick, in: session.room))
        } catch {
            log.warning("could not post the nick \(nick): \(error)")
        }
    }
}
