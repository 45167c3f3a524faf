import Crypto
import Gossip

/// What this node remembers of each peer between links (`PeerClocks`: the
/// last clock each side declared to the other), one row per entry. Only a
/// hint: a row that does not parse is left out, and a wrong clock costs one
/// full clock exchange.
extension Store {
    enum ClockSide: Int64 {
        case sent = 0
        case declared = 1
    }

    /// The clocks saved for `peer` by `savePeerClocks`, or nil.
    public func peerClocks(of peer: PublicKey) throws -> PeerClocks? {
        guard let declaredKnown = try db.statement("SELECT declared_known FROM peer_clocks WHERE peer = ?1").bind(1, peer.bytes)
            .single({ $0.int64(0) != 0 }) else { return nil }
        var sides = [VectorClock(), VectorClock()]
        let s = try db.statement("SELECT side, author, sequence FROM peer_clock_entries WHERE peer = ?1").bind(1, peer.bytes)
        while try s.step() {
            guard let side = ClockSide(rawValue: s.int64(0)), let author = try? PublicKey(bytes: s.blob(1)) else { continue }
            sides[Int(side.rawValue)][author] = UInt64(bitPattern: s.int64(2))
        }
        return PeerClocks(sent: sides[0], declared: declaredKnown ? sides[1] : nil)
    }

    /// Peers whose last written clocks are kept in memory (`savePeerClocks`):
    /// a relay's links, at about two clocks of every author each.
    public static let maximumWrittenPeerClocks = 64

    /// Saves `clocks` for `peer`, writing only the entries that differ from
    /// what is saved (a delta of ten authors writes ten rows). What was saved
    /// is compared as this store last wrote it, kept in memory for up to
    /// `maximumWrittenPeerClocks` peers, else read back: reading a peer's
    /// rows back was most of a write (20 ms a peer at 10,000 authors).
    public func savePeerClocks(_ clocks: PeerClocks, of peer: PublicKey, at time: UInt64) throws {
        let remembered = writtenPeerClocks.removeValue(forKey: peer)
        try db.transaction {
            let saved = try remembered ?? peerClocks(of: peer)
            try db.statement("INSERT OR REPLACE INTO peer_clocks(peer, declared_known, updated_at) VALUES (?1, ?2, ?3)")
                .bind(1, peer.bytes).bind(2, clocks.declared == nil ? 0 : 1).bind(3, Int64(clamping: time)).run()
            try replaceEntries(of: peer, side: .sent, with: clocks.sent, saved: saved?.sent ?? VectorClock())
            try replaceEntries(of: peer, side: .declared, with: clocks.declared ?? VectorClock(), saved: saved?.declared ?? VectorClock())
        }
        // Written: remembered as the rows now are (after a failed write, read back next time).
        if writtenPeerClocks.count >= Self.maximumWrittenPeerClocks, let any = writtenPeerClocks.keys.first {
            writtenPeerClocks.removeValue(forKey: any)
        }
        writtenPeerClocks[peer] = clocks
    }

    private func replaceEntries(of peer: PublicKey, side: ClockSide, with clock: VectorClock, saved: VectorClock) throws {
        for (author, sequence) in clock.entries where saved.entries[author] != sequence {
            try db.statement("INSERT OR REPLACE INTO peer_clock_entries(peer, side, author, sequence) VALUES (?1, ?2, ?3, ?4)")
                .bind(1, peer.bytes).bind(2, side.rawValue).bind(3, author.bytes).bind(4, Int64(bitPattern: sequence)).run()
        }
        for author in saved.entries.keys where clock.entries[author] == nil {
            try db.statement("DELETE FROM peer_clock_entries WHERE peer = ?1 AND side = ?2 AND author = ?3")
                .bind(1, peer.bytes).bind(2, side.rawValue).bind(3, author.bytes).run()
        }
    }

    /// Every peer's saved clocks, with when they were saved (ms since 1970).
    public func allPeerClocks() throws -> [(peer: PublicKey, clocks: PeerClocks, savedAt: UInt64)] {
        var heads: [(peer: PublicKey, declaredKnown: Bool, savedAt: UInt64)] = []
        let h = try db.statement("SELECT peer, declared_known, updated_at FROM peer_clocks")
        while try h.step() {
            guard let peer = try? PublicKey(bytes: h.blob(0)) else { continue }
            heads.append((peer, h.int64(1) != 0, UInt64(max(0, h.int64(2)))))
        }
        var sides: [PublicKey: [VectorClock]] = [:]
        let s = try db.statement("SELECT peer, side, author, sequence FROM peer_clock_entries")
        while try s.step() {
            guard let peer = try? PublicKey(bytes: s.blob(0)), let side = ClockSide(rawValue: s.int64(1)),
                  let author = try? PublicKey(bytes: s.blob(2)) else { continue }
            sides[peer, default: [VectorClock(), VectorClock()]][Int(side.rawValue)][author] = UInt64(bitPattern: s.int64(3))
        }
        return heads.map { head in
            let clocks = sides[head.peer] ?? [VectorClock(), VectorClock()]
            return (head.peer, PeerClocks(sent: clocks[0], declared: head.declaredKnown ? clocks[1] : nil), head.savedAt)
        }
    }
}
