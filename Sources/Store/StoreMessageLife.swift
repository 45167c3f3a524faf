import Crypto
import Gossip

/// Numbers for `/history` and the edits a message has had.
extension Store {
    /// A message's number in its room on this node: its place among the
    /// room's envelopes in delivery order (1 = the first this node
    /// delivered). Numbers never change: later deliveries get higher ones.
    public func number(of stored: StoredEnvelope) throws -> Int {
        guard let row = roomRows[stored.envelope.room] else { return 0 }
        return Int(try db.statement("SELECT count(*) FROM envelopes WHERE room = ?1 AND delivery IS NOT NULL AND delivery <= ?2")
            .bind(1, row).bind(2, stored.delivery).single { $0.int64(0) } ?? 0)
    }

    /// The envelope numbered `number` in `room` (see `number(of:)`).
    public func envelope(numbered number: Int, in room: RoomID) throws -> StoredEnvelope? {
        guard number >= 1, let row = roomRows[room] else { return nil }
        return try db.statement(
            """
            SELECT bytes, causal_time, delivery FROM envelopes WHERE room = ?1 AND delivery IS NOT NULL
            ORDER BY delivery LIMIT 1 OFFSET ?2
            """).bind(1, row).bind(2, number - 1).single { try stored($0) }
    }

    /// Records that `author`'s envelope `edit` edits its message `original`.
    public func recordEdit(by author: PublicKey, original: UInt64, edit: UInt64) throws {
        let row = try authorRow(author).rowid
        try writeTransaction {
            try db.statement("INSERT OR IGNORE INTO edits(author, original, edit) VALUES (?1, ?2, ?3)")
                .bind(1, row).bind(2, Int64(clamping: original)).bind(3, Int64(clamping: edit)).run()
        }
    }

    /// The sequences of the edits of `author`'s message `original`, oldest first.
    public func edits(by author: PublicKey, of original: UInt64) throws -> [UInt64] {
        guard let row = authors[author]?.rowid else { return [] }
        let s = try db.statement("SELECT edit FROM edits WHERE author = ?1 AND original = ?2 ORDER BY edit")
            .bind(1, row).bind(2, Int64(clamping: original))
        var out: [UInt64] = []
        while try s.step() { out.append(UInt64(clamping: s.int64(0))) }
        return out
    }

    /// `author`'s stored envelope at `sequence`, delivered or not.
    public func envelope(by author: PublicKey, sequence: UInt64) throws -> Envelope? {
        guard let row = authors[author]?.rowid else { return nil }
        return try loadEnvelope(row, sequence)
    }
}
