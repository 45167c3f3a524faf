import Crypto
import Gossip

/// The edits a message has had, and finding delivered envelopes.
extension Store {
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
