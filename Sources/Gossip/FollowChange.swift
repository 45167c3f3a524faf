import Crypto

/// A change one device of an account makes that its other devices follow
/// (docs/PROTOCOL.md §15, "Following across devices"): the content of an
/// envelope of kind `follow` in the account's own room.
///
///     "PNFW" ‖ action 1 ‖ payload
///
/// | action | payload |
/// |---|---|
/// | 1 joined, 2 parted | a public room's name (UTF-8) |
/// | 3 trusted, 4 untrusted, 5 blocked, 6 unblocked | an identity key 32 |
/// | 7 accepted | a private room's id 32 (the invite each device holds) |
/// | 8 made private | room id 32 ‖ room key 32 ‖ name (UTF-8) |
public enum FollowChange: Equatable, Sendable {
    case joined(RoomName)
    case parted(RoomName)
    case trusted(PublicKey, Bool)
    case blocked(PublicKey, Bool)
    case accepted(RoomID)
    case madePrivate(RoomID, key: [UInt8], name: RoomName)

    public static let magic = Array("PNFW".utf8)

    public var encoded: [UInt8] {
        switch self {
        case let .joined(name): Self.magic + [1] + Array(name.value.utf8)
        case let .parted(name): Self.magic + [2] + Array(name.value.utf8)
        case let .trusted(key, on): Self.magic + [on ? 3 : 4] + key.bytes
        case let .blocked(key, on): Self.magic + [on ? 5 : 6] + key.bytes
        case let .accepted(room): Self.magic + [7] + room.bytes
        case let .madePrivate(room, key, name): Self.magic + [8] + room.bytes + key + Array(name.value.utf8)
        }
    }

    /// Nil for anything that is not exactly one of these layouts.
    public static func decode(_ bytes: [UInt8]) -> FollowChange? {
        guard bytes.count > 5, Array(bytes[0..<4]) == magic else { return nil }
        let payload = Array(bytes[5...])
        func name(_ from: some Collection<UInt8>) -> RoomName? {
            String(validating: from, as: UTF8.self).flatMap { try? RoomName($0) }
        }
        switch bytes[4] {
        case 1: return name(payload).map(FollowChange.joined)
        case 2: return name(payload).map(FollowChange.parted)
        case 3, 4:
            guard payload.count == 32, let key = try? PublicKey(bytes: payload) else { return nil }
            return .trusted(key, bytes[4] == 3)
        case 5, 6:
            guard payload.count == 32, let key = try? PublicKey(bytes: payload) else { return nil }
            return .blocked(key, bytes[4] == 5)
        case 7:
            guard payload.count == 32, let room = try? RoomID(bytes: payload) else { return nil }
            return .accepted(room)
        case 8:
            guard payload.count > 64, let room = try? RoomID(bytes: payload[0..<32]), let roomName = name(payload[64...]) else { return nil }
            return .madePrivate(room, key: Array(payload[32..<64]), name: roomName)
        default:
            return nil
        }
    }
}
