import Crypto
import Foundation
import Gossip

/// Private rooms: a random room id and key, known only to members. A member
/// hands both to someone in an invite, a direct message of kind `invite`
/// (docs/PROTOCOL.md §14):
///
///     "PNIV" ‖ room id 32 ‖ room key 32 ‖ room name (UTF-8)
struct Invite: Equatable {
    static let magic: [UInt8] = Array("PNIV".utf8)
    let room: RoomID
    let key: [UInt8]
    let name: RoomName

    var encoded: [UInt8] { Self.magic + room.bytes + key + Array(name.value.utf8) }

    /// Nil for anything that is not exactly this layout with a valid room name.
    static func decode(_ bytes: [UInt8]) -> Invite? {
        guard bytes.count > 68, Array(bytes[0..<4]) == magic, let room = try? RoomID(bytes: bytes[4..<36]),
              let text = String(validating: bytes[68...], as: UTF8.self), let name = try? RoomName(text) else { return nil }
        return Invite(room: room, key: Array(bytes[36..<68]), name: name)
    }
}

extension Node {
    /// Creates a private room (random id and key) and joins it.
    func createPrivateRoom(_ name: RoomName) throws {
        guard !privateRooms.values.contains(where: { $0.name == name }) else {
            throw NodeError(description: "\(name.value) is already one of your private rooms")
        }
        let id = RoomID.random()
        let key = SymmetricKey.generate()
        try store.addPrivateRoom(id, name: name.value, key: key.exportedBytes)
        privateRooms[id] = (name, key)
        _ = try join(name)
    }

    /// Sends `peer` an invite to one of our private rooms.
    func invite(_ peer: PublicKey, to name: RoomName) throws -> Envelope {
        guard let (id, room) = privateRooms.first(where: { $0.value.name == name }) else {
            throw NodeError(description: "\(name.value) is not a private room of yours (public rooms need no invite; /private \(name.value) makes one)")
        }
        let plain = Invite(room: id, key: room.key.exportedBytes, name: name).encoded
        let dm = RoomID.direct(me, peer, network: network)
        return try appendOwn(room: dm, kind: .invite, body: try DirectKey(own: identity, peer: peer).seal(plain))
    }

    /// The invite in a direct message, if this node can read it.
    func invite(in envelope: Envelope) -> (peer: PublicKey, invite: Invite)? {
        guard envelope.kind == .invite, let (peer, plain) = directBytes(envelope), let invite = Invite.decode(plain) else { return nil }
        return (peer, invite)
    }

    /// Joins a private room we were invited to (under its name, or `name-2`… if that name is taken here).
    func accept(_ invite: Invite) throws -> RoomName {
        if let known = privateRooms[invite.room] { return known.name }
        guard let key = try? SymmetricKey(bytes: invite.key) else { throw NodeError(description: "an invite with a bad key") }
        var name = invite.name
        var n = 2
        while privateRooms.values.contains(where: { $0.name == name }) {
            name = (try? RoomName("\(invite.name.value)-\(n)")) ?? name
            n += 1
            if n > 100 { break }
        }
        try store.addPrivateRoom(invite.room, name: name.value, key: invite.key)
        privateRooms[invite.room] = (name, key)
        _ = try join(name)
        return name
    }
}
