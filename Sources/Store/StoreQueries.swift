import Foundation
import Glibc
import Crypto
import Gossip

/// A delivered envelope with its place in room order.
public struct StoredEnvelope: Sendable, Equatable {
    public let envelope: Envelope
    /// The causal time the room is ordered by (then by id).
    public let causalTime: Int64
    /// This node's delivery number (for unread counts).
    public let delivery: Int64
}

/// Where a history page ends, to fetch the page before it.
public struct HistoryCursor: Sendable, Equatable {
    public let causalTime: Int64
    public let id: MessageID

    public init(causalTime: Int64, id: MessageID) {
        self.causalTime = causalTime
        self.id = id
    }

    /// The cursor that continues before `entry`.
    public init(before entry: StoredEnvelope) {
        self.init(causalTime: entry.causalTime, id: entry.envelope.id)
    }
}

/// One line of a room list.
public struct RoomSummary: Sendable, Equatable {
    public let room: RoomID
    public let name: String?
    public let unread: Int
    public let last: StoredEnvelope?
}

/// A fork: the author signed two different envelopes for one sequence, or one
/// that does not link to its neighbour. The first is kept; this is the record.
public struct ForkRecord: Sendable, Equatable {
    public let author: PublicKey
    public let sequence: UInt64
    public let kept: MessageID
    public let fork: Envelope
    public let reason: String
    public let detectedAt: UInt64
}

extension Store {
    // MARK: clocks and sync

    public func vectorClock() throws -> VectorClock {
        VectorClock(authors.mapValues { $0.contiguous })
    }

    /// One author's highest contiguous sequence, without building the whole clock.
    public func contiguous(of author: PublicKey) -> UInt64 {
        authors[author]?.contiguous ?? 0
    }

    /// Author → highest sequence delivered (shown).
    public func deliveredClock() -> VectorClock {
        VectorClock(authors.mapValues { $0.delivered })
    }

    /// Up to `limit` envelopes, and no more once `bytes` are read (at least
    /// one): a catch-up reads about one batch message of large bodies, not
    /// `limit` of them.
    public func envelopes(from author: PublicKey, startingAt sequence: UInt64, limit: Int, bytes: Int = .max) throws -> [Envelope] {
        guard let st = authors[author], limit > 0 else { return [] }
        let s = try db.statement("SELECT bytes FROM envelopes WHERE author = ?1 AND sequence >= ?2 ORDER BY sequence LIMIT ?3")
            .bind(1, st.rowid).bind(2, Int64(clamping: sequence)).bind(3, limit)
        var out: [Envelope] = []
        var total = 0
        while total < bytes, try s.step() {
            let blob = s.blob(0)
            total += blob.count
            out.append(try Envelope.decode(blob, verification: .trustedStorage))
        }
        return out
    }

    /// Envelopes held beyond a gap in their author's chain.
    public func aheadOfGapCount() throws -> Int {
        Int(try db.integer(
            "SELECT count(*) FROM envelopes e JOIN authors a ON e.author = a.rowid WHERE e.sequence > a.contiguous"))
    }

    /// Envelopes held but not yet delivered (waiting for a dependency).
    public func undeliveredCount() throws -> Int {
        Int(try db.integer("SELECT count(*) FROM envelopes WHERE causal_time IS NULL"))
    }

    /// Highest sequence this author has in the store (held, maybe past a gap),
    /// and the id of that envelope: where this node's own next post links to.
    public func head(of author: PublicKey) throws -> (sequence: UInt64, id: MessageID)? {
        guard let st = authors[author], st.highest > 0,
              let e = try loadEnvelope(st.rowid, st.highest) else { return nil }
        return (st.highest, e.id)
    }

    /// Where an author's chain ends here, when an envelope that continues it
    /// is certain to be inserted as it is: nothing is held past a gap, and
    /// the last id is known without a query. (0, zero) for an author with
    /// nothing here. The node forwards such envelopes before storing them.
    public func chainEnd(of author: PublicKey) -> (sequence: UInt64, id: MessageID)? {
        guard let st = authors[author] else { return (0, .zero) }
        guard st.highest == st.contiguous else { return nil }
        if st.contiguous == 0 { return (0, .zero) }
        return st.contiguousID.map { (st.contiguous, $0) }
    }

    /// What an author's next post should name as dependencies: every delivered
    /// clock entry ahead of what its earlier posts named (at most
    /// `Envelope.maximumDependencies`; the rest follow in the next post).
    public func dependenciesForNextPost(by author: PublicKey) throws -> [Dependency] {
        var sent = VectorClock()
        let s = try db.statement("SELECT a.key, c.sequence FROM sent_clock c JOIN authors a ON a.rowid = c.author")
        while try s.step() { sent[try PublicKey(bytes: s.blob(0))] = UInt64(s.int64(1)) }
        return Array(deliveredClock().advances(since: sent, excluding: author).prefix(Envelope.maximumDependencies))
    }

    // MARK: rooms

    /// Records a room's name (public rooms this node joined).
    public func registerRoom(_ room: RoomID, name: String) throws {
        let row = try roomRow(room)
        try db.statement("UPDATE rooms SET name = ?1 WHERE rowid = ?2").bind(1, name).bind(2, row).run()
    }

    /// The last `limit` delivered envelopes of a room before `cursor` (or the
    /// newest), oldest first, in causal order: causal time, then id.
    public func history(of room: RoomID, limit: Int, before cursor: HistoryCursor? = nil) throws -> [StoredEnvelope] {
        guard let row = roomRows[room], limit > 0 else { return [] }
        let s: Statement
        if let cursor {
            s = try db.statement(
                """
                SELECT bytes, causal_time, delivery FROM envelopes
                WHERE room = ?1 AND causal_time IS NOT NULL AND (causal_time, id) < (?2, ?3) AND kind != \(Kind.receipt.rawValue)
                ORDER BY causal_time DESC, id DESC LIMIT ?4
                """
            ).bind(1, row).bind(2, cursor.causalTime).bind(3, cursor.id.bytes).bind(4, limit)
        } else {
            s = try db.statement(
                """
                SELECT bytes, causal_time, delivery FROM envelopes
                WHERE room = ?1 AND causal_time IS NOT NULL AND kind != \(Kind.receipt.rawValue)
                ORDER BY causal_time DESC, id DESC LIMIT ?2
                """
            ).bind(1, row).bind(2, limit)
        }
        var out: [StoredEnvelope] = []
        while try s.step() { out.append(try stored(s)) }
        return out.reversed()
    }

    /// Delivered text and action messages from others after the room's read mark.
    public func unreadCount(of room: RoomID, me: PublicKey) throws -> Int {
        guard let row = roomRows[room] else { return 0 }
        let own = authors[me]?.rowid ?? -1
        let s = try db.statement(
            """
            SELECT count(*) FROM envelopes
            WHERE room = ?1 AND delivery > (SELECT read_delivery FROM rooms WHERE rowid = ?1)
              AND author != ?2 AND kind IN (\(Kind.text.rawValue), \(Kind.action.rawValue))
            """
        ).bind(1, row).bind(2, own)
        return try s.single { $0.int(0) } ?? 0
    }

    /// Marks everything delivered in the room so far as read.
    public func markRead(_ room: RoomID) throws {
        guard let row = roomRows[room] else { return }
        try db.statement(
            "UPDATE rooms SET read_delivery = (SELECT coalesce(max(delivery), 0) FROM envelopes WHERE room = ?1) WHERE rowid = ?1"
        ).bind(1, row).run()
    }

    /// Every room with its unread count and last delivered message, the most
    /// recently active first (rooms with no message last, by name).
    /// The room is no longer one of ours by name (after /part): its
    /// envelopes stay (they are relayed all the same).
    public func forgetRoomName(_ room: RoomID) throws {
        guard let row = roomRows[room] else { return }
        try db.statement("UPDATE rooms SET name = NULL WHERE rowid = ?1").bind(1, row).run()
    }

    /// Everyone who has an envelope in the room (receipts aside), most recently active first.
    public func authors(in room: RoomID) throws -> [PublicKey] {
        guard let row = roomRows[room] else { return [] }
        let s = try db.statement(
            "SELECT a.key FROM envelopes e JOIN authors a ON a.rowid = e.author WHERE e.room = ?1 AND e.kind != \(Kind.receipt.rawValue) GROUP BY e.author ORDER BY max(e.rowid) DESC")
            .bind(1, row)
        var out: [PublicKey] = []
        while try s.step() { out.append(try PublicKey(bytes: s.blob(0))) }
        return out
    }

    /// The rooms this node knows by name (cheap: no counts, no previews).
    public func namedRooms() throws -> [(room: RoomID, name: String)] {
        let s = try db.statement("SELECT room_id, name FROM rooms WHERE name IS NOT NULL")
        var out: [(room: RoomID, name: String)] = []
        while try s.step() { if let name = s.text(1) { out.append((try RoomID(bytes: s.blob(0)), name)) } }
        return out
    }

    /// One room's unread count and last delivered text or action; nil when
    /// this store holds nothing of it (cheap: no query then).
    public func roomSummary(of room: RoomID, name: String?, me: PublicKey) throws -> RoomSummary? {
        guard let row = roomRows[room] else { return nil }
        let last = try db.statement(
            """
            SELECT bytes, causal_time, delivery FROM envelopes
            WHERE room = ?1 AND causal_time IS NOT NULL AND kind IN (\(Kind.text.rawValue), \(Kind.action.rawValue))
            ORDER BY causal_time DESC, id DESC LIMIT 1
            """
        ).bind(1, row).single { try stored($0) }
        return RoomSummary(room: room, name: name, unread: try unreadCount(of: room, me: me), last: last)
    }

    /// Each author's highest delivered sequence in `room` (texts and actions
    /// only, ours left out): what a read receipt for the whole room says.
    public func latestSequences(in room: RoomID, me: PublicKey) throws -> [PublicKey: UInt64] {
        guard let row = roomRows[room] else { return [:] }
        let s = try db.statement(
            """
            SELECT a.key, max(e.sequence) FROM envelopes e JOIN authors a ON a.rowid = e.author
            WHERE e.room = ?1 AND e.delivery IS NOT NULL AND e.kind IN (\(Kind.text.rawValue), \(Kind.action.rawValue))
            GROUP BY e.author
            """
        ).bind(1, row)
        var out: [PublicKey: UInt64] = [:]
        while try s.step() {
            let key = try PublicKey(bytes: s.blob(0))
            if key != me { out[key] = UInt64(max(0, s.int64(1))) }
        }
        return out
    }

    public func roomSummaries(me: PublicKey) throws -> [RoomSummary] {
        var out: [RoomSummary] = []
        let rooms = try db.statement("SELECT room_id, name FROM rooms")
        var rows: [(RoomID, String?)] = []
        while try rooms.step() { rows.append((try RoomID(bytes: rooms.blob(0)), rooms.text(1))) }
        for (room, name) in rows {
            if let summary = try roomSummary(of: room, name: name, me: me) { out.append(summary) }
        }
        return out.sorted { a, b in
            switch (a.last, b.last) {
            case let (x?, y?): return (x.causalTime, x.envelope.id) > (y.causalTime, y.envelope.id)
            case (.some, nil): return true
            case (nil, .some): return false
            case (nil, nil): return (a.name ?? "") < (b.name ?? "")
            }
        }
    }

    // MARK: forks

    public func forks() throws -> [ForkRecord] {
        let s = try db.statement(
            """
            SELECT a.key, f.sequence, f.kept_id, f.bytes, f.reason, f.detected_at
            FROM forks f JOIN authors a ON a.rowid = f.author ORDER BY f.rowid
            """)
        var out: [ForkRecord] = []
        while try s.step() {
            out.append(ForkRecord(
                author: try PublicKey(bytes: s.blob(0)), sequence: UInt64(s.int64(1)),
                kept: try MessageID(bytes: s.blob(2)),
                fork: try Envelope.decode(s.blob(3), verification: .trustedStorage),
                reason: s.text(4) ?? "", detectedAt: UInt64(s.int64(5))))
        }
        return out
    }

    func stored(_ s: Statement) throws -> StoredEnvelope {
        StoredEnvelope(
            envelope: try Envelope.decode(s.blob(0), verification: .trustedStorage),
            causalTime: s.int64(1), delivery: s.int64(2))
    }
}

extension Store {
    /// For each author, the delivered envelope of `kind` with the highest
    /// sequence (the latest nick change of everyone, say).
    /// The newest nick message of every author (the index `envelopes_nicks` makes it one lookup per author).
    public func latestNicks() throws -> [StoredEnvelope] {
        let s = try db.statement(
            """
            SELECT e.bytes, e.causal_time, e.delivery FROM authors a JOIN envelopes e ON e.rowid = (
                SELECT rowid FROM envelopes
                WHERE author = a.rowid AND kind = \(Kind.nick.rawValue) AND causal_time IS NOT NULL ORDER BY sequence DESC LIMIT 1)
            """)
        var out: [StoredEnvelope] = []
        while try s.step() { out.append(try stored(s)) }
        return out
    }
}

extension Store {
    /// Envelopes delivered after delivery number `after`, in delivery order:
    /// what to show the user since the last time it asked.
    public func delivered(after: Int64, limit: Int = 10_000) throws -> [StoredEnvelope] {
        let s = try db.statement(
            "SELECT bytes, causal_time, delivery FROM envelopes WHERE delivery > ?1 ORDER BY delivery LIMIT ?2"
        ).bind(1, after).bind(2, limit)
        var out: [StoredEnvelope] = []
        while try s.step() { out.append(try stored(s)) }
        return out
    }

    /// The highest delivery number so far.
    public var lastDeliveryNumber: Int64 { lastDelivery }
}

extension Store {
    /// Identities this node refuses links from and hides messages of.
    public func blockedIdentities() throws -> Set<PublicKey> {
        let s = try db.statement("SELECT key FROM blocked")
        var out: Set<PublicKey> = []
        while try s.step() { out.insert(try PublicKey(bytes: s.blob(0))) }
        return out
    }

    /// Private rooms this node is a member of: id, name, 32-byte key.
    public func privateRooms() throws -> [(room: RoomID, name: String, key: [UInt8])] {
        let s = try db.statement("SELECT room_id, name, key FROM private_rooms")
        var out: [(room: RoomID, name: String, key: [UInt8])] = []
        while try s.step() {
            guard let room = try? RoomID(bytes: s.blob(0)), let name = s.text(1) else { continue }
            out.append((room, name, s.blob(2)))
        }
        return out
    }

    public func addPrivateRoom(_ room: RoomID, name: String, key: [UInt8]) throws {
        try db.statement("INSERT OR REPLACE INTO private_rooms(room_id, name, key) VALUES (?1, ?2, ?3)")
            .bind(1, room.bytes).bind(2, name).bind(3, key).run()
        try registerRoom(room, name: name)
    }

    /// Forgets a private room's key (one whose id turned out to be forged).
    public func removePrivateRoom(_ room: RoomID) throws {
        try db.statement("DELETE FROM private_rooms WHERE room_id = ?1").bind(1, room.bytes).run()
    }

    /// An invite the user has not answered yet.
    public struct PendingInvite: Equatable, Sendable {
        public let room: RoomID
        public let name: String
        public let key: [UInt8]
        public let inviter: PublicKey
        public let receivedAt: UInt64

        public init(room: RoomID, name: String, key: [UInt8], inviter: PublicKey, receivedAt: UInt64) {
            self.room = room
            self.name = name
            self.key = key
            self.inviter = inviter
            self.receivedAt = receivedAt
        }
    }

    /// Invites waiting for an answer, oldest first.
    public func pendingInvites() throws -> [PendingInvite] {
        let s = try db.statement("SELECT room_id, name, key, inviter, received_at FROM pending_invites ORDER BY received_at, rowid")
        var out: [PendingInvite] = []
        while try s.step() {
            guard let room = try? RoomID(bytes: s.blob(0)), let name = s.text(1), let inviter = try? PublicKey(bytes: s.blob(3)) else { continue }
            out.append(PendingInvite(room: room, name: name, key: s.blob(2), inviter: inviter, receivedAt: UInt64(max(0, s.int64(4)))))
        }
        return out
    }

    public func addPendingInvite(_ invite: PendingInvite) throws {
        try db.statement("INSERT OR REPLACE INTO pending_invites(room_id, name, key, inviter, received_at) VALUES (?1, ?2, ?3, ?4, ?5)")
            .bind(1, invite.room.bytes).bind(2, invite.name).bind(3, invite.key).bind(4, invite.inviter.bytes)
            .bind(5, Int64(clamping: invite.receivedAt)).run()
    }

    public func removePendingInvite(_ room: RoomID) throws {
        try db.statement("DELETE FROM pending_invites WHERE room_id = ?1").bind(1, room.bytes).run()
    }

    public func trustedIdentities() throws -> Set<PublicKey> {
        let s = try db.statement("SELECT key FROM trusted")
        var out: Set<PublicKey> = []
        while try s.step() { out.insert(try PublicKey(bytes: s.blob(0))) }
        return out
    }

    public func setTrusted(_ key: PublicKey, _ trusted: Bool, at time: UInt64) throws {
        if trusted {
            try db.statement("INSERT OR IGNORE INTO trusted(key, since) VALUES (?1, ?2)").bind(1, key.bytes).bind(2, Int64(clamping: time)).run()
        } else {
            try db.statement("DELETE FROM trusted WHERE key = ?1").bind(1, key.bytes).run()
        }
    }

    public func setBlocked(_ key: PublicKey, _ blocked: Bool, at time: UInt64) throws {
        if blocked {
            try db.statement("INSERT OR IGNORE INTO blocked(key, since) VALUES (?1, ?2)")
                .bind(1, key.bytes).bind(2, Int64(clamping: time)).run()
        } else {
            try db.statement("DELETE FROM blocked WHERE key = ?1").bind(1, key.bytes).run()
        }
    }

    // MARK: size

    public func envelopeCount() throws -> Int {
        Int(try db.integer("SELECT count(*) FROM envelopes"))
    }

    /// Bytes on disk: the database, its WAL and its shared-memory index.
    public var bytesOnDisk: UInt64 {
        [path, path + "-wal", path + "-shm"].reduce(UInt64(0)) { total, file in
            var info = stat()
            return stat(file, &info) == 0 ? total + UInt64(max(0, info.st_size)) : total
        }
    }

    // MARK: full-text search

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

    // MARK: settings

    /// A user setting (`/set`), or nil.
    public func setting(_ key: String) throws -> String? {
        try db.statement("SELECT CAST(value AS TEXT) FROM settings WHERE key = ?1").bind(1, "user." + key).single { $0.text(0) } ?? nil
    }

    public func setSetting(_ key: String, _ value: String) throws {
        try db.statement("INSERT OR REPLACE INTO settings(key, value) VALUES (?1, ?2)").bind(1, "user." + key).bind(2, value).run()
    }
}

