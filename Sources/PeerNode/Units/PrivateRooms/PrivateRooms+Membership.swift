import Crypto
import Foundation
import Gossip
import NodeCore
import Store

/// Private rooms whose membership changes (docs/PROTOCOL.md §14,
/// "Membership and key epochs"): membership events in the room, a new key
/// for every change sealed to each remaining member account, roles.
extension PrivateRooms {
    /// Reads the room keys held and each private room's membership, at start.
    func loadRoomMemberships() throws {
        for row in try repository.roomKeys() {
            // A stored key of another length is the database's fault: said, and that epoch left unopened.
            if let key = failures.read("a private room's key", { try SymmetricKey(bytes: row.key) }) { roomEpochKeys[row.room, default: [:]][row.event] = (row.epoch, key) }
        }
        for room in rooms.keys { try recomputeMembership(room) }
    }

    /// The keys to try on an envelope of `room`, the current one first.
    func openingKeys(_ room: RoomID) -> [(epoch: UInt32, key: SymmetricKey)] {
        guard let own = rooms[room] else { return [] }
        let epochs = (roomEpochKeys[room] ?? [:]).values.sorted { $0.epoch > $1.epoch }.map { (epoch: $0.epoch, key: $0.key) }
        let current = memberships[room]?.head.flatMap { head in roomEpochKeys[room]?[head.event] }
        return (current.map { [(epoch: $0.epoch, key: $0.key)] } ?? []) + epochs + [(epoch: UInt32(0), key: own.key)]
    }

    /// Whether `e`, a post sealed with its room's key of `epoch`, is one
    /// its author could have written as a member; counted
    /// `room_post_refused` if not (a removed member writing with a key it kept).
    func mayHaveWritten(_ e: Envelope, sealedAt epoch: UInt32) -> Bool {
        guard let state = memberships[e.room],
              !state.mayHaveWritten(book.account(of: e.author), device: e.author, sequence: e.sequence, sealedAt: epoch) else { return true }
        refusedRoomPosts &+= 1
        return false
    }

    /// Recomputes `room`'s membership from the events this node can open,
    /// taking every key sealed to our account (which may open more events),
    /// and sets the key posts are sealed with. Nil for a room without a
    /// create event (a room made before membership events: one key, everyone who has it).
    @discardableResult
    func recomputeMembership(_ room: RoomID) throws -> RoomMembership? {
        guard let own = rooms[room] else { return nil }
        if roomEpochKeys[room] == nil { roomEpochKeys[room] = [:] }
        var events: [RoomMembership.Event] = []
        var learned = true
        while learned {
            learned = false
            events = []
            for e in try repository.membershipCandidates(in: room) where !devices.isRevoked(e) {
                // Each event is opened once (an event's content never changes); what did not open is tried again.
                let event: MembershipEvent
                if let known = openedMembershipEvents[e.id] {
                    event = known
                } else {
                    guard let opened = envelopes.open(e), opened.kind == .membership, let decoded = MembershipEvent.decode(opened.content) else { continue }
                    openedMembershipEvents[e.id] = decoded
                    event = decoded
                }
                events.append(RoomMembership.Event(id: e.id, author: book.account(of: e.author), device: e.author, sequence: e.sequence, timestamp: e.timestamp, event: event))
                guard roomEpochKeys[room]?[e.id] == nil, let mine = event.keys.first(where: { $0.account == account }),
                      let pair = conversations.ownKeys[mine.conversationEpoch],
                      // A key sealed to us that does not open, or is no key, is the sender's fault: this event gives us none.
                      let key = try? SymmetricKey(bytes: pair.openSealed(mine.sealed)) else { continue }
                try keepRoomKey(room, event: e.id, epoch: event.epoch, key: key)
                learned = true
            }
            if learned { try repository.fileSealed(in: room) }
        }
        guard events.contains(where: { $0.event.action == .create }) else {
            memberships[room] = nil
            return nil
        }
        let pinned = try foundingPin(room, events)
        for e in events where RoomMembership.founds(e, room: room, pinned: pinned) && roomEpochKeys[room]?[e.id] == nil {
            // The founding create is sealed with the room's first key: that is epoch 0 (a forged create's is nothing).
            try keepRoomKey(room, event: e.id, epoch: 0, key: own.key)
        }
        let state = RoomMembership(events, room: room, pinned: pinned)
        memberships[room] = state
        roomPostingKeys[room] = state.head.flatMap { roomEpochKeys[room]?[$0.event]?.key }
        return state
    }

    /// The create this node pinned as `room`'s founding one, for a room whose
    /// id commits to no founder (made before ids did): pinned when we made
    /// it, from the invite that let us in, or else on first sight (the
    /// smallest id among the creates held then). Nil for a room whose id
    /// commits to a create we hold: that one founds it, whoever pinned what.
    private func foundingPin(_ room: RoomID, _ events: [RoomMembership.Event]) throws -> MessageID? {
        if events.contains(where: { RoomMembership.founds($0, room: room, pinned: nil) }) { return nil }
        if let pinned = try repository.foundingCreate(of: room) { return pinned }
        guard let first = events.filter({ $0.event.action == .create && $0.event.epoch == 0 }).min(by: { $0.id < $1.id }) else { return nil }
        try repository.pinFoundingCreate(room, event: first.id)
        return first.id
    }

    /// Whether a membership event of a room holds under the room's state as
    /// last computed (one whose room has no state, or that it has not
    /// opened, does not).
    func membershipHolds(_ e: Envelope) -> Bool {
        guard let state = memberships[e.room], openedMembershipEvents[e.id] != nil else { return false }
        return !state.refused.contains(e.id)
    }

    private func keepRoomKey(_ room: RoomID, event: MessageID, epoch: UInt32, key: SymmetricKey) throws {
        try repository.saveRoomKey(Store.RoomKeyRow(room: room, event: event, epoch: epoch, key: key.exportedBytes))
        roomEpochKeys[room, default: [:]][event] = (epoch, key)
    }

    /// After a removal of `removed` in `room` holds: its devices' posts there
    /// that no longer stand (past the cut, or from a device it did not name),
    /// filed as messages before it came, are filed as sealed, so they count
    /// in no unread number and give no preview (`open` refuses them anyway).
    /// Returns how many.
    @discardableResult
    func fileRefusedPosts(in room: RoomID, of removed: PublicKey) throws -> Int {
        var filed = 0
        for device in try devices.devices(of: removed) {
            for e in try repository.messages(by: device.device, in: room) where envelopes.open(e) == nil {
                try repository.fileAsRefused(e)
                filed += 1
            }
        }
        return filed
    }

    /// The private room named `name` of ours.
    func privateRoom(named name: RoomName) throws -> RoomID {
        guard let id = rooms.first(where: { $0.value.name == name })?.key else { throw NodeError.notYourPrivateRoom(name) }
        return id
    }

    /// Signs a membership change in `room`: `action` about `target`. Every
    /// change but a leave makes a new key, sealed to each account in the
    /// room after the change (ours included) and kept here at once.
    @discardableResult
    func changeMembership(_ room: RoomID, _ action: MembershipEvent.Action, target: PublicKey, role: MembershipEvent.Role = .member) throws -> Envelope {
        var state = try recomputeMembership(room)
        if state == nil {
            // A room from before membership events: whoever changes it first
            // founds it, pinned here (its id commits to nobody). One whose
            // invite carried later keys has membership events that have not
            // arrived yet: founding it again would split it.
            guard (roomEpochKeys[room] ?? [:]).isEmpty else { throw NodeError.membershipNotArrived(rooms[room]?.name ?? .general) }
            let create = try postMembership(room, MembershipEvent(action: .create, target: account, role: .owner, epoch: 0, parent: .zero, keys: []), newKey: nil, pin: true)
            state = try recomputeMembership(room)
            // Whoever wrote in it before was in it: each is invited (a new key each time).
            let earlier = Set(try repository.authors(in: room).map { book.account(of: $0) }).subtracting([account])
            var notInvited: [String] = []
            for other in earlier.sorted() where other != target || action != .invite {
                // One who cannot be sealed to (no usable conversation key) is left out, and said.
                do { try changeMembership(room, .invite, target: other) } catch {
                    failures.heard(error)
                    notInvited.append("\(other.shortFingerprint): \(error)")
                }
            }
            if !notInvited.isEmpty { notices.append("not invited to the room's membership: " + notInvited.joined(separator: "; ")) }
            if action == .create { return create }
            state = try recomputeMembership(room)
        }
        guard let state, let head = state.head else { throw NodeError.notYourPrivateRoom(rooms[room]?.name ?? .general) }
        try check(action, target: target, role: role, in: state)
        if action == .leave {
            let limits = try removalLimits(of: account)
            return try postMembership(room, MembershipEvent(action: .leave, target: account, role: .member, epoch: head.epoch, parent: head.event, keys: [], limits: limits), newKey: nil)
        }
        var members = Set(state.roles.keys)
        switch action {
        case .invite: members.insert(target)
        case .kick, .ban: members.remove(target)
        default: break
        }
        let key = SymmetricKey.generate()
        let sealed = try members.sorted().map { member -> MembershipEvent.SealedKey in
            let epoch = member == account ? conversations.sendingEpoch : conversations.sendingEpoch(of: member)
            guard let publicKey = member == account ? conversations.ownKeys[epoch]?.publicKey : conversations.boxPublic(of: member, epoch: epoch) else {
                throw NodeError.notSealable(member)
            }
            return MembershipEvent.SealedKey(account: member, conversationEpoch: epoch, sealed: try BoxKeyPair.seal(key.exportedBytes, to: publicKey))
        }
        let limits = action == .kick || action == .ban ? try removalLimits(of: target) : []
        let event = MembershipEvent(action: action, target: target, role: role, epoch: head.epoch + 1, parent: head.event, keys: sealed, limits: limits)
        return try postMembership(room, event, newKey: key)
    }

    /// For a removal of `account`: each of its devices and the last of its
    /// sequences held here (ours: the one the leave itself is signed with).
    private func removalLimits(of account: PublicKey) throws -> [MembershipEvent.DeviceLimit] {
        try devices.devices(of: account).prefix(MembershipEvent.maximumLimits).map { row in
            let held = try repository.head(of: row.device)?.sequence ?? 0
            return MembershipEvent.DeviceLimit(device: row.device, last: row.device == me ? held + 1 : held)
        }
    }

    /// What our role lets us do, said before anything is signed.
    private func check(_ action: MembershipEvent.Action, target: PublicKey, role: MembershipEvent.Role, in state: RoomMembership) throws {
        guard let mine = state.roles[account] else { throw NodeError.notAMember }
        switch action {
        case .invite:
            guard mine >= .admin else { throw NodeError.roleTooLow(needs: "an admin or the owner") }
            guard !state.banned.contains(target) else { throw NodeError.banned(target) }
        case .kick, .ban:
            guard target != account else { throw NodeError.badCommand("to leave, use /part") }
            guard mine >= .admin, state.roles[target].map({ mine > $0 }) ?? (action == .ban) else {
                throw state.roles[target] == nil ? NodeError.notInRoom(target) : NodeError.roleTooLow(needs: "a role above theirs")
            }
        case .role:
            guard mine == .owner else { throw NodeError.roleTooLow(needs: "the owner") }
            guard state.roles[target] != nil, target != account else { throw NodeError.notInRoom(target) }
        case .rotate:
            guard mine >= .admin || state.rekeyer == account else { throw NodeError.roleTooLow(needs: "an admin or the owner") }
        case .create, .leave:
            break
        }
    }

    /// Founds a room made here: its create carries the salt its id commits
    /// to with our account (`RoomID.privateRoom(founder:salt:)`).
    func foundPrivateRoom(_ room: RoomID, salt: MessageID) throws {
        try postMembership(room, MembershipEvent(action: .create, target: account, role: .owner, epoch: 0, parent: salt, keys: []), newKey: nil)
    }

    @discardableResult
    private func postMembership(_ room: RoomID, _ event: MembershipEvent, newKey: SymmetricKey?, pin: Bool = false) throws -> Envelope {
        let key = roomPostingKeys[room] ?? rooms[room]?.key
        guard let key else { throw NodeError.notYourPrivateRoom(rooms[room]?.name ?? .general) }
        let e = try author.appendOwn(room: room, kind: .membership, content: event.encoded, key: key)
        if pin { try repository.pinFoundingCreate(room, event: e.id) }
        if let newKey { try keepRoomKey(room, event: e.id, epoch: event.epoch, key: newKey) }
        try recomputeMembership(room)
        return e
    }

    /// Replaces the room's key when a race or a leave left it with someone
    /// out of the room, a member without it, or a member's account has a
    /// newer conversation key than the one it was sealed to (a device of it
    /// was revoked), or the schedule asks for one (`RoomMembership.rotationInterval`),
    /// and we are the one to do it.
    func rekeyIfNeeded(_ room: RoomID, now: UInt64 = Node.now(), standIn: Bool = false) throws -> Envelope? {
        // The rekeyer account's own machine does it at once; its other devices
        // only stand in (`standIn`) when the need outlasted a check, so two
        // machines rarely make one key twice (and if they do, both hold).
        guard me == account || standIn, needsRekeyByUs(room, now: now) else { return nil }
        return try changeMembership(room, .rotate, target: account)
    }

    /// Whether `room` needs a new key that we (some device of our account) are to make.
    func needsRekeyByUs(_ room: RoomID, now: UInt64 = Node.now()) -> Bool {
        guard let state = memberships[room], state.rekeyer == account else { return false }
        return state.needsNewKey || conversations.sealedToStaleKey(state) || state.rotationDue(now: now)
    }

    /// Whether we may post in `room` now: not with a key that reached
    /// someone who was removed (it waits for the new key).
    func mayPost(in room: RoomID) -> Bool { !(memberships[room]?.keyIsTainted ?? false) }

    /// Every key of a private room we hold, with its event, for an invite (the room's history).
    func roomKeysForInvite(_ room: RoomID) -> [(event: MessageID, epoch: UInt32, key: [UInt8])] {
        (roomEpochKeys[room] ?? [:]).map { ($0.key, $0.value.epoch, $0.value.key.exportedBytes) }.sorted { $0.epoch < $1.epoch }
    }
}
