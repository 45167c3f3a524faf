import Crypto
import Gossip

/// Private rooms' key epochs (docs/PROTOCOL.md §14, "Membership and key epochs").
extension Store {
    public typealias RoomKeyRow = RoomEpochKey

    public func saveRoomKey(_ row: RoomKeyRow) throws {
        try db.statement("INSERT OR IGNORE INTO room_keys(room, event, epoch, key) VALUES (?1, ?2, ?3, ?4)")
            .bind(1, row.room.bytes).bind(2, row.event.bytes).bind(3, Int64(row.epoch)).bind(4, row.key).run()
    }

    /// Every key held, newest epoch first.
    public func roomKeys() throws -> [RoomKeyRow] {
        let s = try db.statement("SELECT room, event, epoch, key FROM room_keys ORDER BY epoch DESC")
        var out: [RoomKeyRow] = []
        while try s.step() {
            guard let room = try? RoomID(bytes: s.blob(0)), let event = try? MessageID(bytes: s.blob(1)) else { continue }
            out.append(RoomKeyRow(room: room, event: event, epoch: UInt32(clamping: s.int64(2)), key: s.blob(3)))
        }
        return out
    }

    /// The create pinned as `room`'s founding one, if any (a room whose id
    /// commits to no founder).
    public func foundingCreate(of room: RoomID) throws -> MessageID? {
        // Read with `single`: the statement is reset, holding no read transaction open (it kept checkpoints waiting).
        try db.statement("SELECT event FROM room_founding WHERE room = ?1").bind(1, room.bytes).single { try MessageID(bytes: $0.blob(0)) }
    }

    /// Pins `event` as `room`'s founding create; the first pin stays.
    public func pinFoundingCreate(_ room: RoomID, event: MessageID) throws {
        try db.statement("INSERT OR IGNORE INTO room_founding(room, event) VALUES (?1, ?2)").bind(1, room.bytes).bind(2, event.bytes).run()
    }

    /// The envelopes of a room that may be membership events: those filed
    /// under that kind, and those this node could not open when they came
    /// (a key learned later may open them), in delivery order.
    public func membershipCandidates(in room: RoomID) throws -> [Envelope] {
        guard let row = roomRows[room] else { return [] }
        let s = try db.statement(
            """
            SELECT bytes FROM envelopes WHERE room = ?1 AND delivery IS NOT NULL AND kind IN (0, \(Kind.membership.rawValue))
            ORDER BY delivery
            """).bind(1, row)
        var out: [Envelope] = []
        while try s.step() {
            if let e = try? Envelope.decode(s.blob(0), verification: .trustedStorage) { out.append(e) }
        }
        return out
    }
}
