import ChatText
import Foundation
import Store
import Crypto
import Gossip
import NetworkText
import NodeCore

/// The node's rooms at the terminal and in `--json`: private rooms'
/// membership commands and what a delivered membership event shows
/// (docs/PROTOCOL.md §14, "Membership and key epochs"), changes that
/// another device of ours made (`Following`), and invites.
extension NetworkNode {
    /// What the command signs (the room's create too, for an older room) goes
    /// out with the rest of the command's own envelopes (`flushOwn`).
    func membershipCommand(_ input: ChatInput) throws -> [NodeEvent] {
        let room = session.room
        let id = try node.privateRooms.privateRoom(named: room)
        switch input {
        case let .kick(who): try node.privateRooms.changeMembership(id, .kick, target: node.people.account(try node.people.resolve(who)))
        case let .ban(who): try node.privateRooms.changeMembership(id, .ban, target: node.people.account(try node.people.resolve(who)))
        case let .op(who, on): try node.privateRooms.changeMembership(id, .role, target: node.people.account(try node.people.resolve(who)), role: on ? .admin : .member)
        case .leaveRoom:
            try node.privateRooms.changeMembership(id, .leave, target: node.account)
            return try chatLines(session.part())
        case .members:
            guard let state = try node.privateRooms.recomputeMembership(id) else {
                throw NodeError.badCommand("\(room.value) has no membership events yet (made before them): everyone with its key is in it")
            }
            let order: [MembershipEvent.Role: Int] = [.owner: 0, .admin: 1, .member: 2]
            let members = state.roles.sorted { (order[$0.value] ?? 3, $0.key) < (order[$1.value] ?? 3, $1.key) }
            return [.roomRoles(room: room, members.map { (node.people[$0.key], Self.roleName($0.value)) }, banned: state.banned.sorted().map { node.people[$0] })]
        default:
            break
        }
        return []
    }

    static func roleName(_ role: MembershipEvent.Role) -> String {
        switch role {
        case .owner: return "owner"
        case .admin: return "admin"
        case .member: return "member"
        }
    }

    /// A delivered membership event: the room's state again, keys sealed to
    /// us taken, a new key made when we are the one to; shown as a line.
    func membershipDelivered(_ e: Envelope, _ opened: OpenedEnvelope) -> [NodeEvent] {
        guard let event = MembershipEvent.decode(opened.content), let name = node.roomName(e.room) else { return [] }
        do {
            try node.privateRooms.recomputeMembership(e.room)
            if try node.privateRooms.rekeyIfNeeded(e.room) != nil { flushOwn() }
        } catch {
            log.warning("applying a membership change in \(name.value) failed: \(error)")
        }
        // A change that does not hold (a member "removing" the owner) is not
        // shown: its line would say something that did not happen.
        guard node.privateRooms.membershipHolds(e) else {
            node.privateRooms.refusedMembership &+= 1
            return []
        }
        if [.kick, .ban, .leave].contains(event.action) {
            do { try node.privateRooms.fileRefusedPosts(in: e.room, of: event.target) } catch { node.storeFailures.failed("filing a removed member's refused posts", error) }
        }
        return [.membershipChanged(room: name, by: node.people[e.author], action: event.actionName, target: node.people[event.target], epoch: event.epoch)]
    }

    /// After a revocation or a new conversation key: on the account key's
    /// machine, the next conversation key; then, in each room we rekey, a
    /// new room key if the current one reached an account under an older one.
    func conversationKeysChanged() {
        do {
            let devices = node.devices
            if try node.conversations.rekeyIfNeeded(revoked: devices.ownRevokedDevices, devices: { try devices.devices(of: devices.account) },
                                                    accountsRoom: node.accountsRoom, accountsKey: node.accountsKey) != nil { flushOwn() }
        } catch {
            log.warning("making a new conversation key after a revocation failed: \(error)")
        }
        rekeyRooms()
    }

    /// Each private room we are the rekeyer of gets a new key if it needs
    /// one (a race, a leave, a revoked device, the schedule).
    func rekeyRooms(standingIn: Bool = false) {
        var stillNeeded: Set<RoomID> = []
        for room in node.privateRooms.memberships.keys.sorted(by: { $0.bytes.lexicographicallyPrecedes($1.bytes) }) {
            do {
                // Another device of the rekeyer's account stands in for a need seen at the last check too.
                let standIn = standingIn && rekeyNeededAtLastCheck.contains(room)
                if try node.privateRooms.rekeyIfNeeded(room, standIn: standIn) != nil {
                    flushOwn()
                } else if node.privateRooms.needsRekeyByUs(room) {
                    stillNeeded.insert(room)
                }
            } catch {
                log.warning("making a new key for a private room failed: \(error)")
            }
        }
        if standingIn { rekeyNeededAtLastCheck = stillNeeded }
    }

    /// A change another device of ours made, followed here: what
    /// `Following` says is ours to follow is done to rooms, marks and blocks.
    func followed(_ e: Envelope, _ opened: OpenedEnvelope) -> [NodeEvent] {
        guard let change = node.following.change(in: e, opened, fromOurAccount: node.people.account(e.author) == node.account) else { return [] }
        do {
            guard try node.following.applying({ try follow(change) }) else { return [] }
            roomOrderStale = true
            let (name, about) = change.described
            // The device that made the change, by its own key and name (its
            // account is ours, the same for every device).
            let said: [NodeEvent] = [.followed(change: name, about: about, device: e.author, name: node.devices.name(of: e.author))]
            // A room another device accepted: what it said while the invite waited here, as our own /accept shows it.
            guard case let .accepted(room) = change, let joined = node.privateRooms[room]?.name else { return said }
            return said + saidBefore(room, as: joined)
        } catch {
            node.storeFailures.heard(error)
            return [.failed("following a change another device of ours made failed: \(error)")]
        }
    }

    /// Does a followed change here; false when it changes nothing here.
    private func follow(_ change: FollowChange) throws -> Bool {
        switch change {
        case let .joined(name):
            guard node.roomNames[node.roomID(name)] == nil else { return false }
            _ = try node.join(name)
        case let .parted(name):
            // Public rooms only: a private room's name is each device's own.
            guard name != .general, node.privateRooms[node.roomID(name)] == nil, node.roomNames[node.roomID(name)] != nil else { return false }
            try node.leave(name)
        case let .trusted(key, on):
            guard node.people.trusted.contains(key) != on else { return false }
            try node.setTrusted(key, on)
        case let .blocked(key, on):
            guard try node.store.blockedIdentities().contains(key) != on else { return false }
            try node.setBlocked(key, on)
            blocked.set(try node.store.blockedIdentities())
            if on { feed(.blocked(key)) }
        case let .accepted(room):
            guard node.privateRooms[room] == nil, let pending = try node.privateRooms.pendingInvites().first(where: { $0.room == room }) else { return false }
            _ = try node.privateRooms.accept(pending)
        case let .madePrivate(room, keyBytes, name):
            guard node.privateRooms[room] == nil, node.privateRooms.forgedPrivateRoom(room, name: name, peer: node.account) == nil else { return false }
            // Our own device's change with a key that is not one: said as a failure, nothing changed.
            let key = try SymmetricKey(bytes: keyBytes)
            let local = node.privateRooms.freeRoomName(like: name)
            try node.privateRooms.add(room, name: local, key: key)
            _ = try node.join(local)
            try node.privateRooms.recomputeMembership(room)
        }
        return true
    }
}

extension MembershipEvent {
    /// The change's name in `--json` (`"action"`) and what the terminal says.
    var actionName: String {
        switch action {
        case .create: "create"
        case .invite: "invite"
        case .kick: "kick"
        case .ban: "ban"
        case .role: role == .admin ? "admin" : "member"
        case .leave: "leave"
        case .rotate: "rotate"
        }
    }

    /// One line for a change named `action` (an `actionName`), its labels
    /// already sanitized: live and in a room's history alike.
    static func sentence(by: String, action: String, target: String, room: String, epoch: UInt32) -> String {
        let what: String
        switch action {
        case "create": what = "\(by) made \(room)"
        case "invite": what = "\(by) invited \(target) to \(room)"
        case "kick": what = "\(by) removed \(target) from \(room)"
        case "ban": what = "\(by) banned \(target) from \(room)"
        case "admin", "member": what = "\(by) made \(target) \(action == "admin" ? "an admin" : "a member") of \(room)"
        case "leave": what = "\(by) left \(room)"
        default: what = "\(by) gave \(room) a new key"
        }
        return what + (action == "leave" || action == "create" ? "" : " (key epoch \(epoch))")
    }
}

/// Invites to private rooms: shown when they arrive, and nothing more until
/// the user answers with `/accept` or `/decline` (docs/PROTOCOL.md §14).
extension NetworkNode {
    /// An invite arrived: it waits for the user, or is refused outright when
    /// it names a room that cannot be private (a public or direct room: it
    /// would have replaced that room's key).
    func invited(by peer: PublicKey, _ invite: Invite) -> [NodeEvent] {
        let refusal: InviteRefusal?
        do {
            refusal = try node.privateRooms.receiveInvite(invite, from: peer)
        } catch {
            log.warning("keeping an invite failed: \(error)")
            return []
        }
        if let refusal {
            count(.inviteRefused)
            return [.inviteRefused(by: node.people[peer], room: invite.name.value, reason: refusal.description)]
        }
        guard node.privateRooms[invite.room] == nil else { return [] }
        return [.invite(by: node.people[peer], room: invite.name.value, listed: false)]
    }

    /// `/accept [#room]` or `/decline [#room]`. `open`: the room accepted
    /// becomes the open one (typed at the prompt: the next line is meant
    /// for it, and must not go to the room the invite came into).
    func answerInvite(_ room: String, accept: Bool, open: Bool = false) throws -> [NodeEvent] {
        let pending = try node.privateRooms.pendingInvite(named: room)
        guard accept else {
            try node.privateRooms.decline(pending)
            return [.inviteDeclined(room: pending.name, by: pending.inviter)]
        }
        let name = try node.privateRooms.accept(pending)
        if name.value != pending.name { session.invitedAs[name] = pending.name }
        if open { session.open(name) }
        return [.inviteAccepted(room: name, askedFor: pending.name, by: pending.inviter, opened: open)] + saidBefore(pending.room, as: name)
    }

    /// What a room just joined said before we could read it (it came while
    /// the invite waited), now shown: after our `/accept`, or another device's.
    func saidBefore(_ room: RoomID, as name: RoomName) -> [NodeEvent] {
        let earlier = readLogged("the history of the room joined") { try node.store.history(of: room, limit: ChatInput.maximumHistory) } ?? []
        return earlier.compactMap { stored in
            guard !blocked.contains(stored.envelope.author), let opened = node.open(stored.envelope) else { return nil }
            return .message(ShownMessage(envelope: stored.envelope, opened: opened, room: name, to: nil, me: node.me, book: node.people))
        }
    }

    /// `/invites`: who invited us where, oldest first.
    func listInvites() throws -> [NodeEvent] {
        let pending = try node.privateRooms.pendingInvites()
        // A script gets a head with the count, so an empty answer is an answer too.
        let head: [NodeEvent] = answersScripts ? [.answer(.invites(pending.count))] : []
        guard !pending.isEmpty else { return head + [.noInvites] }
        return head + pending.map { .invite(by: node.people[$0.inviter], room: $0.name, listed: true) }
    }
}
