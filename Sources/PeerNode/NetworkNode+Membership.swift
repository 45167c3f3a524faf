import ChatText
import Crypto
import Gossip
import NetworkText
import NodeCore

/// Private rooms' membership at the terminal and in `--json`: the
/// commands, and what a delivered membership event shows
/// (docs/PROTOCOL.md §14, "Membership and key epochs").
extension NetworkNode {
    func membershipCommand(_ input: ChatInput) throws -> [NodeEvent] {
        let room = session.room
        let id = try node.privateRoom(named: room)
        let before = try node.store.head(of: node.me)?.sequence ?? 0
        switch input {
        case let .kick(who): try node.changeMembership(id, .kick, target: node.people.account(try node.resolve(who)))
        case let .ban(who): try node.changeMembership(id, .ban, target: node.people.account(try node.resolve(who)))
        case let .op(who, on): try node.changeMembership(id, .role, target: node.people.account(try node.resolve(who)), role: on ? .admin : .member)
        case .leaveRoom:
            try node.changeMembership(id, .leave, target: node.account)
            sendOwn(since: before)
            return try chatLines(session.part())
        case .members:
            guard let state = try node.recomputeMembership(id) else {
                throw NodeError.badCommand("\(room.value) has no membership events yet (made before them): everyone with its key is in it")
            }
            let order: [MembershipEvent.Role: Int] = [.owner: 0, .admin: 1, .member: 2]
            let members = state.roles.sorted { (order[$0.value] ?? 3, $0.key) < (order[$1.value] ?? 3, $1.key) }
            return [.roomRoles(room: room, members.map { (node.people[$0.key], Self.roleName($0.value)) }, banned: state.banned.sorted().map { node.people[$0] })]
        default:
            return []
        }
        sendOwn(since: before)
        return []
    }

    static func roleName(_ role: MembershipEvent.Role) -> String {
        switch role {
        case .owner: return "owner"
        case .admin: return "admin"
        case .member: return "member"
        }
    }

    /// Sends (and shows) every envelope of ours stored after `sequence`: a
    /// membership change may sign two (the room's create, then the change).
    func sendOwn(since sequence: UInt64) {
        let mine = (try? node.store.envelopes(from: node.me, startingAt: sequence + 1, limit: 16)) ?? []
        for e in mine { sendOwn(e) }
    }

    /// A delivered membership event: the room's state again, keys sealed to
    /// us taken, a new key made when we are the one to; shown as a line.
    func membershipDelivered(_ e: Envelope, _ opened: OpenedEnvelope) -> [NodeEvent] {
        guard let event = MembershipEvent.decode(opened.content), let name = node.roomName(e.room) else { return [] }
        do {
            try node.recomputeMembership(e.room)
            let before = try node.store.head(of: node.me)?.sequence ?? 0
            if try node.rekeyIfNeeded(e.room) != nil { sendOwn(since: before) }
        } catch {
            log.warning("applying a membership change in \(name.value) failed: \(error)")
        }
        let action: String
        switch event.action {
        case .create: action = "create"
        case .invite: action = "invite"
        case .kick: action = "kick"
        case .ban: action = "ban"
        case .role: action = event.role == .admin ? "admin" : "member"
        case .leave: action = "leave"
        case .rotate: action = "rotate"
        }
        return [.membershipChanged(room: name, by: node.people[e.author], action: action, target: node.people[event.target], epoch: event.epoch)]
    }

    /// After a revocation or a new conversation key: on the account key's
    /// machine, the next conversation key; then, in each room we rekey, a
    /// new room key if the current one reached an account under an older one.
    func conversationKeysChanged() {
        do {
            if let e = try node.rekeyConversationsIfNeeded() { sendOwn(e) }
            for room in node.memberships.keys.sorted(by: { $0.bytes.lexicographicallyPrecedes($1.bytes) }) {
                let before = try node.store.head(of: node.me)?.sequence ?? 0
                if try node.rekeyIfNeeded(room) != nil { sendOwn(since: before) }
            }
        } catch {
            log.warning("making new keys after a revocation failed: \(error)")
        }
    }
}
