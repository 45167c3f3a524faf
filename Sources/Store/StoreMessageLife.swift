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

    /// Whether envelopes are indexed by their id (`envelopes_by_id`, the
    /// first 8 bytes), which makes `delivered(id:)` a lookup instead of a
    /// scan of every envelope. A node keeps it: its API, its page and its
    /// search name messages by id. A relay drops it, since it reads no
    /// message by id and its ids are random keys: each insert wrote a page
    /// of that index somewhere else in the file, past a few hundred thousand
    /// envelopes 4.5× the WAL bytes a message needs without it
    /// (docs/DECISIONS.md, "A relay keeps no index of message ids"). Made
    /// again when a relay's data directory is a node's (one pass over the
    /// envelopes, at its start).
    /// Returns whether it made or dropped it (a pass over the envelopes, once).
    @discardableResult
    public func indexesMessageIDs(_ wanted: Bool) throws(SQLiteError) -> Bool {
        settleCommit()
        // A statement left mid-read would hold the table (SQLITE_LOCKED).
        db.resetStatements()
        let present = try db.integer("SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = '\(Self.messageIDIndex)'") > 0
        guard present != wanted else { return false }
        try db.execute(wanted ? "CREATE INDEX \(Self.messageIDIndex) ON envelopes(substr(id, 1, 8))" : "DROP INDEX \(Self.messageIDIndex)")
        // That read every page of the index through the cache: given back, not kept
        // as what a relay holding a million envelopes needs to run (16 MiB of pages).
        try db.execute("PRAGMA shrink_memory")
        return true
    }

    /// The index `indexesMessageIDs` keeps or drops (migration 12 made it).
    public static let messageIDIndex = "envelopes_by_id"

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
