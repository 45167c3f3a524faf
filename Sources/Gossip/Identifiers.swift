import NetworkText
import Crypto

/// A message id: BLAKE2b-256 of an envelope's signed bytes.
public struct MessageID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public static let byteCount = 32
    public static let zero = MessageID(unchecked: [UInt8](repeating: 0, count: byteCount))

    public let bytes: [UInt8]
    /// Hashed in one call, not byte by byte (as `PublicKey`).
    public func hash(into hasher: inout Hasher) { bytes.withUnsafeBytes { hasher.combine(bytes: $0) } }

    public init(bytes: some Collection<UInt8>) throws(EnvelopeError) {
        guard bytes.count == Self.byteCount else { throw .badLength(field: "message id", expected: Self.byteCount, actual: bytes.count) }
        self.bytes = Array(bytes)
    }

    init(unchecked bytes: [UInt8]) { self.bytes = bytes }

    /// An id from exactly `byteCount` bytes; nil for any other length.
    public static func checked(_ bytes: [UInt8]) -> Self? { bytes.count == byteCount ? Self(unchecked: bytes) : nil }

    public var isZero: Bool { bytes.allSatisfy { $0 == 0 } }
    public var hex: String { Hex.encode(bytes) }
    public var description: String { hex }

    public static func < (a: MessageID, b: MessageID) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }
}

/// A room id: 32 bytes. Public rooms derive it from the network key and the
/// room name; direct conversations from the pair's shared key; private
/// rooms pick it at random.
public struct RoomID: Hashable, Sendable, CustomStringConvertible {
    public static let byteCount = 32
    public let bytes: [UInt8]
    /// Hashed in one call, not byte by byte (as `PublicKey`).
    public func hash(into hasher: inout Hasher) { bytes.withUnsafeBytes { hasher.combine(bytes: $0) } }

    public init(bytes: some Collection<UInt8>) throws(EnvelopeError) {
        guard bytes.count == Self.byteCount else { throw .badLength(field: "room id", expected: Self.byteCount, actual: bytes.count) }
        self.bytes = Array(bytes)
    }

    init(unchecked bytes: [UInt8]) { self.bytes = bytes }

    /// An id from exactly `byteCount` bytes; nil for any other length.
    public static func checked(_ bytes: [UInt8]) -> Self? { bytes.count == byteCount ? Self(unchecked: bytes) : nil }

    /// derive("peernode/1 room-id", normalised name) under the network key.
    public static func publicRoom(_ name: RoomName, network: NetworkKey) -> RoomID {
        RoomID(unchecked: network.derive(label: "peernode/1 room-id", Array(name.value.utf8)))
    }

    /// A direct conversation's room since envelope version 2:
    /// derive("peernode/2 dm-room", key.derive("peernode/2 dm-room")), from
    /// the pair's X25519 shared key, so only the two parties can compute it
    /// (and tell whose conversation a room is).
    public static func direct(_ key: DirectKey, network: NetworkKey) -> RoomID {
        RoomID(unchecked: network.derive(label: "peernode/2 dm-room", key.derive(label: "peernode/2 dm-room")))
    }

    /// A direct conversation's room in version-1 envelopes:
    /// derive("peernode/1 dm-room", lower key ‖ higher key). Anyone on the
    /// network can compute it, which is why version 2 does not use it; kept
    /// to read what older nodes stored.
    public static func directVersion1(_ a: PublicKey, _ b: PublicKey, network: NetworkKey) -> RoomID {
        let (low, high) = a < b ? (a, b) : (b, a)
        return RoomID(unchecked: network.derive(label: "peernode/1 dm-room", low.bytes + high.bytes))
    }

    /// A random id (a private room made before ids committed to their
    /// founder, and the tests' stand-ins).
    /// An account's own room (docs/PROTOCOL.md §15, "Following across
    /// devices"), from the secret derived of one of its conversation keys.
    public static func ownDevices(secret: [UInt8], network: NetworkKey) -> RoomID {
        RoomID(unchecked: network.derive(label: "peernode/1 own-devices room", secret))
    }

    public static func random() -> RoomID { RoomID(unchecked: secureRandomBytes(byteCount)) }

    /// A private room's id, which commits to its founder:
    /// BLAKE2b-256("peernode/3 private-room" ‖ 0x00 ‖ founder account 32 ‖ salt 32),
    /// the salt random and carried in the room's `create` event (its parent
    /// field), so only the founder's account can sign a create that matches
    /// (docs/PROTOCOL.md §14, "Who founded the room").
    public static func privateRoom(founder: PublicKey, salt: [UInt8]) -> RoomID {
        RoomID(unchecked: BLAKE2b.derive(label: "peernode/3 private-room", founder.bytes + salt))
    }

    public var hex: String { Hex.encode(bytes) }
    public var description: String { hex }
}

/// A room name as people type it: `#` then 1…`maximumLength - 1` more
/// characters, none of them white space or control characters. Stored in
/// lower case, so `#General` and `#general` are one room.
public struct RoomName: Hashable, Sendable, CustomStringConvertible {
    /// In UTF-8 bytes, `#` included.
    public static let maximumLength = 64
    public static let general = RoomName(unchecked: "#general")

    public let value: String

    public init(_ text: String) throws(EnvelopeError) {
        guard let name = Self.normalized(text) else { throw .badRoomName(text) }
        value = name
    }

    /// The room `text` names, or nil when it breaks the rules: for a caller
    /// that only asks whether it does (the throwing `init` says which rule).
    public static func checked(_ text: String) -> RoomName? { normalized(text).map(RoomName.init(unchecked:)) }

    private static func normalized(_ text: String) -> String? {
        var name = text.lowercased()
        // By bytes: `hasPrefix` compares characters, and "#" followed by a
        // combining mark is one character, so a name that was already made
        // would get a second "#" (found by fuzz-accounts).
        if name.utf8.first != UInt8(ascii: "#") { name = "#" + name }
        guard name.utf8.count >= 2, name.utf8.count <= Self.maximumLength, isNameText(name) else { return nil }
        return name
    }

    init(unchecked value: String) { self.value = value }

    public var description: String { value }
}

/// A nick: a claim, never an identity (people see it with a fingerprint).
/// 1…`maximumLength` UTF-8 bytes with no white space, control or invisible
/// formatting characters.
public struct Nick: Hashable, Sendable, CustomStringConvertible {
    public static let maximumLength = 32
    public let value: String

    /// The dot between a nick and its fingerprint (`alice·k3fq`), and the
    /// dots that look like it: none may be in a nick, or a nick could carry
    /// a fingerprint of its own.
    public static let separatorLookAlikes: Set<Unicode.Scalar> = ["\u{B7}", "\u{2027}", "\u{2219}", "\u{2022}", "\u{22C5}", "\u{30FB}", "\u{FF65}", "\u{1427}", "\u{0387}", "\u{2E31}", "\u{18FB}"]

    public init(_ text: String) throws(EnvelopeError) {
        guard Self.holds(text) else { throw .badNick(text) }
        value = text
    }

    /// The nick `text` is, or nil when it breaks the rules: for a caller
    /// that only asks whether it does (a nick from the network that does
    /// not is refused and counted; a default that does not is not taken).
    public static func checked(_ text: String) -> Nick? { holds(text) ? Nick(unchecked: text) : nil }

    private init(unchecked text: String) { value = text }

    private static func holds(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= maximumLength && isNameText(text) && !text.unicodeScalars.contains(where: separatorLookAlikes.contains)
    }

    public var description: String { value }
}

/// True when every character of a name (room or nick) is visible and not
/// white space: what the one sanitizing path (`TerminalText`) would print
/// as itself, and no space. So a `RoomName` or a `Nick` is inert by the same
/// rule that makes every other network text inert, not by a second list.
func isNameText(_ text: String) -> Bool {
    TerminalText.isInert(text) && !text.unicodeScalars.contains { $0.properties.generalCategory == .spaceSeparator }
}
