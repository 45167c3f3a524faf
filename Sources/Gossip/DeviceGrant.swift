import Crypto

/// What an account hands a device it links (docs/PROTOCOL.md §15, "Grant"),
/// sealed for the device by the link exchange:
///
///     certificate length 1 ‖ certificate
///     conversation secret 32 (the X25519 secret of the certificate's conversation key)
///     nick length 1 ‖ nick (0: none)
///     private count 2 ‖ count × (room id 32 ‖ room key 32 ‖ name length 1 ‖ name)
///     public count 2 ‖ count × (name length 1 ‖ name)
///     trusted count 2 ‖ count × key 32
///     blocked count 2 ‖ count × key 32
///     room key count 2 ‖ count × (room id 32 ‖ membership event 32 ‖ epoch 4 ‖ room key 32)
///     older secret count 2 ‖ count × (conversation epoch 4 ‖ secret 32)
public struct DeviceGrant: Equatable, Sendable {
    /// Most entries in each list (rooms, trusted and blocked identities).
    public static let maximumEntries = 4_096

    public struct PrivateRoom: Equatable, Sendable {
        public let id: RoomID
        public let key: [UInt8]
        public let name: RoomName
        public init(id: RoomID, key: [UInt8], name: RoomName) {
            self.id = id
            self.key = key
            self.name = name
        }
    }

    /// A private room's key of a later epoch: what the device could not
    /// open itself where it was sealed to the account's identity key (epoch 0).
    public typealias RoomKey = RoomEpochKey

    public let certificate: DeviceCertificate
    /// The account's conversation key's secret, of the certificate's epoch.
    public let conversationSecret: [UInt8]
    public let nick: Nick?
    public let privateRooms: [PrivateRoom]
    public let publicRooms: [RoomName]
    public let trusted: [PublicKey]
    public let blocked: [PublicKey]
    public let roomKeys: [RoomKey]
    /// The account's earlier conversation keys (epoch 1 and on, before the
    /// certificate's): so the device opens conversations from before a rekey.
    public let olderSecrets: [(epoch: UInt32, secret: [UInt8])]

    public static func == (a: DeviceGrant, b: DeviceGrant) -> Bool {
        a.certificate == b.certificate && a.conversationSecret == b.conversationSecret && a.nick == b.nick && a.privateRooms == b.privateRooms
            && a.publicRooms == b.publicRooms && a.trusted == b.trusted && a.blocked == b.blocked && a.roomKeys == b.roomKeys
            && a.olderSecrets.map(\.epoch) == b.olderSecrets.map(\.epoch) && a.olderSecrets.map(\.secret) == b.olderSecrets.map(\.secret)
    }

    public init(certificate: DeviceCertificate, conversationSecret: [UInt8], nick: Nick?, privateRooms: [PrivateRoom], publicRooms: [RoomName],
                trusted: [PublicKey], blocked: [PublicKey], roomKeys: [RoomKey] = [], olderSecrets: [(epoch: UInt32, secret: [UInt8])] = []) {
        self.certificate = certificate
        self.conversationSecret = conversationSecret
        self.nick = nick
        self.privateRooms = privateRooms
        self.publicRooms = publicRooms
        self.trusted = trusted
        self.blocked = blocked
        self.roomKeys = roomKeys
        self.olderSecrets = olderSecrets
    }

    public var encoded: [UInt8] {
        var w = ByteWriter()
        let c = certificate.encoded
        w.u8(UInt8(c.count))
        w.raw(c)
        w.raw(conversationSecret)
        Self.short(nick?.value, to: &w)
        w.u16(UInt16(clamping: min(privateRooms.count, Self.maximumEntries)))
        for room in privateRooms.prefix(Self.maximumEntries) {
            w.raw(room.id.bytes)
            w.raw(room.key)
            Self.short(room.name.value, to: &w)
        }
        w.u16(UInt16(clamping: min(publicRooms.count, Self.maximumEntries)))
        for name in publicRooms.prefix(Self.maximumEntries) { Self.short(name.value, to: &w) }
        for keys in [trusted, blocked] {
            w.u16(UInt16(clamping: min(keys.count, Self.maximumEntries)))
            for key in keys.prefix(Self.maximumEntries) { w.raw(key.bytes) }
        }
        w.u16(UInt16(clamping: min(roomKeys.count, Self.maximumEntries)))
        for k in roomKeys.prefix(Self.maximumEntries) {
            w.raw(k.room.bytes)
            w.raw(k.event.bytes)
            w.u32(k.epoch)
            w.raw(k.key)
        }
        w.u16(UInt16(clamping: min(olderSecrets.count, Self.maximumEntries)))
        for o in olderSecrets.prefix(Self.maximumEntries) {
            w.u32(o.epoch)
            w.raw(o.secret)
        }
        return w.bytes
    }

    private static func short(_ text: String?, to w: inout ByteWriter) {
        let bytes = Array((text ?? "").utf8)
        w.u8(UInt8(bytes.count))
        w.raw(bytes)
    }

    public static func decode(_ bytes: [UInt8]) throws(DeviceLinkError) -> DeviceGrant {
        do { return try parse(bytes) } catch let error as DeviceLinkError { throw error } catch {
            throw .badGrant("\(error)")
        }
    }

    private static func parse(_ bytes: [UInt8]) throws -> DeviceGrant {
        var r = ByteReader(bytes)
        let certificate = try DeviceCertificate.decode(Array(try r.take(Int(try r.u8("certificate length")), "certificate")))
        let secret = Array(try r.take(32, "conversation secret"))
        guard (try? BoxKeyPair(secretBytes: secret))?.publicKey == certificate.conversationKey else {
            throw DeviceLinkError.badGrant("the conversation secret is not the certificate's key")
        }
        let nickText = try text(&r, "nick")
        let nick = nickText.isEmpty ? nil : try Nick(nickText)
        var privateRooms: [PrivateRoom] = []
        for _ in 0..<(try count(&r, "private rooms")) {
            let id = RoomID(unchecked: Array(try r.take(32, "room id")))
            let key = Array(try r.take(32, "room key"))
            privateRooms.append(PrivateRoom(id: id, key: key, name: try RoomName(try text(&r, "room name"))))
        }
        var publicRooms: [RoomName] = []
        for _ in 0..<(try count(&r, "public rooms")) { publicRooms.append(try RoomName(try text(&r, "room name"))) }
        var lists: [[PublicKey]] = []
        for list in ["trusted", "blocked"] {
            var keys: [PublicKey] = []
            for _ in 0..<(try count(&r, list)) { keys.append(try PublicKey(bytes: try r.take(32, list))) }
            lists.append(keys)
        }
        var roomKeys: [RoomKey] = []
        for _ in 0..<(try count(&r, "room keys")) {
            let room = RoomID(unchecked: Array(try r.take(32, "room id")))
            let event = try MessageID(bytes: try r.take(32, "membership event"))
            let epoch = try r.u32("epoch")
            roomKeys.append(RoomKey(room: room, event: event, epoch: epoch, key: Array(try r.take(32, "room key"))))
        }
        var older: [(epoch: UInt32, secret: [UInt8])] = []
        for _ in 0..<(try count(&r, "older secrets")) {
            older.append((try r.u32("conversation epoch"), Array(try r.take(32, "secret"))))
        }
        guard r.remaining == 0 else { throw EnvelopeError.trailingBytes(count: r.remaining) }
        return DeviceGrant(certificate: certificate, conversationSecret: secret, nick: nick, privateRooms: privateRooms, publicRooms: publicRooms,
                           trusted: lists[0], blocked: lists[1], roomKeys: roomKeys, olderSecrets: older)
    }

    private static func count(_ r: inout ByteReader, _ field: String) throws -> Int {
        let n = Int(try r.u16(field))
        guard n <= maximumEntries else { throw DeviceLinkError.badGrant("\(n) \(field) exceed \(maximumEntries)") }
        return n
    }

    private static func text(_ r: inout ByteReader, _ field: String) throws -> String {
        let raw = try r.take(Int(try r.u8(field)), field)
        guard let s = String(validating: raw, as: UTF8.self) else { throw DeviceLinkError.badGrant("\(field) is not UTF-8") }
        return s
    }
}
