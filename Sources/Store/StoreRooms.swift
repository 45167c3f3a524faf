import Foundation
import Crypto
import Gossip

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

/// Rooms: their history in causal order, read marks, unread counts and
/// the room list.
extension Store {

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

    /// Delivered messages (`numberedKinds`) from others after the room's
    /// read mark: not ours, nor of any other device of our account (`devices`).
    public func unreadCount(of room: RoomID, me: PublicKey) throws -> Int {
        guard let row = roomRows[room] else { return 0 }
        let s = try db.statement(
            """
            SELECT count(*) FROM envelopes
            WHERE room = ?1 AND delivery > (SELECT read_delivery FROM rooms WHERE rowid = ?1)
              AND kind IN (\(Self.numberedKindList))
              AND author NOT IN (
                SELECT rowid FROM authors WHERE key = ?2 OR key IN (
                  SELECT account FROM devices WHERE device = ?2
                  UNION SELECT device FROM devices WHERE account = coalesce((SELECT account FROM devices WHERE device = ?2), ?2)))
            """
        ).bind(1, row).bind(2, me.bytes)
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

    /// Everyone who has an envelope in the room (receipts aside, unless
    /// `receipts`), most recently active first.
    public func authors(in room: RoomID, receipts: Bool = false) throws -> [PublicKey] {
        guard let row = roomRows[room] else { return [] }
        let s = try db.statement(
            "SELECT a.key FROM envelopes e JOIN authors a ON a.rowid = e.author WHERE e.room = ?1 AND e.kind != ?2 GROUP BY e.author ORDER BY max(e.rowid) DESC")
            .bind(1, row).bind(2, receipts ? -1 : Int64(Kind.receipt.rawValue))
        var out: [PublicKey] = []
        while try s.step() { out.append(try PublicKey(bytes: s.blob(0))) }
        return out
    }

    /// Records that `room` (held here) is a direct conversation with
    /// `peer`; the first record stays.
    public func rememberConversation(_ room: RoomID, with peer: PublicKey) throws {
        guard let row = roomRows[room] else { return }
        try db.statement("UPDATE rooms SET peer = ?2 WHERE rowid = ?1 AND peer IS NULL").bind(1, row).bind(2, peer.bytes).run()
    }

    /// The other parties of the direct conversations `rememberConversation` recorded.
    public func rememberedConversationPeers() throws -> [PublicKey] {
        let s = try db.statement("SELECT DISTINCT peer FROM rooms WHERE peer IS NOT NULL")
        var out: [PublicKey] = []
        while try s.step() { if let key = try? PublicKey(bytes: s.blob(0)) { out.append(key) } }
        return out
    }

    /// Whether this store holds any envelope of `room` (no query).
    public func holds(room: RoomID) -> Bool { roomRows[room] != nil }

    /// The rooms without a name that any of `authors` wrote in (read from
    /// their own envelopes, through the author index: as cheap as their posts
    /// are few). Where the node looks for its direct conversations.
    public func unnamedRooms(writtenBy authors: [PublicKey]) throws -> [RoomID] {
        let s = try db.statement(
            """
            SELECT DISTINCT r.room_id FROM envelopes e JOIN rooms r ON r.rowid = e.room
            WHERE e.author = (SELECT rowid FROM authors WHERE key = ?1) AND r.name IS NULL
            """)
        var out: Set<RoomID> = []
        for author in authors {
            s.reset()
            _ = s.bind(1, author.bytes)
            while try s.step() { out.insert(try RoomID(bytes: s.blob(0))) }
        }
        s.reset()
        return out.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
    }

    /// The rooms this node knows by name (cheap: no counts, no previews).
    public func namedRooms() throws -> [(room: RoomID, name: String)] {
        let s = try db.statement("SELECT room_id, name FROM rooms WHERE name IS NOT NULL")
        var out: [(room: RoomID, name: String)] = []
        while try s.step() { if let name = s.text(1) { out.append((try RoomID(bytes: s.blob(0)), name)) } }
        return out
    }

    /// One room's unread count and last delivered message (`numberedKinds`); nil when
    /// this store holds nothing of it (cheap: no query then).
    public func roomSummary(of room: RoomID, name: String?, me: PublicKey) throws -> RoomSummary? {
        guard let row = roomRows[room] else { return nil }
        let last = try db.statement(
            """
            SELECT bytes, causal_time, delivery FROM envelopes
            WHERE room = ?1 AND causal_time IS NOT NULL AND kind IN (\(Self.numberedKindList))
            ORDER BY causal_time DESC, id DESC LIMIT 1
            """
        ).bind(1, row).single { try stored($0) }
        return RoomSummary(room: room, name: name, unread: try unreadCount(of: room, me: me), last: last)
    }

    /// Each author's highest delivered sequence in `room` (`numberedKinds`
    /// only, ours left out): what a read receipt for the whole room says.
    public func latestSequences(in room: RoomID, me: PublicKey) throws -> [PublicKey: UInt64] {
        guard let row = roomRows[room] else { return [:] }
        let s = try db.statement(
            """
            SELECT a.key, max(e.sequence) FROM envelopes e JOIN authors a ON a.rowid = e.author
            WHERE e.room = ?1 AND e.delivery IS NOT NULL AND e.kind IN (\(Self.numberedKindList))
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
}
