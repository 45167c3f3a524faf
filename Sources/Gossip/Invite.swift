import ChatText
import Crypto

/// Private rooms: a random room id and key, known only to members. A member
/// hands both to someone in an invite, a direct message of kind `invite`
/// (docs/PROTOCOL.md §14):
///
///     "PNIV" ‖ room id 32 ‖ room key 32 ‖ room name (UTF-8)
public struct Invite: Equatable, Sendable {
    public static let magic: [UInt8] = Array("PNIV".utf8)
    /// An invite to a room with membership events: every key the inviter
    /// holds follows the first (docs/PROTOCOL.md §14, "Membership and key epochs").
    public static let magicWithEpochs: [UInt8] = Array("PNI2".utf8)
    public static let maximumEpochs = 900
    public let room: RoomID
    /// The room's first key.
    public let key: [UInt8]
    public let name: RoomName
    /// Later keys: (membership event 32 ‖ epoch 4 ‖ key 32) each.
    public var epochs: [UInt8] = []

    public init(room: RoomID, key: [UInt8], name: RoomName, epochs: [UInt8] = []) {
        self.room = room
        self.key = key
        self.name = name
        self.epochs = epochs
    }

    public var encoded: [UInt8] {
        guard !epochs.isEmpty else { return Self.magic + room.bytes + key + Array(name.value.utf8) }
        let count = UInt16(epochs.count / 68)
        return Self.magicWithEpochs + room.bytes + key + [UInt8(count >> 8), UInt8(count & 0xff)] + epochs + Array(name.value.utf8)
    }

    /// Nil for anything that is not exactly one of these layouts with a valid room name.
    public static func decode(_ bytes: [UInt8]) -> Invite? {
        guard bytes.count > 68 else { return nil }
        let room = RoomID(unchecked: Array(bytes[4..<36]))
        var rest = 68, epochs: [UInt8] = []
        if Array(bytes[0..<4]) == magicWithEpochs {
            guard bytes.count > 70 else { return nil }
            let count = Int(bytes[68]) << 8 | Int(bytes[69])
            guard count <= maximumEpochs, bytes.count > 70 + count * 68 else { return nil }
            epochs = Array(bytes[70..<(70 + count * 68)])
            rest = 70 + count * 68
        } else if Array(bytes[0..<4]) != magic {
            return nil
        }
        guard let text = String(validating: bytes[rest...], as: UTF8.self), let name = try? RoomName(text) else { return nil }
        return Invite(room: room, key: Array(bytes[36..<68]), name: name, epochs: epochs)
    }

    public static func encodeEpochs(_ keys: [(event: MessageID, epoch: UInt32, key: [UInt8])]) -> [UInt8] {
        var out: [UInt8] = []
        for k in keys.prefix(maximumEpochs) {
            let epoch: [UInt8] = [UInt8(k.epoch >> 24), UInt8((k.epoch >> 16) & 0xff), UInt8((k.epoch >> 8) & 0xff), UInt8(k.epoch & 0xff)]
            out += k.event.bytes
            out += epoch
            out += k.key
        }
        return out
    }

    /// The later keys, read.
    public static func epochKeys(_ bytes: [UInt8]) -> [(event: MessageID, epoch: UInt32, key: [UInt8])] {
        stride(from: 0, to: bytes.count - bytes.count % 68, by: 68).map { i in
            let event = MessageID(unchecked: Array(bytes[i..<(i + 32)]))
            let epoch = bytes[(i + 32)..<(i + 36)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            return (event, epoch, Array(bytes[(i + 36)..<(i + 68)]))
        }
    }
}
