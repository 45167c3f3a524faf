import ChatText
import Crypto
import Foundation
import Gossip
import Store

extension PrivateRooms {
    /// Creates a private room and joins it: a random key, and an id that
    /// commits to our account and a random salt, which our create carries.
    func createPrivateRoom(_ name: RoomName) throws {
        guard !rooms.values.contains(where: { $0.name == name }) else {
            throw NodeError.alreadyPrivate(name)
        }
        guard name != .general, !directory.knownRooms.contains(name.value) else {
            throw NodeError.publicRoomNamed(name)
        }
        let salt = secureRandomBytes(MessageID.byteCount)
        let id = RoomID.privateRoom(founder: account, salt: salt)
        let key = SymmetricKey.generate()
        try repository.addPrivateRoom(id, name: name.value, key: key.exportedBytes)
        rooms[id] = (name, key)
        _ = try directory.join(name)
        // Its first event: we are its owner.
        try foundPrivateRoom(id, salt: try MessageID(bytes: salt))
        try directory.follow(.madePrivate(id, key: key.exportedBytes, name: name))
    }

    /// Sends `peer` an invite to one of our private rooms.
    func invite(_ peer: PublicKey, to name: RoomName) throws -> Envelope {
        guard let (id, room) = rooms.first(where: { $0.value.name == name }) else {
            throw NodeError.notYourPrivateRoom(name)
        }
        // A membership event first (a new key, sealed to everyone in the room after it), then every key in the invite.
        try changeMembership(id, .invite, target: book.account(of: peer))
        let epochs = Invite.encodeEpochs(roomKeysForInvite(id))
        return try conversations.post(Invite(room: id, key: room.key.exportedBytes, name: name, epochs: epochs).encoded, kind: .invite, to: peer)
    }

    /// Whether `room` can be a private room's id: never a public room's
    /// (derived from `name` or any room name we know) nor a direct
    /// conversation's with `peer` or anyone we know. A genuine private room
    /// id is random, so it never collides; one that does is forged.
    func forgedPrivateRoom(_ room: RoomID, name: RoomName, peer: PublicKey?) -> InviteRefusal? {
        if room == RoomID.publicRoom(name, network: network) || room == RoomID.publicRoom(.general, network: network) { return .publicRoom }
        if let known = directory.roomName(room), rooms[room] == nil || RoomID.publicRoom(known, network: network) == room { return .publicRoom }
        if let peer, let c = conversations.conversation(with: peer), room == c.room || room == c.roomVersion1 { return .directRoom }
        // Any author's version-1 conversation with us (a hash per author, once).
        return conversations.isKnownConversation(room) ? .directRoom : nil
    }

    /// An invite arrived from `peer`: kept until the user answers (nothing
    /// changes the user's rooms without the user). Nil when it waits; the
    /// refusal when it cannot be a private room at all. An invite to a room
    /// we are already in changes nothing.
    func receiveInvite(_ invite: Invite, from peer: PublicKey) throws -> InviteRefusal? {
        if let refusal = forgedPrivateRoom(invite.room, name: invite.name, peer: peer) { return refusal }
        guard SymmetricKey(exactly: invite.key) != nil else { return .badKey }
        guard rooms[invite.room] == nil else { return nil }
        // The later keys ride behind the first in the pending row.
        let pending = Store.PendingInvite(room: invite.room, name: invite.name.value, key: invite.key + invite.epochs, inviter: peer, receivedAt: Node.now())
        try repository.addPendingInvite(pending)
        return nil
    }

    /// Invites waiting for `/accept` or `/decline`, oldest first.
    func pendingInvites() throws -> [Store.PendingInvite] { try repository.pendingInvites() }

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
        let wanted = RoomName.checked(name)?.value ?? name
        // Two invites under one name: the newest (it is the one the user was told of last).
        guard let newest = pending.filter({ $0.name == wanted }).max(by: { $0.receivedAt < $1.receivedAt }) else {
            if let joined = rooms.values.first(where: { $0.name.value == wanted })?.name { throw NodeError.alreadyInPrivateRoom(joined) }
            throw NodeError.noInviteTo(name)
        }
        return newest
    }

    /// `/accept`: joins the private room, under its name or, when the user
    /// already has a room of that name (public or private), `name-2`, `name-3`….
    func accept(_ pending: Store.PendingInvite) throws -> RoomName {
        defer {
            do { try repository.removePendingInvite(pending.room) } catch { failures.failed(error) }
        }
        if let known = rooms[pending.room] { return known.name }
        let asked = try RoomName(pending.name)
        if let refusal = forgedPrivateRoom(pending.room, name: asked, peer: pending.inviter) {
            throw NodeError.inviteRefused(refusal)
        }
        guard let key = SymmetricKey(exactly: pending.key.prefix(32)) else { throw NodeError.inviteRefused(.badKey) }
        let name = freeRoomName(like: asked)
        try repository.addPrivateRoom(pending.room, name: name.value, key: Array(pending.key.prefix(32)))
        for k in Invite.epochKeys(Array(pending.key.dropFirst(32))) {
            // The invite names the room's create (epoch 0): in a room whose
            // id commits to no founder, that one is pinned as founding.
            if k.epoch == 0 { try repository.pinFoundingCreate(pending.room, event: k.event) }
            try repository.saveRoomKey(Store.RoomKeyRow(room: pending.room, event: k.event, epoch: k.epoch, key: k.key))
            if let epochKey = SymmetricKey(exactly: k.key) { roomEpochKeys[pending.room, default: [:]][k.event] = (k.epoch, epochKey) }
        }
        rooms[pending.room] = (name, key)
        _ = try directory.join(name)
        try recomputeMembership(pending.room)
        try directory.follow(.accepted(pending.room))
        return name
    }

    /// Declines an invite. One that came with membership events made us a
    /// member from the invite on (docs/PROTOCOL.md §14): a leave is signed,
    /// with the invite's keys held only for that, so the others give the
    /// room a key we never get. The leave, when one was signed.
    @discardableResult
    func decline(_ pending: Store.PendingInvite) throws -> Envelope? {
        try repository.removePendingInvite(pending.room)
        let room = pending.room
        guard pending.key.count > 32, rooms[room] == nil, let first = SymmetricKey(exactly: pending.key.prefix(32)),
              let name = RoomName.checked(pending.name) else { return nil }
        rooms[room] = (name, first)
        for k in Invite.epochKeys(Array(pending.key.dropFirst(32))) {
            if let key = SymmetricKey(exactly: k.key) { roomEpochKeys[room, default: [:]][k.event] = (k.epoch, key) }
        }
        defer {
            rooms[room] = nil
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
        let taken = Set(rooms.values.map(\.name.value) + directory.knownRooms + [RoomName.general.value])
        guard taken.contains(name.value) else { return name }
        for n in 2...1_000 {
            let suffix = "-\(n)"
            // Room names are at most 64 bytes: shorten the base so the suffix always shows.
            var base = name.value
            while base.utf8.count + suffix.utf8.count > RoomName.maximumLength { base.removeLast() }
            if let candidate = RoomName.checked(base + suffix), !taken.contains(candidate.value) { return candidate }
        }
        return RoomName.checked("#private-" + Hex.encode(RoomID.random().bytes.prefix(4))) ?? name
    }

    /// At start: a private room stored by an earlier version under a forged
    /// id (a public room's or a direct conversation's, from an invite that
    /// was accepted without asking) is dropped, so that room has its own
    /// key again; one whose name shadows a public room the user is in is
    /// renamed. Returns what was repaired, for a warning.
    func repairPrivateRooms() throws -> [String] {
        var repaired: [String] = []
        for (id, room) in rooms {
            if let refusal = forgedPrivateRoom(id, name: room.name, peer: nil) {
                rooms[id] = nil
                try repository.removePrivateRoom(id)
                // The id keeps the name its own public room has, or none.
                if id == RoomID.publicRoom(.general, network: network) {
                    try directory.name(id, .general)
                } else if id != RoomID.publicRoom(room.name, network: network) {
                    try directory.name(id, nil)
                }
                repaired.append("dropped the key an invite gave \(TerminalText.sanitize(room.name.value)): \(refusal)")
            }
        }
        // A private room may not take the name of #general or of a public room the user is in.
        let publicNames = Set(directory.roomNames.compactMap { id, name in id == RoomID.publicRoom(name, network: network) ? name.value : nil } + [RoomName.general.value])
        for (id, room) in rooms where publicNames.contains(room.name.value) {
            let renamed = freeRoomName(like: room.name)
            rooms[id] = (renamed, room.key)
            try directory.name(id, renamed, remember: false)
            try repository.addPrivateRoom(id, name: renamed.value, key: room.key.exportedBytes)
            repaired.append("the private room named \(TerminalText.sanitize(room.name.value)) is now \(renamed.value): it had the name of a public room")
        }
        return repaired
    }
}
