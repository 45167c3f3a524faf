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
    /// Its number in its room, when the store had it at hand (an envelope
    /// it has just delivered); nil says nothing: `Store.number(of:)` reads
    /// it from the row. So it is not part of equality.
    public var number: Int? = nil

    public static func == (a: StoredEnvelope, b: StoredEnvelope) -> Bool {
        a.envelope == b.envelope && a.causalTime == b.causalTime && a.delivery == b.delivery
    }
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

    /// Up to `limit` envelopes, and no more once `bytes` are read (at least
    /// one): a catch-up reads about one batch message of large bodies, not
    /// `limit` of them.
    public func envelopes(from author: PublicKey, startingAt sequence: UInt64, limit: Int, bytes: Int = .max) throws -> [Envelope] {
        guard let st = authors[author], limit > 0 else { return [] }
        let s = try db.statement("SELECT bytes FROM envelopes WHERE author = ?1 AND sequence >= ?2 ORDER BY sequence LIMIT ?3")
            .bind(1, st.rowid).bind(2, Int64(clamping: sequence)).bind(3, limit)
        var out: [Envelope] = []
        var total = 0
        defer { s.reset() }
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
    /// is certain to be inserted as it is: nothing is held past a gap. (0,
    /// zero) for an author with nothing here. The node forwards such
    /// envelopes before storing them. The last id is kept in memory; after a
    /// start it is read once (one indexed row), and a read that fails
    /// answers nil: the envelope then waits for the store, as past a gap.
    public func chainEnd(of author: PublicKey) -> (sequence: UInt64, id: MessageID)? {
        guard var st = authors[author] else { return (0, .zero) }
        guard st.highest == st.contiguous else { return nil }
        if st.contiguous == 0 { return (0, .zero) }
        if st.contiguousID == nil {
            do { st.contiguousID = try id(of: st, st.contiguous) } catch { return nil }
            guard st.contiguousID != nil else { return nil }
            setAuthor(author, st)
        }
        return st.contiguousID.map { (st.contiguous, $0) }
    }

    /// What an author's next post should name as dependencies: every delivered
    /// clock entry ahead of what its earlier posts named (at most
    /// `Envelope.maximumDependencies`; the rest follow in the next post).
    public func dependenciesForNextPost(by author: PublicKey) throws -> [Dependency] {
        var advanced: [Dependency] = []
        for key in unsentAuthors where key != author {
            guard let delivered = authors[key]?.delivered, delivered > sentClock[key] ?? 0 else { continue }
            advanced.append(Dependency(author: key, sequence: delivered))
        }
        return Array(advanced.sorted { $0.author < $1.author }.prefix(Envelope.maximumDependencies))
    }

    // MARK: forks

    /// The fork of `author` at `sequence` with id `id`, if one was kept.
    public func fork(by author: PublicKey, sequence: UInt64, id: MessageID) throws -> Envelope? {
        guard let row = authors[author]?.rowid else { return nil }
        let s = try db.statement("SELECT bytes FROM forks WHERE author = ?1 AND sequence = ?2 AND fork_id = ?3")
            .bind(1, row).bind(2, Int64(clamping: sequence)).bind(3, id.bytes)
        guard try s.step() else { return nil }
        return try Envelope.decode(s.blob(0), verification: .trustedStorage)
    }

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
    /// The newest nick message of every author (the index `envelopes_nicks` makes it one lookup per author),
    /// in the order the authors were first stored here (who took a nick first: `ConfusableIndex`).
    public func latestNicks() throws -> [StoredEnvelope] {
        let s = try db.statement(
            """
            SELECT e.bytes, e.causal_time, e.delivery FROM authors a JOIN envelopes e ON e.rowid = (
                SELECT rowid FROM envelopes
                WHERE author = a.rowid AND kind = \(Kind.nick.rawValue) AND causal_time IS NOT NULL ORDER BY sequence DESC LIMIT 1)
            ORDER BY a.rowid
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
        if let recent = recentDeliveries.take(after: after, limit: limit, newest: lastDelivery) { return recent }
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

    // MARK: settings

    /// A user setting (`/set`), or nil.
    public func setting(_ key: String) throws -> String? {
        try db.statement("SELECT CAST(value AS TEXT) FROM settings WHERE key = ?1").bind(1, "user." + key).single { $0.text(0) } ?? nil
    }

    public func setSetting(_ key: String, _ value: String) throws {
        try db.statement("INSERT OR REPLACE INTO settings(key, value) VALUES (?1, ?2)").bind(1, "user." + key).bind(2, value).run()
    }

    public func removeSetting(_ key: String) throws {
        try db.statement("DELETE FROM settings WHERE key = ?1").bind(1, "user." + key).run()
    }
}

