import Crypto
import Gossip

/// Devices of accounts (docs/PROTOCOL.md §15): filled as device claims are
/// delivered, read at start so every device shows as its account.
extension Store {
    public struct DeviceRow: Equatable, Sendable {
        public let device: PublicKey
        public let account: PublicKey
        public let name: String
        public let issued: UInt64
        /// The claim's sequence in the device's own chain.
        public let claim: UInt64

        public init(device: PublicKey, account: PublicKey, name: String, issued: UInt64, claim: UInt64) {
            self.device = device
            self.account = account
            self.name = name
            self.issued = issued
            self.claim = claim
        }
    }

    /// Records a device's claim; false when the device had one already (the
    /// first claim in its chain stays).
    @discardableResult
    public func addDevice(_ row: DeviceRow) throws -> Bool {
        try db.statement("INSERT OR IGNORE INTO devices(device, account, name, issued, claim) VALUES (?1, ?2, ?3, ?4, ?5)")
            .bind(1, row.device.bytes).bind(2, row.account.bytes).bind(3, row.name)
            .bind(4, Int64(clamping: row.issued)).bind(5, Int64(clamping: row.claim)).run()
        return db.changes > 0
    }

    /// Every device known, or those of one account.
    public func devices(of account: PublicKey? = nil) throws -> [DeviceRow] {
        let s = try account.map { try db.statement("SELECT device, account, name, issued, claim FROM devices WHERE account = ?1 ORDER BY issued").bind(1, $0.bytes) }
            ?? db.statement("SELECT device, account, name, issued, claim FROM devices ORDER BY issued")
        var out: [DeviceRow] = []
        while try s.step() {
            guard let device = try? PublicKey(bytes: s.blob(0)), let account = try? PublicKey(bytes: s.blob(1)) else { continue }
            out.append(DeviceRow(device: device, account: account, name: s.text(2) ?? "", issued: UInt64(max(0, s.int64(3))),
                                 claim: UInt64(max(0, s.int64(4)))))
        }
        return out
    }

    /// A revocation as stored: `by`'s envelope `bySequence` says `device`'s
    /// envelopes after `last` are refused.
    public struct RevocationRow: Equatable, Hashable, Sendable {
        public let device: PublicKey
        public let by: PublicKey
        public let bySequence: UInt64
        public let last: UInt64
        /// The id of the device's envelope at `last`, when the revocation names it.
        public let lastID: MessageID?

        public init(device: PublicKey, by: PublicKey, bySequence: UInt64, last: UInt64, lastID: MessageID? = nil) {
            self.device = device
            self.by = by
            self.bySequence = bySequence
            self.last = last
            self.lastID = lastID
        }
    }

    public func addRevocation(_ row: RevocationRow) throws {
        let s = try db.statement("INSERT OR IGNORE INTO revocations(device, by, by_sequence, last, last_id) VALUES (?1, ?2, ?3, ?4, ?5)")
            .bind(1, row.device.bytes).bind(2, row.by.bytes).bind(3, Int64(clamping: row.bySequence)).bind(4, Int64(clamping: row.last))
        if let id = row.lastID { try s.bind(5, id.bytes).run() } else { try s.bindNull(5).run() }
    }

    public func revocations() throws -> [RevocationRow] {
        let s = try db.statement("SELECT device, by, by_sequence, last, last_id FROM revocations")
        var out: [RevocationRow] = []
        while try s.step() {
            guard let device = try? PublicKey(bytes: s.blob(0)), let by = try? PublicKey(bytes: s.blob(1)) else { continue }
            let lastID = s.isNull(4) ? nil : try MessageID(bytes: s.blob(4))
            out.append(RevocationRow(device: device, by: by, bySequence: UInt64(max(0, s.int64(2))), last: UInt64(max(0, s.int64(3))), lastID: lastID))
        }
        return out
    }

    /// Moves a room's read mark up to the newest envelope it holds of each
    /// (author, sequence) given, never back: what another device of ours read.
    public func markRead(_ room: RoomID, through marks: [(author: PublicKey, sequence: UInt64)]) throws {
        guard let row = roomRows[room] else { return }
        var newest: Int64 = 0
        for mark in marks {
            guard let author = authors[mark.author]?.rowid else { continue }
            let delivery = try db.statement(
                "SELECT coalesce(max(delivery), 0) FROM envelopes WHERE room = ?1 AND author = ?2 AND sequence <= ?3 AND delivery IS NOT NULL"
            ).bind(1, row).bind(2, author).bind(3, Int64(clamping: mark.sequence)).single { $0.int64(0) } ?? 0
            newest = max(newest, delivery)
        }
        guard newest > 0 else { return }
        try db.statement("UPDATE rooms SET read_delivery = max(read_delivery, ?2) WHERE rowid = ?1").bind(1, row).bind(2, newest).run()
    }

    /// When `author`'s newest envelope here was signed (its own clock, ms); nil when none is here.
    public func lastSigned(by author: PublicKey) throws -> UInt64? {
        try db.statement(
            """
            SELECT e.timestamp FROM envelopes e JOIN authors a ON e.author = a.rowid
            WHERE a.key = ?1 ORDER BY e.sequence DESC LIMIT 1
            """).bind(1, author.bytes).single { UInt64(max(0, $0.int64(0))) }
    }
}

/// Accounts' conversation keys (docs/PROTOCOL.md §15, "Conversation keys").
extension Store {
    public struct ConversationKeyRow: Equatable, Sendable {
        public let account: PublicKey
        public let epoch: UInt32
        public let publicKey: [UInt8]
        /// Ours only.
        public let secret: [UInt8]?
        /// The claim that announced it: (device, its sequence); nil until one was delivered.
        public let claim: (device: PublicKey, sequence: UInt64)?

        public init(account: PublicKey, epoch: UInt32, publicKey: [UInt8], secret: [UInt8]?, claim: (device: PublicKey, sequence: UInt64)?) {
            self.account = account
            self.epoch = epoch
            self.publicKey = publicKey
            self.secret = secret
            self.claim = claim
        }

        public static func == (a: Self, b: Self) -> Bool {
            a.account == b.account && a.epoch == b.epoch && a.publicKey == b.publicKey && a.secret == b.secret
                && a.claim?.device == b.claim?.device && a.claim?.sequence == b.claim?.sequence
        }
    }

    /// Keeps an epoch's key: its secret when given, the announcing claim
    /// when given and none was known; the first public key of an epoch stays.
    public func saveConversationKey(_ row: ConversationKeyRow) throws {
        try db.statement("INSERT OR IGNORE INTO conversation_keys(account, epoch, public) VALUES (?1, ?2, ?3)")
            .bind(1, row.account.bytes).bind(2, Int64(row.epoch)).bind(3, row.publicKey).run()
        if let secret = row.secret {
            try db.statement("UPDATE conversation_keys SET secret = ?3 WHERE account = ?1 AND epoch = ?2 AND secret IS NULL")
                .bind(1, row.account.bytes).bind(2, Int64(row.epoch)).bind(3, secret).run()
        }
        if let claim = row.claim {
            try db.statement("UPDATE conversation_keys SET claim_device = ?3, claim_sequence = ?4 WHERE account = ?1 AND epoch = ?2 AND claim_device IS NULL")
                .bind(1, row.account.bytes).bind(2, Int64(row.epoch)).bind(3, claim.device.bytes).bind(4, Int64(clamping: claim.sequence)).run()
        }
    }

    public func conversationKeys() throws -> [ConversationKeyRow] {
        let s = try db.statement("SELECT account, epoch, public, secret, claim_device, claim_sequence FROM conversation_keys")
        var out: [ConversationKeyRow] = []
        while try s.step() {
            guard let account = try? PublicKey(bytes: s.blob(0)) else { continue }
            let secret = s.isNull(3) ? nil : s.blob(3)
            let claim = (try? PublicKey(bytes: s.blob(4))).map { ($0, UInt64(max(0, s.int64(5)))) }
            out.append(ConversationKeyRow(account: account, epoch: UInt32(clamping: s.int64(1)), publicKey: s.blob(2), secret: secret, claim: claim))
        }
        return out
    }
}
