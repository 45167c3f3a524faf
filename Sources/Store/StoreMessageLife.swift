import Crypto
import Gossip

/// Numbers for `/history` and the edits a message has had.
extension Store {
    /// Messages' numbers in their room on this node: each one's place among
    /// the room's envelopes in delivery order (1 = the first this node
    /// delivered). Numbers never change: later deliveries get higher ones.
    /// One count and one scan from the earliest of `stored` (all in `room`),
    /// by delivery number.
    public func numbers(of stored: [StoredEnvelope], in room: RoomID) throws -> [Int64: Int] {
        guard let row = roomRows[room], let first = stored.map(\.delivery).min() else { return [:] }
        var number = Int(try db.statement("SELECT count(*) FROM envelopes WHERE room = ?1 AND delivery IS NOT NULL AND delivery < ?2")
            .bind(1, row).bind(2, first).single { $0.int64(0) } ?? 0)
        let wanted = Set(stored.map(\.delivery))
        var out: [Int64: Int] = [:]
        let s = try db.statement("SELECT delivery FROM envelopes WHERE room = ?1 AND delivery IS NOT NULL AND delivery >= ?2 ORDER BY delivery")
            .bind(1, row).bind(2, first)
        defer { s.reset() }
        while out.count < wanted.count, try s.step() {
            number += 1
            let delivery = s.int64(0)
            if wanted.contains(delivery) { out[delivery] = number }
        }
        return out
    }

    /// The envelope numbered `number` in `room` (see `numbers(of:in:)`).
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

    /// The delivered envelope whose id is `id`.
    public func delivered(id: MessageID) throws -> StoredEnvelope? {
        try db.statement(
            """
            SELECT bytes, causal_time, delivery FROM envelopes
            WHERE substr(id, 1, 8) = substr(?1, 1, 8) AND id = ?1 AND delivery IS NOT NULL
            """).bind(1, id.bytes).single { try stored($0) }
    }

    /// `author`'s stored envelope at `sequence`, delivered or not.
    public func envelope(by author: PublicKey, sequence: UInt64) throws -> Envelope? {
        guard let row = authors[author]?.rowid else { return nil }
        return try loadEnvelope(row, sequence)
    }
}
