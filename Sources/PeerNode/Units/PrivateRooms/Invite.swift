import Crypto
import Foundation
import ChatText
import Gossip
import Store

/// Private rooms: a random room id and key, known only to members. A member
/// hands both to someone in an invite, a direct message of kind `invite`
/// (docs/PROTOCOL.md §14):
///
///     "PNIV" ‖ room id 32 ‖ room key 32 ‖ room name (UTF-8)
struct Invite: Equatable {
    static let magic: [UInt8] = Array("PNIV".utf8)
    /// An invite to a room with membership events: every key the inviter
    /// holds follows the first (docs/PROTOCOL.md §14, "Membership and key epochs").
    static let magicWithEpochs: [UInt8] = Array("PNI2".utf8)
    static let maximumEpochs = 900
    let room: RoomID
    /// The room's first key.
    let key: [UInt8]
    let name: RoomName
    /// Later keys: (membership event 32 ‖ epoch 4 ‖ key 32) each.
    var epochs: [UInt8] = []

    var encoded: [UInt8] {
        guard !epochs.isEmpty else { return Self.magic + room.bytes + key + Array(name.value.utf8) }
        let count = UInt16(epochs.count / 68)
        return Self.magicWithEpochs + room.bytes + key + [UInt8(count >> 8), UInt8(count & 0xff)] + epochs + Array(name.value.utf8)
    }

    /// Nil for anything that is not exactly one of these layouts with a valid room name.
    static func decode(_ bytes: [UInt8]) -> Invite? {
        guard bytes.count > 68, let room = try? RoomID(bytes: bytes[4..<36]) else { return nil }
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

    static func encodeEpochs(_ keys: [(event: MessageID, epoch: UInt32, key: [UInt8])]) -> [UInt8] {
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
    static func epochKeys(_ bytes: [UInt8]) -> [(event: MessageID, epoch: UInt32, key: [UInt8])] {
        stride(from: 0, to: bytes.count - bytes.count % 68, by: 68).compactMap { i in
            guard let event = try? MessageID(bytes: bytes[i..<(i + 32)]) else { return nil }
            let epoch = bytes[(i + 32)..<(i + 36)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            return (event, epoch, Array(bytes[(i + 36)..<(i + 68)]))
        }
    }
}

/// Why an invite is not even offered to the user: it names a room that
/// cannot be a private room (docs/PROTOCOL.md §14).
enum InviteRefusal: Equatable, CustomStringConvertible {
    /// Its room id is a public room's (the one its name derives, or one we know).
    case publicRoom
    /// Its room id is a direct conversation's.
    case directRoom
    /// Its key is not a room key.
    case badKey

    var description: String {
        switch self {
        case .publicRoom: return "it names a public room's id (accepting it would have replaced that room's key)"
        case .directRoom: return "it names a direct conversation's id (accepting it would have replaced that conversation's key)"
        case .badKey: return "its key is not a room key"
        }
    }
}
