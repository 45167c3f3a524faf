import ChatText
import Crypto
import Gossip
import NetworkText
import NodeCore

/// Private rooms' membership at the terminal and in `--json`: the
/// commands, and what a delivered membership event shows
/// (docs/PROTOCOL.md §14, "Membership and key epochs").
extension NetworkNode {
    /// What the command signs (the room's create too, for an older room) goes
    /// out with the rest of the command's own envelopes (`flushOwn`).
    func membershipCommand(_ input: ChatInput) throws -> [NodeEvent] {
        let room = session.room
        let id = try node.privateRoom(named: room)
        switch input {
        case let .kick(who): try node.changeMembership(id, .kick, target: node.people.account(try node.resolve(who)))
        case let .ban(who): try node.changeMembership(id, .ban, target: node.people.account(try node.resolve(who)))
        case let .op(who, on): try node.changeMembership(id, .role, target: node.people.account(try node.resolve(who)), role: on ? .admin : .member)
        case .leaveRoom:
            try node.changeMembership(id, .leave, target: node.account)
            return try chatLines(session.part())
        case .members:
            guard let state = try node.recomputeMembership(id) else {
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
            try node.recomputeMembership(e.room)
            if try node.rekeyIfNeeded(e.room) != nil { flushOwn() }
        } catch {
            log.warning("applying a membership change in \(name.value) failed: \(error)")
        }
        // A change that does not hold (a member "removing" the owner) is not
        // shown: its line would say something that did not happen.
        guard node.membershipHolds(e) else {
            node.refusedMembership &+= 1
            return []
        }
        if [.kick, .ban, .leave].contains(event.action) {
            do { try node.fileRefusedPosts(in: e.room, of: event.target) } catch { node.storeFailures.failed("filing a removed member's refused posts", error) }
        }
        return [.membershipChanged(room: name, by: node.people[e.author], action: event.actionName, target: node.people[event.target], epoch: event.epoch)]
    }

    /// After a revocation or a new conversation key: on the account key's
    /// machine, the next conversation key; then, in each room we rekey, a
    /// new room key if the current one reached an account under an older one.
    func conversationKeysChanged() {
        do {
            if try node.rekeyConversationsIfNeeded() != nil { flushOwn() }
        } catch {
            log.warning("making a new conversation key after a revocation failed: \(error)")
        }
        rekeyRooms()
    }

    /// Each private room we are the rekeyer of gets a new key if it needs
    /// one (a race, a leave, a revoked device, the schedule).
    func rekeyRooms(standingIn: Bool = false) {
        var stillNeeded: Set<RoomID> = []
        for room in node.memberships.keys.sorted(by: { $0.bytes.lexicographicallyPrecedes($1.bytes) }) {
            do {
                // Another device of the rekeyer's account stands in for a need seen at the last check too.
                let standIn = standingIn && rekeyNeededAtLastCheck.contains(room)
                if try node.rekeyIfNeeded(room, standIn: standIn) != nil {
                    flushOwn()
                } else if node.needsRekeyByUs(room) {
                    stillNeeded.insert(room)
                }
            } catch {
                log.warning("making a new key for a private room failed: \(error)")
            }
        }
        if standingIn { rekeyNeededAtLastCheck = stillNeeded }
    }

    /// A change another device of ours made, followed here.
    func followed(_ e: Envelope, _ opened: OpenedEnvelope) -> [NodeEvent] {
        do {
            guard let change = try node.applyFollow(e, opened) else { return [] }
            if case let .blocked(key, on) = change {
                blocked.set(try node.store.blockedIdentities())
                if on { feed(.blocked(key)) }
            }
            roomOrderStale = true
            let (name, about) = change.described
            // The device that made the change, by its own key and name (its
            // account is ours, the same for every device).
            return [.followed(change: name, about: about, device: e.author, name: node.deviceName(e.author))]
        } catch {
            log.warning("following another device of ours failed: \(error)")
            return []
        }
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
