import Foundation
import Crypto
import Gossip

/// The full-text index behind `/search` and `/mentions` (SQLite FTS5,
/// contentless: rows are envelope rowids).
extension Store {

    /// The delivery number up to which messages have been indexed.
    public func indexedThrough() throws -> Int64 {
        try db.integer("SELECT coalesce((SELECT CAST(value AS INTEGER) FROM settings WHERE key = 'search_indexed_through'), 0)")
    }

    /// Indexes readable texts (by author and sequence, which are indexed;
    /// the envelope id is not) and moves the mark to `through`, in one transaction.
    public func index(_ texts: [(author: PublicKey, sequence: UInt64, text: String)], through delivery: Int64) throws {
        try writeTransaction {
            for entry in texts {
                guard let author = authors[entry.author] else { continue }
                // `statement` hands out the cached statement reset, ready for new bindings.
                try db.statement("INSERT INTO message_text(rowid, text) SELECT rowid, ?3 FROM envelopes WHERE author = ?1 AND sequence = ?2")
                    .bind(1, author.rowid).bind(2, Int64(clamping: entry.sequence)).bind(3, entry.text).run()
            }
            try db.statement("INSERT OR REPLACE INTO settings(key, value) VALUES ('search_indexed_through', ?1)").bind(1, delivery).run()
        }
    }

    /// Delivered envelopes of `room` that the index has passed but does not
    /// hold (they came before this node could read the room: it joined it
    /// or accepted its invite later), after `rowid`, oldest first.
    public func unindexed(in room: RoomID, after rowid: Int64, limit: Int) throws -> [(rowid: Int64, envelope: Envelope)] {
        guard let row = roomRows[room], limit > 0 else { return [] }
        let s = try db.statement(
            """
            SELECT e.rowid, e.bytes FROM envelopes e
            WHERE e.room = ?1 AND e.rowid > ?2 AND e.delivery IS NOT NULL AND e.delivery <= ?3
              AND NOT EXISTS (SELECT 1 FROM message_text m WHERE m.rowid = e.rowid)
            ORDER BY e.rowid LIMIT ?4
            """).bind(1, row).bind(2, rowid).bind(3, try indexedThrough()).bind(4, limit)
        var out: [(rowid: Int64, envelope: Envelope)] = []
        while try s.step() { out.append((s.int64(0), try Envelope.decode(s.blob(1), verification: .trustedStorage))) }
        return out
    }

    /// Envelopes of `room` whose texts the index holds, after `rowid`,
    /// oldest first (what leaving the room takes out of it).
    public func indexed(in room: RoomID, after rowid: Int64, limit: Int) throws -> [(rowid: Int64, envelope: Envelope)] {
        guard let row = roomRows[room], limit > 0 else { return [] }
        let s = try db.statement(
            """
            SELECT e.rowid, e.bytes FROM envelopes e
            WHERE e.room = ?1 AND e.rowid > ?2 AND EXISTS (SELECT 1 FROM message_text m WHERE m.rowid = e.rowid)
            ORDER BY e.rowid LIMIT ?3
            """).bind(1, row).bind(2, rowid).bind(3, limit)
        var out: [(rowid: Int64, envelope: Envelope)] = []
        while try s.step() { out.append((s.int64(0), try Envelope.decode(s.blob(1), verification: .trustedStorage))) }
        return out
    }

    /// Takes texts out of the index by envelope row, in one transaction. A
    /// contentless index must be told the very text it was given; the terms
    /// leave the file at the next `purgeErased`.
    public func unindex(rows: [(rowid: Int64, text: String)]) throws {
        guard !rows.isEmpty else { return }
        try writeTransaction {
            for entry in rows { try removeFromIndex(row: entry.rowid, text: entry.text) }
        }
    }

    func removeFromIndex(row: Int64, text: String) throws {
        try db.statement("INSERT INTO message_text(message_text, rowid, text) VALUES ('delete', ?1, ?2)").bind(1, row).bind(2, text).run()
        try owePurge()
    }

    /// Adds texts to the index by envelope row (what `unindexed` found), in one transaction.
    public func index(rows: [(rowid: Int64, text: String)]) throws {
        guard !rows.isEmpty else { return }
        try writeTransaction {
            for entry in rows {
                try db.statement("INSERT INTO message_text(rowid, text) VALUES (?1, ?2)").bind(1, entry.rowid).bind(2, entry.text).run()
            }
        }
    }

    /// Messages whose text matches every word of `query` (any case, accents
    /// ignored), most recent first. The words are quoted, so nothing in the
    /// query is FTS syntax.
    public func search(_ query: String, limit: Int) throws -> [StoredEnvelope] {
        let words = query.split(whereSeparator: { $0.isWhitespace }).map { "\"" + $0.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
        guard !words.isEmpty, limit > 0 else { return [] }
        let s = try db.statement(
            """
            SELECT e.bytes, e.causal_time, e.delivery FROM message_text JOIN envelopes e ON e.rowid = message_text.rowid
            WHERE message_text MATCH ?1 ORDER BY e.delivery DESC LIMIT ?2
            """).bind(1, words.joined(separator: " ")).bind(2, limit)
        var out: [StoredEnvelope] = []
        while try s.step() { out.append(try stored(s)) }
        return out
    }
}
