import Gossip

/// Messages' numbers in their rooms: `/history`'s "(N)", which `/edit N`,
/// `/delete N`, `/reply N` and `/react N` name. As a text, an action or a
/// reply is delivered it takes its room's next number, kept in its row
/// (schema 17). So numbers run 1, 2, 3 as people read them (receipts,
/// edits, reactions and nicks take none), and a number never changes: an
/// erased message keeps its row's, and a message this node could not read
/// when it was delivered takes its room's next number once it can
/// (`fileSealed`). Rows delivered before schema 17 kept the numbers they
/// had then (their place among everything delivered in the room).
extension Store {
    /// The kinds that take a number: what a person wrote (a text, an action,
    /// a reply, a file offered). The same kinds count as unread, give a
    /// room its last message, are covered by read receipts and are checked
    /// again when their author is removed from a private room.
    public static let numberedKinds: [Kind] = [.text, .action, .reply, .file]

    /// `numberedKinds` as an SQL list.
    static var numberedKindList: String { numberedKinds.map { String($0.rawValue) }.joined(separator: ", ") }

    /// Whether a row of kind `kindColumn` (see `kindColumn(_:)`) takes a number.
    static func isNumbered(_ kindColumn: Int64) -> Bool { numberedKinds.contains { Int64($0.rawValue) == kindColumn } }

    /// Takes the next number of the room whose row is `room`.
    func nextNumber(room: Int64) throws -> Int {
        let last = try lastNumber(room: room)
        lastNumbers[room] = last + 1
        return last + 1
    }

    /// The highest number given in the room whose row is `room` (0: none yet).
    func lastNumber(room: Int64) throws -> Int {
        try lastNumbers[room] ?? Int(db.statement("SELECT coalesce(max(number), 0) FROM envelopes WHERE room = ?1")
            .bind(1, room).single { $0.int64(0) } ?? 0)
    }

    /// Writes the delivery of `author`'s (a row) envelope `sequence` as
    /// delivery `lastDelivery` at `causal`, numbered if its kind is. Returns its number.
    func writeDelivery(author: Int64, sequence: UInt64, causal: Int64) throws -> Int? {
        let row = try db.statement(
            "UPDATE envelopes SET causal_time = ?1, delivery = ?2 WHERE author = ?3 AND sequence = ?4 RETURNING rowid, room, kind"
        ).bind(1, causal).bind(2, lastDelivery).bind(3, author).bind(4, Int64(clamping: sequence)).single { ($0.int64(0), $0.int64(1), $0.int64(2)) }
        guard let (rowid, room, kind) = row, Self.isNumbered(kind) else { return nil }
        let number = try nextNumber(room: room)
        try db.statement("UPDATE envelopes SET number = ?1 WHERE rowid = ?2").bind(1, number).bind(2, rowid).run()
        return number
    }

    /// Numbers, in delivery order, the delivered messages of `room` (a row)
    /// that have none: those filed under their kinds only now.
    func numberFiled(room: Int64) throws {
        let s = try db.statement(
            "SELECT rowid FROM envelopes WHERE room = ?1 AND delivery IS NOT NULL AND number IS NULL AND kind IN (\(Self.numberedKindList)) ORDER BY delivery"
        ).bind(1, room)
        var rows: [Int64] = []
        while try s.step() { rows.append(s.int64(0)) }
        for rowid in rows {
            try db.statement("UPDATE envelopes SET number = ?1 WHERE rowid = ?2").bind(1, try nextNumber(room: room)).bind(2, rowid).run()
        }
    }

    /// The number of the delivered envelope `stored` in its room, if it has one.
    public func number(of stored: StoredEnvelope) throws -> Int? {
        if let number = stored.number { return number }
        guard let room = roomRows[stored.envelope.room] else { return nil }
        return try db.statement("SELECT number FROM envelopes WHERE room = ?1 AND delivery = ?2")
            .bind(1, room).bind(2, stored.delivery).single { $0.isNull(0) ? nil : Int($0.int64(0)) } ?? nil
    }

    /// The numbers of `stored` (delivered envelopes), by delivery; those without one are left out.
    public func numbers(of stored: [StoredEnvelope]) throws -> [Int64: Int] {
        var out: [Int64: Int] = [:]
        for s in stored { out[s.delivery] = try number(of: s) }
        return out
    }

    /// The file offers of `room` (rows of kind `file`, numbered), newest
    /// first, at most `limit`, each with its number: read through their own
    /// index (schema 23), however many other messages the room holds.
    public func fileOffers(in room: RoomID, limit: Int) throws -> [StoredEnvelope] {
        guard let row = roomRows[room], limit > 0 else { return [] }
        let s = try db.statement(
            """
            SELECT bytes, causal_time, delivery, number FROM envelopes
            WHERE room = ?1 AND kind = \(Kind.file.rawValue) AND number IS NOT NULL
            ORDER BY number DESC LIMIT ?2
            """
        ).bind(1, row).bind(2, limit)
        var out: [StoredEnvelope] = []
        while try s.step() {
            var offer = try stored(s)
            offer.number = Int(s.int64(3))
            out.append(offer)
        }
        return out
    }

    /// The envelope numbered `number` in `room`.
    public func envelope(numbered number: Int, in room: RoomID) throws -> StoredEnvelope? {
        guard number >= 1, let row = roomRows[room] else { return nil }
        var found = try db.statement("SELECT bytes, causal_time, delivery FROM envelopes WHERE room = ?1 AND number = ?2")
            .bind(1, row).bind(2, number).single { try stored($0) }
        found?.number = number
        return found
    }
}
