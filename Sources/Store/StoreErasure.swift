import Crypto
import Gossip

/// Deletion for everyone (docs/PROTOCOL.md §4, "Erasure"): an author's
/// version-3 envelope names earlier ones of its own whose bodies are to go.
/// Every store that holds them replaces each with its pruned form (the
/// signed head and the erasing envelope's head as proof), takes its text out
/// of the full-text index, and remembers the erasure so that a copy arriving
/// later is stored pruned too. `secure_delete` zeroes what was overwritten;
/// `purgeErased` merges the index and truncates the WAL, after which the
/// body is in no file of the data directory.
extension Store {
    /// Records `erasing`'s erasures and prunes what is held of them (the
    /// author's envelopes and forks at those sequences). In the caller's transaction.
    func applyErasures(of erasing: Envelope, author: Int64) throws {
        for sequence in erasing.erases {
            try db.statement("INSERT OR IGNORE INTO erasures(author, sequence, erased_by) VALUES (?1, ?2, ?3)")
                .bind(1, author).bind(2, Int64(clamping: sequence)).bind(3, Int64(clamping: erasing.sequence)).run()
            if let row = try storedRow(author, sequence) {
                let held = try Envelope.decode(row.bytes, verification: .trustedStorage)
                if !held.isPruned, let pruned = held.pruned(by: erasing) { try replace(row: row.rowid, held, with: pruned) }
            }
            let forks = try db.statement("SELECT rowid, bytes FROM forks WHERE author = ?1 AND sequence = ?2")
                .bind(1, author).bind(2, Int64(clamping: sequence))
            var prunedForks: [(Int64, [UInt8])] = []
            while try forks.step() {
                if let pruned = try Envelope.decode(forks.blob(1), verification: .trustedStorage).pruned(by: erasing) {
                    prunedForks.append((forks.int64(0), pruned.encoded))
                }
            }
            for (rowid, bytes) in prunedForks {
                try db.statement("UPDATE forks SET bytes = ?2 WHERE rowid = ?1").bind(1, rowid).bind(2, bytes).run()
            }
        }
        erasingAuthors.insert(erasing.author)
    }

    /// The envelope to store for `e`: pruned when a held envelope of its
    /// author already erased it (an original that arrives after its tombstone).
    func erasedForm(of e: Envelope, author: Int64) throws -> Envelope {
        guard e.isErasable, !e.isPruned, erasingAuthors.contains(e.author),
              let by = try erasingSequence(author, e.sequence), let erasing = try loadEnvelope(author, by) else { return e }
        return e.pruned(by: erasing) ?? e
    }

    /// The sequence of the envelope of `author` (a row) that erased its envelope `sequence`, if one did.
    private func erasingSequence(_ author: Int64, _ sequence: UInt64) throws -> UInt64? {
        try db.statement("SELECT erased_by FROM erasures WHERE author = ?1 AND sequence = ?2")
            .bind(1, author).bind(2, Int64(clamping: sequence)).single { UInt64(clamping: $0.int64(0)) }
    }

    /// Overwrites a row's envelope with its pruned form, and takes its text
    /// out of the full-text index (a contentless index is told the text it
    /// held, which only the node can read: `indexedText`).
    func replace(row: Int64, _ held: Envelope, with pruned: Envelope) throws {
        let indexed = try db.statement("SELECT 1 FROM message_text WHERE rowid = ?1").bind(1, row).single { _ in true } ?? false
        if indexed, let text = indexedText?(held) { try removeFromIndex(row: row, text: text) }
        // Nothing readable is left: the row no longer counts as a message (unread counts, previews).
        try db.statement("UPDATE envelopes SET bytes = ?2, kind = ?3 WHERE rowid = ?1").bind(1, row).bind(2, pruned.encoded).bind(3, Self.sealedKind).run()
        try owePurge()
        // The copy in memory may hold it as it was.
        recentDeliveries.removeAll()
    }

    /// The settings row that counts what was erased and not yet purged from
    /// the files: written in the erasure's own transaction, so a node killed
    /// before the purge (kill -9, a power cut) still owes it at the next start.
    static let purgeOwedSetting = "erasure_purge_owed"

    /// Counts one more erasure owed a purge, durably (in the caller's transaction).
    func owePurge() throws {
        try db.statement("INSERT INTO settings(key, value) VALUES (?1, 1) ON CONFLICT(key) DO UPDATE SET value = value + 1")
            .bind(1, Self.purgeOwedSetting).run()
        erasedSincePurge += 1
    }

    /// Authors with erasures recorded, and the purges owed, read at start.
    func loadErasingAuthors() throws {
        let s = try db.statement("SELECT DISTINCT a.key FROM erasures e JOIN authors a ON a.rowid = e.author")
        while try s.step() { erasingAuthors.insert(try PublicKey(bytes: s.blob(0))) }
        erasedSincePurge = Int(clamping: try db.statement("SELECT value FROM settings WHERE key = ?1").bind(1, Self.purgeOwedSetting).single { $0.int64(0) } ?? 0)
    }

    /// Whether bodies were erased since the last `purgeErased`.
    public var hasUnpurgedErasures: Bool { erasedSincePurge > 0 }

    /// Makes erased bodies unrecoverable from the files: merges the
    /// full-text index into one segment (a contentless index keeps a
    /// deleted text's terms in older segments until they merge), then
    /// copies the WAL into the database and truncates it. Returns false
    /// when the WAL could not be truncated yet (a reader was in it); the
    /// erasures then stay pending for the next call. What is owed is kept
    /// in the database (`purgeOwedSetting`) until a purge succeeds, so one
    /// the process did not live to make is made at the next open.
    @discardableResult
    public func purgeErased() throws -> Bool {
        guard erasedSincePurge > 0 else { return true }
        try db.execute("INSERT INTO message_text(message_text) VALUES ('optimize')")
        db.resetStatements()
        let busy = try db.statement("PRAGMA wal_checkpoint(TRUNCATE)").single { $0.int64(0) } ?? 1
        guard busy == 0 else { return false }
        // Into the fresh WAL: a counter, no text.
        try db.statement("DELETE FROM settings WHERE key = ?1").bind(1, Self.purgeOwedSetting).run()
        erasedSincePurge = 0
        return true
    }

    /// The erasure recorded for an envelope of `author` (the sequence of the
    /// envelope that erased it), if any.
    public func erasedBy(_ author: PublicKey, _ sequence: UInt64) throws -> UInt64? {
        guard erasingAuthors.contains(author), let row = authors[author]?.rowid else { return nil }
        return try erasingSequence(row, sequence)
    }
}
