import Crypto
import Gossip

/// A revoked device's named chain (docs/PROTOCOL.md §15, "The named
/// envelope"): the node follows it down from the envelope the revocation
/// names, and where this store kept a genuine envelope of it only as a fork
/// (a thief's fork, signed with the device's key, was held first), the
/// genuine one is stored in its place.
extension Store {
    /// Stores envelopes a revoked device's named chain proves (docs/PROTOCOL.md
    /// §15, "The named envelope"): each links up to the envelope the
    /// revocation names, so a fork held below one (signed with the device's
    /// key after the theft) does not keep it out; the genuine envelope was
    /// kept as a fork when it came, and is one no longer. At a sequence
    /// where another envelope is held, nothing changes (first-held).
    public func insertProven(_ envelopes: [Envelope], receivedAt: UInt64) throws -> [InsertOutcome] {
        try writeTransaction {
            let outcomes = try insertAll(envelopes, receivedAt: receivedAt, proven: true)
            for (e, outcome) in zip(envelopes, outcomes) where outcome.isNew {
                try db.statement("DELETE FROM forks WHERE fork_id = ?1").bind(1, e.id.bytes).run()
            }
            return outcomes
        }
    }

    /// The genuine envelope of the named chain takes the place of the fork
    /// held at its sequence: the fork goes to the forks table, the genuine
    /// one into its row (its delivery and number kept), and the index holds
    /// the genuine one's text instead (`indexedText`). False when the row
    /// holds it already or holds nothing.
    @discardableResult
    public func replaceHeld(with genuine: Envelope) throws -> Bool {
        guard var st = authors[genuine.author] else { return false }
        return try writeTransaction {
            guard let row = try storedRow(st.rowid, genuine.sequence) else { return false }
            let held = try Envelope.decode(row.bytes, verification: .trustedStorage)
            guard held.id != genuine.id else { return false }
            let indexed = try db.statement("SELECT 1 FROM message_text WHERE rowid = ?1").bind(1, row.rowid).single { _ in true } ?? false
            if indexed, let text = indexedText?(held) { try removeFromIndex(row: row.rowid, text: text) }
            try db.statement("UPDATE envelopes SET id = ?2, room = ?3, kind = ?4, timestamp = ?5, bytes = ?6 WHERE rowid = ?1")
                .bind(1, row.rowid).bind(2, genuine.id.bytes).bind(3, try roomRow(genuine.room)).bind(4, kindColumn(genuine))
                .bind(5, Int64(clamping: genuine.timestamp)).bind(6, genuine.encoded).run()
            try db.statement("DELETE FROM forks WHERE fork_id = ?1").bind(1, genuine.id.bytes).run()
            try recordFork(held, author: st.rowid, kept: genuine.id, reason: "off the chain a revocation names", at: 0)
            if indexed, let text = indexedText?(genuine) {
                try db.statement("INSERT INTO message_text(rowid, text) VALUES (?1, ?2)").bind(1, row.rowid).bind(2, text).run()
            }
            if st.contiguousID == held.id {
                st.contiguousID = genuine.id
                setAuthor(genuine.author, st)
            }
            // The copy in memory may hold the fork.
            recentDeliveries.removeAll()
            return true
        }
    }
}
