import Crypto
import Gossip

/// Version-2 envelopes carry their kind inside the encrypted body. The
/// queries that pick texts, receipts or nicks (history, unread counts, the
/// last line, nicks at start-up) filter on the `kind` column, so a row holds
/// the kind the node read when it stored the envelope, or `sealedKind`
/// until it can: when it joins the room or accepts an invite, `fileSealed`
/// reads that room's sealed rows again (and numbers the messages among
/// them: `StoreNumbers.swift`).
extension Store {
    /// The `kind` column for `e`: in clear (version 1), opened by `kindOf`, or sealed.
    func kindColumn(_ e: Envelope) -> Int64 {
        guard let kind = e.clearKind ?? kindOf?(e) else { return Self.sealedKind }
        return Int64(kind.rawValue)
    }

    /// Files the envelopes of `room` stored with a sealed kind under the
    /// kinds `kindOf` can now read, in one transaction. Returns how many
    /// it filed (the others stay sealed).
    @discardableResult
    public func fileSealed(in room: RoomID) throws -> Int {
        guard kindOf != nil, let row = roomRows[room] else { return 0 }
        return try writeTransaction {
            let rows = try db.statement("SELECT rowid, bytes FROM envelopes WHERE room = ?1 AND kind = \(Self.sealedKind)").bind(1, row)
            var found: [(Int64, Int64)] = []
            while try rows.step() {
                guard let e = try? Envelope.decode(rows.blob(1), verification: .trustedStorage) else { continue }
                let kind = kindColumn(e)
                if kind != Self.sealedKind { found.append((rows.int64(0), kind)) }
            }
            for (rowid, kind) in found {
                try db.statement("UPDATE envelopes SET kind = ?1 WHERE rowid = ?2").bind(1, kind).bind(2, rowid).run()
            }
            if !found.isEmpty { try numberFiled(room: row) }
            return found.count
        }
    }

    /// Files `author`'s envelopes past `sequence` as sealed: a revoked
    /// device's, whose words are accepted nowhere, so they count in no
    /// unread number and give no room its preview. Their message numbers
    /// stay (numbers never change). Returns how many were filed so.
    @discardableResult
    public func fileAsRefused(by author: PublicKey, after sequence: UInt64) throws -> Int {
        guard let row = authors[author]?.rowid else { return 0 }
        let s = try db.statement("UPDATE envelopes SET kind = \(Self.sealedKind) WHERE author = ?1 AND sequence > ?2 AND kind != \(Self.sealedKind)")
            .bind(1, row).bind(2, Int64(clamping: sequence))
        try s.run()
        return db.changes
    }

    /// `author`'s messages (texts, actions, replies, files offered) in `room`, for a check of
    /// their standing after a removal.
    public func messages(by author: PublicKey, in room: RoomID) throws -> [Envelope] {
        guard let row = authors[author]?.rowid, let roomRow = roomRows[room] else { return [] }
        let s = try db.statement(
            "SELECT bytes FROM envelopes WHERE author = ?1 AND room = ?2 AND kind IN (\(Self.numberedKindList))"
        ).bind(1, row).bind(2, roomRow)
        var out: [Envelope] = []
        while try s.step() { out.append(try Envelope.decode(s.blob(0), verification: .trustedStorage)) }
        return out
    }

    /// Files one envelope as sealed (a post that no longer stands): it counts
    /// in no unread number and gives no preview; its number stays.
    public func fileAsRefused(_ e: Envelope) throws {
        guard let row = authors[e.author]?.rowid else { return }
        try db.statement("UPDATE envelopes SET kind = \(Self.sealedKind) WHERE author = ?1 AND sequence = ?2")
            .bind(1, row).bind(2, Int64(clamping: e.sequence)).run()
    }

    /// How many envelopes are stored with a sealed kind (for `/stats` and tests).
    public func sealedCount() throws -> Int {
        Int(try db.integer("SELECT count(*) FROM envelopes WHERE kind = \(Self.sealedKind)"))
    }
}
