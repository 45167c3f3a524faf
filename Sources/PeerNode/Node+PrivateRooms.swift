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

extension Node {
    /// Creates a private room and joins it: a random key, and an id that
    /// commits to our account and a random salt, which our create carries.
    func createPrivateRoom(_ name: RoomName) throws {
        guard !privateRooms.values.contains(where: { $0.name == name }) else {
            throw NodeError.alreadyPrivate(name)
        }
        guard name != .general, !knownRooms.contains(name.value) else {
            throw NodeError.publicRoomNamed(name)
        }
        let salt = secureRandomBytes(MessageID.byteCount)
        let id = RoomID.privateRoom(founder: account, salt: salt)
        let key = SymmetricKey.generate()
        try store.addPrivateRoom(id, name: name.value, key: key.exportedBytes)
        privateRooms[id] = (name, key)
        _ = try join(name)
        // Its first event: we are its owner.
        try foundPrivateRoom(id, salt: try MessageID(bytes: salt))
        try follow(.madePrivate(id, key: key.exportedBytes, name: name))
    }

    /// Sends `peer` an invite to one of our private rooms.
    func invite(_ peer: PublicKey, to name: RoomName) throws -> Envelope {
        guard let (id, room) = privateRooms.first(where: { $0.value.name == name }) else {
            throw NodeError.notYourPrivateRoom(name)
        }
        // A membership event first (a new key, sealed to everyone in the room after it), then every key in the invite.
        try changeMembership(id, .invite, target: people.account(peer))
        let epochs = Invite.encodeEpochs(roomKeysForInvite(id))
        return try postDirect(Invite(room: id, key: room.key.exportedBytes, name: name, epochs: epochs).encoded, kind: .invite, to: peer)
    }

    /// Whether `room` can be a private room's id: never a public room's
    /// (derived from `name` or any room name we know) nor a direct
    /// conversation's with `peer` or anyone we know. A genuine private room
    /// id is random, so it never collides; one that does is forged.
    func forgedPrivateRoom(_ room: RoomID, name: RoomName, peer: PublicKey?) -> InviteRefusal? {
        if room == RoomID.publicRoom(name, network: network) || room == RoomID.publicRoom(.general, network: network) { return .publicRoom }
        if let known = roomNames[room], privateRooms[room] == nil || RoomID.publicRoom(known, network: network) == room { return .publicRoom }
        if let peer, let c = conversation(with: peer), room == c.room || room == c.roomVersion1 { return .directRoom }
        // Any author's version-1 conversation with us (a hash per author, once).
        if dmPeers[room] == nil { learnVersion1RoomsOfKnownAuthors() }
        return dmPeers[room] != nil ? .directRoom : nil
    }

    /// An invite arrived from `peer`: kept until the user answers (nothing
    /// changes the user's rooms without the user). Nil when it waits; the
    /// refusal when it cannot be a private room at all. An invite to a room
    /// we are already in changes nothing.
    func receiveInvite(_ invite: Invite, from peer: PublicKey) throws -> InviteRefusal? {
        if let refusal = forgedPrivateRoom(invite.room, name: invite.name, peer: peer) { return refusal }
        guard (try? SymmetricKey(bytes: invite.key)) != nil else { return .badKey }
        guard privateRooms[invite.room] == nil else { return nil }
        // The later keys ride behind the first in the pending row.
        let pending = Store.PendingInvite(room: invite.room, name: invite.name.value, key: invite.key + invite.epochs, inviter: peer, receivedAt: Self.now())
        try store.addPendingInvite(pending)
        return nil
    }

    /// Invites waiting for `/accept` or `/decline`, oldest first.
    func pendingInvites() throws -> [Store.PendingInvite] { try store.pendingInvites() }

    /// The pending invite `/accept NAME` or `/decline NAME` means: by its room
    /// name, or the only one when no name is given.
    func pendingInvite(named name: String) throws -> Store.PendingInvite {
        let pending = try pendingInvites()
        if name.isEmpty {
            guard pending.count == 1, let only = pending.first else {
                throw pending.isEmpty ? NodeError.noInviteWaiting : NodeError.invitesWaiting(pending.count)
            }
            return only
        }
        let wanted = (try? RoomName(name))?.value ?? name
        // Two invites under one name: the newest (it is the one the user was told of last).
        guard let newest = pending.filter({ $0.name == wanted }).max(by: { $0.receivedAt < $1.receivedAt }) else {
            throw NodeError.noInviteTo(name)
        }
        return newest
    }

    /// `/accept`: joins the private room, under its name or, when the user
    /// already has a room of that name (public or private), `name-2`, `name-3`….
    func accept(_ pending: Store.PendingInvite) throws -> RoomName {
        defer {
            do { try store.removePendingInvite(pending.room) } catch { storeFailures.failed("forgetting an answered invite", error) }
        }
        if let known = privateRooms[pending.room] { return known.name }
        let asked = try RoomName(pending.name)
        if let refusal = forgedPrivateRoom(pending.room, name: asked, peer: pending.inviter) {
            throw NodeError.inviteRefused(refusal)
        }
        guard pending.key.count >= 32, let key = try? SymmetricKey(bytes: pending.key.prefix(32)) else { throw NodeError.inviteRefused(.badKey) }
        let name = freeRoomName(like: asked)
        try store.addPrivateRoom(pending.room, name: name.value, key: Array(pending.key.prefix(32)))
        for k in Invite.epochKeys(Array(pending.key.dropFirst(32))) {
            // The invite names the room's create (epoch 0): in a room whose
            // id commits to no founder, that one is pinned as founding.
            if k.epoch == 0 { try store.pinFoundingCreate(pending.room, event: k.event) }
            try store.saveRoomKey(Store.RoomKeyRow(room: pending.room, event: k.event, epoch: k.epoch, key: k.key))
            if let epochKey = try? SymmetricKey(bytes: k.key) { roomEpochKeys[pending.room, default: [:]][k.event] = (k.epoch, epochKey) }
        }
        privateRooms[pending.room] = (name, key)
        _ = try join(name)
        try recomputeMembership(pending.room)
        try follow(.accepted(pending.room))
        return name
    }

    /// Declines an invite. One that came with membership events made us a
    /// member from the invite on (docs/PROTOCOL.md §14): a leave is signed,
    /// with the invite's keys held only for that, so the others give the
    /// room a key we never get. The leave, when one was signed.
    @discardableResult
    func decline(_ pending: Store.PendingInvite) throws -> Envelope? {
        try store.removePendingInvite(pending.room)
        let room = pending.room
        guard pending.key.count > 32, privateRooms[room] == nil, let first = try? SymmetricKey(bytes: pending.key.prefix(32)),
              let name = try? RoomName(pending.name) else { return nil }
        privateRooms[room] = (name, first)
        for k in Invite.epochKeys(Array(pending.key.dropFirst(32))) {
            if let key = try? SymmetricKey(bytes: k.key) { roomEpochKeys[room, default: [:]][k.event] = (k.epoch, key) }
        }
        defer {
            privateRooms[room] = nil
            roomEpochKeys[room] = nil
            memberships[room] = nil
            roomPostingKeys[room] = nil
        }
        // Not yet a member here (the invite event has not come): nothing to leave.
        guard let state = try recomputeMembership(room), state.roles[account] != nil else { return nil }
        return try changeMembership(room, .leave, target: account)
    }

    /// `name`, or `name-2`, `name-3`… : the first that is none of the user's rooms.
    func freeRoomName(like name: RoomName) -> RoomName {
        let taken = Set(privateRooms.values.map(\.name.value) + knownRooms + [RoomName.general.value])
        guard taken.contains(name.value) else { return name }
        for n in 2...1_000 {
            let suffix = "-\(n)"
            // Room names are at most 64 bytes: shorten the base so the suffix always shows.
            var base = name.value
            while base.utf8.count + suffix.utf8.count > RoomName.maximumLength { base.removeLast() }
            if let candidate = try? RoomName(base + suffix), !taken.contains(candidate.value) { return candidate }
        }
        return (try? RoomName("#private-" + Hex.encode(RoomID.random().bytes.prefix(4)))) ?? name
    }

    /// At start: a private room stored by an earlier version under a forged
    /// id (a public room's or a direct conversation's, from an invite that
    /// was accepted without asking) is dropped, so that room has its own
    /// key again; one whose name shadows a public room the user is in is
    /// renamed. Returns what was repaired, for a warning.
    func repairPrivateRooms() throws -> [String] {
        var repaired: [String] = []
        for (id, room) in privateRooms {
            if let refusal = forgedPrivateRoom(id, name: room.name, peer: nil) {
                privateRooms[id] = nil
                try store.removePrivateRoom(id)
                // The id keeps the name its own public room has, or none.
                if id == RoomID.publicRoom(.general, network: network) {
                    roomNames[id] = .general
                    try store.registerRoom(id, name: RoomName.general.value)
                } else if id != RoomID.publicRoom(room.name, network: network) {
                    roomNames[id] = nil
                    try store.forgetRoomName(id)
                }
                repaired.append("dropped the key an invite gave \(TerminalText.sanitize(room.name.value)): \(refusal)")
            }
        }
        // A private room may not take the name of #general or of a public room the user is in.
        let publicNames = Set(roomNames.compactMap { id, name in id == RoomID.publicRoom(name, network: network) ? name.value : nil } + [RoomName.general.value])
        for (id, room) in privateRooms where publicNames.contains(room.name.value) {
            let renamed = freeRoomName(like: room.name)
            privateRooms[id] = (renamed, room.key)
            roomNames[id] = renamed
            try store.addPrivateRoom(id, name: renamed.value, key: room.key.exportedBytes)
            repaired.append("the private room named \(TerminalText.sanitize(room.name.value)) is now \(renamed.value): it had the name of a public room")
        }
        return repaired
    }
}
