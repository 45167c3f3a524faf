import Crypto
import Foundation
import Gossip
import NodeCore
import Store

/// Following across devices (docs/PROTOCOL.md §15, "Following across
/// devices"): the rooms one device joins, leaves, makes or accepts, and
/// the trust marks and blocks it sets, are said in the account's own room,
/// which only the account's devices can name and read (its id and key
/// derive from the account's conversation secret of an epoch from 1 on,
/// so a revoked device loses it with the next epoch), and the others do
/// the same.
extension Node {
    /// The own room of one conversation key: its id and key.
    func ownRoom(_ pair: BoxKeyPair) -> (id: RoomID, key: SymmetricKey)? {
        let bytes = BLAKE2b.derive(label: "peernode/1 own-devices key", pair.exportedSecret)
        guard let key = try? SymmetricKey(bytes: bytes), let id = try? RoomID(bytes: network.derive(label: "peernode/1 own-devices room", bytes)) else {
            return nil
        }
        return (id, key)
    }

    /// Every own room we can read: one per conversation key of ours from epoch 1 on.
    func mapOwnRooms() {
        var rooms: [RoomID: SymmetricKey] = [:]
        for (epoch, pair) in ownBoxKeys where epoch != 0 && epoch != Self.identityEpoch {
            if let (id, key) = ownRoom(pair) { rooms[id] = key }
        }
        ownRooms = rooms
    }

    /// Says `change` to our other devices, if we have any: in the own room
    /// of our newest conversation key. Nil when there is nobody to tell
    /// (no device was ever linked).
    @discardableResult
    func follow(_ change: FollowChange) throws -> Envelope? {
        guard !applyingFollow else { return nil }
        // Our newest conversation key from epoch 1 on: there is one once a device was linked
        // (at once on the account's machine, before the device's claim comes back).
        guard let (_, pair) = newestLinkedBoxKey, let (id, key) = ownRoom(pair) else { return nil }
        return try appendOwn(room: id, kind: .follow, content: change.encoded, key: key)
    }

    /// A change from another device of ours, done here too: what to say of
    /// it, or nil when it is not ours to follow (another account's, our
    /// own, not in an own room) or changes nothing here.
    func applyFollow(_ e: Envelope, _ opened: OpenedEnvelope) throws -> FollowChange? {
        guard ownRooms[e.room] != nil, e.author != me, people.account(e.author) == account,
              let change = FollowChange.decode(opened.content) else { return nil }
        applyingFollow = true
        defer { applyingFollow = false }
        switch change {
        case let .joined(name):
            guard roomNames[roomID(name)] == nil else { return nil }
            _ = try join(name)
        case let .parted(name):
            // Public rooms only: a private room's name is each device's own.
            guard name != .general, privateRooms[roomID(name)] == nil, roomNames[roomID(name)] != nil else { return nil }
            try leave(name)
        case let .trusted(key, on):
            guard people.trusted.contains(key) != on else { return nil }
            try setTrusted(key, on)
        case let .blocked(key, on):
            guard try store.blockedIdentities().contains(key) != on else { return nil }
            try setBlocked(key, on)
        case let .accepted(room):
            guard privateRooms[room] == nil, let pending = try pendingInvites().first(where: { $0.room == room }) else { return nil }
            _ = try accept(pending)
        case let .madePrivate(room, keyBytes, name):
            guard privateRooms[room] == nil, let key = try? SymmetricKey(bytes: keyBytes), forgedPrivateRoom(room, name: name, peer: account) == nil else { return nil }
            let local = freeRoomName(like: name)
            try store.addPrivateRoom(room, name: local.value, key: keyBytes)
            privateRooms[room] = (local, key)
            _ = try join(local)
            try recomputeMembership(room)
        }
        return change
    }
}

extension FollowChange {
    /// Its name in `--json` (`"change"`) and what it was about, as text.
    var described: (change: String, about: String) {
        switch self {
        case let .joined(name): ("joined", name.value)
        case let .parted(name): ("parted", name.value)
        case let .trusted(key, on): (on ? "trusted" : "untrusted", key.hex)
        case let .blocked(key, on): (on ? "blocked" : "unblocked", key.hex)
        case let .accepted(room): ("accepted", room.hex)
        case let .madePrivate(_, _, name): ("made_private", name.value)
        }
    }
}
